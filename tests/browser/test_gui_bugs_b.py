"""Issue 20 bugs (c) and (e), in Debian's chromium against a live server: the crafting tree of a hay block
shows it made from the wheat in the player's hand (not "raw material: trade for it") and a smelting step
names its fuel; the lobby fits a 390×844 phone and a 768-px window, and a game is created from it on the
phone. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import (
    assert_fits_width,
    axe_violations,
    lab_halls,
    log_in,
    page_errors,
    start_game_against_random,
)
from e2e_helpers import MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, expect

# seat 0 wants a hay block and holds the 9 wheat it is made of, raw iron and coal to smelt
HAY = {
    "hands": [{"wheat": 9, "raw_iron": 1, "coal": 1}, {"cobblestone": 3}],
    "targets": [{"hay_block": 1}, {"stone_pickaxe": 1}],
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("guibugs")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    hay = {
        "record": HAY,
        # a long title: its option made the game-mode select, and so the lobby, wider than a phone
        "title": "Hay lab: a practice table where the hay bale is made from the wheat in your own hand",
    }
    lab_halls(config, folder / "instances", {"haylab": hay})
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


def test_tree_makes_hay_from_the_wheat_in_hand(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = page_errors(page)
    start_game_against_random(page, server.url, "Farmer", "haylab")
    page.get_by_role("button", name="Pass").click()
    page.get_by_role("button", name="How is Hay Bale made?").click()
    info = page.locator("#craft-info")
    expect(info).to_contain_text("About Hay Bale")
    tree = info.locator(".craft-tree").first
    expect(tree).to_contain_text("Made by 1 run of hay block")
    expect(tree).to_contain_text("9 × Wheat")
    expect(tree).to_contain_text("the hands hold enough")
    expect(tree).not_to_contain_text("raw material")
    page.locator("#craft-book").screenshot(path=artifacts / "guibugs-tree-hay.png")

    # a smelting step names its fuel: an iron ingot from the raw iron burns 1/8 coal, which the hand holds
    page.get_by_label("Search recipes by item name").fill("iron ingot")
    page.locator("#craft-results li[data-recipe='iron_ingot_from_smelting_raw_iron']").get_by_role(
        "button", name=re.compile("Iron Ingot.*about this item")
    ).click()
    expect(page.locator("#craft-info-title")).to_have_text("About Iron Ingot")
    fuel = info.locator(".craft-tree-fuel").first
    expect(fuel).to_contain_text("1/8 × Coal")
    expect(fuel).to_contain_text("Fuel:")
    expect(fuel).to_contain_text("the hands hold enough")
    assert axe_violations(page) == []
    page.locator("#craft-book").screenshot(path=artifacts / "guibugs-tree-fuel.png")
    assert errors == []
    context.close()


@pytest.mark.parametrize("size", [(390, 844), (768, 1024)])
def test_lobby_fits_a_phone_and_a_tablet(
    server: ServerProcess, browser: Browser, artifacts: Path, size: tuple[int, int]
) -> None:
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors = page_errors(page)
    log_in(page, server.url, f"Pocket{width}")
    assert_fits_width(page)
    page.get_by_label("Game mode").select_option("haylab")
    seat2 = page.get_by_label("Seat 2")
    seat2.select_option("bot:random")
    # every control of the form lies inside the window
    for control in page.locator("#create-form select, #create-form button").all():
        box = control.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, control
    assert_fits_width(page)
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / f"guibugs-lobby-{width}.png", full_page=True)
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    assert errors == []
    context.close()
