"""The lobby shows the measured difficulty (craft_rules/difficulty_calibration.json) beside the band a creator
picks, in Debian's chromium against a live server; it fits a phone. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import assert_fits_width, axe_violations, log_in, page_errors
from e2e_helpers import MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, expect

from craft_rules.difficulty import CALIBRATION_PATH

pytestmark = pytest.mark.skipif(not CALIBRATION_PATH.exists(), reason="no committed calibration")


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("difficulty")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config["halls"]["dealt"] = {
        "title": "Dealt duel",
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "generated"},
        "game": {"max_turns": 10},
    }
    standard = {"ruleset": "minecraft", "players": 2, "instances": {"choice": "random", "set": "standard"}}
    config["halls"]["standard"] = {**standard, "title": "Standard duel", "game": {"max_turns": 10}}
    config["halls"]["short"] = {**standard, "title": "Short standard duel", "game": {"max_turns": 3}}
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)])
def test_the_lobby_shows_what_the_bots_measured_for_each_band(
    server: ServerProcess, browser: Browser, artifacts: Path, size: tuple[int, int]
) -> None:
    calibration = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
    bands = calibration["groups"]["minecraft/2/rational"]["bands"]
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors = page_errors(page)
    log_in(page, server.url, f"Measurer{width}")
    page.get_by_label("Game mode").select_option("dealt")
    note = page.locator("#create-difficulty-measure")
    rates = [f"{band} {round(bands[band]['finish_rate'] * 100)}%" for band in ("easy", "medium", "hard")]
    expect(note).to_have_text(f"Measured: two ToM-1 bots finish {', '.join(rates)} of games.")
    for band in ("easy", "hard"):
        page.get_by_label("Difficulty").select_option(band)
        figures = bands[band]
        expect(note).to_have_text(
            f"Measured: two ToM-1 bots finish {round(figures['finish_rate'] * 100)}% of {band} games, "
            f"after {figures['mean_turns']:.1f} turns on average."
        )
    described = page.get_by_label("Difficulty").get_attribute("aria-describedby") or ""
    assert "create-difficulty-measure" in described.split()
    assert_fits_width(page)
    assert axe_violations(page) == []
    page.locator("#create-form").screenshot(path=artifacts / f"difficulty-note-{width}.png")
    # a fixed-instance hall has no bands to choose and so no figures
    page.get_by_label("Game mode").select_option("duel")
    expect(note).to_be_hidden()
    assert errors == []
    context.close()


def test_a_set_of_shipped_instances_shows_its_own_figures_and_none_under_other_rules(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    """The standard duel set is labelled by its own measured costs (docs/difficulty.md): its medium band is
    offered with those instances' figures; the same set in a 3-turn hall shows the bands without figures
    measured in 10-turn games."""
    halls = {
        h["name"]: h for h in browser.new_context().request.get(server.url + "/api/halls").json()["halls"]
    }
    medium = next(b for b in halls["standard"]["difficulties"] if b["band"] == "medium")["measured"]
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    errors = page_errors(page)
    log_in(page, server.url, "Setter")
    page.get_by_label("Game mode").select_option("standard")
    difficulty = page.get_by_label("Difficulty")
    assert [t.split(" ")[0] for t in difficulty.locator("option").all_inner_texts()] == [
        "Random",
        "Easy",
        "Medium",
        "Hard",
    ]
    difficulty.select_option("medium")
    note = page.locator("#create-difficulty-measure")
    expect(note).to_have_text(
        f"Measured: two ToM-1 bots finish {round(medium['finish_rate'] * 100)}% of medium games, "
        f"after {medium['mean_turns']:.1f} turns on average."
    )
    page.locator("#create-form").screenshot(path=artifacts / "difficulty-note-standard-set.png")
    page.get_by_label("Game mode").select_option("short")
    expect(difficulty).to_be_enabled()
    difficulty.select_option("medium")
    expect(note).to_be_hidden()  # 10-turn figures are not a 3-turn game's
    assert_fits_width(page)
    assert errors == []
    context.close()
