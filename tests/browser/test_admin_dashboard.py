"""The researcher's admin dashboard in a real browser (Debian chromium through Playwright) against a live
server: the login form (a wrong password first), live games, one game's page following a move live, a seat
handed to a bot that then really moves, ending the game, its downloads, and API tokens created and revoked.
Screenshots go to tests/artifacts/admin-*.png."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import axe_violations, page_errors
from e2e_helpers import ADMIN_PASSWORD, DUEL_TRADE, Client, ServerProcess
from playwright.sync_api import Browser, Page, expect

from server.store import Store, open_store
from server.table.config import load_settings
from server.web.study import flow
from server.web.study.definition import StudyDefinition, load_definition
from server.web.study.records import StudyRecord, load_participant, load_study, save_study

ROOT = Path(__file__).resolve().parents[2]
#: What the admin types into the page's next prompts (a message to a participant).
PROMPT_ANSWERS: list[str] = []


@pytest.fixture
def admin_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    # the confirmations of interventions, and the text typed into a prompt (PROMPT_ANSWERS, in order)
    page.on("dialog", lambda dialog: dialog.accept(PROMPT_ANSWERS.pop(0) if dialog.type == "prompt" else ""))
    yield page
    context.close()


def log_in_through_the_form(page: Page, base_url: str, artifacts: Path) -> None:
    page.goto(base_url + "/admin")
    expect(page).to_have_url(base_url + "/admin/login?next=/admin")
    expect(page.locator("#admin-login[data-ready=true]")).to_be_attached()
    page.get_by_label("Admin password", exact=True).fill("not the password")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#admin-login-error")).to_contain_text("Wrong password")
    page.screenshot(path=artifacts / "admin-login-refused.png")
    page.get_by_label("Admin password", exact=True).fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(base_url + "/admin")


def test_the_admin_watches_a_game_hands_a_seat_to_a_bot_and_ends_it(
    server: ServerProcess, admin_page: Page, artifacts: Path
) -> None:
    page = admin_page
    errors = page_errors(page)
    ada, bob = Client(server.url, "Ada").connect(), Client(server.url, "Bob").connect()
    try:
        game_id = ada.call("create_game", {"hall": "duel"})["game"]["game_id"]
        for seat, client in enumerate((ada, bob)):
            assert client.call("join", {"game_id": game_id})["seat"] == seat

        log_in_through_the_form(page, server.url, artifacts)  # its wrong password is a console error: before
        # from here, a script or style the CSP refused (or any failed request) shows up as a console error
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        row = page.locator(f"#live-games tr[data-game-id='{game_id}']")
        expect(row).to_contain_text("running")
        expect(row).to_contain_text("Ada (person)")
        expect(row).to_contain_text("turn 1")
        chart = page.locator("#admin-status-chart svg")
        expect(chart).to_have_attribute("aria-label", re.compile(r"Games by state: .*running [1-9]"))
        page.screenshot(path=artifacts / "admin-home.png", full_page=True)

        row.get_by_role("link").click()
        expect(page.locator("#admin-game[data-ready=true]")).to_be_attached()
        seats = page.locator("#game-seats tbody tr")
        expect(seats).to_have_count(2)
        expect(seats.nth(0)).to_contain_text("Ada (person)")
        # the researcher sees every target, which no player sees of another
        expect(seats.nth(0).locator("td").nth(3)).not_to_have_text("—")

        # a move arrives live: the private proposal, marked with who saw it
        assert ada.act(game_id, "propose", **DUEL_TRADE)["ok"]
        offered = page.locator("#game-events li[data-type=proposed]")
        expect(offered).to_contain_text("offered")
        expect(offered).to_contain_text("private: seen by Ada and Bob only")
        page.screenshot(path=artifacts / "admin-game-live.png", full_page=True)

        # Bob's seat goes to the random bot, which then answers the proposal itself
        seats.nth(1).get_by_label("Bot for seat 1").select_option("random")
        seats.nth(1).get_by_role("button", name="Hand over").click()
        expect(page.locator("#game-notice")).to_contain_text("Seat 1 is now played by random")
        expect(seats.nth(1)).to_contain_text("now played by random")
        expect(page.locator("#game-events li[data-type=decided]")).to_contain_text("Bob")
        refused = bob.act(game_id, "finish_crafting")
        assert not refused["ok"] and refused["error"]["code"] in ("seat_taken_over", "wrong_phase")

        # the downloads of this game
        with page.expect_download() as download:
            page.get_by_role("link", name="Researcher log (JSONL)").click()
        lines = [json.loads(line) for line in Path(download.value.path()).read_text().splitlines()]
        assert lines[0]["kind"] == "header" and lines[0]["game_id"] == game_id
        assert any(line.get("type") == "proposed" for line in lines)
        with page.expect_download() as download:
            page.get_by_role("link", name="Tables (Parquet, zipped)").click()
        assert download.value.suggested_filename == f"{game_id}-tables-parquet.zip"

        page.get_by_role("button", name="End this game now").click()
        expect(page.locator("#admin-game")).to_have_attribute("data-status", "aborted")
        expect(page.get_by_role("link", name="Open the replay")).to_be_visible()
        page.screenshot(path=artifacts / "admin-game-ended.png", full_page=True)
        refused = ada.act(game_id, "craft", recipe="stick", runs="1/2")
        assert not refused["ok"] and refused["error"]["code"] == "game_over"

        page.goto(server.url + "/admin")
        expect(page.locator(f"#recent-games tr[data-game-id='{game_id}']")).to_contain_text("ended early")
        assert axe_violations(page) == []
        assert errors == []
    finally:
        ada.close()
        bob.close()


def test_the_admin_creates_and_revokes_a_token_that_logs_a_browser_in(
    server: ServerProcess, admin_page: Page, browser: Browser, artifacts: Path
) -> None:
    page = admin_page
    log_in_through_the_form(page, server.url, artifacts)
    page.get_by_role("link", name="API tokens").click()
    expect(page.locator("#admin-tokens[data-ready=true]")).to_be_attached()
    page.get_by_label("Name (who or what will use it)").fill("lab-laptop")
    page.get_by_label("admin (this area and its API)").check()
    page.get_by_role("button", name="Create the token").click()
    plaintext = page.locator("#token-plaintext")
    expect(plaintext).to_contain_text("tc_")
    token = plaintext.inner_text()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#token-copied")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == token
    row = page.locator("#token-list tbody tr", has_text="lab-laptop")
    expect(row).to_contain_text("play, admin")
    page.screenshot(path=artifacts / "admin-token-created.png", full_page=True)

    # another browser logs in with the token ...
    other = browser.new_context().new_page()
    other.goto(server.url + "/admin/login")
    other.get_by_label("an admin API token").check()
    other.get_by_label("Admin API token (tc_…)", exact=True).fill(token)
    other.get_by_role("button", name="Log in").click()
    expect(other).to_have_url(server.url + "/admin")
    expect(other.locator("#admin-home[data-ready=true]")).to_be_attached()

    # ... and loses the admin area as soon as the token is revoked
    row.get_by_role("button", name="Revoke").click()
    expect(row).to_contain_text("revoked")
    expect(other.locator("#admin-home-error")).to_contain_text("Your admin session has ended")
    other.goto(server.url + "/admin/tokens")
    expect(other).to_have_url(server.url + "/admin/login?next=/admin/tokens")
    other.context.close()
    page.reload()
    expect(page.locator("#token-plaintext")).to_be_hidden()  # shown once, never again
    assert token not in page.content()


def test_the_admin_opens_a_study_boots_a_participant_and_pauses_it(
    server: ServerProcess, admin_page: Page, artifacts: Path
) -> None:
    """Participants go through the study core's steps in this process, on the server's own SQLite file (as a
    second worker would); the admin's browser follows and intervenes."""
    store = open_store(load_settings(server.config, environ={}).database_uri)
    try:
        record = save_study(store, load_definition(ROOT / "studies" / "duel_pilot.yaml"))
        definition = record.parsed()
        ids = [
            flow.arrive(store, record, {"PROLIFIC_PID": f"{n:024x}", "SESSION_ID": f"{n + 50:024x}"}).id
            for n in range(4)
        ]
        for participant_id in ids[1:]:
            flow.give_consent(store, definition, participant_id, True)
        flow.advance(store, definition, ids[3])  # instructions -> practice
        flow.advance(store, definition, ids[3])  # practice -> comprehension
        flow.answer_comprehension(store, definition, ids[3], {"target_private": 1, "trade_answer": 1})
        leaver = no_partner_participant(store, record, definition)

        page = admin_page
        log_in_through_the_form(page, server.url, artifacts)
        page.get_by_role("link", name="Studies").click()
        row = page.locator("#study-list tr[data-study-id=duel-pilot]")
        expect(row).to_contain_text("open")
        row.get_by_role("link").click()
        expect(page.locator("#admin-study[data-ready=true]")).to_be_attached()
        funnel = page.locator("#study-funnel svg")
        expect(funnel).to_have_attribute(
            "aria-label", re.compile("arrived 5, consented 4, passed the check 2, waiting now 1")
        )
        waiting = page.locator(f"#study-participants tr[data-participant-id='{ids[3]}']")
        expect(waiting).to_contain_text("waiting room")
        expect(waiting).to_contain_text(f"{3:024x}")  # the recruitment id, for the admin only
        page.screenshot(path=artifacts / "admin-study.png", full_page=True)

        # a message, then the boot: the dropped code, and the funnel moves live
        PROMPT_ANSWERS.append("Are you still there?")
        waiting.get_by_role("button", name="Message").click()
        expect(page.locator("#study-notice")).to_contain_text(f"Message sent to {ids[3]}")
        expect(waiting).to_contain_text("1 message (1 unread)")
        waiting.get_by_role("button", name="Boot").click()
        expect(page.locator("#study-notice")).to_contain_text("was booted (code C4LEFT)")
        expect(waiting).to_contain_text("dropped · C4LEFT")
        expect(funnel).to_have_attribute(
            "aria-label", re.compile("waiting now 0, playing now 0, finished 0, dropped 1")
        )
        assert load_participant(store, "duel-pilot", ids[3]).code == "C4LEFT"  # type: ignore[union-attr]

        page.get_by_role("button", name="Pause (no new arrivals)").click()
        expect(page.locator("#study-status")).to_contain_text("Status: paused")
        assert load_study(store, "duel-pilot").status == "paused"
        page.screenshot(path=artifacts / "admin-study-after-boot.png", full_page=True)
        assert axe_violations(page) == []
        downloads_of_the_study(page, ids, leaver)  # a paused study still exports and pays
    finally:
        store.close()


def test_the_game_page_shows_value_reports_in_words(
    server: ServerProcess, admin_page: Page, artifacts: Path
) -> None:
    host = Client(server.url, "Host").connect()
    try:
        seats = [{"kind": "bot", "bot": "tom1"}, {"kind": "bot", "bot": "random"}]
        game_id = host.call("create_game", {"hall": "tom", "seats": seats})["game"]["game_id"]
        page = admin_page
        log_in_through_the_form(page, server.url, artifacts)
        page.goto(f"{server.url}/admin/games/{game_id}")
        reports = page.locator("#game-reports tr")
        expect(reports.nth(1)).to_be_attached()  # a header row and at least one report
        first = reports.nth(1).locator("td")
        expect(first.nth(2)).to_contain_text(re.compile(r"[A-Z][a-z].* \d"))  # "Iron Ingot 8, ..."
        page.screenshot(path=artifacts / "admin-game-reports.png", full_page=True)
    finally:
        host.close()


def no_partner_participant(store: Store, record: StudyRecord, definition: StudyDefinition) -> str:
    """A participant who left the waiting room with the no-partner code and its bonus (someone to pay)."""
    waiting = flow.arrive(store, record, {"PROLIFIC_PID": f"{9:024x}"})
    flow.give_consent(store, definition, waiting.id, True)
    for _ in range(3):  # instructions, practice, the check
        flow.advance(store, definition, waiting.id)
    assert flow.leave_waiting_room(store, definition, waiting.id).code == "C3ALONE"
    return waiting.id


def downloads_of_the_study(page: Page, ids: list[str], leaver: str) -> None:
    """The study export and a payment batch, downloaded from the study's page (routes of
    server/web/study_admin_exports.py)."""
    probe = page.request.get(page.url.split("/admin/")[0] + "/api/admin/studies/no-such-study/export")
    if probe.status == 404 and (probe.json().get("error") or {}).get("code") != "unknown_study":
        pytest.skip("the study export routes (server/web/study_admin_exports.py) are not on this branch yet")

    with page.expect_download() as download:
        page.get_by_role("link", name="Study export (JSONL)").click()
    rows = [json.loads(line) for line in Path(download.value.path()).read_text().splitlines()]
    participants = {row["participant_id"]: row for row in rows if row.get("table") == "participants"}
    assert set(ids) | {leaver} <= set(participants)
    assert participants[ids[3]]["code"] == "C4LEFT" and participants[leaver]["code"] == "C3ALONE"
    with page.expect_download() as download:
        page.get_by_role("link", name="Study export (CSV tables)").click()
    assert download.value.suggested_filename.endswith(".zip")

    page.get_by_role("button", name="Make a payment batch").click()
    batch = page.locator("#payments-list a").first
    expect(batch).to_contain_text("1 participant, 0.50 GBP")
    with page.expect_download() as download:
        batch.click()
    assert Path(download.value.path()).read_text() == f"{9:024x},0.50\n"
    page.get_by_role("button", name="Make a payment batch").click()  # nobody left to pay: never twice
    expect(page.locator("#study-error")).not_to_be_empty()
    expect(page.locator("#payments-list a")).to_have_count(1)
