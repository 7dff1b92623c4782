"""Fuzz a live server: over 10,000 generated malformed requests over REST and Socket.IO (real sockets).

Needs a real server process: frames that are not Socket.IO packets reach only a real socket.

A game is left mid-play; then an anonymous client, a logged-in outsider and one of the game's own players send
malformed requests to every route and event (bodies the JSON parser refuses, wrong types, junk fields, huge
and odd numbers, hostile strings, unknown ids) plus frames that are not Socket.IO packets at all. Asserted:
no HTTP 5xx and no ``internal_error`` answer, no traceback or ERROR line in the server log, and the game's
digest (every seat's events and view, the researcher view, the number of games) unchanged.

Issue 18's surfaces run alongside: bursts of hundreds of Socket.IO events from one connection (each answered,
``rate_limited`` once over the limit) and ``cancel_game`` with junk; junk ``Origin``, ``Referer``,
``Content-Type``, ``Authorization``, ``X-Forwarded-For`` headers (with requests that would act if the
cross-site rule let them through) and raw HTTP with duplicated, oversized and odd ``Host`` headers; junk and
ended session cookies (one copied before a logout); the hostile names of the name rule at login, as bot seat
names and as token names (``invalid_name`` each time). The server log must hold no raw control character
(newlines, ESC and U+2028 injected through paths, names and event names reach it escaped) and stay small per
request.

Generation is seeded (reproducible); connections are reused (HTTP keep-alive, one Socket.IO connection per
identity), and the three transports run concurrently, so the whole test takes a few tens of seconds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import itsdangerous
import pytest
import requests
import simple_websocket
import socketio
from e2e_helpers import DUEL_TRADE, Client, MakeServer, ServerProcess

from server.game.actions import PLAYER_ACTION_TYPES
from server.game.queries import QUERY_MODELS

SEED = 20261124
REST_REQUESTS = 5_600
SOCKET_EVENTS = 3_000
RAW_FRAMES = 1_500
FLOOD_BURSTS = 6
FLOOD_BURST_EVENTS = 300
HEADER_REQUESTS = 1_200
RAW_HTTP_REQUESTS = 300
COOKIE_REQUESTS = 600
SESSION_COOKIE = "tradecraft_session"
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
        ("POST", "/api/games/{g}/cancel"),
        ("POST", "/api/games/{g}/traces"),
        ("POST", "/api/logout"),
        ("GET", "/api/me/games"),
        ("GET", "/api/bots"),
        ("GET", "/api/rulesets"),
        ("GET", "/api/queries"),
        ("GET", "/api/schemas"),
        ("POST", "/api/admin/logout"),
        ("POST", "/api/admin/users/{g}/end-sessions"),
        ("GET", "/api/admin/settings"),
        ("GET", "/api/admin/halls/{g}/instances"),
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


# ------------------------------------------------------------------------------------- issue 18's surfaces
# Names the name rule refuses whoever carries them (a person, a bot seat, an API token): fillers and blanks,
# combining marks alone or stacked, mixed scripts, reserved words, separators, bidi and other controls.
HOSTILE_NAMES = [
    "\u3164", "Ada\u3164", "\uffa0", "Ada\uffa0Bob", "\u2800", "Bo\u2800b", "\u115f\u1160",
    "\u0301", "\u0301\u0302\u0303", "\u0489\u0489", "e" + "\u0301" * 39, "Zal\u0300\u0301\u0302\u0303go",
    "\u0410d\u0430", "B\u03bfb", "P\u0430ypal", "\u0430dmin", "r\u0430ndom",
    "admin", "ADMIN", "Admin (server)", "Player 1 (you)", "player 2", "server", "System", "you", "Moderator",
    "Ada\u2028FORGED name line", "Ada\u2029", "\u202eAda", "Ada\u2066x\u2069", "\u200fAda", "Ada\u200b",
    "Ada\u200d", "Ada\nFORGED name line", "Ada\r\n[ERROR] FORGED", "Ada\x1b[2J\x1b[31mred", "\x00", "Ada\x7f",
    "\ufeffAda", "\U000e0041da", "\ue000", "\ud800", "", " ", "\u3000", "x" * 41, "a" * 200,
]  # fmt: skip
# ... and for a person's display name also what reads as a bot (bot seats and tokens may)
BOT_LIKE_NAMES = [
    "random bot",
    "tom1 bot",
    "tom1bot",
    "random",
    "Bot",
    "my llm",
    "RANDOM BOT",
    "bots",
    "\uff22\uff4f\uff54",
]

# Origins (and Referers) a page of another site may send: every one is refused for a cookie-carried request.
FOREIGN_ORIGINS = [
    "http://evil.example", "null", "http://localhost:{port}", "http://127.0.0.1:1", "https://evil.example:443",
    "http://127.0.0.1.evil.example:{port}", "http://evil.example:{port}", "http://127.0.0.1:{port}@evil.example",
    "http://" + "e" * 5000 + ".example", "file://", "javascript:alert(1)", "http://evil.example\x1b[31mFORGED",
]  # fmt: skip
FOREIGN_REFERERS = [
    "http://evil.example/page?x=1", "null", "//evil.example/", "https://127.0.0.1.evil.example:{port}/",
    "not a url", "http://localhost:{port}/lobby", "\x1b[2JFORGED referer",
    "http://evil.example/" + "r" * 9000,
]  # fmt: skip
# Other origins: the server's own in odd spellings, broken ones and junk (sent with bodies that never act).
ODD_ORIGINS = [
    "http://127.0.0.1:{port}", "HTTP://127.0.0.1:{port}", "http://127.0.0.1:{port}/", "http://127.0.0.1:{port}/x?y",
    "", "http://", "://", "http://[::1", "http://127.0.0.1:99999999999", "\x00", "http://127.0.0.1:{port}\x00",
    "x" * 9000, "http://127.0.0.1:{port}, http://evil.example",
]  # fmt: skip
# Content types a form or a no-cors fetch can send: refused before any route reads the body.
FORM_CONTENT_TYPES = [
    "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data",
    "multipart/form-data; boundary=----x",
]  # fmt: skip
ODD_CONTENT_TYPES = [
    "application/json; charset=utf-8", "application/json; charset=latin-1",
    'application/json; charset="utf-8"', "application/json;;;", "application/json; x=" + "y" * 3000,
    "APPLICATION/JSON", "application/json, text/plain",
    "application/jsonp", "application/json\x00", "text/json", "application/ld+json", "", ";", "*/*",
    "application/json; charset=utf-16", "application/json; charset=\x1b[31m", "application/json; boundary=--",
]  # fmt: skip
JUNK_AUTHORIZATION = [
    "Bearer", "Bearer ", "Bearer tc_" + "x" * 5000, "Bearer tc_\x00\x1b", "Bearer a b c", "bearer tc_forged",
    "Basic", "Basic =", "Basic " + base64.b64encode(b"admin").decode(),
    "Basic " + base64.b64encode(b":").decode(),
    "Basic " + base64.b64encode(b"admin:\xff\xfe").decode(), "Basic " + "A" * 10000, "Digest username=admin",
    "Negotiate \x7f", "Basic YWRtaW46d3Jvbmc=",
]  # fmt: skip
JUNK_FORWARDED_FOR = [
    "1.2.3.4", "x" * 5000, "\x1b[31mFORGED", "::1, 127.0.0.1, evil", "' OR 1=1 --", "999.999.999.999",
    ", , ,", "127.0.0.1\x00",
]  # fmt: skip
# Paths that try to forge log lines and style the terminal; the log must carry them escaped.
INJECTING_PATHS = [
    "/api/games/x%0aFORGED path line%1b[31m", "/api/nope%0d%0a2026-01-01 ERROR FORGED", "/x%E2%80%A8FORGED",
    "/api/games/%1b]0;title%07%1b[2J/view", "/api/admin/games/%0aFORGED/export?seat=1%0A", "/%C2%85FORGED",
]  # fmt: skip
# A raw control character in a log (but the log's own line ends): an injection got through.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def header_value(template: str, port: int) -> bytes:
    """A header value as bytes (http.client sends str values as latin-1, which not every junk value is)."""
    return template.replace("{port}", str(port)).encode("utf-8", errors="surrogatepass")


def raw_http(port: int, request: bytes, timeout: float = 20) -> int:
    """Send ``request`` on a fresh connection, close the sending side; the answer's status, 0 when the server
    closes without one."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(request)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close a request it refuses before reading all of it
        data = b""
        try:
            while b"\r\n" not in data and len(data) < 1000:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    match = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(match.group(1)) if match else 0


def raw_requests(junk: Junk, port: int, cookie: str) -> list[bytes]:
    """Requests no HTTP library sends: duplicated and conflicting headers, odd Host headers, oversized header
    lines, too many headers, broken request lines and lengths, raw control bytes in the path."""
    rng = junk.rng
    host = f"127.0.0.1:{port}".encode()
    body = json.dumps(junk.action_obj()).encode()
    path = f"/api/games/{junk.game_ref()}/actions".encode()
    hosts = [
        b"", b"evil.example", b"127.0.0.1:99999999", b"[::1", b"h" * 9000,
        b"127.0.0.1:" + str(port).encode() + b"\x1bFORGED", b"\xff\xfe", b"127.0.0.1, evil.example",
        b" 127.0.0.1", b"localhost:0",
    ]  # fmt: skip

    def post(headers: list[bytes], data: bytes = body, target: bytes = path) -> bytes:
        lines = [b"POST " + target + b" HTTP/1.1", *headers, b"Content-Length: " + str(len(data)).encode()]
        return b"\r\n".join(lines) + b"\r\n\r\n" + data

    cookie_line = b"Cookie: " + cookie.encode()
    json_type = b"Content-Type: application/json"
    pick = rng.randrange(14)
    if pick == 0:  # two Content-Types, each order
        types = [json_type, b"Content-Type: text/plain"]
        rng.shuffle(types)
        return [post([b"Host: " + host, cookie_line, *types])]
    if pick == 1:
        return [post([b"Host: " + rng.choice(hosts), cookie_line, json_type])]
    if pick == 2:  # two Host headers, or none at all
        extra = [b"Host: evil.example"] if rng.random() < 0.5 else []
        return [post([b"Host: " + host, *extra, cookie_line, json_type])]
    if pick == 3:  # oversized header line (beyond the server's line limit, or just under)
        size = rng.choice([8_000, 60_000, 70_000, 200_000])
        return [post([b"Host: " + host, b"X-Junk: " + b"x" * size, json_type])]
    if pick == 4:  # too many headers
        many = [b"X-H%d: %d" % (i, i) for i in range(rng.choice([99, 150, 1000]))]
        return [post([b"Host: " + host, *many, json_type])]
    if pick == 5:  # a Content-Length that lies, is negative or junk
        length = rng.choice([b"-1", b"abc", b"99999999999999999999", b"10, 20", b"1e3"])
        head = [b"POST " + path + b" HTTP/1.1", b"Host: " + host, json_type, b"Content-Length: " + length]
        return [b"\r\n".join(head) + b"\r\n\r\n" + body]
    if pick == 6:  # chunked bodies, broken
        chunks = rng.choice([b"zz\r\n{}\r\n0\r\n\r\n", b"5\r\n{}\r\n", b"ffffffffffffffff\r\n{}", b"0\r\n"])
        head = [b"POST " + path + b" HTTP/1.1", b"Host: " + host, json_type, b"Transfer-Encoding: chunked"]
        return [b"\r\n".join(head) + b"\r\n\r\n" + chunks]
    if pick == 7:  # raw control bytes and separators in the request target
        target = rng.choice(
            [
                b"/api/x\x1b[31mFORGED",
                b"/api/\xe2\x80\xa8FORGED",
                b"/api/\x00",
                b"/api/games/\x7f/view",
                b"/\xff\xfe",
            ]
        )
        return [b"GET " + target + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"]
    if pick == 8:  # broken request lines (one with a bare line feed that tries to start a new log line)
        line = rng.choice(
            [b"GET /x\nFORGED request HTTP/1.1", b"GET", b"\x16\x03\x01\x02\x00", b"GET / HTTP/1.1.1",
             b"G\x1bT / HTTP/1.1", b"GET /" + b"p" * 70_000 + b" HTTP/1.1", b"PRI * HTTP/2.0"]
        )  # fmt: skip
        return [line + b"\r\nHost: " + host + b"\r\n\r\n"]
    if pick == 9:  # header folding, a header name of junk, a NUL in a value
        odd = rng.choice(
            [b"X-Fold: a\r\n b", b"X Bad Name: 1", b"X-Nul: a\x00b", b": empty name", b"X-Esc: \x1b[2J"]
        )
        return [post([b"Host: " + host, cookie_line, json_type, odd])]
    if pick == 10:  # an Origin header twice: the server's own and a foreign one
        origins = [b"Origin: http://" + host, b"Origin: http://evil.example"]
        rng.shuffle(origins)
        return [post([b"Host: " + host, json_type, *origins])]
    if pick == 11:  # two session cookies (junk and junk), and a cookie header of 300 cookies
        many = b"; ".join(b"c%d=%d" % (i, i) for i in range(300))
        return [
            post(
                [
                    b"Host: " + host,
                    b"Cookie: " + many,
                    b"Cookie: " + SESSION_COOKIE.encode() + b"=junk",
                    json_type,
                ]
            )
        ]
    if pick == 12:  # an HTTP/1.0 request without a Host, and a pipeline of two requests
        return [b"GET /api/me HTTP/1.0\r\n\r\n" + b"GET /api/me HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"]
    return [post([b"Host: " + host, cookie_line, json_type], target=rng.choice(INJECTING_PATHS).encode())]


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
    # issue 18's surfaces: flooders (a person, an agent's token, nobody), a namer, and a cookie copied before
    # its logout (its open socket is refused, with a typed answer, from then on)
    made = admin.post(f"{server.url}/api/admin/tokens", json={"name": "fuzz agent"}, timeout=10).json()
    flooders = [
        Client(server.url, "Fuzz Flooder").connect(),
        Client(server.url, token=made["token"]).connect(),
        Client(server.url).connect(),
    ]
    namer = Client(server.url, "Fuzz Namer").connect()
    leaver = Client(server.url, "Fuzz Leaver").connect()
    dead_cookie = leaver.http.cookies[SESSION_COOKIE]
    assert leaver.rest("POST", "/api/logout")[0] == 200
    leaver.wait_for(lambda: not leaver.sio.connected, what="the logged-out socket to be closed")
    leaver.http.cookies.set(SESSION_COOKIE, dead_cookie)
    leaver.reconnect()  # a socket opened with the copied cookie is nobody's
    assert leaver.call("whoami")["user"] is None
    after_logout = leaver.call("create_game", {"hall": "duel", "join": True})
    assert after_logout["error"]["code"] == "not_logged_in", after_logout
    before = digest(server, admin, [p0, p1], game_id)
    log_start = len(server.log())
    log_bytes_start = server.log_path.stat().st_size

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
            if path.startswith(("/api/login", "/api/logout")) and session in (
                p0.http,
                p1.http,
                outsider.http,
            ):
                session = (
                    anonymous.http
                )  # a player who logs in again or out becomes someone else: not the point
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
    events += ["cancel_game", "trace"]
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

    # -------------------------------------------------------------- issue 18's surfaces
    surfaces: Counter[str] = Counter()
    answers: Counter[str] = Counter()  # codes of the answers the new surfaces got, for the printed summary

    def count(surface: str, code: str | None = None, n: int = 1) -> None:
        with lock:
            surfaces[surface] += n
            if code is not None:
                answers[f"{surface}: {code}"] += n

    def answer_code(answer: Any) -> str | None:
        if not isinstance(answer, dict) or "ok" not in answer:
            return None
        return "ok" if answer["ok"] else str(answer["error"]["code"])

    def socket_junk(junk: Junk, event: str) -> Any:
        while True:
            if event == "cancel_game":
                data: Any = {"game_id": junk.game_ref()} if junk.rng.random() < 0.7 else junk.value()
                if isinstance(data, dict) and junk.rng.random() < 0.5:
                    data.update(junk.obj())
            elif event in ("act", *PLAYER_ACTION_TYPES):
                data = {"game_id": junk.game_ref(), "action": junk.action_obj(), "\u2603 not a field": 1}
            else:
                data = junk.obj() if junk.rng.random() < 0.7 else junk.value()
            if not LONG_DIGITS.search(json.dumps(data)):
                return data

    def fuzz_floods(flooders: list[Client], bursts: int, size: int) -> None:
        """Bursts of ``size`` events from one connection, sent without waiting: each gets a typed answer,
        those over the connection's limit ``rate_limited``, and the connection stays open."""
        junk = Junk(random.Random(SEED + 13), game_id)
        flood_events = [
            "whoami",
            "cancel_game",
            "cancel_game",
            "lobby",
            "view",
            "events",
            "leave",
            "query",
            "act",
        ]
        flood_events += ["propose", "decide", "create_game", "join", "watch"]
        for burst in range(bursts):
            client = flooders[burst % len(flooders)]
            got: list[Any] = []
            done = threading.Condition()

            def on_answer(*args: Any, _got: list[Any] = got, _done: threading.Condition = done) -> None:
                with _done:
                    _got.append(args[0] if len(args) == 1 else args)
                    _done.notify_all()

            for _ in range(size):
                event = junk.rng.choice(flood_events)
                client.sio.emit(event, socket_junk(junk, event), callback=on_answer)  # type: ignore[union-attr]
            with done:
                done.wait_for(lambda _got=got: len(_got) >= size, timeout=60)
            codes = Counter(answer_code(answer) for answer in got)
            for code, n in codes.items():
                count("socket floods", str(code), n)
            count("socket floods", "unanswered", size - len(got))
            if len(got) < size:
                note(
                    f"flood {burst}: {size - len(got)} of {size} events never answered (connected: "
                    f"{client.sio.connected})"
                )  # type: ignore[union-attr]
            if None in codes:
                note(
                    f"flood {burst}: untyped answers {[a for a in got if answer_code(a) is None][:3]!r:.300}"
                )
            if "internal_error" in codes or "rate_limited" not in codes:
                note(f"flood {burst}: answers {dict(codes)}")
            if not client.sio.connected:  # type: ignore[union-attr]
                note(f"flood {burst}: the server dropped the connection")
            time.sleep(0.2)
        # an injected event name reaches the log escaped (it has no handler: no answer)
        for name in ("\nFORGED event line", "x\x1b[2J\x1b[31m", "y\u2028FORGED", "z" * 5000):
            flooders[0].sio.emit(name, {"a": "\n\x1b"})  # type: ignore[union-attr]
            count("socket floods")

    def fuzz_headers(count_: int) -> None:
        """Junk Origin, Referer, Content-Type, Authorization and X-Forwarded-For headers on every route. A
        request whose headers are surely cross-site (a foreign origin, a form's content type) carries a body
        that would act if they were let through: a player's accept, resign, create-game, cancel, logout, an
        admin's abort, token and logout."""
        junk = Junk(random.Random(SEED + 17), game_id)
        rng = junk.rng
        routes = [r for r in rest_routes(junk) if r[1] != "/api/logout"]
        forged_acts: list[tuple[requests.Session, str, Any]] = [
            (p1.http, f"/api/games/{game_id}/actions/decide", {"accept": True, "message": "forged"}),
            (p1.http, f"/api/games/{game_id}/actions", {"action": {"type": "decide", "accept": True}}),
            (p1.http, f"/api/games/{game_id}/actions/resign", {}),
            (p0.http, f"/api/games/{game_id}/actions/resign", None),
            (p0.http, "/api/games", {"hall": "duel", "join": True}),
            (p0.http, f"/api/games/{game_id}/cancel", {}),
            (p1.http, "/api/logout", None),
            (outsider.http, f"/api/games/{game_id}/join", {}),
            (admin, f"/api/admin/games/{game_id}/abort", {"reason": "forged"}),
            (admin, "/api/admin/tokens", {"name": "forged token"}),
            (admin, "/api/admin/logout", None),
            (admin, f"/api/admin/users/{p0.user['id']}/end-sessions", {}),  # type: ignore[index]
        ]
        port = server.port
        for _ in range(count_):
            headers: dict[str, bytes] = {}
            forged = rng.random() < 0.4
            if forged:
                session, path, payload = rng.choice(forged_acts)
                method = "POST"
                if rng.random() < 0.6:
                    headers["Origin"] = header_value(rng.choice(FOREIGN_ORIGINS), port)
                    content_type = rng.choice([*ODD_CONTENT_TYPES, *FORM_CONTENT_TYPES, "application/json"])
                elif rng.random() < 0.5:
                    headers["Referer"] = header_value(rng.choice(FOREIGN_REFERERS), port)
                    content_type = rng.choice([*ODD_CONTENT_TYPES, *FORM_CONTENT_TYPES, "application/json"])
                else:  # a same-origin (or origin-less) request that only a form could send: not JSON
                    if rng.random() < 0.5:
                        headers["Origin"] = header_value(rng.choice(ODD_ORIGINS[:4]), port)
                    content_type = rng.choice(FORM_CONTENT_TYPES)
                headers["Content-Type"] = content_type.encode()
                if rng.random() < 0.3:  # the cookie decides who the caller is, whatever else is sent
                    headers["Authorization"] = rng.choice(JUNK_AUTHORIZATION).encode("utf-8")
                if payload is None:
                    data = b"" if rng.random() < 0.5 else b"{}"
                elif content_type.startswith("application/x-www-form"):
                    data = b"payload=" + requests.utils.quote(json.dumps(payload)).encode()
                else:
                    data = json.dumps(payload).encode()
            else:
                method, template = rng.choice(routes)
                path = template.replace("{g}", junk.game_ref()) + query_string(junk)
                session = rng.choice([p0.http, p1.http, outsider.http, anonymous.http])
                data = _never_an_action(junk.body()) if method != "GET" else None
                for name, choices in (
                    ("Origin", [*ODD_ORIGINS, *FOREIGN_ORIGINS]),
                    ("Referer", [*FOREIGN_REFERERS, *ODD_ORIGINS]),
                    ("Content-Type", [*ODD_CONTENT_TYPES, *FORM_CONTENT_TYPES]),
                    ("Authorization", JUNK_AUTHORIZATION),
                    ("X-Forwarded-For", JUNK_FORWARDED_FOR),
                ):
                    if rng.random() < 0.4:
                        headers[name] = header_value(rng.choice(choices), port)
                if rng.random() < 0.1:
                    headers["X-Junk"] = b"j" * rng.choice([100, 8_000, 70_000])
            try:
                answer = session.request(method, server.url + path, data=data, headers=headers, timeout=30)
            except requests.ConnectionError:
                count("headers", "closed")  # e.g. a header line beyond the server's limit: refused, closed
                continue
            code = error_code(answer) if answer.status_code >= 400 else "ok"
            count("headers", f"{answer.status_code} {code}")
            if answer.status_code >= 500 or code == "internal_error":
                note(
                    f"headers {method} {path[:80]} {headers!r:.200} -> {answer.status_code} "
                    f"{answer.text[:200]}"
                )
            elif forged and (
                answer.ok or code not in ("cross_site_request", "unsupported_media_type", "invalid_token")
            ):
                note(f"forged {path} with {headers!r:.300} -> {answer.status_code} {answer.text[:200]}")

    def fuzz_raw_http(count_: int) -> None:
        junk = Junk(random.Random(SEED + 19), game_id)
        cookie = f"{SESSION_COOKIE}={p0.http.cookies[SESSION_COOKIE]}"
        for _ in range(count_):
            for request in raw_requests(junk, server.port, cookie):
                status = raw_http(server.port, request)
                count("raw http", str(status))
                if status >= 500 and not request.startswith(b"PRI * HTTP/2.0"):  # 505: the version is refused
                    note(f"raw http {request[:150]!r} -> {status}")

    def fuzz_cookies(count_: int, dead_cookie: str) -> None:
        """Session cookies that name no live session (random, truncated, re-signed, very long, old Flask
        cookies, many cookies, one copied before its logout) with requests that would act for a live one."""
        junk = Junk(random.Random(SEED + 23), game_id)
        rng = junk.rng
        live = [p0.http.cookies[SESSION_COOKIE], p1.http.cookies[SESSION_COOKIE]]
        old_flask = [
            itsdangerous.URLSafeTimedSerializer(
                key,
                salt="cookie-session",
                signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha1},
            ).dumps({"user_id": user, "admin": True, "_permanent": True})
            for key in ("dev", "secret", secrets.token_hex(8))
            for user in (p0.user["id"], p1.user["id"])  # type: ignore[index]
        ]

        def junk_cookie() -> str:
            value = rng.choice(live)
            pick = rng.randrange(12)
            options = [
                secrets.token_urlsafe(32),
                value[: rng.randrange(1, len(value))],
                value[:-1] + ("A" if value[-1] != "A" else "B"),
                value + "." + base64.urlsafe_b64encode(secrets.token_bytes(20)).decode().rstrip("="),
                value + value,
                "x" * rng.choice([64, 65, 4000, 10_000]),
                rng.choice(old_flask),
                dead_cookie,
                '"' + value,  # (a whole quoted value is the same cookie: RFC 6265)
                "\u00e9" * 20,
                value.upper() if value.upper() != value else value.lower(),
                "%00" + value,
            ]
            text = f"{SESSION_COOKIE}={options[pick]}"
            if rng.random() < 0.2:
                text = (
                    "; ".join(f"c{i}={secrets.token_hex(4)}" for i in range(rng.choice([50, 300])))
                    + "; "
                    + text
                )
            if rng.random() < 0.1:
                text += f"; {SESSION_COOKIE}={dead_cookie}; {SESSION_COOKIE}=junk"
            return text

        acts: list[tuple[str, str, Any]] = [
            ("POST", "/api/games", {"hall": "duel", "join": True}),
            ("POST", f"/api/games/{game_id}/actions/decide", {"accept": True}),
            ("POST", f"/api/games/{game_id}/actions/resign", {}),
            ("POST", f"/api/games/{game_id}/cancel", {}),
            ("POST", f"/api/admin/games/{game_id}/abort", {}),
            ("POST", "/api/admin/tokens", {"name": "cookie token"}),
            ("GET", "/api/admin/games", None),
            ("GET", "/api/me/games", None),
        ]
        http = requests.Session()
        for i in range(count_):
            http.cookies.clear()
            cookie = junk_cookie()
            if rng.random() < 0.3:
                answer = http.get(
                    server.url + "/api/me", headers={"Cookie": cookie.encode("utf-8")}, timeout=30
                )
                user = answer.json().get("user") if answer.status_code == 200 else "not answered"
                count("cookies", f"{answer.status_code} me={user}")
                if user is not None:
                    note(f"cookie {cookie[:120]!r}: /api/me -> {answer.status_code} {answer.text[:200]}")
                continue
            method, path, payload = rng.choice(acts)
            headers = {"Cookie": cookie.encode("utf-8"), "Content-Type": "application/json"}
            answer = http.request(method, server.url + path, json=payload, headers=headers, timeout=30)
            code = error_code(answer)
            count("cookies", f"{answer.status_code} {code}")
            if answer.ok or code not in ("not_logged_in", "forbidden", "not_your_seat", "spectator"):
                note(f"cookie {cookie[:120]!r}: {method} {path} -> {answer.status_code} {answer.text[:200]}")
            if i % 100 == 99:  # a Socket.IO connection opened with a junk cookie is nobody
                sio = socketio.Client(reconnection=False)
                ascii_cookie = cookie if cookie.isascii() else f"{SESSION_COOKIE}=junk"
                sio.connect(
                    server.url, headers={"Cookie": ascii_cookie}, transports=["websocket"], wait_timeout=10
                )
                whoami = sio.call("whoami", {}, timeout=30)
                made = sio.call("create_game", {"hall": "duel", "join": True}, timeout=30)
                sio.disconnect()
                count("cookies", f"socket {answer_code(made)}")
                if whoami.get("user") is not None or answer_code(made) != "not_logged_in":
                    note(f"socket with cookie {cookie[:120]!r}: {whoami!r:.200} {made!r:.200}")

    def fuzz_names(namer: Client) -> None:
        """The name rule's hostile names at login, as bot seat names (REST and Socket.IO) and as token names:
        each ``invalid_name``, never a 500 (a name let through would log in, create a game or a token)."""
        anonymous_http = requests.Session()
        seats = [{"kind": "open"}, {"kind": "bot", "bot": "random", "name": ""}]
        tries: list[tuple[str, Callable[[str], tuple[int, Any]]]] = [
            ("login", lambda n: _post(anonymous_http, "/api/login", {"name": n})),
            (
                "bot seat",
                lambda n: _post(namer.http, "/api/games", {"hall": "duel", "seats": _named(seats, n)}),
            ),
            (
                "bot seat (socket)",
                lambda n: (0, namer.call("create_game", {"hall": "duel", "seats": _named(seats, n)})),
            ),
            ("token", lambda n: _post(admin, "/api/admin/tokens", {"name": n})),
        ]
        for surface, attempt in tries:
            names = HOSTILE_NAMES + (BOT_LIKE_NAMES if surface == "login" else [])
            for name in names:
                status, answer = attempt(name)
                code = answer_code(answer)
                count("names", f"{surface} {code}")
                # (a lone surrogate is refused by the JSON parser before any name rule)
                if code != ("invalid_request" if name == "\ud800" else "invalid_name") or status >= 500:
                    note(f"name {name[:60]!r} as {surface}: {status} {answer!r:.200}")

    def _post(http: requests.Session, path: str, payload: Any) -> tuple[int, Any]:
        answer = http.post(server.url + path, json=payload, timeout=30)
        return answer.status_code, answer.json()

    def _named(seats: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
        return [seats[0], {**seats[1], "name": name}]

    started = time.monotonic()
    jobs: list[tuple[Callable[..., None], tuple[Any, ...]]] = [
        (fuzz_rest, (0, REST_REQUESTS // 2)),
        (fuzz_rest, (1, REST_REQUESTS // 2)),
        (fuzz_socket, (SOCKET_EVENTS,)),
        (fuzz_frames, (RAW_FRAMES,)),
        (fuzz_floods, (flooders, FLOOD_BURSTS, FLOOD_BURST_EVENTS)),
        (fuzz_headers, (HEADER_REQUESTS,)),
        (fuzz_raw_http, (RAW_HTTP_REQUESTS,)),
        (fuzz_cookies, (COOKIE_REQUESTS, dead_cookie)),
        (fuzz_names, (namer,)),
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

    total = sum(statuses.values()) + SOCKET_EVENTS + RAW_FRAMES + sum(surfaces.values())
    print(
        f"fuzz: {total} malformed requests in {elapsed:.1f} s; HTTP statuses {dict(sorted(statuses.items()))}"
    )
    print(f"fuzz: per surface {dict(surfaces)}")
    for surface in sorted(surfaces):
        codes = {k.partition(": ")[2]: n for k, n in sorted(answers.items()) if k.startswith(surface + ": ")}
        print(f"  {surface}: {codes}")
    assert total >= 10_000
    assert not failures, "\n".join(failures)
    assert not [code for code in statuses if code >= 500], statuses
    assert requests.get(server.url + "/healthz", timeout=10).json()["status"] == "ok"
    logged = server.log()[log_start:]
    assert "Traceback" not in logged, logged[logged.index("Traceback") - 2000 :][:6000]
    # (by the level field: client text that spells " ERROR " inside a line is the forgery checked below)
    error_lines = [line for line in logged.splitlines() if re.match(r"\S+ \S+ ERROR ", line)]
    assert not error_lines, error_lines[:5]
    # injected newlines, escapes and separators reach the log escaped, and the log stays small per request
    raw = RAW_CONTROL.search(logged)
    assert raw is None, logged[max(0, raw.start() - 300) : raw.end() + 100] if raw else ""
    forged_lines = [line for line in logged.splitlines() if "FORGED" in line.split(" ", 1)[0]]
    assert not forged_lines, forged_lines[:5]
    log_bytes = server.log_path.stat().st_size - log_bytes_start
    longest = max((len(line) for line in logged.splitlines()), default=0)
    print(
        f"fuzz: server log {log_bytes} bytes, {log_bytes / total:.1f} bytes per request, "
        f"longest line {longest}"
    )
    assert longest <= 1_000
    assert log_bytes / total < 400
    assert digest(server, admin, [p0, p1], game_id) == before
    # and the game still plays
    assert p1.act(game_id, "decide", accept=True, message="fine")["ok"]
    for client in (p0, p1, outsider, anonymous, namer, leaver, *flooders):
        client.close()
