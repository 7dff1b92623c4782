"""A player picks an LLM opponent from the lobby and plays it to the end screen, in Debian's chromium.

The server lists two models in ``bots.models``: one served by the project's scripted OpenAI-compatible
server (the real ``llm`` policy: LangChain ChatOpenAI over HTTP), one whose provider is down. The lobby
offers both by name with description, cost note and availability, the second one unavailable with the
reason; the built-in bots appear by the names their policies declare, never by raw ids. The game itself is
played by :func:`play_duel_against_the_model` (kept apart so later tests can assert more of the end screen).
Screenshots of the lobby's choices (desktop and phone) and of the end go to tests/artifacts/.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from conftest import assert_fits_width, axe_violations, log_in, page_errors
from e2e_helpers import MakeServer, ServerProcess, free_port, write_config
from playwright.sync_api import Browser, Page, expect

from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer

HALL = "versus_llm"
MODEL_NAME = "Scripted GPT"
DOWN_NAME = "Offline model"


@pytest.fixture(scope="module")
def model_server() -> Iterator[OpenAITestServer]:
    """The scripted model: accepts every proposal it can pay for, and says why before each move."""
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1, explain=True)) as server:
        yield server


@pytest.fixture(scope="module")
def server(
    make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory, model_server: OpenAITestServer
) -> ServerProcess:
    folder = tmp_path_factory.mktemp("llm-opponent")
    config = write_config(folder)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["bots"]["models"] = [
        {
            "name": MODEL_NAME,
            "description": "A language model that answers from a script: it accepts fair trades.",
            "spec": f"llm:openai:test-model?base_url={model_server.base_url}&tom=0,1&timeout=10&backoff=0.01",
            "cost_note": "free (a local test server)",
        },
        {
            "name": DOWN_NAME,
            "description": "A model whose provider does not answer.",
            "spec": f"llm:openai:test-model?base_url=http://127.0.0.1:{free_port()}/v1",
            "cost_note": "about $0.01 a game",
        },
    ]
    data["bots"]["move_delay_seconds"] = 0.0
    data["halls"][HALL] = {
        **data["halls"]["duel"],
        "title": "Against an LLM",
        # the model reports what it believes (V0, V1) each turn: what the end screen can show later
        "game": {"max_turns": 2, "first_proposer": 0, "tom_orders": [[], [0, 1]]},
    }
    data["halls"]["fixed_seats"] = {  # the operator fixes the seats: a bot with options, a model of its own
        **data["halls"]["trio"],
        "title": "Fixed seats",
        "seats": [
            {"kind": "open"},
            {"kind": "bot", "bot": "tom1?race=0"},
            {"kind": "bot", "bot": "llm:openai:hall-model?tom=0"},
        ],
        "allow_custom_seats": False,
    }
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    server = make_server(config, env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    # the lobby orders the models by what their checks found: wait for both (started with the server)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        opponents = requests.get(f"{server.url}/api/bots", timeout=10).json()["opponents"]
        if all(o["available"] is not None for o in opponents if o["kind"] == "llm"):
            break
        time.sleep(0.2)
    return server


def craft(page: Page, recipe: str, runs: str, made: str) -> None:
    """Craft ``runs`` of ``recipe`` from "What you can craft now" until ``made`` shows in the hand: the list
    re-renders when news arrives (the model's moves), and a click that lands on a list being replaced is
    lost, so a busy machine may need a second try."""
    for _ in range(3):
        field = page.get_by_label(f"Runs of {recipe}", exact=True)
        field.fill(runs)
        field.locator("xpath=..").get_by_role("button", name="Craft").click()
        try:
            expect(page.locator("#craft-hand")).to_contain_text(made, timeout=5_000)
            return
        except AssertionError:
            continue
    expect(page.locator("#craft-hand")).to_contain_text(made)


def play_duel_against_the_model(page: Page, timeout: float = 120) -> None:
    """From the room of the duel against the model (seat 1 the player's, the duel of tests/e2e_helpers.py:
    the player needs a torch): offer the iron ingot for the model's coal, craft a torch from the coal,
    finish crafting, and answer anything else (reject a proposal, finish a craft phase) until the end
    screen shows."""
    expect(page.locator("#room-propose")).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Give 1 × Iron Ingot").click()
    page.get_by_role("button", name="Ask for 1 × Coal").click()
    page.get_by_label("Message (optional)").fill("My ingot for your coal?")
    page.get_by_role("button", name="Propose").click()
    expect(page.locator("#room-outcome")).to_contain_text("accepted your proposal", timeout=30_000)
    crafted = False
    deadline = time.monotonic() + timeout
    while not page.locator("#room-end").is_visible():
        assert time.monotonic() < deadline, "the game did not end"
        if page.locator("#room-decide").is_visible():
            page.get_by_role("button", name="Reject").click()
        elif page.locator("#room-propose").is_visible() and page.locator("#propose-pass").is_visible():
            page.locator("#propose-pass").click()
        elif page.locator("#craft-finish").is_visible() and page.locator("#craft-finish").is_enabled():
            if not crafted:
                craft(page, "stick", "1/2", "Stick")
                craft(page, "torch", "1/4", "Torch")
                crafted = True
            page.locator("#craft-finish").click()
        page.wait_for_timeout(250)


def wait_for_the_models(page: Page) -> None:
    """The lobby's script has run and knows whether the scripted model answers: a model still being checked
    when the page was made says so ("checking"), and the page asks again until the server knows."""
    expect(page.locator("#lobby[data-ready=true]")).to_be_attached()
    option = page.get_by_label("Seat 2").locator("option", has_text=MODEL_NAME)
    expect(option).to_have_text(f"{MODEL_NAME} (LLM)", timeout=15_000)


def choose_the_model(page: Page) -> None:
    """In the lobby: the LLM hall, and the listed model for seat 2."""
    page.get_by_label("Game mode").select_option(HALL)
    page.get_by_label("Seat 2").select_option(label=f"{MODEL_NAME} (LLM)")


def test_a_player_picks_the_llm_opponent_in_the_lobby_and_plays_it_to_the_end(
    server: ServerProcess, browser: Browser, model_server: OpenAITestServer, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = page_errors(page)
    log_in(page, server.url, "Model fan")
    wait_for_the_models(page)
    seat_two = page.get_by_label("Seat 2")
    offered = seat_two.locator("option").all_inner_texts()
    # plain names, never raw ids; the offline model is shown, unavailable and not selectable
    assert (
        f"{MODEL_NAME} (LLM)" in offered and "Random bot (easy)" in offered and "ToM-1 bot (hard)" in offered
    )
    assert not any(re.fullmatch(r"(tom\d|random|llm:.*|best_response|item_fixated)", o) for o in offered)
    assert not any("Simulated" in o for o in offered)  # a test stand-in is not offered to players
    # models that can play come first
    assert offered.index(f"{MODEL_NAME} (LLM)") < offered.index(f"{DOWN_NAME} (LLM, unavailable)")
    down = seat_two.locator("option", has_text=DOWN_NAME)
    expect(down).to_have_text(f"{DOWN_NAME} (LLM, unavailable)", timeout=15_000)
    expect(down).to_be_disabled()

    # seats a game mode fixes to bots the lobby does not offer: plain names too
    page.get_by_label("Game mode").select_option("fixed_seats")
    expect(page.get_by_label("Seat 2").locator("option:checked")).to_have_text(
        "ToM-1 bot (set by this game mode)"
    )
    expect(page.get_by_label("Seat 3").locator("option:checked")).to_have_text("LLM: openai:hall-model")

    choose_the_model(page)
    note = page.locator("#create-seat-1-about")
    expect(note).to_contain_text(f"{MODEL_NAME} · language model (LLM) · free (a local test server)")
    expect(note).to_contain_text("it accepts fair trades")
    assert seat_two.get_attribute("aria-describedby") == "create-seat-1-about"
    page.get_by_text("About the opponents").click()
    guide = page.locator("#opponents-guide")
    offline = guide.locator(".opponent-entry", has_text=DOWN_NAME)
    expect(offline).to_contain_text("unavailable")
    expect(offline).to_contain_text("Why: its provider cannot be reached right now")  # details: the log
    assert model_server.base_url not in page.content() and "base_url" not in page.content()
    expect(offline).to_contain_text("about $0.01 a game")
    expect(guide.locator(".opponent-entry", has_text="ToM-1 bot")).to_contain_text(
        "Guesses your secret target"
    )
    assert axe_violations(page) == []
    page.screenshot(path=artifacts / "lobby-llm-opponents.png", full_page=True)

    asked_before = len(model_server.requests)
    page.get_by_role("button", name="Create and join").click()
    expect(page.locator("#room[data-ready=true]")).to_be_attached()
    expect(page.locator("#room-hands")).to_contain_text(MODEL_NAME, timeout=30_000)  # the seat's name
    play_duel_against_the_model(page)

    expect(page.locator("#room-end-text")).to_contain_text("Won by you", timeout=30_000)
    expect(page.locator("#room-end-targets")).to_contain_text("Shears")  # the model's target, revealed
    # what the model believed: its V0/V1 reports beside the truth, charted, and why it moved (its own words)
    beliefs = page.locator("#room-beliefs article.beliefs-seat")
    expect(beliefs).to_have_count(1, timeout=30_000)
    expect(beliefs).to_contain_text(MODEL_NAME)
    expect(beliefs.locator("svg.beliefs-chart").first).to_be_visible()
    expect(beliefs.locator("svg.beliefs-items circle.beliefs-truth").first).to_be_attached()
    beliefs.locator("details.beliefs-reasoning summary").click()
    expect(beliefs.locator("details.beliefs-reasoning li").first).to_contain_text("My plan")
    page.screenshot(path=artifacts / "llm-opponent-end.png", full_page=True)
    page.locator("#room-beliefs").screenshot(path=artifacts / "llm-opponent-beliefs.png")
    assert len(model_server.requests) > asked_before  # the model really played its seat
    assert errors == []
    context.close()


@pytest.mark.parametrize("width", [390, 768])
def test_the_opponent_choices_fit_a_phone_and_a_tablet(
    server: ServerProcess, browser: Browser, artifacts: Path, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 844})
    page = context.new_page()
    errors: list[Any] = page_errors(page)
    log_in(page, server.url, f"Phone {width}")
    wait_for_the_models(page)
    choose_the_model(page)
    page.get_by_text("About the opponents").click()
    expect(page.locator("#opponents-guide .opponent-entry").first).to_be_visible()
    assert_fits_width(page)
    for locator in (page.locator("#create-seat-1-about"), page.locator("#opponents-guide")):
        box = locator.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (width, box)
    page.screenshot(path=artifacts / f"lobby-llm-opponents-{width}.png", full_page=True)
    assert errors == []
    context.close()


class SlowModelList:
    """A provider whose ``GET /v1/models`` answers after ``seconds``: the lobby is made during the check."""

    def __init__(self, seconds: float) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                time.sleep(seconds)
                body = json.dumps({"object": "list", "data": [{"id": "test-model"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        poll = {"poll_interval": 0.05}
        threading.Thread(target=self._httpd.serve_forever, kwargs=poll, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def test_a_model_still_being_checked_says_so_then_shows_the_answer(
    make_server: MakeServer, tmp_path: Path, browser: Browser
) -> None:
    slow = SlowModelList(seconds=8)  # the page is made well within it, even on a busy machine
    try:
        config = write_config(tmp_path)
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        spec = f"llm:openai:test-model?base_url={slow.url}"
        data["bots"]["models"] = [{"name": "Slow model", "description": "Answers slowly.", "spec": spec}]
        data["bots"]["model_probe_timeout_seconds"] = 20
        config.write_text(yaml.safe_dump(data), encoding="utf-8")
        server = make_server(config)
        context = browser.new_context(viewport={"width": 1024, "height": 800})
        page = context.new_page()
        log_in(page, server.url, "Early bird")
        option = page.get_by_label("Seat 2").locator("option", has_text="Slow model")
        expect(option).to_have_text("Slow model (LLM, checking)")  # made before the provider answered
        page.get_by_label("Seat 2").select_option(label="Slow model (LLM, checking)")
        expect(page.locator("#create-seat-1-about")).to_contain_text("checking that it answers")
        # the page asks again and shows the answer, without a reload
        expect(option).to_have_text("Slow model (LLM)", timeout=30_000)
        expect(page.locator("#create-seat-1-about")).not_to_contain_text("checking")
        entry = page.locator("#opponents-guide .opponent-entry", has_text="Slow model")
        expect(entry).to_have_attribute("data-available", "yes")
        context.close()
    finally:
        slow.close()
