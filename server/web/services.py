"""What every request handler needs, one per app: ``app.extensions["tradecraft"]``.

The app factory (``server/web/app.py``) builds it; blueprints and the Socket.IO handlers reach it through
:func:`current_services`, as Flask's tutorial reaches its database through ``current_app`` (they import this
module, never the factory). Everything that belongs to one app lives here, so two apps in one process (the
tests build many) share nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flask import current_app
from flask_socketio import SocketIO

from server.store import Store
from server.table.config import Settings
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.replay import Replays
from server.table.timers import DeadlineScheduler
from server.web.lobby import Lobby
from server.web.study.matching import StudyMatcher
from server.web.study.service import Studies

#: The key of the app's :class:`Services` in ``app.extensions``.
EXTENSION_KEY = "tradecraft"


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
    #: Finished games' replays and their cache.
    replays: Replays = field(init=False)
    #: The rule sets the halls play: only these are served (a name is never read as a path).
    rulesets: frozenset[str] = field(init=False)
    #: The studies (server/web/study/): definitions from the store, their halls.
    studies: Studies = field(init=False)
    #: The waiting rooms' matcher and the study games' supervisor (started by the app factory).
    study_matcher: StudyMatcher | None = None
    #: What else stops when the app closes (background sweeps), before the table and the store.
    on_close: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replays = Replays(self.table)
        self.studies = Studies(self.settings, self.store, self.bots.require)
        self.rulesets = frozenset(str(hall.ruleset) for hall in self.settings.halls.values())

    def close(self) -> None:
        for stop in self.on_close:
            stop()
        self.table.close()  # the deadline timers and the bot threads
        self.store.close()


def current_services() -> Services:
    """The :class:`Services` of the app handling the current request (or Socket.IO event)."""
    services = current_app.extensions.get(EXTENSION_KEY)
    if not isinstance(services, Services):
        raise RuntimeError(
            f"app {current_app.name!r} has no TradeCraft services: build it with server.web.app.create_app()"
        )
    return services
