"""Review of issue 22 (studies): security and privacy of the participant flow and the admin dashboard.

Each finding's first test reproduced a confirmed defect (marked ``xfail(strict=True)`` until the fix removed
the marker); the tests after it cover the other paths of the same class. The real in-process app (Flask +
Flask-SocketIO, the app's own study matcher running), a real SQLite file; participants arrive through the
study link like a browser."""

from __future__ import annotations

import csv
import io
import itertools
import json
import time
from typing import Any

import pytest
from e2e_helpers import ADMIN_PASSWORD, play_duel
from flask.testing import FlaskClient
from in_process import InProcessApp, InProcessClient, MakeApp

from server.web.accounts import account_key
from server.web.auth import account_halls_key
from server.web.study.definition import StudyDefinition, parse_definition
from server.web.study.records import iter_participants, save_study

_ids = itertools.count(1)


@pytest.fixture(scope="module")
def app(make_app: MakeApp) -> InProcessApp:
    return make_app()


def new_study(app: InProcessApp, **changes: Any) -> StudyDefinition:
    """A stored, open duel study (one comprehension question, no practice, no questionnaire)."""
    data: dict[str, Any] = {
        "id": f"rev1-{next(_ids)}",
        "title": "Review study",
        "hall": "duel",
        "consent": "Please take part.",
        "instructions": ["Page one."],
        "practice": False,
        "comprehension": {
            "attempts": 2,
            "questions": [{"id": "q1", "prompt": "One?", "choices": ["a", "b"], "answer": 1}],
        },
        "codes": {
            "completed": "DONE1",
            "screened_out": "SCREEN1",
            "no_partner": "ALONE1",
            "dropped": "LEFT1",
        },
        "payment": {"currency": "GBP", "base": 2.5, "bonus_per_win": 1.0},
        **changes,
    }
    definition = parse_definition(data)
    save_study(app.services.store, definition)
    return definition


def pid(n: int) -> str:
    return f"{n:024x}"


def link(study: StudyDefinition, participant: str, session: str = "s1") -> str:
    return f"/study/{study.id}?PROLIFIC_PID={participant}&STUDY_ID=plat&SESSION_ID={session}"


def arrive(app: InProcessApp, study: StudyDefinition, participant: str) -> FlaskClient:
    """A fresh browser that opened the study link (now logged in as the participant)."""
    browser = app.http()
    response = browser.get(link(study, participant))
    assert response.status_code == 302, response.data
    return browser


def me(browser: FlaskClient, study: StudyDefinition) -> dict[str, Any]:
    response = browser.get(f"/api/study/{study.id}/me")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["participant"]


def to_waiting(browser: FlaskClient, study: StudyDefinition) -> None:
    """Consent, instructions, the check passed, presence confirmed."""
    base = f"/api/study/{study.id}"
    assert browser.post(f"{base}/consent", json={"agree": True}).status_code == 200
    assert browser.post(f"{base}/instructions", json={}).status_code == 200
    answer = browser.post(f"{base}/comprehension", json={"answers": {"q1": 1}}).get_json()
    assert answer["participant"]["step"] == "waiting", answer
    assert browser.post(f"{base}/presence", json={}).status_code == 200


def until_playing(study: StudyDefinition, *browsers: FlaskClient, timeout: float = 20) -> None:
    """Wait for the app's own matcher to seat every browser's participant."""
    deadline = time.monotonic() + timeout
    while any(me(b, study)["step"] != "playing" for b in browsers):
        assert time.monotonic() < deadline, [me(b, study) for b in browsers]
        time.sleep(0.2)


# finding 1: rematch of a study game
def test_a_finished_study_game_cannot_be_rematched(app: InProcessApp) -> None:
    study = new_study(app)
    first, second = arrive(app, study, pid(1)), arrive(app, study, pid(2))
    to_waiting(first, study)
    to_waiting(second, study)
    until_playing(study, first, second)
    game_id = me(first, study)["current_game"]
    players: dict[int, InProcessClient] = {}
    for browser in (first, second):
        player = InProcessClient(app)
        player.http = browser  # the participant's own logged-in browser
        players[me(browser, study)["games"][0]["seat"]] = player
    for player in players.values():
        player.connect().call("join", {"game_id": game_id})
    play_duel(game_id, players[0], players[1])
    assert app.services.store.get_game(game_id)["status"] == "finished"

    response = first.post(f"/api/games/{game_id}/rematch", json={})

    # a study's games are the matcher's: a rematch is a game of the study's hall no study record knows of
    assert response.status_code in (403, 409), response.get_json()
    halls = [g.get("hall") for g in app.services.store.list_games(status="waiting", limit=1000)]
    assert study.hall_name not in halls
    assert response.get_json()["error"]["code"] == "forbidden"
    assert app.services.lobby.hall(study.hall_name).creatable is False


# finding 2: games created in the study's own hall
def test_nobody_creates_a_game_in_a_studys_own_hall(app: InProcessApp) -> None:
    study = new_study(app)
    participant = arrive(app, study, pid(10))
    stranger = app.client("Stranger")

    by_participant = participant.post("/api/games", json={"hall": study.hall_name, "join": True})
    by_stranger = stranger.rest("POST", "/api/games", {"hall": study.hall_name, "join": True})[0]

    # the hall is the study's (its instances, deadlines, title): only the matcher makes its games
    assert by_participant.status_code >= 400, by_participant.get_json()
    assert by_stranger >= 400


def test_nobody_creates_a_study_hall_game_over_socket_io_either(app: InProcessApp) -> None:
    study = new_study(app)
    arrive(app, study, pid(11))  # the study's hall is installed (a study's first arrival does it)
    stranger = app.client("Stranger Socket").connect()
    before = len(app.services.store.list_games(limit=1000))

    answer = stranger.call("create_game", {"hall": study.hall_name, "join": True})

    assert answer["ok"] is False and answer["error"]["code"] == "forbidden", answer
    assert len(app.services.store.list_games(limit=1000)) == before


# finding 3: a participant plays ordinary lobby games
def test_a_participant_in_the_study_gets_no_seat_outside_it(app: InProcessApp) -> None:
    study = new_study(app)
    participant = arrive(app, study, pid(20))
    to_waiting(participant, study)

    response = participant.post("/api/games", json={"hall": "duel", "join": True})

    # a waiting participant seated in a lobby game holds two seats once the matcher seats them
    assert response.status_code >= 400, response.get_json()
    assert response.get_json()["error"]["code"] == "forbidden"


def test_a_participant_joins_no_lobby_game_and_still_practises(app: InProcessApp) -> None:
    study = new_study(app, practice=True)
    participant = arrive(app, study, pid(21))
    host = app.client("Lobby Host")
    status, made = host.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201, made
    game_id = made["game"]["game_id"]

    by_rest = participant.post(f"/api/games/{game_id}/join", json={})
    player = InProcessClient(app)
    player.http = participant
    by_socket = player.connect().call("join", {"game_id": game_id})
    base = f"/api/study/{study.id}"
    assert participant.post(f"{base}/consent", json={"agree": True}).status_code == 200
    assert participant.post(f"{base}/instructions", json={}).status_code == 200
    practice = participant.post(f"{base}/practice", json={})  # the practice hall is the participant's too

    assert by_rest.status_code == 403 and by_rest.get_json()["error"]["code"] == "forbidden"
    assert by_socket["ok"] is False and by_socket["error"]["code"] == "forbidden", by_socket
    assert practice.status_code == 200, practice.get_json()
    summary = app.services.lobby.summary(game_id)
    assert [s["name"] for s in summary["seats"] if s.get("name")] == ["Lobby Host"]


# finding 4: the fill-in is shown as a bot to participants
def test_the_fill_in_is_named_and_marked_as_a_bot_alike(app: InProcessApp) -> None:
    """Finding 4 (decided): the room marks bot seats as bots, so the fill-in is not given a person's name that
    its badge contradicts; it is named like every bot seat."""
    study = new_study(app, waiting_room={"max_wait_seconds": 1, "on_timeout": "fill"})  # fill_in.name: null
    alone = arrive(app, study, pid(30))
    to_waiting(alone, study)
    until_playing(study, alone)
    game_id = me(alone, study)["current_game"]
    summary = alone.get(f"/api/games/{game_id}").get_json()["game"]
    fill_in = next(s for s in summary["seats"] if s["seat"] != me(alone, study)["games"][0]["seat"])
    assert fill_in["kind"] == "bot" and not fill_in["name"].startswith("Participant "), fill_in
    assert "bot" in fill_in["name"]


def test_a_participant_admitted_before_accounts_were_marked_is_marked_on_return(app: InProcessApp) -> None:
    study = new_study(app)
    participant = arrive(app, study, pid(22))
    [record] = list(iter_participants(app.services.store, study.id))
    marker = account_halls_key(record.user_id)
    halls = app.services.store.get_value(marker)
    assert halls is not None and json.loads(halls) == [study.hall_name, "practice"]
    assert app.services.store.replace_value(marker, halls, None)  # as before the fix

    assert participant.get(link(study, pid(22))).status_code == 302
    response = participant.post("/api/games", json={"hall": "duel", "join": True})

    assert app.services.store.get_value(marker) == halls
    assert response.status_code == 403, response.get_json()


# finding 5: the study link creates accounts past the login limit
def test_study_links_count_against_the_per_address_login_limit(make_app: MakeApp) -> None:
    limited = make_app(overrides={"limits": {"logins_per_address": {"count": 3, "seconds": 600}}})
    study = new_study(limited)
    statuses = []
    for n in range(8):  # forged ids from one address, each declining consent: its place is given back
        browser = limited.http()
        response = browser.get(link(study, pid(100 + n)))
        statuses.append(response.status_code)
        if response.status_code == 302:
            browser.post(f"/api/study/{study.id}/consent", json={"agree": False})
    records = list(iter_participants(limited.services.store, study.id))
    # /api/login stops this address after 3 new users; the study link went on making users and records
    assert 429 in statuses, statuses
    assert len(records) <= 3, len(records)


def test_a_return_with_the_same_link_is_not_counted(make_app: MakeApp) -> None:
    limited = make_app(overrides={"limits": {"logins_per_address": {"count": 2, "seconds": 600}}})
    study = new_study(limited)
    browsers = [arrive(limited, study, pid(150 + n)) for n in range(2)]  # the address's two new arrivals

    returns = [b.get(link(study, pid(150 + n))).status_code for n, b in enumerate(browsers) for _ in range(3)]
    third = limited.http().get(link(study, pid(152)))

    assert returns == [302] * 6, returns
    assert third.status_code == 429 and b"again a little later" in third.data
    assert len(list(iter_participants(limited.services.store, study.id))) == 2


# finding 6: opening a study link ends an admin's session
def test_a_study_link_does_not_silently_replace_an_admin_session(app: InProcessApp) -> None:
    study = new_study(app)
    browser = app.http()
    assert browser.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 200
    assert browser.get("/api/admin/studies").status_code == 200

    browser.get(link(study, pid(40)))  # any page of another site can send a browser here (a plain GET)

    assert browser.get("/api/admin/studies").status_code == 200


def test_a_logged_in_browser_confirms_with_a_same_origin_post(app: InProcessApp) -> None:
    study = new_study(app)
    player = app.client("Somebody Else")
    page = player.http.get(link(study, pid(41)))
    assert page.status_code == 200 and b"study-switch-form" in page.data, page.data
    assert b'value="' + pid(41).encode() + b'"' in page.data  # the link's query, to send on
    assert player.rest("GET", "/api/account")[1]["name"] == "Somebody Else"  # still logged in as before
    assert list(iter_participants(app.services.store, study.id)) == []  # nothing recorded on the GET
    query = {"PROLIFIC_PID": pid(41), "STUDY_ID": "plat", "SESSION_ID": "s1"}

    cross_site = player.http.post(
        f"/api/study/{study.id}/arrive", json={"query": query}, headers={"Origin": "https://evil.example"}
    )
    confirmed = player.http.post(f"/api/study/{study.id}/arrive", json={"query": query})

    assert cross_site.status_code == 403, cross_site.get_json()
    assert confirmed.status_code == 200 and confirmed.get_json()["url"] == f"/study/{study.id}"
    assert me(player.http, study)["step"] == "consent"
    assert player.http.get(link(study, pid(41))).status_code == 302  # the participant's own link again


def test_a_participant_opening_another_participants_link_is_asked_first(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(42))
    own = me(browser, study)

    other = browser.get(link(study, pid(43)))

    assert other.status_code == 200 and b"study-switch-form" in other.data
    assert me(browser, study)["name"] == own["name"]


# finding 7: the payments CSV writes recruitment ids unquoted
def test_a_recruitment_id_cannot_forge_a_row_of_the_payments_csv(app: InProcessApp) -> None:
    # a study whose platform's ids are not the default's letters and digits: the pattern admits commas
    study = new_study(
        app,
        recruitment={"id_pattern": r".{1,64}"},
        payment={"currency": "GBP", "base": 2.5, "screened_out_pay": 0.5},
    )
    forged = "me,99"  # the participant writes their own link
    browser = app.http()
    assert (
        browser.get(f"/study/{study.id}?PROLIFIC_PID=me%2C99&STUDY_ID=plat&SESSION_ID=s1").status_code == 302
    )
    base = f"/api/study/{study.id}"
    assert browser.post(f"{base}/consent", json={"agree": True}).status_code == 200
    assert browser.post(f"{base}/instructions", json={}).status_code == 200
    for _ in range(2):  # two wrong tries: screened out, paid 0.50
        browser.post(f"{base}/comprehension", json={"answers": {"q1": 0}})
    assert me(browser, study)["outcome"] == "screened_out"
    admin = app.http()
    assert admin.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 200

    batch = admin.post(f"/api/admin/studies/{study.id}/payments", json={})
    assert batch.status_code == 201, batch.data

    rows = list(csv.reader(io.StringIO(batch.data.decode())))
    # the platform reads <participant id>,<amount>: one row, two fields, the id as it was recorded
    assert rows == [[forged, "0.50"]], rows


# finding 8: anyone can keep a participant's name and lock them out of the study
def test_keeping_a_participants_name_does_not_lock_them_out(app: InProcessApp) -> None:
    study = new_study(app)
    victim = arrive(app, study, pid(60))
    name = me(victim, study)["name"]  # "Participant NNNN": 9000 names, shown to every game partner
    griefer = app.client()
    login = griefer.rest("POST", "/api/login", {"name": name})
    look_alike = griefer.rest("POST", "/api/login", {"name": name.upper().replace(" ", "")})

    reopened = victim.get(link(study, pid(60)))  # the recruitment link again does not help either
    answer = victim.get(f"/api/study/{study.id}/me")

    assert login[0] == 409 and login[1]["error"]["code"] == "name_kept", login
    assert look_alike[0] == 409 and look_alike[1]["error"]["code"] == "name_kept", look_alike
    assert reopened.status_code == 302
    assert answer.status_code == 200, answer.get_json()


def test_a_name_kept_before_neither_locks_out_nor_is_kept_by_the_participant(app: InProcessApp) -> None:
    """A keep of a participant's name stored before names were reserved does not lock the participant out;
    the participant's own account cannot keep its name either (the link is its only login)."""
    study = new_study(app)
    victim = arrive(app, study, pid(61))
    name = me(victim, study)["name"]
    store = app.services.store
    old = store.create_user(name)  # a session from before names were reserved, which kept the name
    store.replace_value(account_key(name), None, json.dumps({"user_id": old["id"], "name": name}))

    answer = victim.get(f"/api/study/{study.id}/me")
    keep = victim.post("/api/account/keep", json={"password": "correct horse battery"})

    assert answer.status_code == 200, answer.get_json()
    assert keep.status_code == 409 and keep.get_json()["error"]["code"] == "name_kept", keep.get_json()


# finding 9: reloading the link erases the participant's audit trail (consent included)
def test_reloading_the_link_does_not_erase_the_consent_record(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(80))
    assert browser.post(f"/api/study/{study.id}/consent", json={"agree": True}).status_code == 200
    for _ in range(
        400
    ):  # each reopening of the link logs "resumed"; events are capped at 400, oldest dropped
        assert browser.get(link(study, pid(80))).status_code == 302
    admin = app.http()
    assert admin.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 200

    [record] = list(iter_participants(app.services.store, study.id))
    funnel = admin.get("/api/admin/studies").get_json()

    assert next(s for s in funnel["studies"] if s["id"] == study.id)["funnel"]["consented"] == 1
    assert "consented" in [event.event for event in record.events]
