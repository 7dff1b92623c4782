"""What every request handler needs, one per app: ``app.extensions["tradecraft"]``.

The app factory (``server/web/app.py``) builds it and hands it to each blueprint and to the Socket.IO
handlers; they import this module, never the factory.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask_socketio import SocketIO

from server.store import Store
from server.table.config import Settings
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.timers import DeadlineScheduler
from server.web.lobby import Lobby


@dataclass
class Services:
    """Everything a request handler needs; one per app (``app.extensions["tradecraft"]``)."""

    settings: Settings
    store: Store
    table: Table
    lobby: Lobby
    bots: BotRegistry
    socketio: SocketIO
    scheduler: DeadlineScheduler
    version: str

    def close(self) -> None:
        self.table.close()  # the deadline timers and the bot threads
        self.store.close()
