"""Serve TradeCraft: ``python run_server.py [--config FILE] [--host H] [--port P]``.

Uses Flask-SocketIO's threading server (WebSocket via simple-websocket) and the embedded SQLite store in the
settings' data dir. For production use gunicorn (see README.md).
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

from werkzeug.serving import WSGIRequestHandler

from server.table.config import SettingsError, load_settings
from server.web.app import create_app


class NoDelayRequestHandler(WSGIRequestHandler):
    """Werkzeug's handler with Nagle's algorithm off: a push followed at once by an acknowledgement on the
    same WebSocket would otherwise wait for the client's delayed TCP ACK (up to 40 ms on Linux)."""

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_one_request(self) -> None:
        super().handle_one_request()
        # A WebSocket owns the connection until it closes; what follows its close frame is not HTTP. Without
        # this, a client's clean disconnect made the server parse the frame's bytes as a request and log an
        # error ("Bad request syntax").
        headers = getattr(self, "headers", None)
        if headers is not None and headers.get("Upgrade", "").lower() == "websocket":
            self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve TradeCraft (Socket.IO + REST).")
    parser.add_argument("--config", help="settings file (default: TRADECRAFT_CONFIG or settings.yaml)")
    parser.add_argument("--host", help="interface to listen on (overrides server.host)")
    parser.add_argument("--port", type=int, help="TCP port (overrides server.port)")
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {}
    if args.host is not None:
        overrides["host"] = args.host
    if args.port is not None:
        overrides["port"] = args.port
    try:
        settings = load_settings(args.config, overrides={"server": overrides} if overrides else None)
        app = create_app(settings)  # refuses settings only checkable with the policies (bots.models)
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    socketio = app.extensions["socketio"]
    print(f"TradeCraft serving http://{settings.server.host}:{settings.server.port}", flush=True)
    socketio.run(
        app,
        host=settings.server.host,
        port=settings.server.port,
        allow_unsafe_werkzeug=True,
        request_handler=NoDelayRequestHandler,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
