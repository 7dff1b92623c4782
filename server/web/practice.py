"""The guided practice game: one reusable piece for first-time players and for a study's tutorial.

- :data:`PRACTICE_HALL` is the practice's one declaration: a two-seat Minecraft game on one small fixed
  instance (``practice_games/minecraft/practice/guided.json``: you hold 2 cobblestone and need 4 torches, the
  partner holds coal and sticks) against ``practice_partner`` (agents/bots/practice_partner.py), which
  accepts every proposal and, on its turn, offers 1 stick for 1 cobblestone. No deadlines, no value reports,
  passing allowed, whole crafting runs. The hall is unlisted: the lobby offers it nowhere and lists none of
  its games (nobody can join one: its only open seat is taken by its creator at creation). Practice games
  are unrated.
- :func:`start_practice` gives a person their practice game: the one still running, or a new one (through
  the lobby, so its abuse limits apply). The game room (``/games/<id>``) shows the guide
  (static/js/practice_guide.js) over the real controls.
- :func:`record_practice_completed` stores, once the practice game is over and the person won it, that
  they completed it; :func:`practice_completed` reads it (a study may require it).

Routes: ``GET /practice`` (the start page), ``POST /api/practice`` (start or resume: ``{game_id}``),
``GET /api/practice`` (``{completed, game_id}``), ``POST /api/practice/<game_id>/completed``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, jsonify, render_template, request, session

from server.store import Store
from server.table.config import HallSettings, SeatSpec, Settings
from server.table.errors import ServerError
from server.table.principal import Principal
from server.web.auth import require_principal, resolve_principal
from server.web.errors import request_object, rest_error
from server.web.lobby import Lobby
from server.web.services import Services, current_services

#: The hall name the practice games are created in (reserved: a settings hall of this name replaces it).
PRACTICE_HALL_NAME = "practice"
#: The folder of the practice's task instance (``<ruleset>/<mode>/*.json``).
PRACTICE_INSTANCES = Path(__file__).resolve().parent / "practice_games"
#: The partner's fixed proposal: what the guide asks the player to accept.
PRACTICE_PARTNER = "practice_partner?offer=stick:1&request=cobblestone:1"

PRACTICE_HALL = HallSettings(
    title="Practice game",
    description="A short guided game against a scripted partner: one trade, one craft.",
    ruleset="minecraft",
    mode="practice",
    players=2,
    instances={"choice": "fixed", "root": PRACTICE_INSTANCES},
    seats=[SeatSpec(kind="human"), SeatSpec(kind="bot", bot=PRACTICE_PARTNER, name="Sam")],
    allow_custom_seats=False,
    listed=False,
    rated=False,
    game={
        "max_turns": 6,
        "crafting_runs": "whole",
        "allow_pass": True,
        "first_proposer": 0,
        "tom_orders": [],
    },
)


def install_practice_hall(settings: Settings) -> None:
    """Add the practice hall to ``settings`` unless the operator declared one of that name."""
    settings.halls.setdefault(PRACTICE_HALL_NAME, PRACTICE_HALL)


def running_key(user_id: str) -> str:
    """Store key of a person's practice game that may still run (its id)."""
    return f"practice:game:{user_id}"


def completed_key(user_id: str) -> str:
    """Store key of a person's completed practice (``{"game_id", "at"}``): the flag a study reads."""
    return f"practice:completed:{user_id}"


def start_practice(services: Services, principal: Principal, address: str | None = None) -> str:
    """The id of ``principal``'s practice game: the one still running, else a new one with them seated.

    ``address`` is the client's network address (the lobby's abuse limits apply to it); None for an
    in-process call. Only people practise: an API token gets ``forbidden``."""
    if principal.kind != "human":
        raise ServerError(
            "forbidden", "The practice game is for people; agents play ordinary games.", status=403
        )
    return practice_game(services.lobby, principal, address)


def practice_game(lobby: Lobby, principal: Principal, address: str | None = None) -> str:
    """:func:`start_practice` through the lobby alone (a practice's rematch asks for it: "Practice again")."""
    store = lobby.store
    key = running_key(principal.id)
    held = store.get_value(key)
    if held is not None:
        meta = store.get_game(held)
        if meta is not None and meta.get("status") in ("waiting", "running"):
            return held
    game = lobby.create_game(PRACTICE_HALL_NAME, principal, join=True, address=address)
    if store.replace_value(key, held, game["game_id"]):
        return str(game["game_id"])
    return store.get_value(key) or str(game["game_id"])  # a parallel start recorded its game first


def record_practice_completed(services: Services, principal: Principal, game_id: Any) -> dict[str, Any]:
    """Record that ``principal`` completed the practice in ``game_id``: it must be a practice game, over,
    won by their seat. Idempotent; the first completion's record stands."""
    store = services.store
    meta = store.get_game(game_id) if isinstance(game_id, str) and len(game_id) <= 64 else None
    if meta is None:
        raise ServerError("unknown_game", "There is no such game.", status=404)
    if meta.get("hall") != PRACTICE_HALL_NAME:
        raise ServerError("not_a_practice_game", "That game is not a practice game.", {"game_id": game_id})
    seats = [s.get("seat") for s in meta.get("seats", []) if s.get("user_id") == principal.id]
    if not seats:
        raise ServerError("not_your_seat", "You hold no seat in that practice game.", status=403)
    if meta.get("status") != "finished" or not set(seats) & set(meta.get("winners") or []):
        raise ServerError(
            "game_not_over",
            "The practice counts as completed once you have crafted your target and the game is over.",
            {"game_id": game_id},
            status=409,
        )
    record = json.dumps({"game_id": game_id, "at": round(time.time(), 3)})
    store.set_value_if_absent(completed_key(principal.id), record)
    return practice_status(store, principal)


def practice_completed(store: Store, principal: Principal) -> bool:
    """Whether ``principal`` has completed the practice game (a study's tutorial step asks this)."""
    return store.get_value(completed_key(principal.id)) is not None


def practice_status(store: Store, principal: Principal) -> dict[str, Any]:
    held = store.get_value(completed_key(principal.id))
    done = json.loads(held) if held else None
    return {
        "completed": done is not None,
        "completed_game_id": done["game_id"] if done else None,
        "game_id": store.get_value(running_key(principal.id)),
    }


# ------------------------------------------------------------------------------------------------ routes
practice = Blueprint("practice", __name__)


def _caller() -> Principal | None:
    return resolve_principal(current_services().store, request.headers, session)


def _body() -> dict[str, Any]:
    """The request's JSON object, read as every /api POST reads it (malformed JSON: invalid_request)."""
    return request_object(current_services().settings.server.max_action_bytes)


def _ok(payload: dict[str, Any], status: int = 200) -> tuple[Response, int]:
    return jsonify({"ok": True, **payload}), status


@practice.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int]:  # typed answers, as every /api route gives
    return rest_error(err, current_services().settings.server.max_payload_bytes)


@practice.get("/practice")
def practice_page() -> str:
    services = current_services()
    try:
        principal = _caller()
    except ServerError:  # a revoked API token: the page as to anyone
        principal = None
    status = practice_status(services.store, principal) if principal else None
    return render_template("practice.html", user=principal.public() if principal else None, status=status)


@practice.post("/api/practice")
def start() -> tuple[Response, int]:
    services = current_services()
    _body()  # nothing is read from it, but a malformed request is refused before a game is made
    principal = require_principal(_caller())
    return _ok({"game_id": start_practice(services, principal, request.remote_addr or "unknown")})


@practice.get("/api/practice")
def status() -> tuple[Response, int]:
    services = current_services()
    return _ok(practice_status(services.store, require_principal(_caller())))


@practice.post("/api/practice/<game_id>/completed")
def completed(game_id: str) -> tuple[Response, int]:
    _body()
    services = current_services()
    return _ok(record_practice_completed(services, require_principal(_caller()), game_id))
