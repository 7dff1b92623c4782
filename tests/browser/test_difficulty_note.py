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
