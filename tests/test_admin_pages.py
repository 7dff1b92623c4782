"""The admin dashboard's pages and REST routes (in-process app, real SQLite file): who may open them, the
login by password or admin token, handing a seat to a bot, the researcher's event log, per-game downloads."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from e2e_helpers import ADMIN_PASSWORD, DUEL_TRADE, write_config
from flask import Flask
from flask.testing import FlaskClient
from mongo_server import database_uri, drop_database

from server.table.config import load_settings
from server.table.errors import ServerError
from server.table.principal import Principal
from server.web.app import create_app
from server.web.study import flow
from server.web.study.definition import load_definition
from server.web.study.records import StudyGame, load_study, save_study, save_study_game

ROOT = Path(__file__).resolve().parent.parent


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


# ------------------------------------------------------------------------------------------------ studies
STUDY = "duel-pilot"
RIGHT = {"target_private": 1, "trade_answer": 1}
WRONG = {"target_private": 0, "trade_answer": 1}


def pid(n: int) -> dict[str, str]:
    return {"PROLIFIC_PID": f"{n:024x}", "STUDY_ID": "a" * 24, "SESSION_ID": f"{n + 100:024x}"}


def study_with_participants(app: Flask) -> dict[str, Any]:
    """The shipped pilot study with five participants: one just arrived, one at the practice, two matched
    into a running game of the study's hall (seated by the lobby as the matcher would), one screened out."""
    services = app.extensions["tradecraft"]
    store = services.store
    record = save_study(store, load_definition(ROOT / "studies" / "duel_pilot.yaml"))
    definition = services.studies.definition(record)
    made = [flow.arrive(store, record, pid(n)) for n in range(5)]
    fresh, practising, first, second, screened = (p.id for p in made)
    for participant_id in (practising, first, second, screened):
        flow.give_consent(store, definition, participant_id, True)
        flow.finish_instructions(store, definition, participant_id)
    for participant_id in (first, second, screened):
        flow.advance(store, definition, participant_id)  # past the practice game
    flow.answer_comprehension(store, definition, screened, WRONG)
    flow.answer_comprehension(store, definition, screened, WRONG)
    for participant_id in (first, second):
        flow.answer_comprehension(store, definition, participant_id, RIGHT)
        flow.confirm_presence(store, definition, participant_id)
    people = [Principal(id=p.user_id, name=p.name, kind="human") for p in made[2:4]]
    game_id = services.lobby.create_game(definition.hall_name, people[0], join=True)["game_id"]
    services.lobby.join(game_id, people[1])
    services.table.seats_changed(game_id)
    for seat, participant_id in enumerate((first, second)):
        flow.matched(store, definition, participant_id, game_id, seat, [])
    save_study_game(
        store, StudyGame(game_id=game_id, study_id=STUDY, participants={0: first, 1: second}, created_at=0.0)
    )
    return {
        "fresh": fresh,
        "practising": practising,
        "first": first,
        "second": second,
        "screened": screened,
        "game_id": game_id,
    }


def test_the_study_routes_refuse_strangers(app: Flask) -> None:
    study_with_participants(app)
    stranger = app.test_client()
    for response in (
        stranger.get("/api/admin/studies"),
        stranger.get(f"/api/admin/studies/{STUDY}"),
        stranger.post(f"/api/admin/studies/{STUDY}/status", json={"status": "closed"}),
    ):
        assert response.status_code == 403 and response.json["error"]["code"] == "forbidden"
    assert stranger.get("/admin/studies").status_code == 302
    assert admin_client(app).get(f"/api/admin/studies/{STUDY}").json["study"]["status"] == "open"


def test_the_funnel_counts_each_stage_and_lists_participants_for_the_admin(app: Flask) -> None:
    ids = study_with_participants(app)
    admin = admin_client(app)
    (listed,) = admin.get("/api/admin/studies").json["studies"]
    expected = {
        "arrived": 5,
        "consented": 4,
        "passed_check": 2,
        "waiting": 0,
        "playing": 2,
        "finished": 0,
        "dropped": 0,
        "screened_out": 1,
        "no_partner": 0,
        "declined": 0,
    }
    assert listed["funnel"] == expected and listed["status"] == "open"
    study = admin.get(f"/api/admin/studies/{STUDY}").json
    rows = {row["id"]: row for row in study["participants"]}
    assert rows[ids["screened"]]["outcome"] == "screened_out" and rows[ids["screened"]]["code"] == "C2SCREEN"
    assert rows[ids["first"]]["recruitment"]["participant_id"] == f"{2:024x}"  # admins see recruitment ids
    assert rows[ids["first"]]["current_game"] == ids["game_id"]
    (game,) = study["live_games"]
    assert game["game_id"] == ids["game_id"] and game["status"] == "running"
    assert admin_client(app).get("/admin/studies/duel-pilot").status_code == 200


def test_booting_a_player_gives_the_dropped_code_and_their_seat_to_the_fill_in(app: Flask) -> None:
    ids = study_with_participants(app)
    admin = admin_client(app)
    booted = admin.post(f"/api/admin/studies/{STUDY}/participants/{ids['first']}/boot", json={})
    assert booted.status_code == 200, booted.json
    assert (
        booted.json["participant"]["outcome"] == "dropped" and booted.json["participant"]["code"] == "C4LEFT"
    )
    assert booted.json["seat_handed_to"] == "tom1"
    seats = admin.get(f"/api/admin/games/{ids['game_id']}").json["meta"]["seats"]
    assert seats[0]["takeover"] == "tom1"

    # the fill-in really plays the seat: its first proposal (or pass) is made without the participant
    def seat0_moved() -> bool:
        events = admin.get(f"/api/admin/games/{ids['game_id']}/events").json["events"]
        return any(e["actor"] == 0 for e in events)

    wait_for(seat0_moved)
    logging.getLogger("server.table.master").warning("game %s: a problem to show", ids["game_id"])
    logged = admin.get(f"/api/admin/studies/{STUDY}/errors").json["errors"]
    assert [e["game_id"] for e in logged if e["message"].endswith("a problem to show")] == [ids["game_id"]]
    funnel = admin.get(f"/api/admin/studies/{STUDY}").json["study"]["funnel"]
    assert funnel["dropped"] == 1 and funnel["playing"] == 1
    again = admin.post(f"/api/admin/studies/{STUDY}/participants/{ids['first']}/advance", json={})
    assert again.status_code == 409 and again.json["error"]["code"] == "wrong_step"


def test_advance_message_and_status_changes(app: Flask) -> None:
    ids = study_with_participants(app)
    admin = admin_client(app)
    url = f"/api/admin/studies/{STUDY}/participants"
    moved = admin.post(f"{url}/{ids['practising']}/advance", json={}).json["participant"]
    assert moved["step"] == "comprehension"
    sent = admin.post(f"{url}/{ids['fresh']}/message", json={"text": "Please continue."}).json
    assert sent["participant"]["messages"] == 1 and sent["participant"]["unread_messages"] == 1
    too_long = admin.post(f"{url}/{ids['fresh']}/message", json={"text": "x" * 501})
    assert too_long.status_code == 400 and too_long.json["error"]["code"] == "invalid_request"
    unknown = admin.post(f"{url}/p_nobody/advance", json={})
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "unknown_participant"
    assert admin.get("/api/admin/studies/nope").json["error"]["code"] == "unknown_study"

    status = f"/api/admin/studies/{STUDY}/status"
    assert admin.post(status, json={"status": "sleeping"}).json["error"]["code"] == "invalid_request"
    assert admin.post(status, json={"status": "paused"}).json["status"] == "paused"
    store = app.extensions["tradecraft"].store
    with pytest.raises(ServerError) as refused:
        flow.arrive(store, load_study(store, STUDY), pid(99))
    assert refused.value.code == "study_paused"
    assert admin.post(status, json={"status": "open"}).json["status"] == "open"
    assert admin.post(status, json={"status": "closed"}).json["status"] == "closed"
    reopened = admin.post(status, json={"status": "open"})
    assert reopened.status_code == 409 and reopened.json["error"]["code"] == "study_closed"


def test_a_token_session_on_mongodb_loses_admin_when_the_token_is_revoked(
    mongo_uri: str, tmp_path: Path
) -> None:
    """The token-admin session on the MongoDB path, with two apps (two workers) sharing the database."""
    url = database_uri(mongo_uri, f"tc_admin_{uuid.uuid4().hex[:12]}")
    settings = load_settings(write_config(tmp_path, database_uri=url), environ={})
    first, second = create_app(settings), create_app(settings)
    try:
        admin = admin_client(first)
        made = admin.post("/api/admin/tokens", json={"name": "researcher", "scopes": ["admin"]}).json
        browser = second.test_client()
        assert browser.post("/api/admin/login", json={"token": made["token"]}).status_code == 200
        assert browser.get("/admin/tokens").status_code == 200
        assert admin.delete(f"/api/admin/tokens/{made['record']['id']}").json["revoked"] is True
        assert browser.get("/api/admin/tokens").status_code == 403
        assert browser.get("/admin/tokens").status_code == 302
    finally:
        for app in (first, second):
            app.extensions["tradecraft"].close()
        drop_database(url)


@contextmanager
def model_list(model: str) -> Iterator[str]:
    """A provider answering ``GET /v1/models`` with ``model`` over real HTTP (the availability check)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps({"object": "list", "data": [{"id": model}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_seat_handed_to_a_listed_model_shows_its_public_id_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listed LLM model may be handed a seat by its full spec; players see only its public id (the spec's
    options name the operator's server)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-for-the-listed-model")
    with model_list("test-model") as url:
        spec = f"llm:openai:test-model?base_url={url}"
        model = {"name": "Test model", "description": "A listed model.", "cost_note": "free", "spec": spec}
        overrides = {"bots": {"move_delay_seconds": 30.0, "models": [model]}}
        app = create_app(load_settings(write_config(tmp_path, overrides=overrides), environ={}))
        try:
            app.extensions["tradecraft"].bots.models.refresh()
            game_id, ada, _ = running_duel(app)
            answer = admin_client(app).post(f"/api/admin/games/{game_id}/seats/0/bot", json={"bot": spec})
            assert answer.status_code == 200, answer.json
            assert answer.json["seat"]["bot"] == "llm:openai:test-model"
            seen_by_ada = ada.get(f"/api/games/{game_id}").get_data(as_text=True)
            assert "llm:openai:test-model" in seen_by_ada and url not in seen_by_ada
        finally:
            app.extensions["tradecraft"].close()


def test_without_an_admin_password_the_pages_are_closed_even_to_a_token_session(tmp_path: Path) -> None:
    app = create_app(load_settings(write_config(tmp_path, admin_password=None), environ={}))
    try:
        store = app.extensions["tradecraft"].store
        token, _ = store.create_token("researcher", ["admin"])
        browser = app.test_client()
        refused = browser.post("/api/admin/login", json={"token": token})
        assert refused.status_code == 403 and refused.json["error"]["code"] == "admin_disabled"
        assert browser.get("/admin").status_code == 302
        assert b"The admin area is disabled" in browser.get("/admin/login").data
    finally:
        app.extensions["tradecraft"].close()
