"""The unreachable-target notice in Debian's chromium against a live server: a player who crafts away the
table's only fuel is told, once the hands are revealed, that no combination of the hands can make the
target any more; the notice was not there before, is not on the spectator page, fits a phone and a
768-px window and passes axe. Screenshots go to tests/artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import assert_fits_width, axe_violations, lab_halls, page_errors, start_game_against_random
from e2e_helpers import MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, expect

# Seat 0 needs shears: two iron ingots, so two smelts and fuel. The table's only fuel is seat 0's coal
# and stick; crafting them into torches leaves two raw iron that nothing on the table can smelt.
FUEL = {
    "hands": [{"raw_iron": 1, "coal": 1, "stick": 1}, {"raw_iron": 1, "cobblestone": 3}],
    "targets": [{"shears": 1}, {"stone_pickaxe": 1}],
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("unreachable")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    hall = {"record": FUEL, "title": "Fuel lab", "game": {"max_turns": 3}}
    lab_halls(config, folder / "instances", {"fuellab": hall})
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


def test_a_player_who_burns_the_fuel_is_told_the_target_is_out_of_reach(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = page_errors(page)
    start_game_against_random(page, server.url, "Stoker", "fuellab")
    notice = page.locator("#room-target-notice")
    page.get_by_role("button", name="Pass").click()
    expect(page.locator("#room-craft")).to_be_visible()
    assert notice.count() == 0  # the table can still make shears

    torch = page.locator("#craft-possible li[data-recipe='torch']")
    torch.get_by_role("button", name="Craft", exact=True).click()
    expect(page.locator("#craft-hand")).to_contain_text("Torch")
    assert notice.count() == 0  # private crafting changes no public hand: nothing is known yet
    page.get_by_role("button", name="Finish crafting").click()

    # the bot finishes too, the hands are revealed: the next turn starts with the notice
    expect(notice).to_be_visible()
    expect(notice.get_by_role("heading", name="Your target is out of reach")).to_be_visible()
    expect(notice).to_contain_text("1 Shears")
    expect(notice).to_contain_text("You cannot win this game")
    assert notice.get_attribute("role") == "alert"
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / "unreachable-notice.png", full_page=True)

    # an onlooker of the same game sees no notice (its view carries no reachability at all)
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]
    watcher = browser.new_context().new_page()
    watcher.goto(f"{server.url}/games/{game_id}/watch")
    expect(watcher.get_by_role("heading", name="Stoker (person)")).to_be_visible()
    assert watcher.locator("#room-target-notice").count() == 0
    watcher.context.close()

    for width, height in ((390, 844), (768, 1024)):
        page.set_viewport_size({"width": width, "height": height})
        expect(notice).to_be_visible()
        assert_fits_width(page)
        box = notice.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        page.screenshot(path=artifacts / f"unreachable-notice-{width}.png", full_page=True)
    assert errors == []
    context.close()
