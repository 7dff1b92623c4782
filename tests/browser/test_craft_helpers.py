"""The craft helpers of the game room, in Debian's chromium against a live server: a player smelts a
fractional run with a chosen fuel through the recipe book, crafts a shaped recipe on the 3×3 grid (mouse and
keyboard), reads an item's crafting tree with who holds the leaves, and sees a refused craft's error next to
its control with nothing changed; in a whole-runs game no fraction is offered or accepted. axe-core checks
the room with the craft panels open. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import AXE
from e2e_helpers import ServerProcess, write_config
from playwright.sync_api import Browser, Locator, Page, expect

SMELT = "iron_ingot_from_smelting_raw_iron"
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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("craft")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    root = folder / "instances"
    for name, record, runs in (("craftlab", RATIONAL, "rational"), ("craftwhole", WHOLE, "whole")):
        (root / "minecraft" / "1p_v_1p" / f"{name}.json").write_text(json.dumps([record]), encoding="utf-8")
        config["halls"][name] = {
            "title": f"Craft lab ({runs} runs)",
            "ruleset": "minecraft",
            "players": 2,
            "instances": {"choice": "fixed", "root": str(root), "set": name},
            "game": {"max_turns": 2, "first_proposer": 0, "crafting_runs": runs},
        }
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = ServerProcess(config_path).start()
    yield proc
    proc.stop()


def axe_violations(page: Page) -> list[dict[str, Any]]:
    page.evaluate(AXE.read_text(encoding="utf-8"))  # not a script tag: the CSP forbids inline scripts
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["html"][:160] for n in v["nodes"][:3]]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def start_crafting(page: Page, server: ServerProcess, name: str, hall: str) -> None:
    """Log in, create a game of ``hall`` against the random bot, pass the trade: the craft phase."""
    page.goto(server.url + "/")
    page.get_by_role("textbox", name="Display name").fill(name)
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_text(f"You play as {name}")).to_be_visible()  # the page reloaded
    page.get_by_label("Game mode").select_option(hall)
    page.get_by_label("Other seats").select_option("bot:random")
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
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
    expect(page.locator("#craft-target-check")).to_contain_text("still miss 1 Shears")
    # one click from the target to its crafting tree
    page.get_by_role("button", name="How is Shears made?").click()
    expect(page.locator("#craft-info")).to_contain_text("About Shears")
    expect(page.locator("#craft-info .craft-tree").first).to_contain_text("Iron Ingot")

    # the recipe book: a fractional smelting run with coal chosen as the fuel (the default would burn a stick)
    page.get_by_label("Search recipes by item name").fill("iron ingot")
    row = book_row(page, SMELT)
    expect(row).to_contain_text("craftable now")
    expect(row).to_contain_text("furnace")
    row.get_by_label(f"Fuel for {SMELT}").select_option("coal")
    row.get_by_label(f"Runs of {SMELT} (recipe book)").fill("1/2")
    expect(row.locator(".craft-makes")).to_have_text("makes 1/2 Iron Ingot")
    row.get_by_role("button", name="Craft", exact=True).click()
    expect(hand).to_contain_text("3/2 × Iron Ingot")
    expect(hand).to_contain_text("15/16 × Coal")  # 1/2 run burns 1/16 coal
    expect(hand).to_contain_text("2 × Stick")  # the sticks were not burnt
    expect(hand.locator(".rounds-down").filter(has_text="Iron Ingot")).to_contain_text("rounds down to 1")
    page.screenshot(path=artifacts / "craft-recipe-book.png", full_page=True)
    page.locator("#room-craft").screenshot(path=artifacts / "craft-panel.png")
    page.locator("#craft-book").screenshot(path=artifacts / "craft-book-panel.png")

    # refused: 3/2 runs with sticks as fuel need 3 sticks; the error sits by the control, nothing changes
    before = hand.inner_text()
    page.get_by_label("Filter by item name").fill("iron ingot")
    possible = page.locator(f"#craft-possible li[data-recipe='{SMELT}']")
    possible.get_by_label(f"Fuel for {SMELT}").select_option("stick")
    possible.get_by_label(f"Runs of {SMELT}", exact=True).fill("3/2")
    possible.get_by_role("button", name="Craft", exact=True).click()
    error = page.locator("#room-craft-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("You do not have enough")
    expect(error).to_contain_text("1 more Stick")
    expect(error).to_contain_text("at most 1 run of this recipe")  # the limit with sticks as the fuel
    expect(error).to_contain_text("Nothing was crafted")
    assert error.get_attribute("data-code") == "insufficient_items"
    # the error is next to the control that sent the craft
    assert possible.locator("#room-craft-error").count() == 1
    assert hand.inner_text() == before
    page.screenshot(path=artifacts / "craft-refused.png", full_page=True)
    possible.screenshot(path=artifacts / "craft-refused-row.png")
    # the same row with the default fuel: the other half run
    possible.get_by_label(f"Fuel for {SMELT}").select_option("")
    possible.get_by_label(f"Runs of {SMELT}", exact=True).fill("1/2")
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

    # a tablet: the same room at 768 px wide, nothing wider than the screen
    page.set_viewport_size({"width": 768, "height": 1024})
    assert page.evaluate("document.documentElement.scrollWidth") <= 768
    page.screenshot(path=artifacts / "craft-tablet.png", full_page=True)
    assert axe_violations(page) == []

    page.get_by_role("button", name="Finish crafting").click()
    expect(page.locator("#room-craft")).to_be_hidden()
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

    # a typed fraction is refused by the control itself and changes nothing
    before = hand.inner_text()
    page.evaluate("document.querySelector(\"#craft-possible li[data-recipe='torch'] input\").type = 'text'")
    runs.fill("1/4")
    torch.get_by_role("button", name="Craft", exact=True).click()
    error = page.locator("#room-craft-error")
    expect(error).to_contain_text("whole runs only")
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
