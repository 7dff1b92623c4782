"""MongoDB-backend specifics behind the contract, exercised under mongomock (no server needed)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from server.store import SequenceConflict, StoreError, open_store

mongomock = pytest.importorskip("mongomock", reason="mongomock is a dev dependency: pip install -e '.[dev]'")

from server.store.mongo import MongoStore  # noqa: E402


@pytest.fixture
def store() -> MongoStore:
    opened = open_store(f"mongomock://localhost/tc_{uuid.uuid4().hex[:12]}")
    assert isinstance(opened, MongoStore)
    return opened


def event(seq: int, actor: int | None = 0) -> dict[str, Any]:
    return {"seq": seq, "type": "passed", "actor": actor, "payload": {}, "visibility": "public"}


def test_indexes_are_created_and_unique(store: MongoStore) -> None:
    events_index = store.events.index_information()["game_seq"]
    assert events_index["unique"] and list(events_index["key"]) == [("game_id", 1), ("seq", 1)]
    assert store.tokens.index_information()["token_hash"]["unique"]
    assert store.actions.index_information()["game_action"]["unique"]
    # opening the same database again (another worker) re-creates the indexes idempotently
    again = MongoStore(store.client, store.database_name)
    assert set(again.events.index_information()) == set(store.events.index_information())


def test_mongomock_has_no_transactions_so_the_fallback_is_used(store: MongoStore) -> None:
    assert store.supports_transactions is False


def test_partial_batch_is_cleaned_up_when_another_writer_interleaves(
    store: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process inserts seq 2 between our check and our insert of seqs 1..3: our seq 1 (already
    inserted) is removed again, the other writer's event stays, and we get SequenceConflict."""
    store.create_game("g", {})
    store.append_events("g", [event(0)])
    real_check = store._check_append

    def check_then_get_overtaken(game_id: str, first_seq: int, session: Any = None) -> None:
        real_check(game_id, first_seq, session)
        store.events.insert_one(
            {"game_id": game_id, "seq": 2, "time": 1.0, "batch": "other", "event": event(2, 9)}
        )

    monkeypatch.setattr(store, "_check_append", check_then_get_overtaken)
    with pytest.raises(SequenceConflict):
        store.append_events("g", [event(1), event(2), event(3)])
    monkeypatch.undo()
    assert [(e["seq"], e["actor"]) for e in store.load_events("g")] == [(0, 0), (2, 9)]


def test_only_the_token_hash_is_stored(store: MongoStore) -> None:
    plaintext, record = store.create_token("bot", ["play"])
    doc = store.tokens.find_one({"_id": record["id"]})
    assert doc is not None
    assert plaintext not in repr(doc)
    assert len(doc["token_hash"]) == 64


def test_same_mongomock_url_shares_data_like_one_server() -> None:
    url = f"mongomock://shared-host/tc_{uuid.uuid4().hex[:12]}"
    first, second = open_store(url), open_store(url)
    first.create_game("g", {"mode": "x"})
    game = second.get_game("g")
    assert game is not None and game["mode"] == "x"


def test_unreachable_server_is_a_typed_error_without_credentials() -> None:
    url = "mongodb://alice:s3cret@127.0.0.1:9/tradecraft?serverSelectionTimeoutMS=200&connectTimeoutMS=200"
    with pytest.raises(StoreError) as error:
        open_store(url)
    assert error.value.code == "store_unavailable"
    assert "s3cret" not in error.value.message
    assert "mongodb://127.0.0.1:9/tradecraft" in error.value.message


def test_invalid_mongo_url_is_a_typed_error() -> None:
    with pytest.raises(StoreError) as error:
        open_store("mongodb://")
    assert error.value.code == "invalid_store_url"


class FakeTransactionSession:
    """Stands in for a pymongo ClientSession on a replica set: runs the callback once (mongomock cannot take
    a session argument, so the callback gets None). It checks the transaction path's control flow and error
    mapping; the all-or-nothing guarantee itself is MongoDB's and is covered by TRADECRAFT_TEST_MONGO_URI."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.failure = failure
        self.write_concern: Any = None

    def __enter__(self) -> FakeTransactionSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def with_transaction(self, callback: Any, write_concern: Any = None) -> Any:
        self.write_concern = write_concern
        if self.failure is not None:
            raise self.failure
        return callback(None)


def test_transaction_path_appends_and_maps_conflicts(
    store: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pymongo.errors import OperationFailure

    session = FakeTransactionSession()
    monkeypatch.setattr(store, "supports_transactions", True)
    monkeypatch.setattr(store.client, "start_session", lambda: session, raising=False)
    store.create_game("g", {})
    store.append_events("g", [event(0), event(1)])
    assert session.write_concern.document == {"w": "majority", "j": True}
    with pytest.raises(SequenceConflict):  # seen by the in-transaction check
        store.append_events("g", [event(1)])

    real_check = store._check_append

    def check_then_get_overtaken(game_id: str, first_seq: int, session: Any = None) -> None:
        real_check(game_id, first_seq, session)
        store.events.insert_one(
            {"game_id": game_id, "seq": first_seq, "batch": "other", "event": event(2, 9)}
        )

    monkeypatch.setattr(store, "_check_append", check_then_get_overtaken)
    with pytest.raises(SequenceConflict) as conflict:  # the unique index refused the insert
        store.append_events("g", [event(2)])
    assert conflict.value.expected == 3
    monkeypatch.setattr(store, "_check_append", real_check)

    write_conflict = OperationFailure("WriteConflict", code=112)
    write_conflict._add_error_label("TransientTransactionError")
    monkeypatch.setattr(
        store.client, "start_session", lambda: FakeTransactionSession(write_conflict), raising=False
    )
    with pytest.raises(SequenceConflict):  # a concurrent transaction won and retries ran out
        store.append_events("g", [event(3)])
    monkeypatch.setattr(
        store.client,
        "start_session",
        lambda: FakeTransactionSession(OperationFailure("boom", code=2)),
        raising=False,
    )
    with pytest.raises(StoreError) as failure:
        store.append_events("g", [event(3)])
    assert failure.value.code == "store_failure"
    assert [e["seq"] for e in store.load_events("g")] == [0, 1, 2]
