"""The admin area: API tokens for bots, every game with its researcher view, aborting, exports.

Access needs the admin password from the settings (``security.admin_password``; no password
configured = the area is closed): ``POST /api/admin/login {"password": ...}`` once per browser
session (until ``POST /api/admin/logout`` or another configured password), or HTTP Basic auth on
each request (``curl -u admin:PASSWORD``), or an API token with the ``admin`` scope. Token plaintexts
are shown exactly once, when created, and never logged.

Also the ``tradecraft admin`` commands, which work on the store directly (no running server needed).
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response, jsonify, request, session, stream_with_context

from server.table.errors import ServerError, parse_count
from server.table.log_text import log_text
from server.web.auth import (
    SCOPES,
    basic_password,
    check_admin_password,
    clean_display_name,
    require_admin_configured,
    resolve_principal,
)
from server.web.errors import request_object, rest_error
from server.web.services import current_services
from server.web.sessions import current_sessions

log = logging.getLogger(__name__)


def _scopes(raw: Any) -> list[str]:
    scopes = ["play"] if raw is None else raw
    if not isinstance(scopes, list) or not scopes or any(s not in SCOPES for s in scopes):
        raise ServerError("invalid_request", f"scopes must be a non-empty list drawn from {list(SCOPES)}.")
    return list(dict.fromkeys(scopes))


def _whole_number(raw: str, name: str) -> int:
    """A count or seat number from a query string, read by the one number grammar (ASCII digits,
    bounded; see server.table.errors.parse_count)."""
    return parse_count(raw, name)


#: What a game id may hold to appear in a download's file name (the lobby's ids: token_urlsafe).
_FILE_NAME_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def attachment(game_id: str, suffix: str) -> str:
    """A ``Content-Disposition`` value built from validated parts only (RFC 6266, quoted): a game id of
    another shape than the lobby's is named "game", so no request text can reach the header."""
    name = game_id if _FILE_NAME_ID.fullmatch(game_id) else "game"
    return f'attachment; filename="{name}{suffix}"'


#: The admin area under ``/api/admin``; every route needs the admin password (see the module's docstring).
admin = Blueprint("admin", __name__, url_prefix="/api/admin")


def password_accepted(password: Any) -> bool:
    """The admin password check, throttled per address: failures count, and an address over
    ``limits.admin_failures_per_address`` is refused (``rate_limited``) before any comparison."""
    address = request.remote_addr or "unknown"
    limiter = current_services().lobby.limiter
    limiter.check("admin_failures_per_address", address)
    if check_admin_password(current_services().settings, password):
        return True
    log.warning("wrong admin password from %s", log_text(address))
    limiter.hit("admin_failures_per_address", address)
    return False


def is_admin() -> bool:
    if session.get("admin") is True:
        return True
    password = basic_password(request.headers)
    if password is not None:
        return password_accepted(password)
    principal = resolve_principal(current_services().store, request.headers, {})
    return principal is not None and principal.is_admin


@admin.before_request
def require_admin() -> None:
    require_admin_configured(current_services().settings)
    if request.endpoint != "admin.login" and not is_admin():
        raise ServerError(
            "forbidden",
            'This is the admin area: log in with POST /api/admin/login {"password": ...} '
            "or send HTTP Basic auth with the admin password.",
            status=403,
        )


@admin.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int]:
    return rest_error(err, current_services().settings.server.max_payload_bytes)


def body() -> dict[str, Any]:
    return request_object(current_services().settings.server.max_action_bytes)


@admin.post("/login")
def login() -> tuple[Response, int]:
    if not password_accepted(body().get("password")):
        raise ServerError("forbidden", "Wrong admin password.", status=403)
    current_sessions().grant_admin()
    return jsonify({"ok": True}), 200


@admin.post("/logout")
def logout() -> tuple[Response, int]:
    current_sessions().revoke_admin()
    return jsonify({"ok": True}), 200


@admin.post("/users/<user_id>/end-sessions")
def end_user_sessions(user_id: str) -> tuple[Response, int]:
    """Every login session of that person ends now, over REST and on their open sockets."""
    if current_services().store.get_user(user_id) is None:
        raise ServerError("unknown_user", "No user has that id.", {"user_id": user_id[:64]}, status=404)
    current_sessions().end_user_sessions(user_id)
    log.info("admin ended every session of user %s", user_id)
    return jsonify({"ok": True, "user_id": user_id}), 200


@admin.get("/settings")
def show_settings() -> tuple[Response, int]:
    return jsonify({"ok": True, "settings": current_services().settings.public_dict()}), 200


@admin.get("/halls/<name>/instances")
def hall_instances(name: str) -> tuple[Response, int]:
    # exact instances with their difficulty: picking one tells the picker every target, so admins only
    lobby = current_services().lobby
    return jsonify({"ok": True, "hall": name, "instances": lobby.instance_catalog(lobby.hall(name))}), 200


@admin.get("/tokens")
def list_tokens() -> tuple[Response, int]:
    return jsonify({"ok": True, "tokens": current_services().store.list_tokens()}), 200


@admin.post("/tokens")
def create_token() -> tuple[Response, int]:
    data = body()
    if data.get("name") is None:
        raise ServerError("invalid_name", 'Name the token (who or what will use it), e.g. {"name": "bot-1"}.')
    name = clean_display_name(data.get("name"), "token name", "agent")
    plaintext, record = current_services().store.create_token(name, _scopes(data.get("scopes")))
    log.info("admin created API token %s (%s)", record["id"], log_text(record["name"]))
    return jsonify({"ok": True, "token": plaintext, "record": record}), 201


@admin.delete("/tokens/<token_id>")
def revoke_token(token_id: str) -> tuple[Response, int]:
    revoked = current_services().store.revoke_token(token_id)
    log.info(
        "admin revoked API token %s (%s)",
        log_text(token_id),
        "done" if revoked else "unknown or already revoked",
    )
    return jsonify({"ok": True, "revoked": revoked}), 200


@admin.get("/games")
def games() -> tuple[Response, int]:
    status = request.args.get("status") or None
    limit = _whole_number(request.args.get("limit", "100"), "limit")
    games = current_services().store.list_games(status=status, limit=min(limit, 10_000))
    return jsonify({"ok": True, "games": games}), 200


@admin.get("/games/<game_id>")
def researcher(game_id: str) -> tuple[Response, int]:
    return jsonify({"ok": True, **current_services().table.researcher(game_id)}), 200


@admin.post("/games/<game_id>/abort")
def abort(game_id: str) -> tuple[Response, int]:
    current_services().table.abort(game_id, str(body().get("reason") or "aborted by an admin"))
    return jsonify({"ok": True}), 200


@admin.get("/games/<game_id>/export")
def export_game(game_id: str) -> Response:
    """Researcher JSONL of one game, or with ``?seat=N`` the participant-safe export of that seat."""
    from server.web import export  # click and analysis load when an admin first exports

    store = current_services().store
    seat = request.args.get("seat")
    try:
        if seat is not None:
            seat_number = _whole_number(seat, "seat")
            lines = export.export_participant(store, game_id, seat_number)
            disposition = attachment(game_id, f"-seat{seat_number}.jsonl")
        else:
            lines = export.export_game_jsonl(store, game_id)
            disposition = attachment(game_id, ".jsonl")
    except export.ExportError as err:  # raised before anything is streamed
        status = 404 if err.code in ("unknown_game", "unknown_seat") else 409
        raise ServerError(err.code, err.message, err.details, status=status) from None
    return Response(
        stream_with_context(_lines(lines)),
        mimetype="application/x-ndjson",
        headers={"Content-Disposition": disposition},
    )


@admin.get("/export.zip")
def export_tables() -> Response:
    from server.web import export

    store = current_services().store
    game_ids = request.args.getlist("game_id")
    if not game_ids:
        status = request.args.get("status") or None
        game_ids = [g["game_id"] for g in store.list_games(status=status, limit=1_000_000)]
    try:
        tables = export.export_csv_tables(store, game_ids)
    except export.ExportError as err:
        raise ServerError(err.code, err.message, err.details, status=404) from None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in tables.items():
            archive.writestr(name if name.endswith(".csv") else f"{name}.csv", text)
    return Response(
        buffer.getvalue(),
        mimetype="application/zip",
        headers={"Content-Disposition": 'attachment; filename="tradecraft-tables.zip"'},
    )


def _lines(lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"
