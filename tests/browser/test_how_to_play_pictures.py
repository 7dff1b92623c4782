"""How to play's pictures (static/img/how_to_play/*.png) are screenshots of the real screens, taken here: a
scripted browser plays the practice game's table (server/web/practice.py) as the page's worked example tells
it (ask for the coal, accept the stick, craft 4 torches), and a game with value reports on the same table.
Each picture is cropped to its panel, at most 800 px wide and reduced to a 256-colour palette (a few tens of
kB). With TRADECRAFT_DOCS_SCREENSHOTS=1 it is written over the committed file (refresh the pictures after a
change to these screens); otherwise it goes to tests/artifacts/how-to-play-NAME.png and the committed picture
must have the live screen's size, so a run leaves the tree clean and a stale picture fails. Finally the page
itself shows every picture, loaded, with its alt text, on a desktop and a 390-px phone."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from conftest import (
    ARTIFACTS,
    DOCS_SCREENSHOTS,
    assert_fits_width,
    axe_violations,
    lab_halls,
    log_in,
    page_errors,
)
from e2e_helpers import MakeServer, ServerProcess, write_config
from PIL import Image
from playwright.sync_api import Browser, Locator, Page, expect

from server.web.practice import PRACTICE_HALL

PICTURES = Path(__file__).resolve().parents[2] / "static" / "img" / "how_to_play"
#: Widest picture written (the page's text column is about 46 rem).
MAX_WIDTH = 800
#: The pictures the page shows, each written by this test.
NAMES = ("room", "propose", "decide", "craft", "end", "value-report")


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("howtoplay")
    config_path = write_config(folder, bot_delay=0.2)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    practice_table = yaml.safe_load(
        (PRACTICE_HALL.instances.root / "minecraft" / "practice" / "guided.json").read_text(encoding="utf-8")
    )[0]
    record = {"hands": practice_table["hands"], "targets": practice_table["targets"]}
    lab_halls(
        config,
        folder / "instances",
        {"reports": {"record": record, "title": "Value reports", "game": {"tom_orders": [[0, 1], [0]]}}},
    )
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


def save(picture: bytes, name: str) -> None:
    """``picture`` (a PNG screenshot) scaled down to MAX_WIDTH, on a 256-colour palette, optimised: written
    as static/img/how_to_play/NAME.png when refreshing the pictures (TRADECRAFT_DOCS_SCREENSHOTS=1), else
    to tests/artifacts/ and checked against the committed picture's size."""
    image = Image.open(io.BytesIO(picture)).convert("RGB")
    if image.width > MAX_WIDTH:
        image = image.resize((MAX_WIDTH, round(image.height * MAX_WIDTH / image.width)), Image.LANCZOS)
    image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    path = PICTURES / f"{name}.png"
    if DOCS_SCREENSHOTS:
        PICTURES.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != out.getvalue():
            path.write_bytes(out.getvalue())
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"how-to-play-{name}.png").write_bytes(out.getvalue())
    assert path.exists(), f"{path} is missing: write it with TRADECRAFT_DOCS_SCREENSHOTS=1"
    with Image.open(path) as committed:
        assert committed.size == image.size, (
            f"{path.name} is {committed.size[0]}x{committed.size[1]} but the live screen is "
            f"{image.width}x{image.height}: refresh it with TRADECRAFT_DOCS_SCREENSHOTS=1"
        )


def shot(locator: Locator, name: str) -> None:
    locator.scroll_into_view_if_needed()
    locator.page.evaluate("document.activeElement && document.activeElement.blur()")  # no focus ring
    save(locator.screenshot(animations="disabled"), name)


def enter(page: Page, server: ServerProcess, name: str) -> None:
    page.goto(server.url + "/practice")
    page.get_by_role("textbox", name="Display name").fill(name)
    page.get_by_role("button", name="Start the practice").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    page.get_by_role("button", name="Hide the guide").click()  # the pictures show the screens alone
    expect(page.locator("#practice-guide")).to_be_hidden()


def test_pictures_of_the_real_screens(server: ServerProcess, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 860})
    page = context.new_page()
    errors = page_errors(page)
    enter(page, server, "Alex")
    expect(page.locator("#room-propose")).to_be_visible()
    page.locator(".guide-show").evaluate("button => { button.hidden = true; }")
    page.evaluate("window.scrollTo(0, 0)")
    # the room below its title (which names the game's id): status, target, the proposal form, the hands
    top = page.locator(".room-statusbar").bounding_box()
    bottom = page.locator("#room-hands-panel").bounding_box()
    assert top and bottom
    clip = {
        "x": 0,
        "y": top["y"] - 8,
        "width": 1100,
        "height": bottom["y"] + bottom["height"] - top["y"] + 16,
    }
    save(page.screenshot(clip=clip, animations="disabled", full_page=True), "room")

    page.get_by_role("button", name="Ask for 1 × Coal").click()
    page.get_by_role("button", name="Give 2 × Cobblestone").click()
    page.get_by_label("Message (optional)").fill("Your coal for my cobblestone?")
    shot(page.locator("#room-propose"), "propose")
    page.get_by_role("button", name="Propose").click()
    expect(page.locator("#room-craft")).to_be_visible()
    page.locator("#craft-finish").click()

    expect(page.locator("#room-decide")).to_be_visible()
    shot(page.locator("#room-decide"), "decide")
    page.get_by_role("button", name="Accept").click()

    torch = page.locator("#craft-possible .craft-row", has_text="your target")
    expect(torch).to_be_visible()
    shot(page.locator("#room-craft"), "craft")
    torch.get_by_role("button", name="Craft").click()
    expect(page.locator("#craft-target-check")).to_contain_text("you hold your whole target")
    page.locator("#craft-finish").click()

    expect(page.locator("#room-end")).to_be_visible()
    shot(page.locator("#room-end"), "end")
    context.close()

    # the value report, on a game of the same table that asks for one
    context = browser.new_context(viewport={"width": 1100, "height": 720})
    page = context.new_page()
    errors += page_errors(page)
    log_in(page, server.url, "Robin")
    page.get_by_label("Game mode").select_option("reports")
    page.get_by_label("Seat 2").select_option("bot:random")
    page.get_by_role("button", name="Create and join").click()
    report = page.locator("#room-tom")
    expect(report).to_be_visible()
    sliders = report.locator("input.tom-slider")
    # a plausible report for a torch: cobblestone no use to you, coal and stick indispensable; then a guess
    for index, value in enumerate(("1", "10", "10", "8", "3", "4")[: sliders.count()]):
        sliders.nth(index).fill(value)
    page.evaluate("document.activeElement.blur()")
    shot(report, "value-report")
    assert errors == []
    context.close()

    for name in NAMES:
        with Image.open(PICTURES / f"{name}.png") as image:
            assert image.width <= MAX_WIDTH
        assert (PICTURES / f"{name}.png").stat().st_size < 150_000, name


@pytest.mark.parametrize(
    "viewport",
    [{"width": 1280, "height": 900}, {"width": 768, "height": 1024}, {"width": 390, "height": 844}],
)
def test_how_to_play_shows_every_picture(
    server: ServerProcess, browser: Browser, artifacts: Path, viewport: dict[str, int]
) -> None:
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.goto(server.url + "/how-to-play")
    for name in NAMES:
        image = page.locator(f'img[src="/static/img/how_to_play/{name}.png"]')
        expect(image).to_have_count(1)
        assert (image.get_attribute("alt") or "").strip(), name
        image.scroll_into_view_if_needed()
        # loading="lazy": it loads once scrolled near; then it must decode to a real picture
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    expect(page.get_by_role("link", name="practice game").first).to_have_attribute("href", "/practice")
    assert_fits_width(page)
    assert axe_violations(page) == []
    page.screenshot(path=str(artifacts / f"how-to-play-{viewport['width']}.png"), full_page=True)
    context.close()
