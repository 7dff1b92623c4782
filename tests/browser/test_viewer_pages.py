"""The viewer side of the GUI in a real browser (Debian chromium through Playwright) against a live server:
a spectator follows a three-player game live, then the replay steps through it (next, jump to a turn, the
last step, another seat's view for the player who held it), icons render for every item, and the
how-to-play page is one click from the nav. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import assert_fits_width, axe_violations, check_icon_gallery, docs_screenshot
from e2e_helpers import Client, ServerProcess
from playwright.sync_api import Browser, BrowserContext, Page, expect


def _context_as(browser: Browser, server: ServerProcess, client: Client | None) -> BrowserContext:
    """A browser context logged in with the same session cookie as ``client`` (anonymous without one)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    if client is not None:
        cookies = [{"name": c.name, "value": c.value or "", "url": server.url} for c in client.http.cookies]
        context.add_cookies(cookies)  # type: ignore[arg-type]
    return context


def _errors_of(page: Page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return errors


@pytest.fixture(scope="module")
def trio_game(server: ServerProcess, browser: Browser, artifacts: Any) -> Iterator[dict[str, Any]]:
    """A trio game (turn 1: a rejected proposal; turn 2: a trade and two wins), watched live in a browser."""
    made: list[Client] = []
    seated = []
    for name in ("Ada", "Bob", "Cleo"):
        client = Client(server.url, name).connect()
        made.append(client)
        seated.append(client)
    p0, p1, p2 = seated
    game_id = p0.call("create_game", {"hall": "trio"})["game"]["game_id"]
    for seat, client in enumerate(seated):
        assert client.call("join", {"game_id": game_id})["seat"] == seat

    watcher = _context_as(browser, server, None)
    watch = watcher.new_page()
    watch_errors = _errors_of(watch)
    watch.goto(f"{server.url}/games/{game_id}/watch")
    expect(watch.locator("#watch[data-ready=true]")).to_be_attached()
    expect(watch.locator(".board-hand")).to_have_count(3)

    secret_offer = f"Iron for your coal? #{uuid.uuid4().hex[:6]}"
    secret_reply = f"No thanks, I need it. #{uuid.uuid4().hex[:6]}"
    proposal = {"to": 1, "offer": {"iron_ingot": 1}, "request": {"coal": 1}, "message": secret_offer}
    assert p0.act(game_id, "propose", **proposal)["ok"]
    assert p1.act(game_id, "decide", accept=False, message=secret_reply)["ok"]
    assert p0.act(game_id, "craft", recipe="stick", runs="1/2")["ok"]
    for client in (p0, p1, p2):
        assert client.act(game_id, "finish_crafting")["ok"]
    # the spectator's page follows: turn 2 starts, the crafting was never shown
    expect(watch.locator(".board-status")).to_contain_text("Turn 2 of 3")
    assert p1.act(game_id, "propose", to=0, offer={"coal": 1}, request={"iron_ingot": 1})["ok"]
    assert p0.act(game_id, "decide", accept=True)["ok"]
    expect(watch.locator("#watch-timeline")).to_contain_text("traded")
    watch.screenshot(path=artifacts / "watch-live.png")
    assert p0.act(game_id, "craft", recipe="torch", runs="1/4")["ok"]
    assert p1.act(game_id, "craft", recipe="shears", runs=1)["ok"]
    for client in (p2, p1, p0):
        assert client.act(game_id, "finish_crafting")["ok"]
    expect(watch.locator("#watch-end")).to_contain_text("Replay it step by step")
    expect(watch.locator(".badge-win")).to_have_count(2)
    watch_text = watch.locator("body").inner_text()
    watch.screenshot(path=artifacts / "watch-finished.png", full_page=True)
    yield {
        "game_id": game_id,
        "players": seated,
        "secrets": [secret_offer, secret_reply],
        "watch_text": watch_text,
        "watch_errors": watch_errors,
    }
    watcher.close()
    for client in made:
        client.close()


def test_spectator_page_followed_the_game_without_private_information(trio_game: dict[str, Any]) -> None:
    text = trio_game["watch_text"]
    assert not any(secret in text for secret in trio_game["secrets"])
    assert " crafted " not in text  # crafting is never narrated to spectators ("X crafted 4 Stick")
    assert "Every target is revealed" in text  # ... but the end reveals the targets
    assert "Torch" in text and "Shears" in text and "Crafting Table" in text  # TRIO's targets
    assert trio_game["watch_errors"] == []


def test_replay_steps_jumps_and_switches_seat(
    server: ServerProcess, browser: Browser, trio_game: dict[str, Any], artifacts: Any
) -> None:
    game_id = trio_game["game_id"]
    p0 = trio_game["players"][0]
    context = _context_as(browser, server, p0)
    page = context.new_page()
    errors = _errors_of(page)
    page.goto(f"{server.url}/games/{game_id}/replay")
    expect(page.locator("#replay[data-ready=true]")).to_be_attached()
    position = page.locator("#replay-position")
    expect(position).to_contain_text(re.compile(r"Event 1 of \d+"))
    total = int(re.search(r"of (\d+)", position.inner_text()).group(1))  # type: ignore[union-attr]
    expect(page.locator("#replay-first")).to_be_disabled()
    page.get_by_role("button", name="Next").click()
    expect(position).to_contain_text(f"Event 2 of {total}")
    page.keyboard.press("ArrowRight")
    expect(position).to_contain_text(f"Event 3 of {total}")
    page.get_by_role("button", name="Previous").click()
    expect(position).to_contain_text(f"Event 2 of {total}")
    # jump to turn 2: the board shows the turn, the URL keeps the place
    page.get_by_label("Turn").select_option("2")
    page.get_by_role("button", name="Go to turn").click()
    expect(page.locator(".board-status")).to_contain_text("Turn 2 of 3")
    expect(page.locator("#replay-event")).to_contain_text("Turn 2:")
    assert "step=" in page.url
    page.get_by_role("button", name="Last").click()
    expect(position).to_contain_text(f"Event {total} of {total}")
    expect(page.locator("#replay-event")).to_contain_text("Game over")
    expect(page.locator(".badge-win")).to_have_count(2)
    expect(page.locator(".board-score")).to_have_count(3)
    page.screenshot(path=artifacts / "replay-spectator-end.png", full_page=True)
    spectator_text = page.locator("body").inner_text()
    assert not any(secret in spectator_text for secret in trio_game["secrets"])

    # the player of seat 0 may follow its own view: its target and its rejected proposal
    viewer = page.get_by_label("View as")
    assert viewer.locator("option").all_inner_texts() == [
        "Spectator (public information only)",
        "Ada (seat 0)",
    ]
    page.get_by_role("button", name="First").click()
    expect(position).to_contain_text(f"Event 1 of {total}")
    viewer.select_option("0")
    expect(page.locator(".board-private")).to_contain_text("Target")
    page.get_by_label("Turn").select_option("1")
    page.get_by_role("button", name="Go to turn").click()
    for _ in range(3):
        page.get_by_role("button", name="Next").click()
    expect(page.locator("#replay-timeline")).to_contain_text(trio_game["secrets"][0])
    total_seat0 = int(re.search(r"of (\d+)", position.inner_text()).group(1))  # type: ignore[union-attr]
    assert total_seat0 > total  # seat 0 saw its private events too
    page.screenshot(path=artifacts / "replay-seat0.png", full_page=True)
    # Play runs the replay forward by itself
    page.get_by_label("Speed").select_option("20")
    before = position.inner_text()
    page.get_by_role("button", name="Play").click()
    expect(position).not_to_have_text(before)
    page.get_by_role("button", name="Pause").click()
    page.get_by_role("button", name="Last").click()
    expect(position).to_contain_text(f"Event {total_seat0} of {total_seat0}")
    docs_screenshot(page, "replay")
    page.set_viewport_size({"width": 768, "height": 1024})  # a tablet: the controls wrap, nothing spills
    assert_fits_width(page)
    page.screenshot(path=artifacts / "replay-tablet.png", full_page=True)
    assert errors == []
    context.close()


def test_a_running_game_has_no_replay_yet(server: ServerProcess, browser: Browser) -> None:
    player = Client(server.url, "Waiting").connect()
    game_id = player.call("create_game", {"hall": "duel", "join": True})["game"]["game_id"]
    context = _context_as(browser, server, None)
    page = context.new_page()
    page.goto(f"{server.url}/games/{game_id}/replay")
    expect(page.locator("#replay-error")).to_contain_text("opens when it is over")
    context.close()
    player.close()


def test_every_item_gets_an_icon(server: ServerProcess, browser: Browser, artifacts: Any) -> None:
    context = _context_as(browser, server, None)
    page = context.new_page()
    errors = _errors_of(page)
    check_icon_gallery(page, server.url, "minecraft", artifacts)
    docs_screenshot(page, "icons")
    page.get_by_label("Filter items").fill("planks")
    expect(page.locator("svg.item-icon")).to_have_count(11)
    page.screenshot(path=artifacts / "icons-planks.png")
    assert errors == []
    context.close()


def test_how_to_play_is_linked_from_the_nav(server: ServerProcess, browser: Browser, artifacts: Any) -> None:
    context = _context_as(browser, server, None)
    page = context.new_page()
    page.goto(f"{server.url}/games/none/replay")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="How to play").click()
    expect(page).to_have_url(f"{server.url}/how-to-play")
    for heading in ("Your goal", "Turns", "Trading", "Crafting", "Runs, fractions and fuel", "Value reports"):
        expect(page.get_by_role("heading", name=re.compile(heading))).to_be_visible()
    page.screenshot(path=artifacts / "how-to-play.png", full_page=True)
    context.close()


def test_replay_and_spectator_pages_pass_axe(
    server: ServerProcess, browser: Browser, trio_game: dict[str, Any], artifacts: Any
) -> None:
    context = _context_as(browser, server, trio_game["players"][0])
    page = context.new_page()
    for path, ready in (
        (f"/games/{trio_game['game_id']}/replay?view=0&turn=1", "#replay[data-ready=true]"),
        (f"/games/{trio_game['game_id']}/watch", "#watch[data-ready=true]"),
        ("/how-to-play", "main"),
        ("/rulesets/minecraft/icons", "#icon-gallery[data-ready=true]"),
    ):
        page.goto(server.url + path)
        expect(page.locator(ready)).to_be_attached()
        assert axe_violations(page) == [], path
    page.goto(f"{server.url}/games/{trio_game['game_id']}/watch")
    page.set_viewport_size({"width": 768, "height": 1024})
    expect(page.locator("#watch[data-ready=true]")).to_be_attached()
    assert_fits_width(page)
    page.screenshot(path=artifacts / "watch-tablet.png", full_page=True)
    context.close()
