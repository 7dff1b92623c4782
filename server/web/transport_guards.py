"""Guards around the Socket.IO and engine.io transports: what a client does wrong is dropped and logged in
one line, never a traceback per frame, and never takes a connection's worker down. Each guard says why.

They patch library internals (``eio._async``, ``server._handle_eio_message``) of python-engineio and
python-socketio as pinned in pyproject.toml; ``tests/test_hardening_limits.py`` and
``tests/test_hardening_fuzz.py`` send the malformed frames that show each one still holds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from engineio.async_drivers._websocket_wsgi import SimpleWebSocketWSGI
from engineio.packet import Packet as EngineIOPacket
from flask import Flask, Response, jsonify
from flask_socketio import SocketIO
from socketio import packet as SocketIOPacket

log = logging.getLogger(__name__)

#: Connections whose malformed-frame count is remembered (the oldest are forgotten first).
MALFORMED_CONNECTIONS_KEPT = 10_000


def client_faults_as_info(record: logging.LogRecord) -> bool:
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


class ReadableFramesOnly(SimpleWebSocketWSGI):
    """engine.io's WebSocket transport, except that a frame engine.io cannot decode (empty, no packet type,
    JSON nested too deep, bad base64) is dropped instead of ending the request with a traceback. The first
    one of each connection is logged as one warning line. Mixed in before the async mode's own
    simple-websocket class (``readable_frames_only``): threading's, or gevent's subclass of it."""

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


def readable_frames_only(websocket_class: type[SimpleWebSocketWSGI]) -> type[SimpleWebSocketWSGI]:
    """``websocket_class`` (the engine.io async mode's simple-websocket transport) with the guard of
    :class:`ReadableFramesOnly`."""
    if websocket_class is SimpleWebSocketWSGI:
        return ReadableFramesOnly
    return type(f"ReadableFramesOnly{websocket_class.__name__}", (ReadableFramesOnly, websocket_class), {})


class MalformedFrames:
    """Connections that sent frames the Socket.IO parser could not read: each one's first is logged."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # engine.io connection id -> malformed frames dropped (insertion-ordered, bounded)
        self._counts: dict[str, int] = {}

    def note(self, eio_sid: str, exc: Exception) -> None:
        with self._lock:
            first = eio_sid not in self._counts
            self._counts[eio_sid] = self._counts.pop(eio_sid, 0) + 1
            while len(self._counts) > MALFORMED_CONNECTIONS_KEPT:
                self._counts.pop(next(iter(self._counts)))
        if first:
            log.warning(
                "dropped a malformed Socket.IO frame from connection %s (%s); further ones from it are "
                "dropped without a log line",
                eio_sid,
                type(exc).__name__,
            )


#: Counts one engine.io message of a connection before anything of it is decoded; answers the error body
#: (``{"code", "message", "details"}``) that refuses it, or None to let it through.
AdmitMessage = Callable[[str, Any], dict[str, Any] | None]


def guard_transport(socketio: SocketIO, admit: AdmitMessage | None = None) -> None:
    """Install every guard of this module on one Socket.IO server (call before serving); ``admit`` counts
    each message before the Socket.IO parser decodes it (a 1 MB event costs its JSON decode)."""
    logging.getLogger("engineio.server").addFilter(client_faults_as_info)
    eio = socketio.server.eio
    # threading mode (dev server) and gevent mode (gunicorn's gevent worker) both run simple-websocket
    websocket_class = eio._async.get("websocket")
    if isinstance(websocket_class, type) and issubclass(websocket_class, SimpleWebSocketWSGI):
        eio._async = {**eio._async, "websocket": readable_frames_only(websocket_class)}
    _drop_malformed_socketio_packets(socketio, admit)


def _drop_malformed_socketio_packets(socketio: SocketIO, admit: AdmitMessage | None) -> None:
    """Frames the Socket.IO parser cannot read (bad JSON, deep nesting, huge numbers, stray acks) are
    dropped; each connection's first one is logged as one warning line, the rest silently (the library
    logged a traceback per frame). Handler errors never get here: ``SocketProtocol`` answers them."""
    server = socketio.server
    handle = server._handle_eio_message
    malformed = MalformedFrames()

    def guarded(eio_sid: str, data: Any) -> None:
        refusal = admit(eio_sid, data) if admit is not None else None
        if refusal is not None:
            _answer_unread(server, eio_sid, data, refusal)
            return
        try:
            handle(eio_sid, data)
        except Exception as exc:
            malformed.note(eio_sid, exc)

    server.eio.on("message", guarded)


def ack_target(data: Any) -> tuple[str, int] | None:
    """The namespace and acknowledgement id of an encoded Socket.IO event (``2[/ns,]<id>[...]``), read from
    its first bytes without decoding its payload; None when it asks for no acknowledgement."""
    if not isinstance(data, str) or not data.startswith(str(SocketIOPacket.EVENT)):
        return None
    start, namespace = 1, "/"
    if data.startswith("/", start):
        comma = data.find(",", start, start + 256)
        if comma < 0:
            return None
        namespace, start = data[start:comma], comma + 1
    end = start
    while end < len(data) and end - start < 16 and data[end] in "0123456789":
        end += 1
    return (namespace, int(data[start:end])) if end > start else None


def _answer_unread(server: Any, eio_sid: str, data: Any, error: dict[str, Any]) -> None:
    """Acknowledge a refused, undecoded event with ``{"ok": false, "error": error}`` when it asks for an
    acknowledgement; else it is dropped."""
    target = ack_target(data)
    if target is None:
        return
    namespace, ack_id = target
    answer = {"ok": False, "error": error}
    server._send_packet(
        eio_sid, server.packet_class(SocketIOPacket.ACK, data=[answer], namespace=namespace, id=ack_id)
    )


def route_socketio_paths(app: Flask) -> None:
    """URL rules for ``/socket.io/`` that the Socket.IO middleware answers first, so they are never reached.
    Flask-SocketIO builds a request context from the connection's URL for every event; without a matching
    rule each event raised and stored a routing error whose traceback formed reference cycles: garbage that
    cost 20-90 ms collector pauses under load."""

    def socketio_path() -> tuple[Response, int]:
        error = {"code": "invalid_request", "message": "Connect with a Socket.IO client."}
        return jsonify({"ok": False, "error": error}), 400

    app.add_url_rule("/socket.io/", "socketio_polling", socketio_path, methods=["GET", "POST"])
    app.add_url_rule("/socket.io/", "socketio_websocket", socketio_path, websocket=True)
