"""One protocol for browsers, bots and LLM agents: Socket.IO events with acknowledgements, and a REST mirror.

Both transports are generated from the same table: every player action type in
``server.game.actions.ACTION_MODELS`` becomes a Socket.IO event of that name and a REST route
``POST /api/games/<game_id>/actions/<type>``; ``GET /api/actions`` serves their JSON schemas. Nothing here
re-declares an action's fields.

Every request gets exactly one typed answer: ``{"ok": true, ...}`` or ``{"ok": false, "error": {"code",
"message", "details"}}``. Bad input (malformed JSON, a non-object, an unknown action type, a payload over
``server.max_action_bytes``, another seat's action, a spectator acting) never changes state, never reaches the
engine unchecked, is logged with its error code, and never takes the worker down.

See docs/protocol.md for the event list, the message shapes and runnable examples.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from engineio.async_drivers._websocket_wsgi import SimpleWebSocketWSGI
from engineio.packet import Packet as EngineIOPacket
from flask import Blueprint, Response, jsonify, request, session
from flask_socketio import SocketIO, join_room, leave_room
from socketio.exceptions import ConnectionRefusedError as SocketIOConnectionRefused
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from server.auth import (
    NUMBER_TEXT_MAX_CHARS,
    SERVER_ERROR_CODES,
    Principal,
    ServerError,
    clean_display_name,
    parse_count,
    require_principal,
    resolve_principal,
)
from server.game.actions import ACTION_MODELS, PLAYER_ACTION_TYPES, action_json_schema
from server.game.errors import ERROR_CODES, GameError
from server.game.queries import QUERY_MODELS
from server.game.schemas import strict_args_schema
from server.limits import retry_after_of
from server.rooms import LOBBY_ROOM, seat_room, spectator_room
from server.schemas import schema_catalogue
from server.store import StoreError

if TYPE_CHECKING:
    from server.app import Services

log = logging.getLogger(__name__)

#: Envelope fields a client sends next to an action's own fields.
ENVELOPE_FIELDS = ("game_id", "seat", "client_action_id")
for _model in ACTION_MODELS.values():
    assert not set(_model.model_fields) & set(ENVELOPE_FIELDS), f"{_model.__name__} shadows an envelope field"


# ------------------------------------------------------------------------------------------ errors
#: Engine error codes that mean the request itself is malformed (HTTP 400); the others conflict with the
#: game's state (409).
BAD_INPUT_CODES = frozenset({"invalid_action", "invalid_query"})


def error_body(err: BaseException) -> dict[str, Any]:
    if isinstance(err, GameError | ServerError):
        return err.to_dict()
    if isinstance(err, StoreError):
        log.error("store error: %s", err.message)
        return ServerError(
            "internal_error", "The game store failed; try again shortly.", {"store": err.code}
        ).to_dict()
    # no claim that nothing changed: a failure after a stored change is answered answer_failed by Rooms,
    # but only the caller's view can tell what this request did
    return ServerError(
        "internal_error", "The server failed and logged the error; read the game's view before retrying."
    ).to_dict()


def http_status(err: BaseException) -> int:
    if isinstance(err, ServerError):
        return err.status
    if isinstance(err, GameError):
        return 400 if err.code in BAD_INPUT_CODES else 409
    return 500


def _log_refusal(where: str, principal: Principal | None, err: BaseException) -> None:
    who = principal.id if principal else "anonymous"
    if isinstance(err, GameError | ServerError):
        log.info("refused %s from %s: %s", where, who, err.code)
    else:
        log.exception("failed %s from %s", where, who)


def _as_object(data: Any, limit: int) -> dict[str, Any]:
    """The request payload as a dict: a JSON object, or a string holding one, within the size limit."""
    if isinstance(data, str | bytes):
        if len(data) > limit:
            raise _too_large(len(data), limit)
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ServerError(
                "invalid_request",
                f"The message is not valid JSON ({exc.msg} at position {exc.pos}).",
            ) from None
        except (ValueError, RecursionError):
            # undecodable bytes, a number beyond Python's int digit limit, nesting deeper than the parser goes
            raise ServerError(
                "invalid_request",
                "The message is not readable JSON: send UTF-8 text, numbers of at most a few digits and "
                "objects nested a few levels deep.",
            ) from None
    if data is None:
        return {}
    # one pass over the object: its size, and text that is not Unicode (a lone surrogate such as "\ud800",
    # which JSON can spell but no store, log or UTF-8 answer can hold)
    try:
        size = len(json.dumps(data, ensure_ascii=False).encode("utf-8"))
    except UnicodeEncodeError:
        raise ServerError(
            "invalid_request", "The message holds text that is not Unicode (a lone surrogate); send UTF-8."
        ) from None
    except (TypeError, ValueError, RecursionError):
        raise ServerError("invalid_request", "The message is not JSON.") from None
    if size > limit:
        raise _too_large(size, limit)
    if not isinstance(data, dict):
        raise ServerError("invalid_request", f"Send a JSON object, not a {type(data).__name__}.")
    return data


def _too_large(size: int, limit: int) -> ServerError:
    return ServerError(
        "payload_too_large",
        f"The message has {size} bytes; the server accepts at most {limit}. Send a shorter one.",
        {"size": size, "limit": limit},
        status=413,
    )


def _flag(data: dict[str, Any], name: str) -> bool:
    """A true/false field (absent or null: false). Text such as "false" is refused rather than read as
    true, as ``bool("false")`` would."""
    value = data.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ServerError("invalid_request", f"{name} must be true or false (JSON booleans).", {name: value})
    return value


def request_object(limit: int) -> dict[str, Any]:
    """The body of the current HTTP request as a JSON object (empty body: ``{}``), read under ``limit``
    bytes; anything the JSON parser refuses (bad UTF-8, deep nesting, huge numbers) is ``invalid_request``."""
    if request.content_length and request.content_length > limit:
        raise _too_large(request.content_length, limit)
    raw = request.get_data(cache=True)
    if not raw:
        return {}
    return _as_object(raw, limit)


def rest_error(err: BaseException, max_payload_bytes: int) -> tuple[Response, int]:
    """The typed JSON answer of a failed REST request (``Retry-After`` on ``rate_limited``); HTTP errors
    of the routing layer (404, 405, ...) become ``invalid_request``; only unexpected failures log a trace."""
    if isinstance(err, HTTPException) and not isinstance(err, RequestEntityTooLarge):
        typed = ServerError("invalid_request", err.description or err.name, status=err.code or 400)
        return jsonify({"ok": False, "error": typed.to_dict()}), typed.status
    if isinstance(err, RequestEntityTooLarge):
        err = _too_large(request.content_length or 0, max_payload_bytes)
    _log_refusal(f"{request.method} {request.path}", None, err)
    response = jsonify({"ok": False, "error": error_body(err)})
    retry_after = retry_after_of(err)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response, http_status(err)


def split_action(data: dict[str, Any], action_type: str | None) -> tuple[dict[str, Any], Any]:
    """(envelope fields, action) from a request: ``{"action": {...}}`` or a per-type event's flat fields."""
    envelope = {key: data.get(key) for key in ENVELOPE_FIELDS}
    if action_type is None:
        if "action" not in data:
            raise ServerError("invalid_request", 'Send {"game_id": ..., "action": {"type": ...}}.')
        return envelope, data["action"]
    action = {k: v for k, v in data.items() if k not in ENVELOPE_FIELDS}
    action["type"] = action_type
    return envelope, action


# ---------------------------------------------------------------------------------------- Socket.IO
#: Connections whose malformed-frame count is remembered (the oldest are forgotten first).
MALFORMED_CONNECTIONS_KEPT = 10_000


def _client_faults_as_info(record: logging.LogRecord) -> bool:
    """engine.io reports what clients do wrong (a poll after a clean disconnect, an unknown session id, a bad
    transport) as ERROR, once per kind per process: they are the client's fault, so they are INFO here; a
    long-polling POST it cannot read is one warning line instead of a traceback."""
    if record.funcName == "_log_error_once" and record.levelno == logging.ERROR:
        record.levelno, record.levelname = logging.INFO, "INFO"
    elif record.msg == "post request handler error":
        record.msg = "dropped an unreadable Socket.IO long-polling payload (%s)"
        record.args = (record.exc_info[1].__class__.__name__ if record.exc_info else "?",)
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


class _ReadableFramesOnly(SimpleWebSocketWSGI):
    """engine.io's WebSocket transport, except that a frame engine.io cannot decode (empty, no packet type,
    JSON nested too deep, bad base64) is dropped instead of ending the request with a traceback. The first
    one of each connection is logged as one warning line."""

    peer = "?"
    dropped = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        self.peer = str(environ.get("REMOTE_ADDR", "?"))
        return super().__call__(environ, start_response)

    def wait(self) -> Any:
        while True:
            data = super().wait()
            if data is None:
                return None
            try:
                EngineIOPacket(encoded_packet=data)
            except Exception as exc:
                self.dropped += 1
                if self.dropped == 1:
                    log.warning(
                        "dropped an unreadable engine.io frame from %s (%s); further ones from this "
                        "connection are dropped without a log line",
                        self.peer,
                        type(exc).__name__,
                    )
                continue
            return data


@dataclass
class Connection:
    principal: Principal | None
    seats: set[tuple[str, int]] = field(default_factory=set)
    watching: set[str] = field(default_factory=set)


class SocketProtocol:
    """Socket.IO handlers; one :class:`Connection` per client id (``request.sid``)."""

    def __init__(self, services: Services, socketio: SocketIO) -> None:
        self.services = services
        self.socketio = socketio
        self.connections: dict[str, Connection] = {}
        self._lock = threading.Lock()
        # engine.io connection id -> malformed frames dropped (insertion-ordered, bounded)
        self._malformed: dict[str, int] = {}

    def register(self) -> None:
        self._guard_frames()
        logging.getLogger("engineio.server").addFilter(_client_faults_as_info)
        sio = self.socketio
        sio.on_event("connect", self.on_connect)
        sio.on_event("disconnect", self.on_disconnect)
        handlers: dict[str, Callable[[Connection, dict[str, Any]], dict[str, Any]]] = {
            "whoami": self.whoami,
            "lobby": self.lobby,
            "create_game": self.create_game,
            "join": self.join,
            "watch": self.watch,
            "leave": self.leave,
            "view": self.view,
            "events": self.events,
            "act": lambda conn, data: self.act(conn, data, None),
            "query": self.query,
            "trace": self.trace,
        }
        for action_type in PLAYER_ACTION_TYPES:
            handlers[action_type] = lambda conn, data, _t=action_type: self.act(conn, data, _t)
        payload_limit = self.services.settings.server.max_payload_bytes
        for name, handler in handlers.items():
            # trace records carry whole prompts: they get the message limit, not the action limit
            limit = payload_limit if name == "trace" else None
            sio.on_event(name, self._wrap(name, handler, limit))

    def _guard_frames(self) -> None:
        eio = self.socketio.server.eio
        # threading mode (dev server, gunicorn gthread): the one transport this server runs
        if eio._async.get("websocket") is SimpleWebSocketWSGI:
            eio._async = {**eio._async, "websocket": _ReadableFramesOnly}
        self._guard_socketio_packets()

    def _guard_socketio_packets(self) -> None:
        """Frames the Socket.IO parser cannot read (bad JSON, deep nesting, huge numbers, stray acks) are
        dropped; each connection's first one is logged as one warning line, the rest silently (the library
        logged a traceback per frame). Handler errors never get here: ``_wrap`` answers them."""
        server = self.socketio.server
        handle = server._handle_eio_message

        def guarded(eio_sid: str, data: Any) -> None:
            try:
                handle(eio_sid, data)
            except Exception as exc:
                self._note_malformed(eio_sid, exc)

        server.eio.on("message", guarded)

    def _note_malformed(self, eio_sid: str, exc: Exception) -> None:
        with self._lock:
            first = eio_sid not in self._malformed
            self._malformed[eio_sid] = self._malformed.pop(eio_sid, 0) + 1
            while len(self._malformed) > MALFORMED_CONNECTIONS_KEPT:
                self._malformed.pop(next(iter(self._malformed)))
        if first:
            log.warning(
                "dropped a malformed Socket.IO frame from connection %s (%s); further ones from it are "
                "dropped without a log line",
                eio_sid,
                type(exc).__name__,
            )

    def _wrap(
        self,
        name: str,
        handler: Callable[[Connection, dict[str, Any]], dict[str, Any]],
        limit: int | None = None,
    ) -> Callable[..., dict[str, Any]]:
        limit = limit or self.services.settings.server.max_action_bytes

        def wrapped(data: Any = None, *extra: Any) -> dict[str, Any]:
            conn = self.connections.get(request.sid) or Connection(None)  # type: ignore[attr-defined]
            try:
                return {"ok": True, **handler(conn, _as_object(data, limit))}
            except Exception as err:
                _log_refusal(f"socket event {name!r}", conn.principal, err)
                return {"ok": False, "error": error_body(err)}

        wrapped.__name__ = f"on_{name}"
        return wrapped

    # -- connection lifecycle
    def on_connect(self, auth: Any = None) -> bool:
        try:
            principal = resolve_principal(self.services.store, request.headers, session, auth)
        except ServerError as err:
            log.info("refused a Socket.IO connection: %s", err.code)
            # the client's connect_error handler gets {"message": ..., "data": {"code", "message", "details"}}
            raise SocketIOConnectionRefused(err.message, err.to_dict()) from None
        with self._lock:
            self.connections[request.sid] = Connection(principal)  # type: ignore[attr-defined]
        return True

    def on_disconnect(self, reason: Any = None) -> None:
        with self._lock:
            conn = self.connections.pop(request.sid, None)  # type: ignore[attr-defined]
        if conn is None:
            return
        for game_id, seat in conn.seats:
            try:
                self.services.rooms.presence(game_id, seat, -1)
            except Exception:
                log.exception("presence update failed for game %s", game_id)

    # -- handlers
    def whoami(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return {"user": conn.principal.public() if conn.principal else None, "version": self.services.version}

    def lobby(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        join_room(LOBBY_ROOM)
        lobby = self.services.lobby
        answer = {
            "halls": lobby.halls(),
            "bots": self.services.bots.seatable(),
            "games": lobby.list_games(data.get("status"), data.get("limit", 100)),
        }
        if conn.principal is not None:
            answer["my_games"] = lobby.my_games(conn.principal)
        return answer

    def create_game(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return {"game": create_game_request(self.services, data, conn.principal)}

    def join(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        principal = require_principal(conn.principal)
        rooms = self.services.rooms
        live = rooms.get(data.get("game_id"))
        seat = self.services.lobby.join(
            live.game_id,
            principal,
            data.get("seat"),
            lambda claimed: join_room(seat_room(live.game_id, claimed)),
        )
        key = (live.game_id, seat)
        join_room(seat_room(live.game_id, seat))
        if key not in conn.seats:
            conn.seats.add(key)
            rooms.presence(live.game_id, seat, +1)
        with live.lock:
            rooms.catch_up(live)
            return {**rooms.envelope(live, seat), "events": rooms.history(live, seat)}

    def watch(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        rooms = self.services.rooms
        live = rooms.get(data.get("game_id"))
        join_room(spectator_room(live.game_id))
        conn.watching.add(live.game_id)
        with live.lock:
            rooms.catch_up(live)
            return {**rooms.envelope(live, None), "events": rooms.history(live, None)}

    def leave(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        game_id = data.get("game_id")
        if not isinstance(game_id, str):
            raise ServerError("invalid_request", 'Send {"game_id": "..."} naming the game to leave.')
        if game_id in conn.watching:
            leave_room(spectator_room(game_id))
            conn.watching.discard(game_id)
        for key in [k for k in conn.seats if k[0] == game_id]:
            leave_room(seat_room(*key))
            conn.seats.discard(key)
            self.services.rooms.presence(key[0], key[1], -1)
        return {"game_id": game_id}

    def view(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return self.services.rooms.view(data.get("game_id"), conn.principal, data.get("seat"))

    def events(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        after = data.get("after", -1)
        if not isinstance(after, int) or isinstance(after, bool) or after < -1:
            raise ServerError("invalid_request", "after must be an event number n, or -1 for the whole log.")
        return self.services.rooms.events_since(data.get("game_id"), conn.principal, after, data.get("seat"))

    def query(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        if "query" not in data:
            raise ServerError("invalid_request", 'Send {"game_id": ..., "query": {"type": ...}}.')
        return self.services.rooms.query(data.get("game_id"), conn.principal, data["query"], data.get("seat"))

    def trace(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return self.services.rooms.record_traces(
            data.get("game_id"),
            require_principal(conn.principal),
            data.get("traces"),
            data.get("seat"),
            data.get("event_n"),
            data.get("batch_id"),
        )

    def act(self, conn: Connection, data: dict[str, Any], action_type: str | None) -> dict[str, Any]:
        principal = require_principal(conn.principal)
        envelope, action = split_action(data, action_type)
        response = self.services.rooms.act(
            envelope["game_id"],
            principal,
            action,
            envelope["seat"],
            envelope["client_action_id"],
            origin=request.sid,  # type: ignore[attr-defined]
        )
        return {k: v for k, v in response.items() if k != "ok"}


def create_game_request(
    services: Services, data: dict[str, Any], principal: Principal | None
) -> dict[str, Any]:
    """A ``create_game`` request, read alike from Socket.IO and REST (fields in docs/protocol.md §3)."""
    return services.lobby.create_game(
        data.get("hall"),
        with_admin_session(require_principal(principal), session),
        data.get("seats"),
        data.get("instance_id"),
        data.get("seed"),
        _flag(data, "join"),
        address=request.remote_addr or "unknown",
        difficulty=data.get("difficulty"),
    )


def with_admin_session(principal: Principal, browser_session: Any) -> Principal:
    """``principal`` with the admin scope when its browser session logged in to the admin area (a person
    who is also the operator may then create games with an exact instance)."""
    if browser_session.get("admin") is True and not principal.is_admin:
        return replace(principal, scopes=principal.scopes | {"admin"})
    return principal


# --------------------------------------------------------------------------------------------- REST
def api_blueprint(services: Services) -> Blueprint:
    """The REST mirror under ``/api``: lobby, games, joining, views, events, actions, schemas."""
    api = Blueprint("api", __name__, url_prefix="/api")
    limit = services.settings.server.max_action_bytes

    def ok(payload: dict[str, Any], status: int = 200) -> tuple[Response, int]:
        return jsonify({"ok": True, **payload}), status

    def body() -> dict[str, Any]:
        return request_object(limit)

    def caller() -> Principal | None:
        return resolve_principal(services.store, request.headers, session)

    @api.errorhandler(Exception)
    def _error(err: Exception) -> tuple[Response, int]:
        return rest_error(err, services.settings.server.max_payload_bytes)

    @api.post("/login")
    def login() -> tuple[Response, int]:
        name = clean_display_name(body().get("name"))
        services.lobby.limiter.hit("logins_per_address", request.remote_addr or "unknown")
        user = services.store.create_user(name)
        session.clear()
        session.permanent = True
        session["user_id"] = user["id"]
        return ok({"user": {"id": user["id"], "name": user["name"], "kind": "human"}})

    @api.post("/logout")
    def logout() -> tuple[Response, int]:
        session.clear()
        return ok({})

    @api.get("/me")
    def me() -> tuple[Response, int]:
        principal = caller()
        return ok({"user": principal.public() if principal else None})

    @api.get("/halls")
    def halls() -> tuple[Response, int]:
        return ok({"halls": services.lobby.halls()})

    @api.get("/games")
    def list_games() -> tuple[Response, int]:
        games = services.lobby.list_games(request.args.get("status"), request.args.get("limit", 100))
        return ok({"games": games})

    @api.post("/games")
    def create_game() -> tuple[Response, int]:
        return ok({"game": create_game_request(services, body(), caller())}, 201)

    @api.get("/bots")
    def bots() -> tuple[Response, int]:
        return ok({"bots": services.bots.seatable()})

    @api.get("/me/games")
    def my_games() -> tuple[Response, int]:
        limit = max(1, min(parse_count(request.args.get("limit", 50), "limit"), 200))
        return ok({"games": services.lobby.my_games(require_principal(caller()), limit)})

    @api.get("/games/<game_id>")
    def game_summary(game_id: str) -> tuple[Response, int]:
        return ok({"game": services.lobby.summary(game_id)})

    @api.post("/games/<game_id>/join")
    def join(game_id: str) -> tuple[Response, int]:
        seat = services.lobby.join(game_id, require_principal(caller()), body().get("seat"))
        live = services.rooms.get(game_id)
        with live.lock:
            services.rooms.catch_up(live)
            return ok({**services.rooms.envelope(live, seat), "events": services.rooms.history(live, seat)})

    @api.get("/games/<game_id>/view")
    def view(game_id: str) -> tuple[Response, int]:
        return ok(services.rooms.view(game_id, caller(), _int_arg("seat")))

    @api.get("/games/<game_id>/events")
    def events(game_id: str) -> tuple[Response, int]:
        after = _int_arg("after")
        wait = request.args.get("wait", "0")
        try:
            wait_seconds = float(wait) if len(wait) <= NUMBER_TEXT_MAX_CHARS else math.nan
        except ValueError:
            wait_seconds = math.nan
        if not math.isfinite(wait_seconds):
            raise ServerError("invalid_request", "wait must be a number of seconds, like 10.") from None
        result = services.rooms.events_since(
            game_id, caller(), -1 if after is None else after, _int_arg("seat"), wait_seconds
        )
        return ok(result)

    def act(game_id: str, action_type: str | None) -> tuple[Response, int]:
        data = body()
        envelope, action = split_action(data, action_type)
        client_action_id = envelope["client_action_id"] or request.headers.get("Idempotency-Key")
        response = services.rooms.act(
            game_id, require_principal(caller()), action, envelope["seat"], client_action_id
        )
        return jsonify(response), 200

    api.add_url_rule("/games/<game_id>/actions", "act", lambda game_id: act(game_id, None), methods=["POST"])
    for action_type in PLAYER_ACTION_TYPES:
        api.add_url_rule(
            f"/games/<game_id>/actions/{action_type}",
            f"act_{action_type}",
            lambda game_id, _t=action_type: act(game_id, _t),
            methods=["POST"],
        )

    @api.post("/games/<game_id>/traces")
    def traces(game_id: str) -> tuple[Response, int]:
        data = request_object(services.settings.server.max_payload_bytes)
        principal = require_principal(caller())
        return ok(
            services.rooms.record_traces(
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
        return ok(services.rooms.query(game_id, caller(), data, _int_arg("seat")))

    api.add_url_rule(
        "/games/<game_id>/query", "query", lambda game_id: query(game_id, None), methods=["POST"]
    )
    for query_type in QUERY_MODELS:
        api.add_url_rule(
            f"/games/<game_id>/query/{query_type}",
            f"query_{query_type}",
            lambda game_id, _t=query_type: query(game_id, _t),
            methods=["POST"],
        )

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

    return api


def _int_arg(name: str) -> int | None:
    """An integer query argument; its text is bounded before conversion (see parse_count)."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return None
    return parse_count(raw, name)
