"""Fuzz a live server: over 10,000 generated malformed requests over REST and Socket.IO (real sockets).

Needs a real server process: frames that are not Socket.IO packets reach only a real socket.

A game is left mid-play; then an anonymous client, a logged-in outsider and one of the game's own players send
malformed requests to every route and event (bodies the JSON parser refuses, wrong types, junk fields, huge
and odd numbers, hostile strings, unknown ids) plus frames that are not Socket.IO packets at all. Asserted:
no HTTP 5xx and no ``internal_error`` answer, no traceback or ERROR line in the server log, and the game's
digest (every seat's events and view, the researcher view, the number of games) unchanged.

Generation is seeded (reproducible); connections are reused (HTTP keep-alive, one Socket.IO connection per
identity), and the three transports run concurrently, so the whole test takes a few tens of seconds.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import requests
import simple_websocket
from e2e_helpers import DUEL_TRADE, Client, MakeServer, ServerProcess

from server.game.actions import PLAYER_ACTION_TYPES
from server.game.queries import QUERY_MODELS

SEED = 20261124
REST_REQUESTS = 5_600
SOCKET_EVENTS = 3_000
RAW_FRAMES = 1_500
ADMIN_PASSWORD = "fuzz-admin-password"

HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "\u202e",
    "\ud800",
    "<script>alert(1)</script>",
    "'; DROP TABLE games; --",
    "../../etc/passwd",
    "{{7*7}}",
    "%00",
    "1e10000000",
    "1/0",
    "-1/3",
    "0/0",
    "1/" + "7" * 40,
    "9" * 60,
    "\u00b2",  # str.isdigit() says yes, int() says no
    "\u0663\u00b2",  # an Arabic-Indic three, then a superscript two
    "\uff11",  # a full-width one
    "NaN",
    "-Infinity",
    "x" * 3000,
    "minecraft:torch",
    "#minecraft:planks",
    "tc_" + "a" * 40,
]
NUMBERS: list[Any] = [0, -1, 1, 2**31, 2**63, -(2**70), 10**300, 1e308, -0.0, 0.5, 1e-300, True, False]
FIELDS = [
    "game_id", "seat", "client_action_id", "type", "runs", "recipe", "offer", "request", "to", "accept",
    "message", "choices", "hall", "seats", "name", "password", "query", "after", "limit", "wait", "join",
    "instance_id", "seed", "action", "v0", "v1", "v2", "item", "target", "status", "scopes",
]  # fmt: skip


class Junk:
    """Seeded generators of malformed values, JSON texts and bodies."""

    def __init__(self, rng: random.Random, game_id: str) -> None:
        self.rng = rng
        self.game_id = game_id

    def scalar(self) -> Any:
        pick = self.rng.random()
        if pick < 0.45:
            return self.rng.choice(HOSTILE_STRINGS)
        if pick < 0.85:
            return self.rng.choice(NUMBERS)
        return None

    def value(self, depth: int = 0) -> Any:
        pick = self.rng.random()
        if depth > 3 or pick < 0.5:
            return self.scalar()
        if pick < 0.7:
            return [self.value(depth + 1) for _ in range(self.rng.randrange(4))]
        return self.obj(depth + 1)

    def obj(self, depth: int = 0) -> dict[str, Any]:
        data = {self.rng.choice(FIELDS): self.value(depth) for _ in range(self.rng.randrange(1, 5))}
        if self.rng.random() < 0.5:
            data["game_id"] = self.game_id
        return data

    def action_obj(self) -> dict[str, Any]:
        """An action that can never be valid: it always carries a field no action model has."""
        data = self.obj()
        data["type"] = self.rng.choice([*PLAYER_ACTION_TYPES, "timeout", "resign", "craft"])
        data["\u2603 not a field"] = self.value()
        return data

    def body(self) -> bytes:
        pick = self.rng.randrange(12)
        if pick == 0:
            return b'{"name": "\xff\xfe\xfd"}'
        if pick == 1:
            depth = self.rng.choice([100, 1000, 5000])
            return b'{"a": ' + b"[" * depth + b"]" * depth + b"}"
        if pick == 2:
            return b'{"runs": ' + b"9" * self.rng.choice([500, 5000]) + b"}"
        if pick == 3:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 200)))
        if pick == 4:
            text = json.dumps(self.obj())
            return text[: self.rng.randrange(len(text))].encode()
        if pick == 5:
            return self.rng.choice([b"null", b"[]", b'"x"', b"NaN", b"1e999", b"-Infinity", b"{", b"{}}"])
        if pick == 6:
            return json.dumps({"action": self.action_obj(), "game_id": self.game_id}).encode()
        if pick == 7:
            return b'{"name": "\\ud800\\udfff\\ud800"}'
        if pick == 8:
            return json.dumps(self.value()).encode()
        return json.dumps(self.action_obj() if self.rng.random() < 0.5 else self.obj()).encode()

    def game_ref(self) -> str:
        return self.rng.choice([self.game_id, self.game_id, "nope", "..%2F..", "x" * 300, "%00", "0"])


def rest_routes(junk: Junk) -> list[tuple[str, str]]:
    """(method, path template) for every REST route; {g} is a game reference."""
    routes = [
        ("POST", "/api/login"),
        ("POST", "/api/games"),
        ("GET", "/api/games"),
        ("GET", "/api/halls"),
        ("GET", "/api/me"),
        ("GET", "/api/actions"),
        ("GET", "/api/errors"),
        ("GET", "/api/games/{g}"),
        ("POST", "/api/games/{g}/join"),
        ("GET", "/api/games/{g}/view"),
        ("GET", "/api/games/{g}/events"),
        ("GET", "/api/games/{g}/replay"),
        ("POST", "/api/games/{g}/actions"),
        ("POST", "/api/games/{g}/query"),
        ("GET", "/api/rulesets/minecraft/items"),
        ("POST", "/api/admin/login"),
        ("GET", "/api/admin/tokens"),
        ("POST", "/api/admin/tokens"),
        ("DELETE", "/api/admin/tokens/{g}"),
        ("GET", "/api/admin/games/{g}"),
        ("POST", "/api/admin/games/{g}/abort"),
        ("GET", "/api/admin/games/{g}/export"),
        ("GET", "/api/admin/games"),
        ("PUT", "/api/games/{g}"),
        ("PATCH", "/api/games"),
        ("GET", "/healthz"),
        ("POST", "/healthz"),
        ("GET", "/games/{g}/replay"),
        ("GET", "/socket.io/"),
    ]
    routes += [("POST", f"/api/games/{{g}}/actions/{t}") for t in PLAYER_ACTION_TYPES]
    routes += [("POST", f"/api/games/{{g}}/query/{t}") for t in QUERY_MODELS]
    return routes


QUERY_ARGS = ["seat", "after", "wait", "limit", "status", "view", "step", "turn"]


def query_string(junk: Junk) -> str:
    if junk.rng.random() < 0.5:
        return ""
    parts = []
    for _ in range(junk.rng.randrange(1, 4)):
        value = junk.scalar()
        text = json.dumps(value) if not isinstance(value, str) else value
        quoted = requests.utils.quote(text[:400].encode("utf-8", errors="surrogatepass"))
        parts.append(f"{junk.rng.choice(QUERY_ARGS)}={quoted}")
    return "?" + "&".join(parts)


LONG_DIGITS = re.compile(r"\d{60}")

HEADER_CHOICES: list[dict[str, str]] = [
    {"Content-Type": "application/json"},
    {"Content-Type": "text/plain"},
    {"Content-Type": "application/x-www-form-urlencoded"},
    {"Content-Type": "application/json; charset=latin-1"},
    {"Content-Type": "application/json", "Authorization": "Bearer tc_forged"},
    {"Content-Type": "application/json", "Authorization": "Basic !!!notbase64"},
    {"Content-Type": "application/json", "Authorization": "Basic YWRtaW46d3Jvbmc="},  # admin:wrong
    {"Content-Type": "application/json", "Idempotency-Key": "x" * 500},
]


def error_code(answer: requests.Response) -> str | None:
    if not answer.headers.get("Content-Type", "").startswith("application/json"):
        return None
    body = answer.json()
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


# ------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(admin_password=ADMIN_PASSWORD)


def _never_an_action(data: bytes) -> bytes:
    """``data`` if the JSON parser refuses it, else wrapped under a field no action has."""
    try:
        parsed = json.loads(data or b"null")
    except (ValueError, RecursionError):
        return data
    return json.dumps({"\u2603 not a field": parsed}).encode()


def digest(server: ServerProcess, admin: requests.Session, players: list[Client], game_id: str) -> str:
    parts: list[Any] = []
    for player in players:
        parts.append(player.rest("GET", f"/api/games/{game_id}/events")[1]["events"])
        parts.append(player.rest("GET", f"/api/games/{game_id}/view")[1]["view"])
    researcher = admin.get(f"{server.url}/api/admin/games/{game_id}", timeout=10).json()
    parts.append(researcher["view"])
    parts.append(len(admin.get(f"{server.url}/api/admin/games?limit=10000", timeout=10).json()["games"]))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------------------ the fuzz
@pytest.mark.slow
def test_ten_thousand_malformed_requests_break_nothing(server: ServerProcess) -> None:
    p0 = Client(server.url, "Fuzz P0").connect()
    p1 = Client(server.url, "Fuzz P1").connect()
    outsider = Client(server.url, "Fuzz Outsider").connect()
    anonymous = Client(server.url).connect()
    admin = requests.Session()
    assert admin.post(f"{server.url}/api/admin/login", json={"password": ADMIN_PASSWORD}, timeout=10).ok
    game_id = p0.call("create_game", {"hall": "duel", "join": True})["game"]["game_id"]
    assert p1.call("join", {"game_id": game_id})["ok"]
    p1.wait_log(game_id, 2)
    assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]  # mid-play: seat 1 must decide
    before = digest(server, admin, [p0, p1], game_id)
    log_start = len(server.log())

    statuses: Counter[int] = Counter()
    failures: list[str] = []
    lock = threading.Lock()

    def note(problem: str) -> None:
        with lock:
            if len(failures) < 20:
                failures.append(problem)

    def fuzz_rest(worker: int, count: int) -> None:
        junk = Junk(random.Random(SEED + worker), game_id)
        routes = rest_routes(junk)
        sessions = [requests.Session(), outsider.http, p0.http] if worker == 0 else [anonymous.http, p1.http]
        for _ in range(count):
            method, template = junk.rng.choice(routes)
            path = template.replace("{g}", junk.game_ref()) + query_string(junk)
            session = junk.rng.choice(sessions)
            if worker == 0 and method == "GET" and path.startswith("/api/admin/") and junk.rng.random() < 0.5:
                session = admin  # the admin's own reads parse query text too (abort and tokens change state)
            if path.startswith("/api/login") and session in (p0.http, p1.http):
                session = anonymous.http  # a player who logs in again becomes someone else: not the point
            headers = junk.rng.choice(HEADER_CHOICES)
            data = junk.body() if method in ("POST", "PUT", "PATCH", "DELETE") else None
            if "/actions/resign" in path and session in (p0.http, p1.http) and data is not None:
                # resign has no fields: an empty, null or {} body from a seated player is a valid request
                data = _never_an_action(data)
            answer = session.request(method, server.url + path, data=data, headers=headers, timeout=30)
            with lock:
                statuses[answer.status_code] += 1
            if answer.status_code >= 500 or error_code(answer) == "internal_error":
                note(f"{method} {path[:80]} -> {answer.status_code} {answer.text[:200]}")

    events = ["whoami", "lobby", "create_game", "join", "watch", "leave", "view", "events", "act", "query"]
    events += [*PLAYER_ACTION_TYPES, "no_such_event"]

    def fuzz_socket(count: int) -> None:
        junk = Junk(random.Random(SEED + 7), game_id)
        for i in range(count):
            client = (p0, outsider, anonymous)[i % 3]
            event = junk.rng.choice(events)
            pick = junk.rng.random()
            if event == "act" or event in PLAYER_ACTION_TYPES:
                data: Any = {"game_id": junk.game_ref(), "action": junk.action_obj(), **junk.action_obj()}
                data["\u2603 not a field"] = 1
            elif event == "leave" and client is p0:
                data = {"game_id": "not-this-game"}
            else:
                data = junk.obj() if pick < 0.7 else junk.value()
            if event == "no_such_event" or LONG_DIGITS.search(json.dumps(data)):
                # unknown events get no answer; the server's packet parser drops frames with integers of
                # more than a few dozen digits before any handler sees them, so neither can be acknowledged
                client.sio.emit(event, data)  # type: ignore[union-attr]
                continue
            answer = client.sio.call(event, data, timeout=30)  # type: ignore[union-attr]
            if not isinstance(answer, dict) or "ok" not in answer:
                note(f"socket {event}: untyped answer {answer!r:.200}")
            elif not answer["ok"] and answer["error"]["code"] == "internal_error":
                note(f"socket {event}: {answer!r:.300}")
            elif answer["ok"] and event in ("act", "create_game", *PLAYER_ACTION_TYPES):
                note(f"socket {event} was accepted: {data!r:.300}")

    def fuzz_frames(count: int) -> None:
        junk = Junk(random.Random(SEED + 11), game_id)
        url = server.url.replace("http", "ws") + "/socket.io/?EIO=4&transport=websocket"

        def open_socket() -> simple_websocket.Client:
            ws = simple_websocket.Client.connect(url)
            ws.receive(timeout=10)
            ws.send("40")
            ws.receive(timeout=10)
            return ws

        def still_answers(ws: simple_websocket.Client) -> None:
            ws.send('42999["whoami",{}]')
            deadline = time.monotonic() + 10
            answer = ""
            while not answer.startswith("43999") and time.monotonic() < deadline:
                answer = ws.receive(timeout=10) or ""  # pings and acks of garbage events come first
            if not answer.startswith("43999"):
                note(f"raw frames: no answer to whoami ({answer[:100]})")

        ws = open_socket()
        for sent in range(count):
            body = junk.body().decode("utf-8", errors="replace")
            frame = junk.rng.choice(["42", "43", "4", "45", "421", "2", "6", "9", "", "41"]) + body
            try:
                ws.send(frame if junk.rng.random() < 0.9 else frame.encode("utf-8", errors="replace"))
            except (simple_websocket.ConnectionClosed, OSError):
                ws = open_socket()  # the server may close a connection that sends garbage
            if sent % 300 == 299:  # garbage may have disconnected the namespace: a fresh connection answers
                ws.close()
                ws = open_socket()
                still_answers(ws)
        ws.close()

    started = time.monotonic()
    jobs: list[tuple[Callable[..., None], tuple[Any, ...]]] = [
        (fuzz_rest, (0, REST_REQUESTS // 2)),
        (fuzz_rest, (1, REST_REQUESTS // 2)),
        (fuzz_socket, (SOCKET_EVENTS,)),
        (fuzz_frames, (RAW_FRAMES,)),
    ]
    errors: list[BaseException] = []

    def run(job: Callable[..., None], args: tuple[Any, ...]) -> None:
        try:
            job(*args)
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    if errors:
        raise errors[0]

    total = sum(statuses.values()) + SOCKET_EVENTS + RAW_FRAMES
    print(
        f"fuzz: {total} malformed requests in {elapsed:.1f} s; HTTP statuses {dict(sorted(statuses.items()))}"
    )
    assert total >= 10_000
    assert not failures, "\n".join(failures)
    assert not [code for code in statuses if code >= 500], statuses
    assert requests.get(server.url + "/healthz", timeout=10).json()["status"] == "ok"
    logged = server.log()[log_start:]
    assert "Traceback" not in logged, logged[logged.index("Traceback") - 2000 :][:6000]
    error_lines = [line for line in logged.splitlines() if " ERROR " in line]
    assert not error_lines, error_lines[:5]
    assert digest(server, admin, [p0, p1], game_id) == before
    # and the game still plays
    assert p1.act(game_id, "decide", accept=True, message="fine")["ok"]
    for client in (p0, p1, outsider, anonymous):
        client.close()
