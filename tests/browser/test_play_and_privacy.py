"""Whole games in real browsers (Debian chromium through Playwright) against a live server, with every
Socket.IO frame each browser receives recorded and scanned for what its seat must not learn.

- Two people play the alchemy rule set against each other to the end (a rejected proposal with markup in
  the message and the reply; an accepted trade; crafting; the end screen; the replay).
- A newcomer logs in, creates a game against a built-in bot in the lobby, proposes, is refused an illegal
  proposal in plain words, accepts one of the bot's proposals and rejects another, reloads mid-game and
  sees the same state, and plays to the end.
- The third seat of a trio never receives a proposal it was not party to, or its rejection.
Screenshots of every screen go to tests/artifacts/.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import assert_fits_width, axe_violations, docs_screenshot, off_site_requests
from e2e_helpers import TRIO_ID, Client, MakeServer, ServerProcess, write_config
from playwright.sync_api import Browser, BrowserContext, Page, Route, WebSocket, expect

HOSTILE = "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"
# A file name nobody would write by chance: if it (or the instance id) reaches a browser, the test sees it.
ALCHEMY_STEM = "secretpool_q7x"
ALCHEMY_ID = f"alchemy/1p_v_1p/{ALCHEMY_STEM}#0"
# Ada (seat 0) needs wind (2 air, which Bob has); Bob needs lava (earth + fire, which Ada has).
ALCHEMY = {
    "hands": [{"earth": 2, "fire": 1}, {"air": 3, "water": 1}],
    "targets": [{"wind": 1}, {"lava": 1}],
}
# Nobody can win: the game runs to its last turn.
STALEMATE = {
    "hands": [{"cobblestone": 4, "oak_planks": 2}, {"stick": 4, "coal": 2}],
    "targets": [{"diamond_block": 1}, {"netherite_block": 1}],
}
STALEMATE_STEM = "stalemate_k2v"


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("play")
    config = write_config(folder)
    root = folder / "instances"
    (root / "alchemy" / "1p_v_1p").mkdir(parents=True, exist_ok=True)
    (root / "alchemy" / "1p_v_1p" / f"{ALCHEMY_STEM}.json").write_text(json.dumps([ALCHEMY]), "utf-8")
    (root / "minecraft" / "1p_v_1p" / f"{STALEMATE_STEM}.json").write_text(json.dumps([STALEMATE]), "utf-8")
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["halls"]["alchemy"] = {
        "title": "Alchemy duel",
        "ruleset": "alchemy",
        "players": 2,
        "instances": {"choice": "fixed", "ids": [ALCHEMY_ID], "root": str(root)},
        "game": {"max_turns": 4, "first_proposer": 0},
    }
    data["halls"]["versus_bot"] = {
        "title": "Against a bot",
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "fixed", "ids": [f"minecraft/1p_v_1p/{STALEMATE_STEM}#0"], "root": str(root)},
        # no passing: the bot proposes every other turn, so the newcomer gets proposals to answer
        "game": {"max_turns": 4, "first_proposer": 0, "allow_pass": False},
    }
    data["halls"]["fixed_bot"] = {  # seats fixed by the operator: the lobby shows them, greyed out
        "title": "Fixed seats",
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "fixed", "root": str(root)},
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "tom1"}],
        "allow_custom_seats": False,
        "game": {"max_turns": 3},
    }
    data["halls"]["banded"] = {  # the shipped standard set: big enough difficulty bands
        "title": "Banded duel",
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "random", "set": "standard"},
        "game": {"max_turns": 3, "deadlines": {"trade_propose": 300, "trade_decide": 300, "craft": 600}},
    }
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    return make_server(config)


class FrameLog:
    """Every Socket.IO frame a browser context's game pages (/games/...) receive, in order. (The lobby's
    own socket lists other games, finished ones with their instance ids, by design.)"""

    def __init__(self, context: BrowserContext) -> None:
        self.raw: list[str] = []
        context.on("page", lambda page: page.on("websocket", lambda socket: self._watch(socket, page)))

    def _watch(self, socket: WebSocket, page: Page) -> None:
        if "/games/" in page.url:
            socket.on("framereceived", lambda payload: self.raw.append(str(payload)))

    def while_running(self) -> list[tuple[str, Any]]:
        """(raw frame, decoded Socket.IO event or ack) for every frame received before the first one
        that tells the game is over (after that the instance id and every target may be shown)."""
        frames = []
        for frame in self.raw:
            match = re.match(r"^4[23]\d*(.*)$", frame, re.DOTALL)  # engine.io message, socket.io event/ack
            decoded = json.loads(match.group(1)) if match and match.group(1) else None
            if any(
                obj.get("type") in ("targets_revealed", "game_ended") or obj.get("status") in OVER
                for obj in walk(decoded)
            ):
                break
            frames.append((frame, decoded))
        return frames


OVER = ("finished", "aborted")


def walk(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object inside ``value``."""
    if isinstance(value, dict):
        yield value
        for inner in value.values():
            yield from walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from walk(inner)


def assert_frames_private(log: FrameLog, seat: int, own_target: dict[str, int], forbidden: list[str]) -> None:
    """What one seat's browser received while the game ran: its own target only, no other seat's
    crafting, no instance id, none of the ``forbidden`` texts (the instance's file name)."""
    frames = log.while_running()
    assert len(frames) > 10, "too few Socket.IO frames were recorded"
    assert len(frames) < len(log.raw), "the game's end was never received"
    for raw, message in frames:
        for secret in forbidden:
            assert secret not in raw, secret
        for obj in walk(message):
            if "target" in obj:
                assert obj["target"] in (own_target, None), obj
            assert "targets" not in obj, obj
            assert "crafting_hands" not in obj  # the researcher's view of every seat's crafting
            if obj.get("type") == "crafted":
                assert obj["payload"]["seat"] == seat, obj
            if obj.get("crafting_hand") is not None:
                assert obj.get("seat") == seat, obj  # a view's crafting hand is its own seat's
            assert obj.get("instance_id") is None, obj


def login(page: Page, server: ServerProcess, name: str) -> None:
    page.goto(server.url + "/")
    page.get_by_role("textbox", name="Display name").fill(name)
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#lobby[data-user]")).not_to_have_attribute("data-user", "")
    expect(page.locator("#lobby[data-ready=true]")).to_be_attached()  # its script set up forms and socket


def errors_of(page: Page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return errors


def craft(page: Page, recipe: str, runs: str) -> None:
    field = page.get_by_label(f"Runs of {recipe.replace('_', ' ')}", exact=True)  # names have no underscores
    field.fill(runs)
    field.locator("xpath=..").get_by_role("button", name="Craft").click()


def test_two_people_play_alchemy_to_the_end(server: ServerProcess, browser: Browser, artifacts: Path) -> None:
    ada_context = browser.new_context(viewport={"width": 1280, "height": 800})
    bob_context = browser.new_context(viewport={"width": 768, "height": 1024})
    ada_frames, bob_frames = FrameLog(ada_context), FrameLog(bob_context)
    off_site = [off_site_requests(context, server.url) for context in (ada_context, bob_context)]
    ada, bob = ada_context.new_page(), bob_context.new_page()
    errors = [errors_of(ada), errors_of(bob)]  # (one list each: a sum would be a copy, never filled)
    bob_name = "Bob"  # (markup in display names: tests/browser/test_lobby_and_room.py)

    login(bob, server, bob_name)  # Bob waits in the lobby: Ada's game appears there without a reload
    login(ada, server, "Ada")
    ada.get_by_label("Game mode").select_option("alchemy")
    ada.get_by_label("Seat 2").select_option("open")
    ada.get_by_role("button", name="Create and join").click()
    expect(ada.locator("#room[data-ready=true]")).to_be_attached()
    game_id = ada.url.rstrip("/").rsplit("/", 1)[1]
    expect(bob.get_by_role("row").filter(has_text=game_id)).to_contain_text("Ada")
    bob.screenshot(path=artifacts / "lobby-open-game-tablet.png", full_page=True)
    assert_fits_width(bob)
    bob.get_by_role("row").filter(has_text=game_id).get_by_role("link", name="Join").click()
    expect(bob.locator("#room[data-ready=true]")).to_be_attached()
    expect(ada.locator(".board-hand").filter(has_text=bob_name)).to_contain_text("online")

    # turn 1: Ada asks for two air for one earth, with markup in the message; Bob rejects with markup
    expect(ada.locator("#room-target")).to_contain_text("Wind")
    expect(ada.locator("#room-target")).to_contain_text("hidden")
    ada.get_by_role("button", name="Give 2 × Earth").click()
    ada.get_by_role("button", name="Ask for 3 × Air").click()
    ada.get_by_label("How many Air").fill("2")
    ada.get_by_label("Message (optional)").fill(HOSTILE)
    ada.get_by_role("button", name="Propose").click()
    expect(bob.locator("#room-decide-text")).to_contain_text(HOSTILE)
    expect(bob.locator("#room-decide-text")).to_contain_text("1 Earth")
    bob.get_by_label("Reply (optional, sent with your answer)").fill(HOSTILE)
    bob.screenshot(path=artifacts / "alchemy-decide-tablet.png", full_page=True)
    assert_fits_width(bob)
    bob.get_by_role("button", name="Reject").click()
    expect(ada.locator("#room-outcome")).to_contain_text("rejected your proposal")
    expect(ada.locator("#room-outcome")).to_contain_text(HOSTILE)
    expect(bob.locator("#room-outcome")).to_contain_text("You rejected")
    # the rejected proposal is in both parties' timelines, marked private
    expect(ada.locator("#room-timeline .badge-private")).not_to_have_count(0)
    ada.get_by_role("button", name="Finish crafting").click()
    bob.get_by_role("button", name="Finish crafting").click()

    # turn 2: Bob offers two air for earth and fire; Ada accepts; both craft their targets
    expect(bob.locator("#room-propose")).to_be_visible()
    bob.get_by_role("button", name="Give 3 × Air").click()
    bob.get_by_label("How many Air").fill("2")
    bob.get_by_role("button", name="Ask for 2 × Earth").click()
    bob.get_by_role("button", name="Ask for 1 × Fire").click()
    bob.get_by_label("How many Earth").fill("1")
    bob.get_by_role("button", name="Propose").click()
    expect(ada.locator("#room-decide")).to_be_visible()
    assert axe_violations(ada) == []
    ada.screenshot(path=artifacts / "alchemy-decide.png", full_page=True)
    assert_fits_width(ada)
    ada.get_by_role("button", name="Accept").click()
    expect(bob.locator("#room-outcome")).to_contain_text("accepted your proposal")
    craft(ada, "wind_from_air_and_air", "1")
    expect(ada.locator("#craft-hand")).to_contain_text("1 × Wind")
    craft(bob, "lava_from_earth_and_fire", "1")
    expect(bob.locator("#craft-hand")).to_contain_text("1 × Lava")
    # Ada's crafting is private until every seat finished: Bob's page shows no Wind in Ada's hand yet
    expect(bob.locator(".board-hand").filter(has_text="Ada")).not_to_contain_text("Wind")
    ada.get_by_role("button", name="Finish crafting").click()
    bob.get_by_role("button", name="Finish crafting").click()

    for page in (ada, bob):
        expect(page.locator("#room-end")).to_be_visible()
        expect(page.locator("#room-end-targets .board-hand")).to_have_count(2)
        expect(page.locator("#room-end-targets")).to_contain_text("Wind")
        expect(page.locator("#room-end-targets")).to_contain_text("Lava")
    expect(ada.locator("#room-end-text")).to_contain_text("Your score: 1")
    assert axe_violations(ada) == []
    ada.screenshot(path=artifacts / "alchemy-end.png", full_page=True)
    ada.evaluate("document.activeElement.blur()")
    docs_screenshot(ada, "room-end")
    bob.screenshot(path=artifacts / "alchemy-end-tablet.png", full_page=True)
    assert_fits_width(bob)

    for page in (ada, bob):
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img[src=x]").count() == 0
    assert_frames_private(ada_frames, 0, ALCHEMY["targets"][0], [ALCHEMY_STEM, ALCHEMY_ID])
    assert_frames_private(bob_frames, 1, ALCHEMY["targets"][1], [ALCHEMY_STEM, ALCHEMY_ID])

    # the replay follows the finished game; the researcher view is offered to admins only
    ada.get_by_role("link", name="Replay the game step by step").click()
    expect(ada.locator("#replay[data-ready=true]")).to_be_attached()
    assert "Researcher (everything)" not in ada.get_by_label("View as").locator("option").all_inner_texts()
    ada.get_by_role("button", name="Last").click()
    expect(ada.locator("#replay-event")).to_contain_text("Game over")
    assert ada.evaluate("window.__pwned") is None
    admin = browser.new_context(viewport={"width": 1280, "height": 800})
    admin_page = admin.new_page()
    login(admin_page, server, "Researcher")
    assert admin.request.post(server.url + "/api/admin/login", data={"password": "test-admin-password"}).ok
    admin_page.goto(f"{server.url}/games/{game_id}/replay")
    expect(admin_page.locator("#replay[data-ready=true]")).to_be_attached()
    admin_page.get_by_label("View as").select_option("researcher")
    expect(admin_page.locator("#replay-board")).to_contain_text("Full researcher state")
    admin_page.screenshot(path=artifacts / "replay-researcher.png", full_page=True)
    assert errors == [[], []]
    assert off_site == [[], []]  # lobby, room, end screen and replay: nothing from a CDN, works offline
    for context in (ada_context, bob_context, admin):
        context.close()


def test_a_newcomer_plays_a_built_in_bot_to_the_end(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    frames = FrameLog(context)
    page = context.new_page()
    errors = errors_of(page)
    page.goto(server.url + "/")
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / "lobby-first-visit.png", full_page=True)
    login(page, server, "Newcomer")
    page.get_by_label("Game mode").select_option("versus_bot")
    seat_two = page.get_by_label("Seat 2")
    offered = seat_two.locator("option").all_inner_texts()
    assert "Random bot (easy)" in offered and "random" not in offered and "Open (anyone)" in offered
    seat_two.select_option("bot:random")
    page.screenshot(path=artifacts / "lobby-new-game.png", full_page=True)
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]
    expect(page.locator("#room-status")).to_contain_text("Turn 1 of 4")
    expect(page.locator("#propose-pass")).to_be_hidden()  # this game mode allows no passing

    # illegal proposals are refused next to the button in a player's words (names, not seat numbers or
    # item ids); nothing changes: an empty one, then more coal than the bot holds
    refusal = page.locator("#room-propose-error")
    before = page.locator("#room-timeline li").count()
    page.get_by_role("button", name="Propose").click()
    expect(refusal).to_contain_text("Your proposal is empty: click items in your hand")
    assert refusal.get_attribute("data-code") == "empty_trade"
    page.get_by_role("button", name="Give 4 × Cobblestone").click()
    page.get_by_role("button", name="Ask for 2 × Coal").click()
    page.get_by_label("How many Coal").fill("5")
    page.get_by_role("button", name="Propose").click()
    expect(refusal).to_contain_text("Random bot holds only 2 Coal: you cannot ask for 5.")
    expect(refusal).to_contain_text("Nothing was sent.")
    assert refusal.get_attribute("data-code") == "item_not_held"
    assert "seat" not in (refusal.text_content() or "").lower()
    assert page.locator("#room-timeline li").count() == before
    page.screenshot(path=artifacts / "room-error.png", full_page=True)
    page.get_by_label("How many Coal").fill("1")
    page.get_by_role("button", name="Propose").click()
    expect(page.locator("#room-outcome")).to_contain_text("your proposal")  # the bot answered
    expect(page.locator("#room-propose-error")).to_be_hidden()

    decisions = iter(("Accept", "Reject"))
    for turn in range(1, 5):
        expect(page.locator("#room-status")).to_contain_text(f"Turn {turn} of 4")
        if turn % 2 == 0:  # the bot proposes; the newcomer accepts one and rejects the other
            expect(page.locator("#room-decide")).to_be_visible()
            choice = next(decisions)
            if choice == "Accept":
                page.screenshot(path=artifacts / "room-bot-proposal.png", full_page=True)
                docs_screenshot(page, "room")
            page.get_by_role("button", name=choice).click()
            expect(page.locator("#room-outcome")).to_contain_text(f"You {choice.lower()}ed")
        elif turn == 3:  # items have changed hands by now: give the first, ask for another
            give = page.get_by_role("button", name=re.compile("^Give ")).first
            item = give.inner_text().split("×")[-1].strip()
            give.click()
            # another item than the one given (the same item on both sides is refused); a gift if none
            asks = page.get_by_role("button", name=re.compile("^Ask for ")).filter(has_not_text=item)
            if asks.count():
                asks.first.click()
            page.get_by_role("button", name="Propose").click()
            expect(page.locator("#room-outcome")).to_contain_text("your proposal")
        expect(page.locator("#room-craft")).to_be_visible()
        if turn == 2:  # a reload mid-game shows exactly the same state
            bot_hand = page.locator(".board-hand").filter(has_text="random bot")
            expect(bot_hand).to_contain_text("done crafting")  # the bot has moved: nothing changes now
            status = page.locator("#room-status").text_content()
            hands = page.locator("#room-hands").text_content()
            timeline = page.locator("#room-timeline").text_content()
            page.reload()
            expect(page.locator("#room[data-ready=true]")).to_be_attached()
            expect(page.locator("#room-status")).to_have_text(status)
            expect(page.locator("#room-hands")).to_have_text(hands)
            expect(page.locator("#room-timeline")).to_have_text(timeline)
            expect(page.locator("#room-outcome")).to_contain_text("You accepted")
        page.get_by_role("button", name="Finish crafting").click()

    expect(page.locator("#room-end")).to_be_visible()
    expect(page.locator("#room-end-text")).to_contain_text("Nobody won")
    expect(page.locator("#room-end-text")).to_contain_text("Your score: 0")
    expect(page.locator("#room-end-targets")).to_contain_text("Netherite")  # the bot's target, revealed
    page.screenshot(path=artifacts / "room-end-vs-bot.png", full_page=True)
    timeline = page.locator("#room-timeline").inner_text()
    assert "accepted" in timeline and "rejected" in timeline
    assert_frames_private(frames, 0, STALEMATE["targets"][0], [STALEMATE_STEM])

    # my games: the finished game is listed with its result and replay
    page.goto(server.url + "/")
    mine = page.get_by_role("table", name="My games").get_by_role("row").filter(has_text=game_id)
    expect(mine).to_contain_text("finished")
    mine.get_by_role("link", name="Replay").click()
    expect(page.locator("#replay[data-ready=true]")).to_be_attached()
    assert axe_violations(page) == []
    assert errors == []
    context.close()


def test_a_third_seat_never_receives_a_proposal_it_was_not_party_to(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    """Cleo (seat 2, in the browser) plays a whole trio game in which Ada and Bob (socket clients) reject
    one proposal, trade once and craft privately; every frame Cleo's browser receives until the end is
    scanned: no proposal or reply she was not party to, no other seat's target or crafting."""
    ada, bob = Client(server.url, "Ada T").connect(), Client(server.url, "Bob T").connect()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    frames = FrameLog(context)
    page = context.new_page()
    errors = errors_of(page)
    try:
        game_id = ada.call("create_game", {"hall": "trio", "join": True})["game"]["game_id"]
        assert ada.call("join", {"game_id": game_id})["seat"] == 0  # in the room: online
        assert bob.call("join", {"game_id": game_id})["seat"] == 1
        login(page, server, "Cleo")
        page.goto(f"{server.url}/games/{game_id}")
        expect(page.locator("#room[data-ready=true]")).to_be_attached()
        expect(page.locator("#room-status")).to_contain_text("Turn 1 of 3")
        secret = f"Psst, only for Bob {uuid.uuid4().hex[:8]}"
        reply = f"No deal {uuid.uuid4().hex[:8]}"
        offer = {"to": 1, "offer": {"iron_ingot": 1}, "request": {"oak_planks": 2}, "message": secret}
        assert ada.act(game_id, "propose", **offer)["ok"]
        assert bob.act(game_id, "decide", accept=False, message=reply)["ok"]
        expect(page.locator("#room-craft")).to_be_visible()
        assert ada.act(game_id, "craft", recipe="stick", runs="1/2")["ok"]  # private until every seat is done
        page.screenshot(path=artifacts / "room-trio-outsider.png", full_page=True)
        text = page.locator("body").inner_text()
        assert secret not in text and reply not in text
        expect(page.locator(".board-hand").filter(has_text="Ada T")).not_to_contain_text("Stick")
        for client in (ada, bob):
            assert client.act(game_id, "finish_crafting")["ok"]
        page.get_by_role("button", name="Finish crafting").click()

        # turn 2: Bob's proposal to Ada is accepted (only the trade is public); both craft their targets
        expect(page.locator("#room-status")).to_contain_text("Turn 2 of 3")
        trade = {"to": 0, "offer": {"coal": 1}, "request": {"iron_ingot": 1}, "message": secret + " again"}
        assert bob.act(game_id, "propose", **trade)["ok"]
        assert ada.act(game_id, "decide", accept=True, message=reply + " accepted")["ok"]
        expect(page.locator("#room-timeline")).to_contain_text("traded")
        assert ada.act(game_id, "craft", recipe="torch", runs="1/4")["ok"]
        assert bob.act(game_id, "craft", recipe="shears", runs=1)["ok"]
        expect(page.locator(".board-hand").filter(has_text="Bob T")).not_to_contain_text("Shears")
        for client in (ada, bob):
            assert client.act(game_id, "finish_crafting")["ok"]
        page.get_by_role("button", name="Finish crafting").click()
        expect(page.locator("#room-end")).to_be_visible()
        expect(page.locator("#room-end-text")).to_contain_text("Won by Ada T and Bob T.")

        received = frames.while_running()
        assert len(received) < len(frames.raw)  # the end arrived: every frame before it is checked
        assert_frames_private(frames, 2, {"crafting_table": 1}, [TRIO_ID, "servertest", secret, reply])
        for _, message in received:
            for obj in walk(message):
                assert obj.get("type") not in ("proposed", "decided"), obj
                assert obj.get("pending_proposal") is None
        # presence: Ada's connection drops, Cleo's page says so
        ada_hand = page.locator("#room-hands .board-hand").filter(has_text="Ada T")
        expect(ada_hand).to_contain_text("online")
        ada.drop()
        expect(ada_hand).to_contain_text("offline")
        assert errors == []
    finally:
        context.close()
        ada.close()
        bob.close()


def test_difficulty_for_everyone_and_exact_tasks_for_admins_only(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    player = browser.new_context(viewport={"width": 1280, "height": 800})
    frames = FrameLog(player)
    page = player.new_page()
    errors = errors_of(page)
    login(page, server, "Chooser")
    page.get_by_label("Game mode").select_option("banded")
    difficulty = page.get_by_label("Difficulty")
    # every band, in order after "Random" (docs/difficulty.md: the standard set is labelled by its own
    # measured costs, so its medium band is big enough to offer)
    assert [t.split(" ")[0] for t in difficulty.locator("option").all_inner_texts()] == [
        "Random",
        "Easy",
        "Medium",
        "Hard",
    ]
    assert page.get_by_label("Exact task (admins only)").count() == 0  # an ordinary player never sees it
    page.get_by_label("Game mode").select_option("fixed_bot")
    expect(page.get_by_label("Seat 2")).to_be_disabled()
    expect(page.get_by_label("Seat 2").locator("option:checked")).to_have_text("ToM-1 bot (hard)")
    expect(difficulty).to_be_disabled()  # a fixed instance: nothing to choose
    page.get_by_label("Game mode").select_option("banded")
    expect(page.get_by_label("Seat 2").locator("option:checked")).to_have_text("Random bot (easy)")
    difficulty.select_option("hard")
    docs_screenshot(page, "lobby")
    frames.raw.clear()  # the lobby's own frames list the halls' bands: from here on, the game's frames
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    game_id = page.url.rstrip("/").rsplit("/", 1)[1]
    # a phase with a deadline shows its countdown
    expect(page.locator("#room-deadline")).to_contain_text(re.compile(r"Time left in this phase: [45]:\d\d"))
    text = page.locator("body").inner_text().lower()
    assert "hard" not in text and "standard" not in text  # neither the band nor the instance file
    raw = "\n".join(frames.raw)
    assert '"hard"' not in raw and "standard#" not in raw
    assert "difficulty" not in raw.replace("difficulties", "")
    assert errors == []

    admin = browser.new_context(viewport={"width": 1280, "height": 800})
    admin_page = admin.new_page()
    login(admin_page, server, "Operator")
    assert admin.request.post(server.url + "/api/admin/login", data={"password": "test-admin-password"}).ok

    held: list[Route] = []

    def hold_other_halls(route: Route) -> None:  # the list of the hall shown first answers last
        if "/halls/banded/" in route.request.url:
            route.continue_()
        else:
            held.append(route)

    admin_page.route("**/api/admin/halls/*/instances", hold_other_halls)
    admin_page.goto(server.url + "/")
    admin_page.get_by_label("Game mode").select_option("banded")
    exact = admin_page.get_by_label("Exact task (admins only)")
    expect(exact.locator("option")).to_have_count(41)  # "None" and the 40 instances of the set
    assert held, "the first hall's list was asked for"
    for route in held:  # its late answer must not add that hall's tasks to this list
        route.continue_()
    admin_page.wait_for_timeout(500)
    expect(exact.locator("option")).to_have_count(41)
    admin_page.unroute("**/api/admin/halls/*/instances")
    listed = " ".join(exact.locator("option").all_inner_texts())
    assert re.search(r"standard#5 · (easy|medium|hard), score", listed)
    exact.select_option("minecraft/1p_v_1p/standard#5")
    admin_page.get_by_label("Seat 2").select_option("bot:random")
    admin_page.screenshot(path=artifacts / "lobby-admin-exact-task.png", full_page=True)
    admin_page.get_by_role("button", name="Create and join").click()
    expect(admin_page.locator("#room[data-ready=true]")).to_be_attached()
    chosen = admin.request.get(server.url + "/api/admin/games?limit=1000").json()["games"]
    choices = {g["game_id"]: g["instance_choice"] for g in chosen}
    admin_game = admin_page.url.rstrip("/").rsplit("/", 1)[1]
    assert choices[admin_game]["instance_id"] == "minecraft/1p_v_1p/standard#5"
    assert choices[game_id]["choice"] == "band" and choices[game_id]["difficulty"] == "hard"
    player.close()
    admin.close()


def test_a_dropped_connection_comes_back_to_exactly_the_right_state(
    make_server: MakeServer, browser: Browser, artifacts: Path
) -> None:
    """The server goes away (SIGKILL) mid-game and comes back on the same port: the room says the connection
    is lost, reconnects by itself, and shows what happened meanwhile (Bob's proposal) without a reload."""
    first = make_server()
    bob = Client(first.url, "Bob D").connect()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        login(page, first, "Ada D")
        page.get_by_label("Game mode").select_option("duel")
        page.get_by_label("Seat 2").select_option("open")
        page.get_by_role("button", name="Create and join").click()
        expect(page.locator("#room[data-ready=true]")).to_be_attached()
        game_id = page.url.rstrip("/").rsplit("/", 1)[1]
        assert bob.call("join", {"game_id": game_id})["seat"] == 1
        page.get_by_role("button", name="Give 1 × Iron Ingot").click()
        page.get_by_role("button", name="Ask for 1 × Coal").click()
        page.get_by_role("button", name="Propose").click()
        expect(page.locator("#room-waiting")).to_be_visible()  # stored: Bob may answer
        assert bob.act(game_id, "decide", accept=False)["ok"]
        expect(page.locator("#room-outcome")).to_contain_text("rejected your proposal")
        page.get_by_role("button", name="Finish crafting").click()
        assert bob.act(game_id, "finish_crafting")["ok"]
        expect(page.locator("#room-status")).to_contain_text("Turn 2 of 3")
        before = page.locator("#room-timeline").text_content() or ""

        first.kill()  # no goodbye: the browser only notices the dropped socket
        expect(page.locator("#room-connection")).to_contain_text("Connection lost")
        expect(page.locator("#room-hands .badge-online")).to_have_count(0)  # presence is unknown now
        page.screenshot(path=artifacts / "room-connection-lost.png", full_page=True)
        make_server(first.config, port=first.port)
        bob.reconnect()  # the same login cookie: the secret key is kept in the store
        assert bob.call("join", {"game_id": game_id})["seat"] == 1
        proposal = {"to": 0, "offer": {"coal": 1}, "request": {"iron_ingot": 1}, "message": "second try"}
        assert bob.act(game_id, "propose", **proposal)["ok"]
        # the page reconnected by itself and shows the proposal made while it was away
        expect(page.locator("#room-connection")).to_have_text("", timeout=20000)
        expect(page.locator("#room-decide-text")).to_contain_text("second try", timeout=20000)
        after = page.locator("#room-timeline").text_content() or ""
        assert after.startswith(before[: len(before) // 2])  # the same history, nothing lost or doubled
        assert after.count("offered Bob D") == 1  # Ada's proposal (her name now carries "you")
        expect(page.locator("#room-hands .badge-online")).to_have_count(2)
    finally:
        context.close()
        bob.close()


def tab_to(page: Page, name: re.Pattern[str], presses: int = 120) -> None:
    """Press Tab until the focused control's text or label matches ``name`` (keyboard only)."""
    names = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "() => { const e = document.activeElement;"
            " return (e.getAttribute('aria-label') || e.innerText || e.value || '').trim(); }"
        )
        names.append(focused)
        if name.search(focused):
            outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
            assert outline != "none", f"no visible focus on {focused!r}"
            return
    seen = page.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
    raise AssertionError(f"Tab never reached a control named {name.pattern!r} (last: {seen}) {names[-15:]}")


def test_a_keyboard_alone_creates_a_game_and_proposes_a_trade(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(server.url + "/")
    tab_to(page, re.compile("^$"))  # the display name field (empty, no label text of its own)
    page.keyboard.type("Keys")
    page.keyboard.press("Enter")
    expect(page.locator("#lobby[data-user=Keys]")).to_be_attached()
    tab_to(page, re.compile("players · minecraft rules"))  # the game mode
    page.keyboard.press("End")  # a select moves with the arrow, Home and End keys
    expect(page.get_by_label("Game mode")).not_to_have_value("duel")
    page.get_by_label("Game mode").select_option("versus_bot")  # (choose the test hall exactly)
    page.get_by_label("Game mode").focus()
    tab_to(page, re.compile("^Create and join$"))
    page.keyboard.press("Enter")
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    tab_to(page, re.compile(r"^Give\b"))
    page.keyboard.press("Enter")
    # the redraw keeps the focus on the same item: Enter again gives one more
    page.keyboard.press("Enter")
    expect(page.get_by_label("How many Cobblestone")).to_have_value("2")
    tab_to(page, re.compile(r"^Ask for\b"))
    page.keyboard.press("Enter")
    tab_to(page, re.compile("^Propose$"))
    page.screenshot(path=artifacts / "room-keyboard-focus.png")
    page.keyboard.press("Enter")
    expect(page.locator("#room-outcome")).to_contain_text("your proposal")
    context.close()


def test_a_full_game_or_no_name_sends_the_visitor_somewhere_useful(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    ada, bob = Client(server.url, "Ada F").connect(), Client(server.url, "Bob F").connect()
    try:
        game_id = ada.call("create_game", {"hall": "duel", "join": True})["game"]["game_id"]
        assert bob.call("join", {"game_id": game_id})["seat"] == 1
        anonymous = browser.new_context(viewport={"width": 1280, "height": 800})
        page = anonymous.new_page()
        page.goto(f"{server.url}/games/{game_id}")
        expect(page.locator("#room-error")).to_contain_text("Log in first")
        page.get_by_role("link", name="Choose a display name in the lobby").click()
        login(page, server, "Late")
        page.goto(f"{server.url}/games/{game_id}")
        expect(page.locator("#room-error")).to_contain_text("every seat is taken")
        page.screenshot(path=artifacts / "room-game-full.png")
        expect(page.locator(".room-layout")).to_be_hidden()  # no empty panels around the refusal
        page.get_by_role("link", name="Open the spectator page").click()
        expect(page.locator("#watch[data-ready=true]")).to_be_attached()
        # the lobby lists the running game with a link to watch it
        page.goto(server.url + "/")
        running = page.get_by_role("table", name="Running").get_by_role("row").filter(has_text=game_id)
        expect(running).to_contain_text("Ada F")
        running.get_by_role("link", name="Watch").click()
        expect(page).to_have_url(f"{server.url}/games/{game_id}/watch")
        expect(page.locator("#watch[data-ready=true]")).to_be_attached()
        expect(page.locator(".board-hand")).to_have_count(2)
        anonymous.close()
    finally:
        ada.close()
        bob.close()
