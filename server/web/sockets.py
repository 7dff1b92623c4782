"""One protocol for browsers, bots and LLM agents: Socket.IO events with acknowledgements (the REST mirror is
``server/web/rest.py``).

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

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import request, session
from flask_socketio import SocketIO, join_room, leave_room
from socketio.exceptions import ConnectionRefusedError as SocketIOConnectionRefused

from server.game.actions import PLAYER_ACTION_TYPES
from server.table.config import Settings
from server.table.errors import ServerError
from server.table.principal import Principal
from server.table.transport import LOBBY_ROOM, seat_room, spectator_room
from server.web.auth import require_principal, resolve_principal
from server.web.deployment import query_slot
from server.web.errors import as_object, error_body, forget_caller, log_refusal, principal_label
from server.web.limits import count_socket_event
from server.web.messages import cancel_game_request, create_game_request, split_action
from server.web.services import EXTENSION_KEY as SERVICES_KEY
from server.web.services import Services, current_services
from server.web.sessions import current_sessions
from server.web.transport_guards import guard_transport

log = logging.getLogger(__name__)


class SocketIOTransport:
    """The table's transport in the web server: a room is a Socket.IO room."""

    def __init__(self, socketio: SocketIO, settings: Settings) -> None:
        self.socketio = socketio
        self.settings = settings

    def push(self, event: str, payload: dict[str, Any], room: str, skip: str | None) -> None:
        self.socketio.emit(event, payload, to=room, skip_sid=skip)

    def has_listeners(self, room: str, skip: str | None) -> bool:
        # pushes nobody would get are skipped, which saves their views and their encoding (Socket.IO
        # encodes a room's packet before skipping skip_sid)
        if self.settings.socketio.message_queue:
            return True  # listeners may be connected to another process
        return any(sid != skip for sid, _ in self.socketio.server.manager.get_participants("/", room))


#: Engine.io connections whose first Socket.IO connect is remembered (a forgotten one gets one more free).
CONNECTS_REMEMBERED = 100_000


@dataclass
class Connection:
    principal: Principal | None
    seats: set[tuple[str, int]] = field(default_factory=set)
    watching: set[str] = field(default_factory=set)


class SocketProtocol:
    """Socket.IO handlers; one :class:`Connection` per client id (``request.sid``). One per app, as its
    ``SocketIO`` is; handlers reach the app's services through :func:`current_services` (Flask-SocketIO runs
    every handler, connect and disconnect included, in a request context of the app)."""

    def __init__(self, socketio: SocketIO) -> None:
        self.socketio = socketio
        self.connections: dict[str, Connection] = {}
        self._lock = threading.Lock()
        # engine.io connections that sent their first connect packet (bounded: the oldest are forgotten)
        self._connects_seen: OrderedDict[str, None] = OrderedDict()

    def register(self) -> None:
        guard_transport(self.socketio, self.admit_message)
        sio = self.socketio
        sio.on_event("connect", self.on_connect)
        sio.on_event("disconnect", self.on_disconnect)
        sio.on_event("*", self.on_unknown_event)  # counted like any event (admit_message), then refused
        handlers: dict[str, Callable[[Connection, dict[str, Any]], dict[str, Any]]] = {
            "whoami": self.whoami,
            "lobby": self.lobby,
            "create_game": self.create_game,
            "join": self.join,
            "cancel_game": self.cancel_game,
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
        for name, handler in handlers.items():
            # trace records carry whole prompts: they get the message limit, not the action limit
            sio.on_event(name, self._wrap(name, handler, message_sized=name == "trace"))

    def _wrap(
        self,
        name: str,
        handler: Callable[[Connection, dict[str, Any]], dict[str, Any]],
        message_sized: bool,
    ) -> Callable[..., dict[str, Any]]:
        def wrapped(data: Any = None, *extra: Any) -> dict[str, Any]:
            sid: str = request.sid  # type: ignore[attr-defined]
            conn = self.connections.get(sid) or Connection(None)
            try:
                services = current_services()
                # counted already, before its packet was decoded (admit_message)
                current_sessions().check_socket(sid, session)
                limits = services.settings.server
                limit = limits.max_payload_bytes if message_sized else limits.max_action_bytes
                return {"ok": True, **handler(conn, as_object(data, limit))}
            except Exception as err:
                address = request.remote_addr
                who = lambda: principal_label(conn.principal, address)  # noqa: E731
                log_refusal(f"socket event {name!r}", who, f"socket {sid}", err)
                return {"ok": False, "error": error_body(err)}

        wrapped.__name__ = f"on_{name}"
        return wrapped

    def admit_message(self, eio_sid: str, data: Any) -> dict[str, Any] | None:
        """Count one engine.io message of a connection against ``limits.socket_events_per_*`` before the
        Socket.IO parser decodes it: an event of any name (known or not, up to ``max_http_buffer_size``)
        costs its decode, so it is counted first. The first connect is not counted (nobody is known yet);
        the answer is the refusal's error body, or None."""
        server = self.socketio.server
        sid = server.manager.sid_from_eio_sid(eio_sid, "/")
        if sid is None and isinstance(data, str) and data.startswith("0") and self._first_connect(eio_sid):
            return None
        app = server.environ.get(eio_sid, {}).get("flask.app")
        services: Services | None = app.extensions.get(SERVICES_KEY) if app is not None else None
        if services is None:
            return None
        conn = self.connections.get(sid) if sid is not None else None
        user = conn.principal.id if conn is not None and conn.principal is not None else None
        try:
            count_socket_event(services.lobby.limiter, sid or eio_sid, user)
        except ServerError as err:
            address = server.environ.get(eio_sid, {}).get("REMOTE_ADDR")
            who = lambda: principal_label(conn.principal if conn else None, address)  # noqa: E731
            log_refusal("a socket event", who, f"socket {sid or eio_sid}", err)
            return error_body(err)
        return None

    def _first_connect(self, eio_sid: str) -> bool:
        """Whether this is the first Socket.IO connect packet of an engine.io connection (remembered): later
        ones (a refused connect retried, another namespace) are counted like events, or a client could send
        connect packets without end, each decoded and checked against the store."""
        with self._lock:
            if eio_sid in self._connects_seen:
                return False
            self._connects_seen[eio_sid] = None
            while len(self._connects_seen) > CONNECTS_REMEMBERED:
                self._connects_seen.popitem(last=False)
            return True

    def on_unknown_event(self, event: Any, *args: Any) -> dict[str, Any]:
        """An event of no known name: a typed refusal (it was counted before it was decoded)."""
        sid: str = request.sid  # type: ignore[attr-defined]
        conn = self.connections.get(sid) or Connection(None)
        err = ServerError(
            "unknown_event",
            "There is no Socket.IO event of that name; see docs/protocol.md for the event list.",
            {"event": event[:64] if isinstance(event, str) else None},
        )
        address = request.remote_addr
        who = lambda: principal_label(conn.principal, address)  # noqa: E731
        log_refusal(f"socket event {event!r:.80}", who, f"socket {sid}", err)
        return {"ok": False, "error": error_body(err)}

    # -- connection lifecycle
    def on_connect(self, auth: Any = None) -> bool:
        try:
            principal = resolve_principal(current_services().store, request.headers, session, auth)
        except ServerError as err:
            address = request.remote_addr
            who = lambda: principal_label(None, address)  # noqa: E731
            log_refusal("a Socket.IO connection", who, f"address {address}", err)
            # the client's connect_error handler gets {"message": ..., "data": {"code", "message", "details"}}
            raise SocketIOConnectionRefused(err.message, err.to_dict()) from None
        current_sessions().bind_socket(request.sid, principal)  # type: ignore[attr-defined]
        with self._lock:
            self.connections[request.sid] = Connection(principal)  # type: ignore[attr-defined]
        return True

    def on_disconnect(self, reason: Any = None) -> None:
        current_sessions().unbind_socket(request.sid)  # type: ignore[attr-defined]
        with self._lock:
            conn = self.connections.pop(request.sid, None)  # type: ignore[attr-defined]
        forget_caller(f"socket {request.sid}")  # type: ignore[attr-defined]
        if conn is None:
            return
        table = current_services().table
        for game_id, seat in conn.seats:
            try:
                table.presence(game_id, seat, -1)
            except Exception:
                log.exception("presence update failed for game %s", game_id)

    # -- handlers
    def whoami(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "user": conn.principal.public() if conn.principal else None,
            "version": current_services().version,
        }

    def lobby(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        join_room(LOBBY_ROOM)
        services = current_services()
        lobby = services.lobby
        answer = {
            "halls": lobby.halls(),
            "bots": services.bots.seatable(),
            "games": lobby.list_games(data.get("status"), data.get("limit", 100)),
        }
        if conn.principal is not None:
            answer["my_games"] = lobby.my_games(conn.principal)
        return answer

    def create_game(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return {"game": create_game_request(current_services(), data, conn.principal)}

    def join(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        principal = require_principal(conn.principal)
        services = current_services()
        table = services.table
        live = table.get(data.get("game_id"))
        seat = services.lobby.join(
            live.game_id,
            principal,
            data.get("seat"),
            lambda claimed: join_room(seat_room(live.game_id, claimed)),
        )
        key = (live.game_id, seat)
        join_room(seat_room(live.game_id, seat))
        if key not in conn.seats:
            conn.seats.add(key)
            table.presence(live.game_id, seat, +1)
        with live.lock:
            table.catch_up(live)
            return {**table.envelope(live, seat), "events": table.history(live, seat)}

    def cancel_game(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return {"game": cancel_game_request(current_services(), data.get("game_id"), conn.principal)}

    def watch(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        table = current_services().table
        live = table.get(data.get("game_id"))
        join_room(spectator_room(live.game_id))
        conn.watching.add(live.game_id)
        with live.lock:
            table.catch_up(live)
            return {**table.envelope(live, None), "events": table.history(live, None)}

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
            current_services().table.presence(key[0], key[1], -1)
        return {"game_id": game_id}

    def view(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return current_services().table.view(data.get("game_id"), conn.principal, data.get("seat"))

    def events(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        after = data.get("after", -1)
        if not isinstance(after, int) or isinstance(after, bool) or after < -1:
            raise ServerError("invalid_request", "after must be an event number n, or -1 for the whole log.")
        return current_services().table.events_since(
            data.get("game_id"), conn.principal, after, data.get("seat")
        )

    def query(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        if "query" not in data:
            raise ServerError("invalid_request", 'Send {"game_id": ..., "query": {"type": ...}}.')
        with query_slot(request.sid, conn.principal):  # type: ignore[attr-defined]
            return current_services().table.query(
                data.get("game_id"), conn.principal, data["query"], data.get("seat")
            )

    def trace(self, conn: Connection, data: dict[str, Any]) -> dict[str, Any]:
        return current_services().table.record_traces(
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
        response = current_services().table.act(
            envelope["game_id"],
            principal,
            action,
            envelope["seat"],
            envelope["client_action_id"],
            origin=request.sid,  # type: ignore[attr-defined]
        )
        return {k: v for k, v in response.items() if k != "ok"}
