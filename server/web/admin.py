"""The admin area: API tokens for bots, every game with its researcher view, aborting, exports.

Access needs the admin password from the settings (``security.admin_password``; no password
configured = the area is closed): ``POST /api/admin/login {"password": ...}`` once per browser
session (until ``POST /api/admin/logout`` or another configured password), or HTTP Basic auth on
each request (``curl -u admin:PASSWORD``), or an API token with the ``admin`` scope (as a bearer token on
each request, or once as ``POST /api/admin/login {"token": ...}``: the session is admin while the token
stays unrevoked). Token plaintexts
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
    TOKEN_PRINCIPAL_PREFIX,
    basic_password,
    check_admin_password,
    clean_display_name,
    principal_for_token,
    require_admin_configured,
    resolve_principal,
)
from server.web.error_log import read_errors
from server.web.errors import request_object, rest_error
from server.web.services import current_services
from server.web.sessions import current_sessions
from server.web.study.admin_api import admin_seat, study_admin

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
admin.register_blueprint(
    study_admin
)  # /api/admin/studies: behind the same guard (server/web/study/admin_api.py)


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


def admin_token_accepted(plaintext: Any) -> str:
    """The id of ``plaintext`` if it is a valid API token with the admin scope, throttled per address as
    :func:`password_accepted` (a failure counts); else ``forbidden``."""
    address = request.remote_addr or "unknown"
    limiter = current_services().lobby.limiter
    limiter.check("admin_failures_per_address", address)
    try:
        principal = principal_for_token(current_services().store, plaintext)
    except ServerError:
        principal = None
    if principal is not None and principal.is_admin:
        return principal.id.removeprefix(TOKEN_PRINCIPAL_PREFIX)
    log.warning("refused admin token login from %s", log_text(address))
    limiter.hit("admin_failures_per_address", address)
    raise ServerError("forbidden", "That API token is unknown, revoked or lacks the admin scope.", status=403)


@admin.post("/login")
def login() -> tuple[Response, int]:
    """``{"password": ...}`` or ``{"token": ...}`` (an API token with the admin scope)."""
    data = body()
    if data.get("token") is not None:
        current_sessions().grant_admin(token_id=admin_token_accepted(data.get("token")))
        return jsonify({"ok": True, "by": "token"}), 200
    if not password_accepted(data.get("password")):
        raise ServerError("forbidden", "Wrong admin password.", status=403)
    current_sessions().grant_admin()
    return jsonify({"ok": True, "by": "password"}), 200


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


#: Live games (of each status, waiting and running) and recent finished ones the overview lists at most.
LIVE_GAMES_LISTED = 100
RECENT_GAMES_LISTED = 20
#: What the overview says of each game (seats apart).
OVERVIEW_FIELDS = ("game_id", "hall", "title", "status", "created_at", "started_at", "finished_at", "winners")


@admin.get("/overview")
def overview() -> tuple[Response, int]:
    """The dashboard's home: waiting and running games (with each running game's turn and phase) and the
    most recently created finished or aborted ones; seats with names, kinds and bots, no user id."""
    store, table = current_services().store, current_services().table
    live = [
        _overview_row(meta, table)
        for status in ("running", "waiting")
        for meta in store.list_games(status=status, limit=LIVE_GAMES_LISTED)
    ]
    over = store.list_games(status="finished", limit=RECENT_GAMES_LISTED)
    over += store.list_games(status="aborted", limit=RECENT_GAMES_LISTED)
    over.sort(key=lambda meta: meta.get("created_at") or 0, reverse=True)
    recent = [_overview_row(meta, None) for meta in over[:RECENT_GAMES_LISTED]]
    return jsonify({"ok": True, "live": live, "recent": recent}), 200


def _overview_row(meta: dict[str, Any], table: Any) -> dict[str, Any]:
    row = {key: meta.get(key) for key in OVERVIEW_FIELDS}
    row["abort_reason"] = str(meta["abort_reason"])[:200] if meta.get("abort_reason") else None
    row["seats"] = [admin_seat(seat) for seat in meta.get("seats", [])]
    row["turn"] = row["phase"] = None
    if table is not None and meta.get("status") == "running":
        try:
            live = table.get(meta["game_id"])
            with live.lock:
                table.catch_up(live)
                if live.game is not None:
                    row["turn"], row["phase"] = live.game.turn, live.game.phase
        except Exception:  # a game that cannot load is listed without its turn; its page says why
            log.warning("game %s: cannot be loaded for the admin overview", meta["game_id"], exc_info=True)
    return row


def require_game(game_id: str) -> None:
    if current_services().store.get_game(game_id) is None:
        details = {"game_id": game_id[:64]}
        raise ServerError("unknown_game", f"There is no game {game_id[:64]!r}.", details, status=404)


#: Events one ``GET /api/admin/games/<id>/events`` answers at most (the page asks again from the last one).
EVENTS_PER_PAGE = 500


@admin.get("/games/<game_id>/events")
def game_events(game_id: str) -> tuple[Response, int]:
    """Every event of the game (all visibilities: the researcher's log) with ``seq > after``, at most
    :data:`EVENTS_PER_PAGE`; ``more`` says whether later ones remain."""
    after = parse_count(request.args.get("after", "-1"), "after", negative=True)
    require_game(game_id)
    events = current_services().store.load_events(game_id, after_seq=max(after, -1))
    page = events[:EVENTS_PER_PAGE]
    return jsonify({"ok": True, "game_id": game_id, "events": page, "more": len(events) > len(page)}), 200


@admin.post("/games/<game_id>/seats/<seat>/bot")
def hand_seat_to_bot(game_id: str, seat: str) -> tuple[Response, int]:
    """``{"bot": spec}``: that bot (or listed LLM agent) plays the seat for the rest of the game."""
    seat_number = _whole_number(seat, "seat")
    spec = body().get("bot")
    if not isinstance(spec, str) or not spec:
        raise ServerError("invalid_bot_spec", 'Name the bot: {"bot": "random"} (see GET /api/bots).')
    record = current_services().table.hand_seat_to_bot(game_id, seat_number, spec)
    return jsonify({"ok": True, "seat": record}), 200


@admin.get("/games/<game_id>/errors")
def game_errors(game_id: str) -> tuple[Response, int]:
    """What the server logged at WARNING or worse about this game (server/web/error_log.py), oldest first."""
    store = current_services().store
    require_game(game_id)
    return jsonify({"ok": True, "game_id": game_id, "errors": read_errors(store, game_id)}), 200


@admin.get("/games/<game_id>/tables.parquet.zip")
def game_parquet(game_id: str) -> Response:
    """The tidy tables of one game (those of ``/export.zip``) as one Parquet file per table, zipped."""
    import pandas as pd  # loaded when an admin first asks for Parquet

    from server.web import export

    try:
        tables = export.export_csv_tables(current_services().store, [game_id])
    except export.ExportError as err:
        raise ServerError(err.code, err.message, err.details, status=404) from None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in tables.items():
            parquet = io.BytesIO()
            pd.read_csv(io.StringIO(text)).to_parquet(parquet, index=False)
            archive.writestr(f"{name.removesuffix('.csv')}.parquet", parquet.getvalue())
    return Response(
        buffer.getvalue(),
        mimetype="application/zip",
        headers={"Content-Disposition": attachment(game_id, "-tables-parquet.zip")},
    )


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
