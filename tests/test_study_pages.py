"""The participant's pages and API (server/web/study_pages.py) on the real app, over a SQLite file and over
the pymongo path to the test MongoDB server: the study link records the recruitment ids and drops them from
the address; the same link resumes (another device too), another platform session, a forged or a missing id
are refused; paused, closed and full studies say so; every POST at the wrong step is 409 wrong_step and
changes nothing; the comprehension check counts only well-formed tries and screens out on the last wrong
one; the questionnaire is validated; no participant reads another's data, and study texts are rendered as
text."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from flask.testing import FlaskClient
from in_process import InProcessApp, play_duel_game, rest_act, view_when

from server.web.practice import running_key
from server.web.study import flow
from server.web.study.definition import StudyDefinition, parse_definition
from server.web.study.records import (
    Participant,
    iter_participants,
    load_participant,
    participant_key,
    participant_of_user,
    save_study,
    set_study_status,
)

SCRIPT = "<script>alert('x')</script>"
_ids = itertools.count(1)


@pytest.fixture(scope="module", params=["sqlite", "mongodb"])
def app(request: pytest.FixtureRequest, make_app: Any) -> InProcessApp:
    """The app over a SQLite file, and over the real pymongo path to the test MongoDB server."""
    if request.param == "mongodb":
        return make_app(database_uri=request.getfixturevalue("mongo_uri") + "/study_pages")
    return make_app()


def new_study(app: InProcessApp, **changes: Any) -> StudyDefinition:
    """A stored, open two-person duel study with a fresh id; ``changes`` replace top-level keys."""
    data: dict[str, Any] = {
        "id": f"pages-{next(_ids)}",
        "title": "Pages study",
        "hall": "duel",
        "consent": "Please take part.\n\nYou may stop at any time.",
        "instructions": ["Page one.", "Page two."],
        "practice": False,
        "comprehension": {
            "attempts": 2,
            "questions": [
                {"id": "q1", "prompt": "One?", "choices": ["a", "b"], "answer": 1, "explanation": "It is b."},
                {"id": "q2", "prompt": "Two?", "choices": ["c", "d", "e"], "answer": 0, "explanation": "c."},
            ],
        },
        "questionnaire": [
            {"id": "why", "prompt": "Why?", "kind": "text", "max_chars": 20},
            {"id": "who", "prompt": "Who?", "kind": "choice", "choices": ["A", "B"], "required": True},
            {"id": "hard", "prompt": "Hard?", "kind": "scale", "scale_points": 5},
        ],
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


def link(definition: StudyDefinition, participant: str, session: str = "sess1", study: str = "plat1") -> str:
    return f"/study/{definition.id}?PROLIFIC_PID={participant}&STUDY_ID={study}&SESSION_ID={session}"


def arrive(app: InProcessApp, definition: StudyDefinition, participant: str, **ids: str) -> FlaskClient:
    """A fresh browser that opened the study link (logged in as the participant)."""
    browser = app.http()
    response = browser.get(link(definition, participant, **ids))
    assert response.status_code == 302, response.data
    return browser


def me(browser: FlaskClient, definition: StudyDefinition) -> dict[str, Any]:
    response = browser.get(f"/api/study/{definition.id}/me")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["participant"]


def post(browser: FlaskClient, definition: StudyDefinition, path: str, body: Any = None) -> tuple[int, Any]:
    response = browser.post(f"/api/study/{definition.id}/{path}", json={} if body is None else body)
    return response.status_code, response.get_json()


def record_of(app: InProcessApp, definition: StudyDefinition, browser: FlaskClient) -> Participant:
    participants = [
        p
        for p in iter_participants(app.services.store, definition.id)
        if p.name == me(browser, definition)["name"]
    ]
    assert len(participants) == 1
    return participants[0]


def raw_record(app: InProcessApp, definition: StudyDefinition, participant_id: str) -> str | None:
    return app.services.store.get_value(participant_key(definition.id, participant_id))


def to_comprehension(browser: FlaskClient, definition: StudyDefinition) -> None:
    assert post(browser, definition, "consent", {"agree": True})[0] == 200
    assert post(browser, definition, "instructions")[0] == 200
    assert me(browser, definition)["step"] == "comprehension"


RIGHT = {"q1": 1, "q2": 0}


# --------------------------------------------------------------------------------------------- the link
def test_the_link_records_the_ids_logs_in_and_redirects_without_them(app: InProcessApp) -> None:
    study = new_study(app)
    browser = app.http()
    response = browser.get(link(study, pid(1), session="sessAAA", study="platXYZ"))
    assert response.status_code == 302
    assert response.headers["Location"] == f"/study/{study.id}"  # no ids left in the address bar
    [participant] = list(iter_participants(app.services.store, study.id))
    assert participant.recruitment.participant_id == pid(1)
    assert participant.recruitment.study_id == "platXYZ"
    assert participant.recruitment.session_id == "sessAAA"
    assert participant.step == "consent"

    page = browser.get(f"/study/{study.id}")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and 'data-step="consent"' in html
    assert page.headers["Cache-Control"] == "no-store"  # the back button shows no stale step
    assert "Please take part." in html and "<p>You may stop at any time.</p>" in html  # blank line: paragraph
    assert "Pages study" in html and 'href="/history"' not in html  # the title, no lobby nav
    # the participant's own view never carries recruitment ids
    view = me(browser, study)
    shown = json.dumps(view)
    assert pid(1) not in shown and "platXYZ" not in shown and "sessAAA" not in shown
    assert view["step"] == "consent" and view["study"] == {"id": study.id, "title": "Pages study"}
    data = browser.get(f"/api/study/{study.id}/me/data").get_json()["data"]
    assert pid(1) not in json.dumps(data) and "recruitment" not in data and "user_id" not in data
    assert data["id"] == participant.id and data["events"][0]["event"] == "arrived"


def test_the_same_link_resumes_in_another_tab_and_on_another_device(app: InProcessApp) -> None:
    study = new_study(app)
    first = arrive(app, study, pid(2))
    assert post(first, study, "consent", {"agree": True})[0] == 200
    again = first.get(link(study, pid(2)))  # the same browser opens the link again
    assert again.status_code == 302 and again.headers["Location"] == f"/study/{study.id}"
    second_device = arrive(app, study, pid(2))
    assert me(second_device, study)["name"] == me(first, study)["name"]
    assert me(second_device, study)["step"] == "instructions"  # where they were, not back at consent
    [participant] = list(iter_participants(app.services.store, study.id))
    assert participant.reconnects == 2
    resumed = [e for e in participant.events if e.event == "resumed"]  # repeats are counted on one entry
    assert len(resumed) == 1 and resumed[0].detail["times"] == 2
    # the first device's session is still good: the same record for both
    assert me(first, study)["step"] == "instructions"


def test_another_session_id_a_forged_id_and_a_missing_id_are_refused(app: InProcessApp) -> None:
    study = new_study(app)
    arrive(app, study, pid(3), session="sessOne")
    other = app.http()
    response = other.get(link(study, pid(3), session="sessTwo"))
    assert response.status_code == 409 and 'data-code="already_participated"' in response.get_data(
        as_text=True
    )
    assert other.get(f"/api/study/{study.id}/me").status_code == 404  # not logged in as the participant

    for query in (
        f"PROLIFIC_PID={SCRIPT}",
        "PROLIFIC_PID=a.b",  # not the id pattern ([A-Za-z0-9_-]{1,64} by default)
        f"PROLIFIC_PID={'a' * 200}",
        f"PROLIFIC_PID={pid(4)}&SESSION_ID=has%20space",
        "STUDY_ID=plat1&SESSION_ID=s1",  # no participant id
        "",
    ):
        browser = app.http()
        response = browser.get(f"/study/{study.id}?{query}" if query else f"/study/{study.id}")
        html = response.get_data(as_text=True)
        expected = 404 if not query else 400  # a plain visit is asked to open the link
        assert response.status_code == expected, (query, html)
        assert "open the study" in html.lower() and SCRIPT not in html
        assert "Set-Cookie" not in response.headers or "Max-Age=0" in response.headers.get("Set-Cookie", "")
    too_long = app.http().get(f"/study/{study.id}?PROLIFIC_PID={pid(5)}&x={'y' * 2000}")
    assert too_long.status_code == 400
    assert [p.recruitment.participant_id for p in iter_participants(app.services.store, study.id)] == [pid(3)]
    assert app.http().get("/study/no-such-study?PROLIFIC_PID=" + pid(6)).status_code == 404
    assert app.http().get("/study/" + "A" * 300).status_code == 404


def test_paused_closed_and_full_studies_admit_nobody_new(app: InProcessApp) -> None:
    study = new_study(app, capacity={"participants": 1, "overbook": 0})
    browser = arrive(app, study, pid(10))
    full = app.http().get(link(study, pid(11)))
    assert full.status_code == 409 and "The study is full" in full.get_data(as_text=True)
    assert "Pages study" in full.get_data(as_text=True)  # under the study's title

    set_study_status(app.services.store, study.id, "paused")
    paused = app.http().get(link(study, pid(12)))
    assert paused.status_code == 503 and "The study is paused" in paused.get_data(as_text=True)
    assert browser.get(link(study, pid(10))).status_code == 302  # someone admitted resumes
    set_study_status(app.services.store, study.id, "closed")
    closed = app.http().get(link(study, pid(13)))
    assert closed.status_code == 409 and "The study is closed" in closed.get_data(as_text=True)
    assert len(list(iter_participants(app.services.store, study.id))) == 1


# -------------------------------------------------------------------------------------------- the steps
WRONG_STEP_POSTS: list[tuple[str, Any]] = [
    ("consent", {"agree": True}),
    ("instructions", {}),
    ("practice", {}),
    ("practice/done", {}),
    ("comprehension", {"answers": RIGHT}),
    ("presence", {}),
    ("questionnaire", {"answers": {"who": 0}}),
]


def test_every_post_at_the_wrong_step_is_refused_and_changes_nothing(app: InProcessApp) -> None:
    study = new_study(app, practice=True)
    browser = arrive(app, study, pid(20))
    participant = record_of(app, study, browser)
    for step_posts_allowed in ("consent", "instructions"):
        before = raw_record(app, study, participant.id)
        for path, body in WRONG_STEP_POSTS:
            if path == step_posts_allowed:
                continue
            status, answer = post(browser, study, path, body)
            assert status == 409, (path, answer)
            assert (
                answer["error"]["code"] == "wrong_step"
                and answer["error"]["details"]["step"] == step_posts_allowed
            )
            assert raw_record(app, study, participant.id) == before, path
        assert app.services.store.get_value(running_key(participant.user_id)) is None  # no practice game made
        body = {"agree": True} if step_posts_allowed == "consent" else {}
        assert post(browser, study, step_posts_allowed, body)[0] == 200


def test_a_second_tab_posting_consent_twice_leaves_one_consent(app: InProcessApp) -> None:
    study = new_study(app)
    tab = arrive(app, study, pid(21))
    status, answer = post(tab, study, "consent", {"agree": True})
    assert status == 200 and answer["participant"]["step"] == "instructions"
    status, answer = post(tab, study, "consent", {"agree": True})
    assert status == 409 and answer["error"]["details"]["step"] == "instructions"
    participant = record_of(app, study, tab)
    assert [e.event for e in participant.events].count("consented") == 1
    # malformed consent: refused, nothing recorded
    other = arrive(app, study, pid(22))
    for body in ({"agree": "yes"}, {}, {"agree": 1}):
        status, answer = post(other, study, "consent", body)
        assert status == 400 and answer["error"]["code"] == "invalid_request"
    assert me(other, study)["step"] == "consent"
    response = other.post(f"/api/study/{study.id}/consent", data="agree=1", content_type="text/plain")
    assert response.status_code == 415
    response = other.post(
        f"/api/study/{study.id}/consent", json={"agree": True}, headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 403 and me(other, study)["step"] == "consent"


def test_declining_consent_ends_without_a_code(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(23))
    status, answer = post(browser, study, "consent", {"agree": False})
    assert status == 200 and answer["participant"]["step"] == "done"
    assert answer["participant"]["outcome"] == "declined" and answer["participant"]["code"] is None
    html = browser.get(f"/study/{study.id}").get_data(as_text=True)
    assert "return the study" in html and "completion-code" not in html


def test_comprehension_counts_well_formed_tries_and_screens_out_on_the_last(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(30))
    to_comprehension(browser, study)
    for answers in (
        {"q1": 1},  # a question missing
        {"q1": 1, "q2": 3},  # out of range
        {"q1": True, "q2": 0},  # a bool is not an index
        {"q1": "1", "q2": 0},
        {"q1": 1, "q2": 0, "q9": 0},  # an unknown id
        [1, 0],
        None,
    ):
        status, answer = post(browser, study, "comprehension", {"answers": answers})
        assert status == 400 and answer["error"]["code"] == "invalid_request", answers
    assert me(browser, study)["comprehension"]["attempts_used"] == 0

    status, answer = post(browser, study, "comprehension", {"answers": {"q1": 0, "q2": 0}})
    assert status == 200 and answer["wrong"] == ["q1"] and answer["explanations"] == {"q1": "It is b."}
    assert answer["participant"]["step"] == "comprehension"
    assert answer["participant"]["comprehension"]["attempts_used"] == 1
    page = browser.get(f"/study/{study.id}").get_data(as_text=True)
    assert 'data-question="q1" data-wrong="true"' in page and "It is b." in page and "c." not in page

    status, answer = post(browser, study, "comprehension", {"answers": {"q1": 1, "q2": 2}})
    assert status == 200 and answer["wrong"] == ["q2"]
    view = answer["participant"]
    assert view["step"] == "done" and view["outcome"] == "screened_out" and view["code"] == "SCREEN1"
    page = browser.get(f"/study/{study.id}").get_data(as_text=True)
    assert '<code id="completion-code">SCREEN1</code>' in page
    # done: every step's POST is refused and the record stays as it is
    participant = record_of(app, study, browser)
    before = raw_record(app, study, participant.id)
    for path, body in WRONG_STEP_POSTS:
        status, answer = post(browser, study, path, body)
        assert status == 409 and answer["error"]["details"]["step"] == "done", path
    assert raw_record(app, study, participant.id) == before


def test_passing_the_check_opens_the_waiting_room_and_presence_is_confirmed(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(31))
    to_comprehension(browser, study)
    status, answer = post(browser, study, "comprehension", {"answers": RIGHT})
    assert status == 200 and answer["wrong"] == [] and answer["participant"]["step"] == "waiting"
    waiting = answer["participant"]["waiting"]
    assert waiting["max_wait_seconds"] == 180 and waiting["presence_check_seconds"] == 30
    page = browser.get(f"/study/{study.id}").get_data(as_text=True)
    assert 'id="presence-confirm"' in page and f'data-present-until="{waiting["present_until"]}"' in page
    status, answer = post(browser, study, "presence")
    assert status == 200 and answer["participant"]["waiting"]["present_until"] >= waiting["present_until"]


def play_to_questionnaire(app: InProcessApp, study: StudyDefinition, browser: FlaskClient) -> Participant:
    """Through the check to the waiting room, then the matcher's two calls (flow.matched, flow.game_over)."""
    to_comprehension(browser, study)
    assert post(browser, study, "comprehension", {"answers": RIGHT})[0] == 200
    participant = record_of(app, study, browser)
    store = app.services.store
    flow.matched(store, study, participant.id, "g-study-test", seat=0, filled_seats=[1])
    assert me(browser, study)["current_game"] == "g-study-test"
    page = browser.get(f"/study/{study.id}").get_data(as_text=True)
    assert 'data-step="playing"' in page and 'href="/games/g-study-test"' in page
    flow.game_over(store, study, participant.id, "g-study-test", "won", 3)
    return participant


def test_the_questionnaire_is_validated_then_the_code_and_earnings_shown(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(40))
    play_to_questionnaire(app, study, browser)
    assert me(browser, study)["step"] == "questionnaire"
    for answers in (
        {},  # the required item missing
        {"who": 2},  # not one of two choices
        {"who": 0, "why": "x" * 21},  # longer than max_chars
        {"who": 0, "hard": 0},  # scale is 1..5
        {"who": 0, "hard": 6},
        {"who": 0, "nope": "?"},  # an unknown item
        {"who": True},
        "who",
    ):
        status, answer = post(browser, study, "questionnaire", {"answers": answers})
        assert status == 400 and answer["error"]["code"] == "invalid_request", answers
        assert me(browser, study)["step"] == "questionnaire"
    status, answer = post(browser, study, "questionnaire", {"answers": {"who": 1, "why": "fun", "hard": 5}})
    view = answer["participant"]
    assert status == 200 and view["step"] == "done" and view["outcome"] == "completed"
    assert view["code"] == "DONE1" and view["earnings"] == {
        "currency": "GBP",
        "base": 2.5,
        "bonus": 1.0,
        "total": 3.5,
    }
    page = browser.get(f"/study/{study.id}").get_data(as_text=True)
    assert '<code id="completion-code">DONE1</code>' in page and "3.50 GBP" in page
    data = browser.get(f"/api/study/{study.id}/me/data?download=1")
    assert "attachment" in data.headers["Content-Disposition"]
    assert data.get_json()["data"]["questionnaire"] == {"who": 1, "why": "fun", "hard": 5}
    # their game, but not which seat the fill-in played (the study decides whether to reveal it)
    [game] = data.get_json()["data"]["games"]
    assert game["game_id"] == "g-study-test" and game["result"] == "won" and "filled_seats" not in game


def test_a_participant_reads_only_their_own_record(app: InProcessApp) -> None:
    study = new_study(app)
    other_study = new_study(app)
    ann = arrive(app, study, pid(50), session="sessAnn")
    bob = arrive(app, study, pid(51), session="sessBob")
    to_comprehension(ann, study)
    post(ann, study, "comprehension", {"answers": {"q1": 0, "q2": 0}})
    ann_view, bob_view = me(ann, study), me(bob, study)
    assert ann_view["name"] != bob_view["name"] and bob_view["step"] == "consent"
    bob_data = json.dumps(bob.get(f"/api/study/{study.id}/me/data").get_json())
    ann_record = record_of(app, study, ann)
    for secret in (ann_record.id, ann_record.name, pid(50), "sessAnn", '"q1"'):
        assert secret not in bob_data and secret not in json.dumps(bob_view)
    # a browser of no participant, and a participant of another study, are nobody here
    for browser, sid in ((app.http(), study.id), (ann, other_study.id)):
        for path in ("me", "me/data"):
            response = browser.get(f"/api/study/{sid}/{path}")
            assert (
                response.status_code == 404 and response.get_json()["error"]["code"] == "unknown_participant"
            )
        status, answer = post(
            browser, other_study if sid == other_study.id else study, "consent", {"agree": True}
        )
        assert status == 404 and answer["error"]["code"] == "unknown_participant"
    lobby_user = app.client("Lurker")
    assert lobby_user.rest("GET", f"/api/study/{study.id}/me")[0] == 404
    assert participant_of_user(app.services.store, study.id, ann_record.user_id) is not None


def test_study_texts_are_rendered_as_text(app: InProcessApp) -> None:
    study = new_study(
        app,
        title=f"T {SCRIPT}",
        consent=f"Hello {SCRIPT}\n\n<b>bold?</b>",
        instructions=[f"Read {SCRIPT}"],
        comprehension={
            "attempts": 2,
            "questions": [
                {"id": "q1", "prompt": f"Q {SCRIPT}", "choices": [f"C {SCRIPT}", "ok"], "answer": 1}
            ],
        },
        questionnaire=[{"id": "why", "prompt": f"W {SCRIPT}", "kind": "text"}],
    )
    escaped = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
    browser = arrive(app, study, pid(60))
    pages = [browser.get(f"/study/{study.id}").get_data(as_text=True)]
    assert "&lt;b&gt;bold?&lt;/b&gt;" in pages[0]
    post(browser, study, "consent", {"agree": True})
    pages.append(browser.get(f"/study/{study.id}").get_data(as_text=True))
    post(browser, study, "instructions")
    pages.append(browser.get(f"/study/{study.id}").get_data(as_text=True))
    assert post(browser, study, "comprehension", {"answers": {"q1": 1}})[0] == 200
    participant = record_of(app, study, browser)
    flow.send_message(app.services.store, study, participant.id, f"Hi {SCRIPT}")
    flow.matched(app.services.store, study, participant.id, "g-text", seat=0, filled_seats=[])
    flow.game_over(app.services.store, study, participant.id, "g-text", "lost", 0)
    pages.append(browser.get(f"/study/{study.id}").get_data(as_text=True))
    for page in pages:
        assert SCRIPT not in page and page.count(escaped) >= 2, page  # the title and the step's text
    assert "Hi " + escaped in pages[-1]  # the researcher's message banner, as text too


def test_a_researchers_message_shows_until_marked_read(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(70))
    participant = record_of(app, study, browser)
    flow.send_message(app.services.store, study, participant.id, "Please continue soon.")
    page = browser.get(f"/study/{study.id}").get_data(as_text=True)
    assert "Please continue soon." in page and 'data-unread="true"' in page
    status, answer = post(browser, study, "messages/read")
    assert status == 200 and answer["participant"]["messages"][0]["read_at"] is not None
    assert "Please continue soon." not in browser.get(f"/study/{study.id}").get_data(as_text=True)


def test_the_practice_step_starts_the_guided_game_and_needs_its_win(app: InProcessApp) -> None:
    study = new_study(app, practice=True)
    browser = arrive(app, study, pid(80))
    post(browser, study, "consent", {"agree": True})
    post(browser, study, "instructions")
    status, answer = post(browser, study, "practice")
    assert status == 200 and answer["participant"]["practice_game_id"] == answer["game_id"]
    game_id = answer["game_id"]
    assert post(browser, study, "practice")[1]["game_id"] == game_id  # a second tab resumes the same game
    status, answer = post(browser, study, "practice/done")
    assert status == 409 and answer["error"]["code"] == "game_not_over"
    assert answer["error"]["details"] == {"game_id": game_id, "ended": False}
    assert me(browser, study)["step"] == "practice"

    player = app.client()  # this browser's login, through the REST actions of tests/test_practice.py
    player.http = browser
    view_when(player, game_id, lambda v: "propose" in v["legal_actions"])
    rest_act(player, game_id, "propose", to=1, offer={"cobblestone": 1}, request={"coal": 1})
    view_when(player, game_id, lambda v: v["phase"] == "craft")
    rest_act(player, game_id, "finish_crafting")
    view_when(player, game_id, lambda v: "decide" in v["legal_actions"])
    rest_act(player, game_id, "decide", accept=True)
    view_when(player, game_id, lambda v: "craft" in v["legal_actions"])
    rest_act(player, game_id, "craft", recipe="torch", runs=1)
    rest_act(player, game_id, "finish_crafting")
    view_when(player, game_id, lambda v: v["finished"])
    # the guide's completion request never came (the participant was quicker): practice/done records it
    status, answer = post(browser, study, "practice/done")
    assert status == 200 and answer["participant"]["step"] == "comprehension"
    participant = load_participant(app.services.store, study.id, record_of(app, study, browser).id)
    assert participant is not None
    assert [e.detail.get("game_id") for e in participant.events if e.event == "practice_completed"] == [
        game_id
    ]


def test_the_playing_page_sends_to_the_running_game_and_waits_once_it_is_over(app: InProcessApp) -> None:
    study = new_study(app, games_per_participant=2)
    browser = arrive(app, study, pid(90))
    to_comprehension(browser, study)
    post(browser, study, "comprehension", {"answers": RIGHT})
    participant = record_of(app, study, browser)
    finished_game = play_duel_game(app.client("Ada"), app.client("Bo"))  # a real game, over
    flow.matched(app.services.store, study, participant.id, finished_game, seat=0, filled_seats=[])
    page = browser.get(f"/study/{study.id}").get_data(as_text=True)
    # the game is over but its end is not recorded yet: the page waits instead of sending back to the game
    assert "Your game is over" in page and 'data-game-over="true"' in page
    assert f'href="/games/{finished_game}"' not in page
    flow.game_over(app.services.store, study, participant.id, finished_game, "lost", 0)
    view = me(browser, study)
    assert view["step"] == "waiting" and view["current_game"] is None  # the second of two games next
    assert view["games"] == [{"game_id": finished_game, "seat": 0, "result": "lost", "points": 0}]


def test_a_lost_practice_is_started_again_from_the_study(app: InProcessApp) -> None:
    study = new_study(app, practice=True, instructions=[])
    browser = arrive(app, study, pid(95))
    post(browser, study, "consent", {"agree": True})
    game_id = post(browser, study, "practice")[1]["game_id"]
    player = app.client()
    player.http = browser
    # pass, reject and finish crafting until the practice's last turn is over: nobody wins
    view = view_when(player, game_id, lambda v: v["finished"] or bool(v["legal_actions"]))
    while not view["finished"]:
        legal = view["legal_actions"]
        if "pass" in legal:
            rest_act(player, game_id, "pass")
        elif "decide" in legal:
            rest_act(player, game_id, "decide", accept=False)
        elif "finish_crafting" in legal:
            rest_act(player, game_id, "finish_crafting")
        view = view_when(player, game_id, lambda v: v["finished"] or bool(v["legal_actions"]))
    assert view["winners"] == []
    status, answer = post(browser, study, "practice/done")
    assert status == 409 and answer["error"]["details"] == {"game_id": game_id, "ended": True}
    assert me(browser, study)["step"] == "practice"
    status, answer = post(browser, study, "practice")
    assert status == 200 and answer["game_id"] != game_id  # a new practice game
    assert answer["participant"]["practice_game_id"] == answer["game_id"]
