"""What the production deployment needs of the app (docs/deployment.md): the event loop it runs on, and caps
per network address and per user on what a client may hold open for long (Socket.IO connections, REST long
polls), each refused with a typed error once full.

An address is the TCP peer's (``REMOTE_ADDR``): behind a proxy every client has the proxy's address, so raise
the per-address caps there. No forwarded header (``X-Forwarded-For``) is trusted: anyone can send one.
"""

from __future__ import annotations

import io
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, Literal
from urllib.parse import parse_qs

from flask import Flask, current_app, request
from flask_socketio import SocketIO

from server.table.config import ServerSection
from server.table.errors import ServerError
from server.table.principal import Principal

#: Where the caps live in ``app.extensions``.
EXTENSION_KEY = "tradecraft.deployment"
#: The WSGI environ key of a Socket.IO handshake's reserved slot: ``{"held": bool}``.
SOCKET_SLOT_KEY = "tradecraft.socket_slot"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def async_mode() -> Literal["gevent", "threading"]:
    """``gevent`` when this process runs on gevent's event loop (gunicorn's gevent worker patched the
    standard library before loading the app), else ``threading`` (run_server.py, tests)."""
    if "gevent.monkey" in sys.modules:
        from gevent import monkey

        if monkey.is_module_patched("socket"):
            return "gevent"
    return "threading"


class OpenSlots:
    """Counted slots per key, taken and given back atomically: one more than ``limit`` is never granted,
    however many requests race for the last one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}

    def take(self, key: str, limit: int) -> bool:
        with self._lock:
            held = self._held.get(key, 0)
            if held >= limit:
                return False
            self._held[key] = held + 1
            return True

    def give_back(self, key: str) -> None:
        with self._lock:
            held = self._held.get(key, 0) - 1
            if held > 0:
                self._held[key] = held
            else:
                self._held.pop(key, None)  # forgotten at zero: memory follows what is open, not who came

    def held(self, key: str) -> int:
        with self._lock:
            return self._held.get(key, 0)


def refusal_body(err: ServerError) -> bytes:
    """The REST error shape (docs/protocol.md §Errors), for answers given before Flask sees the request."""
    error = {"code": err.code, "message": err.message, "details": dict(err.details)}
    return json.dumps({"ok": False, "error": error}).encode()


class SocketCaps:
    """At most ``server.max_sockets_per_address`` Socket.IO connections open per address.

    A handshake (a ``/socket.io/`` request without ``sid``) reserves a slot before engine.io sees it; the
    slot passes to the engine.io session when engine.io accepts it (its ``connect`` event, same environ) and
    is given back when that session ends (``disconnect``: closed, timed out or refused), or at the end of the
    request when no session was made. WebSocket and long-polling sessions count alike."""

    def __init__(self, settings: ServerSection, socketio_path: str = "socket.io") -> None:
        self.limit = settings.max_sockets_per_address
        self.prefix = "/" + socketio_path.strip("/") + "/"
        self.slots = OpenSlots()
        self._lock = threading.Lock()
        self._session_address: dict[str, str] = {}  # engine.io session id -> address holding its slot

    def wrap(self, app: WSGIApp) -> WSGIApp:
        def capped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if not self._is_handshake(environ):
                return app(environ, start_response)
            address = str(environ.get("REMOTE_ADDR") or "unknown")
            if not self.slots.take(address, self.limit):
                err = ServerError(
                    "too_many_connections",
                    "This network address holds as many open Socket.IO connections as the server allows; "
                    "close one first.",
                    {"limit": self.limit},
                    status=429,
                )
                payload = refusal_body(err)
                headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
                start_response("429 Too Many Requests", headers)
                return [payload]
            slot = {"held": True}
            environ[SOCKET_SLOT_KEY] = slot
            try:
                return app(environ, start_response)
            finally:  # a polling handshake returns at once, a WebSocket when it closes
                if slot["held"]:
                    slot["held"] = False
                    self.slots.give_back(address)

        return capped

    def hook(self, socketio: SocketIO) -> None:
        """Hand each handshake's slot to its engine.io session, and take it back when the session ends."""
        eio = socketio.server.eio
        on_connect = eio.handlers["connect"]
        on_disconnect = eio.handlers["disconnect"]

        def connect(eio_sid: str, environ: dict[str, Any], *args: Any) -> Any:
            slot = environ.get(SOCKET_SLOT_KEY)
            if slot is not None and slot["held"]:
                slot["held"] = False
                with self._lock:
                    self._session_address[eio_sid] = str(environ.get("REMOTE_ADDR") or "unknown")
            return on_connect(eio_sid, environ, *args)

        def disconnect(eio_sid: str, *args: Any) -> Any:
            with self._lock:
                address = self._session_address.pop(eio_sid, None)
            if address is not None:
                self.slots.give_back(address)
            return on_disconnect(eio_sid, *args)

        eio.on("connect", connect)
        eio.on("disconnect", disconnect)

    def _is_handshake(self, environ: dict[str, Any]) -> bool:
        if not str(environ.get("PATH_INFO", "")).startswith(self.prefix):
            return False
        return "sid" not in parse_qs(str(environ.get("QUERY_STRING", "")))


class LongPollCaps:
    """At most ``server.max_waits_per_address`` and ``max_waits_per_user`` REST long polls open at once."""

    def __init__(self, settings: ServerSection) -> None:
        self.per_address = settings.max_waits_per_address
        self.per_user = settings.max_waits_per_user
        self.addresses = OpenSlots()
        self.users = OpenSlots()

    @contextmanager
    def slot(self, address: str, principal: Principal | None) -> Iterator[None]:
        if not self.addresses.take(address, self.per_address):
            raise self._refusal("network address", self.per_address)
        try:
            if principal is not None and not self.users.take(principal.id, self.per_user):
                raise self._refusal("user", self.per_user)
            try:
                yield
            finally:
                if principal is not None:
                    self.users.give_back(principal.id)
        finally:
            self.addresses.give_back(address)

    @staticmethod
    def _refusal(scope: str, limit: int) -> ServerError:
        return ServerError(
            "too_many_waits",
            f"This {scope} holds as many open long polls as the server allows: poll without wait, or wait "
            "for one to answer.",
            {"scope": scope.split()[-1], "limit": limit},
            status=429,
        )


class QueryCaps:
    """At most one query in flight per connection, ``server.max_queries_per_user`` per user and
    ``max_queries_per_address`` per address: a client cannot queue the query threads full."""

    PER_CONNECTION = 1

    def __init__(self, settings: ServerSection) -> None:
        self.per_user = settings.max_queries_per_user
        self.per_address = settings.max_queries_per_address
        self.connections = OpenSlots()
        self.users = OpenSlots()
        self.addresses = OpenSlots()

    @contextmanager
    def slot(self, connection: str | None, principal: Principal | None, address: str) -> Iterator[None]:
        taken: list[tuple[OpenSlots, str]] = []
        wanted = [
            (self.connections, connection, self.PER_CONNECTION, "connection"),
            (self.users, principal.id if principal else None, self.per_user, "user"),
            (self.addresses, address, self.per_address, "address"),
        ]
        try:
            for slots, key, limit, scope in wanted:
                if key is None:
                    continue
                if not slots.take(key, limit):
                    raise ServerError(
                        "too_many_queries",
                        f"This {scope} has {limit} queries in flight, as many as the server allows: wait for "
                        "an answer before asking again.",
                        {"scope": scope, "limit": limit},
                        status=429,
                    )
                taken.append((slots, key))
            yield
        finally:
            for slots, key in taken:
                slots.give_back(key)


class BodyDeadline:
    """Under gevent: a request's body (at most ``server.max_payload_bytes``) is read whole within
    ``server.body_timeout_seconds`` before the app sees it, or the client is answered ``request_timeout``
    and its connection closed. gunicorn times out the request line and headers (``keepalive``), not the
    body: a client dribbling a body a byte at a time held its connection for ever. Threading mode (the
    development server) is not wrapped."""

    def __init__(self, settings: ServerSection) -> None:
        self.seconds = settings.body_timeout_seconds
        self.max_bytes = settings.max_payload_bytes

    def wrap(self, app: WSGIApp) -> WSGIApp:
        import gevent  # only installed under gevent

        def deadline(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            length = str(environ.get("CONTENT_LENGTH") or "")
            chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
            if not chunked and (not length.isdigit() or int(length) == 0 or int(length) > self.max_bytes):
                return app(environ, start_response)  # no body, or one the app refuses unread (413)
            stream = environ["wsgi.input"]
            wanted = self.max_bytes + 1 if chunked else int(length)
            parts: list[bytes] = []
            got = 0
            try:
                with gevent.Timeout(self.seconds):
                    while got < wanted:
                        part = stream.read(min(65536, wanted - got))
                        if not part:
                            break
                        parts.append(part)
                        got += len(part)
            except gevent.Timeout:
                return self._timed_out(environ, start_response)
            environ["wsgi.input"] = io.BytesIO(b"".join(parts))
            if chunked:
                environ["CONTENT_LENGTH"] = str(got)  # over max_payload_bytes: the app refuses it (413)
            return app(environ, start_response)

        return deadline

    def _timed_out(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        err = ServerError(
            "request_timeout",
            f"The request's body did not arrive within {self.seconds:g} s; the connection is closed.",
            {"seconds": self.seconds},
            status=408,
        )
        payload = refusal_body(err)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
        start_response("408 Request Timeout", headers)
        return _ThenClose([payload], environ.get("gunicorn.socket"))


class _ThenClose(list[bytes]):
    """A response body that shuts its connection once the server has sent it (WSGI calls ``close()``
    after the body): the rest of the slow body is never waited for."""

    def __init__(self, chunks: list[bytes], sock: Any) -> None:
        super().__init__(chunks)
        self._sock = sock

    def close(self) -> None:
        if self._sock is not None:
            with suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)


class DeploymentCaps:
    """The caps of one app (``app.extensions[EXTENSION_KEY]``)."""

    def __init__(self, settings: ServerSection) -> None:
        self.sockets = SocketCaps(settings)
        self.long_polls = LongPollCaps(settings)
        self.queries = QueryCaps(settings)
        self.body_deadline = BodyDeadline(settings)

    def install(self, app: Flask, socketio: SocketIO) -> None:
        """Call after ``SocketIO(app)`` so the cap runs before the Socket.IO middleware."""
        app.wsgi_app = self.sockets.wrap(app.wsgi_app)  # type: ignore[method-assign]
        if async_mode() == "gevent":  # outermost: engine.io's long-polling POSTs are bodies too
            app.wsgi_app = self.body_deadline.wrap(app.wsgi_app)  # type: ignore[method-assign]
        self.sockets.hook(socketio)
        app.extensions[EXTENSION_KEY] = self


@contextmanager
def query_slot(connection: str | None, principal: Principal | None) -> Iterator[None]:
    """Around a query of the current request (``connection``: a Socket.IO client id, None over REST)."""
    caps: DeploymentCaps = current_app.extensions[EXTENSION_KEY]
    with caps.queries.slot(connection, principal, request.remote_addr or "unknown"):
        yield


@contextmanager
def long_poll_slot(principal: Principal | None, wait_seconds: float) -> Iterator[None]:
    """Around a REST long poll of the current request: a slot of its address and user when it waits."""
    if wait_seconds <= 0:
        yield
        return
    caps: DeploymentCaps = current_app.extensions[EXTENSION_KEY]
    with caps.long_polls.slot(request.remote_addr or "unknown", principal):
        yield
