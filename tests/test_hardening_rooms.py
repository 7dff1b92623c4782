"""Hardening of the action path in-process (no sockets): idempotent retries and answers after a stored change.

- a ``client_action_id`` reused with another action is the typed ``idempotency_conflict`` (a true retry gets
  the recorded answer), in both stores;
- once an action is stored, no failure may be answered as if nothing happened: a failing push is logged and
  the ack still goes out; an ack that cannot be built is ``answer_failed`` with ``applied: true``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import DUEL_TRADE, write_config
from table_support import ADA, BOB, Worker

from server.store import open_store
from server.store.sqlite import MIGRATIONS
from server.table.config import load_settings
from server.table.errors import ServerError
from server.table.live import CLAIM_STALE_SECONDS
from server.table.master import Table, action_claim_key
from server.table.transport import PushTransport


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Worker]:
    config = write_config(tmp_path / "cfg", database_uri=f"sqlite:///{tmp_path / 'shared.db'}")
    made = Worker(load_settings(config, environ={}))
    yield made
    made.close()


def duel(worker: Worker) -> str:
    game_id = worker.lobby.create_game("duel", ADA, join=True)["game_id"]
    worker.lobby.join(game_id, BOB)
    return str(game_id)


def test_a_reused_client_action_id_with_another_action_is_a_typed_conflict(worker: Worker) -> None:
    game_id = duel(worker)
    first = worker.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE}, client_action_id="x")
    assert first["ok"]
    log_before = worker.store.last_seq(game_id)
    with pytest.raises(ServerError) as refused:
        worker.table.act(game_id, ADA, {"type": "pass"}, client_action_id="x")
    assert refused.value.code == "idempotency_conflict" and refused.value.status == 409
    assert worker.store.last_seq(game_id) == log_before  # nothing was applied
    # a true retry, spelled differently (field order), gets the recorded answer and applies nothing
    retry = dict(reversed({"type": "propose", **DUEL_TRADE}.items()))
    assert worker.table.act(game_id, ADA, retry, client_action_id="x") == first
    assert worker.store.last_seq(game_id) == log_before
    # ids are per caller: Bob may use "x" for his own action
    assert worker.table.act(game_id, BOB, {"type": "decide", "accept": False}, client_action_id="x")["ok"]


def test_an_action_id_another_process_is_applying_is_refused_until_its_claim_ends(worker: Worker) -> None:
    """Another server process mid-apply holds the id's claim in the store: this one applies nothing and
    answers ``action_in_progress``; a claim left by a crash (stale) is taken over; claims are released."""
    game_id = duel(worker)
    key = action_claim_key(game_id, f"{ADA.id}:x")
    worker.store.set_value_if_absent(key, json.dumps({"at": time.time(), "digest": "", "by": "other"}))
    log_before = worker.store.last_seq(game_id)
    with pytest.raises(ServerError) as refused:
        worker.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE}, client_action_id="x")
    assert refused.value.code == "action_in_progress" and refused.value.status == 409
    assert worker.store.last_seq(game_id) == log_before
    stale = json.dumps({"at": time.time() - CLAIM_STALE_SECONDS - 1, "digest": "", "by": "crashed"})
    assert worker.store.replace_value(key, worker.store.get_value(key), stale)
    assert worker.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE}, client_action_id="x")["ok"]
    assert worker.store.get_value(key) is None  # released once the answer is remembered


def test_a_retry_on_another_process_while_the_first_is_answering_gets_that_answer(tmp_path: Path) -> None:
    """Two workers over one SQLite file, each with its own lock. The first has stored the action but not yet
    remembered its answer when a retry of the same id reaches the second: the retry must not apply or judge
    the action again (a craft is legal twice; this propose would now be refused as out of turn) but answer
    ``action_in_progress``, and once the first is done, the same ack."""
    config = write_config(tmp_path / "cfg", database_uri=f"sqlite:///{tmp_path / 'shared.db'}")
    first, second = (Worker(load_settings(config, environ={})) for _ in range(2))
    try:
        game_id = duel(first)
        second.table.get(game_id)
        stored, retried = threading.Event(), threading.Event()
        remember = first.store.remember_action

        def remember_after_the_retry(*args: Any, **kwargs: Any) -> bool:
            stored.set()
            retried.wait(10)
            return remember(*args, **kwargs)

        first.store.remember_action = remember_after_the_retry  # type: ignore[method-assign]
        action = {"type": "propose", **DUEL_TRADE}
        acks: list[Any] = []
        applying = threading.Thread(
            target=lambda: acks.append(first.table.act(game_id, ADA, action, client_action_id="once"))
        )
        applying.start()
        assert stored.wait(10)
        with pytest.raises(ServerError) as refused:
            second.table.act(game_id, ADA, action, client_action_id="once")
        assert refused.value.code == "action_in_progress", refused.value.code
        retried.set()
        applying.join(10)
        assert second.table.act(game_id, ADA, action, client_action_id="once") == acks[0]
        proposals = [e for e in first.store.load_events(game_id) if e["type"] == "proposed"]
        assert len(proposals) == 1
    finally:
        first.close()
        second.close()


def test_a_retry_of_a_craft_matches_whatever_the_number_spelling(worker: Worker) -> None:
    game_id = duel(worker)
    worker.table.act(game_id, ADA, {"type": "pass"})
    first = worker.table.act(
        game_id, ADA, {"type": "craft", "recipe": "stick", "runs": 0.5}, client_action_id="c"
    )
    again = worker.table.act(
        game_id, ADA, {"type": "craft", "recipe": "stick", "runs": "0.5"}, client_action_id="c"
    )
    assert first["ok"] and again == first
    with pytest.raises(ServerError) as refused:
        worker.table.act(
            game_id, ADA, {"type": "craft", "recipe": "stick", "runs": "1/4"}, client_action_id="c"
        )
    assert refused.value.code == "idempotency_conflict"


def test_a_failing_push_after_a_stored_action_still_answers_ok(
    worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    game_id = duel(worker)

    def broken_push(event: str, data: dict[str, Any], room: str, skip: str | None = None) -> None:
        if room.endswith(":seat:1"):
            raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")
        worker.pushes.append((event, data, room))

    worker.table.transport = PushTransport(broken_push)
    with caplog.at_level(logging.ERROR, logger="server.table.master"):
        ack = worker.table.act(game_id, ADA, {"type": "pass"})
    assert ack["ok"] and ack["view"]["phase"] == "craft"
    assert "pushing a stored action failed" in caplog.text
    assert worker.store.load_events(game_id)[-1]["payload"]["phase"] == "craft"


def test_an_answer_that_cannot_be_built_says_the_action_was_applied(
    worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    game_id = duel(worker)
    stored_before = worker.store.last_seq(game_id)

    def broken_envelope(self: Table, live: Any, seat: int | None) -> dict[str, Any]:
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")

    monkeypatch.setattr(Table, "envelope", broken_envelope)
    with pytest.raises(ServerError) as failed:
        worker.table.act(game_id, ADA, {"type": "pass"})
    assert failed.value.code == "answer_failed" and failed.value.details["applied"] is True
    assert "nothing changed" not in failed.value.message
    assert worker.store.last_seq(game_id) > stored_before  # it really was applied


def test_a_schema_1_sqlite_file_gains_action_digests(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at REAL)")
    for statement in MIGRATIONS[0]:
        raw.execute(statement)
    raw.execute("INSERT INTO schema_version VALUES (1, 0)")
    raw.execute("INSERT INTO actions VALUES ('g', 'u:a1', 0, '{\"ok\": true}')")
    raw.commit()
    raw.close()
    store = open_store(f"sqlite:///{path}")
    try:
        assert store.recall_action("g", "u:a1") == {"response": {"ok": True}, "action_digest": ""}
        assert store.remember_action("g", "u:a2", {"ok": True}, "d2")
        assert store.recall_action("g", "u:a2") == {"response": {"ok": True}, "action_digest": "d2"}
    finally:
        store.close()
