"""The study's waiting room in Debian's chromium against live server processes (server/web/study_pages.py,
static/js/study.js, the matcher of server/web/study/matching.py), each over its own real SQLite file:

- a lone participant goes from the link through consent and a one-question check into the waiting room,
  confirms their presence when asked, is matched with the study's fill-in bot after the maximum wait, plays
  that game to its end, answers the questionnaire and gets the completed code with their earnings;
- a participant who does not confirm their presence is not matched: the page says they will not be matched
  until they confirm, after the maximum wait and one more presence check they leave with the no-partner
  code, and another participant waiting meanwhile plays the fill-in instead;
- under the exit rule, a lone participant's wait ends with the no-partner code and its pay;
- the waiting room survives a server crash: the process is killed (SIGKILL) and started again on the same
  SQLite file and port while a participant waits; their page keeps counting and they are matched.

The waits are short (a maximum wait of a few seconds; the shortest presence check a definition allows), so
each test takes seconds, not minutes. Screenshots go to tests/artifacts/waiting_room_*.png.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_fits_width, axe_violations, page_errors, play_to_the_end
from e2e_helpers import MakeServer, ServerProcess
from playwright.sync_api import Browser, BrowserContext, Page, expect

from server.table.config import load_settings
from server.web.study.cli import open_settings_store
from server.web.study.definition import StudyDefinition, parse_definition
from server.web.study.records import Participant, iter_participants, iter_study_games, save_study

_ids = itertools.count(1)
MAX_WAIT = 8  # the lone participant is asked once (after PRESENCE_CHECK) before the fill-in comes
PRESENCE_CHECK = 5  # the shortest a definition allows
PRESENCE_TIMEOUT = 3  # the shortest a definition allows
FILL_IN_BOT = "random"  # quick to move on a busy machine
CODES = {"completed": "W1DONE", "screened_out": "W2SCREEN", "no_partner": "W3ALONE", "dropped": "W4LEFT"}


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(bot_delay=0.3)  # the fill-in pauses before its moves, as on a real server


@pytest.fixture
def contexts(browser: Browser) -> Iterator[list[BrowserContext]]:
    """Browser contexts a test opens (each one participant's browser); closed when the test ends."""
    opened: list[BrowserContext] = []
    yield opened
    for context in opened:
        context.close()


def new_page(browser: Browser, contexts: list[BrowserContext], **options: Any) -> Page:
    context = browser.new_context(**({"viewport": {"width": 1280, "height": 800}} | options))
    contexts.append(context)
    return context.new_page()


def create_study(
    server: ServerProcess, payment: dict[str, Any] | None = None, **waiting_room: Any
) -> StudyDefinition:
    """A duel study straight from consent to a one-question check and the waiting room (no instructions or
    practice), stored in the running server's store as `tradecraft study create` does; ``payment`` and
    ``waiting_room`` replace keys of those sections."""
    definition = parse_definition(
        {
            "id": f"waiting-{next(_ids)}",
            "title": "Trading study",
            "hall": "duel",
            "consent": "You are invited to a study about trading.\n\nYou may stop at any time by closing it.",
            "practice": False,
            "comprehension": {
                "attempts": 2,
                "questions": [
                    {
                        "id": "target_private",
                        "prompt": "Who can see your target item?",
                        "choices": ["Everyone", "Only me"],
                        "answer": 1,
                    }
                ],
            },
            "questionnaire": [
                {
                    "id": "partner_human",
                    "prompt": "Was your partner a person or a computer?",
                    "kind": "choice",
                    "choices": ["A person", "A computer", "Not sure"],
                    "required": True,
                },
            ],
            "codes": CODES,
            "payment": {"currency": "GBP", "base": 2.5, "bonus_per_win": 1.0, **(payment or {})},
            "waiting_room": {
                "max_wait_seconds": MAX_WAIT,
                "presence_check_seconds": PRESENCE_CHECK,
                "presence_timeout_seconds": PRESENCE_TIMEOUT,
                "on_timeout": "fill",
                "fill_in": {"kind": "bot", "bot": FILL_IN_BOT},
                **waiting_room,
            },
        }
    )
    with open_settings_store(load_settings(server.config)) as store:
        save_study(store, definition)
    return definition


def participants(server: ServerProcess, definition: StudyDefinition) -> dict[str, Participant]:
    """The study's participants by recruitment id, as stored now."""
    with open_settings_store(load_settings(server.config)) as store:
        return {p.recruitment.participant_id: p for p in iter_participants(store, definition.id)}


def study_games(server: ServerProcess, definition: StudyDefinition) -> dict[str, dict[int, str | None]]:
    """The study's games: game id -> seat -> participant id (None: the fill-in's seat)."""
    with open_settings_store(load_settings(server.config)) as store:
        return {game.game_id: dict(game.participants) for game in iter_study_games(store, definition.id)}


def shot(page: Page, artifacts: Path, name: str) -> None:
    page.screenshot(path=str(artifacts / f"waiting_room_{name}.png"), full_page=True)


def to_waiting_room(
    page: Page, server: ServerProcess, definition: StudyDefinition, recruitment_id: str
) -> None:
    """The study link, consent and the check answered right: the waiting room, its clock started."""
    page.goto(f"{server.url}/study/{definition.id}?PROLIFIC_PID={recruitment_id}&STUDY_ID=plat&SESSION_ID=s1")
    expect(page.locator("#study[data-ready=true]")).to_be_attached()
    page.get_by_role("button", name="I agree").click()
    expect(page.get_by_role("heading", name="A few questions")).to_be_visible()
    page.locator("fieldset[data-question=target_private]").get_by_label("Only me").check()
    page.get_by_role("button", name="Check my answers").click()
    expect(page.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    expect(page.locator("#study[data-ready=true]")).to_be_attached()


def elapsed_seconds(page: Page) -> int:
    """The waiting room's "Waited m:ss" clock, in seconds."""
    minutes, seconds = page.locator("#waiting-elapsed").inner_text().split(":")
    return int(minutes) * 60 + int(seconds)


def confirm_until_matched(page: Page, timeout: float) -> None:
    """Answer every presence check until the page opens the game room (the matcher seated the participant)."""
    deadline = time.monotonic() + timeout
    here = page.get_by_role("button", name="I'm still here")
    while "/games/" not in page.url:
        assert time.monotonic() < deadline, f"not matched within {timeout} s (still on {page.url})"
        try:
            if here.is_visible() and here.is_enabled():
                here.click(timeout=1000)
        except Exception:  # the page left for the game between the look and the click
            pass
        page.wait_for_timeout(250)
    expect(page.locator("#room[data-ready=true]")).to_be_attached()


def seat_name(page: Page, seat: int) -> str:
    """The name the game room shows for ``seat``."""
    return page.locator(f".seat-label[data-seat='{seat}'] .seat-name").first.inner_text().strip()


# -------------------------------------------------------------------------------------------------- tests
def test_a_lone_participant_is_matched_with_the_fill_in_after_the_maximum_wait(
    server: ServerProcess, browser: Browser, contexts: list[BrowserContext], artifacts: Path
) -> None:
    study = create_study(server)
    page = new_page(browser, contexts)
    errors = page_errors(page)

    page.goto(f"{server.url}/study/{study.id}?PROLIFIC_PID=lone0001&STUDY_ID=plat&SESSION_ID=s1")
    assert page.url == f"{server.url}/study/{study.id}"  # the ids left the address bar
    expect(page.get_by_role("heading", name="Information and consent")).to_be_visible()
    shot(page, artifacts, "1_consent")
    page.get_by_role("button", name="I agree").click()
    expect(page.get_by_role("heading", name="A few questions")).to_be_visible()
    expect(page.locator("#tries-left")).to_have_text("2")
    page.locator("fieldset[data-question=target_private]").get_by_label("Only me").check()
    shot(page, artifacts, "2_check")
    page.get_by_role("button", name="Check my answers").click()

    expect(page.get_by_role("heading", name="Waiting for your game")).to_be_visible()
    waiting = page.locator("#waiting")
    expect(page.locator("#waiting-max")).to_have_text(f"0:{MAX_WAIT:02d}")
    expect(page.locator(".study-clock")).to_have_text(
        re.compile(rf"^Waited 0:0\d of at most 0:{MAX_WAIT:02d}\.$"), use_inner_text=True
    )
    expect(waiting).to_have_attribute("data-presence", "confirmed")
    expect(page.get_by_role("button", name="I'm still here")).to_be_hidden()
    shot(page, artifacts, "3_waiting")
    # the clock counts the wait, one second at a time
    expect(page.locator("#waiting-elapsed")).to_have_text(re.compile(r"0:0[2-9]"), timeout=4000)
    first = elapsed_seconds(page)
    page.wait_for_timeout(1100)
    assert elapsed_seconds(page) > first

    # asked after PRESENCE_CHECK seconds; confirming keeps the participant in the running
    here = page.get_by_role("button", name="I'm still here")
    expect(here).to_be_visible(timeout=(PRESENCE_CHECK + 3) * 1000)
    expect(waiting).to_have_attribute("data-presence", "asking")
    assert "/games/" not in page.url  # not matched before the maximum wait
    assert axe_violations(page) == []
    shot(page, artifacts, "4_presence_check")
    here.click()

    # after the maximum wait the matcher seats them with the fill-in: the page opens the game room
    confirm_until_matched(page, timeout=MAX_WAIT + 15)
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]
    [record] = participants(server, study).values()
    assert study_games(server, study) == {game_id: {0: record.id, 1: None}}
    matched = next(event for event in record.events if event.event == "matched")
    # a round a second: matched at the maximum wait, not long after (slack for a busy machine)
    assert MAX_WAIT <= matched.detail["waited"] <= MAX_WAIT + 4, matched
    assert record.games[0].filled_seats == [1], record.games
    expect(page.locator(".site-header")).to_be_hidden()  # a study game: no way into the lobby
    # the room marks the fill-in as a bot by its seat's kind, whatever its name
    expect(page.locator(".seat-label[data-seat='1'] [data-seat-kind]").first).to_have_attribute(
        "data-seat-kind", "bot"
    )
    shot(page, artifacts, "5_game_with_fill_in")

    play_to_the_end(page, moves=240)
    back = page.get_by_role("link", name="Back to the study")
    expect(back).to_be_visible()
    shot(page, artifacts, "6_game_over")
    back.click()

    # the matcher records the game's end within about a second: then the questionnaire
    expect(page.get_by_role("heading", name="A few last questions")).to_be_visible(timeout=15_000)
    page.get_by_label("A computer").check()
    shot(page, artifacts, "7_questionnaire")
    page.get_by_role("button", name="Send my answers").click()

    expect(page.get_by_role("heading", name="Thank you: you have finished")).to_be_visible()
    expect(page.locator("#completion-code")).to_have_text(CODES["completed"])
    [record] = participants(server, study).values()
    [game] = record.games
    assert game.game_id == game_id and game.result in ("won", "lost", "no_winner"), game
    bonus = 1.0 if game.result == "won" else 0.0
    expect(page.locator("#earned-base")).to_have_text("2.50 GBP")
    expect(page.locator("#earned-bonus")).to_have_text(f"{bonus:.2f} GBP")
    expect(page.locator("#earned-total")).to_have_text(f"{2.5 + bonus:.2f} GBP")
    assert record.outcome == "completed" and record.questionnaire == {"partner_human": 1}
    assert_fits_width(page)
    assert axe_violations(page) == []
    shot(page, artifacts, "8_completed_code")
    assert not errors


def test_a_participant_who_does_not_confirm_presence_is_not_matched(
    server: ServerProcess, browser: Browser, contexts: list[BrowserContext], artifacts: Path
) -> None:
    """The silent one is never matched (another participant waiting meanwhile plays the fill-in instead), is
    told why, and once they have waited the maximum wait and one more presence check, their wait ends with
    the no-partner code (an open page nobody answers frees its place; docs/studies.md)."""
    # present (not yet asked) for 5 + 10 s, short of the maximum wait, so never filled in alone; sent home
    # at 20 + 5 + 10 s, as the other one's maximum wait ends
    timeout, max_wait = 10, 20
    study = create_study(server, presence_timeout_seconds=timeout, max_wait_seconds=max_wait)
    silent = new_page(browser, contexts)
    prompt = new_page(
        browser, contexts, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    errors = [page_errors(silent), page_errors(prompt)]  # each page's list fills as errors happen

    # the silent one enters first and never answers the presence check
    to_waiting_room(silent, server, study, "silent0001")
    expect(silent.get_by_role("button", name="I'm still here")).to_be_visible(
        timeout=(PRESENCE_CHECK + 3) * 1000
    )
    missed = silent.locator("#presence-missed")
    expect(missed).to_be_visible(timeout=(timeout + 3) * 1000)
    expect(missed).to_have_text('You will not be matched with anyone until you click "I\'m still here".')
    expect(silent.locator("#waiting")).to_have_attribute("data-presence", "missed")
    shot(silent, artifacts, "9_silent_not_matched")

    # a second participant waits beside them and answers every check
    to_waiting_room(prompt, server, study, "prompt0001")
    shot(prompt, artifacts, "10_prompt_waiting_phone")

    # still unmatched, still told why; the page did not move. Past the maximum wait, the clock no longer
    # claims "of at most 0:20", nor that the game is about to open: what to do is the one message
    expect(silent.locator("#waiting-elapsed")).to_have_text(re.compile(r"^0:2[1-9]$"), timeout=10_000)
    assert silent.url == f"{server.url}/study/{study.id}"
    expect(missed).to_be_visible()
    clock = silent.locator(".study-clock")
    expect(clock).to_have_text(re.compile(r"^Waited 0:\d\d\.$"), use_inner_text=True)
    expect(silent.locator("#waiting-over")).to_be_hidden()
    shot(silent, artifacts, "12_silent_past_the_maximum_wait")
    assert participants(server, study)["silent0001"].step == "waiting"

    # the maximum wait and one more check (ask + time to answer) later, nobody having answered: sent home
    limit = max_wait + PRESENCE_CHECK + timeout
    expect(silent.get_by_role("heading", name="Nobody was free to play")).to_be_visible(timeout=20_000)
    expect(silent.locator("#completion-code")).to_have_text(CODES["no_partner"])
    shot(silent, artifacts, "13_silent_sent_home_with_no_partner")
    record = participants(server, study)["silent0001"]
    assert record.outcome == "no_partner" and not record.games
    assert "presence_confirmed" not in [event.event for event in record.events]
    waited = next(event for event in record.events if event.event == "no_partner").detail["waited"]
    assert limit <= waited <= limit + 4, waited

    # the other one, at their maximum wait, plays the fill-in: never the silent one
    confirm_until_matched(prompt, timeout=max_wait + 15)
    prompt_game = prompt.url.rstrip("/").rsplit("/", 1)[1]
    people = participants(server, study)
    assert study_games(server, study) == {prompt_game: {0: people["prompt0001"].id, 1: None}}
    assert seat_name(prompt, 1) != people["silent0001"].name
    shot(prompt, artifacts, "11_prompt_game_with_fill_in_phone")
    assert errors == [[], []]


def test_under_the_exit_rule_a_lone_participant_leaves_with_the_no_partner_code(
    server: ServerProcess, browser: Browser, contexts: list[BrowserContext], artifacts: Path
) -> None:
    study = create_study(server, payment={"no_partner_pay": 0.75}, on_timeout="exit")
    page = new_page(browser, contexts, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    errors = page_errors(page)
    to_waiting_room(page, server, study, "alone0001")
    here = page.get_by_role("button", name="I'm still here")
    expect(here).to_be_visible(timeout=(PRESENCE_CHECK + 3) * 1000)
    here.click()
    # after the maximum wait the page moves on by itself: no game, the no-partner code and its pay
    expect(page.get_by_role("heading", name="Nobody was free to play")).to_be_visible(
        timeout=(MAX_WAIT + 10) * 1000
    )
    expect(page.locator("#completion-code")).to_have_text(CODES["no_partner"])
    expect(page.locator("#earned-base")).to_have_text("2.50 GBP")
    expect(page.locator("#earned-bonus")).to_have_text("0.75 GBP")
    expect(page.locator("#earned-total")).to_have_text("3.25 GBP")
    assert_fits_width(page)
    assert axe_violations(page) == []
    shot(page, artifacts, "17_no_partner_code_phone")
    [record] = participants(server, study).values()
    assert record.outcome == "no_partner" and not record.games and study_games(server, study) == {}
    no_partner = next(event for event in record.events if event.event == "no_partner")
    assert MAX_WAIT <= no_partner.detail["waited"] <= MAX_WAIT + 4, no_partner
    assert not errors


def test_the_waiting_room_survives_a_server_restart(
    make_server: MakeServer, browser: Browser, contexts: list[BrowserContext], artifacts: Path
) -> None:
    first = make_server(bot_delay=0.3)
    # long enough that the wait is not over before the server is back: the page must carry it through
    study = create_study(first, max_wait_seconds=15)
    page = new_page(browser, contexts)
    errors = page_errors(page)
    to_waiting_room(page, first, study, "restart0001")
    [before] = participants(first, study).values()
    expect(page.locator("#waiting-elapsed")).to_have_text(re.compile(r"0:0[2-9]"), timeout=4000)

    first.kill()  # a crash: no shutdown code runs, the matcher's lease is left behind
    # the page's polls fail meanwhile; its clock goes on, it asks as usual, and an answer that cannot reach
    # the server says so
    here = page.get_by_role("button", name="I'm still here")
    expect(here).to_be_visible(timeout=(PRESENCE_CHECK + 3) * 1000)
    shot(page, artifacts, "14_waiting_server_down")
    here.click()
    expect(page.locator("#study-error")).to_have_text("The server could not be reached; try again.")
    shot(page, artifacts, "15_presence_while_server_down")
    during = elapsed_seconds(page)
    assert "/games/" not in page.url

    second = make_server(first.config, port=first.port)  # the same settings file: the same SQLite file
    page.wait_for_timeout(1100)  # the clock ticks each second, whatever the server does
    assert elapsed_seconds(page) > during
    confirm_until_matched(page, timeout=30)  # the next "I'm still here" reaches the new process
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]
    [after] = participants(second, study).values()
    assert after.id == before.id and study_games(second, study) == {game_id: {0: after.id, 1: None}}
    matched = next(event for event in after.events if event.event == "matched")
    assert matched.detail["waited"] >= 15  # counted from the first entry: the wait survived the restart
    shot(page, artifacts, "16_matched_after_restart")
    assert not errors
