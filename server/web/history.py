"""A player's history and the public leaderboard (server/table/ratings.py keeps both; docs/ratings.md).

- ``/history`` and ``GET /api/me/history?after=CURSOR&limit=N``: the logged-in player's finished games,
  newest first (hall, opponents by name, result, points, date, a link to the replay), a page at a time;
- ``/leaderboard`` and ``GET /api/leaderboard?provisional=0|1&offset=N&limit=N``: every rated player, best
  first; players with fewer than ``ratings.min_games`` rated games are listed apart as provisional.

Both show only what finished games made public (names, kinds, results); never a user id, a target or a
report. Pages render on the server (Jinja escapes every name) and page with plain links.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, render_template, request, session

from server.table.errors import ServerError, parse_count
from server.table.principal import Principal
from server.table.ratings import Leaderboard, history_page, player_rating
from server.web.auth import require_principal, resolve_principal
from server.web.errors import rest_error
from server.web.services import current_services

HISTORY_PAGE_SIZE = 20
HISTORY_MAX_PAGE = 100
LEADERBOARD_PAGE_SIZE = 50
LEADERBOARD_MAX_PAGE = 200
#: A history cursor is what history_page gave out: digits, a colon, a game id.
CURSOR = re.compile(r"[0-9]{14}:[A-Za-z0-9_-]{1,64}")
LEADERBOARD_EXTENSION = "tradecraft.leaderboard"

history = Blueprint("history", __name__)


def leaderboard_of(app: Flask) -> Leaderboard:
    board = app.extensions.get(LEADERBOARD_EXTENSION)
    if board is None:
        board = app.extensions[LEADERBOARD_EXTENSION] = Leaderboard(current_services().store)
    return board


def _principal() -> Principal | None:
    try:
        return resolve_principal(current_services().store, request.headers, session)
    except ServerError:  # a revoked token: nobody
        return None


def _cursor(raw: str | None) -> str:
    if raw is None or raw == "":
        return ""
    if not CURSOR.fullmatch(raw):
        raise ServerError("invalid_request", "after must be the cursor the previous page gave (next).")
    return raw


def _limit(default: int, most: int) -> int:
    raw = request.args.get("limit")
    return default if raw in (None, "") else max(1, min(parse_count(raw, "limit"), most))


def _offset() -> int:
    raw = request.args.get("offset")
    return 0 if raw in (None, "") else min(parse_count(raw, "offset"), 1_000_000)


def _history(principal: Principal) -> dict[str, Any]:
    store = current_services().store
    entries, cursor = history_page(
        store, principal.id, _cursor(request.args.get("after")), _limit(HISTORY_PAGE_SIZE, HISTORY_MAX_PAGE)
    )
    return {"games": entries, "next": cursor, "rating": player_rating(store, "user:" + principal.id)}


def _board() -> dict[str, Any]:
    provisional = request.args.get("provisional") in ("1", "true")
    min_games = current_services().settings.ratings.min_games
    page = leaderboard_of(current_app).page(
        min_games, provisional, _offset(), _limit(LEADERBOARD_PAGE_SIZE, LEADERBOARD_MAX_PAGE)
    )
    return page


@history.app_template_filter("isotime")
def isotime(stamp: float) -> str:
    return datetime.fromtimestamp(float(stamp), UTC).isoformat(timespec="seconds")


@history.app_template_filter("shortdate")
def shortdate(stamp: float) -> str:
    return datetime.fromtimestamp(float(stamp), UTC).strftime("%d %b %Y, %H:%M UTC")


@history.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int] | tuple[str, int]:
    """JSON routes answer every failure typed; pages show a refusal's sentence (bad paging links)."""
    if request.path.startswith("/api/"):
        return rest_error(err, current_services().settings.server.max_payload_bytes)
    if isinstance(err, ServerError):
        return render_template("history_error.html", message=err.message), err.status
    raise err


@history.get("/api/me/history")
def my_history() -> tuple[Response, int]:
    return jsonify({"ok": True, **_history(require_principal(_principal()))}), 200


@history.get("/api/leaderboard")
def leaderboard_json() -> tuple[Response, int]:
    return jsonify({"ok": True, **_board()}), 200


@history.get("/history")
def history_view() -> str:
    principal = _principal()
    page = _history(principal) if principal is not None and principal.kind == "human" else None
    return render_template("history.html", user=principal.public() if principal else None, page=page)


@history.get("/leaderboard")
def leaderboard_view() -> str:
    board = _board()
    return render_template("leaderboard.html", board=board)
