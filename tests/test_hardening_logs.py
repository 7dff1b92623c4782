"""One logging rule: client text reaches the log escaped and bounded, repeated refusals are summarised, and a
refusal line names its caller.

Needs a real server process: the log checked is the server's own output (werkzeug's request lines, the
app's refusal lines), and callers come from distinct loopback addresses (127.0.0.N), as refusals are
summarised per address.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import logging
import re
import socket
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from itertools import count

import pytest
import socketio
from e2e_helpers import ADMIN_PASSWORD, MakeServer, ServerProcess

from server.table.log_text import RefusalLog, install_log_escaping, log_text

FORGED = "2031-01-01 00:00:00,000 INFO server: FORGED"
#: Client text that would forge a log line or style a terminal, percent-encoded as in a URL.
INJECTIONS = {
    "newline": "%0A" + FORGED.replace(" ", "%20"),
    "carriage return": "%0D" + FORGED.replace(" ", "%20"),
    "terminal escape": "%1B[31mFORGED%1B[0m",
    "line separator": "%E2%80%A8FORGED",
    "bidi override": "%E2%80%AEFORGED",
}
_addresses = count(2)


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(admin_password=ADMIN_PASSWORD)


def next_address() -> str:
    """A loopback address no other test of the module used (refusals are summarised per address)."""
    return f"127.0.{uuid.uuid4().int % 200 + 20}.{next(_addresses)}"


def request(
    server: ServerProcess,
    method: str,
    path: str,
    source: str,
    headers: dict[str, str] | None = None,
    body: dict[str, object] | None = None,
) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10, source_address=(source, 0))
    payload = json.dumps(body).encode() if body is not None else None
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    conn.request(method, path, body=payload, headers=all_headers)
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer


def new_log(server: ServerProcess, since: int, settle: float = 0.3) -> str:
    time.sleep(settle)
    return server.log()[since:]


def assert_no_forgery(logged: str) -> None:
    bad = [c for c in logged if not c.isprintable() and c != "\n"]
    assert not bad, f"raw control/format characters in the log: {bad[:5]!r}\n{logged[-2000:]}"
    assert not re.search(r"^(2031|FORGED)", logged, re.M), logged[-2000:]


ADMIN = {"Authorization": "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()}


@pytest.mark.parametrize("text", list(INJECTIONS.values()), ids=list(INJECTIONS))
def test_client_text_never_forges_a_line_or_styles_the_terminal(server: ServerProcess, text: str) -> None:
    since = len(server.log())
    # a path (the app's refusal line and werkzeug's request line), a path parameter the admin area logs,
    # and an event's fields and a chat message sent over Socket.IO
    request(server, "GET", f"/api/games/{text}/view", next_address())
    request(server, "GET", f"/api/nowhere/{text}", next_address())
    request(server, "DELETE", f"/api/admin/tokens/{text}", next_address(), ADMIN)
    decoded = urllib.parse.unquote(text)
    sio = socketio.Client()
    sio.connect(server.url, transports=["websocket"])
    try:
        sio.call("decide", {"game_id": decoded, "accept": True, "message": decoded}, timeout=10)
        sio.call("join", {"game_id": decoded}, timeout=10)
    finally:
        sio.disconnect()
    logged = new_log(server, since)
    assert "FORGED" in logged  # the text was logged, escaped
    assert_no_forgery(logged)


def test_a_60_kb_path_logs_a_few_hundred_bytes(server: ServerProcess) -> None:
    since = len(server.log().encode())
    answer = request(server, "GET", "/api/" + "a" * 60_000, next_address())
    assert answer.status == 404
    time.sleep(0.3)
    logged = server.log().encode()[since:]
    lines = logged.count(b"\n")
    print(f"\n60 KB path: {len(logged)} bytes of log ({lines} lines)")
    assert 0 < len(logged) <= 1500, logged[:3000]


def test_a_flood_of_refused_events_logs_one_line_and_a_summary(server: ServerProcess) -> None:
    since = len(server.log())
    sio = socketio.Client()
    sio.connect(server.url, transports=["websocket"])
    answers: list[dict[str, object]] = []
    for _ in range(90):  # under the per-connection rate limit: every one is refused as unknown_game
        sio.emit("join", {"game_id": "no-such-game"}, callback=answers.append)
    deadline = time.monotonic() + 20
    while len(answers) < 90 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(answers) == 90 and not any(a["ok"] for a in answers)
    middle = new_log(server, since)
    sio.disconnect()
    logged = new_log(server, since, settle=0.5)
    print(f"\n90 refused events: {logged.count('refused socket event')} refusal lines")
    assert middle.count("refused socket event 'join'") == 1, middle
    assert logged.count("refused socket event 'join'") == 1, logged
    assert re.search(r"89 more refusals from anonymous at 127\.0\.0\.1 in the last 60 s", logged), logged


def test_a_logged_in_callers_refusal_names_them(server: ServerProcess) -> None:
    source = next_address()
    login = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10, source_address=(source, 0))
    login.request(
        "POST",
        "/api/login",
        body=json.dumps({"name": "Logged In"}),
        headers={"Content-Type": "application/json"},
    )
    answer = login.getresponse()
    user = json.loads(answer.read())["user"]
    cookie = answer.getheader("Set-Cookie", "").split(";")[0]
    login.close()
    since = len(server.log())
    request(server, "GET", "/api/games/no-such-game", source, {"Cookie": cookie})
    logged = new_log(server, since)
    line = next(line for line in logged.splitlines() if "refused GET /api/games/no-such-game" in line)
    assert f"from {user['id']} at {source}" in line, line
    # an admin session is named too
    source = next_address()
    admin = request(server, "POST", "/api/admin/login", source, body={"password": ADMIN_PASSWORD})
    cookie = (admin.getheader("Set-Cookie") or "").split(";")[0]
    since = len(server.log())
    request(server, "GET", "/api/admin/games/no-such-game", source, {"Cookie": cookie})
    line = next(line for line in new_log(server, since).splitlines() if "refused GET /api/admin" in line)
    assert f"admin session, anonymous at {source}" in line, line


def test_requests_the_server_cannot_parse_log_no_error_line(server: ServerProcess) -> None:
    """Found by the hostile-input fuzz: werkzeug logged each unparsable request (a bad request line, too many
    headers, HTTP/2) at ERROR, so any client could write ERROR lines; they are the client's fault: WARNING."""
    since = len(server.log())
    for raw in (
        b"GET /x \x1b[2J\nFORGED HTTP/1.1\r\nHost: a\r\n\r\n",
        b"POST /api/games HTTP/1.1\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(150)) + b"\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(raw)
            assert sock.recv(100)  # an error page (without a status line when the version is unreadable)
    logged = new_log(server, since)
    assert all(f"code {code}, message" in logged for code in (400, 431, 505)), logged
    assert not [line for line in logged.splitlines() if re.match(r"\S+ \S+ ERROR ", line)], logged
    assert_no_forgery(logged)


# ------------------------------------------------------------------------------------------ in-process
@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    install_log_escaping()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("test_hardening_logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield stream
    logger.removeHandler(handler)


def test_log_text_escapes_like_repr_and_bounds() -> None:
    assert log_text("a\nb\r\x1b[31m\u2028\u202e\\") == "a\\nb\\r\\x1b[31m\\u2028\\u202e\\\\"
    assert log_text("Ada Lovelace é 中") == "Ada Lovelace é 中"
    bounded = log_text("x" * 60_000)
    assert bounded == "x" * 200 + "…(+59800 chars)"


def test_messages_formatted_before_logging_are_escaped_too(captured: io.StringIO) -> None:
    logger = logging.getLogger("test_hardening_logs")
    name = "Eve\n" + FORGED
    logger.info(f"joined: {name}")  # formatted before logging: the case under test
    logger.info("joined: %s", name + "\x1b[2J" + "y" * 5000)
    lines = captured.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith("joined: Eve\\n") for line in lines), lines
    assert len(lines[1]) < 600


def test_refusal_summaries_are_per_key_per_interval_and_bounded(captured: io.StringIO) -> None:
    now = [0.0]
    refusals = RefusalLog(logging.getLogger("test_hardening_logs"), clock=lambda: now[0], max_keys=3)
    assert refusals.should_log("a", lambda: "A") == "A"
    assert all(refusals.should_log("a", lambda: "A") is None for _ in range(1000))
    now[0] = 61
    assert refusals.should_log("a", lambda: "A") == "A"  # a new interval: first logged, summary written
    for key in "bcde":  # more callers than kept: the oldest is summarised early
        refusals.should_log(key, lambda k=key: k.upper())
        refusals.should_log(key, lambda k=key: k.upper())
    assert len(refusals._open) <= 3
    assert captured.getvalue().splitlines() == [
        "1000 more refusals from A in the last 60 s",
        "1 more refusals from B in the last 60 s",
    ]
