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
later); nobody else is. Its seats are kept for the finished game's people for
``rooms.rematch_hold_minutes`` (server/web/seat_holds.py): the lobby does not list it and a stranger's
join is refused ``seat_held``; after that it opens to anyone like any waiting game.

A practice game's rematch is the person's practice game ("Practice again": :func:`practice_game`), so
/practice and the end screen always lead to the same one game. A game of a hall players may not create games
in (``creatable: false``: a study's, whose games its matcher makes) has no rematch: ``forbidden``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from server.table.errors import ServerError
from server.table.live import SeatState, claim_in_store, claim_is_stale
from server.table.principal import Principal
from server.table.transport import seat_room
from server.web.lobby import Lobby
from server.web.practice import PRACTICE_HALL_NAME, practice_game
from server.web.seat_holds import hold_record

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
    not play it, ``forbidden`` in a hall that is not ``creatable``; the rematch's creation refusals (limits,
    a hall gone from the settings) as they are."""
    meta, seats, _ = _players_seats(lobby, game_id, principal)
    old_id = str(meta["game_id"])
    if meta.get("hall") == PRACTICE_HALL_NAME:  # "Practice again": the one practice game /practice knows
        practice_id = practice_game(lobby, principal, address)
        return _join(lobby, practice_id, principal)
    hall = lobby.hall(meta.get("hall"))
    if not hall.creatable:  # a study's game: its next game is the matcher's to make (or none)
        raise ServerError(
            "forbidden",
            "This game's hall makes its games itself (a study's): there is no rematch.",
            {"hall": meta.get("hall")},
            status=403,
        )
    key = rematch_key(old_id)
    waited_until = time.monotonic() + REMATCH_WAIT_SECONDS
    found: dict[str, str] = {}

    def judge(holder: dict[str, Any]) -> bool:
        """Take over a rematch closed unstarted or a crashed creation; else note the one to join."""
        made = holder.get("game_id")
        if isinstance(made, str):
            if _closed_unstarted(lobby, made):
                return True
            found["game_id"] = made
            return False
        return claim_is_stale(holder)  # False: another request is creating it right now

    while True:
        found.clear()
        # the same conditional claim as a seat's (live.claim_in_store); unlike a seat's, a claim still being
        # made is waited for (the first request's deal may take seconds) rather than refused
        claim = claim_in_store(
            lobby.store, key, {"creating": principal.id, "at": round(time.time(), 3)}, judge
        )
        if claim is not None:
            return _create(lobby, meta, seats, principal, address, key, claim)
        if "game_id" in found:
            return _join(lobby, found["game_id"], principal)
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
        specs = [_seat_spec(lobby, seat) for seat in seats] if hall.allow_custom_seats else None
        # the finished game's people and agents (an agent's seat waits for the same API token)
        people = [seat.user_id for seat in seats if seat.accepts != "bot" and seat.user_id]
        hold_seconds = lobby.settings.rooms.rematch_hold_minutes * 60
        game = lobby.create_game(
            meta.get("hall"),
            principal,
            seats=specs,
            join=True,
            address=address,
            difficulty=_asked_band(meta.get("instance_choice")),
            hold=hold_record(people, hold_seconds) if hold_seconds > 0 else None,
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


def _seat_spec(lobby: Lobby, seat: SeatState) -> dict[str, Any]:
    """The seat kind of a finished game's seat, for its rematch: a bot seat keeps its bot (and the name its
    creator gave it; a default name is left for the lobby to give again)."""
    if seat.accepts == "bot" and seat.bot:
        spec: dict[str, Any] = {"kind": "bot", "bot": seat.bot}
        if seat.name and seat.name != lobby.bots.seat_name(seat.bot):
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
