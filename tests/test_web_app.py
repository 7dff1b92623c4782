"""The app factory (in-process Flask and Socket.IO test clients): every app's blueprints and Socket.IO
handlers reach that app's own services, so two apps in one process share no state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import write_config
from flask import Flask

from server.table.config import load_settings
from server.web.app import create_app
from server.web.services import current_services

#: Two logins per address and window, so the third shows whose counter it hit.
TWO_LOGINS = {"limits": {"logins_per_address": {"count": 2, "seconds": 600}}}


def build(folder: Path, overrides: dict[str, Any]) -> Flask:
    return create_app(load_settings(write_config(folder), environ={}, overrides=overrides))


@pytest.fixture
def two_apps(tmp_path: Path) -> Iterator[tuple[Flask, Flask]]:
    """App ``a`` plays the test halls (minecraft); app ``b`` also an alchemy hall. Each has its own store."""
    first = build(tmp_path / "a", TWO_LOGINS)
    second = build(tmp_path / "b", {**TWO_LOGINS, "halls": {"lab": {"ruleset": "alchemy", "players": 2}}})
    yield first, second
    for app in (first, second):
        app.extensions["tradecraft"].close()


def login(app: Flask, name: str) -> Any:
    client = app.test_client()
    assert client.post("/api/login", json={"name": name}).status_code == 200
    return client


def test_two_apps_in_one_process_share_no_state(two_apps: tuple[Flask, Flask]) -> None:
    a, b = two_apps
    ada = login(a, "Ada")
    game_id = ada.post("/api/games", json={"hall": "duel", "join": True}).json["game"]["game_id"]

    # stores and tables: b knows nothing of a's game, nor of a's user
    assert [g["game_id"] for g in ada.get("/api/games").json["games"]] == [game_id]
    assert b.test_client().get("/api/games").json["games"] == []
    unknown = b.test_client().get(f"/api/games/{game_id}")
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "unknown_game"
    # replays: each app's Replays asks its own table
    assert ada.get(f"/api/games/{game_id}/replay").json["error"]["code"] == "game_not_over"
    assert b.test_client().get(f"/api/games/{game_id}/replay").status_code == 404

    # rate limiters: a's logins are used up, b's are not
    login(a, "Bob")
    refused = a.test_client().post("/api/login", json={"name": "Cy"})
    assert refused.status_code == 429 and refused.json["error"]["code"] == "rate_limited"
    login(b, "Cy")

    # served rule sets: each app serves its own halls' rule sets
    assert a.test_client().get("/api/rulesets").json["rulesets"] == ["minecraft"]
    assert b.test_client().get("/api/rulesets").json["rulesets"] == ["alchemy", "minecraft"]
    missing = a.test_client().get("/api/rulesets/alchemy/items")
    assert missing.status_code == 404 and missing.json["error"]["code"] == "unknown_ruleset"
    assert b.test_client().get("/api/rulesets/alchemy/items").status_code == 200
    assert a.test_client().get("/rulesets/alchemy/icons").status_code == 404
    assert b.test_client().get("/rulesets/alchemy/icons").status_code == 200

    # Socket.IO: each app's handlers answer from that app's lobby
    ada_socket = a.extensions["socketio"].test_client(a, flask_test_client=ada)
    stranger_socket = b.extensions["socketio"].test_client(b)
    try:
        ada_lobby = ada_socket.emit("lobby", {}, callback=True)
        assert [g["game_id"] for g in ada_lobby["my_games"]] == [game_id]
        assert stranger_socket.emit("lobby", {}, callback=True)["games"] == []
        assert stranger_socket.emit("whoami", {}, callback=True)["user"] is None
    finally:
        ada_socket.disconnect()
        stranger_socket.disconnect()

    # closing one app leaves the other working
    a.extensions["tradecraft"].close()
    assert b.test_client().get("/healthz").json["status"] == "ok"
    assert "lab" in {hall["name"] for hall in b.test_client().get("/api/halls").json["halls"]}


def test_current_services_needs_an_app_built_by_create_app() -> None:
    with Flask("not_tradecraft").app_context(), pytest.raises(RuntimeError, match="create_app"):
        current_services()
