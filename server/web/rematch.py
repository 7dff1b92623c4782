"""Rematch: after a game ends, one of its people asks for another game against the same kinds of seats.

The rematch is a new game of the same hall, created like any other (:meth:`Lobby.create_game`, so the same
limits and instance choice apply: a new draw or a new deal, never the finished game's instance; a
difficulty band its creator asked for is asked for again), with the same seat kinds (the same built-in bots
and LLM specs; a person's or an agent's seat stays open to that kind), and the requester seated in it.

One finished game has at most one rematch at a time: the first request claims :func:`rematch_key` with a
conditional write (``creating``), creates the game, then records its id there; a second request (the same
person again, or another player of the finished game) joins that game instead of making another. A rematch
closed before it started (cancelled, expired) makes way for a new one. The other people of the
finished game are told (a ``rematch`` push to their seats' rooms, and ``GET .../rematch`` for a page loaded
later); nobody else is.
"""

from __future__ import annotations

import json
import time
from typing import Any

from server.table.errors import ServerError
from server.table.live import SeatState, claim_is_stale
from server.table.principal import Principal
from server.table.transport import seat_room
from server.web.lobby import Lobby

#: How long a second request waits for the first one's game to be created (a fresh deal may take seconds).
REMATCH_WAIT_SECONDS = 15.0
REMATCH_POLL_SECONDS = 0.05


def rematch_key(game_id: str) -> str:
    """Store key of a finished game's rematch: ``{"creating": ..., "at": ...}`` while it is made, then
    ``{"game_id": ...}``."""
    return f"game:{game_id}:rematch"


def rematch_of(lobby: Lobby, game_id: Any, principal: Principal) -> str | None:
    """The id of the finished game's rematch, for one of its people (None while there is none)."""
    _players_seats(lobby, game_id, principal)
    return _recorded(lobby, str(game_id))


def request_rematch(lobby: Lobby, game_id: Any, principal: Principal, address: str | None) -> dict[str, Any]:
    """The rematch of finished game ``game_id`` with ``principal`` seated in it: created by the first
    request, joined by the next ones. ``game_not_over`` before the end, ``not_your_seat`` for anyone who did
    not play it; the rematch's creation refusals (limits, a hall gone from the settings) as they are."""
    meta, seats, _ = _players_seats(lobby, game_id, principal)
    old_id = str(meta["game_id"])
    key = rematch_key(old_id)
    claim = json.dumps({"creating": principal.id, "at": round(time.time(), 3)})
    waited_until = time.monotonic() + REMATCH_WAIT_SECONDS
    while True:
        if lobby.store.replace_value(key, None, claim):
            return _create(lobby, meta, seats, principal, address, key, claim)
        current = lobby.store.get_value(key)
        if current is None:
            continue
        record = _read(current)
        if isinstance(record.get("game_id"), str):
            if _closed_unstarted(lobby, record["game_id"]):  # cancelled or expired: a new one may be made
                lobby.store.replace_value(key, current, None)
                continue
            return _join(lobby, record["game_id"], principal)
        if claim_is_stale(record):  # the creating request crashed: take its place
            lobby.store.replace_value(key, current, None)
            continue
        if time.monotonic() > waited_until:
            raise ServerError(
                "conflict", "Another player is creating the rematch right now; try again.", status=409
            )
        time.sleep(REMATCH_POLL_SECONDS)


def _players_seats(
    lobby: Lobby, game_id: Any, principal: Principal
) -> tuple[dict[str, Any], list[SeatState], list[int]]:
    live = lobby.table.get(game_id)
    with live.lock:
        lobby.table.catch_up(live)
        meta = {**live.meta, "game_id": live.game_id}
        seats = [SeatState.from_record(s.record()) for s in live.seats]
        held = live.seats_of(principal)
    if not held or principal.kind != "human":
        raise ServerError(
            "not_your_seat", "Only the people who played this game may ask for its rematch.", status=403
        )
    if meta.get("status") != "finished":
        raise ServerError("game_not_over", "A rematch is offered once the game is over.", status=409)
    return meta, seats, held


def _create(
    lobby: Lobby,
    meta: dict[str, Any],
    seats: list[SeatState],
    principal: Principal,
    address: str | None,
    key: str,
    claim: str,
) -> dict[str, Any]:
    try:
        hall = lobby.hall(meta.get("hall"))
        specs = [_seat_spec(seat) for seat in seats] if hall.allow_custom_seats else None
        game = lobby.create_game(
            meta.get("hall"),
            principal,
            seats=specs,
            join=True,
            address=address,
            difficulty=_asked_band(meta.get("instance_choice")),
        )
    except BaseException:
        lobby.store.replace_value(key, claim, None)
        raise
    lobby.store.replace_value(key, claim, json.dumps({"game_id": game["game_id"]}))
    offer = {"game_id": meta["game_id"], "rematch": game["game_id"]}
    for seat in seats:  # the other people of the finished game, and nobody else
        if seat.kind == "human" and seat.user_id != principal.id:
            lobby.table.transport.push("rematch", offer, seat_room(str(meta["game_id"]), seat.seat), None)
    return {**game, "rematch_of": meta["game_id"]}


def _closed_unstarted(lobby: Lobby, game_id: str) -> bool:
    meta = lobby.store.get_game(game_id)
    return meta is None or (meta.get("status") == "aborted" and meta.get("started_at") is None)


def _join(lobby: Lobby, game_id: str, principal: Principal) -> dict[str, Any]:
    seat = lobby.join(game_id, principal)
    return {**lobby.summary(game_id), "your_seat": seat}


def _seat_spec(seat: SeatState) -> dict[str, Any]:
    """The seat kind of a finished game's seat, for its rematch: a bot seat keeps its bot (and its name)."""
    if seat.accepts == "bot" and seat.bot:
        spec: dict[str, Any] = {"kind": "bot", "bot": seat.bot}
        if seat.name and seat.name != f"{seat.bot} bot":
            spec["name"] = seat.name
        return spec
    return {"kind": seat.accepts}


def _asked_band(choice: Any) -> str | None:
    """The difficulty band the finished game's creator asked for, if any (a new draw within it)."""
    if not isinstance(choice, dict):
        return None
    if choice.get("choice") == "band" or (choice.get("choice") == "generated" and choice.get("requested")):
        band = choice.get("difficulty")
        return band if isinstance(band, str) else None
    return None


def _recorded(lobby: Lobby, game_id: str) -> str | None:
    current = lobby.store.get_value(rematch_key(game_id))
    found = _read(current).get("game_id") if current is not None else None
    return found if isinstance(found, str) else None


def _read(value: str) -> dict[str, Any]:
    try:
        record = json.loads(value)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}
