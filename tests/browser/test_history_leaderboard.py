"""A player keeps their name, plays a game against a bot, and finds it in their history and on the
leaderboard; the kept name then refuses a login without its password. In Debian's chromium against a live
server, at desktop width and on a 390-px phone (screenshots: tests/artifacts/ratings-*.png)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import assert_fits_width, axe_violations, log_in, page_errors, play_to_the_end
from e2e_helpers import MakeServer, ServerProcess
from playwright.sync_api import Browser, expect

PASSWORD = "a long enough secret"
PHONE = {"width": 390, "height": 844}
PAGES = (("/history", "history"), ("/leaderboard", "leaderboard"), ("/", "lobby-keep-name"))


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(overrides={"ratings": {"min_games": 1}})


def test_keep_a_name_play_and_see_history_and_leaderboard(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = page_errors(page)

    # keep the name with a password, from the lobby's Signed-in panel
    log_in(page, server.url, "Mira")
    page.get_by_text("Keep this name").click()
    page.get_by_label("New password").fill(PASSWORD)
    page.get_by_role("button", name="Keep with this password").click()
    expect(page.locator("#keep-status")).to_contain_text("Your name is kept")
    expect(page.locator("#keep-state")).to_have_text("(kept with a password)")
    expect(page.get_by_role("button", name="Change the password")).to_be_visible()
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / "ratings-lobby-keep-name.png", full_page=True)

    # a game against the random bot, played to its end
    page.get_by_label("Game mode").select_option("duel")
    page.get_by_label("Seat 2").select_option("bot:random")
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]
    play_to_the_end(page)

    # the history: the game, its opponent, its result, a replay link
    nav = page.get_by_role("navigation", name="Main")
    nav.get_by_role("link", name="History").click()
    entry = page.locator(f".history-entry[data-game-id='{game_id}']")
    expect(entry).to_be_visible()
    expect(entry).to_contain_text("random bot")
    expect(entry.locator(".result")).to_have_text(["Draw"])  # the scripted deal is not won by passing
    expect(page.locator("#my-rating")).to_be_visible()
    entry.get_by_role("link", name="Replay of this game").click()
    expect(page).to_have_url(re.compile(re.escape(f"{server.url}/games/{game_id}/replay")))
    page.go_back()
    assert axe_violations(page) == []
    assert_fits_width(page)
    page.screenshot(path=artifacts / "ratings-history-desktop.png", full_page=True)

    # the leaderboard: the player and the bot, each with a rating, a range and one game
    nav.get_by_role("link", name="Leaderboard").click()
    rows = page.locator("#leaderboard tbody tr")
    expect(rows).to_have_count(2)
    mira = rows.filter(has_text="Mira")
    expect(mira.locator(".games-count")).to_have_text("1")
    expect(mira.locator(".badge")).to_have_text("person")
    expect(rows.filter(has_text="random bot").locator(".badge")).to_have_text("bot")
    assert axe_violations(page) == []
    assert_fits_width(page)
    page.screenshot(path=artifacts / "ratings-leaderboard-desktop.png", full_page=True)

    # on a phone and a 768-px tablet: both pages and the lobby's keep-name panel fit the screen, and the
    # panel opens from the keyboard
    small = context.new_page()
    for size, label in ((PHONE, "phone"), ({"width": 768, "height": 1024}, "tablet")):
        small.set_viewport_size(size)
        for path, name in PAGES:
            small.goto(server.url + path)
            if path == "/":
                small.locator("#keep-name summary").focus()
                small.keyboard.press("Enter")
                expect(small.get_by_label("New password")).to_be_visible()
            expect(small.locator("main h1")).to_be_visible()
            assert_fits_width(small)
            small.screenshot(path=artifacts / f"ratings-{name}-{label}.png", full_page=True)

    # another browser: the kept name refuses a plain login, and takes the password
    other = browser.new_context(viewport=PHONE).new_page()
    other.goto(server.url + "/")
    other.get_by_role("textbox", name="Display name").fill("mira")
    other.get_by_role("button", name="Continue").click()
    expect(other.locator("#login-error")).to_contain_text("is kept by the player who chose it")
    other.screenshot(path=artifacts / "ratings-login-kept-phone.png", full_page=True)
    other.get_by_label("Password or login token").fill(PASSWORD)
    other.get_by_role("button", name="Continue").click()
    expect(other.get_by_text("You play as Mira")).to_be_visible()
    other.goto(server.url + "/history")
    expect(other.locator(f".history-entry[data-game-id='{game_id}']")).to_be_visible()  # the same player
    assert errors == []
    context.close()
