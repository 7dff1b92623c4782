"""SQLite-specific behaviour behind the contract: file layout, pragmas, migrations, locking, pooling."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from server.store import SCHEMA_VERSION, StoreError, open_store
from server.store.sqlite import POOL_SIZE, SQLiteStore


def test_creates_data_dir_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "data" / "tradecraft.db"
    store = open_store(f"sqlite:///{path}")
    assert isinstance(store, SQLiteStore)
    assert path.exists()
    assert store.describe() == f"sqlite://{path}"
    with store._read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: every commit is fsynced
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    store.close()


def test_three_and_four_slash_urls_name_the_same_absolute_file(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    assert str(path).startswith("/")
    for url in (f"sqlite://{path}", f"sqlite:///{path}"):
        store = open_store(url)
        assert isinstance(store, SQLiteStore)
        assert store.path == str(path)
        store.close()


def test_url_options(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/t.db?synchronous=normal&busy_timeout_ms=1500")
    assert isinstance(store, SQLiteStore)
    with store._read() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1500
    store.close()
    for bad in ("?synchronous=sometimes", "?busy_timeout_ms=soon", "?journal=delete"):
        with pytest.raises(StoreError) as error:
            open_store(f"sqlite:///{tmp_path}/t.db{bad}")
        assert error.value.code == "invalid_store_url"


def test_schema_version_is_recorded_once_and_newer_schemas_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    for _ in range(2):
        store = open_store(url)
        assert isinstance(store, SQLiteStore)
        assert store.schema_version() == SCHEMA_VERSION
        store.close()
    raw = sqlite3.connect(tmp_path / "t.db")
    assert raw.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    raw.execute("INSERT INTO schema_version VALUES (?, 0)", (SCHEMA_VERSION + 1,))
    raw.commit()
    raw.close()
    with pytest.raises(StoreError) as error:
        open_store(url)
    assert error.value.code == "schema_too_new"


def test_only_the_token_hash_reaches_the_disk(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/t.db")
    plaintext, _ = store.create_token("bot", ["play"])
    store.close()  # checkpoint-free: the WAL file is read too
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("t.db"))
    assert plaintext.encode() not in data
    raw = sqlite3.connect(tmp_path / "t.db")
    (stored_hash,) = raw.execute("SELECT token_hash FROM tokens").fetchone()
    raw.close()
    assert len(stored_hash) == 64 and stored_hash != plaintext


def test_locked_database_gives_a_typed_error(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/t.db?busy_timeout_ms=100")
    blocker = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    try:
        with pytest.raises(StoreError) as error:
            store.create_game("g", {})
        assert error.value.code == "store_busy"
        assert "busy_timeout" in error.value.message
        assert store.list_games() == []  # reads still work under WAL
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    store.create_game("g", {})  # and the store is usable again
    store.close()


def test_connection_pool_stays_bounded(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/t.db")
    assert isinstance(store, SQLiteStore)
    store.create_game("g", {})
    barrier = threading.Barrier(20)

    def reader() -> None:
        barrier.wait()
        for _ in range(20):
            store.load_events("g")

    threads = [threading.Thread(target=reader) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 1 <= len(store._pool) <= POOL_SIZE
    store.close()
    with pytest.raises(StoreError) as error:
        store.get_game("g")
    assert error.value.code == "store_closed"


def test_unwritable_data_dir_is_a_typed_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError) as error:
        open_store(f"sqlite:///{blocker}/sub/t.db")
    assert error.value.code == "store_unavailable"


WRITER = """
import sys
from server.store import open_store
store = open_store(sys.argv[1])
store.create_game("g", {"status": "running"})
seq = 0
while True:
    event = {"seq": seq, "type": "passed", "actor": 0, "payload": {}, "visibility": "public"}
    store.append_events("g", [event])
    print(seq, flush=True)  # the acknowledgement: only after append_events returned
    seq += 1
"""


def test_acknowledged_appends_survive_kill_9(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    root = Path(__file__).resolve().parent.parent
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url], cwd=root, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert writer.stdout is not None
    acknowledged = -1
    try:
        for line in writer.stdout:
            acknowledged = int(line)
            if acknowledged >= 300:
                os.kill(writer.pid, signal.SIGKILL)  # mid-stream: the writer is inside its next append
                break
    finally:
        writer.kill()
        writer.wait(timeout=30)
    acknowledged = max([acknowledged, *(int(line) for line in writer.stdout.read().split())])
    store = open_store(url)
    log = store.load_events("g")
    store.close()
    assert acknowledged >= 300
    assert [e["seq"] for e in log] == list(range(len(log)))  # nothing torn, no gaps
    assert len(log) - 1 >= acknowledged  # every acknowledged event is there


def _append_in_forked_child(store: SQLiteStore, parent_pool_ids: list[int], results: Any) -> None:
    store.append_events(
        "g", [{"seq": 1, "type": "passed", "actor": 1, "payload": {}, "visibility": "public"}]
    )
    results.put([id(conn) for conn in store._pool] + [-1] + parent_pool_ids)


def test_a_forked_worker_opens_its_own_connections(tmp_path: Path) -> None:
    """gunicorn --preload forks after the store is opened: the child must not reuse the parent's
    connections."""
    store = open_store(f"sqlite:///{tmp_path}/t.db")
    assert isinstance(store, SQLiteStore)
    store.create_game("g", {})
    store.append_events(
        "g", [{"seq": 0, "type": "passed", "actor": 0, "payload": {}, "visibility": "public"}]
    )
    parent_pool = [id(conn) for conn in store._pool]
    assert parent_pool
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_append_in_forked_child, args=(store, parent_pool, results))
    child.start()
    reported = results.get(timeout=30)
    child.join(timeout=30)
    assert child.exitcode == 0
    split = reported.index(-1)
    child_pool, parents = reported[:split], reported[split + 1 :]
    assert child_pool and not set(child_pool) & set(parents)
    store.append_events(
        "g", [{"seq": 2, "type": "passed", "actor": 0, "payload": {}, "visibility": "public"}]
    )
    assert [e["seq"] for e in store.load_events("g")] == [0, 1, 2]
    store.close()


def _event(seq: int, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "type": "passed", "actor": 0, "payload": payload, "visibility": "public"}


def test_one_group_commit_keeps_each_append_checked_on_its_own(tmp_path: Path) -> None:
    """Appends written in one transaction: refused ones (a batch overlapping the log's end, an unknown game,
    a gap) write nothing and are left to report on their own; the others of the group stand."""
    from server.store.sqlite import _QueuedAppend

    store = SQLiteStore(tmp_path / "t.db")
    for game in ("a", "b", "c"):
        store.create_game(game, {"mode": "test"})
    store.append_events("a", [_event(0), _event(1)])

    def queued(game: str, *seqs: int) -> _QueuedAppend:
        return _QueuedAppend([(game, seq, 1.0, f'{{"seq":{seq}}}') for seq in seqs])

    group = [queued("a", 1, 2, 3), queued("b", 0, 1), queued("missing", 0), queued("c", 1), queued("b", 2)]
    store._write_group(group)
    assert [q.written for q in group] == [False, True, False, False, True]
    assert [e["seq"] for e in store.load_events("a")] == [0, 1]  # 2 and 3 were taken out again
    assert [e["seq"] for e in store.load_events("b")] == [0, 1, 2]
    assert store.load_events("c") == [] and store.load_events("missing") == []
    store.close()


def test_concurrent_appends_commit_in_groups_and_keep_every_game_gap_free(tmp_path: Path) -> None:
    from server.store import SequenceConflict

    store = open_store(f"sqlite:///{tmp_path}/t.db?synchronous=NORMAL")
    games = [f"g{i}" for i in range(6)]
    for game in games:
        store.create_game(game, {"mode": "test"})
    accepted: dict[str, list[int]] = {game: [] for game in games}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        # two threads per game race for each number: exactly one wins it, the other gets a conflict
        game = games[index % len(games)]
        for seq in range(40):
            try:
                store.append_events(game, [_event(seq, writer=index)])
            except SequenceConflict:
                continue
            except BaseException as exc:
                errors.append(exc)
                return
            with lock:
                accepted[game].append(seq)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2 * len(games))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    for game in games:
        stored = store.load_events(game)
        assert [e["seq"] for e in stored] == list(range(len(stored)))
        assert sorted(accepted[game]) == [e["seq"] for e in stored]  # acknowledged <=> stored
    store.close()


def test_a_failed_group_transaction_retries_each_append_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    store.create_game("g", {"mode": "test"})
    real_write = SQLiteStore._write
    failures = iter([True])

    def flaky_write(self: SQLiteStore) -> Any:
        if next(failures, False):
            raise sqlite3.OperationalError("disk I/O error")
        return real_write(self)

    monkeypatch.setattr(SQLiteStore, "_write", flaky_write)
    store.append_events("g", [_event(0), _event(1)])  # the group failed; the append alone succeeded
    assert [e["seq"] for e in store.load_events("g")] == [0, 1]
    store.close()
