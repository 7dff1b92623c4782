"""The load of issue 18's deployment check, shared by tests/test_deployment.py and bench/bench_deployment.py:
a server started with the README's production command (read from the README, so the two cannot drift), then
1,000 idle WebSockets (engine.io v4 + Socket.IO connect, pings answered), 300 slowloris connections (a
request's headers one byte at a time) and 300 REST long polls (``?wait=30``, logged in) held open while
``/healthz`` is measured, the server's memory read and a bot game watched for moves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The README's previous production command (issue 18: it fell over); the bench compares both.
OLD_COMMAND = "gunicorn -k gthread -w 1 --threads 100 -b 0.0.0.0:5000 'server.web.app:create_app()'"


def readme_production_command() -> str:
    """The README's production command: the ``gunicorn`` line of its "Serving games" block."""
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("gunicorn ") and "production" in line:
            return line.split("  #", 1)[0].strip()
    raise AssertionError("README.md names no production gunicorn command")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def command_argv(command: str, port: int) -> list[str]:
    """``command`` with this virtualenv's gunicorn, bound to 127.0.0.1:``port`` where it names an address."""
    argv = shlex.split(command)
    assert argv[0] == "gunicorn", command
    argv[0] = str(Path(sys.executable).with_name("gunicorn"))
    if "-b" in argv:
        argv[argv.index("-b") + 1] = f"127.0.0.1:{port}"
    return argv


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def processes(self) -> list[int]:
        """The gunicorn master and its workers."""
        pids = [self.proc.pid]
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(OSError):
            pids += [int(pid) for pid in children.read_text().split()]
        return pids

    def status(self, key: str) -> int:
        """A /proc/PID/status figure (VmRSS in kB, Threads) summed over the server's processes."""
        total = 0
        for pid in self.processes():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        return total

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(command: str, data_dir: Path, env: dict[str, str] | None = None) -> Server:
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    settings = {
        "TRADECRAFT__SERVER__PORT": str(port),
        "TRADECRAFT__SERVER__DATA_DIR": str(data_dir),
        # every client of the test comes from 127.0.0.1: the per-address caps must let it hold the load
        "TRADECRAFT__SERVER__MAX_SOCKETS_PER_ADDRESS": "2000",
        "TRADECRAFT__SERVER__MAX_CONNECTIONS_PER_ADDRESS": "3000",
        "TRADECRAFT__SERVER__MAX_WAITS_PER_ADDRESS": "1000",
        "TRADECRAFT__SERVER__MAX_WAITS_PER_USER": "20",
        # slowloris connections stay open (unfinished) through the measurement, and are dropped after it
        "TRADECRAFT__SERVER__HEADER_TIMEOUT_SECONDS": "20",
        "TRADECRAFT__BOTS__MOVE_DELAY_SECONDS": "0.05",
    }
    log = data_dir / "server.log"
    proc = subprocess.Popen(
        command_argv(command, port),
        cwd=ROOT,
        env={**os.environ, **settings, **(env or {})},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(server.url + "/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            time.sleep(0.3)
    server.stop()
    raise AssertionError(f"the server did not answer /healthz: {log.read_text()[-3000:]}")


@dataclass
class Figures:
    websockets: int = 0
    websocket_failures: int = 0
    slowloris_open: int = 0
    long_polls_open: int = 0
    long_poll_failures: list[str] = field(default_factory=list)
    healthz_ms: list[float] = field(default_factory=list)
    healthz_failures: int = 0
    rss_mb: float = 0.0
    threads: int = 0
    bot_log_before: int = 0  # a seat's acts in the game started under the load, before and after
    bot_log_after: int = 0
    slowloris_dropped_after_s: list[float] = field(default_factory=list)
    #: what was open right after /healthz was measured
    held: dict[str, int] = field(default_factory=dict)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.healthz_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("inf")

    def summary(self) -> dict[str, Any]:
        drops = self.slowloris_dropped_after_s
        return {
            "held_while_measured": self.held,
            "websockets": self.websockets,
            "websocket_failures": self.websocket_failures,
            "slowloris_open": self.slowloris_open,
            "long_polls_open": self.long_polls_open,
            "long_poll_failures": len(self.long_poll_failures),
            "healthz_requests": len(self.healthz_ms) + self.healthz_failures,
            "healthz_failures": self.healthz_failures,
            "healthz_p50_ms": round(self.percentile(0.50), 1),
            "healthz_p95_ms": round(self.percentile(0.95), 1),
            "healthz_p99_ms": round(self.percentile(0.99), 1),
            "rss_mb": round(self.rss_mb, 1),
            "threads": self.threads,
            "bot_game_log": [self.bot_log_before, self.bot_log_after],
            "slowloris_dropped": len(drops),
            "slowloris_dropped_after_s": [round(min(drops), 1), round(max(drops), 1)] if drops else None,
        }


async def _hold_websocket(http: aiohttp.ClientSession, url: str, figures: Figures) -> None:
    """An idle Socket.IO client over a raw engine.io v4 WebSocket: handshake, connect, answer pings."""
    ws_url = url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
    try:
        async with http.ws_connect(ws_url, timeout=aiohttp.ClientWSTimeout(ws_close=5)) as ws:
            opened = await asyncio.wait_for(ws.receive_str(), 15)
            assert opened.startswith("0{"), opened
            await ws.send_str("40")
            connected = await asyncio.wait_for(ws.receive_str(), 15)
            assert connected.startswith("40"), connected
            figures.websockets += 1
            async for message in ws:
                if message.type == aiohttp.WSMsgType.TEXT and message.data == "2":
                    await ws.send_str("3")
    except asyncio.CancelledError:
        raise
    except Exception:
        figures.websocket_failures += 1


async def _slowloris(host: str, port: int, figures: Figures) -> None:
    """Headers that never end, one byte every half second; notes when the server drops the connection."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return
    started = time.monotonic()
    figures.slowloris_open += 1
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
    try:
        for byte in request:
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                if await asyncio.wait_for(reader.read(1024), 0.5) == b"":
                    break  # closed by the server
            except TimeoutError:
                continue
            break  # an answer before the headers ended is a drop too
        figures.slowloris_dropped_after_s.append(time.monotonic() - started)
    except OSError:
        figures.slowloris_dropped_after_s.append(time.monotonic() - started)
    finally:
        figures.slowloris_open -= 1
        writer.close()


async def _long_poll(http: aiohttp.ClientSession, url: str, figures: Figures) -> None:
    figures.long_polls_open += 1
    try:
        timeout = aiohttp.ClientTimeout(total=60)
        async with http.get(url + "&wait=30", timeout=timeout) as answer:
            body = await answer.json()
            if answer.status != 200:
                figures.long_poll_failures.append(f"{answer.status} {body}")
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        figures.long_poll_failures.append(repr(exc))
    finally:
        figures.long_polls_open -= 1


async def _login(url: str, name: str) -> aiohttp.ClientSession:
    # unsafe: keep cookies of an IP address (127.0.0.1), which aiohttp drops by default
    http = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), cookie_jar=aiohttp.CookieJar(unsafe=True)
    )
    async with http.post(url + "/api/login", json={"name": name}) as answer:
        assert answer.status == 200, await answer.text()
    return http


async def _moves(http: aiohttp.ClientSession, url: str, game_id: str) -> int:
    """How many of the game's events are a seat's own act (a proposal, a pass, a reply, crafting)."""
    async with http.get(f"{url}/api/games/{game_id}/events?after=-1", timeout=aiohttp.ClientTimeout(10)) as r:
        return sum(1 for event in (await r.json())["events"] if event.get("actor") is not None)


async def _bot_game(http: aiohttp.ClientSession, url: str) -> str:
    seats = [{"kind": "bot", "bot": "random"}, {"kind": "bot", "bot": "random"}]
    async with http.post(url + "/api/games", json={"hall": "duel", "seats": seats}) as created:
        assert created.status == 201, await created.text()
        return str((await created.json())["game"]["game_id"])


async def run_load(
    url: str,
    server: Server,
    websockets: int = 1000,
    slowloris: int = 300,
    long_polls: int = 300,
    healthz_requests: int = 200,
    users: int = 20,
    measure_budget_s: float = 60,
) -> Figures:
    figures = Figures()
    host, port = url.removeprefix("http://").split(":")
    tasks: list[asyncio.Task[None]] = []
    sessions = [await _login(url, f"Poller {i}") for i in range(users)]
    owner = sessions[0]
    try:
        sockets_http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        sessions.append(sockets_http)
        for start in range(0, websockets, 100):  # handshakes in batches, as clients arrive
            batch = [asyncio.create_task(_hold_websocket(sockets_http, url, figures)) for _ in range(100)]
            tasks += batch[: websockets - start]
            for extra in batch[websockets - start :]:
                extra.cancel()
            expected = min(start + 100, websockets)
            await _until(lambda: figures.websockets + figures.websocket_failures >= expected, 30)  # noqa: B023
        game_id = await _bot_game(owner, url)  # the long polls wait on it
        tasks += [asyncio.create_task(_slowloris(host, int(port), figures)) for _ in range(slowloris)]
        poll_url = f"{url}/api/games/{game_id}/events?after=1000000"
        tasks += [
            asyncio.create_task(_long_poll(sessions[i % users], poll_url, figures)) for i in range(long_polls)
        ]
        await _until(lambda: figures.slowloris_open >= slowloris, 20)
        await asyncio.sleep(2)  # the long polls reach the server and wait
        # a game started under the whole load: every act in it was played under the load (a game started
        # earlier may have ended before the measurement)
        moves_game = await _bot_game(owner, url)
        figures.bot_log_before = 0
        await _measure_healthz(url, figures, healthz_requests, measure_budget_s)
        figures.held = {
            "websockets": figures.websockets,
            "slowloris": figures.slowloris_open,
            "long_polls": figures.long_polls_open,
        }
        figures.rss_mb = server.status("VmRSS") / 1024
        figures.threads = server.status("Threads")
        await asyncio.sleep(1)
        figures.bot_log_after = await _moves(owner, url, moves_game)
        await _until(lambda: figures.slowloris_open == 0, 40)  # the header timeout drops them
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for http in sessions:
            await http.close()
    return figures


async def _until(condition: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


async def _measure_healthz(url: str, figures: Figures, requests: int, budget_s: float) -> None:
    """``requests`` sequential GET /healthz, each on a new connection (the accept loop is measured too)."""
    deadline = time.monotonic() + budget_s
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        for _ in range(requests):
            if time.monotonic() > deadline:
                figures.healthz_failures += 1
                continue
            started = time.perf_counter()
            try:
                async with http.get(url + "/healthz", timeout=aiohttp.ClientTimeout(total=5)) as answer:
                    await answer.read()
                    ok = answer.status == 200
            except Exception:
                ok = False
            if ok:
                figures.healthz_ms.append((time.perf_counter() - started) * 1000)
            else:
                figures.healthz_failures += 1
            await asyncio.sleep(0.01)


#: The costliest craftable queries the review found (count 64), sent as a flood.
HEAVY_QUERY_ITEMS = (
    "powered_rail",
    "detector_rail",
    "grindstone",
    "iron_axe",
    "orange_carpet",
    "activator_rail",
)


@dataclass
class QueryFlood:
    answers: dict[str, int] = field(default_factory=dict)  # "ok" or an error code -> how many
    healthz_ms: list[float] = field(default_factory=list)
    healthz_failures: int = 0
    worker_pids_before: list[int] = field(default_factory=list)
    worker_pids_after: list[int] = field(default_factory=list)


async def _query_socket(
    http: aiohttp.ClientSession, url: str, game_id: str, queries: int, flood: QueryFlood
) -> None:
    """One Socket.IO connection (the user's cookie) that sends ``queries`` craftable queries without waiting
    for their answers, then counts the answers that come."""
    ws_url = url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
    async with http.ws_connect(ws_url) as ws:
        assert (await ws.receive_str()).startswith("0{")
        await ws.send_str("40")
        assert (await ws.receive_str()).startswith("40")
        for i in range(queries):
            item = HEAVY_QUERY_ITEMS[i % len(HEAVY_QUERY_ITEMS)]
            query = {"type": "craftable", "item": item, "count": 64}
            await ws.send_str(f'42{i}["query",{{"game_id":"{game_id}","query":{json.dumps(query)}}}]')
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            if message.data == "2":
                await ws.send_str("3")
            elif message.data.startswith("43"):
                answer = json.loads(message.data[message.data.index("[") :])[0]
                key = "ok" if answer["ok"] else answer["error"]["code"]
                flood.answers[key] = flood.answers.get(key, 0) + 1


async def run_query_flood(
    url: str, server: Server, sockets: int, queries: int, healthz_requests: int = 200
) -> QueryFlood:
    """``sockets`` connections of one seated player each send ``queries`` heavy queries at once while
    /healthz is measured."""
    flood = QueryFlood(worker_pids_before=server.processes()[1:])
    http = await _login(url, "Asker")
    try:
        seats = [{"kind": "open"}, {"kind": "bot", "bot": "random"}]
        async with http.post(url + "/api/games", json={"hall": "duel", "seats": seats, "join": True}) as made:
            assert made.status == 201, await made.text()
            game_id = (await made.json())["game"]["game_id"]
        tasks = [
            asyncio.create_task(_query_socket(http, url, game_id, queries, flood)) for _ in range(sockets)
        ]
        await asyncio.sleep(0.5)
        figures = Figures()
        await _measure_healthz(url, figures, healthz_requests, 120)
        flood.healthz_ms, flood.healthz_failures = figures.healthz_ms, figures.healthz_failures
        flood.worker_pids_after = server.processes()[1:]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await http.close()
    return flood


async def slow_body_dropped_after(
    host: str, port: int, byte_every_s: float = 2, limit_s: float = 60
) -> tuple[float, bytes]:
    """Headers at once, then a body of 100 bytes one byte every ``byte_every_s``: seconds until the server
    closed the connection, and what it answered."""
    reader, writer = await asyncio.open_connection(host, port)
    started = time.monotonic()
    head = (
        f"POST /api/login HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n"
    )
    writer.write(head.encode())
    answer = b""
    try:
        while time.monotonic() - started < limit_s:
            writer.write(b" ")
            await writer.drain()
            try:
                chunk = await asyncio.wait_for(reader.read(4096), byte_every_s)
            except TimeoutError:
                continue
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    finally:
        writer.close()
    return time.monotonic() - started, answer
