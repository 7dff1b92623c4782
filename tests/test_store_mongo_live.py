"""The store's atomic guarantees on a real MongoDB wire-protocol server (the ``mongo_uri`` fixture of
conftest.py), where mongomock's in-process lock cannot stand in for the server's own atomicity.

Racing writers each hold their own store, so their own MongoClient and their own in-process locks, as gunicorn
workers or separate servers do: threads for many rounds of a race, and two processes for the same races
across process boundaries. Then one whole game against a built-in bot, played over real sockets by a server
process whose ``database.uri`` is the wire server, restarted in the middle of the game.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from e2e_helpers import Client, MakeServer, Participant
from mongo_server import database_uri, drop_database

from server.store import SequenceConflict, Store, StoreError, open_store
from server.store.mongo import MongoStore

T = TypeVar("T")
WRITERS = 8
ROUNDS = 25


@pytest.fixture
def url(mongo_uri: str) -> Iterator[str]:
    """A fresh database on the wire server; dropped afterwards."""
    named = database_uri(mongo_uri, f"tc_live_{uuid.uuid4().hex[:12]}")
    yield named
    drop_database(named)


@pytest.fixture
def stores(url: str) -> Iterator[list[MongoStore]]:
    """``WRITERS`` stores on one database, each with its own client (one per worker process, in effect)."""
    opened = [open_store(url) for _ in range(WRITERS)]
    assert all(isinstance(store, MongoStore) for store in opened)
    yield [store for store in opened if isinstance(store, MongoStore)]
    for store in opened:
        store.close()


def race(stores: list[MongoStore], task: Callable[[Store, int], T]) -> list[T]:
    """``task(store, index)`` for every store at once (a barrier releases them together)."""
    barrier = threading.Barrier(len(stores))

    def run(index: int) -> T:
        barrier.wait()
        return task(stores[index], index)

    with ThreadPoolExecutor(len(stores)) as pool:
        return list(pool.map(run, range(len(stores))))


def increment(store: Store, key: str) -> int:
    """Add one to a counter by compare-and-swap; returns the tries it took (a lost update would show)."""
    tries = 0
    while True:
        tries += 1
        current = store.get_value(key)
        if store.replace_value(key, current, str(int(current or "0") + 1)):
            return tries


def new_game(store: Store) -> str:
    game_id = uuid.uuid4().hex
    store.create_game(game_id, {"mode": "1p_v_1p", "ruleset": "minecraft", "seed": 7})
    return game_id


# ------------------------------------------------------------------------------------- conditional writes
def test_racing_conditional_writes_from_threads_have_one_winner(stores: list[MongoStore]) -> None:
    first = stores[0]
    for round_ in range(ROUNDS):
        key = f"epoch-{round_}"
        assert first.replace_value(key, None, "0")
        swaps = race(stores, lambda store, w: store.replace_value(key, "0", f"w{w}"))  # noqa: B023
        assert swaps.count(True) == 1, swaps
        winner = f"w{swaps.index(True)}"
        assert first.get_value(key) == winner
        deletes = race(stores, lambda store, w: store.replace_value(key, winner, None))  # noqa: B023
        assert deletes.count(True) == 1 and first.get_value(key) is None, deletes
        claims = race(stores, lambda store, w: store.replace_value(f"seat-{round_}", None, f"w{w}"))  # noqa: B023
        assert claims.count(True) == 1, claims
        assert first.get_value(f"seat-{round_}") == f"w{claims.index(True)}"
    race(stores, lambda store, w: [increment(store, "counter") for _ in range(10)])
    assert first.get_value("counter") == str(10 * WRITERS)  # no increment lost


def test_racing_set_value_if_absent_agree_on_the_first_value(stores: list[MongoStore]) -> None:
    for round_ in range(ROUNDS):
        answers = race(stores, lambda store, w: store.set_value_if_absent(f"key-{round_}", f"w{w}"))  # noqa: B023
        assert len(set(answers)) == 1 and answers[0] in {f"w{w}" for w in range(WRITERS)}, answers
        assert stores[0].get_value(f"key-{round_}") == answers[0]


def test_racing_remember_action_keeps_one_answer(stores: list[MongoStore]) -> None:
    game_id = new_game(stores[0])
    for round_ in range(ROUNDS):
        action_id = f"action-{round_}"
        kept = race(
            stores,
            lambda store, w: store.remember_action(game_id, action_id, {"by": w}, f"digest-{w}"),  # noqa: B023
        )
        assert kept.count(True) == 1, kept
        winner = kept.index(True)
        assert stores[-1].recall_action(game_id, action_id) == {
            "response": {"by": winner},
            "action_digest": f"digest-{winner}",
        }


@pytest.mark.parametrize("path", ["transaction", "check-then-insert"])
def test_racing_appends_never_fork_nor_interleave(stores: list[MongoStore], path: str) -> None:
    """Batches of three racing for the next sequence number: each batch goes in whole or not at all, the log
    has no gap and no fork. ``transaction`` is the replica-set path (SecantusDB advertises one);
    ``check-then-insert`` is a standalone server's, taken here by telling the stores there are no
    transactions."""
    if path == "transaction" and not stores[0].supports_transactions:
        pytest.skip("this MongoDB is a standalone server: it has no multi-document transactions")
    for store in stores:
        store.supports_transactions = path == "transaction"
    game_id = new_game(stores[0])
    target, size = 90, 3

    def append_until_full(store: Store, writer: int) -> int:
        won = 0
        while (start := store.last_seq(game_id) + 1) < target:
            batch = uuid.uuid4().hex
            try:
                store.append_events(
                    game_id,
                    [
                        {"seq": start + i, "type": "passed", "actor": writer, "payload": {"batch": batch}}
                        for i in range(size)
                    ],
                )
                won += 1
            except SequenceConflict:
                pass
        return won

    wins = race(stores, append_until_full)
    log = stores[0].load_events(game_id)
    assert [event["seq"] for event in log] == list(range(len(log))) and len(log) >= target
    assert sum(wins) * size == len(log)
    batches = [log[i : i + size] for i in range(0, len(log), size)]
    for batch in batches:  # one writer's whole batch, in order
        assert (
            len({event["payload"]["batch"] for event in batch}) == 1 and len({e["actor"] for e in batch}) == 1
        )
    assert sum(wins) > 1 and len({batch[0]["actor"] for batch in batches}) > 1  # there was a race


def test_racing_inserts_behind_unique_indexes_have_one_winner(stores: list[MongoStore]) -> None:
    """The other writes that a unique index or a condition guards: trace numbering (the loser renumbers),
    a game id, a token's revocation."""
    game_id = new_game(stores[0])
    race(
        stores,
        lambda store, w: [
            store.append_traces(game_id, [{"writer": w, "k": k}, {"writer": w, "k": k + 1}])
            for k in range(0, 10, 2)
        ],
    )
    traces = stores[0].load_traces(game_id)
    assert sorted((t["writer"], t["k"]) for t in traces) == [
        (w, k) for w in range(WRITERS) for k in range(10)
    ]
    for w in range(WRITERS):  # each writer's records in its order
        assert [t["k"] for t in traces if t["writer"] == w] == list(range(10))

    def create(store: Store, _writer: int) -> bool:
        try:
            store.create_game("contested", {"mode": "1p_v_1p", "ruleset": "minecraft", "seed": 1})
        except StoreError as error:
            assert error.code == "game_exists"
            return False
        return True

    assert race(stores, create).count(True) == 1
    _, token = stores[0].create_token("bot", ["play"])
    assert race(stores, lambda store, w: store.revoke_token(token["id"])).count(True) == 1


# ------------------------------------------------------------------------------------------- two processes
def _process_racer(url: str, game_id: str, start: Any, rounds: int, results: Any) -> None:
    """One 'worker process' with its own client: claims, counter increments and appends, each contested."""
    store = open_store(url)
    start.wait()
    claims = [
        key
        for key in (f"claim-{r}" for r in range(rounds))
        if store.replace_value(key, None, str(os.getpid()))
    ]
    tries = sum(increment(store, "counter") for _ in range(rounds))
    appended = 0
    for seq in range(rounds):
        try:
            store.append_events(
                game_id, [{"seq": seq, "type": "passed", "actor": os.getpid(), "payload": {}}]
            )
            appended += 1
        except SequenceConflict:
            pass
    store.close()
    results.put({"pid": os.getpid(), "claims": claims, "tries": tries, "appended": appended})


@pytest.mark.slow  # two spawned processes
def test_two_processes_racing_keep_every_guarantee(url: str) -> None:
    rounds = 60
    setup = open_store(url)
    game_id = new_game(setup)
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(2), context.Queue()
    processes = [
        context.Process(target=_process_racer, args=(url, game_id, start, rounds, results)) for _ in range(2)
    ]
    for process in processes:
        process.start()
    reports = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    try:
        claimed = [key for report in reports for key in report["claims"]]
        assert sorted(claimed) == sorted(f"claim-{r}" for r in range(rounds))  # each exactly once
        for report in reports:
            assert all(setup.get_value(key) == str(report["pid"]) for key in report["claims"])
        assert setup.get_value("counter") == str(2 * rounds)  # no increment lost
        log = setup.load_events(game_id)
        assert [event["seq"] for event in log] == list(range(rounds))
        assert sum(report["appended"] for report in reports) == rounds
        assert {event["actor"] for event in log} <= {report["pid"] for report in reports}
    finally:
        setup.close()


# ------------------------------------------------------------------------------------------ one live game
def play_some(person: Participant, game_id: str, moves: int | None = None, timeout: float = 30) -> str:
    """Play seat 0 simply (decline, pass, finish crafting) for ``moves`` moves or to the end; the status."""
    deadline = time.monotonic() + timeout
    played = 0
    while time.monotonic() < deadline and (moves is None or played < moves):
        ack = person.call("view", {"game_id": game_id})
        assert ack["ok"], ack
        if ack["status"] == "finished":
            return "finished"
        view = ack["view"]
        legal = view["legal_actions"] if view["your_turn"] else []
        for action, fields in (("finish_crafting", {}), ("pass", {}), ("decide", {"accept": False})):
            if action in legal:
                answer = person.act(game_id, action, **fields)
                assert answer["ok"] or answer["error"]["code"] in ("not_your_turn", "wrong_phase"), answer
                played += 1
                break
        else:
            time.sleep(0.02)
    return str(person.call("view", {"game_id": game_id})["status"])


@pytest.mark.slow  # two server processes, one after the other
def test_a_whole_game_on_the_wire_server_survives_a_restart(
    mongo_uri: str, make_server: MakeServer, clients: list[Participant]
) -> None:
    url = database_uri(mongo_uri, f"tc_live_game_{uuid.uuid4().hex[:12]}")
    try:
        first = make_server(database_uri=url)
        person = Client(first.url, "Ada").connect()
        clients.append(person)
        created = person.call(
            "create_game", {"hall": "duel", "seats": ["open", {"kind": "bot", "bot": "random"}], "join": True}
        )
        assert created["ok"], created
        game_id = created["game"]["game_id"]
        assert play_some(person, game_id, moves=2) == "running"
        first.stop()

        # the same database behind a new process: the cookie still opens the seat, the game goes on
        second = make_server(first.config)
        resumed = Client(second.url)
        resumed.http.cookies.update(person.http.cookies)
        clients.append(resumed.connect())
        assert play_some(resumed, game_id) == "finished"
        status, polled = resumed.rest("GET", f"/api/games/{game_id}/events?after=-1")
        assert status == 200, polled

        store = open_store(url)
        try:
            stored = store.load_events(game_id)
            game = store.get_game(game_id)
        finally:
            store.close()
        assert game is not None and game["status"] == "finished"
        assert [event["seq"] for event in stored] == list(range(len(stored)))  # no gap, no fork
        assert stored[0]["type"] == "game_started" and stored[-1]["type"] == "game_ended"
        assert any(event["actor"] == 1 for event in stored) and any(event["actor"] == 0 for event in stored)
        # what the restarted server serves seat 0 (its own numbering) is the stored log less seat 1's secrets
        seen = [(event["type"], event["time"]) for event in polled["events"]]
        assert len(seen) == polled["log_size"] and seen[-1][0] == "game_ended"
        assert set(seen) <= {(event["type"], event["time"]) for event in stored}
        for server in (first, second):
            assert "Traceback" not in server.log(), server.log()
    finally:
        drop_database(url)
