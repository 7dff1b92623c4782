"""The admin area and CLI (in-process Flask test client): password gate, tokens, exports, abort, health."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from e2e_helpers import DUEL_CRAFTS, DUEL_TRADE, write_config
from flask import Flask

from server.store import open_store
from server.table.config import load_settings
from server.web.app import create_app
from tradecraft.cli import main as cli

PASSWORD = "test-admin-password"
BASIC = {"Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()}


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Flask]:
    application = create_app(load_settings(write_config(tmp_path), environ={}))
    yield application
    application.extensions["tradecraft"].close()


def played_game(app: Flask) -> str:
    """A finished duel played through the REST API (two logged-in test clients)."""
    ada, bob = app.test_client(), app.test_client()
    for client, name in ((ada, "Ada"), (bob, "Bob")):
        assert client.post("/api/login", json={"name": name}).status_code == 200
    game_id = ada.post("/api/games", json={"hall": "duel", "join": True}).json["game"]["game_id"]
    assert bob.post(f"/api/games/{game_id}/join", json={}).json["seat"] == 1
    url = f"/api/games/{game_id}/actions"
    steps = [
        (ada, "propose", DUEL_TRADE),
        (bob, "decide", {"accept": True, "message": "<script>x</script>"}),
        (ada, "craft", DUEL_CRAFTS[0][0]),
        (ada, "craft", DUEL_CRAFTS[0][1]),
        (bob, "craft", DUEL_CRAFTS[1][0]),
        (ada, "finish_crafting", {}),
        (bob, "finish_crafting", {}),
    ]
    for client, kind, body in steps:
        response = client.post(f"{url}/{kind}", json=body)
        assert response.status_code == 200 and response.json["ok"], response.json
    return game_id


def test_admin_needs_the_password(app: Flask, tmp_path: Path) -> None:
    client = app.test_client()
    response = client.get("/api/admin/games")
    assert response.status_code == 403 and response.json["error"]["code"] == "forbidden"
    assert client.post("/api/admin/login", json={"password": "nope"}).status_code == 403
    assert (
        client.get("/api/admin/games", headers={"Authorization": "Basic YWRtaW46bm9wZQ=="}).status_code == 403
    )
    assert client.post("/api/admin/login", json={"password": PASSWORD}).status_code == 200
    assert client.get("/api/admin/games").status_code == 200  # the session remembers the login
    assert client.post("/api/admin/logout").status_code == 200
    assert client.get("/api/admin/games").status_code == 403
    settings = client.get("/api/admin/settings", headers=BASIC).json["settings"]
    assert PASSWORD not in json.dumps(settings) and "admin_password" not in settings["security"]
    # no password configured: the area is closed for everyone
    closed = create_app(load_settings(write_config(tmp_path / "closed", admin_password=None), environ={}))
    try:
        response = closed.test_client().get("/api/admin/games", headers=BASIC)
        assert response.status_code == 403 and response.json["error"]["code"] == "admin_disabled"
    finally:
        closed.extensions["tradecraft"].close()


def test_tokens_created_listed_revoked_and_never_shown_again(app: Flask) -> None:
    client = app.test_client()
    created = client.post("/api/admin/tokens", json={"name": "agent-1", "scopes": ["play"]}, headers=BASIC)
    assert created.status_code == 201
    token, record = created.json["token"], created.json["record"]
    listed = client.get("/api/admin/tokens", headers=BASIC).json["tokens"]
    assert [t["id"] for t in listed] == [record["id"]] and token not in json.dumps(listed)
    agent = app.test_client()
    me = agent.get("/api/me", headers={"Authorization": f"Bearer {token}"}).json["user"]
    assert me == {"id": f"token:{record['id']}", "name": "agent-1", "kind": "agent"}
    assert agent.get("/api/admin/games", headers={"Authorization": f"Bearer {token}"}).status_code == 403
    bad_scope = client.post("/api/admin/tokens", json={"name": "x", "scopes": ["root"]}, headers=BASIC)
    assert bad_scope.status_code == 400 and bad_scope.json["error"]["code"] == "invalid_request"
    assert client.delete(f"/api/admin/tokens/{record['id']}", headers=BASIC).json["revoked"] is True
    refused = agent.get("/api/me", headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401 and refused.json["error"]["code"] == "invalid_token"
    admin_token = client.post("/api/admin/tokens", json={"name": "ops", "scopes": ["admin"]}, headers=BASIC)
    headers = {"Authorization": f"Bearer {admin_token.json['token']}"}
    assert agent.get("/api/admin/games", headers=headers).status_code == 200


def test_exports_and_researcher_view(app: Flask) -> None:
    game_id = played_game(app)
    client = app.test_client()
    research = client.get(f"/api/admin/games/{game_id}", headers=BASIC).json
    assert research["view"]["finished"] and research["meta"]["status"] == "finished"
    full = client.get(f"/api/admin/games/{game_id}/export", headers=BASIC)
    assert full.status_code == 200 and full.mimetype == "application/x-ndjson"
    lines = [json.loads(line) for line in full.get_data(as_text=True).splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["game_id"] == game_id
    assert any(line.get("type") == "crafted" and line.get("actor") == 1 for line in lines)
    seat0 = [
        json.loads(line)
        for line in client.get(f"/api/admin/games/{game_id}/export?seat=0", headers=BASIC)
        .get_data(as_text=True)
        .splitlines()
    ]
    assert seat0[0]["your_target"] == {"torch": 1} and "shears" not in json.dumps(seat0[0])
    crafted = [line for line in seat0 if line.get("type") == "crafted"]
    assert crafted and all(line["actor"] == 0 for line in crafted)  # not the other seat's crafting
    missing = client.get(f"/api/admin/games/{game_id}/export?seat=5", headers=BASIC)
    assert missing.status_code == 404 and missing.json["error"]["code"] == "unknown_seat"
    tables = client.get(f"/api/admin/export.zip?game_id={game_id}", headers=BASIC)
    assert tables.status_code == 200
    with zipfile.ZipFile(io.BytesIO(tables.data)) as archive:
        names = set(archive.namelist())
        assert {"proposals.csv", "crafts.csv"} <= names
        assert game_id in archive.read("proposals.csv").decode()


def test_abort_health_and_index(app: Flask) -> None:
    client = app.test_client()
    assert client.post("/api/login", json={"name": "<i>Eve</i>"}).status_code == 200
    game_id = client.post("/api/games", json={"hall": "duel", "join": True}).json["game"]["game_id"]
    assert client.post(f"/api/admin/games/{game_id}/abort", json={}, headers=BASIC).status_code == 200
    again = client.post(f"/api/admin/games/{game_id}/abort", json={}, headers=BASIC)
    assert again.status_code == 409 and again.json["error"]["code"] == "game_over"
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json["status"] == "ok"
    page = client.get("/").get_data(as_text=True)
    assert "<i>Eve</i>" not in page and "&lt;i&gt;Eve&lt;/i&gt;" in page
    unknown = client.get("/api/nothing-here")
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "invalid_request"
    too_big = client.post("/api/login", data="x" * 20_000, content_type="application/json")
    assert too_big.status_code == 413 and too_big.json["error"]["code"] == "payload_too_large"
    broken = client.post("/api/login", data="{not json", content_type="application/json")
    assert broken.status_code == 400 and broken.json["error"]["code"] == "invalid_request"


def test_cli_creates_lists_and_revokes_tokens(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    runner = CliRunner()
    created = runner.invoke(
        cli, ["admin", "--config", str(config), "create-token", "cli-bot", "--scope", "play"]
    )
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("tc_")
    settings = load_settings(config, environ={})
    with open_store(settings.database_uri) as store:
        record = store.verify_token(token)
    assert record is not None and record["name"] == "cli-bot"
    listed = runner.invoke(cli, ["admin", "--config", str(config), "list-tokens"])
    assert record["id"] in listed.stdout and token not in listed.stdout
    revoked = runner.invoke(cli, ["admin", "--config", str(config), "revoke-token", record["id"]])
    assert revoked.exit_code == 0
    again = runner.invoke(cli, ["admin", "--config", str(config), "revoke-token", record["id"]])
    assert again.exit_code != 0 and "list-tokens" in again.output
