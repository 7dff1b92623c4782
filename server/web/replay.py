"""``GET /api/games/<id>/replay``: a finished game step by step, as a seat, a spectator or a researcher saw
it. The replay itself (who may see which view, the cache, the answer model) is ``server/table/replay.py``;
each app's :class:`~server.table.replay.Replays` is ``Services.replays``."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request, session

from server.table.errors import parse_count
from server.table.principal import Principal
from server.web.auth import basic_password, check_admin_password, resolve_principal
from server.web.errors import error_body, http_status
from server.web.services import current_services

#: ``GET /api/games/<id>/replay``: one step of a finished game's replay (:class:`ReplayStep`).
replay = Blueprint("replay", __name__, url_prefix="/api/games")


def is_admin(principal: Principal | None) -> bool:
    if session.get("admin") is True:
        return True
    if principal is not None and principal.is_admin:
        return True
    password = basic_password(request.headers)
    return password is not None and check_admin_password(current_services().settings, password)


@replay.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int]:
    return jsonify({"ok": False, "error": error_body(err)}), http_status(err)


def int_arg(name: str) -> int | None:
    raw = request.args.get(name)
    return None if raw is None or raw == "" else parse_count(raw, name)


@replay.get("/<game_id>/replay")
def replay_step(game_id: str) -> tuple[Response, int]:
    services = current_services()
    principal = (
        None
        if basic_password(request.headers)
        else resolve_principal(services.store, request.headers, session)
    )
    view = request.args.get("view")
    answer = services.replays.step(
        game_id,
        principal,
        is_admin(principal),
        view[:32] if view else None,
        int_arg("step"),
        int_arg("turn"),
    )
    return jsonify(answer), 200
