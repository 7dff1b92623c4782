"""The Flask application factory: settings -> store -> live table -> Socket.IO + REST + admin.

    gunicorn -c python:server.web.gunicorn_conf 'server.web.app:create_app()'  # production
    python run_server.py [--config FILE] [--host H] [--port P]                 # development

``create_app()`` reads the settings (``TRADECRAFT_CONFIG`` or settings.yaml, plus ``TRADECRAFT__*``
environment overrides), opens the store (creating the data dir of the embedded SQLite store), makes or
loads the shared secret key, wires Socket.IO on the process's event loop (gevent under gunicorn's gevent
worker, else threads; WebSocket through simple-websocket either way; a Redis message queue when
``socketio.message_queue`` is set, so several processes can serve one set of games), caps what one address
or user may hold open (server/web/deployment.py), and reloads every unfinished game from the store, resuming
its deadlines and bot seats.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from importlib.metadata import PackageNotFoundError, version

from flask import Flask, Response, jsonify
from flask_socketio import SocketIO

from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.planner import planner_for
from server.store import Store, open_store
from server.table.config import Settings, load_settings
from server.table.log_text import install_log_escaping
from server.table.master import Table
from server.table.policies import BotRegistry, PolicyMaker
from server.table.timers import DeadlineScheduler
from server.web import csrf, error_log, sessions
from server.web.accounts import accounts
from server.web.admin import admin
from server.web.admin_pages import admin_pages
from server.web.auth import secret_key
from server.web.beliefs import beliefs
from server.web.deployment import DeploymentCaps, async_mode
from server.web.history import history
from server.web.item_catalog import item_catalog
from server.web.lobby import Lobby
from server.web.pages import viewer_pages
from server.web.practice import install_practice_hall, practice
from server.web.replay import replay
from server.web.rest import api
from server.web.services import EXTENSION_KEY, Services
from server.web.sockets import SocketIOTransport, SocketProtocol
from server.web.study.matching import StudyMatcher
from server.web.study_admin_exports import study_exports
from server.web.study_pages import study_pages
from server.web.transport_guards import route_socketio_paths

log = logging.getLogger("server")

#: Sent with every response. The GUI relies on exactly this policy (TEAM.md "hardening -> gui"): no inline
#: scripts or style attributes, no third-party origins; WebSockets to the same host.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


def tradecraft_version() -> str:
    try:
        return version("tradecraft")
    except PackageNotFoundError:
        return "0+unknown"


def _open_store(settings: Settings) -> Store:
    uri = settings.database_uri
    if uri.startswith("sqlite:///") and ":memory:" not in uri:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return open_store(uri)


def create_app(
    settings: Settings | None = None,
    *,
    config_path: str | None = None,
    recover: bool = True,
    policy_factory: PolicyMaker | None = None,
) -> Flask:
    """Build the app. ``settings`` wins over ``config_path``; ``recover`` resumes unfinished games.

    ``policy_factory(spec, seed)`` builds the policies of bot seats; by default the installed policy
    registry (entry point group ``tradecraft.policy_registry``) does: the server imports no bot."""
    settings = settings or load_settings(config_path)
    install_practice_hall(settings)  # the guided practice game's hall (server/web/practice.py)
    logging.basicConfig(
        level=settings.server.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("server").setLevel(settings.server.log_level)
    install_log_escaping()  # client text in any log line (ours, werkzeug's, engine.io's) is escaped, bounded
    store = _open_store(settings)

    app = Flask(__name__, static_folder=None)
    app.config.update(
        SECRET_KEY=secret_key(settings, store),
        MAX_CONTENT_LENGTH=settings.server.max_payload_bytes,
        SESSION_COOKIE_NAME=settings.security.session_cookie_name,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.security.session_cookie_secure,
        JSON_SORT_KEYS=False,
    )
    origins = settings.socketio.cors_allowed_origins
    socketio = SocketIO(
        app,
        async_mode=async_mode(),
        message_queue=settings.socketio.message_queue,
        channel=settings.socketio.channel,
        cors_allowed_origins=origins if origins else None,  # None = same origin only
        ping_interval=settings.socketio.ping_interval,
        ping_timeout=settings.socketio.ping_timeout,
        max_http_buffer_size=settings.server.max_payload_bytes,
        # run each client's events in its own connection thread, in order, instead of one new thread per
        # event (no handler blocks: waits happen on timers and the REST long poll)
        async_handlers=False,
        logger=False,
        engineio_logger=False,
    )
    DeploymentCaps(settings.server).install(app, socketio)
    scheduler = DeadlineScheduler()
    bots = BotRegistry(policy_factory, settings=settings)
    bots.start_models()  # a bad bots.models entry stops the start; providers are checked in the background

    table = Table(settings, store, scheduler, bots, SocketIOTransport(socketio, settings))
    lobby = Lobby(settings, store, table, bots)
    services = Services(settings, store, table, lobby, bots, socketio, scheduler, tradecraft_version())
    app.extensions[EXTENSION_KEY] = services  # what current_services() answers in this app
    # server-side sessions (server/web/sessions.py); their socket sweep stops with the app
    services.on_close.append(sessions.install(app, settings, store, socketio).stop)
    csrf.install(app, settings)  # JSON bodies and same-origin pages only (server/web/csrf.py)
    error_log.install(store, services.on_close)  # each game's logged problems, for its admin page

    SocketProtocol(socketio).register()
    for blueprint in (api, admin, replay, item_catalog, viewer_pages, beliefs, practice):
        app.register_blueprint(blueprint)
    for blueprint in (accounts, history):  # kept names, histories, the leaderboard (docs/ratings.md)
        app.register_blueprint(blueprint)
    app.register_blueprint(admin_pages)  # the admin dashboard's pages (server/web/admin_pages.py)
    app.register_blueprint(study_exports)  # study exports and payments (docs/studies.md)
    app.register_blueprint(study_pages)  # the participant's pages (server/web/study_pages.py)
    route_socketio_paths(app)
    _register_health_check(app, services)
    _register_security_headers(app)

    _warm_up(services)
    services.studies.install_all()  # study halls first: their unfinished games are recovered next
    if recover:
        started = time.perf_counter()
        resumed = table.recover()
        log.info("resumed %d running games in %.2f s", resumed, time.perf_counter() - started)
    services.study_matcher = StudyMatcher(services)  # waiting rooms, study games (study/matching.py)
    services.on_close.append(services.study_matcher.start())
    # Rule sets and indexes live as long as the process: move them out of the cyclic collector's reach,
    # or every full collection walks them (measured: 50-95 ms pauses under load without this).
    gc.freeze()
    # Many threads, short CPU bursts, a store write lock held across several GIL releases (one per SQLite
    # call): with the default 5 ms switch interval a lock holder waits up to 5 ms per GIL handoff and the
    # other writers queue behind it (measured p99 35 ms -> 22 ms with 1 ms at 100 concurrent games).
    sys.setswitchinterval(0.001)
    log.info(
        "TradeCraft %s ready: store %s, %d halls", services.version, store.describe(), len(settings.halls)
    )
    return app


def _warm_up(services: Services) -> None:
    """Load every hall's rule set and instance list now: the first game does not pay for it, and a hall
    whose rule set or instances are missing is reported at start. The planners' one-time work (the solver's
    imports, ~0.6 s of CPU; the recipe graph's indexes) follows in the background, so the first query does
    not pay for it either and the server starts as fast as before."""
    rulesets: dict[int, RuleSet] = {}
    for name, hall in services.settings.halls.items():
        try:
            rules = load_rule_set(hall.ruleset)
            rulesets[id(rules)] = rules  # loaded once per name: one planner pair each
            if not services.lobby.instance_pool(hall):
                log.warning("hall %s has no task instances (%s/%s)", name, hall.ruleset, hall.mode_name)
        except Exception as exc:
            log.warning("hall %s cannot be played: %s", name, exc)
    services.socketio.start_background_task(_prepare_planners, list(rulesets.values()))


def _prepare_planners(rulesets: list[RuleSet]) -> None:
    try:
        for rules in rulesets:
            for whole_runs in (False, True):
                planner_for(rules, whole_runs=whole_runs).prepare()
    except Exception:  # the first query does the same work then, and says what fails
        log.warning("could not prepare the planners", exc_info=True)


def _register_security_headers(app: Flask) -> None:
    @app.after_request
    def security_headers(response: Response) -> Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def _register_health_check(app: Flask, services: Services) -> None:
    @app.get("/healthz")
    def healthz() -> tuple[Response, int]:
        try:
            services.store.get_value("healthz")
            status, code = "ok", 200
        except Exception:
            log.exception("health check: the store does not answer")
            status, code = "store_unavailable", 503
        # the store's kind only: its description names a file path or a host, which is nobody's business
        return jsonify({"status": status, "version": services.version, "store": services.store.backend}), code
