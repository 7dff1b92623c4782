"""The random bot: always legal (the engine refuses anything else), varied, deterministic for a seed."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from agent_support import SMALL_INSTANCES
from suite_support import shipped_rule_set

from agents.bots import RandomBot, make_policy
from agents.local import derive_seed, play_local
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance, iter_instances, mode_for_players
from server.game import GameSettings
from server.game.policy import Policy


def own_instances(ruleset: str) -> list[TaskInstance]:
    out = []
    for index, (hands, targets) in enumerate(SMALL_INSTANCES[ruleset]):
        mode = mode_for_players(len(hands))
        out.append(TaskInstance(f"{ruleset}/{mode}/test#{index}", ruleset, mode, hands, targets))
    return out


def instances_to_play(ruleset: str, shipped_per_mode: int = 2) -> list[TaskInstance]:
    """The instances above plus the first few shipped ones of each mode (when the rule set ships any)."""
    found = own_instances(ruleset)
    per_mode: Counter[str] = Counter()
    for inst in iter_instances(ruleset):
        if per_mode[inst.mode] < shipped_per_mode:
            per_mode[inst.mode] += 1
            found.append(inst)
    return found


def needs(ruleset: str) -> None:
    shipped_rule_set(ruleset)  # fails, never skips, when a shipped rule set is missing


def bots(n: int, seed: int) -> list[Policy]:
    return [make_policy("random", derive_seed(seed, "seat", seat)) for seat in range(n)]


def settings_for(inst: TaskInstance, **extra: Any) -> GameSettings:
    return GameSettings(ruleset=inst.ruleset, max_turns=extra.pop("max_turns", 8), **extra)


class LegalityChecked:
    """Checks that each action's type is one the seat was told it may send (pass only when offered)."""

    def __init__(self, inner: Policy):
        self.inner = inner

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        action = self.inner.act(view, legal)
        assert action["type"] in legal and action["type"] != "resign", (action, legal)
        return action


@pytest.mark.parametrize("ruleset", ["minecraft", "alchemy"])
def test_random_bots_play_whole_games_legally_and_use_every_kind_of_move(ruleset: str) -> None:
    needs(ruleset)
    rules = load_rule_set(ruleset)
    kinds: Counter[str] = Counter()
    fractional_crafts = accepts = rejects = 0
    for inst in instances_to_play(ruleset):
        n = inst.players
        variants = [
            {},
            {"tom_orders": [[0, 1, 2]] + [[0]] * (n - 1)},
            {"allow_pass": False, "tom_orders": [[0, 1]] * n},
        ]
        for seed, extra in enumerate(variants):
            # play_local raises LocalPlayError on the first action the engine refuses
            policies = [LegalityChecked(bot) for bot in bots(n, seed)]
            result = play_local(inst, settings_for(inst, **extra), rules, policies, seed)
            assert result.game.finished
            for event in result.events:
                kinds[event.type] += 1
                if event.type == "crafted" and Fraction(event.payload["runs"]).denominator != 1:
                    fractional_crafts += 1
                if event.type == "decided":
                    accepts += event.payload["accept"]
                    rejects += not event.payload["accept"]
    for kind in ("tom_reported", "proposed", "passed", "trade_executed", "crafted", "craft_finished"):
        assert kinds[kind] > 0, f"random bots never produced {kind}: {dict(kinds)}"
    assert accepts and rejects and fractional_crafts


def test_same_seed_same_game_and_different_seeds_differ() -> None:
    needs("alchemy")
    rules = load_rule_set("alchemy")
    inst = own_instances("alchemy")[0]
    settings = settings_for(inst, tom_orders=[[0, 1], [0]])
    first = play_local(inst, settings, rules, bots(2, 7), 7)
    again = play_local(inst, settings, rules, bots(2, 7), 7)
    assert first.log_sha256 == again.log_sha256
    assert [e.to_dict() for e in first.events] == [e.to_dict() for e in again.events]
    others = {play_local(inst, settings, rules, bots(2, seed), 7).log_sha256 for seed in range(8, 14)}
    assert len(others - {first.log_sha256}) >= 5, "bot seeds barely change the game"


class FreshBotEachMove:
    """How the server seats a bot: a new bot for every move, seeded from (game seed, seat, log position)."""

    def __init__(self, seed: int, seat: int):
        self.seed, self.seat = seed, seat

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        return make_policy("random", derive_seed(self.seed, self.seat, view["log_size"])).act(view, legal)


@pytest.mark.parametrize("ruleset", ["minecraft", "alchemy"])
def test_a_fresh_bot_per_move_is_legal_and_reproducible(ruleset: str) -> None:
    needs(ruleset)
    rules = load_rule_set(ruleset)
    for inst in own_instances(ruleset):
        settings = settings_for(inst, tom_orders=[[0, 1, 2]] * inst.players)

        def play(inst: TaskInstance = inst, settings: GameSettings = settings) -> str:
            policies = [FreshBotEachMove(3, seat) for seat in range(inst.players)]
            return play_local(inst, settings, rules, policies, 3).log_sha256

        assert play() == play()


def test_crafts_are_affordable_fractions_and_at_most_max_crafts_per_phase() -> None:
    needs("minecraft")
    rules = load_rule_set("minecraft")
    inst = own_instances("minecraft")[0]
    for seed in range(6):
        result = play_local(inst, settings_for(inst), rules, bots(2, seed), seed)
        per_phase = Counter(
            (e.payload["turn"], e.payload["seat"]) for e in result.events if e.type == "crafted"
        )
        assert all(count <= RandomBot(0).max_crafts for count in per_phase.values())


def test_tom_report_covers_exactly_the_requested_orders_items_and_opponents() -> None:
    view = {
        "seat": 1,
        "ruleset": "alchemy",
        "tom": {"orders": [0, 2], "due": True, "items": ["water", "air"], "opponents": [0, 2]},
    }
    report = RandomBot(5).act(view, ["report_tom", "resign"])
    assert report["type"] == "report_tom"
    assert set(report) == {"type", "v0", "v2"}
    assert set(report["v0"]) == {"water", "air"}
    assert set(report["v2"]) == {"0", "2"}
    values = [*report["v0"].values(), *(v for d in report["v2"].values() for v in d.values())]
    assert all(isinstance(v, int) and 0 <= v <= 10 for v in values)


def test_proposals_come_from_the_public_hands() -> None:
    view = {
        "seat": 0,
        "ruleset": "alchemy",
        "hands": [{"water": 2, "fire": 1}, {}, {"earth": 5}],
        "active": [True, True, True],
    }
    for seed in range(200):
        action = RandomBot(seed, pass_probability=0.0).act(view, ["propose", "pass", "resign"])
        assert action["type"] == "propose"
        assert action["to"] in (1, 2)
        assert action["offer"] or action["request"]
        assert not set(action["offer"]) & set(action["request"])
        for item, count in action["offer"].items():
            assert 1 <= count <= view["hands"][0][item]
        for item, count in action["request"].items():
            assert 1 <= count <= view["hands"][action["to"]][item]


def test_a_bot_asked_when_it_has_nothing_to_do_says_so() -> None:
    with pytest.raises(ValueError, match="ask a policy to act only when"):
        RandomBot(0).act({"seat": 0}, ["resign"])


def test_the_random_policy_reseeds_each_move_from_its_seed_and_its_place_in_play() -> None:
    """A policy rebuilt after a restart must play exactly as the lost one would have; and what it does must
    not depend on the log position, which the simultaneous craft phase interleaves differently each run."""
    view = {
        "seat": 0,
        "ruleset": "alchemy",
        "hands": [{"water": 3}, {"earth": 2}],
        "active": [True, True],
        "phase": "trade_propose",
    }
    used = make_policy("random", 7)
    for _ in range(5):  # moves at other turns do not change what it does at this one
        used.act(
            {**view, "turn": 1, "move_key": "1:trade_propose:0", "log_size": 3}, ["propose", "pass", "resign"]
        )
    fresh = make_policy("random", 7)
    for turn in (2, 3, 4):
        moment = {**view, "turn": turn, "move_key": f"{turn}:trade_propose:0", "log_size": 4 * turn}
        expected = fresh.act(moment, ["propose", "pass", "resign"])
        assert used.act(moment, ["propose", "pass", "resign"]) == expected
        # another seat finishing its crafting earlier or later shifts log_size, not the move
        assert used.act({**moment, "log_size": 4 * turn + 1}, ["propose", "pass", "resign"]) == expected
    moves = {
        json.dumps(
            fresh.act({**view, "turn": t, "move_key": f"{t}:trade_propose:0"}, ["propose", "pass", "resign"])
        )
        for t in range(1, 9)
    }
    assert len(moves) > 1  # but it does reseed per move


@pytest.mark.parametrize("ruleset", ["minecraft", "alchemy"])
def test_long_crafting_sprees_stay_legal(ruleset: str) -> None:
    """Many fractional crafts in a row grow denominators; every run amount must still be accepted."""
    needs(ruleset)
    rules = load_rule_set(ruleset)
    for inst in instances_to_play(ruleset, shipped_per_mode=3):
        policies = [
            RandomBot(derive_seed(4, seat), finish_probability=0.02, max_crafts=25)
            for seat in range(inst.players)
        ]
        result = play_local(inst, settings_for(inst, max_turns=4), rules, policies, 4)
        assert result.game.finished
