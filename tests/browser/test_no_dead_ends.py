"""Issue 20 item 5 (no dead ends) in Debian's chromium against a live server: a player resigns (the game goes
on for the others), the game ends, another player starts a rematch and the first joins it from the live
"Join the rematch" link; timelines say "passed" / "no trade this turn" without telling a third player which;
"(or passes)" only where passing is allowed; a creator cancels a game they did not join; a player leaves a
waiting game; the lobby offers no Join for a seat the viewer cannot take and the waiting room says what an
agent's seat needs. Screenshots go to tests/artifacts/ (deadends-*.png).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import assert_fits_width, axe_violations, lab_halls, log_in, page_errors
from e2e_helpers import MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, BrowserContext, Page, expect

# two hands that cannot finish quickly: the game is decided by the resignations, not by a craft
DUEL = {
    "hands": [{"oak_log": 2, "cobblestone": 3}, {"stick": 2, "coal": 1}],
    "targets": [{"stone_pickaxe": 1}, {"torch": 8}],
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("deadends")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    lab_halls(
        config,
        folder / "instances",
        {"nopass": {"record": DUEL, "title": "No passing", "game": {"allow_pass": False}}},
    )
    # the trio hall of the test settings, with seat 1 proposing first
    config["halls"]["trio"]["game"] = {**config["halls"]["trio"].get("game", {}), "first_proposer": 0}
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


def person(browser: Browser, base_url: str, name: str, size: tuple[int, int] = (1280, 900)) -> Page:
    context: BrowserContext = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    log_in(page, base_url, name)
    return page


def create(page: Page, hall: str, seats: list[str], join: bool = True) -> str:
    """Create a game of ``hall`` from the lobby with these seat kinds (option values): its id."""
    page.get_by_label("Game mode").select_option(hall)
    for index, kind in enumerate(seats):
        page.get_by_label(f"Seat {index + 1}", exact=True).select_option(kind)
    if not join:
        page.get_by_label("Take the first open seat myself").uncheck()
    page.locator("#create-submit").click()
    page.wait_for_url(re.compile(r"/games/[^/]+(/watch)?$"))
    return page.url.split("/games/")[1].split("/")[0]


def lobby_row(page: Page, game_id: str, table: str = "#games-panel") -> object:
    return page.locator(f"{table} tr", has=page.locator("code.game-id", has_text=game_id))


def timeline(page: Page) -> str:
    return page.locator("#room-timeline").inner_text()


def test_resign_rematch_and_the_timeline_of_a_pass(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    ada = person(browser, server.url, "Ada")
    bob = person(browser, server.url, "Bob", (390, 844))
    errors = page_errors(ada) + page_errors(bob)
    game_id = create(ada, "trio", ["open", "open", "bot:random"])
    expect(ada.locator("#room-lobby-text")).to_contain_text("still open: seat 2.")
    bob.goto(server.url + "/")
    lobby_row(bob, game_id).get_by_role("link", name="Join").click()
    expect(bob.locator("#room[data-ready=true]")).to_be_attached()

    # seat 1 (Ada) proposes first and passes: Bob, a third party, learns there was no trade, not why
    expect(ada.get_by_role("button", name="Pass")).to_be_visible()
    expect(ada.locator("#room-timeline")).to_contain_text("proposes a trade (or passes)")
    ada.get_by_role("button", name="Pass").click()
    expect(ada.locator("#room-timeline")).to_contain_text("passed: no proposal this turn")
    expect(bob.locator("#room-timeline .timeline-gap")).to_contain_text(
        "No trade this turn: Ada passed or was turned down (only the two players involved know which)."
    )
    assert "passed: no proposal" not in timeline(bob)
    bob.locator("#room-timeline").scroll_into_view_if_needed()
    bob.screenshot(path=artifacts / "deadends-timeline-third-party-phone.png", full_page=True)

    # Ada resigns: a confirmation first, then the game goes on for Bob and the bot
    ada.get_by_role("button", name="Resign…").click()
    confirm = ada.locator("#room-resign-confirm")
    expect(confirm).to_contain_text("The game goes on for the others")
    expect(ada.get_by_role("button", name="Keep playing")).to_be_focused()
    assert axe_violations(ada) == []
    ada.locator("#room-resign-bar").screenshot(path=artifacts / "deadends-resign-confirm.png")
    ada.get_by_role("button", name="Keep playing").click()
    expect(confirm).to_be_hidden()
    ada.get_by_role("button", name="Resign…").click()
    ada.get_by_role("button", name="Yes, resign").click()
    resigned = ada.locator("#room-resigned")
    expect(resigned).to_be_visible()
    expect(resigned.get_by_role("link", name="Back to the lobby")).to_be_visible()
    assert axe_violations(ada) == []
    expect(ada.get_by_role("button", name="Resign…")).to_be_hidden()
    expect(bob.locator("#room-timeline")).to_contain_text("Ada left the game.")
    expect(bob.locator("#room-end")).to_be_hidden()
    # both rooms mark Ada's hand as the board does: she left; Bob's and the bot's hands carry no such badge
    for page in (ada, bob):
        expect(page.locator('#room-hands .board-hand[aria-label^="Ada"] .badge-left')).to_have_text("left")
        expect(page.locator("#room-hands .badge-left")).to_have_count(1)
    ada.screenshot(path=artifacts / "deadends-resigned.png", full_page=True)

    # Bob resigns too: one player is left, so the game ends; Bob asks for a rematch
    bob.get_by_role("button", name="Resign…").click()
    expect(bob.locator("#room-resign-confirm")).to_contain_text("the game ends now")
    assert_fits_width(bob)
    bob.get_by_role("button", name="Yes, resign").click()
    expect(bob.locator("#room-end")).to_be_visible()
    expect(ada.locator("#room-end")).to_be_visible()
    expect(ada.locator("#room-resigned")).to_be_hidden()
    expect(ada.locator("#room-rematch-link")).to_be_hidden()
    bob.locator("#room-rematch").screenshot(path=artifacts / "deadends-rematch-offer-phone.png")
    bob.get_by_role("button", name="Start a rematch").click()
    bob.wait_for_url(re.compile(r"/games/(?!" + re.escape(game_id) + r")[^/]+$"))
    rematch_id = bob.url.rsplit("/", 1)[1]
    expect(bob.locator("#room-lobby")).to_be_visible()

    # Ada, still on the finished game's page, is offered the rematch live
    link = ada.get_by_role("link", name="Join the rematch")
    expect(link).to_be_visible()
    expect(ada.locator("#room-rematch-start")).to_be_hidden()
    ada.locator("#room-rematch").screenshot(path=artifacts / "deadends-rematch-join.png")
    link.click()
    ada.wait_for_url(f"**/games/{rematch_id}")
    expect(ada.locator("#room-status")).not_to_contain_text("Waiting for the other players")
    expect(bob.locator("#room-lobby")).to_be_hidden()  # every seat taken: it started
    expect(bob.locator("#room-players")).to_contain_text("random bot")
    assert errors == []
    for page in (ada, bob):
        page.context.close()


def test_no_pass_rule_leaves_passing_out_of_the_timeline(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    ada = person(browser, server.url, "Nia")
    create(ada, "nopass", ["open", "bot:random"])
    expect(ada.locator("#room-timeline li[data-type=phase_started]").first).to_contain_text(
        "proposes a trade."
    )
    assert "(or passes)" not in timeline(ada)
    expect(ada.get_by_role("button", name="Pass")).to_be_hidden()
    ada.context.close()


def test_cancel_leave_and_seats_the_viewer_cannot_take(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    ada = person(browser, server.url, "Cleo")
    bob = person(browser, server.url, "Dan", (390, 844))
    errors = page_errors(ada) + page_errors(bob)

    # a game created without joining it is in My games, with Cancel
    unjoined = create(ada, "trio", ["open", "open", "open"], join=False)
    ada.goto(server.url + "/")
    row = lobby_row(ada, unjoined, "#mine-panel")
    expect(row).to_contain_text("created by you, not joined")
    ada.set_viewport_size({"width": 768, "height": 1024})
    assert_fits_width(ada)
    assert axe_violations(ada) == []
    ada.locator("#mine-panel").screenshot(path=artifacts / "deadends-my-games-unjoined.png")
    row.get_by_role("button", name=f"Cancel game {unjoined}").click()
    expect(lobby_row(ada, unjoined, "#mine-panel")).to_have_count(0)
    expect(lobby_row(ada, unjoined).get_by_role("link", name="Join")).to_have_count(0)  # listed as over

    # a duel whose other seat is an agent's: Dan is told why he cannot join; the room says what it needs
    agent_game = create(ada, "duel", ["open", "agent"])
    expect(ada.locator("#room-lobby-text")).to_contain_text("Seat 2 is for a program (an API agent)")
    expect(ada.locator("#room-agent-command")).to_contain_text(
        f"tradecraft bot --server {server.url} --game {agent_game} --seat 1"
    )
    expect(ada.locator("#room-lobby-link")).to_be_hidden()  # no seat left for people: no link to share
    ada.set_viewport_size({"width": 390, "height": 844})
    assert_fits_width(ada)
    assert axe_violations(ada) == []
    ada.screenshot(path=artifacts / "deadends-waiting-for-agent-phone.png", full_page=True)
    ada.set_viewport_size({"width": 1280, "height": 900})
    bob.goto(server.url + "/")
    row = lobby_row(bob, agent_game)
    expect(row).to_contain_text("for a program (an API agent)")
    expect(row.get_by_role("link", name="Join")).to_have_count(0)
    # Cleo's own game: no Join for her either, but her seat
    ada.goto(server.url + "/")
    expect(lobby_row(ada, agent_game).get_by_role("link", name="Open your seat")).to_be_visible()

    # Dan joins a waiting trio and leaves it from the room; the seat opens again for Cleo to see
    trio = create(ada, "trio", ["open", "open", "open"])
    bob.goto(server.url + "/")
    assert_fits_width(bob)
    assert axe_violations(bob) == []
    bob.screenshot(path=artifacts / "deadends-lobby-offers-phone.png", full_page=True)
    lobby_row(bob, trio).get_by_role("link", name="Join").click()
    expect(bob.locator("#room[data-ready=true]")).to_be_attached()
    expect(ada.locator("#room-players")).to_contain_text("Dan")
    leave = bob.get_by_role("button", name="Leave this game")
    expect(leave).to_be_visible()
    bob.screenshot(path=artifacts / "deadends-leave-phone.png", full_page=True)
    leave.click()
    bob.wait_for_url(server.url + "/")
    expect(ada.locator("#room-players")).not_to_contain_text("Dan")
    expect(ada.locator("#room-lobby-text")).to_contain_text("seat 2, seat 3")
    expect(lobby_row(bob, trio).get_by_role("link", name="Join")).to_be_visible()

    # from the lobby too: join, then Leave in My games
    lobby_row(bob, trio).get_by_role("link", name="Join").click()
    expect(bob.locator("#room[data-ready=true]")).to_be_attached()
    bob.goto(server.url + "/")
    lobby_row(bob, trio, "#mine-panel").get_by_role("button", name=f"Leave game {trio}").click()
    expect(lobby_row(bob, trio, "#mine-panel")).to_have_count(0)
    expect(ada.locator("#room-players")).not_to_contain_text("Dan")

    # Dan sits again; Cleo cancels the game from another tab: Dan's room says so and where to go
    lobby_row(bob, trio).get_by_role("link", name="Join").click()
    expect(bob.locator("#room[data-ready=true]")).to_be_attached()
    creator_tab = ada.context.new_page()
    creator_tab.goto(server.url + "/")
    lobby_row(creator_tab, trio, "#mine-panel").get_by_role("button", name=f"Cancel game {trio}").click()
    closed = bob.locator("#room-closed")
    expect(closed).to_contain_text("Its creator cancelled it")
    expect(closed.get_by_role("link", name="Back to the lobby")).to_be_visible()
    expect(bob.locator("#room-status")).to_have_text("Closed before it started.")
    expect(bob.get_by_role("button", name="Leave this game")).to_be_hidden()
    bob.screenshot(path=artifacts / "deadends-cancelled-phone.png", full_page=True)
    assert errors == []
    for page in (ada, bob):
        page.context.close()


def test_in_a_duel_the_other_player_reads_passed(server: ServerProcess, browser: Browser) -> None:
    ada = person(browser, server.url, "Ola")
    bob = person(browser, server.url, "Per")
    game_id = create(ada, "duel", ["open", "open"])
    bob.goto(f"{server.url}/games/{game_id}")
    expect(bob.locator("#room[data-ready=true]")).to_be_attached()
    for page in (ada, bob):
        expect(page.locator("#room-hands-panel")).to_be_visible()  # the game has started
    ada_proposes = ada.get_by_role("button", name="Pass").is_visible()
    proposer, other, name = (ada, bob, "Ola") if ada_proposes else (bob, ada, "Per")
    proposer.get_by_role("button", name="Pass").click()
    # any proposal would have come to the other player: "passed" tells them nothing new
    expect(other.locator("#room-timeline .timeline-gap")).to_contain_text(
        f"{name} passed: no trade this turn."
    )
    expect(proposer.locator("#room-timeline .timeline-gap")).to_have_count(0)  # the proposer has its own line
    for page in (ada, bob):
        page.context.close()
