"""A participant's way through a study in Debian's chromium against a live server (server/web/study_pages.py
and the study matcher, server/web/study/matching.py): the recruitment link (ids dropped from the address),
consent, the instruction pages, the guided practice game in the ordinary game room and back to the study
from its end screen, the comprehension check with one wrong try, the waiting room with its presence check;
a failed check ending with the screened-out code; the questionnaire and the completion code; two
participants matched into one game, played to the end, one of them closing the tab mid-game and resuming
with the same link; a lone participant playing the fill-in after the maximum wait; a participant who does
not confirm their presence is not matched until they do. Screenshots go to tests/artifacts/study_*.png."""

from __future__ import annotations

import itertools
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_fits_width, axe_violations, page_errors, play_to_the_end
from e2e_helpers import MakeServer, ServerProcess
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from server.table.config import load_settings
from server.web.study import flow
from server.web.study.cli import open_settings_store
from server.web.study.definition import StudyDefinition, parse_definition
from server.web.study.records import iter_participants, save_study

_ids = itertools.count(1)
PRESENCE_CHECK = 5  # the shortest a definition allows: the test sees the question come and go
PRESENCE_TIMEOUT = 3


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(bot_delay=0.3)  # the practice partner pauses as on a real server


def create_study(server: ServerProcess, **changes: Any) -> StudyDefinition:
    """A study stored in the running server's store (as `tradecraft study create` does)."""
    data: dict[str, Any] = {
        "id": f"flow-{next(_ids)}",
        "title": "Trading study",
        "hall": "duel",
        "consent": "You are invited to a study about trading.\n\nYou may stop at any time by closing it.",
        "instructions": [
            "Each player holds items everyone can see and needs a target only they know.",
            "On your turn you propose a trade; the other player accepts or rejects it. Then everyone crafts.",
        ],
        "practice": True,
        "comprehension": {
            "attempts": 2,
            "questions": [
                {
                    "id": "target_private",
                    "prompt": "Who can see your target item?",
                    "choices": ["Everyone", "Only me"],
                    "answer": 1,
                    "explanation": "Targets are private; hands are public.",
                },
                {
                    "id": "trade_answer",
                    "prompt": "What can the other player do with your proposal?",
                    "choices": ["Only accept it", "Accept or reject it"],
                    "answer": 1,
                },
            ],
        },
        "codes": {
            "completed": "C1DONE",
            "screened_out": "C2SCREEN",
            "no_partner": "C3ALONE",
            "dropped": "C4LEFT",
        },
        "payment": {"currency": "GBP", "base": 2.5, "bonus_per_win": 1.0, "screened_out_pay": 0.2},
        "waiting_room": {
            "max_wait_seconds": 600,
            "presence_check_seconds": PRESENCE_CHECK,
            "presence_timeout_seconds": PRESENCE_TIMEOUT,
        },
        **changes,
    }
    definition = parse_definition(data)
    with open_settings_store(load_settings(server.config)) as store:
        save_study(store, definition)
    return definition


def participants(server: ServerProcess, definition: StudyDefinition) -> list[Any]:
    with open_settings_store(load_settings(server.config)) as store:
        return list(iter_participants(store, definition.id))


def open_link(page: Page, server: ServerProcess, definition: StudyDefinition, participant: str) -> None:
    page.goto(f"{server.url}/study/{definition.id}?PROLIFIC_PID={participant}&STUDY_ID=plat&SESSION_ID=s1")
    assert page.url == f"{server.url}/study/{definition.id}"  # the ids left the address bar
    expect(page.locator("#study[data-ready=true]")).to_be_attached()


def shot(page: Page, artifacts: Path, name: str) -> None:
    page.screenshot(path=str(artifacts / f"study_{name}.png"), full_page=True)


def guide_step(page: Page, step: str) -> None:
    expect(page.locator(f"#practice-guide[data-step={step}]")).to_be_visible()


def play_guided_practice(page: Page) -> None:
    """Follow the practice guide (as tests/browser/test_practice_game.py does) to the win."""
    guide_step(page, "welcome")
    page.get_by_role("button", name="Next").click()
    guide_step(page, "propose")
    page.get_by_role("button", name="Ask for 1 × Coal").click()
    page.get_by_role("button", name="Give 2 × Cobblestone").click()
    page.locator("#propose-send").click()
    guide_step(page, "craft_wait")
    page.locator("#craft-finish").click()
    guide_step(page, "accept")
    page.locator("#decide-accept").click()
    guide_step(page, "craft")
    page.locator("#craft-possible .craft-row.guide-target").get_by_role("button", name="Craft").click()
    guide_step(page, "finish")
    page.locator("#craft-finish").click()
    guide_step(page, "done")


def answer(page: Page, question: str, choice: str) -> None:
    page.locator(f"fieldset[data-question={question}]").get_by_label(choice).check()


def test_link_consent_instructions_practice_check_and_waiting_room(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    study = create_study(server)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = page_errors(page)

    open_link(page, server, study, "prolific0001")
    expect(page.get_by_role("heading", name="Information and consent")).to_be_visible()
    expect(page.locator(".study-title")).to_have_text("Trading study")
    expect(page.get_by_role("link", name="Lobby")).to_have_count(0)  # no way into the lobby
    expect(page.locator("#consent-text p")).to_have_count(2)
    assert axe_violations(page) == []
    shot(page, artifacts, "1_consent")
    page.get_by_role("button", name="I agree").click()

    expect(page.get_by_role("heading", name="Instructions")).to_be_visible()
    expect(page.get_by_text("Page 1 of 2")).to_be_visible()
    shot(page, artifacts, "2_instructions")
    page.get_by_role("button", name="Next").click()
    expect(page.get_by_text("Page 2 of 2")).to_be_visible()
    page.get_by_role("button", name="Back").click()
    expect(page.get_by_text("Page 1 of 2")).to_be_visible()
    page.get_by_role("button", name="Next").click()
    page.get_by_role("button", name="I have read the instructions").click()

    expect(page.get_by_role("heading", name="Practice game")).to_be_visible()
    shot(page, artifacts, "3_practice_start")
    page.get_by_role("button", name="Start the practice game").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    expect(page.locator(".site-header")).to_be_hidden()  # the study's practice: no lobby chrome either
    play_guided_practice(page)
    back = page.get_by_role("link", name="Back to the study")
    expect(back).to_be_visible()
    expect(page.get_by_role("link", name="Back to the lobby")).to_be_hidden()
    expect(page.locator("#room-rematch")).to_be_hidden()
    shot(page, artifacts, "4_practice_done")
    back.click()

    # the study page records the completed practice and moves on to the check
    expect(page.get_by_role("heading", name="A few questions")).to_be_visible()
    assert page.url == f"{server.url}/study/{study.id}"
    expect(page.locator("#tries-left")).to_have_text("2")
    answer(page, "target_private", "Everyone")  # wrong
    answer(page, "trade_answer", "Accept or reject it")
    page.get_by_role("button", name="Check my answers").click()
    expect(page.locator("#comprehension-feedback")).to_contain_text("1 answer was wrong")
    expect(page.locator("fieldset[data-question=target_private] .study-explanation")).to_have_text(
        "Wrong answer. Targets are private; hands are public."
    )
    expect(page.locator("fieldset[data-question=trade_answer] .study-explanation")).to_be_hidden()
    expect(page.locator("#tries-left")).to_have_text("1")
    shot(page, artifacts, "5_comprehension_wrong")
    answer(page, "target_private", "Only me")
    page.get_by_role("button", name="Check my answers").click()

    expect(page.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    waiting = page.locator("#waiting")
    expect(waiting).to_have_attribute("data-presence", "confirmed")
    expect(page.locator("#waiting-max")).to_have_text("10:00")
    expect(page.get_by_role("button", name="I'm still here")).to_be_hidden()
    shot(page, artifacts, "6_waiting")
    # every presence_check_seconds the page asks; unanswered for presence_timeout_seconds, it warns
    expect(page.get_by_role("button", name="I'm still here")).to_be_visible(
        timeout=(PRESENCE_CHECK + 3) * 1000
    )
    shot(page, artifacts, "7_waiting_presence_check")
    expect(page.locator("#presence-missed")).to_be_visible(timeout=(PRESENCE_TIMEOUT + 3) * 1000)
    expect(waiting).to_have_attribute("data-presence", "missed")
    shot(page, artifacts, "8_waiting_not_matched")
    page.get_by_role("button", name="I'm still here").click()
    expect(page.locator("#presence-missed")).to_be_hidden()
    expect(waiting).to_have_attribute("data-presence", "confirmed")
    assert_fits_width(page)
    assert axe_violations(page) == []

    [record] = participants(server, study)
    assert record.step == "waiting" and record.recruitment.participant_id == "prolific0001"
    events = [event.event for event in record.events]
    for expected in ("consented", "instructions_read", "practice_started", "practice_completed"):
        assert events.count(expected) == 1, events
    assert events.count("comprehension_attempt") == 2 and "presence_confirmed" in events
    assert [attempt.wrong for attempt in record.comprehension] == [["target_private"], []]

    # the same link in a new tab resumes the waiting room, not the consent
    again = context.new_page()
    open_link(again, server, study, "prolific0001")
    expect(again.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    assert not errors
    context.close()


def test_a_failed_check_ends_with_the_screened_out_code(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    study = create_study(server, practice=False, instructions=[])
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    errors = page_errors(page)
    open_link(page, server, study, "prolific0002")
    second_tab = context.new_page()  # the same link in a second tab: the same consent page
    open_link(second_tab, server, study, "prolific0002")
    page.get_by_role("button", name="I agree").click()
    expect(page.get_by_role("heading", name="A few questions")).to_be_visible()
    # the stale tab's "I agree" is refused (wrong_step) and the tab reloads to the current step
    second_tab.get_by_role("button", name="I agree").click()
    expect(second_tab.get_by_role("heading", name="A few questions")).to_be_visible()
    second_tab.close()
    # an incomplete sheet is not sent (no try is used)
    answer(page, "target_private", "Everyone")
    page.get_by_role("button", name="Check my answers").click()
    expect(page.locator("#study-error")).to_contain_text("Please answer every question")
    expect(page.locator("#tries-left")).to_have_text("2")
    for _ in range(2):
        answer(page, "target_private", "Everyone")
        answer(page, "trade_answer", "Only accept it")
        page.get_by_role("button", name="Check my answers").click()
        if _ == 0:
            expect(page.locator("#tries-left")).to_have_text("1")
            shot(page, artifacts, "9_comprehension_last_try")
    expect(page.get_by_role("heading", name="The study ends here for you")).to_be_visible()
    expect(page.locator("#completion-code")).to_have_text("C2SCREEN")
    expect(page.locator("#earned-bonus")).to_have_text("0.20 GBP")
    expect(page.locator("#earned-base")).to_have_text("0.00 GBP")
    page.get_by_role("button", name="Copy the code").click()
    expect(page.locator("#copy-done")).to_be_visible()
    assert_fits_width(page)
    assert axe_violations(page) == []
    shot(page, artifacts, "10_screened_out_code")
    [record] = participants(server, study)
    assert [event.event for event in record.events].count("consented") == 1
    # their own data, nobody else's: no recruitment ids in it
    data = page.evaluate(
        "async (sid) => (await (await fetch(`/api/study/${sid}/me/data`)).json()).data", study.id
    )
    assert data["code"] == "C2SCREEN" and "prolific0002" not in str(data)
    # the same link later: still the code page
    open_link(page, server, study, "prolific0002")
    expect(page.locator("#completion-code")).to_have_text("C2SCREEN")
    # another platform session of the same participant id is refused, with what to do
    other = browser.new_context().new_page()
    other.goto(f"{server.url}/study/{study.id}?PROLIFIC_PID=prolific0002&STUDY_ID=plat&SESSION_ID=s2")
    expect(other.get_by_role("heading", name="You have taken part already")).to_be_visible()
    shot(other, artifacts, "11_already_participated")
    other.goto(f"{server.url}/study/{study.id}")
    expect(other.get_by_role("heading", name="Please open the study's link")).to_be_visible()
    assert not errors
    context.close()


def test_after_the_game_the_questionnaire_then_the_code_and_earnings(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    """The waiting room opens what the matcher decides: here its two calls of the study core (flow.matched,
    flow.game_over) are made straight on the server's store, for a game that exists only in the record."""
    study = create_study(
        server,
        practice=False,
        instructions=[],
        comprehension={"questions": []},
        questionnaire=[
            {
                "id": "strategy",
                "prompt": "How did you decide what to offer?",
                "kind": "text",
                "max_chars": 200,
            },
            {
                "id": "partner_human",
                "prompt": "Was your partner a person or a computer?",
                "kind": "choice",
                "choices": ["A person", "A computer", "Not sure"],
                "required": True,
            },
            {
                "id": "difficulty",
                "prompt": "How hard was the game?",
                "kind": "scale",
                "scale_points": 7,
                "scale_labels": ["Very easy", "Very hard"],
            },
        ],
        recruitment={"completion_url": "https://app.example/complete?cc={code}"},
    )
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    errors = page_errors(page)
    open_link(page, server, study, "prolific0003")
    page.get_by_role("button", name="I agree").click()
    expect(page.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    [record] = participants(server, study)
    with open_settings_store(load_settings(server.config)) as store:
        flow.matched(store, study, record.id, "g-browser-test", seat=0, filled_seats=[1])
        flow.game_over(store, study, record.id, "g-browser-test", "won", 3)
        flow.send_message(store, study, record.id, "Thanks for playing <b>today</b>!")
    # the page's poll of /me sees the new step and shows it, with the researcher's message
    expect(page.get_by_role("heading", name="A few last questions")).to_be_visible()
    expect(page.locator(".study-banner")).to_contain_text("Thanks for playing <b>today</b>!")
    page.get_by_role("button", name="Send my answers").click()
    expect(page.locator("#study-error")).to_contain_text(
        "Please answer: Was your partner a person or a computer?"
    )
    page.get_by_label("How did you decide what to offer?").fill("I offered what I did not need.")
    page.get_by_label("A computer").check()
    page.locator("fieldset[data-item=difficulty]").get_by_label("5").check()
    shot(page, artifacts, "12_questionnaire")
    page.get_by_role("button", name="Send my answers").click()

    expect(page.get_by_role("heading", name="Thank you: you have finished")).to_be_visible()
    expect(page.locator("#completion-code")).to_have_text("C1DONE")
    expect(page.locator("#earned-total")).to_have_text("3.50 GBP")
    expect(page.get_by_role("link", name="Go back to the recruitment site with your code")).to_have_attribute(
        "href", "https://app.example/complete?cc=C1DONE"
    )
    expect(page.locator(".study-banner")).to_have_count(0)  # read when it was shown
    assert axe_violations(page) == []
    shot(page, artifacts, "13_completed_code")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download what we recorded about you").click()
    mine = Path(download.value.path()).read_text(encoding="utf-8")
    assert "I offered what I did not need." in mine and "prolific0003" not in mine
    [record] = participants(server, study)
    assert record.questionnaire == {
        "strategy": "I offered what I did not need.",
        "partner_human": 1,
        "difficulty": 5,
    }
    assert record.outcome == "completed" and record.messages[0].read_at is not None
    assert not errors
    context.close()


def play_both_to_the_end(pages: list[Page], looks: int = 240) -> None:
    """Both participants play their seats as play_to_the_end (conftest.py) plays one: pass when proposing,
    reject what the other proposes, finish every craft phase; a quarter second between two looks."""
    for _ in range(looks):
        if all(page.locator("#room-end").is_visible() for page in pages):
            return
        for page in pages:
            for button in ("#propose-pass", "#decide-reject", "#craft-finish"):
                target = page.locator(button)
                if target.is_visible() and target.is_enabled():
                    with suppress(PlaywrightTimeoutError):  # the other's move may have just replaced it
                        target.click(timeout=2000)
                    break
        pages[0].wait_for_timeout(250)
    for page in pages:
        play_to_the_end(page, moves=1)  # its own check that the end screen shows


def test_two_participants_matched_play_one_game_a_closed_tab_resumes_then_codes(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    study = create_study(
        server,
        practice=False,
        instructions=[],
        comprehension={"questions": []},
        questionnaire=[
            {
                "id": "partner_human",
                "prompt": "Was your partner a person or a computer?",
                "kind": "choice",
                "choices": ["A person", "A computer", "Not sure"],
                "required": True,
            }
        ],
        deadlines={"trade_propose": 30, "trade_decide": 30, "craft": 30, "tom_report": 30},
        dropout={"disconnect_grace_seconds": 60, "idle_timeouts": 50},
    )
    contexts = [browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(2)]
    pages = [context.new_page() for context in contexts]
    errors = [page_errors(page) for page in pages]
    for n, page in enumerate(pages):
        open_link(page, server, study, f"pair{n}")
        page.get_by_role("button", name="I agree").click()
        expect(page.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    # the matcher seats both in one game of the study's hall; each waiting page opens it by itself
    for page in pages:
        page.wait_for_url("**/games/**", timeout=15_000)
        expect(page.locator("#room[data-ready=true]")).to_be_attached()
    game_id = pages[0].url.rstrip("/").rsplit("/", 1)[1]
    assert pages[1].url.rstrip("/").rsplit("/", 1)[1] == game_id
    expect(pages[0].locator("#room-target")).to_be_visible()
    expect(pages[0].locator(".site-header")).to_be_hidden()
    shot(pages[0], artifacts, "14_game_matched")

    # the first participant closes the tab mid-game and comes back with the same link: the same seat
    pages[0].close()
    pages[0] = contexts[0].new_page()
    errors[0] = page_errors(pages[0])
    pages[0].goto(f"{server.url}/study/{study.id}?PROLIFIC_PID=pair0&STUDY_ID=plat&SESSION_ID=s1")
    pages[0].wait_for_url(f"**/games/{game_id}", timeout=15_000)
    expect(pages[0].locator("#room[data-ready=true]")).to_be_attached()
    expect(pages[0].locator("#room-target")).to_be_visible()  # their own seat's target: seated again

    play_both_to_the_end(pages)
    for n, page in enumerate(pages):
        back = page.get_by_role("link", name="Back to the study")
        expect(back).to_be_visible()
        if n == 0:
            shot(page, artifacts, "15_game_over")
        back.click()
        # the matcher records the game's end within about a second; the page waits for it
        expect(page.get_by_role("heading", name="A few last questions")).to_be_visible(timeout=15_000)
        page.get_by_label(["A person", "A computer"][n]).check()
        page.get_by_role("button", name="Send my answers").click()
        expect(page.locator("#completion-code")).to_have_text("C1DONE")
        expect(page.locator("#earned-base")).to_have_text("2.50 GBP")
    shot(pages[1], artifacts, "16_pair_completed")

    records = {record.recruitment.participant_id: record for record in participants(server, study)}
    assert sorted(records) == ["pair0", "pair1"]
    for record in records.values():
        assert record.outcome == "completed" and record.code == "C1DONE"
        [game] = record.games
        assert game.game_id == game_id and game.result in ("won", "lost", "no_winner")
        assert game.filled_seats == []  # two people, no fill-in
    assert {records["pair0"].games[0].seat, records["pair1"].games[0].seat} == {0, 1}
    assert records["pair0"].reconnects >= 1
    assert records["pair1"].questionnaire == {"partner_human": 1}
    assert not errors[0] and not errors[1]
    for context in contexts:
        context.close()


def short_study(server: ServerProcess, **changes: Any) -> StudyDefinition:
    """A study of consent, waiting room and one game (no instructions, practice, check or questionnaire)."""
    return create_study(
        server, practice=False, instructions=[], comprehension={"questions": []}, questionnaire=[], **changes
    )


def test_a_lone_participant_plays_the_fill_in_after_the_maximum_wait(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    study = short_study(
        server,
        waiting_room={
            "max_wait_seconds": 4,
            "on_timeout": "fill",
            "fill_in": {"kind": "bot", "bot": "random"},
        },
    )
    page = browser.new_page()
    errors = page_errors(page)
    open_link(page, server, study, "alone0001")
    page.get_by_role("button", name="I agree").click()
    expect(page.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    page.wait_for_url("**/games/**", timeout=20_000)
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    play_to_the_end(page)
    page.get_by_role("link", name="Back to the study").click()
    expect(page.locator("#completion-code")).to_have_text("C1DONE", timeout=15_000)
    shot(page, artifacts, "17_alone_with_the_fill_in")
    [record] = participants(server, study)
    [game] = record.games
    assert game.filled_seats == [1 - game.seat]  # the other seat went to the fill-in
    assert [e.detail["waited"] >= 4 for e in record.events if e.event == "matched"] == [True]
    assert not errors
    page.close()


def test_a_participant_who_does_not_confirm_presence_is_not_matched(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    study = short_study(server)
    first, second = (browser.new_context().new_page() for _ in range(2))
    open_link(first, server, study, "late0001")
    first.get_by_role("button", name="I agree").click()
    # the first does not answer the presence check: they are no longer matched
    expect(first.locator("#presence-missed")).to_be_visible(
        timeout=(PRESENCE_CHECK + PRESENCE_TIMEOUT + 3) * 1000
    )
    open_link(second, server, study, "late0002")
    second.get_by_role("button", name="I agree").click()
    expect(second.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    second.wait_for_timeout(3000)  # three matcher rounds
    assert "/study/" in second.url and "/study/" in first.url
    assert all(record.step == "waiting" for record in participants(server, study))
    shot(first, artifacts, "18_unconfirmed_not_matched")
    # once they confirm, both are matched into one game
    first.get_by_role("button", name="I'm still here").click()
    for page in (first, second):
        page.wait_for_url("**/games/**", timeout=15_000)
    assert first.url == second.url
    first.context.close()
    second.context.close()
