"""Socket.IO events are rate-limited per connection and per user (``limits.socket_events_per_*``), counted
before any work; a flood from one connection does not slow other games down.

Needs a real server process: the flood and the other game's acknowledgements share its threads and sockets.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from typing import Any

import pytest
import socketio
from e2e_helpers import Client, MakeServer, ServerProcess, play_duel, raw_engineio_socket

FLOOD_EVENTS = 1000


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server()  # the shipped limits (settings.yaml defaults)


def flood(url: str, answers: list[dict[str, Any]], event: str, payload: Any) -> float:
    """Send FLOOD_EVENTS events in about one second from one connection; wait for every answer."""
    sio = socketio.Client()
    sio.connect(url, transports=["websocket"], wait_timeout=10)
    started = time.perf_counter()
    try:
        for i in range(FLOOD_EVENTS):
            sio.emit(event, payload, callback=answers.append)
            pause = started + (i + 1) / FLOOD_EVENTS - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
        sent = time.perf_counter() - started
        deadline = time.monotonic() + 30
        while len(answers) < FLOOD_EVENTS and time.monotonic() < deadline:
            time.sleep(0.02)
        return sent
    finally:
        sio.disconnect()


def test_a_flood_from_one_connection_is_rate_limited_and_other_games_stay_fast(
    server: ServerProcess, clients: list[Client]
) -> None:
    p0, p1 = Client(server.url, f"A-{uuid.uuid4().hex[:5]}"), Client(server.url, f"B-{uuid.uuid4().hex[:5]}")
    clients += [p0, p1]
    game_id = p0.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]["game_id"]
    p1.rest("POST", f"/api/games/{game_id}/join", {})
    p0.connect().call("join", {"game_id": game_id})
    p1.connect().call("join", {"game_id": game_id})

    watchers = [Client(server.url).connect() for _ in range(2)]
    clients += watchers
    answers: list[dict[str, Any]] = []
    sent: list[float] = []
    latencies: list[float] = []
    flooder = threading.Thread(target=lambda: sent.append(flood(server.url, answers, "whoami", {})))

    def observe(client: Client, event: str) -> None:
        """One other participant at a brisk GUI pace (25 events per second, under its own limit)."""
        while flooder.is_alive():
            started = time.perf_counter()
            assert client.call(event, {"game_id": game_id})["ok"]
            latencies.append(time.perf_counter() - started)
            time.sleep(max(0.0, 0.04 - (time.perf_counter() - started)))

    flooder.start()
    time.sleep(0.05)
    observers = [
        threading.Thread(target=observe, args=(client, event))
        for client, event in ((p0, "view"), (p1, "view"), (watchers[0], "watch"), (watchers[1], "watch"))
    ]
    for thread in observers:
        thread.start()
    started = time.perf_counter()
    play_duel(game_id, p0, p1)  # the other game plays on meanwhile: seven acts, one after the other
    duel = time.perf_counter() - started
    flooder.join(timeout=60)
    for thread in observers:
        thread.join(timeout=10)

    limited = [a for a in answers if not a["ok"] and a["error"]["code"] == "rate_limited"]
    served = [a for a in answers if a["ok"]]
    p99 = statistics.quantiles(latencies, n=100)[98] * 1000
    print(
        f"\nflood: {FLOOD_EVENTS} whoami in {sent[0]:.2f} s -> {len(served)} served, {len(limited)} "
        f"rate_limited; other game: a duel of 7 acts in {duel * 1000:.0f} ms, {len(latencies)} acks, median "
        f"{statistics.median(latencies) * 1000:.1f} ms, p99 {p99:.1f} ms, max {max(latencies) * 1000:.1f} ms"
    )
    assert len(answers) == FLOOD_EVENTS
    assert len(limited) >= FLOOD_EVENTS // 2 and len(served) + len(limited) == FLOOD_EVENTS
    details = limited[0]["error"]["details"]
    assert details["limit"] == "socket_events_per_connection" and details["retry_after"] >= 1
    # starved games would wait seconds; the tight figure (p99 under 100 ms on a quiet machine) is a
    # benchmark's to print, not a timed test's (it swings 94-170 ms on this 2-core machine under CI)
    assert len(latencies) >= 50 and p99 < 500, latencies


def test_events_are_counted_per_user_over_all_connections(make_server: MakeServer) -> None:
    limits = {
        "socket_events_per_connection": {"count": 1000, "seconds": 600},
        "socket_events_per_user": {"count": 30, "seconds": 600},
    }
    server = make_server(overrides={"limits": limits})
    person = Client(server.url, f"U-{uuid.uuid4().hex[:5]}")
    tabs = [Client(server.url) for _ in range(3)]
    try:
        for tab in tabs:  # three tabs of one person: one cookie, three connections
            tab.http.cookies.update(person.http.cookies)
            tab.connect()
        codes = [tabs[i % 3].call("whoami", {})["ok"] for i in range(45)]
        assert codes.count(True) == 30, codes
        refused = tabs[0].call("whoami", {})
        assert refused["error"]["code"] == "rate_limited"
        assert refused["error"]["details"]["limit"] == "socket_events_per_user"
        # another person is not affected
        other = Client(server.url, f"O-{uuid.uuid4().hex[:5]}").connect()
        assert other.call("whoami", {})["ok"]
        other.close()
    finally:
        for tab in (*tabs, person):
            tab.close()


def test_a_rate_limited_event_is_refused_before_its_payload_is_read(make_server: MakeServer) -> None:
    server = make_server(overrides={"limits": {"socket_events_per_connection": {"count": 2, "seconds": 600}}})
    client = Client(server.url).connect()
    try:
        assert client.call("whoami", "not json")["error"]["code"] == "invalid_request"
        assert client.call("whoami", {})["ok"]
        # a third event, even an unreadable one, is answered rate_limited: nothing of it was parsed
        assert client.call("whoami", "{not json")["error"]["code"] == "rate_limited"
    finally:
        client.close()


def test_connect_packets_after_the_first_are_counted_like_events(make_server: MakeServer) -> None:
    """A refused connect (an unknown namespace, a bad token) retried on one engine.io connection: only the
    first connect packet is free; the rest count against the connection's limit, so a client cannot make the
    server decode packets and check tokens without end."""
    server = make_server(overrides={"limits": {"socket_events_per_connection": {"count": 3, "seconds": 600}}})
    ws = raw_engineio_socket(server.url)
    try:
        for packet in ["40/x,", '40{"token":"tc_nope"}'] * 5:
            ws.send(packet)
        refusals = 0
        answer = ws.receive(timeout=5)
        while answer is not None:  # until the server has been silent for a while
            if answer.startswith("2"):  # a ping
                ws.send("3")
            refusals += answer.startswith("44")
            answer = ws.receive(timeout=3)
        assert refusals == 1 + 3, refusals  # the free first one, then the connection's 3
    finally:
        ws.close()
