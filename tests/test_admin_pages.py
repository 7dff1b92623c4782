"""The admin dashboard's pages and REST routes (in-process app, real SQLite file): who may open them, the
login by password or admin token, handing a seat to a bot, the researcher's event log, per-game downloads."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from e2e_helpers import ADMIN_PASSWORD, DUEL_TRADE, write_config
from flask import Flask
from flask.testing import FlaskClient

from server.table.config import load_settings
from server.web.app import create_app


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Flask]:
    application = create_app(load_settings(write_config(tmp_path), environ={}))
    yield application
    application.extensions["tradecraft"].close()


def admin_client(app: Flask) -> FlaskClient:
    client = app.test_client()
    assert client.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 200
    return client


def running_duel(app: Flask) -> tuple[str, FlaskClient, FlaskClient]:
    """A duel between two logged-in people (Ada at seat 0, Bob at seat 1), started and untouched."""
    ada, bob = app.test_client(), app.test_client()
    for client, name in ((ada, "Ada"), (bob, "Bob")):
        assert client.post("/api/login", json={"name": name}).status_code == 200
    game_id = ada.post("/api/games", json={"hall": "duel", "join": True}).json["game"]["game_id"]
    assert bob.post(f"/api/games/{game_id}/join", json={}).json["seat"] == 1
    return game_id, ada, bob


def wait_for(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------ who may enter
ADMIN_PAGES = ["/admin", "/admin/tokens", "/admin/logout", "/admin/games/anything"]


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_every_admin_page_but_the_form_sends_strangers_to_the_form(app: Flask, page: str) -> None:
    stranger = app.test_client()
    assert stranger.post("/api/login", json={"name": "Eve"}).status_code == 200  # a player is no admin
    response = stranger.get(page)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/admin/login?next=" + page.split("?")[0])
    form = stranger.get("/admin/login")
    assert form.status_code == 200 and b'id="admin-login-form"' in form.data
    assert admin_client(app).get(page).status_code == 200


def test_the_login_form_sends_back_only_to_admin_pages(app: Flask) -> None:
    client = app.test_client()
    assert b'data-next="/admin/tokens"' in client.get("/admin/login?next=/admin/tokens").data
    for elsewhere in ("https://evil.example/", "//evil.example/admin", "/lobby"):
        assert b'data-next="/admin"' in client.get(f"/admin/login?next={elsewhere}").data


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/admin/overview"),
        ("get", "/api/admin/games/g/events"),
        ("get", "/api/admin/games/g/errors"),
        ("get", "/api/admin/games/g/tables.parquet.zip"),
        ("post", "/api/admin/games/g/seats/0/bot"),
    ],
)
def test_the_new_admin_routes_refuse_everyone_without_admin_rights(
    app: Flask, method: str, path: str
) -> None:
    client = app.test_client()
    response = getattr(client, method)(path, json={"bot": "random"} if method == "post" else None)
    assert response.status_code == 403 and response.json["error"]["code"] == "forbidden"


# ------------------------------------------------------------------------------------------- token login
def test_a_token_login_lasts_only_while_the_admin_token_lives(app: Flask) -> None:
    admin = admin_client(app)
    made = admin.post("/api/admin/tokens", json={"name": "researcher", "scopes": ["admin"]}).json
    player_token = admin.post("/api/admin/tokens", json={"name": "bot", "scopes": ["play"]}).json["token"]

    browser = app.test_client()
    refused = browser.post("/api/admin/login", json={"token": player_token})
    assert refused.status_code == 403 and refused.json["error"]["code"] == "forbidden"
    assert browser.post("/api/admin/login", json={"token": "tc_forged"}).status_code == 403
    assert browser.get("/api/admin/overview").status_code == 403

    assert browser.post("/api/admin/login", json={"token": made["token"]}).json == {"ok": True, "by": "token"}
    assert browser.get("/api/admin/overview").status_code == 200
    assert browser.get("/admin").status_code == 200

    assert admin.delete(f"/api/admin/tokens/{made['record']['id']}").json["revoked"] is True
    assert browser.get("/api/admin/overview").status_code == 403  # at once, on the next request
    assert browser.get("/admin").status_code == 302


def test_failed_token_logins_are_throttled_like_passwords(app: Flask) -> None:
    browser = app.test_client()
    codes = [
        browser.post("/api/admin/login", json={"token": f"tc_{n}"}).json["error"]["code"] for n in range(40)
    ]
    assert codes[0] == "forbidden" and codes[-1] == "rate_limited"
    # the password is refused too while the address is locked out
    assert browser.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 429


# ---------------------------------------------------------------------------------------- the game page
def test_overview_lists_live_games_with_their_turn(app: Flask) -> None:
    game_id, _, _ = running_duel(app)
    overview = admin_client(app).get("/api/admin/overview").json
    (row,) = [g for g in overview["live"] if g["game_id"] == game_id]
    assert row["status"] == "running" and row["turn"] == 1 and row["phase"]
    assert [s["name"] for s in row["seats"]] == ["Ada", "Bob"]
    assert all("user_id" not in s for s in row["seats"])


def test_the_researcher_event_log_includes_private_events_and_pages(app: Flask) -> None:
    game_id, ada, _ = running_duel(app)
    assert ada.post(f"/api/games/{game_id}/actions/propose", json=DUEL_TRADE).json["ok"]
    admin = admin_client(app)
    events = admin.get(f"/api/admin/games/{game_id}/events").json["events"]
    proposed = [e for e in events if e["type"] == "proposed"]
    assert proposed and proposed[0]["visibility"] == [0, 1] and proposed[0]["payload"]["offer"]
    later = admin.get(f"/api/admin/games/{game_id}/events?after={events[-2]['seq']}").json["events"]
    assert [e["seq"] for e in later] == [events[-1]["seq"]]
    unknown = admin.get("/api/admin/games/nope/events")
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "unknown_game"
    bad = admin.get(f"/api/admin/games/{game_id}/events?after=x")
    assert bad.status_code == 400 and bad.json["error"]["code"] == "invalid_request"


def test_a_seat_handed_to_a_bot_really_plays_its_next_move(app: Flask) -> None:
    game_id, ada, bob = running_duel(app)
    admin = admin_client(app)
    assert ada.post(f"/api/games/{game_id}/actions/propose", json=DUEL_TRADE).json["ok"]  # Bob must answer

    answer = admin.post(f"/api/admin/games/{game_id}/seats/1/bot", json={"bot": "random"})
    assert answer.status_code == 200 and answer.json["seat"]["bot"] == "random"

    def bob_decided() -> bool:
        events = admin.get(f"/api/admin/games/{game_id}/events").json["events"]
        return any(e["type"] == "decided" and e["payload"]["seat"] == 1 for e in events)

    wait_for(bob_decided)
    seats = admin.get(f"/api/admin/games/{game_id}").json["meta"]["seats"]
    assert seats[1]["takeover"] == "random" and seats[1]["name"] == "Bob"
    # the person no longer moves there
    refused = bob.post(f"/api/games/{game_id}/actions/finish_crafting", json={})
    assert refused.json["error"]["code"] in ("seat_taken_over", "wrong_phase")


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/api/admin/games/nope/seats/0/bot", {"bot": "random"}, 404, "unknown_game"),
        ("/api/admin/games/{game}/seats/7/bot", {"bot": "random"}, 404, "unknown_seat"),
        ("/api/admin/games/{game}/seats/x/bot", {"bot": "random"}, 400, "invalid_request"),
        ("/api/admin/games/{game}/seats/0/bot", {"bot": "no_such_bot"}, 400, "unknown_bot"),
        ("/api/admin/games/{game}/seats/0/bot", {"bot": "llm:openai:gpt-4o"}, 403, "bot_not_allowed"),
        ("/api/admin/games/{game}/seats/0/bot", {"bot": "random?api_key=x"}, 400, "credentials_in_spec"),
        ("/api/admin/games/{game}/seats/0/bot", {}, 400, "invalid_bot_spec"),
    ],
)
def test_a_bad_hand_over_is_refused_with_a_typed_error_and_changes_nothing(
    app: Flask, path: str, body: dict[str, str], status: int, code: str
) -> None:
    game_id, _, _ = running_duel(app)
    admin = admin_client(app)
    before = admin.get(f"/api/admin/games/{game_id}").json["meta"]["seats"]
    response = admin.post(path.format(game=game_id), json=body)
    assert (response.status_code, response.json["error"]["code"]) == (status, code)
    assert admin.get(f"/api/admin/games/{game_id}").json["meta"]["seats"] == before


def test_an_ended_game_cannot_be_handed_to_a_bot(app: Flask) -> None:
    game_id, _, _ = running_duel(app)
    admin = admin_client(app)
    assert admin.post(f"/api/admin/games/{game_id}/abort", json={}).status_code == 200
    response = admin.post(f"/api/admin/games/{game_id}/seats/0/bot", json={"bot": "random"})
    assert response.status_code == 409 and response.json["error"]["code"] == "game_over"


def test_a_game_downloads_as_parquet_tables(app: Flask) -> None:
    game_id, ada, _ = running_duel(app)
    assert ada.post(f"/api/games/{game_id}/actions/propose", json=DUEL_TRADE).json["ok"]
    response = admin_client(app).get(f"/api/admin/games/{game_id}/tables.parquet.zip")
    assert response.status_code == 200
    assert response.headers["Content-Disposition"] == f'attachment; filename="{game_id}-tables-parquet.zip"'
    archive = zipfile.ZipFile(io.BytesIO(response.data))
    games = pd.read_parquet(io.BytesIO(archive.read("games.parquet")))
    assert list(games["game_id"]) == [game_id]
    proposals = pd.read_parquet(io.BytesIO(archive.read("proposals.parquet")))
    assert len(proposals) == 1
