"""After a game against a ToM bot that reports its values (issue 20 item 3), in Debian's chromium against a
live server: the room's end screen and the replay page show the bot's value reports against the true values
as charts, and its reasoning per decision; both fit a 390×844 phone and a 768-px window, are keyboard-usable
and labelled. Screenshots go to tests/artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import assert_fits_width, axe_violations, lab_halls, log_in, page_errors, play_to_the_end
from e2e_helpers import DUEL, MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, Page, expect


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("beliefs")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    hall = {
        "record": DUEL,
        "title": "Duel against a ToM bot that reports its values",
        "game": {"max_turns": 2, "tom_orders": [[], [0, 1, 2]]},
    }
    lab_halls(config, folder / "instances", {"tomlab": hall})
    config["halls"]["tomlab"].update(
        seats=[{"kind": "open"}, {"kind": "bot", "bot": "tom2", "name": "Tomas"}], allow_custom_seats=False
    )
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


def check_beliefs(page: Page, panel_id: str) -> None:
    panel = page.locator(f"#{panel_id}")
    expect(panel.get_by_role("heading", name="What the bots believed")).to_be_visible()
    seat = panel.locator("article.beliefs-seat")
    expect(seat).to_have_count(1)
    expect(seat.get_by_role("heading", name="Tomas (bot tom2)")).to_be_visible()
    # the gap chart: one line per report (V0, V1 about you, V2), over both turns
    gap = seat.locator("svg.beliefs-chart").first
    expect(gap).to_be_visible()
    assert gap.locator("g[data-series]").count() == 3
    assert "V1" in (gap.get_attribute("aria-label") or "")
    expect(seat.get_by_text("What you need (V1)").first).to_be_visible()
    # the item chart: one row per item of the public hands, a dot and a ring for each
    items = seat.locator("svg.beliefs-items g[data-item]")
    hand_items = {item for hand in DUEL["hands"] for item in hand}
    assert {items.nth(i).get_attribute("data-item") for i in range(items.count())} == hand_items
    assert seat.locator("svg.beliefs-items circle.beliefs-truth").count() == len(hand_items)
    # keyboard: pick another report and turn with the labelled selects
    report = seat.get_by_label("Report", exact=True)
    report.focus()
    report.select_option(label="What you need (V1)")
    seat.get_by_label("Turn", exact=True).select_option("1")
    expect(seat.locator("figcaption").nth(1)).to_contain_text("What you need (V1), turn 1")
    # its reasoning, opened from the keyboard
    why = seat.locator("details.beliefs-reasoning summary")
    why.focus()
    page.keyboard.press("Enter")
    expect(seat.locator("details.beliefs-reasoning li").first).to_contain_text("possible offers")


def test_the_end_screen_and_the_replay_show_what_the_bot_believed(
    browser: Browser, server: ServerProcess, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors = page_errors(page)
    try:
        log_in(page, server.url, "Iris")
        page.get_by_label("Game mode").select_option("tomlab")
        page.get_by_role("button", name="Create and join").click()
        expect(page.locator("#room[data-ready=true]")).to_be_attached()
        play_to_the_end(page)
        check_beliefs(page, "room-beliefs")
        page.locator("#room-end").screenshot(path=artifacts / "beliefs-end-screen.png")
        assert axe_violations(page) == []
        for width, height, name in ((390, 844, "phone"), (768, 1000, "tablet")):
            page.set_viewport_size({"width": width, "height": height})
            assert_fits_width(page)
            page.locator("#room-beliefs").screenshot(path=artifacts / f"beliefs-end-{name}.png")

        page.set_viewport_size({"width": 1100, "height": 900})
        page.locator("#room-replay-link").click()
        expect(page.locator("#replay-position")).not_to_be_empty()
        check_beliefs(page, "replay-beliefs")
        page.locator("#replay-beliefs").screenshot(path=artifacts / "beliefs-replay.png")
        assert axe_violations(page) == []
        page.set_viewport_size({"width": 390, "height": 844})
        assert_fits_width(page)
        page.locator("#replay-beliefs").screenshot(path=artifacts / "beliefs-replay-phone.png")
        assert errors == []
        replay_url = page.url
    finally:
        context.close()
    # a spectator (nobody logged in) sees the same charts, and a sentence instead of the reasoning
    stranger = browser.new_context(viewport={"width": 390, "height": 844})
    page = stranger.new_page()
    try:
        page.goto(replay_url.split("?")[0])
        seat = page.locator("#replay-beliefs article.beliefs-seat")
        expect(seat.locator("svg.beliefs-items g[data-item]")).to_have_count(
            len({i for h in DUEL["hands"] for i in h})
        )
        seat.locator("details.beliefs-reasoning summary").click()
        expect(seat.locator("details.beliefs-reasoning")).to_contain_text("Only the game's players read")
        assert seat.locator("details.beliefs-reasoning li").count() == 0
        assert_fits_width(page)
        page.locator("#replay-beliefs").screenshot(path=artifacts / "beliefs-replay-spectator.png")
    finally:
        stranger.close()
