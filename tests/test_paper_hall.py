"""The `paper` hall: the paper's protocol as the shipped settings declare it, played for real.

The app (in-process, over a real SQLite file) runs the shipped `paper` hall between two built-in bots, its
bot seats on their own threads as in a server; the lobby's instance order and first-proposer rotation are
checked on the table directly; the narration an LLM would read is checked on a game of the hall's settings."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from in_process import InProcessApp, MakeApp

from agents.bots.random_bot import RandomBot
from agents.narrator import narrate_events, observation
from craft_rules.loader import load_rule_set
from craft_rules.tasks import get_instance, instance_set_ids
from server.game import Game
from server.game.legal import legal_actions
from server.game.views import player_view
from server.store import open_store
from server.table.config import DEFAULT_CONFIG_PATH, HallSettings, load_settings
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.table.timers import DeadlineScheduler
from server.web.lobby import Lobby

ADA = Principal(id="user-ada", name="Ada", kind="human")


def shipped_paper_hall() -> dict[str, Any]:
    """The `paper` hall block exactly as settings.yaml ships it (YAML anchors resolved)."""
    return yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))["halls"]["paper"]


def test_the_shipped_paper_hall_is_the_papers_protocol() -> None:
    settings = load_settings(DEFAULT_CONFIG_PATH, environ={})
    hall = settings.halls["paper"]
    game = hall.game_settings()
    assert (hall.ruleset, hall.mode_name, hall.players) == ("minecraft", "1p_v_1p", 2)
    assert game.crafting_runs == "whole" and game.max_turns == 15 and not game.allow_pass
    assert all(
        game.deadlines.for_phase(p) is None for p in ("tom_report", "trade_propose", "trade_decide", "craft")
    )
    assert (game.scoring.sole_win, game.scoring.shared_win) == (3, 1)
    assert hall.instances.choice == "sequential" and hall.instances.rotate_first_proposer
    # the paper's three configurations against a zero-order baseline
    orders = {
        name: settings.halls[name].game_settings().tom_orders for name in ("paper", "paper_v1", "paper_v0")
    }
    assert orders == {"paper": [[0, 1, 2], [0]], "paper_v1": [[0, 1], [0]], "paper_v0": [[0], [0]]}


def test_the_paper_hall_plays_the_first_20_paper_instances_in_order_alternating_the_first_proposer(
    tmp_path: Path,
) -> None:
    settings = load_settings(
        DEFAULT_CONFIG_PATH,
        environ={},
        overrides={
            "server": {"data_dir": str(tmp_path)},
            "database": {"uri": f"sqlite:///{tmp_path / 'p.db'}"},
        },
    )
    store = open_store(settings.database_uri)
    scheduler = DeadlineScheduler(workers=1)
    try:
        table = Table(settings, store, scheduler, BotRegistry())
        lobby = Lobby(settings, store, table, BotRegistry())
        pool = lobby.instance_pool(settings.halls["paper"])
        assert pool == instance_set_ids("paper")[:20]
        made = [lobby.create_game("paper", ADA)["game_id"] for _ in range(42)]
        metas = [store.get_game(game_id) for game_id in made]
        assert [m["instance_id"] for m in metas] == pool + pool + pool[:2]
        # each pass through the 20 instances starts with the other seat
        assert [m["settings"]["first_proposer"] for m in metas] == [0] * 20 + [1] * 20 + [0] * 2
        assert all(m["settings"]["crafting_runs"] == "whole" for m in metas)
    finally:
        scheduler.close()
        store.close()


def test_hall_instance_options_are_checked() -> None:
    with pytest.raises(ValueError, match=r"ids or instances\.set"):
        HallSettings.model_validate({"instances": {"ids": ["a#0"], "set": "paper"}})
    with pytest.raises(ValueError, match="sequential"):
        HallSettings.model_validate({"instances": {"choice": "random", "rotate_first_proposer": True}})


def test_a_paper_game_tells_an_llm_the_whole_runs_rule_the_scoring_and_the_reveal() -> None:
    rules = load_rule_set("minecraft")
    hall = HallSettings.model_validate(shipped_paper_hall())
    game = Game.new(get_instance(instance_set_ids("paper")[0]), hall.game_settings(), rules, seed=3)
    bots = [RandomBot(seat, rules=rules) for seat in (0, 1)]
    rng = random.Random(0)
    while not game.finished:
        seat = rng.choice(sorted(game.waiting_for()))
        game.apply(seat, bots[seat].act(player_view(game, seat), legal_actions(game, seat)))
    assert game.turn <= 15
    text = observation(player_view(game, 0), game.events, rules)
    assert "A craft runs a recipe a whole number of times" in text
    assert "winning alone earns 3 points" in text and "each earns 1 point" in text
    assert "Passing is not allowed" in text and "after turn 15 at the latest" in text
    told = narrate_events(game.events, 1, rules)
    assert "Every target is revealed" in told and "Points:" in told


# --- the app -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def app(make_app: MakeApp, tmp_path_factory: pytest.TempPathFactory) -> InProcessApp:
    folder = tmp_path_factory.mktemp("paper")
    config = {
        "server": {"host": "127.0.0.1", "data_dir": str(folder / "data"), "log_level": "INFO"},
        "bots": {"move_delay_seconds": 0.0},
        "halls": {"paper": shipped_paper_hall()},
    }
    path = folder / "settings.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_app(path)


def test_two_bots_play_a_full_game_in_the_paper_hall(app: InProcessApp) -> None:
    watcher = app.client("watcher")
    try:
        status, created = watcher.rest(
            "POST",
            "/api/games",
            {"hall": "paper", "seats": [{"kind": "bot", "bot": "random"}, {"kind": "bot", "bot": "random"}]},
        )
        assert status == 201 and created["ok"], created
        game_id = created["game"]["game_id"]
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + 120
        while not any(e["type"] == "game_ended" for e in events):
            assert time.monotonic() < deadline, f"the game did not end; last events {events[-3:]}"
            after = events[-1]["n"] if events else -1
            status, page = watcher.rest("GET", f"/api/games/{game_id}/events?after={after}&wait=5")
            assert status == 200 and page["ok"], page
            events.extend(page["events"])
    finally:
        watcher.close()
    kinds = [e["type"] for e in events]
    started = events[0]["payload"]
    assert kinds[0] == "game_started" and started["max_turns"] == 15 and started["first_proposer"] == 0
    ended = events[-1]["payload"]
    assert kinds[-2:] == ["targets_revealed", "game_ended"] and ended["turn"] <= 15
    reveal = events[-2]["payload"]
    assert len(reveal["targets"]) == 2 and all(len(t) == 1 for t in reveal["targets"])
    expected = [3 if ended["winners"] == [s] else 1 if s in ended["winners"] else 0 for s in (0, 1)]
    assert reveal["scores"] == expected and reveal["winners"] == ended["winners"]
    # the players' ToM duties as configured: every turn opens with the value reports
    assert (
        sum(e["payload"].get("phase") == "tom_report" for e in events if e["type"] == "phase_started")
        == ended["turn"]
    )
