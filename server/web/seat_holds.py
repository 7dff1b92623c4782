"""Seats kept for named people: a rematch's seats wait for the finished game's people for a while.

A held game's meta carries ``held_for`` (:func:`hold_record`): the user ids it waits for and the time it
opens. Until then the lobby does not list it and a join by anyone else is refused ``seat_held``; after that
it is an ordinary waiting game (listed, joinable), closed like any other by the waiting-game expiry.
The hold is written with the game's first record, so there is no moment a stranger could see or take it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from server.table.errors import ServerError
from server.table.principal import Principal


def hold_record(user_ids: Iterable[str], seconds: float, now: float | None = None) -> dict[str, Any]:
    """The ``held_for`` meta of a game keeping its seats for ``user_ids`` for ``seconds``."""
    opened_at = (time.time() if now is None else now) + seconds
    return {"user_ids": sorted(set(user_ids)), "until": round(opened_at, 3)}


def held_for(meta: Mapping[str, Any], now: float | None = None) -> list[str] | None:
    """The user ids a game's seats are still kept for, or None when it is open to anyone."""
    hold = meta.get("held_for")
    if not isinstance(hold, Mapping):
        return None
    until = hold.get("until")
    if not isinstance(until, int | float) or (time.time() if now is None else now) >= until:
        return None
    ids = hold.get("user_ids")
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []


def check_hold(meta: Mapping[str, Any], principal: Principal) -> None:
    """Refuse ``seat_held`` to anyone a held game does not wait for."""
    people = held_for(meta)
    if people is not None and principal.id not in people:
        raise ServerError(
            "seat_held",
            "This game is a rematch: its seats are kept for the players of the game before it for a few "
            "minutes. Join another game, or this one once it opens.",
            {"until": meta["held_for"]["until"]},
            status=403,
        )
