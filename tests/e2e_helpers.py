"""End-to-end helpers: a live TradeCraft server in a subprocess, and clients that record every message.

``ServerProcess`` runs ``run_server.py`` on a free loopback port with its own settings file, data dir and task
instances (written by :func:`write_config`), waits for ``/healthz`` and can be killed with SIGKILL.
``Client`` is what a browser or a bot is: a ``requests`` session (REST, the login cookie) plus a
python-socketio client; every Socket.IO message it receives is captured (event name and payload) so tests can
scan all of them for private information. :class:`Participant` holds that capturing and waiting, shared
with the in-process client of tests/in_process.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, Self

import requests
import socketio
import yaml

ROOT = Path(__file__).resolve().parent.parent
ADMIN_PASSWORD = "test-admin-password"
ADMIN = ("admin", ADMIN_PASSWORD)
"""HTTP basic auth of the admin area of a server configured by :func:`write_config`."""

# Small minecraft instances whose games a script can finish in one turn.
# Duel: seat 0 needs coal (from seat 1) for a torch; seat 1 needs seat 0's iron ingot for shears.
DUEL = {
    "hands": [{"oak_planks": 2, "iron_ingot": 1, "cobblestone": 1}, {"coal": 1, "iron_ingot": 1, "stick": 1}],
    "targets": [{"torch": 1}, {"shears": 1}],
}
# Trio: seat 2 needs a crafting table (4 planks): seat 0 has 2, seat 1 has 2.
TRIO = {
    "hands": [
        {"oak_planks": 2, "iron_ingot": 1},
        {"coal": 1, "iron_ingot": 1, "oak_planks": 2},
        {"cobblestone": 2, "stick": 1},
    ],
    "targets": [{"torch": 1}, {"shears": 1}, {"crafting_table": 1}],
}
DUEL_ID = "minecraft/1p_v_1p/servertest#0"
TRIO_ID = "minecraft/1p_v_1p_v_1p/servertest#0"

# The scripted plays that win DUEL in turn 1 (both players win).
DUEL_TRADE = {"to": 1, "offer": {"iron_ingot": 1}, "request": {"coal": 1}, "message": "ingot for coal?"}
DUEL_CRAFTS = {
    0: [{"recipe": "stick", "runs": "1/2"}, {"recipe": "torch", "runs": "1/4"}],
    1: [{"recipe": "shears", "runs": 1}],
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_instances(root: Path) -> Path:
    for mode, record in (("1p_v_1p", DUEL), ("1p_v_1p_v_1p", TRIO)):
        folder = root / "minecraft" / mode
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "servertest.json").write_text(json.dumps([record]), encoding="utf-8")
    return root


def hall_settings(instances_root: Path, deadline: float | None = None) -> dict[str, Any]:
    deadlines = {"trade_propose": deadline, "trade_decide": deadline, "craft": deadline} if deadline else {}
    instances = {"choice": "fixed", "root": str(instances_root)}
    return {
        "duel": {"ruleset": "minecraft", "players": 2, "instances": instances, "game": {"max_turns": 3}},
        "trio": {"ruleset": "minecraft", "players": 3, "instances": instances, "game": {"max_turns": 3}},
        "tom": {
            "ruleset": "minecraft",
            "players": 2,
            "instances": instances,
            "game": {"max_turns": 3, "tom_orders": [[0, 1, 2], [0]]},
        },
        "timed": {
            "ruleset": "minecraft",
            "players": 2,
            "instances": instances,
            "game": {"max_turns": 2, "deadlines": {"trade_propose": 0.6, "trade_decide": 0.6, "craft": 0.6}},
        },
        "idle": {
            "ruleset": "minecraft",
            "players": 2,
            "instances": instances,
            "game": {
                "max_turns": 3,
                "deadlines": {"trade_propose": 0.5, "trade_decide": 0.5, "craft": 0.5},
                "idle_timeouts_before_bot": 1,
            },
        },
        "slow": {
            "ruleset": "minecraft",
            "players": 2,
            "instances": instances,
            "game": {"max_turns": 3, **({"deadlines": deadlines} if deadlines else {})},
        },
    }


def write_config(
    folder: Path,
    *,
    port: int = 0,
    message_queue: str | None = None,
    channel: str = "tradecraft-test",
    database_uri: str | None = None,
    admin_password: str | None = ADMIN_PASSWORD,
    deadline: float | None = None,
    bot_delay: float = 0.0,
    overrides: dict[str, Any] | None = None,
) -> Path:
    """The test settings file in ``folder``. ``overrides`` go in section by section: each key given replaces
    that key of its section (``{"halls": {"banded": {...}}}`` adds or replaces one hall, keeps the rest)."""
    folder.mkdir(parents=True, exist_ok=True)
    instances_root = write_instances(folder / "instances")
    config = {
        "server": {"host": "127.0.0.1", "port": port, "data_dir": str(folder / "data"), "log_level": "INFO"},
        "database": {"uri": database_uri},
        "security": {"admin_password": admin_password},
        "socketio": {"message_queue": message_queue, "channel": channel},
        "bots": {"move_delay_seconds": bot_delay},
        "halls": hall_settings(instances_root, deadline),
    }
    for section, values in (overrides or {}).items():
        config[section] = {**config.get(section, {}), **values} if isinstance(values, dict) else values
    path = folder / "settings.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


class ServerProcess:
    """``python run_server.py --config FILE --port P`` in a subprocess, logging to a file."""

    def __init__(
        self,
        config: Path,
        port: int | None = None,
        env: dict[str, str] | None = None,
        script: Path = ROOT / "run_server.py",
    ) -> None:
        self.config = config
        self.script = script
        self.port = port or free_port()
        self.env = {**os.environ, **(env or {})}
        self.log_path = config.parent / f"server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> ServerProcess:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(self.script),
                "--config",
                str(self.config),
                "--port",
                str(self.port),
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server did not come up in {timeout} s:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs (the crash test)."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def client(self, name: str | None = None, token: str | None = None) -> Client:
        """A participant over the network (as ``InProcessApp.client`` is one in-process)."""
        return Client(self.url, name, token)


class Host(Protocol):
    """Whatever serves the game to participants: a :class:`ServerProcess` or an in-process app."""

    def client(self, name: str | None = None, token: str | None = None) -> Participant: ...


MakeServer = Callable[..., ServerProcess]
"""The ``make_server`` fixture of conftest.py: ``make_server(config=None, *, port, env, script, **opts)``."""


class Participant(ABC):
    """One participant, whatever carries its messages: REST, Socket.IO calls, and every message pushed to it
    (with the acks of its own actions), with waits on them. A subclass delivers pushes to :meth:`_record`."""

    def __init__(self) -> None:
        self.received: list[tuple[str, Any]] = []
        self._cond = threading.Condition()
        self.user: dict[str, Any] | None = None

    def _record(self, event: str, data: Any = None) -> None:
        with self._cond:
            self.received.append((event, data))
            self._cond.notify_all()

    @abstractmethod
    def rest(self, method: str, path: str, payload: Any = None, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        """``method path`` with a JSON body; returns the status and the JSON answer."""

    @abstractmethod
    def call(self, event: str, data: Any = None, timeout: float = 15) -> dict[str, Any]:
        """Emit a Socket.IO event and return its ack."""

    @abstractmethod
    def close(self) -> None:
        """Disconnect and let go of the session."""

    def login(self, name: str) -> dict[str, Any]:
        status, body = self.rest("POST", "/api/login", {"name": name})
        assert status == 200 and body["ok"], body
        self.user = body["user"]
        return body["user"]

    def as_researcher(self) -> Self:
        """Log this participant's session in to the admin area, as a researcher does to set a game's seed;
        before ``connect()``: a Socket.IO connection keeps the session it connected with."""
        status, body = self.rest("POST", "/api/admin/login", {"password": ADMIN_PASSWORD})
        assert status == 200, body
        return self

    def act(self, game_id: str, action_type: str, **fields: Any) -> dict[str, Any]:
        """Send one action; its ack (with the new events this seat may see) is recorded like a push."""
        ack = self.call(action_type, {"game_id": game_id, **fields})
        self._record("ack", ack)
        return ack

    # -- captured messages
    def messages(self, event: str | None = None) -> list[Any]:
        with self._cond:
            return [data for name, data in self.received if event is None or name == event]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10, what: str = "a message") -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out waiting for {what}; received {self.received[-5:]}")
                self._cond.wait(min(remaining, 0.05))  # also polls state that changes without a message

    def wait_log(self, game_id: str, size: int, timeout: float = 10) -> dict[str, Any]:
        """Wait until this client's log of ``game_id`` holds ``size`` events; returns the latest update."""

        def reached() -> bool:
            return any(u.get("game_id") == game_id and u["log_size"] >= size for u in self._updates())

        self.wait_for(reached, timeout, f"{size} events of {game_id}")
        return [u for u in self._updates() if u.get("game_id") == game_id][-1]

    def wait_status(self, game_id: str, status: str, timeout: float = 10) -> dict[str, Any]:
        """Wait for an update saying the game has ``status``; returns it."""

        def reached() -> bool:
            return any(u.get("game_id") == game_id and u["status"] == status for u in self._updates())

        self.wait_for(reached, timeout, f"{game_id} to be {status}")
        return [u for u in self._updates() if u.get("game_id") == game_id and u["status"] == status][-1]

    def _updates(self) -> list[dict[str, Any]]:
        """Pushed updates and the acks of this client's own actions (which carry its new events)."""
        return [
            data for name, data in self.received if name == "update" or (name == "ack" and data.get("ok"))
        ]

    def pushed_events(self, game_id: str) -> list[dict[str, Any]]:
        """Every event that reached this client for ``game_id`` (pushes and own acks), in arrival order."""
        return [e for u in self._updates() if u.get("game_id") == game_id for e in u["events"]]


class Client(Participant):
    """One participant over the network: REST session + Socket.IO connection; records every pushed message."""

    def __init__(self, url: str, name: str | None = None, token: str | None = None) -> None:
        super().__init__()
        self.url = url
        self.http = requests.Session()
        self.token = token
        if token:
            self.http.headers["Authorization"] = f"Bearer {token}"
        self.sio = socketio.Client(reconnection=False)
        self.sio.on("*", self._record)
        if name is not None:
            self.login(name)

    # -- REST
    def rest(self, method: str, path: str, payload: Any = None, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        response = self.http.request(method, self.url + path, json=payload, timeout=15, **kwargs)
        return response.status_code, response.json()

    # -- Socket.IO
    def connect(self, transports: list[str] | None = None) -> Client:
        cookie = "; ".join(f"{c.name}={c.value}" for c in self.http.cookies)
        headers = {"Cookie": cookie} if cookie else {}
        auth = {"token": self.token} if self.token else None
        self.sio.connect(
            self.url, headers=headers, auth=auth, transports=transports or ["websocket"], wait_timeout=10
        )
        return self

    def call(self, event: str, data: Any = None, timeout: float = 15) -> dict[str, Any]:
        return self.sio.call(event, data, timeout=timeout)

    def drop(self) -> None:
        """Disconnect without waiting: websocket-client blocks up to 3 s for the server's close frame after
        the server has already handled the disconnect, so the wait is done on a daemon thread."""
        if self.sio.connected:
            threading.Thread(target=self.sio.disconnect, daemon=True).start()

    def reconnect(self) -> Client:
        """A fresh Socket.IO connection with the same login (cookie or token), like a reloaded page."""
        self.drop()
        self.sio = socketio.Client(reconnection=False)
        self.sio.on("*", self._record)
        return self.connect()

    def close(self) -> None:
        self.drop()
        self.http.close()


def play_duel(game_id: str, p0: Client, p1: Client) -> dict[str, Any]:
    """Play the scripted winning DUEL (turn 1: trade, crafts, both finish); returns seat 1's last ack."""
    ack = p0.act(game_id, "propose", **DUEL_TRADE)
    assert ack["ok"], ack
    ack = p1.act(game_id, "decide", accept=True, message="deal")
    assert ack["ok"], ack
    for seat, client in ((0, p0), (1, p1)):
        for craft in DUEL_CRAFTS[seat]:
            ack = client.act(game_id, "craft", **craft)
            assert ack["ok"], ack
    assert p0.act(game_id, "finish_crafting")["ok"]
    ack = p1.act(game_id, "finish_crafting")
    assert ack["ok"], ack
    return ack


def raw_engineio_socket(server_url: str, attempts: int = 3) -> Any:
    """A bare engine.io WebSocket (no Socket.IO client) once the server's open packet has arrived. Now and
    then, on a busy machine, the open packet never reached simple-websocket's client (seen as a 20 s silence):
    such a connection is dropped and another made."""
    import simple_websocket

    url = server_url.replace("http", "ws", 1) + "/socket.io/?EIO=4&transport=websocket"
    for _ in range(attempts):
        ws = simple_websocket.Client.connect(url)
        opened = ws.receive(timeout=5)
        if opened is not None and opened.startswith("0"):
            return ws
        ws.close()
    raise AssertionError(f"no engine.io open packet from {url} in {attempts} connections")
