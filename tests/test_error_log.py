"""Each game's logged problems (server/web/error_log.py): kept in the store, bounded, secret-free, read by the
admin API; a real failing bot's warnings end up there."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import bot_policies
import pytest
from e2e_helpers import ADMIN_PASSWORD, DUEL_TRADE, write_config
from flask import Flask
from mongo_server import database_uri, drop_database

from server.store import Store, open_store
from server.table.config import load_settings
from server.web.app import create_app
from server.web.error_log import ERRORS_KEPT, MESSAGE_MAX_CHARS, GameErrorLog, read_errors

log = logging.getLogger("server.table.master")  # where the table logs "game %s: ..."


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-123")
    application = create_app(
        load_settings(write_config(tmp_path), environ={}), policy_factory=bot_policies.factory
    )
    yield application
    application.extensions["tradecraft"].close()


def new_duel(app: Flask) -> str:
    ada, bob = app.test_client(), app.test_client()
    for client, name in ((ada, "Ada"), (bob, "Bob")):
        assert client.post("/api/login", json={"name": name}).status_code == 200
    game_id = ada.post("/api/games", json={"hall": "duel", "join": True}).json["game"]["game_id"]
    assert bob.post(f"/api/games/{game_id}/join", json={}).json["seat"] == 1
    assert ada.post(f"/api/games/{game_id}/actions/propose", json=DUEL_TRADE).json["ok"]
    return game_id


def admin_get(app: Flask, path: str) -> dict:  # type: ignore[type-arg]
    client = app.test_client()
    assert client.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 200
    return client.get(path).json


def test_a_failing_bots_warnings_reach_its_games_admin_page(app: Flask) -> None:
    game_id = new_duel(app)
    admin = app.test_client()
    assert admin.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 200
    assert admin.post(f"/api/admin/games/{game_id}/seats/1/bot", json={"bot": "illegal"}).status_code == 200
    deadline = time.monotonic() + 15
    while True:
        errors = admin.get(f"/api/admin/games/{game_id}/errors").json["errors"]
        if any("keeps failing" in e["message"] for e in errors):
            break
        assert time.monotonic() < deadline, errors
        time.sleep(0.1)
    failed = [e for e in errors if "failed" in e["message"]]
    assert failed and failed[0]["level"] == "WARNING" and failed[0]["logger"] == "server.table.bot_seats"
    assert any(e["level"] == "ERROR" for e in errors)
    assert admin.get("/api/admin/games/nope/errors").json["error"]["code"] == "unknown_game"


def test_records_are_bounded_secret_free_and_only_for_known_games(app: Flask) -> None:
    game_id = new_duel(app)
    store = app.extensions["tradecraft"].store
    log.warning("game %s: provider said no to key %s", game_id, "sk-test-secret-value-123")
    log.warning("game %s: %s", game_id, "x" * 5000)
    log.info("game %s: an info line is no problem", game_id)
    log.warning("game %s: not a game of this server", "no-such-game")
    logging.getLogger("engineio.server").warning("game %s: a library's record is not kept", game_id)
    try:
        raise ValueError("broken sk-test-secret-value-123")
    except ValueError:
        log.exception("game %s: crashed", game_id)

    errors = admin_get(app, f"/api/admin/games/{game_id}/errors")["errors"]
    assert [e["level"] for e in errors] == ["WARNING", "WARNING", "ERROR"]
    assert "sk-test-secret" not in str(errors) and "[redacted]" in errors[0]["message"]
    assert len(errors[1]["message"]) <= MESSAGE_MAX_CHARS < 5000  # cut (the log text bounds it first)
    assert errors[2]["exception"] == "ValueError: broken [redacted]"
    assert store.get_value("game_errors:no-such-game") is None

    for n in range(ERRORS_KEPT + 5):
        log.warning("game %s: problem %s", game_id, n)
    kept = read_errors(store, game_id)
    assert len(kept) == ERRORS_KEPT and kept[-1]["message"].endswith(f"problem {ERRORS_KEPT + 4}")


def test_two_processes_append_to_the_same_list(app: Flask, tmp_path: Path) -> None:
    """Two stores on one SQLite file (two worker processes): each handler's records land in the one list."""
    game_id = new_duel(app)
    uri = app.extensions["tradecraft"].settings.database_uri
    first, second = open_store(uri), open_store(uri)
    try:
        for n, store in enumerate((first, second, first)):
            record = logging.LogRecord(
                "server", logging.WARNING, __file__, 1, "game %s: from %s", (game_id, n), None
            )
            GameErrorLog(store).handle(record)
        messages = [e["message"] for e in read_errors(first, game_id)]
        assert [m for m in messages if "from" in m] == [f"game {game_id}: from {n}" for n in range(3)]
    finally:
        first.close()
        second.close()


def test_two_workers_on_mongodb_append_to_the_same_list(mongo_uri: str) -> None:
    """The same on the MongoDB path (the project's wire-protocol test server): two stores, one database."""
    url = database_uri(mongo_uri, f"tc_errors_{uuid.uuid4().hex[:12]}")
    first, second = open_store(url), open_store(url)
    try:
        first.create_game("g-mongo-1", {"status": "running"})
        threads = [
            threading.Thread(target=_log_many, args=(store, "g-mongo-1", worker))
            for worker, store in enumerate((first, second))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        messages = {e["message"] for e in read_errors(second, "g-mongo-1")}
        assert messages == {f"game g-mongo-1: worker {w} problem {n}" for w in range(2) for n in range(20)}
    finally:
        first.close()
        second.close()
        drop_database(url)


def _log_many(store: Store, game_id: str, worker: int) -> None:
    handler = GameErrorLog(store)
    for n in range(20):
        args = (game_id, worker, n)
        handler.handle(
            logging.LogRecord(
                "server", logging.WARNING, __file__, 1, "game %s: worker %s problem %s", args, None
            )
        )
