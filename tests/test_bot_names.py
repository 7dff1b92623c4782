"""Bots and listed models as players see them: one naming rule (BotRegistry.seat_name) for seats, ratings and
histories; specs shown without their options; a provider's URL and credentials never shown (review
findings 2, 7, 11 of issue 20)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from in_process import InProcessApp, MakeApp

from server.table.config import BotsSection, Settings
from server.table.model_catalog import ModelCatalog, redacted_url
from server.table.policies import BotRegistry
from server.table.ratings import public_rating

SECRET = "S3CRET-PW"


def models(*specs: str) -> BotsSection:
    entries = [
        {"name": f"Model {i + 1}", "description": "d", "cost_note": "", "spec": s}
        for i, s in enumerate(specs)
    ]
    return BotsSection.model_validate({"models": entries, "model_probe_timeout_seconds": 1.0})


def test_a_base_url_with_credentials_in_the_environment_is_logged_redacted_and_never_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The operator's OPENAI_BASE_URL carries user:password@ and a query: the start logs it redacted, the
    probe of an unreachable provider logs its detail redacted, and players read a plain sentence."""
    environ = {
        "OPENAI_API_KEY": "sk-env",
        "OPENAI_BASE_URL": f"http://proxy:{SECRET}@127.0.0.1:9/v1?k={SECRET}",
    }
    catalog = ModelCatalog(models("llm:openai:test-model"), environ=environ)
    with caplog.at_level(logging.WARNING, logger="server.table.model_catalog"):
        catalog.check(lambda spec, seed: None, ["llm"])
        catalog.refresh()
    status = catalog.availability("llm:openai:test-model")
    assert status.available is False and status.reason == "its provider cannot be reached right now"
    assert "127.0.0.1" not in json.dumps(status.public())
    logged = caplog.text
    assert "OPENAI_BASE_URL carries credentials" in logged and "http://127.0.0.1:9/v1" in logged
    assert "cannot be reached" in logged and SECRET not in logged and "proxy" not in logged


def test_redacted_url_keeps_where_and_drops_who_and_the_query() -> None:
    assert redacted_url("https://u:p@host.example:8443/v1?api-key=x#f") == "https://host.example:8443/v1"
    assert redacted_url("http://10.0.0.5:8000/v1") == "http://10.0.0.5:8000/v1"


def test_listed_models_are_offered_without_options_and_built_from_their_own_spec() -> None:
    """Two entries differing only in their options are told apart by a number, never by their options; a
    seat names either by what the lobby offers and gets a policy built from that entry's full spec."""
    first = "llm:openai:test-model?base_url=http://10.0.0.5:8000/v1&tom=0"
    second = "llm:openai:test-model?base_url=http://10.0.0.6:8000/v1&tom=1"
    built: list[str] = []

    def factory(spec: str, seed: int) -> Any:
        built.append(spec)
        return object()

    registry = BotRegistry(
        factory=factory, names=lambda: ["llm", "random"], settings=Settings(bots=models(first, second))
    )
    offered = [o for o in registry.opponents() if o["kind"] == "llm"]
    assert [o["spec"] for o in offered] == ["llm:openai:test-model#1", "llm:openai:test-model#2"]
    assert "10.0.0" not in json.dumps([registry.opponents(), registry.seatable()])
    for shown, full, name in zip(
        ["llm:openai:test-model#1", "llm:openai:test-model#2"],
        [first, second],
        ["Model 1", "Model 2"],
        strict=True,
    ):
        registry.make(shown, 0)
        assert built[-1] == full and registry.seat_name(shown) == registry.seat_name(full) == name
    # a spec that is not listed keeps its name rule, without the options
    assert registry.seat_name("random?accept_probability=0.9") == "random bot"


@pytest.mark.parametrize(("mu", "sigma"), [(25.0, 8.333), (24.9, 8.0), (31.2, 1.1), (3.0, 5.0)])
def test_the_rating_is_the_low_end_of_the_range_shown(mu: float, sigma: float) -> None:
    row = public_rating(
        {
            "key": "bot:random?accept_probability=0.9",
            "name": "random bot",
            "mu": mu,
            "sigma": sigma,
            "games": 3,
            "wins": 1,
        }
    )
    low, high = row["interval"]
    assert row["rating"] == low and low <= row["mu"] <= high and row["spec"] == "random"


@pytest.fixture(scope="module")
def app(make_app: MakeApp) -> InProcessApp:
    return make_app(overrides={"ratings": {"min_games": 1}, "bots": {"move_delay_seconds": 0.0}})


def test_a_rated_bot_game_lists_its_bots_by_the_lobbys_name_not_the_creators(app: InProcessApp) -> None:
    """A creator names two bot seats (one spec with options): the game shows the chosen seat names, the
    leaderboard the bots' own names by the one rule, with specs without options; its page says what the
    range is."""
    creator = app.client("Seat Namer")
    seats = [
        {"kind": "bot", "bot": "random?accept_probability=0.9", "name": "Magnus"},
        {"kind": "bot", "bot": "tom0", "name": "Deep Blue"},
    ]
    status, created = creator.rest("POST", "/api/games", {"hall": "duel", "seats": seats})
    assert status == 201, created
    game_id = created["game"]["game_id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        game = creator.rest("GET", f"/api/games/{game_id}")[1]["game"]
        if game["status"] == "finished":
            break
        time.sleep(0.1)
    assert game["status"] == "finished", game
    assert [s["name"] for s in game["seats"]] == ["Magnus", "Deep Blue"]
    board: dict[str, Any] = {}
    while time.monotonic() < deadline:  # the leaderboard is cached for a few seconds
        board = app.client().rest("GET", "/api/leaderboard?provisional=0&limit=50")[1]
        if len(board["players"]) >= 2:
            break
        time.sleep(0.5)
    rows = {row["name"]: row for row in board["players"]}
    assert set(rows) == {"random bot", "tom0 bot"}, rows
    assert rows["random bot"]["spec"] == "random" and rows["tom0 bot"]["spec"] == "tom0"
    assert all(row["rating"] == row["interval"][0] for row in rows.values())
    page = app.http().get("/leaderboard").get_data(as_text=True)
    assert "Magnus" not in page and "random bot" in page and "accept_probability" not in page
    assert "± 3 ×" in page and "the range" in page.lower()
