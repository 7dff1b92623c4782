"""A whole game on a phone (390x844, touch, device scale 2) and in a 768-px window, in Debian's chromium
against a live server: log in, create a game against a bot in the lobby, report values, propose, decide,
craft on the grid, from the recipe book and from "What you can craft now", read the end screen, the replay,
the spectator page and How to play. At every step nothing is off-screen sideways and every visible control
is at least 24x24 px (conftest.assert_fits_screen). Screenshots: tests/artifacts/small-screen-*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import assert_fits_screen, axe_violations, lab_halls, log_in, page_errors, screen_problems
from e2e_helpers import MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, Locator, Page, expect

# Seat 0 (the player) needs a torch: sticks from its planks, and coal, which only the bot holds. The bot
# (`rational`: accepts a trade only when it gains) needs a second iron ingot for shears. So the player's
# first offer (cobblestone for coal) is refused, the bot's idle proposal in turn 2 is the player's to
# decide, and the iron ingot for the coal in turn 3 wins the game for both.
INSTANCE = {
    "hands": [{"oak_planks": 2, "iron_ingot": 1, "cobblestone": 1}, {"coal": 1, "iron_ingot": 1, "stick": 1}],
    "targets": [{"torch": 1}, {"shears": 1}],
}
HALL = "pocket"
SIZES: dict[str, dict[str, Any]] = {
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "device_scale_factor": 2,
        "is_mobile": True,
        "has_touch": True,
    },
    "tablet": {"viewport": {"width": 768, "height": 1024}},
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("small-screens")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    game = {"max_turns": 3, "first_proposer": 0, "allow_pass": False, "tom_orders": [[0, 1, 2], [0]]}
    # long deadlines: the countdown shows in the status bar, and never runs out in a test
    game["deadlines"] = {"tom_report": 900, "trade_propose": 900, "trade_decide": 900, "craft": 900}
    lab_halls(
        config, folder / "instances", {HALL: {"record": INSTANCE, "title": "Pocket duel", "game": game}}
    )
    config["halls"][HALL]["allow_custom_seats"] = True
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


class Steps:
    """Each step of one window: a screenshot (small-screen-SIZE-NN-STEP.png) and the fit check."""

    def __init__(self, size: str, artifacts: Path) -> None:
        self.size, self.artifacts, self.count = size, artifacts, 0

    def check(self, page: Page, step: str, *, axe: bool = False, full_page: bool = True) -> None:
        """Screenshot (the whole page, or the window), fit check and, with ``axe``, axe-core's serious and
        critical findings."""
        self.count += 1
        path = self.artifacts / f"small-screen-{self.size}-{self.count:02d}-{step}.png"
        page.screenshot(path=path, full_page=full_page)
        assert_fits_screen(page, f"{self.size}: {step}")
        if axe:
            assert axe_violations(page) == [], step


def press(locator: Locator, touch: bool) -> None:
    """A tap on a touch screen, a click elsewhere."""
    if touch:
        locator.tap()
    else:
        locator.click()


def report_values(page: Page, steps: Steps, step: str, touch: bool) -> None:
    """Set the first value-report line to 10 by a tap (or click) on its right end and every other one to a
    different value, then send the report."""
    panel = page.locator("#room-tom")
    expect(panel).to_be_visible()
    sliders = panel.locator("input[type=range]")
    count = sliders.count()
    assert count >= 3
    steps.check(page, f"{step}-unset", axe=step == "turn1-values")
    first = sliders.nth(0)
    first.scroll_into_view_if_needed()
    line = first.bounding_box()
    assert line is not None
    right_end = (line["x"] + line["width"] - 1, line["y"] + line["height"] / 2)
    if touch:
        page.touchscreen.tap(*right_end)
    else:
        page.mouse.click(*right_end)
    expect(panel.locator("output.tom-value").first).to_have_text("10")
    for index in range(1, count):
        sliders.nth(index).fill(str((index * 3) % 11))
    steps.check(page, step)
    page.get_by_role("button", name="Send my values").click()
    expect(panel).to_be_hidden()


def propose(page: Page, give: str, ask: str, touch: bool) -> None:
    expect(page.locator("#room-propose")).to_be_visible()
    press(page.get_by_role("button", name=f"Give 1 × {give}"), touch)
    press(page.get_by_role("button", name=f"Ask for 1 × {ask}"), touch)
    page.get_by_label("Message (optional)").fill(f"my {give} for your {ask}?")


@pytest.mark.parametrize("size", list(SIZES))
def test_whole_game_fits_small_screens(
    server: ServerProcess, browser: Browser, artifacts: Path, size: str
) -> None:
    options = SIZES[size]
    touch = bool(options.get("has_touch"))
    steps = Steps(size, artifacts)
    context = browser.new_context(**options)
    page = context.new_page()
    errors = page_errors(page)
    name = f"Pocket {size}"

    page.goto(server.url + "/")
    steps.check(page, "lobby-login")
    log_in(page, server.url, name)
    page.get_by_label("Game mode").select_option(HALL)
    page.get_by_label("Seat 2").select_option("bot:rational")
    steps.check(page, "lobby-create", axe=True)
    press(page.get_by_role("button", name="Create and join"), touch)
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]

    # a spectator on the same kind of screen
    spectator_context = browser.new_context(**options)
    spectator = spectator_context.new_page()
    spectator_errors = page_errors(spectator)
    spectator.goto(f"{server.url}/games/{game_id}/watch")
    expect(spectator.locator("#watch-board")).to_contain_text("Oak Planks")

    # turn 1: values, an offer the bot refuses, sticks on the grid
    expect(page.locator("#room-deadline")).to_be_visible()
    report_values(page, steps, "turn1-values", touch)
    expect(page.locator("#room-target")).to_contain_text("Torch")
    propose(page, "Cobblestone", "Coal", touch)
    steps.check(page, "turn1-propose", axe=True)
    press(page.get_by_role("button", name="Propose"), touch)
    expect(page.locator("#room-outcome")).to_contain_text("rejected")
    expect(page.locator("#room-craft")).to_be_visible()
    steps.check(page, "turn1-craft")
    press(page.get_by_role("button", name="Pick Oak Planks"), touch)
    press(page.get_by_role("button", name="Square row 1, column 1: empty"), touch)
    press(page.get_by_role("button", name="Square row 2, column 1: empty"), touch)
    result = page.locator("#craft-grid-result")
    expect(result).to_contain_text("Stick")
    page.get_by_label("Runs of the grid's recipe").fill("1")
    steps.check(page, "turn1-grid")
    press(result.get_by_role("button", name="Craft", exact=True), touch)
    hand = page.locator("#craft-hand")
    expect(hand).to_contain_text("4 × Stick")
    # the recipe book and an item's crafting tree
    page.get_by_label("Search recipes by item name").fill("torch")
    expect(page.locator("#craft-results li[data-recipe='torch']")).to_be_visible()
    press(page.get_by_role("button", name="How is Torch made?"), touch)
    expect(page.locator("#craft-info")).to_contain_text("About Torch")
    steps.check(page, "turn1-recipe-book", axe=True)
    press(page.get_by_role("button", name="Finish crafting"), touch)

    steps.check(spectator, "watch")

    # turn 2: the bot proposes, the player decides
    report_values(page, steps, "turn2-values", touch)
    expect(page.locator("#room-decide")).to_be_visible()
    page.get_by_label("Reply (optional, sent with your answer)").fill("not this time")
    steps.check(page, "turn2-decide", axe=True)
    press(page.get_by_role("button", name="Reject"), touch)
    expect(page.locator("#room-craft")).to_be_visible()
    press(page.get_by_role("button", name="Finish crafting"), touch)

    # turn 3: the iron ingot for the coal; the torch from "What you can craft now"
    report_values(page, steps, "turn3-values", touch)
    propose(page, "Iron Ingot", "Coal", touch)
    press(page.get_by_role("button", name="Propose"), touch)
    expect(page.locator("#room-outcome")).to_contain_text("accepted your proposal")
    expect(page.locator("#room-craft")).to_be_visible()
    page.get_by_label("Filter by item name").fill("torch")
    runs = page.get_by_label("Runs of torch", exact=True)
    runs.fill("1")
    steps.check(page, "turn3-craft")
    press(runs.locator("xpath=..").get_by_role("button", name="Craft"), touch)
    expect(hand).to_contain_text("4 × Torch")
    expect(page.locator("#craft-target-check")).to_contain_text("you hold your whole target")
    press(page.get_by_role("button", name="Finish crafting"), touch)

    # the end screen, the replay, the spectator's end
    expect(page.locator("#room-end")).to_be_visible()
    expect(page.locator("#room-end-text")).to_contain_text("Won by")
    steps.check(page, "end", axe=True)
    expect(spectator.locator("#watch-end")).to_be_visible()
    steps.check(spectator, "watch-end")
    press(page.get_by_role("link", name="Replay the game step by step"), touch)
    expect(page.locator("#replay[data-ready=true]")).to_be_attached()
    for _ in range(4):
        press(page.get_by_role("button", name="Next"), touch)
    steps.check(page, "replay", axe=True)
    press(page.get_by_role("button", name="Last"), touch)
    steps.check(page, "replay-last")

    # the lobby lists the finished game; How to play
    page.goto(server.url + "/")
    expect(page.locator("#mine-panel")).to_contain_text(game_id)
    steps.check(page, "lobby-after")
    page.goto(server.url + "/how-to-play")
    steps.check(page, "how-to-play")
    page.goto(f"{server.url}/rulesets/minecraft/icons")
    expect(page.locator("#icon-gallery[data-ready=true]")).to_be_attached()
    steps.check(page, "icons", full_page=False)  # 1,255 icons: the whole page is 40,000 px tall
    # a game that waits for a second player: the waiting panel and its link to share
    page.goto(server.url + "/")
    page.get_by_label("Game mode").select_option(HALL)
    page.get_by_label("Seat 2").select_option("open")
    press(page.get_by_role("button", name="Create and join"), touch)
    expect(page.locator("#room-lobby")).to_be_visible()
    steps.check(page, "waiting", axe=True)
    assert errors == [] and spectator_errors == []
    context.close()
    spectator_context.close()


# A page with one of each thing the fit check must find or let pass.
FIT_CHECK_PAGE = """<!doctype html><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { margin: 0; font: 16px sans-serif; } .skip { position: absolute; left: -999px; }
  .hidden-text { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  button { min-height: 2rem; } #tiny { min-height: 0; height: 16px; padding: 0 }
  #far { margin-left: 360px; width: 100px }</style>
<a class="skip skip-link" href="#main">Skip to the content</a>
<p>Read <a id="in-sentence" href="#rules">the rules</a> before you start a game.</p>
<p><a id="alone" href="#replay">Replay</a> · <a id="alone-too" href="#lobby">Lobby</a></p>
<button id="fine" type="button">Big enough</button>
<button id="tiny" type="button">tiny</button>
<input id="box" type="checkbox" aria-label="small box">
<button id="hidden" type="button" hidden>not shown</button>
<span class="hidden-text"><button type="button">read aloud only</button></span>
<button id="far" type="button">out of the window</button>
<div style="overflow-x: auto"><table style="width: 700px"><tr><td style="width: 600px">wide</td>
  <td><button id="scrolled" type="button">in a scrolling box</button></td></tr></table></div>
<div style="overflow: hidden"><table style="width: 700px"><tr><td style="width: 600px">wide</td>
  <td><button id="cut" type="button">cut off</button></td></tr></table></div>
"""


def test_fit_check_names_what_does_not_fit(browser: Browser) -> None:
    """The helper finds sideways scrolling, a control past the window's edge and small targets, names each
    with its box, and lets pass what WCAG exempts (a link inside a sentence) and what nobody sees."""
    context = browser.new_context(**SIZES["phone"])
    page = context.new_page()
    page.set_content(FIT_CHECK_PAGE)
    problems = screen_problems(page)
    joined = "\n".join(problems)
    assert problems[0].startswith("the page is ") and "in a 390-px window" in problems[0]
    assert '<button#far> "out of the window" sticks out of the window: x 360..460, 100x' in joined
    assert '<button#cut> "cut off" sticks out of the window: x 6' in joined  # hidden past the edge
    assert "#scrolled" not in joined  # reachable: its box scrolls sideways
    assert '<button#tiny> "tiny" is smaller than 24x24' in joined
    assert '<input#box> "small box" is smaller than 24x24: ' in joined
    assert '<a#alone> "Replay" is smaller than 24x24' in joined and "#alone-too" in joined
    assert "#in-sentence" not in joined and "#fine" not in joined  # a link in a sentence; a big button
    assert "Skip to the content" not in joined and "not shown" not in joined and "read aloud" not in joined
    assert len(problems) == 7
    with pytest.raises(AssertionError, match=r"a label \(about:blank, 390x844\):\n\s+the page is"):
        assert_fits_screen(page, "a label")
    # fixed: nothing to report
    page.add_style_tag(
        content="#far { margin-left: 0 } #tiny { height: 24px } #box { width: 24px; height: 24px }"
        " p > a { display: inline-block; padding: 4px 0 } #cut { margin-left: -400px }"
    )
    assert screen_problems(page) == []
    assert_fits_screen(page, "fixed")
    context.close()
