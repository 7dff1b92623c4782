"""The real app (``server.web.app:create_app``) in the test process, with Flask's and Flask-SocketIO's test
clients instead of sockets: for tests of what the server answers and pushes (validation, privacy, queries,
replays, admin routes), where no process or network is under test.

:class:`InProcessClient` is a :class:`e2e_helpers.Participant` like the network ``Client``: the same
``rest`` / ``login`` / ``connect`` / ``call`` / ``act`` and the same capture of every pushed message, so a
test reads the same whichever carries it. Deadline timers and bot seats run on their own threads as in a
server; their pushes reach the test clients as they happen.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from e2e_helpers import Participant, play_duel
from flask import Flask
from flask.testing import FlaskClient
from flask_socketio import SocketIO, SocketIOTestClient

from server.table.config import load_settings
from server.web.app import create_app
from server.web.services import Services


class InProcessApp:
    """``create_app`` over a settings file (the process environment ignored), its log kept in memory."""

    def __init__(self, settings_path: Path, environ: Mapping[str, str] | None = None) -> None:
        self._log_lines: list[str] = []
        self._log_handler = _ListHandler(self._log_lines)
        logging.getLogger().addHandler(self._log_handler)
        self._switch_interval = sys.getswitchinterval()
        self.flask: Flask = create_app(load_settings(settings_path, environ=environ or {}))
        self.services: Services = self.flask.extensions["tradecraft"]
        self.socketio: SocketIO = self.flask.extensions["socketio"]

    def http(self) -> FlaskClient:
        """A fresh anonymous HTTP client (its own cookie jar)."""
        return self.flask.test_client()

    def client(self, name: str | None = None, token: str | None = None) -> InProcessClient:
        """A participant logged in as ``name`` (or by an API ``token``, or anonymous); ``.connect()`` opens
        its Socket.IO connection."""
        return InProcessClient(self, name, token)

    def log(self) -> str:
        """Every log line (with tracebacks) written in this process since the app was made."""
        return "\n".join(self._log_lines)

    def close(self) -> None:
        self.services.close()
        logging.getLogger().removeHandler(self._log_handler)
        # create_app tunes the process for serving (a 1 ms GIL switch interval, every object frozen out of the
        # cyclic collector); the rest of the suite runs as it did before
        sys.setswitchinterval(self._switch_interval)
        gc.unfreeze()


MakeApp = Callable[..., InProcessApp]
"""The ``make_app`` fixture of conftest.py: ``make_app(config=None, **write_config_options)``."""


class InProcessClient(Participant):
    """One participant of an :class:`InProcessApp`: a Flask test client (its cookie is the login) and, once
    connected, a Flask-SocketIO test client sharing that cookie."""

    def __init__(self, app: InProcessApp, name: str | None = None, token: str | None = None) -> None:
        super().__init__()
        self.app = app
        self.http = app.http()
        self.token = token
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.sio: _RecordingSocket | None = None
        if name is not None:
            self.login(name)

    def rest(self, method: str, path: str, payload: Any = None, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        response = self.http.open(path, method=method, json=payload, headers=headers, **kwargs)
        return response.status_code, response.get_json()

    def connect(self) -> InProcessClient:
        auth = {"token": self.token} if self.token else None
        self.sio = _RecordingSocket(
            self, self.app.flask, self.app.socketio, auth=auth, flask_test_client=self.http
        )
        if not self.sio.is_connected():
            raise ConnectionRefusedError("the server refused the Socket.IO connection")
        return self

    def call(self, event: str, data: Any = None, timeout: float = 15) -> dict[str, Any]:
        """The handler runs in this thread (the test client is synchronous), so ``timeout`` is not needed."""
        assert self.sio is not None, "connect() first"
        return self.sio.emit(event, *(() if data is None else (data,)), callback=True)

    def drop(self) -> None:
        if self.sio is not None and self.sio.is_connected():
            self.sio.disconnect()

    def reconnect(self) -> InProcessClient:
        """A fresh Socket.IO connection with the same login, like a reloaded page."""
        self.drop()
        return self.connect()

    def close(self) -> None:
        self.drop()


def play_duel_game(
    p0: InProcessClient, p1: InProcessClient, hall: str = "duel", game_id: str | None = None
) -> str:
    """``p0`` creates a game of ``hall`` and sits, ``p1`` joins, both play the scripted duel to its end
    (e2e_helpers.play_duel); the game's id. ``game_id``: a game made in-process instead (a hall players
    may not create games in, like a study's), in which ``p0`` sits already."""
    if game_id is None:
        status, created = p0.rest("POST", "/api/games", {"hall": hall, "join": True})
        assert status == 201, created
        game_id = str(created["game"]["game_id"])
    assert p1.rest("POST", f"/api/games/{game_id}/join", {})[0] == 200
    p0.connect().call("join", {"game_id": game_id})
    p1.connect().call("join", {"game_id": game_id})
    play_duel(game_id, p0, p1)  # type: ignore[arg-type]
    return game_id


def view_when(
    player: InProcessClient, game_id: str, ready: Callable[[dict[str, Any]], bool], timeout: float = 15
) -> dict[str, Any]:
    """The player's view (REST) once ``ready(view)`` holds (bots move on their own threads)."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = player.rest("GET", f"/api/games/{game_id}/view")
        assert status == 200, body
        if ready(body["view"]):
            return body["view"]
        assert time.monotonic() < deadline, body["view"]
        time.sleep(0.05)


def rest_act(player: InProcessClient, game_id: str, action: str, **fields: Any) -> None:
    """One action over REST, which must be accepted."""
    status, body = player.rest("POST", f"/api/games/{game_id}/actions/{action}", fields)
    assert status == 200 and body["ok"], body


class _Inbox(list[dict[str, Any]]):
    """The test client's queue of pushed packets, handing each to the participant as it arrives (from
    whichever thread pushed it)."""

    def __init__(self, participant: Participant) -> None:
        super().__init__()
        self.participant = participant

    def append(self, packet: dict[str, Any]) -> None:
        args = packet["args"]
        self.participant._record(packet["name"], args[0] if len(args) == 1 else (list(args) or None))


class _RecordingSocket(SocketIOTestClient):
    """Flask-SocketIO's test client with its queue replaced by an :class:`_Inbox` before it connects, so no
    push (not even one sent while connecting) is missed or reordered."""

    def __init__(self, participant: Participant, *args: Any, **kwargs: Any) -> None:
        self._inbox = _Inbox(participant)
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def queue(self) -> _Inbox:
        return self._inbox

    @queue.setter
    def queue(self, _fresh: list[Any]) -> None:
        """The base class empties its queue on construction; the inbox stays."""


class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.INFO)
        self.lines = lines
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
