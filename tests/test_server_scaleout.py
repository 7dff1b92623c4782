"""Scale-out: two server processes share one SQLite file and one Redis message queue.

Needs a real server process: two processes over one Redis message queue.

The two players of a game are connected to different processes; both see every push, and concurrent actions
through both processes never fork the game (the store's unique sequence numbers + catch-up/replay on
conflict)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
import redis
from e2e_helpers import DUEL_TRADE, Client, MakeServer, ServerProcess

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="module")
def two_servers(make_server: MakeServer) -> tuple[ServerProcess, ServerProcess]:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        pytest.skip(f"needs a Redis server at {REDIS_URL} for the message queue ({exc})")
    first = make_server(message_queue=REDIS_URL, channel=f"tc-test-{uuid.uuid4().hex}")
    return first, make_server(first.config)  # the first made the database and the shared secret key


@pytest.mark.slow
def test_players_on_different_processes_play_a_full_game(
    two_servers: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = two_servers
    p0 = Client(a.url, "on-a").connect()
    p1 = Client(b.url, "on-b").connect()
    watcher = Client(b.url).connect()
    try:
        game_id = p0.call("create_game", {"hall": "duel", "join": True})["game"]["game_id"]
        assert p0.call("join", {"game_id": game_id})["seat"] == 0
        joined = p1.call("join", {"game_id": game_id})  # process B loads the game from the store
        assert joined["ok"] and joined["seat"] == 1 and joined["status"] == "running"
        watched = watcher.call("watch", {"game_id": game_id})
        assert watched["ok"] and [e["n"] for e in watched["events"]] == [0, 1]
        p0.wait_log(game_id, 2)  # the start, done by B, reached A's client through Redis

        assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]  # on A
        assert p1.act(game_id, "decide", accept=True)["ok"]  # on B: catches up first

        # both craft at once through different processes: races on the next sequence number
        errors: list[object] = []

        def crafts(client: Client, actions: list[dict[str, object]]) -> None:
            for action in actions:
                ack = client.act(game_id, "craft", **action)
                if not ack["ok"]:
                    errors.append(ack)

        seat0 = [{"recipe": "stick", "runs": "1/20"}] * 10 + [{"recipe": "torch", "runs": "1/4"}]
        seat1 = [{"recipe": "shears", "runs": "1/2"}] * 2
        threads = [threading.Thread(target=crafts, args=args) for args in ((p0, seat0), (p1, seat1))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors, errors
        assert p1.act(game_id, "finish_crafting")["ok"]
        last = p0.act(game_id, "finish_crafting")
        assert last["ok"] and last["status"] == "finished" and last["view"]["winners"] == [0, 1]

        # the log did not fork: both processes hold the same log, and each viewer's log is contiguous
        digests = []
        for url in (a.url, b.url):
            admin = Client(url)
            try:
                status, body = admin.rest(
                    "GET", f"/api/admin/games/{game_id}", auth=("admin", "test-admin-password")
                )
            finally:
                admin.close()
            assert status == 200 and body["view"]["finished"]
            digests.append(body["view"]["log_digest"])
        assert digests[0] == digests[1]
        via_a = p0.call("events", {"game_id": game_id})["events"]
        crafted = [e for e in via_a if e["type"] == "crafted"]
        assert len(crafted) == len(seat0)  # seat 0 sees its own crafts only
        for client, seat in ((p0, 0), (p1, 1), (watcher, None)):
            client.wait_status(game_id, "finished")
            pushed = [e["n"] for e in client.pushed_events(game_id)]
            history = client.call("events", {"game_id": game_id})["events"]
            first = watched["log_size"] if seat is None else 0  # the watcher got the start with its watch
            assert pushed == [e["n"] for e in history][first:] == list(range(first, len(history))), seat
    finally:
        for client in (p0, p1, watcher):
            client.close()


def test_shared_secret_key_lets_a_login_on_one_process_act_on_the_other(
    two_servers: tuple[ServerProcess, ServerProcess], tmp_path: Path
) -> None:
    a, b = two_servers
    person = Client(a.url, "cookie-traveller")
    try:
        person.url = b.url  # same cookie, other process
        status, body = person.rest("GET", "/api/me")
        assert status == 200 and body["user"]["name"] == "cookie-traveller"
    finally:
        person.close()
