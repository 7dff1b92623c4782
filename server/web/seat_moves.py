"""Leaving a game before it starts, and what the lobby offers a viewer for each open game.

Leave: a player who took a seat in a game that still waits gives it back. The seat's claim, the person's
one-seat claim (:func:`~server.table.live.seat_holder_key`) and the seated name's claim are released while a
:func:`~server.table.live.leaving_marker` holds the game's :func:`~server.table.live.waiting_ended_key`: a
start racing the leave (in any worker process) meets the marker and does not start, a cancel or an expiry
waits for it, and a leave that meets ``started`` changes nothing and says so (``not_waiting``). Once the game
has started a player stops with ``resign`` in the game room instead.

Join offers: the lobby shows a Join button only where the viewer can take a seat; elsewhere it says why
(:func:`join_offer`).
"""

from __future__ import annotations

import json
from typing import Any

from server.table.errors import ServerError
from server.table.live import (
    CLOSED_UNSTARTED,
    LiveGame,
    leaving_marker,
    seat_claim_key,
    seat_holder_key,
    seated_name_key,
    waiting_ended_key,
)
from server.table.names import name_clash, name_key
from server.table.principal import Principal
from server.web.lobby import Lobby, game_cancelled


def leave_waiting_game(lobby: Lobby, game_id: Any, principal: Principal) -> dict[str, Any]:
    """Give back every seat ``principal`` holds in a game that still waits for players: the game's new
    summary. ``not_your_seat`` when it holds none, ``not_waiting`` once the game has started or finished,
    ``game_cancelled`` once it was closed unstarted; nothing changes on any refusal."""
    table, store = lobby.table, lobby.store
    live = table.get(game_id)
    with live.lock:
        table.catch_up(live)
        table.reload_waiting_status(live)
        held = live.seats_of(principal)
        _check_can_leave(live, held)
        key = waiting_ended_key(live.game_id)
        marker = leaving_marker()
        if not store.replace_value(key, None, marker):
            decided = store.get_value(key)
            if decided in CLOSED_UNSTARTED:
                raise game_cancelled()
            if decided == "started":
                raise _started()
            raise ServerError(
                "conflict", "Someone else is leaving this game right now; try again.", status=409
            )
        try:
            for seat in held:
                _release_seat(lobby, live, principal, seat)
        finally:
            store.replace_value(key, marker, None)
    table.seats_changed(live.game_id)  # records the seats, tells the room and the lobby
    return lobby.summary(live.game_id)


def _check_can_leave(live: LiveGame, held: list[int]) -> None:
    if live.status == "aborted" and live.game is None:
        raise game_cancelled()
    if live.status != "waiting":
        raise (
            _started()
            if held
            else ServerError(
                "not_waiting",
                "The game no longer waits for players; there is no seat to give back.",
                status=409,
            )
        )
    if not held:
        raise ServerError(
            "not_your_seat", "You hold no seat in this game, so there is nothing to leave.", status=409
        )


def _started() -> ServerError:
    return ServerError(
        "not_waiting",
        "The game has started: to stop playing, resign in the game room (the game's rules say what happens "
        "to your seat).",
        status=409,
    )


def _release_seat(lobby: Lobby, live: LiveGame, principal: Principal, seat: int) -> None:
    """Release the seat's claim, then the person's and the name's (each only if still this principal's)."""
    store = lobby.store
    claim_key = seat_claim_key(live.game_id, seat)
    claim = store.get_value(claim_key)
    if claim is not None and json.loads(claim).get("user_id") == principal.id:
        store.replace_value(claim_key, claim, None)
    person_key = seat_holder_key(live.game_id, principal.id)
    person = store.get_value(person_key)
    if person is not None:
        store.replace_value(person_key, person, None)
    name_claim_key = seated_name_key(live.game_id, name_key(principal.name))
    named = store.get_value(name_claim_key)
    if named is not None and json.loads(named).get("user_id") == principal.id:
        store.replace_value(name_claim_key, named, None)
    state = live.seats[seat]
    state.kind, state.name, state.user_id = None, None, None


def join_offer(game: dict[str, Any], principal: Principal | None, your_seats: list[int]) -> dict[str, Any]:
    """What the lobby offers ``principal`` for a waiting game (a :func:`~server.web.lobby.summarize` dict):
    ``{"action": "join" | "resume" | "none", "reason": text}``. ``your_seats`` are the seats it holds there
    (from :meth:`Lobby.my_games`: the viewer's own fact). The reasons use only public seat facts."""
    if your_seats:
        return {"action": "resume", "reason": "You sit in this game."}
    kind = principal.kind if principal is not None else "human"
    seats = game.get("seats") or []
    free = [s for s in seats if not s.get("taken")]
    takeable = [s for s in free if s.get("accepts") in ("open", kind)]
    if not takeable:
        accepts = {s.get("accepts") for s in free}
        if accepts == {"agent"}:
            why = "The open seat is for a program (an API agent), not a person."
        elif accepts == {"human"} and kind != "human":
            why = "The open seat is for a person."
        else:
            why = "No seat you may take is open."
        return {"action": "none", "reason": why}
    if principal is None:
        return {"action": "join", "reason": "Choose a display name first, then join."}
    others = [str(s["name"]) for s in seats if s.get("taken") and s.get("name")]
    if name_clash(principal.name, others, principal.kind) is not None:
        return {
            "action": "none",
            "reason": "Your name could be mistaken for a seated player's; use another name to join.",
        }
    return {"action": "join", "reason": ""}


def join_offers(
    games: list[dict[str, Any]], principal: Principal | None, mine: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """game id -> :func:`join_offer` for each of the lobby's waiting ``games``; ``mine`` is the viewer's
    :meth:`Lobby.my_games` (its own seats)."""
    held = {game["game_id"]: game.get("your_seats") or [] for game in mine}
    return {game["game_id"]: join_offer(game, principal, held.get(game["game_id"], [])) for game in games}
