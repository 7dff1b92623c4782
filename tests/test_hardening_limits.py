"""Hardening of the edges: abuse limits, one rule for names, security headers, quiet logs, unreadable bodies.

Needs a real server process: per-address limits, transport guards, two processes sharing Redis.

One live server (real sockets) with low limits serves the module; the limiter's counters are also checked
directly, in-process and in a real Redis (skipped when no ``redis-server`` is installed).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import simple_websocket
import socketio
import yaml
from click.testing import CliRunner
from e2e_helpers import (
    ADMIN_PASSWORD,
    Client,
    MakeServer,
    ServerProcess,
    free_port,
    raw_engineio_socket,
    write_config,
)

from server.table.config import LimitsSection, SettingsError, load_settings
from server.web.limits import RateLimiter

LIMITS = {
    "games_per_user": {"count": 3, "seconds": 600},
    "games_per_address": {"count": 1000, "seconds": 600},
    "logins_per_address": {"count": 40, "seconds": 600},
    "admin_failures_per_address": {"count": 3, "seconds": 600},
    "open_games_per_user": 2,
}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
BAD_NAMES = {
    "12,000 characters": "x" * 12_000,
    "right-to-left override": "Ada\u202egnp.exe",
    "NUL": "Ada\x00",
    "newline": "Ada\nAdmin",
    "bidi isolate": "\u2066Ada",
    "zero-width space only": "\u200b",
    "blank": "   ",
    "not a string": 42,
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(admin_password=ADMIN_PASSWORD, overrides={"limits": LIMITS})


def person(server: ServerProcess, made: list[Client], prefix: str = "P") -> Client:
    client = Client(server.url, f"{prefix}-{uuid.uuid4().hex[:6]}")
    made.append(client)
    return client


def new_log(server: ServerProcess, since: int) -> str:
    return server.log()[since:]


# ------------------------------------------------------------------------------------------ headers
@pytest.mark.parametrize("path", ["/healthz", "/api/games", "/api/nowhere", "/", "/api/admin/tokens"])
def test_every_answer_carries_nosniff_and_the_agreed_csp(server: ServerProcess, path: str) -> None:
    answer = requests.get(server.url + path, timeout=10)
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["Content-Security-Policy"] == CSP


def test_healthz_names_no_path(server: ServerProcess) -> None:
    health = requests.get(server.url + "/healthz", timeout=10).json()
    assert health["status"] == "ok" and health["store"] == "sqlite"
    for value in health.values():
        assert "/" not in str(value) and str(server.config.parent) not in str(value)


# ------------------------------------------------------------------------------------------ quiet logs
@pytest.mark.slow
def test_clean_disconnects_log_no_error(server: ServerProcess) -> None:
    since = len(server.log())
    for transports in (["websocket"], ["polling"], ["polling", "websocket"]):
        sio = socketio.Client()
        sio.connect(server.url, transports=transports)
        assert sio.call("whoami", {}, timeout=10)["ok"]
        sio.disconnect()
    time.sleep(0.5)
    logged = new_log(server, since)
    assert "ERROR" not in logged and "Traceback" not in logged and "Bad request" not in logged, logged


MALFORMED_FRAMES = [
    "42[",
    "42garbage",
    '42["whoami",{"a":' + "[" * 5000 + "]" * 5000 + "}]",
    '42["act",' + "9" * 5000 + "]",
    '42["create_game",{"hall":"\\ud800"}]',
    "43",
    "42[1,2]",
    "4{}",
]


def raw_socket(server: ServerProcess) -> simple_websocket.Client:
    ws = raw_engineio_socket(server.url)
    ws.send("40")
    assert ws.receive(timeout=20).startswith("40")  # socket.io connect
    return ws


def test_malformed_frames_log_one_line_per_connection(server: ServerProcess) -> None:
    since = len(server.log())
    for _ in range(2):
        ws = raw_socket(server)
        for frame in MALFORMED_FRAMES * 3:
            ws.send(frame)
        ws.send('42["whoami",{}]')  # still served after the garbage... (no ack id: no answer expected)
        ws.send('421["whoami",{}]')
        answer = ws.receive(timeout=20)  # generous: a loaded machine took over 5 s
        assert answer.startswith("431") and '"ok":true' in answer.replace(" ", ""), answer
        ws.close()
    time.sleep(0.3)
    logged = new_log(server, since)
    assert "Traceback" not in logged and "ERROR" not in logged, logged
    assert logged.count("malformed Socket.IO frame") == 2, logged


def test_unreadable_long_polling_payloads_log_no_traceback(server: ServerProcess) -> None:
    since = len(server.log())
    http = requests.Session()
    opened = http.get(server.url + "/socket.io/?EIO=4&transport=polling", timeout=10).text
    sid = json.loads(opened[opened.index("{") :])["sid"]
    url = f"{server.url}/socket.io/?EIO=4&transport=polling&sid={sid}"
    for payload in (b"\xff\xfe\xfd", b"", b"4" + b"[" * 5000, b"b!!!notbase64", b"x\x1ey\x1e"):
        answer = http.post(url, data=payload, timeout=10)
        assert answer.status_code < 500, (payload, answer.status_code)
    time.sleep(0.3)
    logged = new_log(server, since)
    assert "Traceback" not in logged and " ERROR " not in logged, logged


# ------------------------------------------------------------------------------------------ bodies
UNREADABLE = {
    "invalid UTF-8": b'{"password": "\xff\xfe"}',
    "nesting 5,000 deep": b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "a 5,000-digit number": b'{"name": "x", "n": ' + b"9" * 5000 + b"}",
    "a list": b"[1, 2]",
}


@pytest.mark.parametrize("body", list(UNREADABLE.values()), ids=list(UNREADABLE))
def test_admin_and_login_routes_refuse_unreadable_bodies(
    server: ServerProcess, clients: list[Client], body: bytes
) -> None:
    player = person(server, clients)
    game_id = player.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]["game_id"]
    since = len(server.log())
    basic = "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    routes = [
        ("/api/login", {}),
        ("/api/logout", {}),
        ("/api/admin/login", {}),
        ("/api/admin/tokens", {"Authorization": basic}),
        (f"/api/admin/games/{game_id}/abort", {"Authorization": basic}),
        (f"/api/games/{game_id}/query/possible_crafts", {}),
        ("/api/games", {}),
    ]
    for path, headers in routes:
        answer = player.http.post(
            server.url + path, data=body, headers={"Content-Type": "application/json", **headers}, timeout=10
        )
        if path == "/api/logout":  # reads no body
            assert answer.status_code == 200
            continue
        assert answer.status_code == 400, (path, answer.status_code, answer.text[:200])
        assert answer.json()["error"]["code"] == "invalid_request", (path, answer.text[:200])
    assert "Traceback" not in new_log(server, since)


def test_admin_routing_errors_are_typed_not_500(server: ServerProcess) -> None:
    auth = ("admin", ADMIN_PASSWORD)
    for method, path in (("PUT", "/api/admin/tokens"), ("GET", "/api/admin/login"), ("GET", "/api/admin/x")):
        answer = requests.request(method, server.url + path, auth=auth, timeout=10)
        assert answer.status_code in (404, 405), (path, answer.status_code)
        assert answer.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("number", ["\u00b2", "9" * 5000, "1\u00b2", "-1", "1e3", ""])
def test_admin_query_numbers_are_bounded_as_text(
    server: ServerProcess, clients: list[Client], number: str
) -> None:
    """``?limit=`` and ``?seat=`` of the admin routes: text that str.isdigit() accepts but int() refuses
    (a superscript two, more digits than int() converts) is invalid_request, never a 500."""
    player = person(server, clients)
    game_id = player.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]["game_id"]
    since = len(server.log())
    for path in ("/api/admin/games", f"/api/admin/games/{game_id}/export"):
        name = "limit" if path.endswith("/games") else "seat"
        answer = requests.get(
            server.url + path, params={name: number}, auth=("admin", ADMIN_PASSWORD), timeout=10
        )
        assert answer.status_code == 400, (path, number[:10], answer.status_code, answer.text[:200])
        assert answer.json()["error"]["code"] == "invalid_request"
    assert "Traceback" not in new_log(server, since)


# ------------------------------------------------------------------------------------------ names
@pytest.mark.parametrize("name", list(BAD_NAMES.values()), ids=list(BAD_NAMES))
def test_one_rule_for_every_name(server: ServerProcess, clients: list[Client], name: Any) -> None:
    anonymous = requests.Session()
    answer = anonymous.post(server.url + "/api/login", json={"name": name}, timeout=10)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_name", answer.text[:200]

    # bot seat names, over REST and Socket.IO: refused before any game exists
    creator = person(server, clients)
    seats = [{"kind": "open"}, {"kind": "bot", "bot": "random", "name": name}]
    status, body = creator.rest("POST", "/api/games", {"hall": "duel", "seats": seats})
    assert status == 400 and body["error"]["code"] == "invalid_name", body
    assert body["error"]["details"] == {"seat": 1}
    creator.connect()
    ack = creator.call("create_game", {"hall": "duel", "seats": seats})
    assert not ack["ok"] and ack["error"]["code"] == "invalid_name", ack

    # API token names (admin API)
    answer = requests.post(
        server.url + "/api/admin/tokens", json={"name": name}, auth=("admin", ADMIN_PASSWORD), timeout=10
    )
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_name", answer.text[:200]

    if isinstance(name, str):
        listed = json.dumps(requests.get(server.url + "/api/games?limit=1000", timeout=10).json())
        tokens = json.dumps(
            requests.get(server.url + "/api/admin/tokens", auth=("admin", ADMIN_PASSWORD)).json()
        )
        for shown in (listed, tokens):
            assert json.dumps(name)[1:-1] not in shown or not name.strip()


@pytest.mark.parametrize("name", ["Ada\u202e", "x" * 41, "\x00"])
def test_names_in_settings_and_the_cli_follow_the_same_rule(tmp_path: Path, name: str) -> None:
    config = tmp_path / "settings.yaml"
    hall = {"players": 2, "seats": [{"kind": "open"}, {"kind": "bot", "name": name}]}
    config.write_text(yaml.safe_dump({"halls": {"duel": hall}}), encoding="utf-8")
    with pytest.raises(SettingsError, match="bot seat name"):
        load_settings(config, environ={})

    from server.web.admin_cli import admin_group

    config.write_text(yaml.safe_dump({"server": {"data_dir": str(tmp_path / "data")}}), encoding="utf-8")
    result = CliRunner().invoke(admin_group, ["--config", str(config), "create-token", name])
    assert result.exit_code != 0 and "token name" in result.output, result.output


def test_good_names_pass_normalised(server: ServerProcess, clients: list[Client]) -> None:
    creator = person(server, clients)
    seats = [{"kind": "open"}, {"kind": "bot", "bot": "random", "name": "  Zoë Bot 🤖 "}]
    status, body = creator.rest("POST", "/api/games", {"hall": "duel", "seats": seats, "join": True})
    assert status == 201, body
    assert body["game"]["seats"][1]["name"] == "Zoë Bot 🤖"


# ------------------------------------------------------------------------------------------ limits
def assert_rate_limited(status: int, headers: Any, body: dict[str, Any], limit: str) -> None:
    assert status == 429, body
    error = body["error"]
    assert error["code"] == "rate_limited" and error["details"]["limit"] == limit, error
    retry_after = int(headers["Retry-After"])
    assert 1 <= retry_after <= 600 and retry_after == error["details"]["retry_after"]


def test_open_games_per_user_are_bounded(server: ServerProcess, clients: list[Client]) -> None:
    creator = person(server, clients)
    for _ in range(LIMITS["open_games_per_user"]):
        status, body = creator.rest("POST", "/api/games", {"hall": "duel"})
        assert status == 201, body
    status, body = creator.rest("POST", "/api/games", {"hall": "duel"})
    assert status == 409 and body["error"]["code"] == "too_many_open_games", body
    # someone else still may
    assert person(server, clients).rest("POST", "/api/games", {"hall": "duel"})[0] == 201


def test_games_per_user_are_rate_limited_over_rest_and_socketio(
    server: ServerProcess, clients: list[Client]
) -> None:
    creator = person(server, clients)
    against_bot = {"hall": "duel", "seats": ["open", {"kind": "bot", "bot": "random"}], "join": True}
    for _ in range(LIMITS["games_per_user"]["count"]):  # type: ignore[index]
        status, body = creator.rest("POST", "/api/games", against_bot)
        assert status == 201, body
    games_before = len(requests.get(server.url + "/api/games?limit=1000", timeout=10).json()["games"])
    answer = creator.http.post(server.url + "/api/games", json=against_bot, timeout=10)
    assert_rate_limited(answer.status_code, answer.headers, answer.json(), "games_per_user")
    creator.connect()
    ack = creator.call("create_game", against_bot)
    assert not ack["ok"] and ack["error"]["code"] == "rate_limited", ack
    assert ack["error"]["details"]["retry_after"] >= 1
    games_after = len(requests.get(server.url + "/api/games?limit=1000", timeout=10).json()["games"])
    assert games_after == games_before  # refused before anything was stored


def test_admin_password_failures_lock_the_address(server: ServerProcess) -> None:
    failures = LIMITS["admin_failures_per_address"]["count"]  # type: ignore[index]
    for _ in range(failures):
        answer = requests.post(server.url + "/api/admin/login", json={"password": "guess"}, timeout=10)
        assert answer.status_code == 403
    answer = requests.get(server.url + "/api/admin/tokens", auth=("admin", "guess-again"), timeout=10)
    assert_rate_limited(answer.status_code, answer.headers, answer.json(), "admin_failures_per_address")
    # once locked, even the right password waits: guessing gains nothing
    answer = requests.post(server.url + "/api/admin/login", json={"password": ADMIN_PASSWORD}, timeout=10)
    assert_rate_limited(answer.status_code, answer.headers, answer.json(), "admin_failures_per_address")


def test_logins_per_address_are_rate_limited(server: ServerProcess) -> None:
    """Last in the module: it uses up the address's logins."""
    for _ in range(LIMITS["logins_per_address"]["count"] + 1):  # type: ignore[index]
        answer = requests.post(server.url + "/api/login", json={"name": "Ada"}, timeout=10)
        if answer.status_code != 200:
            break
    assert_rate_limited(answer.status_code, answer.headers, answer.json(), "logins_per_address")
    assert requests.post(server.url + "/api/login", json={"name": "Bo"}, timeout=10).status_code == 429


# ------------------------------------------------------------------------------------------ counters
class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_fixed_window_counts_refuses_and_reopens() -> None:
    clock = Clock(1000.0)
    limiter = RateLimiter(LimitsSection(games_per_user={"count": 2, "seconds": 60}), clock=clock)
    limiter.hit("games_per_user", "u1")
    limiter.hit("games_per_user", "u1")
    limiter.hit("games_per_user", "u2")  # another user has their own count
    with pytest.raises(Exception) as refused:
        limiter.hit("games_per_user", "u1")
    assert refused.value.code == "rate_limited"  # type: ignore[attr-defined]
    assert refused.value.details["retry_after"] == 20  # type: ignore[attr-defined]  # 1000 -> 1020
    clock.now = 1020.0
    limiter.hit("games_per_user", "u1")  # a new window
    unlimited = RateLimiter(LimitsSection(games_per_user=None))
    for _ in range(1000):
        unlimited.hit("games_per_user", "u1")


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.RedisError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_redis_counters_are_shared_by_every_worker(redis_url: str) -> None:
    settings = LimitsSection(storage=redis_url, logins_per_address={"count": 5, "seconds": 60})
    workers = [RateLimiter(settings), RateLimiter(settings)]  # two processes' limiters, one Redis
    for i in range(5):
        workers[i % 2].hit("logins_per_address", "10.0.0.7")
    for worker in workers:
        with pytest.raises(Exception, match="Too many logins") as refused:
            worker.hit("logins_per_address", "10.0.0.7")
        assert refused.value.code == "rate_limited"  # type: ignore[attr-defined]
    workers[0].hit("logins_per_address", "10.0.0.8")


def test_an_unreachable_redis_does_not_lock_people_out() -> None:
    port = free_port()  # nothing listens there
    limiter = RateLimiter(
        LimitsSection(storage=f"redis://127.0.0.1:{port}/0", logins_per_address={"count": 1, "seconds": 60})
    )
    for _ in range(3):
        limiter.hit("logins_per_address", "10.0.0.9")


def test_limits_storage_must_be_redis() -> None:
    with pytest.raises(ValueError, match="redis"):
        LimitsSection(storage="memcached://x")


@pytest.mark.slow
def test_two_server_processes_share_the_limits_through_redis(
    tmp_path: Path, redis_url: str, make_server: MakeServer
) -> None:
    """Like two gunicorn workers: one SQLite file, one Redis; a client alternating between them still gets
    exactly the configured number of logins and admin password guesses."""
    limits = {
        "storage": redis_url,
        "logins_per_address": {"count": 4, "seconds": 600},
        "admin_failures_per_address": {"count": 2, "seconds": 600},
    }
    config = write_config(tmp_path / "shared", admin_password=ADMIN_PASSWORD, overrides={"limits": limits})
    first, second = make_server(config), make_server(config)
    urls = [first.url, second.url]
    for i in range(4):
        assert requests.post(urls[i % 2] + "/api/login", json={"name": "Ada"}, timeout=10).status_code == 200
    for url in urls:
        answer = requests.post(url + "/api/login", json={"name": "Ada"}, timeout=10)
        assert_rate_limited(answer.status_code, answer.headers, answer.json(), "logins_per_address")
    for url in urls:
        answer = requests.post(url + "/api/admin/login", json={"password": "guess"}, timeout=10)
        assert answer.status_code == 403
    answer = requests.post(first.url + "/api/admin/login", json={"password": "guess"}, timeout=10)
    assert_rate_limited(answer.status_code, answer.headers, answer.json(), "admin_failures_per_address")
