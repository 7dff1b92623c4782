"""The researcher's admin dashboard in the browser: the pages over the admin REST area (server/web/admin.py).

- ``/admin/login``: the login form (the admin password, or an API token with the ``admin`` scope); its script
  posts JSON to ``POST /api/admin/login`` (CSRF-safe as every ``/api`` write: server/web/csrf.py), throttled
  and answered in words there. ``/admin/logout``: a button that posts ``/api/admin/logout``.
- ``/admin``: live games (waiting and running: hall, seats, turn, start) and the recent finished ones,
  redrawn every 2 s from ``GET /api/admin/overview``;
- ``/admin/games/<id>``: one game as the researcher sees it (seats with hands and targets, every event in
  words, value reports, what the server logged about it), live; interventions (end the game, hand a seat to a
  bot or a listed LLM agent) and downloads;
- ``/admin/tokens``: API tokens: list, create (the plaintext shown once), revoke;
- ``/admin/studies``: every study with its status and funnel; ``/admin/studies/<id>``: one study's funnel as a
  chart, its participants with the interventions (advance, boot, message), its live games, pause / resume /
  close, and its downloads (``/api/admin/studies/...``: server/web/study/admin_api.py and exports.py).

Every page but the login form redirects (302) to the form for a browser without admin rights; the data and
every action come from ``/api/admin/...``, which refuses (403) anyone without them. Pages are Jinja2 templates
in ``templates/admin/`` with their scripts in ``static/js/admin*.js`` (no inline scripts: the CSP).
"""

from __future__ import annotations

from urllib.parse import quote

from flask import Blueprint, Response, abort, redirect, render_template, request, session

from server.web.pages import ROOT, checked_game_id
from server.web.services import current_services

admin_pages = Blueprint("admin_pages", __name__, url_prefix="/admin", template_folder=str(ROOT / "templates"))

#: Longest study id a page accepts (study ids are at most 48 characters: server/web/study/definition.py).
STUDY_ID_MAX_CHARS = 48

#: Pages anyone may open (the form that grants admin rights).
OPEN_ENDPOINTS = frozenset({"admin_pages.login"})


def has_admin_rights() -> bool:
    """This browser's session holds admin rights (the password's, or a still-valid admin token's), and the
    area is open (no admin password configured closes it, as it closes the REST area)."""
    configured = current_services().settings.security.admin_password is not None
    return configured and session.get("admin") is True


def safe_next(raw: str | None) -> str:
    """Where to go after the login: an admin page of this site only (never another site's URL)."""
    if raw and raw.startswith("/admin") and not raw.startswith("/admin/login") and "//" not in raw:
        return raw
    return "/admin"


@admin_pages.before_request
def _require_admin() -> Response | None:
    if request.endpoint in OPEN_ENDPOINTS or has_admin_rights():
        return None
    return redirect(f"/admin/login?next={quote(request.full_path.rstrip('?'), safe='/')}", code=302)


@admin_pages.get("/login")
def login() -> str:
    settings = current_services().settings
    return render_template(
        "admin/login.html",
        disabled=settings.security.admin_password is None,
        already=has_admin_rights(),
        next_page=safe_next(request.args.get("next")),
    )


@admin_pages.get("/logout")
def logout() -> str:
    return render_template("admin/logout.html")


@admin_pages.get("")
def home() -> str:
    return render_template("admin/home.html")


@admin_pages.get("/games/<game_id>")
def game(game_id: str) -> str:
    game_id = checked_game_id(game_id)
    services = current_services()
    meta = services.store.get_game(game_id) or {}
    ruleset = meta.get("ruleset")
    return render_template(
        "admin/game.html",
        game_id=game_id,
        ruleset=ruleset if ruleset in services.rulesets else None,
        known=bool(meta),
        default_bot=services.settings.bots.default,
    )


@admin_pages.get("/tokens")
def tokens() -> str:
    return render_template("admin/tokens.html")


@admin_pages.get("/studies")
def studies() -> str:
    return render_template("admin/studies.html")


@admin_pages.get("/studies/<study_id>")
def study(study_id: str) -> str:
    if len(study_id) > STUDY_ID_MAX_CHARS:
        abort(404)
    return render_template("admin/study.html", study_id=study_id)
