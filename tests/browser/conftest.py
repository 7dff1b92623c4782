"""Browser tests: a live server, Debian's chromium through Playwright, a folder for screenshots.

Needs a real server process: a browser loads its pages and sockets from one.

Never `playwright install` (it downloads a browser): `make browser` installs Debian's chromium.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:  # e2e_helpers lives in tests/
    sys.path.insert(0, str(TESTS))

from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright  # noqa: E402

from craft_rules.loader import load_rule_set  # noqa: E402

# A machine shared by several test runs answers slowly at times: a bot's move or a push may take more than
# Playwright's default 5 s to show. A wait ends as soon as the page shows what is expected, so a longer
# limit only matters when something is late or wrong.
expect.set_options(timeout=10_000)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = TESTS / "artifacts"
AXE = TESTS.parent / "node_modules" / "axe-core" / "axe.min.js"
DOCS = TESTS.parent / "docs"
#: Set to write the README's screenshots (docs/screenshot-*.png) from a test run.
DOCS_SCREENSHOTS = os.environ.get("TRADECRAFT_DOCS_SCREENSHOTS") == "1"


def docs_screenshot(page: Page, name: str, *, width: int = 1024, height: int = 640) -> None:
    """With TRADECRAFT_DOCS_SCREENSHOTS=1, save a small screenshot of ``page`` as docs/screenshot-NAME.png."""
    if not DOCS_SCREENSHOTS:
        return
    size = page.viewport_size
    page.set_viewport_size({"width": width, "height": height})
    page.screenshot(path=DOCS / f"screenshot-{name}.png")
    if size:
        page.set_viewport_size(size)


def assert_fits_width(page: Page) -> None:
    """Nothing on the page is wider than the window: no sideways scrolling (e.g. on a 768-px tablet)."""
    width = page.viewport_size["width"] if page.viewport_size else 0
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url} is {scroll} px wide in a {width}-px window"


def off_site_requests(context: BrowserContext, origin: str) -> list[str]:
    """Every request the context's pages make anywhere but ``origin`` (a CDN, a web font, an analytics
    beacon), filled as they happen: the pages must work offline once set up."""
    seen: list[str] = []

    def check(url: str) -> None:
        if not url.startswith((origin + "/", "data:", "blob:")):
            seen.append(url)

    context.on("request", lambda request: check(request.url))
    return seen


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("Debian's chromium is missing: run `make browser` (apt-get install chromium).")
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """tests/artifacts/ (git-ignored): screenshots of every screen the tests visit."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def check_icon_gallery(page: Page, base_url: str, ruleset: str, artifacts: Path) -> None:
    """The rule set's gallery draws one readable 24-px icon per item, no two drawn the same."""
    page.goto(f"{base_url}/rulesets/{ruleset}/icons")
    expect(page.locator("#icon-gallery[data-ready=true]")).to_be_attached()
    items = len(load_rule_set(ruleset).items)
    expect(page.locator("svg.item-icon")).to_have_count(items)
    glyphs = page.eval_on_selector_all(
        "svg.item-icon",
        """icons => icons.map(svg => ({
            text: svg.querySelector('text').textContent,
            width: svg.getBoundingClientRect().width,
            fill: svg.querySelectorAll('rect')[1].getAttribute('fill'),
            frame: svg.querySelectorAll('rect')[0].getAttribute('fill'),
        }))""",
    )
    assert all(g["text"].strip() and g["width"] == 24 for g in glyphs)
    drawn = {json.dumps(g, sort_keys=True) for g in glyphs}
    assert len(drawn) == items  # no two icons are drawn the same
    page.screenshot(path=artifacts / f"icons-{ruleset}.png")


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """The serious and critical accessibility violations axe-core finds on ``page``."""
    page.evaluate(AXE.read_text(encoding="utf-8"))  # not a script tag: the CSP forbids inline scripts
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["html"][:160] for n in v["nodes"][:3]]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def lab_halls(config: dict[str, Any], root: Path, halls: dict[str, dict[str, Any]]) -> None:
    """Add halls that each play one fixed task instance to a settings ``config`` (as ``write_config`` made
    it): ``halls[name]`` holds the instance ``record`` (hands and targets), its ``title``, and optionally its
    ``ruleset`` (minecraft) and ``game`` settings; the instance files go under ``root``."""
    for name, hall in halls.items():
        ruleset = hall.get("ruleset", "minecraft")
        folder = root / ruleset / "1p_v_1p"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps([hall["record"]]), encoding="utf-8")
        config["halls"][name] = {
            "title": hall["title"],
            "ruleset": ruleset,
            "players": 2,
            "instances": {"choice": "fixed", "root": str(root), "set": name},
            "game": {"max_turns": 2, "first_proposer": 0, **hall.get("game", {})},
        }


def log_in(page: Page, base_url: str, name: str) -> None:
    """Open the lobby and log in under the display name ``name`` (the page reloads)."""
    page.goto(base_url + "/")
    page.get_by_role("textbox", name="Display name").fill(name)
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_text(f"You play as {name}")).to_be_visible()
    # the reloaded lobby's script has set up its forms and its socket: a choice made sooner is not seen
    expect(page.locator("#lobby[data-ready=true]")).to_be_attached()


def start_game_against_random(page: Page, base_url: str, name: str, hall: str) -> None:
    """Log in as ``name`` and create and join a game of ``hall`` against the random bot: the room."""
    log_in(page, base_url, name)
    page.get_by_label("Game mode").select_option(hall)
    page.get_by_label("Seat 2").select_option("bot:random")
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()


def play_to_the_end(page: Page, moves: int = 80) -> None:
    """Pass when proposing, reject what the other proposes, finish every craft phase: until the end screen
    (at most ``moves`` looks at the page, a quarter second apart)."""
    end = page.locator("#room-end")
    for _ in range(moves):
        if end.is_visible():
            return
        for button in ("#propose-pass", "#decide-reject", "#craft-finish"):
            target = page.locator(button)
            if target.is_visible() and target.is_enabled():
                target.click()
                break
        page.wait_for_timeout(250)
    expect(end).to_be_visible()


def page_errors(page: Page) -> list[str]:
    """The list the page's uncaught script errors are collected in from now on."""
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    return errors


def tom_reports(base_url: str, page: Page, seat: int) -> list[dict[str, Any]]:
    """The value reports ``seat`` made in the game open on ``page``, from the researcher export."""
    import requests  # only the tests that read exports need it

    game_id = page.url.rstrip("/").rsplit("/", 1)[1]
    export = requests.get(
        f"{base_url}/api/admin/games/{game_id}/export", auth=("admin", "test-admin-password"), timeout=15
    )
    return [
        record["payload"]
        for record in map(json.loads, export.text.splitlines())
        if record.get("kind") == "event"
        and record.get("type") == "tom_reported"
        and record["payload"]["seat"] == seat
    ]


#: What a player can click, tap or type into.
INTERACTIVE = (
    "a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], [role=link]"
)
#: WCAG 2.2 target size (minimum), success criterion 2.5.8: 24 by 24 CSS pixels.
MIN_TARGET_PX = 24
#: Off-screen on purpose until focused (the skip link of base.html).
OFF_SCREEN_UNTIL_FOCUSED = ".skip-link:not(:focus)"

_SCREEN_PROBLEMS = r"""([selector, minTarget, offScreen, windowWidth]) => {
    // a mobile browser zooms out to show a page wider than the screen, and innerWidth grows with it
    const width = Math.min(window.innerWidth, windowWidth);
    const name = el => {
        const id = el.id ? '#' + el.id : '';
        const cls = el.classList.length ? '.' + [...el.classList].join('.') : '';
        const select = el.tagName === 'SELECT';
        const shown = select ? el.selectedOptions[0]?.textContent : el.textContent || el.value;
        const words = (el.getAttribute('aria-label') || shown || '').trim().replace(/\s+/g, ' ');
        return `<${el.tagName.toLowerCase()}${id}${cls}> "${words.slice(0, 40)}"`;
    };
    const px = Math.round;
    const box = r => `x ${px(r.left)}..${px(r.right)}, ${px(r.width)}x${px(r.height)}`;
    // WCAG's inline exception: a link inside a sentence is as tall as the line of text around it
    const inSentence = el => {
        if (el.tagName !== 'A' || getComputedStyle(el).display !== 'inline') return false;
        let block = el.parentElement;
        while (block && getComputedStyle(block).display === 'inline') block = block.parentElement;
        if (!block) return false;
        const texts = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
        let outside = '';
        while (texts.nextNode()) {
            if (!texts.currentNode.parentElement.closest('a')) outside += texts.currentNode.data;
        }
        return (outside.match(/[A-Za-z]{2,}/g) || []).length >= 3;  // words around it, not a bare label
    };
    // inside a box that scrolls sideways and itself fits the window (a wide table's wrapper): reachable
    const scrollsInto = el => {
        for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
            const overflow = getComputedStyle(box).overflowX;
            if (overflow !== 'auto' && overflow !== 'scroll') continue;
            const r = box.getBoundingClientRect();
            return r.left >= -0.5 && r.right <= width + 0.5;
        }
        return false;
    };
    const problems = [];
    const page = document.documentElement.scrollWidth;
    if (page > width) problems.push(`the page is ${page} px wide in a ${width}-px window`);
    for (const el of document.querySelectorAll(selector)) {
        if (el.matches(offScreen)) continue;
        if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
        const r = el.getBoundingClientRect();
        if (r.width <= 1 || r.height <= 1) continue;  // visually hidden (read by screen readers only)
        if ((r.left < -0.5 || r.right > width + 0.5) && !scrollsInto(el)) {
            problems.push(`${name(el)} sticks out of the window: ${box(r)}`);
        } else if ((r.width < minTarget - 0.5 || r.height < minTarget - 0.5) && !inSentence(el)) {
            problems.push(`${name(el)} is smaller than ${minTarget}x${minTarget}: ${box(r)}`);
        }
    }
    return problems;
}"""


def screen_problems(page: Page) -> list[str]:
    """What does not fit the window on ``page``: sideways scrolling, and every visible interactive element
    that sticks out of the window's width (unless a box that scrolls sideways and fits the window holds it,
    such as a wide table's wrapper) or is smaller than the WCAG 2.5.8 target size (24x24 px; a link inside a
    sentence is exempt, as WCAG exempts it). One line per problem, naming the element and its box."""
    size = page.viewport_size
    assert size is not None, "screen_problems needs a page opened with a viewport size"
    return page.evaluate(
        _SCREEN_PROBLEMS, [INTERACTIVE, MIN_TARGET_PX, OFF_SCREEN_UNTIL_FOCUSED, size["width"]]
    )


def assert_fits_screen(page: Page, label: str) -> None:
    """Nothing on ``page`` is off-screen sideways and every visible control is big enough to tap (see
    :func:`screen_problems`); ``label`` names the step in the failure message."""
    problems = screen_problems(page)
    size = page.viewport_size or {}
    window = f"{size.get('width')}x{size.get('height')}"
    assert not problems, f"{label} ({page.url}, {window}):\n  " + "\n  ".join(problems)
