"""gunicorn's configuration for the production server (docs/deployment.md):

    gunicorn -c python:server.web.gunicorn_conf 'server.web.app:create_app()'

One gevent worker: every connection (an idle WebSocket, a slow client, a long poll) costs a greenlet of a few
KB instead of an OS thread, so none of them can starve the others. gunicorn's gevent worker patches the
standard library (``gevent.monkey.patch_all()``) in the worker before it loads the app, so ``threading``
makes greenlets there and the app runs Socket.IO in gevent mode (``server.web.deployment.async_mode``).
This module is read by gunicorn's master process: it imports only the settings, nothing that starts threads.

Address, port and bounds come from the TradeCraft settings (settings.yaml, ``TRADECRAFT__SERVER__*``);
gunicorn's own command-line options still win over them.
"""

from __future__ import annotations

from server.table.config import load_settings

_server = load_settings().server

bind = f"{_server.host}:{_server.port}"
worker_class = "gevent"
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
