"""Who plays each seat is marked wherever a name appears, from the seat's kind the server sends (never from
the name's text): a person plays a built-in bot in a real browser against a live server, and the bot's name
carries its "bot" badge in the lobby (My games and the Running table), the game room (players bar, hands,
status, timeline, end screen), the spectator page and the replay; the person's own name carries "you" in
the room and "person" elsewhere. A person who tries the name "random bot" is refused on the login form with
the server's words. Screenshots of every screen go to tests/artifacts/ (badges-*.png)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import axe_violations, play_to_the_end
from e2e_helpers import ServerProcess
from jinja2 import Environment, FileSystemLoader, select_autoescape
from playwright.sync_api import Browser, Locator, expect

BOT_NAME = "random bot"  # the server's name for a "random" bot seat


def labels_of(scope: Locator) -> list[dict[str, str]]:
    """Every seat label under ``scope``: its name, its badge's kind, visible word and hover title."""
    return scope.locator(".seat-label").evaluate_all(
        """labels => labels.map(label => {
            const badge = label.querySelector('.seat-kind');
            return {
                name: label.querySelector('.seat-name').textContent,
                kind: badge ? badge.dataset.seatKind : '',
                word: badge ? badge.querySelector('[aria-hidden=true]').textContent : '',
                title: badge ? badge.title : '',
            };
        })"""
    )


def assert_bot_marked(scope: Locator, *, person: str, person_kinds: set[str]) -> None:
    """The bot's name carries the bot badge, the person's never does (and carries one of ``person_kinds``)."""
    labels = labels_of(scope)
    bots = [label for label in labels if label["name"] == BOT_NAME]
    assert bots, f"no label for {BOT_NAME!r} in {labels}"
    assert all(label["kind"] == "bot" and label["word"] == "bot" for label in bots), bots
    assert all(label["title"] == f"built-in bot (random): {BOT_NAME}" for label in bots), bots
    people = [label for label in labels if label["name"] == person]
    assert all(label["kind"] in person_kinds for label in people), people


def test_bots_and_people_are_marked_on_every_screen(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))

    # a person may not take a name that reads as a bot: the server's message on the login form
    page.goto(server.url + "/")
    page.get_by_role("textbox", name="Display name").fill(BOT_NAME)
    page.get_by_role("button", name="Continue").click()
    refusal = page.locator("#login-error")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text("cannot be or look like")
    expect(refusal).to_contain_text("bot")
    page.screenshot(path=artifacts / "badges-login-refused.png", full_page=True)
    expect(page.get_by_role("button", name="Continue")).to_be_visible()  # still logged out

    page.get_by_role("textbox", name="Display name").fill("Vesna")
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_text("You play as Vesna")).to_be_visible()
    page.get_by_label("Game mode").select_option("duel")
    page.get_by_label("Seat 2").select_option("bot:random")
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]

    # the room: players bar, hands and timeline; the person's own name says "you"
    players = page.locator("#room-players")
    expect(players.locator(".seat-kind-bot")).to_have_count(1)
    expect(players.locator(".seat-kind-you")).to_have_count(1)
    assert_bot_marked(players, person="Vesna", person_kinds={"you"})
    assert_bot_marked(page.locator("#room-hands"), person="Vesna", person_kinds={"you"})
    if page.locator("#propose-pass").is_visible():  # Vesna proposes first: pass, so the bot acts
        page.locator("#propose-pass").click()
    timeline = page.locator("#room-timeline")
    expect(timeline.locator(".seat-kind-bot").first).to_be_attached()
    assert_bot_marked(timeline, person="Vesna", person_kinds={"you"})
    # the badge's words are text for everyone: a screen reader hears who plays the seat
    spoken = timeline.locator(".seat-kind-bot").first.inner_text()
    assert "built-in bot" in spoken
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / "badges-room.png", full_page=True)

    # the lobby (server-rendered): My games and the Running table
    lobby = context.new_page()
    lobby.goto(server.url + "/")
    expect(lobby.locator("#lobby[data-ready=true]")).to_be_attached()
    mine = lobby.get_by_role("table", name="My games").get_by_role("row").filter(has_text=game_id)
    assert_bot_marked(mine, person="Vesna", person_kinds={"person"})
    running = lobby.get_by_role("table", name="Running").get_by_role("row").filter(has_text=game_id)
    assert_bot_marked(running, person="Vesna", person_kinds={"person"})
    assert "(bot)" not in (mine.text_content() or "")  # the old " (bot)" suffix is gone
    assert axe_violations(lobby) == []
    lobby.screenshot(path=artifacts / "badges-lobby.png", full_page=True)

    # the spectator page while the game runs
    watch = context.new_page()
    watch.goto(f"{server.url}/games/{game_id}/watch")
    expect(watch.locator("#watch[data-ready=true]")).to_be_attached()
    assert_bot_marked(watch.locator("#watch-board .board-hands"), person="Vesna", person_kinds={"person"})
    expect(watch.locator("#watch-timeline .seat-kind-bot").first).to_be_attached()
    watch.screenshot(path=artifacts / "badges-watch.png", full_page=True)
    watch.close()

    # the end screen: every seat's target card carries its badge
    play_to_the_end(page)
    assert_bot_marked(page.locator("#room-end-targets"), person="Vesna", person_kinds={"you"})
    page.screenshot(path=artifacts / "badges-room-end.png", full_page=True)

    # the replay: the board's hands and the timeline
    page.get_by_role("link", name="Replay the game step by step").click()
    expect(page.locator("#replay[data-ready=true]")).to_be_attached()
    page.get_by_role("button", name="Last").click()
    expect(page.locator("#replay-event")).to_contain_text("Game over")
    assert_bot_marked(page.locator("#replay-board .board-hands"), person="Vesna", person_kinds={"person"})
    # in running sentences only bots, agents and "you" are marked: the person's name stands alone
    assert_bot_marked(page.locator("#replay-timeline"), person="Vesna", person_kinds={""})
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / "badges-replay.png", full_page=True)

    lobby.reload()  # the finished game is listed with its badges too
    finished = lobby.get_by_role("table", name="Finished").get_by_role("row").filter(has_text=game_id)
    assert_bot_marked(finished, person="Vesna", person_kinds={"person"})
    assert errors == []
    context.close()


def seat(index: int, kind: str, name: str, bot: str | None = None) -> dict[str, Any]:
    """A taken seat as the server sends it (SeatInfo)."""
    accepts = kind if kind in ("bot", "agent") else "open"
    return {"seat": index, "accepts": accepts, "kind": kind, "name": name, "bot": bot, "taken": True}


# The kind decides the badge, whatever the name says.
SEATS = [
    seat(0, "human", "tom1 bot"),  # a person's name from before the name rule
    seat(1, "bot", "Ada", "tom1"),  # an operator's bot seat named like a person
    seat(2, "bot", "Gemma", "llm:openai:gpt-4o?tom=0,1"),
    seat(3, "agent", "Scripty"),
    seat(4, "human", "Lin", "random"),  # away: a built-in bot stands in, the seat is still a person's
]
EXPECTED_KINDS = ["person", "bot", "llm", "agent", "person"]

READ_LABELS = """const readLabels = root => [...root.querySelectorAll('.seat-label')].map(label => {
    const badge = label.querySelector('.seat-kind');
    return {
        name: label.querySelector('.seat-name').textContent,
        kind: badge.dataset.seatKind,
        word: badge.querySelector('[aria-hidden=true]').textContent,
        spoken: badge.querySelector('.visually-hidden').textContent,
        title: badge.title,
    };
});"""


def test_the_badge_follows_the_kind_and_the_lobby_draws_the_same_badges(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    """seat_label.js (room, replay, watch) and templates/_seat_label.html (lobby) mark the same seats with
    the same words: an `llm:` bot "LLM", an agent "agent", a person "person" even when the name reads as a
    bot, a bot "bot" even when its name reads as a person's."""
    templates = Path(__file__).resolve().parents[2] / "templates"
    environment = Environment(loader=FileSystemLoader(templates), autoescape=select_autoescape(["html"]))
    macro = environment.get_template("_seat_label.html").module.seat_label  # type: ignore[attr-defined]
    server_html = "".join(f"<p>{macro(seat)}</p>" for seat in SEATS)

    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url + "/how-to-play")  # any page of the site: the module loads from its origin
    drawn = page.evaluate(
        "async ([seats, serverHtml]) => {"
        + READ_LABELS
        + """
            const { seatLabel } = await import('/static/js/seat_label.js');
            const box = document.createElement('div');
            seats.forEach(seat => box.append(seatLabel(seats, seat.seat)));
            const parsed = new DOMParser().parseFromString(serverHtml, 'text/html').body;
            box.id = 'every-kind';
            box.className = 'players-bar';
            document.querySelector('main').prepend(box);  // for the screenshot
            return { js: readLabels(box), jinja: readLabels(parsed) };
        }""",
        [SEATS, server_html],
    )
    assert [label["kind"] for label in drawn["js"]] == EXPECTED_KINDS
    assert [label["name"] for label in drawn["js"]] == [seat["name"] for seat in SEATS]
    assert drawn["js"][2]["word"] == "LLM" and "openai:gpt-4o" in drawn["js"][2]["title"]
    assert drawn["js"][1]["title"] == "built-in bot (tom1): Ada"
    assert drawn["jinja"] == drawn["js"]
    page.locator("#every-kind").screenshot(path=artifacts / "badges-every-kind.png")
    context.close()
