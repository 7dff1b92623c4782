"""The value report in Debian's chromium against a live server (static/js/value_report.js): a scale with 0, 5
and 10 and their meanings over every group, the items grouped by the hand that holds them (yours, theirs),
nothing filled in on turn 2 after a report on turn 1, and the compact report (tom_report_items: compact)
asking exactly the items some recipe the table's hands can run would use. Desktop and 390-px phone;
screenshots to tests/artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import (
    assert_fits_width,
    axe_violations,
    lab_halls,
    page_errors,
    start_game_against_random,
    tom_reports,
)
from e2e_helpers import MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, Page, expect

from craft_rules.loader import load_rule_set
from craft_rules.report_items import compact_report_items

# you: logs (planks, sticks, charcoal) and an egg nothing on the table can use; the bot: coal, a diamond
TABLE = {
    "hands": [{"oak_log": 2, "egg": 1}, {"coal": 1, "diamond": 1}],
    "targets": [{"torch": 4}, {"diamond_pickaxe": 1}],
}
#: What the compact report asks about on that table: the egg goes into nothing.
COMPACT_ITEMS = ["coal", "diamond", "oak_log"]
GAME = {"tom_orders": [[0, 1, 2], [0]], "max_turns": 3, "allow_pass": True}


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("valuereport")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    halls = {
        "valuesall": {"record": TABLE, "title": "Values (all items)", "game": GAME},
        "valuescompact": {
            "record": TABLE,
            "title": "Values (compact)",
            "game": {**GAME, "tom_report_items": "compact"},
        },
    }
    lab_halls(config, folder / "instances", halls)
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


def v0_items(page: Page) -> dict[str, list[str]]:
    """The items of the V0 question, per group (yours / theirs / ...)."""
    groups: dict[str, list[str]] = {}
    fieldset = page.locator("#tom-groups fieldset").first
    for section in fieldset.locator(".tom-items").all():
        key = str(section.get_attribute("data-group"))
        groups[key] = [str(s.get_attribute("data-item")) for s in section.locator("input.tom-slider").all()]
    return groups


def send_all(page: Page, value: str) -> None:
    for slider in page.locator("#room-tom input.tom-slider").all():
        slider.fill(value)
    page.get_by_role("button", name="Send my values").click()
    expect(page.locator("#room-tom")).to_be_hidden()


def test_scale_groups_and_no_prefill_on_turn_two(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = page_errors(page)
    start_game_against_random(page, server.url, "Valuer", "valuesall")
    panel = page.locator("#room-tom")
    expect(panel).to_be_visible()
    # the scale: 0, 5, 10 and what they mean, over every group of every question
    scales = panel.locator(".tom-scale")
    assert scales.count() == 6  # V0, V1 and V2, each with your hand and the bot's
    expect(scales.first).to_have_text("0 no use5 some use10 cannot do without")
    first = panel.locator("input.tom-slider").first
    assert first.get_attribute("aria-describedby") == scales.first.get_attribute("id")
    # the items by hand: yours first, then the bot's; every item in the hands asked (all items)
    assert v0_items(page) == {"yours": ["egg", "oak_log"], "theirs": ["coal", "diamond"]}
    expect(panel.locator(".tom-items-title").first).to_have_text("In your hand")
    expect(panel.locator(".tom-items-title").nth(1)).to_contain_text("In the hand of random bot")
    expect(panel.locator(".tom-compact-note")).to_have_count(0)
    page.screenshot(path=str(artifacts / "value-report-desktop.png"), full_page=True)
    assert axe_violations(page) == []

    send_all(page, "7")
    assert tom_reports(server.url, page, 0)[0]["v0"] == dict.fromkeys(
        ["coal", "diamond", "egg", "oak_log"], 7
    )
    # turn 1: pass, finish crafting; turn 2 asks again with nothing filled in from turn 1
    page.get_by_role("button", name="Pass").click()
    page.locator("#craft-finish").click()
    expect(page.locator("#room-status")).to_contain_text("Turn 2")
    expect(panel).to_be_visible()
    sliders = panel.locator("input.tom-slider")
    assert sliders.count() > 0
    for index in range(sliders.count()):
        expect(sliders.nth(index)).to_have_class("tom-slider unset")
        assert sliders.nth(index).get_attribute("aria-valuetext") == "not set"
    for output in panel.locator("output.tom-value").all():
        expect(output).to_have_text("not set")
    assert errors == []
    context.close()


def test_compact_report_asks_exactly_the_usable_items(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    assert (
        compact_report_items(load_rule_set("minecraft"), ["coal", "diamond", "egg", "oak_log"])
        == COMPACT_ITEMS
    )
    for tag, viewport in (
        ("desktop", {"width": 1280, "height": 900}),
        ("phone", {"width": 390, "height": 844}),
    ):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        errors = page_errors(page)
        start_game_against_random(page, server.url, f"Compact{tag}", "valuescompact")
        panel = page.locator("#room-tom")
        expect(panel).to_be_visible()
        asked = sorted({str(s.get_attribute("data-item")) for s in panel.locator("input.tom-slider").all()})
        assert asked == COMPACT_ITEMS
        assert v0_items(page) == {"yours": ["oak_log"], "theirs": ["coal", "diamond"]}
        expect(panel.locator(".tom-compact-note")).to_contain_text("(3 of 4)")
        assert_fits_width(page)
        panel.screenshot(path=str(artifacts / f"value-report-compact-{tag}.png"))
        send_all(page, "4")
        assert set(tom_reports(server.url, page, 0)[0]["v0"]) == set(COMPACT_ITEMS)
        assert errors == []
        context.close()
