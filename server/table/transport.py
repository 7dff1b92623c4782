"""How the table reaches the people at it: named rooms, and the transport that pushes to them.

The table publishes every change to rooms: each seat has its own (its holder's connections), spectators
share one, and the lobby one. The web layer's transport is Socket.IO (``server/web/sockets.py``); in-process
local play reads its seats' logs instead of being pushed to, so it gives the table :data:`NO_TRANSPORT`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

LOBBY_ROOM = "lobby"


def seat_room(game_id: str, seat: int) -> str:
    return f"game:{game_id}:seat:{seat}"


def spectator_room(game_id: str) -> str:
    return f"game:{game_id}:spectators"


class Transport(Protocol):
    """What the table needs of a transport."""

    def push(self, event: str, payload: dict[str, Any], room: str, skip: str | None) -> None:
        """Send ``payload`` as ``event`` to every connection in ``room`` but ``skip`` (an acting connection,
        which gets the ack instead)."""

    def has_listeners(self, room: str, skip: str | None) -> bool:
        """Whether anyone but ``skip`` may be listening in ``room``: pushes nobody would get are not built."""


class _NoTransport:
    """A table nobody is pushed to (in-process play: its seats read their logs)."""

    def push(self, event: str, payload: dict[str, Any], room: str, skip: str | None) -> None:
        return None

    def has_listeners(self, room: str, skip: str | None) -> bool:
        return False


NO_TRANSPORT: Transport = _NoTransport()


@dataclass(frozen=True)
class PushTransport:
    """A transport that hands every push to one function (every room counts as listened to): for tables
    embedded in a program that records or forwards what the table publishes."""

    send: Callable[[str, dict[str, Any], str, str | None], None]

    def push(self, event: str, payload: dict[str, Any], room: str, skip: str | None) -> None:
        self.send(event, payload, room, skip)

    def has_listeners(self, room: str, skip: str | None) -> bool:
        return True
