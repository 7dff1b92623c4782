"""The browser pages of the viewer side of the GUI, and the files every page loads.

- ``/``: the lobby (log in with a display name; my games to resume; create a game: game mode, difficulty band
  or random, seat kinds, and for admins an exact instance; open games to join, running ones to watch,
  finished ones to replay; the tables redraw on ``lobby`` pushes);
- ``/games/<id>``: the game room of a seat (Socket.IO ``join``: trade, craft, the end screen);
- ``/how-to-play``: the rules for a first-time player;
- ``/games/<id>/watch``: a live game as a spectator sees it (Socket.IO ``watch``);
- ``/games/<id>/replay``: a finished game step by step (``GET /api/games/<id>/replay``, server/web/replay.py);
- ``/rulesets/<name>/icons``: every item's icon (``GET /api/rulesets/<name>/items``), to check them by eye;
- ``/static/...`` (``static/``) and ``/vendor/<package>/<file>``: the front-end packages of ``package.json``,
  served from ``node_modules/`` (installed by ``make setup``; never copied into the repository), limited
  to the files pages load.

Pages are Jinja2 templates in ``templates/`` extending ``base.html``; no page has inline scripts or styles
(the CSP forbids them). Read-only: they call the same endpoints as any client.
"""

from __future__ import annotations

import logging
from pathlib import Path

from flask import Blueprint, Response, abort, render_template, request, send_from_directory, session
from flask.blueprints import BlueprintSetupState

from server.table.errors import ServerError
from server.web.auth import resolve_principal
from server.web.practice import PRACTICE_HALL_NAME
from server.web.seat_moves import join_offers
from server.web.services import current_services

log = logging.getLogger(__name__)

#: The repository: templates/, static/ and node_modules/ are served from it.
ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "node_modules"

#: The only files served from node_modules: package -> files (relative to the package).
VENDOR_FILES: dict[str, frozenset[str]] = {
    "socket.io-client": frozenset({"dist/socket.io.esm.min.js"}),
}

#: Most recent games the lobby page lists (every status together).
LOBBY_GAMES_SHOWN = 60

#: Longest game id a page accepts in its URL (ids are ``secrets.token_urlsafe``: about 16 characters).
GAME_ID_MAX_CHARS = 64

#: The pages of the module's docstring, with ``templates/`` and ``static/``.
viewer_pages = Blueprint(
    "viewer_pages",
    __name__,
    template_folder=str(ROOT / "templates"),
    static_folder=str(ROOT / "static"),
    static_url_path="/static",
)


@viewer_pages.record_once
def _warn_of_missing_front_end(state: BlueprintSetupState) -> None:
    """Said once per app, when the pages are registered: the pages work but their scripts would 404."""
    missing = [
        f"{p}/{f}" for p, files in VENDOR_FILES.items() for f in files if not (NODE_MODULES / p / f).exists()
    ]
    if missing:
        log.warning(
            "front-end packages missing (%s): run `make setup` (npm ci) for the browser pages", missing
        )


def checked_game_id(game_id: str) -> str:
    if len(game_id) > GAME_ID_MAX_CHARS:
        abort(404)
    return game_id


@viewer_pages.get("/vendor/<package>/<path:filename>")
def vendor(package: str, filename: str) -> Response:
    if filename not in VENDOR_FILES.get(package, frozenset()):
        abort(404)
    response = send_from_directory(NODE_MODULES / package, filename, max_age=3600)
    return response


@viewer_pages.get("/")
def lobby() -> str:
    services = current_services()
    try:
        principal = resolve_principal(services.store, request.headers, session)
    except ServerError:  # a revoked API token: show the page as to anyone
        principal = None
    games = services.lobby.list_games(limit=LOBBY_GAMES_SHOWN)
    my_games = services.lobby.my_games(principal, limit=20) if principal else []
    open_games = [g for g in games if g["status"] == "waiting" and g["open_seats"]]
    return render_template(
        "lobby.html",
        user=principal.public() if principal else None,
        # admins (a session logged in to the admin area, or an admin token) may pick exact instances
        is_admin=session.get("admin") is True or bool(principal and principal.is_admin),
        halls=services.lobby.halls(),
        bots=services.bots.seatable(),
        opponents=services.bots.opponents(),  # the same, with plain names, descriptions and availability
        default_bot=services.settings.bots.default,
        my_games=my_games,
        open_games=open_games,
        join_offers=join_offers(open_games, principal, my_games),  # server/web/seat_moves.py
        running_games=[g for g in games if g["status"] == "running"],
        finished_games=[g for g in games if g["status"] in ("finished", "aborted")],
    )


def game_page(template: str, game_id: str) -> str:
    """A game's page with its hall title and rule set (both public, as in the lobby's lists); None for a
    game id that names no game (the page's script says so). The rule set lets the page fetch its icon
    catalogue while its socket connects, not after the game's first answer."""
    game_id = checked_game_id(game_id)
    services = current_services()
    meta = services.store.get_game(game_id)  # one read: no replay of the game's log
    meta = meta or {}
    ruleset = meta.get("ruleset")
    return render_template(
        template,
        game_id=game_id,
        title=meta.get("title"),
        ruleset=ruleset if ruleset in services.rulesets else None,
        practice=meta.get("hall") == PRACTICE_HALL_NAME,  # the room shows the guide (practice_guide.js)
    )


@viewer_pages.get("/games/<game_id>")
def room(game_id: str) -> str:
    return game_page("room.html", game_id)


@viewer_pages.get("/how-to-play")
def how_to_play() -> str:
    return render_template("how_to_play.html")


@viewer_pages.get("/games/<game_id>/replay")
def replay(game_id: str) -> str:
    return game_page("replay.html", game_id)


@viewer_pages.get("/games/<game_id>/watch")
def watch(game_id: str) -> str:
    return game_page("watch.html", game_id)


@viewer_pages.get("/rulesets/<name>/icons")
def icons(name: str) -> str:
    if name not in current_services().rulesets:
        abort(404)
    return render_template("icons.html", ruleset=name)
