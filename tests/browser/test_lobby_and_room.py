"""Two people play a whole duel in two browsers: log in and create a game in the lobby, join from the
games table, propose and accept a trade (with markup in the message), craft a fractional run through the
possible-crafts list, see a refused craft's error next to its control, finish, and read the end screen.
axe-core checks the lobby and the game room. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import re
from typing import Any

from conftest import assert_fits_width, axe_violations, log_in, tom_reports
from e2e_helpers import ServerProcess
from playwright.sync_api import Browser, Page, expect

HOSTILE = "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"


def craft(page: Page, recipe: str, runs: str) -> None:
    """Type a run amount into a possible craft's field and press its Craft button."""
    field = page.get_by_label(f"Runs of {recipe.replace('_', ' ')}", exact=True)  # names have no underscores
    field.fill(runs)
    field.locator("xpath=..").get_by_role("button", name="Craft").click()


def test_two_people_play_a_duel_in_the_browser(
    server: ServerProcess, browser: Browser, artifacts: Any
) -> None:
    ada_context = browser.new_context(viewport={"width": 1280, "height": 800})
    bob_context = browser.new_context(viewport={"width": 768, "height": 1000})  # a tablet
    ada, bob = ada_context.new_page(), bob_context.new_page()
    errors: list[str] = []
    for page in (ada, bob):
        page.on("pageerror", lambda err: errors.append(str(err)))

    log_in(ada, server.url, "Ada")
    assert axe_violations(ada) == []
    ada.screenshot(path=artifacts / "lobby.png", full_page=True)
    ada.get_by_label("Game mode").select_option("duel")
    ada.get_by_label("Seat 2").select_option("open")
    ada.get_by_role("button", name="Create and join").click()
    expect(ada.locator("#room[data-ready=true]")).to_be_attached()
    expect(ada.locator("#room-status")).to_contain_text("Waiting for the other players")
    expect(ada.locator("#room-lobby")).to_contain_text("still open: seat 2")  # and how others join
    ada.screenshot(path=artifacts / "room-waiting.png", full_page=True)
    game_id = ada.url.rstrip("/").rsplit("/", 1)[1]

    log_in(bob, server.url, HOSTILE[:40])  # a display name with markup: shown as text everywhere
    bob.get_by_role("row").filter(has_text=game_id).get_by_role("link", name="Join").click()
    expect(bob.locator("#room[data-ready=true]")).to_be_attached()

    expect(ada.locator("#room-lobby")).to_be_hidden()  # the game started when Bob sat down
    # Ada proposes: her iron ingot for Bob's coal, with markup in the message
    expect(ada.locator("#room-propose")).to_be_visible()
    expect(ada.locator("#room-target")).to_contain_text("Torch")
    ada.get_by_role("button", name="Give 1 × Iron Ingot").click()
    ada.get_by_role("button", name="Ask for 1 × Coal").click()
    ada.get_by_label("Message (optional)").fill(HOSTILE)
    assert axe_violations(ada) == []
    ada.screenshot(path=artifacts / "room-propose.png", full_page=True)
    ada.get_by_role("button", name="Propose").click()

    # Bob sees the proposal as text and accepts; Ada's page shows the trade
    expect(bob.locator("#room-decide")).to_be_visible()
    expect(bob.locator("#room-decide-text")).to_contain_text(HOSTILE)
    expect(ada.locator("#room-waiting-text")).to_contain_text("Waiting for")  # the proposer's side
    bob.get_by_label("Reply (optional, sent with your answer)").fill(HOSTILE)  # markup in a reply
    bob.screenshot(path=artifacts / "room-decide-tablet.png", full_page=True)
    assert_fits_width(bob)
    bob.get_by_role("button", name="Accept").click()
    expect(ada.locator("#room-timeline")).to_contain_text("traded")
    # the outcome for both, the reply shown as text
    expect(ada.locator("#room-outcome")).to_contain_text("accepted your proposal")
    expect(ada.locator("#room-outcome")).to_contain_text(HOSTILE)
    expect(bob.locator("#room-outcome")).to_contain_text("You accepted")

    # craft phase: a refused craft shows the server's words and changes nothing; then real crafts
    expect(ada.locator("#room-craft")).to_be_visible()
    craft(ada, "stick", "lots")
    expect(ada.locator("#room-craft-error")).to_contain_text(re.compile("run", re.IGNORECASE))
    expect(ada.locator("#craft-hand")).to_contain_text("2 × Oak Planks")
    craft(ada, "stick", "1/2")
    expect(ada.locator("#craft-hand")).to_contain_text("2 × Stick")
    # a reload mid-craft restores the private crafting hand (the seat's join answers with it)
    ada.reload()
    expect(ada.locator("#room[data-ready=true]")).to_be_attached()
    expect(ada.locator("#craft-hand")).to_contain_text("2 × Stick")
    expect(ada.locator("#craft-hand")).to_contain_text("1 × Oak Planks")
    craft(ada, "torch", "1/4")
    expect(ada.locator("#craft-hand")).to_contain_text("1 × Torch")
    expect(ada.locator("#craft-hand")).to_contain_text("rounds away")  # 3/4 coal is lost at the end
    assert axe_violations(ada) == []
    ada.screenshot(path=artifacts / "room-craft.png", full_page=True)
    craft(bob, "shears", "1")
    expect(bob.locator("#craft-hand")).to_contain_text("1 × Shears")
    bob.get_by_role("button", name="Finish crafting").click()
    ada.get_by_role("button", name="Finish crafting").click()

    # the end screen: both won, every target revealed, a link to the replay
    for page in (ada, bob):
        expect(page.locator("#room-end")).to_be_visible()
        expect(page.locator("#room-end-text")).to_contain_text("Won by")
        expect(page.locator("#room-end-text")).to_contain_text("Shears")
    expect(ada.locator("#room-end-text")).to_contain_text("Your score: 1")
    ada.screenshot(path=artifacts / "room-end.png", full_page=True)
    for page in (ada, bob):
        assert page.evaluate("window.__pwned") is None
    assert errors == []
    ada.get_by_role("link", name="Replay the game step by step").click()
    expect(ada.locator("#replay[data-ready=true]")).to_be_attached()
    ada_context.close()
    bob_context.close()


def test_tom_panel_sends_a_report_the_researcher_export_holds(
    server: ServerProcess, browser: Browser, artifacts: Any
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, server.url, "Reporter")
    page.get_by_label("Game mode").select_option("tom")
    page.get_by_label("Seat 2").select_option("bot:random")
    page.get_by_role("button", name="Create and join").click()
    panel = page.locator("#room-tom")
    expect(panel).to_be_visible()
    sliders = panel.locator("input[type=range]")
    count = sliders.count()
    items = len(
        set(page.locator("#room-tom input[data-order=v0]").evaluate_all("s => s.map(x => x.dataset.item)"))
    )
    assert count == 3 * items > 0  # v0, v1 and v2 over the same items, one opponent
    # nothing is pre-filled: sending at once is refused in the page
    page.get_by_role("button", name="Send my values").click()
    expect(page.locator("#room-tom-error")).to_contain_text(f"{count} still not set")
    page.screenshot(path=artifacts / "room-tom-unset.png", full_page=True)
    assert axe_violations(page) == []
    chosen: dict[str, int] = {}
    for index in range(count):
        slider = sliders.nth(index)
        value = (index * 3) % 11
        slider.fill(str(value))
        if slider.get_attribute("data-order") == "v0":
            chosen[str(slider.get_attribute("data-item"))] = value
    page.screenshot(path=artifacts / "room-tom.png", full_page=True)
    page.get_by_role("button", name="Send my values").click()
    expect(panel).to_be_hidden()
    reports = tom_reports(server.url, page, 0)
    assert reports and reports[0]["v0"] == chosen and set(reports[0]["v1"]) == {"1"}
    context.close()
