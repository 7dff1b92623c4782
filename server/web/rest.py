"""The REST mirror of the protocol under ``/api``: lobby, games, joining, views, events, actions, queries,
schemas, error codes. Every player action type in ``server.game.actions.ACTION_MODELS`` is a route
``POST /api/games/<game_id>/actions/<type>``, as it is a Socket.IO event in ``server/web/sockets.py``; see
docs/protocol.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from flask import Blueprint, Response, jsonify, request, session

from server.game.actions import ACTION_MODELS, PLAYER_ACTION_TYPES, action_json_schema
from server.game.errors import ERROR_CODES
from server.game.queries import QUERY_MODELS
from server.game.schemas import strict_args_schema
from server.table.errors import SERVER_ERROR_CODES, ServerError, parse_count, parse_seconds
from server.table.principal import Principal
from server.web.accounts import log_in_by_name
from server.web.auth import require_principal, resolve_principal
from server.web.deployment import long_poll_slot, query_slot
from server.web.errors import request_object, rest_error
from server.web.messages import cancel_game_request, create_game_request, split_action
from server.web.rematch import rematch_of, request_rematch
from server.web.schema_catalog import schema_catalogue
from server.web.seat_moves import leave_waiting_game
from server.web.services import current_services
from server.web.sessions import current_sessions

#: The REST mirror under ``/api``: lobby, games, joining, views, events, actions, schemas.
api = Blueprint("api", __name__, url_prefix="/api")


def ok(payload: dict[str, Any], status: int = 200) -> tuple[Response, int]:
    return jsonify({"ok": True, **payload}), status


def body() -> dict[str, Any]:
    """The request's JSON object, at most ``server.max_action_bytes`` long."""
    return request_object(current_services().settings.server.max_action_bytes)


def caller() -> Principal | None:
    return resolve_principal(current_services().store, request.headers, session)


@api.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int]:
    return rest_error(err, current_services().settings.server.max_payload_bytes)


@api.post("/login")
def login() -> tuple[Response, int]:
    data = body()
    services = current_services()
    address = request.remote_addr or "unknown"
    # a kept name needs its password or login token (server/web/accounts.py)
    user = log_in_by_name(
        services.store, services.lobby.limiter, data.get("name"), data.get("password"), address
    )
    current_sessions().log_in(user["id"])
    return ok({"user": {"id": user["id"], "name": user["name"], "kind": "human"}})


@api.post("/logout")
def logout() -> tuple[Response, int]:
    current_sessions().log_out()
    return ok({})


@api.get("/me")
def me() -> tuple[Response, int]:
    principal = caller()
    return ok({"user": principal.public() if principal else None})


@api.get("/halls")
def halls() -> tuple[Response, int]:
    return ok({"halls": current_services().lobby.halls()})


@api.get("/games")
def list_games() -> tuple[Response, int]:
    games = current_services().lobby.list_games(request.args.get("status"), request.args.get("limit", 100))
    return ok({"games": games})


@api.post("/games")
def create_game() -> tuple[Response, int]:
    return ok({"game": create_game_request(current_services(), body(), caller())}, 201)


@api.get("/bots")
def bots() -> tuple[Response, int]:
    bots = current_services().bots
    # bots: the seatable specs (as before); opponents: the same with plain names, descriptions, availability
    return ok({"bots": bots.seatable(), "opponents": bots.opponents()})


@api.get("/me/games")
def my_games() -> tuple[Response, int]:
    limit = max(1, min(parse_count(request.args.get("limit", 50), "limit"), 200))
    return ok({"games": current_services().lobby.my_games(require_principal(caller()), limit)})


@api.get("/games/<game_id>")
def game_summary(game_id: str) -> tuple[Response, int]:
    return ok({"game": current_services().lobby.summary(game_id)})


@api.post("/games/<game_id>/join")
def join(game_id: str) -> tuple[Response, int]:
    services = current_services()
    seat = services.lobby.join(game_id, require_principal(caller()), body().get("seat"))
    table = services.table
    live = table.get(game_id)
    with live.lock:
        table.catch_up(live)
        return ok({**table.envelope(live, seat), "events": table.history(live, seat)})


@api.post("/games/<game_id>/cancel")
def cancel(game_id: str) -> tuple[Response, int]:
    return ok({"game": cancel_game_request(current_services(), game_id, caller())})


@api.post("/games/<game_id>/leave")
def leave(game_id: str) -> tuple[Response, int]:
    body()  # the one request check (size, JSON object) every POST makes
    return ok({"game": leave_waiting_game(current_services().lobby, game_id, require_principal(caller()))})


@api.post("/games/<game_id>/rematch")
def rematch(game_id: str) -> tuple[Response, int]:
    body()
    principal = require_principal(caller())
    return ok(
        {
            "game": request_rematch(
                current_services().lobby, game_id, principal, request.remote_addr or "unknown"
            )
        }
    )


@api.get("/games/<game_id>/rematch")
def rematch_id(game_id: str) -> tuple[Response, int]:
    return ok({"rematch": rematch_of(current_services().lobby, game_id, require_principal(caller()))})


@api.get("/games/<game_id>/view")
def view(game_id: str) -> tuple[Response, int]:
    return ok(current_services().table.view(game_id, caller(), _int_arg("seat")))


@api.get("/games/<game_id>/events")
def events(game_id: str) -> tuple[Response, int]:
    after = _int_arg("after", negative=True)  # -1: the whole log
    wait_seconds = parse_seconds(request.args.get("wait", "0"), "wait")
    principal = caller()
    with long_poll_slot(principal, wait_seconds):  # caps per address and user (server/web/deployment.py)
        result = current_services().table.events_since(
            game_id, principal, -1 if after is None else after, _int_arg("seat"), wait_seconds
        )
    return ok(result)


def act(game_id: str, action_type: str | None) -> tuple[Response, int]:
    data = body()
    envelope, action = split_action(data, action_type)
    client_action_id = envelope["client_action_id"] or request.headers.get("Idempotency-Key")
    response = current_services().table.act(
        game_id, require_principal(caller()), action, envelope["seat"], client_action_id
    )
    return jsonify(response), 200


def _post_per_type(
    path: str, endpoint: str, view: Callable[[str, str | None], tuple[Response, int]], types: Iterable[str]
) -> None:
    """``POST path`` (the type in the body) and ``POST path/<type>`` for each type, answered by ``view``."""
    api.add_url_rule(path, endpoint, lambda game_id: view(game_id, None), methods=["POST"])
    for kind in types:
        api.add_url_rule(
            f"{path}/{kind}",
            f"{endpoint}_{kind}",
            lambda game_id, _t=kind: view(game_id, _t),
            methods=["POST"],
        )


_post_per_type("/games/<game_id>/actions", "act", act, PLAYER_ACTION_TYPES)


@api.post("/games/<game_id>/traces")
def traces(game_id: str) -> tuple[Response, int]:
    data = request_object(current_services().settings.server.max_payload_bytes)
    principal = require_principal(caller())
    return ok(
        current_services().table.record_traces(
            game_id,
            principal,
            data.get("traces"),
            data.get("seat"),
            data.get("event_n"),
            data.get("batch_id"),
        )
    )


def query(game_id: str, query_type: str | None) -> tuple[Response, int]:
    data = body()
    if query_type is not None:
        data = {**data, "type": query_type}
    principal = caller()
    with query_slot(None, principal):  # in flight per user and address (server/web/deployment.py)
        return ok(current_services().table.query(game_id, principal, data, _int_arg("seat")))


_post_per_type("/games/<game_id>/query", "query", query, QUERY_MODELS)


@api.get("/actions")
def action_schemas() -> tuple[Response, int]:
    return ok(
        {
            "actions": {t: ACTION_MODELS[t].model_json_schema() for t in PLAYER_ACTION_TYPES},
            "union": action_json_schema(),
            "strict": {t: strict_args_schema(ACTION_MODELS[t]) for t in PLAYER_ACTION_TYPES},
        }
    )


@api.get("/queries")
def query_schemas() -> tuple[Response, int]:
    return ok(
        {
            "queries": {t: model.model_json_schema() for t, model in QUERY_MODELS.items()},
            "strict": {t: strict_args_schema(model) for t, model in QUERY_MODELS.items()},
        }
    )


@api.get("/schemas")
def schemas() -> tuple[Response, int]:
    return ok(schema_catalogue())


@api.get("/errors")
def error_codes() -> tuple[Response, int]:
    return ok({"engine": ERROR_CODES, "server": SERVER_ERROR_CODES})


@api.route("/<path:anything>", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
def unknown(anything: str) -> tuple[Response, int]:
    raise ServerError(
        "invalid_request", f"There is no API endpoint /api/{anything}; see docs/protocol.md.", status=404
    )


def _int_arg(name: str, negative: bool = False) -> int | None:
    """An integer query argument, read by the one number grammar (see parse_count)."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return None
    return parse_count(raw, name, negative=negative)
