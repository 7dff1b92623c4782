"""The researcher's admin dashboard in a real browser (Debian chromium through Playwright) against a live
server: the login form (a wrong password first), live games, one game's page following a move live, a seat
handed to a bot that then really moves, ending the game, its downloads, and API tokens created and revoked.
Screenshots go to tests/artifacts/admin-*.png."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import axe_violations, page_errors
from e2e_helpers import ADMIN_PASSWORD, DUEL_TRADE, Client, ServerProcess
from playwright.sync_api import Browser, Page, expect


@pytest.fixture
def admin_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmations of interventions
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

        log_in_through_the_form(page, server.url, artifacts)
        row = page.locator(f"#live-games tr[data-game-id='{game_id}']")
        expect(row).to_contain_text("running")
        expect(row).to_contain_text("Ada (person)")
        expect(row).to_contain_text("turn 1")
        expect(page.locator("#admin-status-chart svg")).to_have_attribute("aria-label", "Games by state: waiting for players 0, running 1, recently finished 0, recently ended early 0")
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
