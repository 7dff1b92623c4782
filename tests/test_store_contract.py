"""One contract suite for every store backend: the in-process memory store, SQLite (memory and file), the
MongoDB backend's own code under mongomock, and a real MongoDB wire-protocol server (the ``mongo_uri`` fixture
of conftest.py: the SecantusDB test server, or the MongoDB that TRADECRAFT_TEST_MONGO_URI names)."""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mongo_server import database_uri, drop_database

from server.store import SequenceConflict, Store, StoreError, open_store
from server.store.base import MAX_TRACE_BYTES, MAX_TRACES_PER_GAME, check_trace_limit

BACKENDS = ["memory", "sqlite-memory", "sqlite-file", "mongomock", "mongodb"]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL naming a fresh, empty database of one backend."""
    backend = request.param
    database = f"tc_test_{uuid.uuid4().hex[:12]}"
    if backend == "memory":
        yield "memory://"
    elif backend == "sqlite-memory":
        yield "sqlite:///:memory:"
    elif backend == "sqlite-file":
        yield f"sqlite:///{tmp_path}/data/tradecraft.db"
    elif backend == "mongomock":
        pytest.importorskip("mongomock", reason="mongomock is a dev dependency: pip install -e '.[dev]'")
        yield f"mongomock://localhost/{database}"
    else:
        url = database_uri(request.getfixturevalue("mongo_uri"), database)
        yield url
        drop_database(url)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def event(seq: int, kind: str = "passed", actor: int | None = 0, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "type": kind, "actor": actor, "payload": payload, "visibility": "public"}


def new_game(store: Store, game_id: str | None = None, **meta: Any) -> str:
    game_id = game_id or uuid.uuid4().hex
    store.create_game(game_id, {"mode": "1p_v_1p", "ruleset": "minecraft", "seed": 7, **meta})
    return game_id


# ------------------------------------------------------------------------------------------------------ games
def test_create_get_update_game(store: Store) -> None:
    seats = [{"seat": 0, "kind": "human", "name": "Ada", "user_id": "u1", "bot": None}]
    store.create_game("g1", {"mode": "1p_v_1p", "settings": {"max_turns": 10}, "seats": seats, "seed": 3})
    game = store.get_game("g1")
    assert game is not None
    assert game["game_id"] == "g1"
    assert game["status"] == "waiting"  # the default
    assert game["seats"] == seats
    assert game["settings"] == {"max_turns": 10}
    assert isinstance(game["created_at"], float)

    store.update_game("g1", status="running", winners=[1])
    game = store.get_game("g1")
    assert game is not None
    assert (game["status"], game["winners"], game["seed"]) == (
        "running",
        [1],
        3,
    )  # shallow merge keeps the rest
    assert game["updated_at"] >= game["created_at"]
    assert store.get_game("nope") is None


def test_game_errors(store: Store) -> None:
    new_game(store, "g1")
    with pytest.raises(StoreError) as exists:
        new_game(store, "g1")
    assert exists.value.code == "game_exists"
    with pytest.raises(StoreError) as unknown:
        store.update_game("missing", status="running")
    assert unknown.value.code == "unknown_game"
    with pytest.raises(StoreError) as bad_status:
        store.update_game("g1", status="paused")
    assert bad_status.value.code == "invalid_status"
    with pytest.raises(StoreError) as bad_meta:
        store.create_game("g2", {"seed": math.nan})
    assert bad_meta.value.code == "not_json_safe"
    assert bad_meta.value.to_dict()["message"]
    assert store.get_game("g2") is None


def test_list_games_newest_first_with_status_and_limit(store: Store) -> None:
    for index in range(5):
        new_game(store, f"g{index}", created_at=1000.0 + index, status="finished" if index % 2 else "running")
    assert [g["game_id"] for g in store.list_games()] == ["g4", "g3", "g2", "g1", "g0"]
    assert [g["game_id"] for g in store.list_games(status="finished")] == ["g3", "g1"]
    assert [g["game_id"] for g in store.list_games(limit=2)] == ["g4", "g3"]
    assert store.list_games(status="aborted") == []
    store.update_game("g0", status="finished")
    assert [g["game_id"] for g in store.list_games(status="finished")] == ["g3", "g1", "g0"]


# ----------------------------------------------------------------------------------------------------- events
def test_append_and_load_events(store: Store) -> None:
    game_id = new_game(store)
    assert store.last_seq(game_id) == -1
    assert store.load_events(game_id) == []
    batch = [event(0, "game_started", None, hands=[{"coal": 1}]), event(1, "phase_started", None, turn=0)]
    store.append_events(game_id, batch)
    assert all(isinstance(e["time"], float) for e in batch)  # the caller's dicts get the server time
    store.append_events(game_id, [event(2, "tom_reported", 0, v0={"coal": 7}) | {"visibility": [0]}])
    store.append_events(game_id, [event(3) | {"time": 12.5}])  # a given time is kept

    loaded = store.load_events(game_id)
    assert [e["seq"] for e in loaded] == [0, 1, 2, 3]
    assert loaded[0] == batch[0]
    assert loaded[2]["visibility"] == [0]
    assert loaded[3]["time"] == 12.5
    assert [e["seq"] for e in store.load_events(game_id, after_seq=1)] == [2, 3]
    assert store.load_events(game_id, after_seq=3) == []
    assert store.last_seq(game_id) == 3
    assert store.load_events("other-game") == []


def test_events_are_normalised_like_json(store: Store) -> None:
    game_id = new_game(store)
    store.append_events(
        game_id, [event(0, "crafted", 1, choices={0: "oak_planks"}, runs="1/4", seats=(0, 1))]
    )
    payload = store.load_events(game_id)[0]["payload"]
    assert payload == {"choices": {"0": "oak_planks"}, "runs": "1/4", "seats": [0, 1]}


def test_empty_batch_is_a_no_op(store: Store) -> None:
    game_id = new_game(store)
    store.append_events(game_id, [])
    assert store.last_seq(game_id) == -1


def test_conflicting_batch_writes_nothing(store: Store) -> None:
    game_id = new_game(store)
    store.append_events(game_id, [event(0), event(1), event(2)])
    for stale in ([event(2), event(3)], [event(0)], [event(1), event(2), event(3), event(4)]):
        with pytest.raises(SequenceConflict) as conflict:
            store.append_events(game_id, stale)
        assert conflict.value.code == "sequence_conflict"
        assert conflict.value.expected == 3
        assert "reload" in conflict.value.message
    assert [e["seq"] for e in store.load_events(game_id)] == [0, 1, 2]
    assert not isinstance(SequenceConflict(game_id, 0), StoreError)  # a lost race is not a failure


@pytest.mark.parametrize(
    ("batch", "code"),
    [
        ([event(2)], "sequence_gap"),
        ([event(0), event(2)], "invalid_batch"),
        ([{"type": "passed"}], "invalid_event"),
        ([event(-1)], "invalid_event"),
        ([{"seq": True}], "invalid_event"),
        ([event(0, note=object())], "not_json_safe"),
        ([event(0, value=math.inf)], "not_json_safe"),
    ],
)
def test_invalid_batches_are_refused(store: Store, batch: list[dict[str, Any]], code: str) -> None:
    game_id = new_game(store)
    with pytest.raises(StoreError) as error:
        store.append_events(game_id, batch)
    assert error.value.code == code
    assert store.last_seq(game_id) == -1


def test_append_to_unknown_game_is_refused(store: Store) -> None:
    with pytest.raises(StoreError) as error:
        store.append_events("missing", [event(0)])
    assert error.value.code == "unknown_game"
    assert store.load_events("missing") == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.integers(min_value=-2, max_value=2), st.integers(min_value=1, max_value=3)),
        min_size=1,
        max_size=12,
    )
)
def test_append_matches_a_model_log(store: Store, attempts: list[tuple[int, int]]) -> None:
    """Batches start near the right number (offset -2..2); the store accepts exactly the model's choices."""
    game_id = new_game(store)
    model: list[int] = []
    for offset, size in attempts:
        first = max(0, len(model) + offset)
        batch = [event(seq, size=size) for seq in range(first, first + size)]
        if first == len(model):
            store.append_events(game_id, batch)
            model.extend(range(first, first + size))
        elif first < len(model):
            with pytest.raises(SequenceConflict):
                store.append_events(game_id, batch)
        else:
            with pytest.raises(StoreError, match="continues at sequence number"):
                store.append_events(game_id, batch)
    assert [e["seq"] for e in store.load_events(game_id)] == model
    assert store.last_seq(game_id) == len(model) - 1


# ----------------------------------------------------------------------------------------------------- traces
def test_append_and_load_traces_in_order(store: Store) -> None:
    game_id, other = new_game(store), new_game(store)
    assert store.load_traces(game_id) == [] and store.append_traces(game_id, []) == 0
    first = [
        {"seat": 0, "event_seq": 4, "time": 1.5, "step": "prompt", "messages": [{"role": "user"}]},
        {"seat": 0, "event_seq": None, "time": 2.0, "usage": {"prompt_tokens": 12}},
    ]
    assert store.append_traces(game_id, first) == 2
    assert store.append_traces(other, [{"seat": 1, "event_seq": 0, "time": 3.0}]) == 1
    # "kind": "trace" (a game-log record as written) is accepted and not kept twice; missing keys get defaults
    assert store.append_traces(game_id, [{"kind": "trace", "seat": 1, "note": (1, 2)}]) == 3
    loaded = store.load_traces(game_id)
    assert loaded[:2] == first
    assert loaded[2]["seat"] == 1 and loaded[2]["event_seq"] is None and loaded[2]["note"] == [1, 2]
    assert isinstance(loaded[2]["time"], float) and "kind" not in loaded[2]
    assert store.load_traces(other) == [{"seat": 1, "event_seq": 0, "time": 3.0}]
    assert store.load_traces("no-such-game") == []


@pytest.mark.parametrize(
    ("trace", "code"),
    [
        ("not a dict", "invalid_trace"),
        ({"seat": "0"}, "invalid_trace"),
        ({"seat": 0, "event_seq": -1}, "invalid_trace"),
        ({"seat": True}, "invalid_trace"),
        ({"seat": 0, "kind": "prompt"}, "invalid_trace"),
        ({"seat": 0, "value": float("nan")}, "not_json_safe"),
        ({"seat": 0, "completion": "x" * MAX_TRACE_BYTES}, "trace_too_large"),
    ],
)
def test_bad_traces_are_refused_and_nothing_is_written(store: Store, trace: Any, code: str) -> None:
    game_id = new_game(store)
    with pytest.raises(StoreError) as error:
        store.append_traces(game_id, [{"seat": 0, "event_seq": 1}, trace])
    assert error.value.code == code
    assert store.load_traces(game_id) == []


def test_traces_of_an_unknown_game_are_refused(store: Store) -> None:
    with pytest.raises(StoreError) as error:
        store.append_traces("no-such-game", [{"seat": 0}])
    assert error.value.code == "unknown_game"


def test_the_trace_count_per_game_is_bounded(store: Store) -> None:
    game_id = new_game(store)
    assert store.append_traces(game_id, [{"seat": 0, "i": i} for i in range(4)], max_per_game=5) == 4
    with pytest.raises(StoreError) as error:  # the whole batch is refused: 4 + 2 > 5
        store.append_traces(game_id, [{"seat": 0, "i": 4}, {"seat": 0, "i": 5}], max_per_game=5)
    assert error.value.code == "trace_limit_reached" and error.value.details["stored"] == 4
    assert store.append_traces(game_id, [{"seat": 0, "i": 4}], max_per_game=5) == 5
    with pytest.raises(StoreError):
        store.append_traces(game_id, [{"seat": 0, "i": 5}], max_per_game=5)
    assert [t["i"] for t in store.load_traces(game_id)] == [0, 1, 2, 3, 4]

    # a caller cannot lift the store's own bound
    with pytest.raises(StoreError) as error:
        check_trace_limit("g", MAX_TRACES_PER_GAME, 1, MAX_TRACES_PER_GAME * 2)
    assert error.value.details["limit"] == MAX_TRACES_PER_GAME


def test_threads_appending_traces_keep_every_record_once(store: Store) -> None:
    game_id = new_game(store)
    _race(8, lambda w: [store.append_traces(game_id, [{"seat": 0, "w": w, "i": i}]) for i in range(5)])
    loaded = store.load_traces(game_id)
    assert sorted((t["w"], t["i"]) for t in loaded) == [(w, i) for w in range(8) for i in range(5)]
    for w in range(8):  # each writer's records keep its order
        assert [t["i"] for t in loaded if t["w"] == w] == list(range(5))


# -------------------------------------------------------------------------------------------- concurrency
def _race(workers: int, task: Callable[[int], Any]) -> list[Any]:
    """Run ``task(worker_index)`` in threads released at the same instant; return results or exceptions."""
    barrier = threading.Barrier(workers)

    def run(index: int) -> Any:
        barrier.wait()
        try:
            return task(index)
        except (SequenceConflict, StoreError) as exc:
            return exc

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run, range(workers)))


def test_threads_racing_for_one_seq_exactly_one_wins(store: Store) -> None:
    game_id = new_game(store)
    store.append_events(game_id, [event(0)])
    for round_seq in range(1, 6):
        results = _race(8, lambda w, s=round_seq: store.append_events(game_id, [event(s, actor=w)]))
        winners = [w for w, r in enumerate(results) if not isinstance(r, Exception)]
        assert len(winners) == 1, results
        assert results[winners[0]] == store.load_events(game_id, after_seq=round_seq - 1)  # as stored
        assert all(isinstance(r, SequenceConflict) for w, r in enumerate(results) if w != winners[0])
        assert store.load_events(game_id, after_seq=round_seq - 1)[0]["actor"] == winners[0]
    assert [e["seq"] for e in store.load_events(game_id)] == list(range(6))


def test_threads_appending_with_retry_never_fork(store: Store) -> None:
    """Four writers each append 25 events, retrying on conflict: one linear log of 100, each event once."""
    game_id = new_game(store)

    def writer(index: int) -> int:
        conflicts = 0
        written = 0
        while written < 25:
            seq = store.last_seq(game_id) + 1
            try:
                store.append_events(
                    game_id, [event(seq, actor=index, n=written), event(seq + 1, actor=index)]
                )
                written += 1
            except SequenceConflict:
                conflicts += 1
        return conflicts

    _race(4, writer)
    log = store.load_events(game_id)
    assert [e["seq"] for e in log] == list(range(200))
    # batches are never interleaved: each even/odd pair comes from one writer
    assert all(log[i]["actor"] == log[i + 1]["actor"] for i in range(0, 200, 2))
    per_writer = sorted((e["actor"], e["payload"]["n"]) for e in log[::2])
    assert per_writer == sorted((w, n) for w in range(4) for n in range(25))


def test_concurrent_remember_action_and_set_value(store: Store) -> None:
    game_id = new_game(store)
    results = _race(8, lambda w: store.remember_action(game_id, "act-1", {"ok": True, "worker": w}))
    assert results.count(True) == 1 and results.count(False) == 7
    recalled = store.recall_action(game_id, "act-1")
    assert recalled == {"response": {"ok": True, "worker": results.index(True)}, "action_digest": ""}

    values = _race(8, lambda w: store.set_value_if_absent("secret_key", f"key-{w}"))
    assert len(set(values)) == 1
    assert store.get_value("secret_key") == values[0]


def test_two_store_objects_share_one_database(store_url: str) -> None:
    if store_url in ("sqlite:///:memory:", "memory://"):
        pytest.skip("an in-memory database is private to its store object")
    first, second = open_store(store_url), open_store(store_url)  # e.g. two gunicorn workers
    try:
        game_id = new_game(first)
        first.append_events(game_id, [event(0)])
        with pytest.raises(SequenceConflict):
            second.append_events(game_id, [event(0)])
        second.append_events(game_id, [event(1)])
        assert [e["seq"] for e in first.load_events(game_id)] == [0, 1]
        assert second.set_value_if_absent("k", "from-second") == first.set_value_if_absent("k", "from-first")
    finally:
        first.close()
        second.close()


def _process_writer(url: str, game_id: str, start: Any, count: int, results: Any) -> None:
    """One 'worker process': append ``count`` events, each seq contested by the other process."""
    store = open_store(url)
    won = 0
    start.wait()  # a barrier: both processes have opened the store and start appending together
    seq = 0
    while seq < count:
        try:
            store.append_events(game_id, [event(seq, actor=os.getpid())])
            won += 1
        except SequenceConflict:
            pass
        seq += 1
    store.close()
    results.put(won)


def test_two_processes_racing_never_fork(store_url: str) -> None:
    if not store_url.startswith("sqlite:///") or store_url.endswith(":memory:"):
        pytest.skip("the multi-process race runs on the SQLite file backend (mongomock is in-process only)")
    setup = open_store(store_url)
    game_id = new_game(setup)
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(2), context.Queue()
    processes = [
        context.Process(target=_process_writer, args=(store_url, game_id, start, 150, results))
        for _ in range(2)
    ]
    for process in processes:
        process.start()
    wins = [results.get(timeout=30) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    log = setup.load_events(game_id)
    setup.close()
    assert [e["seq"] for e in log] == list(range(150))  # one event per seq, no gaps, no fork
    assert sum(wins) == 150
    assert {e["actor"] for e in log} <= {p.pid for p in processes}


# ------------------------------------------------------------------------------------------ users and tokens
def test_users(store: Store) -> None:
    user = store.create_user("Ada")
    assert set(user) == {"id", "name", "created_at"}
    assert store.get_user(user["id"]) == user
    assert store.create_user("Ada")["id"] != user["id"]
    assert store.get_user("nobody") is None


def test_tokens_are_verified_by_hash_and_revocable(store: Store) -> None:
    plaintext, record = store.create_token("bot-1", ["play", "create_game"])
    other_plaintext, other = store.create_token("bot-2", ["play"])
    assert plaintext.startswith("tc_") and len(plaintext) >= 40 and plaintext != other_plaintext
    assert set(record) == {"id", "name", "scopes", "created_at", "revoked_at"}
    assert store.verify_token(plaintext) == record
    assert store.verify_token(plaintext + "x") is None
    assert store.verify_token("") is None

    listed = store.list_tokens()
    assert [t["id"] for t in listed] == [record["id"], other["id"]]
    for token in listed:
        assert set(token) == {"id", "name", "scopes", "created_at", "revoked_at"}
        assert plaintext not in repr(token) and other_plaintext not in repr(token)

    assert store.revoke_token(record["id"]) is True
    assert store.revoke_token(record["id"]) is False
    assert store.revoke_token("unknown") is False
    assert store.verify_token(plaintext) is None
    assert store.verify_token(other_plaintext) == other
    revoked = next(t for t in store.list_tokens() if t["id"] == record["id"])
    assert isinstance(revoked["revoked_at"], float)


# ------------------------------------------------------------------------------- participants, actions, kv
def test_participants(store: Store) -> None:
    first = store.add_participant("study-a", {"prolific_id": "P1", "consent": True, "answers": {1: "yes"}})
    assert (
        first["study_id"] == "study-a" and first["prolific_id"] == "P1" and first["answers"] == {"1": "yes"}
    )
    second = store.add_participant("study-a", {"prolific_id": "P2"})
    store.add_participant("study-b", {"prolific_id": "P3"})
    assert store.list_participants("study-a") == [first, second]
    assert [p["prolific_id"] for p in store.list_participants("study-b")] == ["P3"]
    assert store.list_participants("study-c") == []


def test_remember_and_recall_actions(store: Store) -> None:
    assert store.recall_action("g", "a1") is None
    assert store.remember_action("g", "a1", {"ok": True, "view": {"turn": 0}}, "digest-1") is True
    assert store.remember_action("g", "a1", {"ok": False}, "digest-2") is False
    assert store.recall_action("g", "a1") == {
        "response": {"ok": True, "view": {"turn": 0}},
        "action_digest": "digest-1",  # the request the answer belongs to, to tell a retry from a reuse
    }
    assert store.remember_action("other-game", "a1", {"ok": False}) is True  # ids are per game
    assert store.recall_action("other-game", "a1") == {"response": {"ok": False}, "action_digest": ""}


def test_values(store: Store) -> None:
    assert store.get_value("secret_key") is None
    assert store.set_value_if_absent("secret_key", "abc") == "abc"
    assert store.set_value_if_absent("secret_key", "def") == "abc"
    assert store.get_value("secret_key") == "abc"


def test_replace_value_is_a_conditional_write(store: Store) -> None:
    assert store.replace_value("k", None, None)  # absent, and stays so
    assert store.replace_value("k", None, "a")
    assert not store.replace_value("k", None, "b")  # it has a value now
    assert not store.replace_value("k", "x", "b")
    assert store.replace_value("k", "a", "a")  # same value: still a match
    assert store.replace_value("k", "a", "b") and store.get_value("k") == "b"
    assert not store.replace_value("k", "a", None)
    assert store.replace_value("k", "b", None) and store.get_value("k") is None
    assert not store.replace_value("k", "b", None)


def test_list_keys_pages_through_one_prefix(store: Store) -> None:
    for key in ["session:b", "session:a", "session:c", "sessions_epoch:x", "sessio", "game:1", "session;"]:
        store.set_value_if_absent(key, "v")
    assert store.list_keys("session:") == ["session:a", "session:b", "session:c"]
    assert store.list_keys("session:", limit=2) == ["session:a", "session:b"]
    assert store.list_keys("session:", after="session:b") == ["session:c"]
    assert store.list_keys("session:", after="session:c") == []
    assert store.list_keys("nothing:") == []
    assert store.list_keys("%") == [] and store.list_keys("session_") == []  # no wildcards


def test_racing_replacements_have_one_winner(store: Store) -> None:
    store.set_value_if_absent("epoch", "0")
    wins = _race(8, lambda w: store.replace_value("epoch", "0", f"w{w}"))
    assert wins.count(True) == 1
    assert store.get_value("epoch") == f"w{wins.index(True)}"
    claims = _race(8, lambda w: store.replace_value("seat", None, f"w{w}"))
    assert claims.count(True) == 1


def test_describe_names_backend_without_credentials(store: Store) -> None:
    assert store.backend in ("memory", "sqlite", "mongodb")
    assert "@" not in store.describe()


def test_reopening_keeps_everything(store_url: str) -> None:
    if store_url in ("sqlite:///:memory:", "memory://"):
        pytest.skip("an in-memory database ends with its store object")
    store = open_store(store_url)
    game_id = new_game(store)
    store.append_events(game_id, [event(0), event(1)])
    store.append_traces(game_id, [{"seat": 0, "event_seq": 1, "time": 1.0, "step": "act"}])
    user = store.create_user("Ada")
    plaintext, _ = store.create_token("bot", ["play"])
    store.close()
    reopened = open_store(store_url)
    try:
        assert [e["seq"] for e in reopened.load_events(game_id)] == [0, 1]
        assert reopened.load_traces(game_id) == [{"seat": 0, "event_seq": 1, "time": 1.0, "step": "act"}]
        assert reopened.get_user(user["id"]) == user
        assert reopened.verify_token(plaintext) is not None
    finally:
        reopened.close()


def test_unknown_url_is_refused() -> None:
    for url in ("postgres://localhost/db", "tradecraft.db", "sqlite://host/x.db"):
        with pytest.raises(StoreError) as error:
            open_store(url)
        assert error.value.code == "invalid_store_url"
