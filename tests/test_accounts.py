"""Kept names, histories and the leaderboard through the real app (server/web/accounts.py, history.py):
a kept name logs in as the same user, refuses plain and look-alike logins, counts and limits wrong
passwords; history and leaderboard show finished games' public data only, with typed errors for bad input."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from in_process import InProcessApp, InProcessClient, MakeApp, play_duel_game
from mongo_server import database_uri, drop_database
from table_support import in_parallel

from server.web import accounts

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def app(make_app: MakeApp) -> InProcessApp:
    limits = {"password_failures_per_name": {"count": 3, "seconds": 600}}
    made = make_app(overrides={"limits": limits, "ratings": {"min_games": 1}})
    # a study hall: the test settings' duel hall (its scripted instance) with rated: false
    duel = made.services.settings.halls["duel"]
    made.services.settings.halls["study"] = duel.model_copy(update={"rated": False})
    return made


def login(client: InProcessClient, name: str, password: str | None = None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"name": name}
    if password is not None:
        body["password"] = password
    return client.rest("POST", "/api/login", body)


def error_code(answer: tuple[int, dict[str, Any]]) -> tuple[int, str]:
    status, body = answer
    return status, body["error"]["code"]


def test_a_kept_name_logs_in_as_the_same_user_from_anywhere(app: InProcessApp) -> None:
    ada = app.client("Ada")
    assert ada.rest("GET", "/api/account")[1]["kept"] is False
    status, kept = ada.rest("POST", "/api/account/keep", {"password": PASSWORD})
    assert status == 200 and kept["kept"] and kept["password"] and "token" not in kept
    elsewhere = app.client()
    status, body = login(elsewhere, "ada", PASSWORD)  # case does not matter: the same name
    assert status == 200 and body["user"] == {"id": ada.user["id"], "name": "Ada", "kind": "human"}
    assert elsewhere.rest("GET", "/api/me")[1]["user"]["id"] == ada.user["id"]
    assert json.dumps(kept).find(PASSWORD) == -1
    stored = app.services.store.get_value(accounts.account_key("Ada")) or ""
    assert ada.user["id"] in stored and PASSWORD not in stored and "scrypt" not in stored


def test_a_kept_name_and_its_look_alikes_refuse_a_plain_login(app: InProcessApp) -> None:
    bob = app.client("Bob")
    assert bob.rest("POST", "/api/account/keep", {"password": PASSWORD})[0] == 200
    stranger = app.client()
    for name in ("Bob", "BOB", "B0b", "Ｂｏｂ"):  # case, a zero for an o, full-width letters
        status, code = error_code(login(stranger, name))
        assert (status, code) == (409, "name_kept"), name
    assert stranger.rest("GET", "/api/me")[1]["user"] is None  # not logged in by any of them
    status, body = login(stranger, "Bobby")  # another name is free
    assert status == 200 and body["user"]["id"] != bob.user["id"]


def test_wrong_passwords_are_refused_then_rate_limited_per_name(app: InProcessApp) -> None:
    cy = app.client("Cy Twelve")
    cy.rest("POST", "/api/account/keep", {"password": PASSWORD})
    guesser = app.client()
    for attempt in range(3):
        assert error_code(login(guesser, "Cy Twelve", f"guess number {attempt}")) == (401, "wrong_password")
    status, body = login(guesser, "Cy Twelve", PASSWORD)  # even the right one, until the window ends
    assert status == 429 and body["error"]["code"] == "rate_limited"
    assert body["error"]["details"]["limit"] == "password_failures_per_name"
    assert guesser.rest("GET", "/api/me")[1]["user"] is None
    # other kept names are not locked by it
    dee = app.client("Dee Nine")
    dee.rest("POST", "/api/account/keep", {"password": PASSWORD})
    assert login(app.client(), "Dee Nine", PASSWORD)[0] == 200


def test_a_login_token_is_shown_once_and_logs_in(app: InProcessApp) -> None:
    eve = app.client("Eve")
    status, body = eve.rest("POST", "/api/account/keep", {"token": True})
    assert status == 200 and body["login_token"] and body["token"].startswith("tcl_")
    assert "token" not in eve.rest("GET", "/api/account")[1]
    status, again = login(app.client(), "Eve", body["token"])
    assert status == 200 and again["user"]["id"] == eve.user["id"]
    assert body["token"] not in json.dumps(
        [app.services.store.get_value(k) for k in app.services.store.list_keys("account:")]
    )


def test_bad_keep_requests_change_nothing(app: InProcessApp) -> None:
    fay = app.client("Fay")
    assert error_code(fay.rest("POST", "/api/account/keep", {"password": "short"})) == (
        400,
        "invalid_password",
    )
    assert error_code(fay.rest("POST", "/api/account/keep", {})) == (400, "invalid_request")
    assert error_code(fay.rest("POST", "/api/account/keep", {"password": 12345678})) == (
        400,
        "invalid_password",
    )
    assert fay.rest("GET", "/api/account")[1]["kept"] is False
    assert login(app.client(), "Fay")[0] == 200  # still free
    # another site's page cannot keep (or re-key) a logged-in player's name
    status, body = fay.rest(
        "POST", "/api/account/keep", {"password": PASSWORD}, headers={"Origin": "http://evil.example"}
    )
    assert (status, body["error"]["code"]) == (403, "cross_site_request")
    status, body = fay.rest("POST", "/api/account/keep", None, data="password=x", content_type="text/plain")
    assert (status, body["error"]["code"]) == (415, "unsupported_media_type")
    assert fay.rest("GET", "/api/account")[1]["kept"] is False
    assert error_code(app.client().rest("POST", "/api/account/keep", {"password": PASSWORD})) == (
        401,
        "not_logged_in",
    )
    assert error_code(login(app.client(), "Nobody Keeps", PASSWORD)) == (400, "name_not_kept")


def test_a_name_kept_by_one_user_cannot_be_kept_by_another_of_that_name(app: InProcessApp) -> None:
    first, second = app.client("Gus"), app.client("Gus")  # two people typed the same free name
    answers = in_parallel(
        [
            lambda: first.rest("POST", "/api/account/keep", {"password": PASSWORD}),
            lambda: second.rest("POST", "/api/account/keep", {"password": PASSWORD + "!"}),
        ]
    )
    assert sorted(status for status, _ in answers) == [200, 409]
    winner = first if answers[0][0] == 200 else second
    status, body = login(app.client(), "Gus", PASSWORD if winner is first else PASSWORD + "!")
    assert status == 200 and body["user"]["id"] == winner.user["id"]


def test_keeping_a_name_logs_out_the_other_sessions_of_it_and_its_look_alikes(app: InProcessApp) -> None:
    """People who typed a name before it was kept (each a different user) stop acting as it at once: every
    request and socket event is refused name_kept, a new socket is refused, and nothing they ask changes
    anything; the keeper's own sessions, old and new, play on."""
    keeper, same, look_alike = app.client("Otto"), app.client("Otto"), app.client("0TT0")
    waiting = same.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]["game_id"]
    same.connect()
    keeper.connect()
    assert keeper.rest("POST", "/api/account/keep", {"password": PASSWORD})[0] == 200
    for session in (same, look_alike):
        assert error_code(session.rest("GET", "/api/account")) == (401, "name_kept")
        assert error_code(session.rest("POST", f"/api/games/{waiting}/leave", {})) == (401, "name_kept")
    refused = same.call("join", {"game_id": waiting})
    assert refused["ok"] is False and refused["error"]["code"] == "name_kept", refused
    with pytest.raises(ConnectionRefusedError):
        look_alike.connect()
    game = app.client().rest("GET", f"/api/games/{waiting}")[1]["game"]
    assert game["status"] == "waiting" and game["open_seats"] == [1], game  # the refused leave: no change
    assert keeper.call("lobby")["ok"] is True
    again = app.client()
    assert login(again, "Otto", PASSWORD)[0] == 200
    assert again.rest("GET", "/api/me")[1]["user"]["id"] == keeper.user["id"]


def test_every_login_attempt_counts_once_before_it_is_answered(make_app: MakeApp) -> None:
    """Refusals that tell whether a name is kept (name_kept, name_not_kept) and malformed logins count
    against logins_per_address like successful ones, and a successful password login counts once."""
    made = make_app(overrides={"limits": {"logins_per_address": {"count": 6, "seconds": 600}}})
    keeper = made.client("Mo Kept")  # login 1
    assert keeper.rest("POST", "/api/account/keep", {"password": PASSWORD})[0] == 200
    other = made.client()
    assert error_code(login(other, "Mo Kept")) == (409, "name_kept")  # 2
    assert error_code(login(other, "Mo Free", PASSWORD)) == (400, "name_not_kept")  # 3
    assert error_code(login(other, "Mo Free", 42)) == (400, "invalid_request")  # type: ignore[arg-type]  # 4
    assert error_code(login(other, "")) == (400, "invalid_name")  # 5
    assert login(other, "Mo Kept", PASSWORD)[0] == 200  # 6
    assert error_code(login(made.client(), "Mo Kept", PASSWORD)) == (429, "rate_limited")
    assert other.rest("GET", "/api/me")[1]["user"]["id"] == keeper.user["id"]


def test_history_and_leaderboard_show_finished_games_public_data(app: InProcessApp) -> None:
    hal, ivy = app.client("Hal"), app.client("Ivy <b>Lee</b>")
    rated = play_duel_game(hal, ivy, "duel")
    unrated = play_duel_game(hal, ivy, "study")
    status, page = hal.rest("GET", "/api/me/history")
    assert status == 200 and [g["game_id"] for g in page["games"]] == [unrated, rated]
    latest, first = page["games"]
    assert first["rated"] and not latest["rated"] and first["result"] == "shared win" and first["points"] == 1
    assert first["opponents"] == [{"name": "Ivy <b>Lee</b>", "kind": "human", "won": True}]
    assert page["rating"]["games"] == 1  # the study game did not count
    assert ivy.user["id"] not in json.dumps(page)

    html = hal.http.get("/history").get_data(as_text=True)
    assert f"/games/{rated}/replay" in html and "Ivy &lt;b&gt;Lee&lt;/b&gt;" in html and "<b>Lee" not in html
    app.flask.extensions.pop("tradecraft.leaderboard", None)  # its few seconds of cache
    status, board = app.client().rest("GET", "/api/leaderboard?limit=500")
    assert status == 200 and board["limit"] == 200  # bounded
    names = [row["name"] for row in board["players"]]
    assert "Hal" in names and "Ivy <b>Lee</b>" in names
    assert hal.user["id"] not in json.dumps(board) and "user:" not in json.dumps(board)
    board_html = app.client().http.get("/leaderboard").get_data(as_text=True)
    assert "Ivy &lt;b&gt;Lee&lt;/b&gt;" in board_html

    assert error_code(app.client().rest("GET", "/api/me/history")) == (401, "not_logged_in")
    assert error_code(hal.rest("GET", "/api/me/history?after=../../x")) == (400, "invalid_request")
    assert error_code(hal.rest("GET", "/api/leaderboard?offset=-1")) == (400, "invalid_request")
    assert error_code(hal.rest("GET", "/api/me/history?limit=1e9")) == (400, "invalid_request")
    assert hal.http.get("/history?after=%3Cscript%3E").status_code == 400
    anonymous = app.client().http.get("/history").get_data(as_text=True)
    assert "Log in" in anonymous and "Hal" not in anonymous


def test_kept_names_histories_and_ratings_on_mongodb(make_app: MakeApp, mongo_uri: str) -> None:
    """The same through the pymongo store against a MongoDB wire-protocol server."""
    url = database_uri(mongo_uri, f"tc_accounts_{uuid.uuid4().hex[:10]}")
    app = make_app(database_uri=url)
    try:
        assert app.services.store.backend == "mongodb"
        kim, lou = app.client("Kim"), app.client("Lou")
        assert kim.rest("POST", "/api/account/keep", {"password": PASSWORD})[0] == 200
        game_id = play_duel_game(kim, lou, "duel")
        assert error_code(login(app.client(), "KIM")) == (409, "name_kept")
        again = app.client()
        status, body = login(again, "Kim", PASSWORD)
        assert status == 200 and body["user"]["id"] == kim.user["id"]
        status, page = again.rest("GET", "/api/me/history")
        assert status == 200 and [g["game_id"] for g in page["games"]] == [game_id]
        assert page["rating"]["games"] == 1 and page["rating"]["wins"] == 1
    finally:
        drop_database(url)
