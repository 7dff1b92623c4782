"""gunicorn's configuration for the production server (docs/deployment.md):

    gunicorn -c python:server.web.gunicorn_conf 'server.web.app:create_app()'

One gevent worker: every connection (an idle WebSocket, a slow client, a long poll) costs a greenlet of a few
KB instead of an OS thread, so none of them can starve the others. gunicorn's gevent worker patches the
standard library (``gevent.monkey.patch_all()``) in the worker before it loads the app, so ``threading``
makes greenlets there and the app runs Socket.IO in gevent mode (``server.web.deployment.async_mode``).
This module is read by gunicorn's master process: it imports only the settings and gunicorn's gevent worker
(gevent unpatched), nothing that starts threads. The worker class adds a cap on open connections per address.

Address, port and bounds come from the TradeCraft settings (settings.yaml, ``TRADECRAFT__SERVER__*``);
gunicorn's own command-line options still win over them.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from gunicorn.workers.ggevent import GeventWorker

from server.table.config import load_settings

_server = load_settings().server
#: Reads of a refused connection's request before closing it (each within the 1 s socket timeout).
REFUSAL_DRAIN_READS = 4


class CappedGeventWorker(GeventWorker):
    """gunicorn's gevent worker, with at most ``server.max_connections_per_address`` open TCP connections
    per peer address, whatever they do (idle WebSockets, slow headers or bodies, long polls, keep-alives):
    one more is answered ``too_many_connections`` (429) and closed before anything of it is read. The
    counts live on the worker's one event loop thread and change without yielding, so they need no lock."""

    max_per_address = _server.max_connections_per_address

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_per_address: dict[str, int] = {}

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        address = str(addr[0]) if isinstance(addr, tuple) else str(addr)
        held = self.open_per_address.get(address, 0)
        if held >= self.max_per_address:
            self._refuse(client)
            return
        self.open_per_address[address] = held + 1
        try:
            super().handle(listener, client, addr)
        finally:
            left = self.open_per_address.get(address, 1) - 1
            if left > 0:
                self.open_per_address[address] = left
            else:
                self.open_per_address.pop(address, None)  # memory follows what is open

    def _refuse(self, client: Any) -> None:
        error = {
            "code": "too_many_connections",
            "message": "This network address holds as many open connections as the server allows; close one "
            "first.",
            "details": {"limit": self.max_per_address},
        }
        body = json.dumps({"ok": False, "error": error}).encode()
        head = (
            "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        try:
            client.settimeout(1)
            client.sendall(head.encode() + body)
            # closing with the request still unread sends a reset that can overtake the answer: end the
            # write side, read what already came (bounded), then close
            client.shutdown(socket.SHUT_WR)
            for _ in range(REFUSAL_DRAIN_READS):
                if not client.recv(65536):
                    break
        except OSError:
            pass
        finally:
            client.close()


bind = f"{_server.host}:{_server.port}"
worker_class = CappedGeventWorker
# One process per server: Socket.IO's long-polling needs every request of a session on the process that
# holds it. More processes = more gunicorn instances behind a sticky proxy with socketio.message_queue.
workers = 1
worker_connections = _server.max_connections
# gunicorn's gevent worker reads each request line + headers under a timeout of `keepalive` seconds, and
# closes a kept-alive connection idle for as long: one setting bounds slow clients and idle connections.
keepalive = max(1, round(_server.header_timeout_seconds))
# seconds the event loop may stall before the master restarts the worker (the loop beats once a second)
timeout = 30
graceful_timeout = 30
# the request line and headers a client may send (gunicorn's defaults, spelled out)
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190
accesslog = None
errorlog = "-"
# gunicorn's control socket is one path per user: two servers on a machine would fight over it, and the
# server needs none (stop it with a signal)
control_socket_disable = True
