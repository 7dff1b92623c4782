"""The craft helpers of the game room, in Debian's chromium against a live server: a player smelts a
fractional run with a chosen fuel through the recipe book, crafts a shaped recipe on the 3×3 grid (mouse and
keyboard), reads an item's crafting tree with who holds the leaves, and sees a refused craft's error next to
its control with nothing changed; in a whole-runs game no fraction is offered or accepted. axe-core checks
the room with the craft panels open. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml
from conftest import (
    DOCS,
    DOCS_SCREENSHOTS,
    axe_violations,
    check_icon_gallery,
    lab_halls,
    start_game_against_random,
)
from e2e_helpers import Client, MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, Locator, Page, Route, expect

SMELT = "iron_ingot_from_smelting_raw_iron"
SMELT_SAID = "iron ingot from smelting raw iron"  # how the controls' names say it (no underscores)
# seat 0 needs shears (two iron ingots on the grid): one ingot in hand, two raw iron to smelt, coal and
# sticks as fuel; seat 1 (a bot) holds cobblestone, which the crafting tree of a stone pickaxe points to.
RATIONAL = {
    "hands": [
        {"raw_iron": 2, "coal": 1, "iron_ingot": 1, "oak_planks": 3, "birch_planks": 1, "stick": 2},
        {"cobblestone": 3},
    ],
    "targets": [{"shears": 1}, {"stone_pickaxe": 1}],
}
# whole runs: one plank is half a run of sticks, so sticks are not offered; a torch is one whole run
WHOLE = {
    "hands": [{"oak_planks": 1, "coal": 1, "stick": 1}, {"cobblestone": 2}],
    "targets": [{"torch": 1}, {"stone_button": 1}],
}

# alchemy: elements combine in any arrangement (life + water = algae)
ALCHEMY = {"hands": [{"life": 1, "water": 1, "fire": 1}, {"earth": 2}], "targets": [{"algae": 1}, {"mud": 1}]}


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("craft")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    halls = {
        name: {"record": record, "title": f"Craft lab ({runs} runs)", "game": {"crafting_runs": runs}}
        for name, record, runs in (("craftlab", RATIONAL, "rational"), ("craftwhole", WHOLE, "whole"))
    }
    halls["craftalchemy"] = {"record": ALCHEMY, "title": "Craft lab (alchemy)", "ruleset": "alchemy"}
    lab_halls(config, folder / "instances", halls)
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


def start_crafting(page: Page, server: ServerProcess, name: str, hall: str) -> None:
    """Log in, create a game of ``hall`` against the random bot, pass the trade: the craft phase."""
    start_game_against_random(page, server.url, name, hall)
    page.get_by_role("button", name="Pass").click()
    expect(page.locator("#room-craft")).to_be_visible()


def book_row(page: Page, recipe: str) -> Locator:
    return page.locator(f"#craft-results li[data-recipe='{recipe}']")


def test_rational_game_recipe_book_smelting_with_fuel_grid_and_tree(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    start_crafting(page, server, "Smith", "craftlab")
    hand = page.locator("#craft-hand")
    expect(page.locator("#craft-rules-note")).to_contain_text("parts of a run")
    page.screenshot(path=artifacts / "craft-first-screen.png")  # what a player sees first at 1280x800
    expect(page.locator("#craft-target-check")).to_contain_text("still miss 1 Shears")
    # one click from the target to its crafting tree
    page.get_by_role("button", name="How is Shears made?").click()
    expect(page.locator("#craft-info")).to_contain_text("About Shears")
    expect(page.locator("#craft-info .craft-tree").first).to_contain_text("Iron Ingot")
    # from the tree to an ingredient's info, and from what that is used to make back to the shears
    page.locator("#craft-info .craft-tree").get_by_role("button", name=re.compile("Iron Ingot.*show")).click()
    expect(page.locator("#craft-info-title")).to_have_text("About Iron Ingot")
    expect(page.locator("#craft-info-title")).to_be_focused()
    page.locator("#craft-info .craft-makes-list").get_by_role("button", name="Shears").click()
    expect(page.locator("#craft-info-title")).to_have_text("About Shears")

    # the recipe book: a fractional smelting run with coal chosen as the fuel (the default would burn a stick)
    page.get_by_label("Search recipes by item name").fill("iron ingot")
    row = book_row(page, SMELT)
    expect(row).to_contain_text("craftable now")
    expect(row).to_contain_text("furnace")
    row.get_by_label(f"Fuel for {SMELT_SAID}").select_option("coal")
    row.get_by_label(f"Runs of {SMELT_SAID} (recipe book)").fill("1/2")
    expect(row.locator(".craft-makes")).to_have_text("makes 1/2 Iron Ingot")
    row.get_by_role("button", name="Craft", exact=True).click()
    expect(hand).to_contain_text("3/2 × Iron Ingot")
    expect(hand).to_contain_text("15/16 × Coal")  # 1/2 run burns 1/16 coal
    expect(page.locator("#craft-status")).to_have_text(
        "Crafted 1/2 Iron Ingot, using 1/16 Coal and 1/2 Raw Iron."
    )
    expect(hand).to_contain_text("2 × Stick")  # the sticks were not burnt
    expect(hand.locator(".rounds-down").filter(has_text="Iron Ingot")).to_contain_text("rounds down to 1")
    page.screenshot(path=artifacts / "craft-recipe-book.png", full_page=True)
    page.locator("#room-craft").screenshot(path=artifacts / "craft-panel.png")
    page.locator("#craft-book").screenshot(path=artifacts / "craft-book-panel.png")

    # refused: 3/2 runs with sticks as fuel need 3 sticks; the error sits by the control, nothing changes
    before = hand.inner_text()
    page.get_by_label("Filter by item name").fill("iron ingot")
    possible = page.locator(f"#craft-possible li[data-recipe='{SMELT}']")
    possible.get_by_label(f"Fuel for {SMELT_SAID}").select_option("stick")
    possible.get_by_label(f"Runs of {SMELT_SAID}", exact=True).fill("3/2")
    possible.get_by_role("button", name="Craft", exact=True).click()
    error = page.locator("#room-craft-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("You do not have enough")
    expect(error).to_contain_text("1 more Stick to burn as fuel")
    expect(error).to_contain_text("at most 1 run of this recipe")  # the limit with sticks as the fuel
    expect(error).to_contain_text("Nothing was crafted")
    assert error.get_attribute("data-code") == "insufficient_items"
    # the error is next to the control that sent the craft
    assert possible.locator("#room-craft-error").count() == 1
    assert hand.inner_text() == before
    page.screenshot(path=artifacts / "craft-refused.png", full_page=True)
    possible.screenshot(path=artifacts / "craft-refused-row.png")
    # the same row with the default fuel: the other half run
    possible.get_by_label(f"Fuel for {SMELT_SAID}").select_option("")
    possible.get_by_label(f"Runs of {SMELT_SAID}", exact=True).fill("1/2")
    possible.get_by_role("button", name="Craft", exact=True).click()
    expect(hand).to_contain_text("2 × Iron Ingot")
    expect(error).to_be_hidden()

    # the grid: shears are shaped (two ingots on a diagonal); one by mouse, one by keyboard
    page.get_by_role("button", name="Pick Iron Ingot").click()
    page.get_by_role("button", name="Square row 1, column 2: empty").click()
    expect(page.locator("#craft-grid-result")).to_contain_text("9 × Iron Nugget")  # one ingot alone: nuggets
    page.get_by_role("button", name="Square row 1, column 2: Iron Ingot").press("ArrowDown")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    result = page.locator("#craft-grid-result")
    expect(result).to_contain_text("Makes")
    expect(result).to_contain_text("1 × Shears")
    expect(result).to_contain_text("up to 1 run")
    page.screenshot(path=artifacts / "craft-grid.png", full_page=True)
    page.locator(".craft-columns").screenshot(path=artifacts / "craft-grid-closeup.png")
    if DOCS_SCREENSHOTS:  # the README's picture of crafting: the hand's preview and the grid at 1280 px
        page.locator(".craft-columns").screenshot(path=DOCS / "screenshot-craft.png")
    # a reload mid-craft restores the crafting hand and the grid's placement
    page.reload()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    expect(hand).to_contain_text("2 × Iron Ingot")
    expect(page.get_by_role("button", name="Square row 2, column 1: Iron Ingot")).to_be_visible()
    expect(result).to_contain_text("1 × Shears")
    page.get_by_label("Runs of the grid's recipe").fill("1")
    result.get_by_role("button", name="Craft", exact=True).click()
    expect(hand).to_contain_text("1 × Shears")
    expect(page.locator("#craft-target-check")).to_contain_text("you hold your whole target")

    # the item-info panel: a stone pickaxe's tree points at the bot's public cobblestone
    page.get_by_label("Search recipes by item name").fill("stone pickaxe")
    book_row(page, "stone_pickaxe").get_by_role(
        "button", name=re.compile("Stone Pickaxe.*about this item")
    ).click()
    info = page.locator("#craft-info")
    expect(info).to_be_visible()
    expect(info).to_contain_text("How it is made")
    expect(info).to_contain_text("Crafting tree")
    expect(info.locator(".craft-tree").first).to_contain_text("Cobblestone")
    expect(info.locator(".craft-tree").first).to_contain_text("held by random bot")
    expect(info.locator(".craft-mini-grid").first).to_be_visible()
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / "craft-item-info.png", full_page=True)
    page.locator("#craft-book").screenshot(path=artifacts / "craft-item-info-panel.png")

    # an item choice: sticks from oak planks (the default takes the alphabetically first: birch)
    page.get_by_label("Filter by item name").fill("stick")
    sticks = page.locator("#craft-possible li[data-recipe='stick']")
    sticks.get_by_label("Which planks to use for stick").select_option("oak_planks")
    sticks.get_by_label("Runs of stick", exact=True).fill("1/2")
    sticks.get_by_role("button", name="Craft", exact=True).click()
    expect(hand).to_contain_text("3 × Stick")
    expect(hand).to_contain_text("1 × Birch Planks")
    expect(hand).to_contain_text("2 × Oak Planks")

    # what a screen reader says for the craft controls: words, never an id with underscores
    spoken = page.evaluate(
        """() => [...document.querySelectorAll('#room-craft, #craft-book')].flatMap(panel => [
            ...[...panel.querySelectorAll('[aria-label]')].map(e => e.getAttribute('aria-label')),
            ...[...panel.querySelectorAll('.visually-hidden')].map(e => e.textContent),
        ])"""
    )
    assert len(spoken) > 20 and [name for name in spoken if "_" in name] == []
    # a tablet: the same room at 768 px wide, nothing wider than the screen
    page.set_viewport_size({"width": 768, "height": 1024})
    assert page.evaluate("document.documentElement.scrollWidth") <= 768
    page.screenshot(path=artifacts / "craft-tablet.png", full_page=True)
    assert axe_violations(page) == []

    page.get_by_role("button", name="Finish crafting").click()
    expect(page.locator("#room-craft")).to_be_hidden()
    # the game ends with this craft phase: the shears made on the grid win it
    expect(page.locator("#room-end")).to_be_visible()
    expect(page.locator("#room-end-text")).to_contain_text("Won by you.")
    expect(page.locator("#room-end-text")).to_contain_text("Your score:")
    expect(page.locator("#room-end-targets .badge-win")).to_have_count(1)  # the bot did not win
    expect(page.locator("#room-end-targets")).to_contain_text("Stone Pickaxe")  # the bot's target, revealed
    page.screenshot(path=artifacts / "craft-won.png", full_page=True)
    assert errors == []
    context.close()


def test_whole_runs_game_neither_offers_nor_accepts_fractions(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    start_crafting(page, server, "Whole", "craftwhole")
    hand = page.locator("#craft-hand")
    expect(page.locator("#craft-rules-note")).to_contain_text("whole runs only")
    possible = page.locator("#craft-possible")
    torch = possible.locator("li[data-recipe='torch']")
    expect(torch).to_contain_text("up to 1 run")
    # one plank is only half a run of sticks: not offered; no offered amount is a fraction
    assert possible.locator("li[data-recipe='stick']").count() == 0
    assert "/" not in possible.inner_text()
    runs = torch.get_by_label("Runs of torch", exact=True)
    assert runs.get_attribute("type") == "number" and runs.get_attribute("step") == "1"
    assert runs.input_value() == "1"
    # the book marks sticks as not craftable from this hand and offers no control for them
    page.get_by_label("Search recipes by item name").fill("stick")
    stick = book_row(page, "stick")
    expect(stick).to_contain_text("not craftable from your hand")
    expect(stick).to_contain_text("you hold 1 of 2")
    assert stick.locator("input").count() == 0

    # a typed fraction is refused by the control itself and changes nothing (a number field takes no "/")
    before = hand.inner_text()
    runs.fill("0.5")  # what a number field lets one type: refused by the control, never sent
    torch.get_by_role("button", name="Craft", exact=True).click()
    error = page.locator("#room-craft-error")
    expect(error).to_contain_text("whole runs only")
    assert error.get_attribute("data-code") == "refused_by_the_control"  # not sent to the server
    assert torch.locator("#room-craft-error").count() == 1
    assert hand.inner_text() == before
    page.screenshot(path=artifacts / "craft-whole-refused.png", full_page=True)
    runs.fill("1")
    torch.get_by_role("button", name="Craft", exact=True).click()
    expect(hand).to_contain_text("4 × Torch")
    expect(page.locator("#craft-target-check")).to_contain_text("you hold your whole target")
    assert axe_violations(page) == []
    assert errors == []
    context.close()


def test_alchemy_combines_on_the_grid_by_keyboard_alone(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    start_crafting(page, server, "Alchemist", "craftalchemy")
    hand = page.locator("#craft-hand")
    for element, square in (
        ("Life", "Square row 2, column 2: empty"),
        ("Water", "Square row 3, column 3: empty"),
    ):
        page.get_by_role("button", name=f"Pick {element}").focus()
        page.keyboard.press("Enter")
        page.get_by_role("button", name=square).focus()
        page.keyboard.press("Enter")
    result = page.locator("#craft-grid-result")
    expect(result).to_contain_text("1 × Algae")
    expect(result).to_contain_text("combine")
    page.keyboard.press("Tab")  # from the grid to its result's controls: the run amount, then max, then Craft
    runs = page.get_by_label("Runs of the grid's recipe")
    runs.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("1")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(hand).to_contain_text("1 × Algae")
    # the hand cannot run the recipe again, so its Craft button is gone: the focus goes to the grid's heading
    expect(page.locator("#craft-grid-title")).to_be_focused()
    expect(page.locator("#craft-target-check")).to_contain_text("you hold your whole target")
    expect(result).to_contain_text("lacks some of these items")  # life and water are used up
    # Delete empties a square from the keyboard
    page.get_by_role("button", name="Square row 2, column 2: Life").focus()
    page.keyboard.press("Delete")
    expect(page.get_by_role("button", name="Square row 2, column 2: empty")).to_be_focused()
    expect(result).to_contain_text("No recipe has this pattern")  # water alone makes nothing
    page.screenshot(path=artifacts / "craft-alchemy.png", full_page=True)
    assert axe_violations(page) == []
    context.close()


def test_icons_wait_for_their_catalogue(server: ServerProcess, browser: Browser) -> None:
    """The icon catalogue answers late while the game's pushes arrive (this seat's join starts the game):
    no panel keeps a placeholder icon (the recipe book's target button is drawn once per target, so a draw
    before the catalogue came would stay wrong)."""
    ada = Client(server.url, "Ada Early").connect()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        game_id = ada.call("create_game", {"hall": "duel", "join": True})["game"]["game_id"]
        page.goto(server.url + "/")
        page.get_by_role("textbox", name="Display name").fill("Bob Late")
        page.get_by_role("button", name="Continue").click()
        expect(page.get_by_text("You play as Bob Late")).to_be_visible()

        def late_catalogue(route: Route) -> None:
            time.sleep(1.5)  # the join answer, the seats and the game's start arrive meanwhile
            route.continue_()

        page.route("**/api/rulesets/*/items", late_catalogue)
        page.goto(f"{server.url}/games/{game_id}")
        expect(page.locator("#room[data-ready=true]")).to_be_attached()
        target_icon = page.locator("#room-target-items svg.item-icon")
        book_icon = page.locator("#craft-book-target svg.item-icon")
        expect(target_icon).not_to_have_attribute("data-category", "item")  # the duel deals a tool
        expect(book_icon).to_have_attribute("data-category", target_icon.get_attribute("data-category") or "")
        assert book_icon.locator("text").text_content() == target_icon.locator("text").text_content()
    finally:
        context.close()
        ada.close()


def test_every_alchemy_element_gets_an_icon(server: ServerProcess, browser: Browser, artifacts: Path) -> None:
    """The alchemy rule set's gallery, as tests/browser/test_viewer_pages.py checks the minecraft one."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    check_icon_gallery(context.new_page(), server.url, "alchemy", artifacts)
    context.close()
