"""Load generator: N concurrent 2-player games of bot clients over Socket.IO, next to a bare echo server.

    python bench/bench_server.py [--games 100] [--think-ms 1000] [--max-turns 10] [--sync FULL]
                                 [--server run_server|gunicorn]

Both servers run as subprocesses on loopback in the same run, in the same mode (Flask-SocketIO threading +
simple-websocket, served by Werkzeug as ``run_server.py`` does, or by gunicorn gthread):

1. a bare Flask-SocketIO server whose only handler echoes its payload: the floor set by the transport. Its
   clients send a view-sized payload at the same pace as the game clients act;
2. TradeCraft (``run_server.py``, embedded SQLite store in a temp dir, ``synchronous=FULL``: every
   acknowledged event is fsynced). Every client logs in over HTTP, two clients join each game, and each plays
   with the built-in random bot's policy (``agents.bots``) through the Socket.IO protocol: when its view says
   its action is awaited it "thinks" for ``--think-ms`` and sends the action.

All clients are asyncio Socket.IO clients in this one process. Printed per server: actions (or messages)
per second, acknowledgement latency (client send -> ack) p50/p90/p99/max, errors, and the server process's
CPU time per action; for TradeCraft also the games finished.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import aiohttp
import requests
import socketio
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.bots import make_policy  # noqa: E402

ECHO_SERVER = textwrap.dedent(
    """
    import sys
    from flask import Flask
    from flask_socketio import SocketIO
    from run_server import NoDelayRequestHandler  # the same Werkzeug setup as TradeCraft's

    app = Flask(__name__)
    socketio = SocketIO(app, async_mode="threading")

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    @socketio.on("echo")
    def echo(data):
        return data

    if __name__ == "__main__":
        socketio.run(app, host="127.0.0.1", port=int(sys.argv[1]), allow_unsafe_werkzeug=True,
                     request_handler=NoDelayRequestHandler)
    """
)
ECHO_APP = "echo_server:app"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live children (gunicorn's worker), from /proc."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:  # fields[1] is the parent pid
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if requests.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError("server did not start")


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return dict.fromkeys(("p50", "p90", "p99", "max"), float("nan"))

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {"p50": pick(0.50), "p90": pick(0.90), "p99": pick(0.99), "max": ordered[-1] * 1000}


def start_server(command: list[str], env: dict[str, str], cwd: Path, url: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_healthy(url, proc)
    return proc


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def gunicorn_command(app: str, port: int, threads: int) -> list[str]:
    binary = str(Path(sys.executable).with_name("gunicorn"))
    return [
        binary,
        "-k",
        "gthread",
        "-w",
        "1",
        "--threads",
        str(threads),
        "-b",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        app,
    ]


class Stats:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[Any] = []

    def add(self, seconds: float, error: Any = None) -> None:
        self.latencies.append(seconds)
        if error is not None:
            self.errors.append(error)

    def summary(self, elapsed: float, cpu: float, unit: str) -> dict[str, Any]:
        count = len(self.latencies)
        return {
            unit: count,
            "per_second": count / elapsed if elapsed else 0.0,
            "errors": len(self.errors),
            "error_sample": self.errors[:3],
            "latency_ms": percentiles(self.latencies),
            "server_cpu_ms_per_request": 1000 * cpu / count if count else float("nan"),
            "seconds": elapsed,
        }


# ------------------------------------------------------------------------------------------- echo
async def echo_load(url: str, clients: int, messages: int, think: float, payload: Any) -> tuple[Stats, float]:
    stats = Stats()
    sios = [socketio.AsyncClient(reconnection=False) for _ in range(clients)]
    await asyncio.gather(*(s.connect(url, transports=["websocket"], wait_timeout=30) for s in sios))

    async def loop(sio: socketio.AsyncClient) -> None:
        await asyncio.sleep(random.random() * think)  # spread the clients over the think time
        for _ in range(messages):
            await asyncio.sleep(think)
            started = time.perf_counter()
            try:
                await sio.call("echo", payload, timeout=60)
                stats.add(time.perf_counter() - started)
            except Exception as exc:
                stats.add(time.perf_counter() - started, repr(exc))

    started = time.perf_counter()
    await asyncio.gather(*(loop(s) for s in sios))
    elapsed = time.perf_counter() - started
    await asyncio.gather(*(s.disconnect() for s in sios), return_exceptions=True)
    return stats, elapsed


def run_echo(clients: int, messages: int, think: float, server: str) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    payload = {"view": {"hands": [{f"item_{i}": i for i in range(12)}] * 2, "history": ["x" * 40] * 20}}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "echo_server.py").write_text(ECHO_SERVER, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}"}
        if server == "gunicorn":
            command = gunicorn_command(ECHO_APP, port, clients + 20)
        else:
            command = [sys.executable, str(Path(tmp) / "echo_server.py"), str(port)]
        proc = start_server(command, env, Path(tmp), url)
        try:
            cpu_before = cpu_seconds(proc.pid)
            stats, elapsed = asyncio.run(echo_load(url, clients, messages, think, payload))
            return stats.summary(elapsed, cpu_seconds(proc.pid) - cpu_before, "messages")
        finally:
            stop_server(proc)


# ------------------------------------------------------------------------------------- TradeCraft
class BotClient:
    """One seat: pushes and acks keep the freshest view; the client acts whenever that view awaits it."""

    def __init__(self, url: str, seed: int, think: float, stats: Stats) -> None:
        self.url = url
        self.sio = socketio.AsyncClient(reconnection=False)
        self.sio.on("update", self._on_update)
        self.bot = make_policy("random", seed)
        self.think = think
        self.stats = stats
        self.game_id: str | None = None
        self.latest: dict[str, Any] | None = None
        self.acted_at = -1  # log size when this client last acted
        self.changed = asyncio.Event()
        self.finished = False

    async def connect(self, http: aiohttp.ClientSession, name: str) -> None:
        async with http.post(self.url + "/api/login", json={"name": name}) as response:
            response.raise_for_status()
            cookie = "; ".join(f"{k}={v.value}" for k, v in response.cookies.items())
        await self.sio.connect(
            self.url, headers={"Cookie": cookie}, transports=["websocket"], wait_timeout=30
        )

    def _offer(self, envelope: dict[str, Any]) -> None:
        if envelope.get("view") is not None and (
            self.latest is None or envelope["log_size"] >= self.latest["log_size"]
        ):
            self.latest = envelope
            self.changed.set()

    async def _on_update(self, data: dict[str, Any]) -> None:
        if data.get("game_id") == self.game_id:
            self._offer(data)

    async def join(self, game_id: str) -> None:
        self.game_id = game_id
        ack = await self.sio.call("join", {"game_id": game_id}, timeout=60)
        assert ack["ok"], ack
        self._offer(ack)

    async def play(self) -> None:
        await asyncio.sleep(random.random() * self.think)
        while True:
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=30)
            except TimeoutError:
                self.stats.add(0.0, "no update for 30 s")
                return
            self.changed.clear()
            envelope = self.latest
            assert envelope is not None
            view = envelope["view"]
            if view["finished"] or envelope["status"] != "running":
                self.finished = True
                return
            if not view["your_turn"] or envelope["log_size"] <= self.acted_at:
                continue
            await asyncio.sleep(self.think)
            # the bot's move is computed off the event loop, so it does not delay other clients' acks
            action = await asyncio.get_running_loop().run_in_executor(
                None, self.bot.act, view, view["legal_actions"]
            )
            self.acted_at = envelope["log_size"]
            started = time.perf_counter()
            try:
                ack = await self.sio.call("act", {"game_id": self.game_id, "action": action}, timeout=60)
            except Exception as exc:
                self.stats.add(time.perf_counter() - started, repr(exc))
                self.changed.set()
                continue
            if ack.get("ok"):
                self.stats.add(time.perf_counter() - started)
                self._offer(ack)
            else:
                self.stats.add(time.perf_counter() - started, ack["error"])
                self.changed.set()


async def game_load(url: str, games: int, think: float) -> tuple[Stats, float, int]:
    stats = Stats()
    clients = [BotClient(url, seed=i, think=think, stats=stats) for i in range(2 * games)]
    async with aiohttp.ClientSession() as http:
        for start in range(0, len(clients), 50):  # connect in batches, not 200 handshakes at once
            batch = clients[start : start + 50]
            await asyncio.gather(*(c.connect(http, f"bot{start + i}") for i, c in enumerate(batch)))
    for index in range(games):
        first, second = clients[2 * index], clients[2 * index + 1]
        created = await first.sio.call("create_game", {"hall": "bench"}, timeout=60)
        assert created["ok"], created
        await first.join(created["game"]["game_id"])
        await second.join(created["game"]["game_id"])
    started = time.perf_counter()
    await asyncio.gather(*(c.play() for c in clients))
    elapsed = time.perf_counter() - started
    await asyncio.gather(*(c.sio.disconnect() for c in clients), return_exceptions=True)
    return stats, elapsed, sum(c.finished for c in clients) // 2


def run_tradecraft(games: int, think: float, max_turns: int, sync: str, server: str) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        config = {
            "server": {"host": "127.0.0.1", "port": port, "data_dir": f"{tmp}/data", "log_level": "WARNING"},
            "database": {"uri": f"sqlite:///{tmp}/data/tradecraft.db?synchronous={sync}"},
            "halls": {
                "bench": {
                    "ruleset": "minecraft",
                    "players": 2,
                    "instances": {"choice": "random", "seed": 7},
                    "game": {"max_turns": max_turns},
                }
            },
        }
        settings_path = Path(tmp) / "settings.yaml"
        settings_path.write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {**os.environ, "TRADECRAFT_CONFIG": str(settings_path)}
        if server == "gunicorn":
            command = gunicorn_command("server.web.app:create_app()", port, 2 * games + 20)
        else:
            command = [sys.executable, str(ROOT / "run_server.py"), "--config", str(settings_path)]
        proc = start_server(command, env, ROOT, url)
        try:
            cpu_before = cpu_seconds(proc.pid)
            stats, elapsed, finished = asyncio.run(game_load(url, games, think))
            result = stats.summary(elapsed, cpu_seconds(proc.pid) - cpu_before, "actions")
            return {**result, "games": games, "finished": finished}
        finally:
            stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="concurrent 2-player games")
    parser.add_argument("--think-ms", type=float, default=1000, help="each client's pause before it acts")
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--sync", default="FULL", choices=["FULL", "NORMAL"], help="SQLite synchronous mode")
    parser.add_argument("--server", default="run_server", choices=["run_server", "gunicorn"])
    parser.add_argument("--echo-messages", type=int, default=20, help="messages per client in the echo run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    think = args.think_ms / 1000
    random.seed(1)

    echo = run_echo(2 * args.games, args.echo_messages, think, args.server)
    game = run_tradecraft(args.games, think, args.max_turns, args.sync, args.server)
    if args.json:
        print(json.dumps({"echo": echo, "tradecraft": game}, indent=2))
        return
    print(
        f"{2 * args.games} Socket.IO clients (websocket, asyncio), think time {args.think_ms:.0f} ms, "
        f"server {args.server}, SQLite synchronous={args.sync}, {os.cpu_count()} CPUs"
    )
    for label, result, unit in (("echo server", echo, "messages"), ("TradeCraft", game, "actions")):
        lat = result["latency_ms"]
        print(
            f"{label:<12} {result[unit]:>6} {unit:<8} {result['per_second']:7.0f}/s  "
            f"ack p50 {lat['p50']:5.1f} ms  p90 {lat['p90']:5.1f}  p99 {lat['p99']:5.1f}  "
            f"max {lat['max']:6.1f}  "
            f"server CPU {result['server_cpu_ms_per_request']:.2f} ms/{unit[:-1]}  errors {result['errors']}"
        )
    print(f"TradeCraft games finished: {game['finished']}/{game['games']} in {game['seconds']:.1f} s")
    if game["errors"]:
        print("first errors:", json.dumps(game["error_sample"]))


if __name__ == "__main__":
    main()
