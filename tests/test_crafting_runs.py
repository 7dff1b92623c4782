"""The crafting-runs rule: ``rational`` run amounts (the paper's text) or ``whole`` runs only (the
original game's server), through crafting, the planner, the engine, the views, the narrator and the CLI;
and the end of a game: per-instance turn limits, the reveal of every target and the scores."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner
from engine_support import TWO_PLAYER, expect_error, instance, new_game, small_rules
from suite_support import ORIGINAL_PROBLEMS

from agents.bots.random_bot import RandomBot
from agents.narrator import rules_preamble, settings_from_view
from craft_rules.crafting import WholeRunsError, craft, parse_runs
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.planner import planner_for
from server.game import GameSettings
from server.game.legal import legal_actions, possible_crafts
from server.game.views import player_view


# --- crafting ------------------------------------------------------------------------------------
def test_whole_runs_refuse_a_fraction_with_a_typed_error(minecraft: RuleSet) -> None:
    hand = {"coal": Fraction(1), "stick": Fraction(1)}
    assert craft(minecraft, hand, "torch", "1/4").produced == {"torch": Fraction(1)}
    with pytest.raises(WholeRunsError) as caught:
        craft(minecraft, hand, "torch", "1/4", whole_runs=True)
    assert caught.value.code == "whole_runs_only" and "whole runs" in caught.value.message
    assert craft(minecraft, hand, "torch", 1, whole_runs=True).produced == {"torch": Fraction(4)}
    assert parse_runs("3", whole_runs=True) == 3 and parse_runs("6/2", whole_runs=True) == 3


def test_whole_runs_still_burn_fuel_in_proportion(minecraft: RuleSet) -> None:
    result = craft(
        minecraft,
        {"raw_iron": Fraction(2), "coal": Fraction(1)},
        "iron_ingot_from_smelting_raw_iron",
        2,
        whole_runs=True,
    )
    assert result.consumed == {"raw_iron": 2, "coal": Fraction(1, 4)}


# --- the planner: the worked cases ------------------------------------------------------
@pytest.mark.parametrize(
    ("hand", "target", "rational", "whole"),
    [
        ({"oak_planks": 1, "coal": 1}, {"torch": 1}, True, False),  # 1/8 plank -> 1/4 stick
        ({"oak_planks": 2, "coal": 1}, {"torch": 1}, True, True),  # a whole run of sticks
        ({"raw_iron": 2, "coal": 1}, {"shears": 1}, True, True),  # 2 smelts burn 1/4 coal
        ({"oak_planks": 1, "birch_planks": 1, "coal": 1}, {"torch": 1}, True, True),  # pooled planks
        ({"oak_log": 1, "coal": 1}, {"torch": 1}, True, True),
        ({"raw_iron": 1, "coal": 1}, {"shears": 1}, False, False),
    ],
)
def test_planner_under_both_rules(
    minecraft: RuleSet, hand: dict[str, int], target: dict[str, int], rational: bool, whole: bool
) -> None:
    assert planner_for(minecraft).can_craft(hand, target) is rational
    whole_planner = planner_for(minecraft, whole_runs=True)
    assert whole_planner.can_craft(hand, target) is whole
    plan = whole_planner.plan(hand, target)
    assert plan.craftable is whole
    # every step of a whole-runs plan runs a whole number of times, and replays exactly
    current = {k: Fraction(v) for k, v in hand.items()}
    for step in plan.steps:
        assert step.runs.denominator == 1
        current = craft(
            minecraft, current, step.recipe_id, step.runs, step.choices, step.fuel, whole_runs=True
        ).hand
    if whole:
        assert all(current.get(item, 0) >= n for item, n in target.items())
    else:
        assert plan.missing and sum(plan.missing.values()) == 1


def test_possible_crafts_under_whole_runs_are_whole(minecraft: RuleSet) -> None:
    hand = {"oak_planks": 3, "coal": 1}
    rational = {p.recipe_id: p.max_runs for p in planner_for(minecraft).possible_crafts(hand)}
    whole = {p.recipe_id: p.max_runs for p in planner_for(minecraft, whole_runs=True).possible_crafts(hand)}
    assert rational["stick"] == Fraction(3, 2) and whole["stick"] == 1
    assert all(runs.denominator == 1 and runs >= 1 for runs in whole.values())
    assert set(whole) < set(rational)  # a crafting table needs 4 planks: only a fraction of a run here


@pytest.mark.skipif(not ORIGINAL_PROBLEMS.exists(), reason=f"oracle data absent: {ORIGINAL_PROBLEMS}")
def test_the_original_games_public_problems_under_both_rules(minecraft: RuleSet) -> None:
    """Under rational runs 7 of the 20 players could craft their target without trading; under whole
    runs (the original server's rule) only 2; problem 8's arrow is craftable under neither."""
    problems = json.loads(ORIGINAL_PROBLEMS.read_text(encoding="utf-8"))

    def bare(counts: dict[str, int]) -> dict[str, int]:
        return {minecraft.canonical(k): v for k, v in counts.items()}

    assert len(problems) == 10
    for whole, expected_alone in ((False, 7), (True, 2)):
        planner = planner_for(minecraft, whole_runs=whole)
        alone, arrows = 0, 0
        for index, problem in enumerate(problems):
            hands = [bare(h) for h in problem["hands"]]
            pooled: dict[str, int] = {}
            for hand in hands:
                for item, count in hand.items():
                    pooled[item] = pooled.get(item, 0) + count
            for hand, target in zip(hands, problem["targets"], strict=True):
                alone += planner.can_craft(hand, bare(target))
                if bare(target) == {"arrow": 1}:  # no feather in any hand
                    arrows += 1
                    assert index == 8 and not planner.can_craft(pooled, bare(target))
                    assert "feather" not in pooled
        assert alone == expected_alone, f"whole={whole}"
        assert arrows == 1, "problem 8's arrow is judged (under both rules)"


# --- the engine ----------------------------------------------------------------------------------
def test_a_whole_runs_game_refuses_fractional_crafts_and_changes_nothing() -> None:
    game = new_game(crafting_runs="whole")
    game.apply(0, {"type": "pass"})
    error = expect_error(game, 0, {"type": "craft", "recipe": "oak_planks", "runs": "1/4"}, "whole_runs_only")
    assert "whole" in error.message
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "2"})
    assert game.crafting_hand(0)["oak_planks"] == 8
    assert player_view(game, 1)["rules"]["crafting_runs"] == "whole"
    # the engine's helpers offer whole runs only: 1 raw iron smelts at most once
    offered = {c["recipe"]: Fraction(c["max_runs"]) for c in possible_crafts(game, 1)}
    assert offered and all(runs.denominator == 1 for runs in offered.values())


def test_random_play_in_a_whole_runs_game_only_ever_crafts_whole_runs() -> None:
    rules = small_rules()
    for seed in range(6):
        game = new_game(crafting_runs="whole", max_turns=6)
        bots = [RandomBot(seed * 10 + seat, rules=rules, finish_probability=0.1) for seat in (0, 1)]
        while not game.finished:
            seat = sorted(game.waiting_for())[0]
            game.apply(seat, bots[seat].act(player_view(game, seat), legal_actions(game, seat)))
        crafted = [Fraction(e.payload["runs"]) for e in game.events if e.type == "crafted"]
        assert crafted and all(runs.denominator == 1 for runs in crafted)


def test_a_rational_game_still_accepts_fractions() -> None:
    game = new_game()
    game.apply(0, {"type": "pass"})
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/4"})
    assert game.crafting_hand(0)["oak_planks"] == 1
    assert player_view(game, 0)["rules"]["crafting_runs"] == "rational"


# --- end of game: turn limit, reveal, scores -----------------------------------------------------
def test_an_instances_own_max_turn_overrides_the_settings() -> None:
    short = instance([dict(h) for h in TWO_PLAYER.hands], [dict(t) for t in TWO_PLAYER.targets])
    short = type(short)(short.id, short.ruleset, short.mode, short.hands, short.targets, max_turn=2)
    game = new_game(short, max_turns=10)
    assert game.max_turns == 2 and player_view(game, 0)["max_turns"] == 2
    assert game.events[0].payload["max_turns"] == 2
    for _ in range(2):
        game.apply(game.proposer, {"type": "pass"})
        for seat in (0, 1):
            game.apply(seat, {"type": "finish_crafting"})
    assert game.finished and game.end_reason == "max_turns" and game.turn == 2
    reveal = next(e for e in game.events if e.type == "targets_revealed")
    assert reveal.payload["scores"] == [0, 0] and reveal.payload["winners"] == []


def test_scoring_is_configurable_and_paid_in_the_reveal() -> None:
    game = new_game(scoring={"sole_win": 5, "shared_win": 2, "no_win": 1})
    game.apply(0, {"type": "pass"})
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/4"})
    game.apply(0, {"type": "craft", "recipe": "stick", "runs": "1/2"})
    game.apply(0, {"type": "craft", "recipe": "torch", "runs": "1"})
    for seat in (0, 1):
        game.apply(seat, {"type": "finish_crafting"})
    assert game.winners == [0] and game.scores == [5, 1]
    reveal = [e for e in game.events if e.type == "targets_revealed"]
    assert len(reveal) == 1 and reveal[0].is_public
    assert reveal[0].payload["targets"] == [{"torch": 4}, {"shears": 1}]


def test_the_narrator_states_the_crafting_rule_and_the_scoring() -> None:
    rules = load_rule_set("minecraft")
    whole = rules_preamble(rules, GameSettings(crafting_runs="whole"), 0)
    assert "whole number of times" in whole and "never a fraction of a run" in whole
    assert '"runs": 2}' in whole and '"1/4"' not in whole
    assert "winning alone earns 3 points" in whole and "each earns 1 point" in whole
    assert "every player's target is revealed" in whole
    rational = rules_preamble(rules, GameSettings(), 0)
    assert "any positive rational number of times" in rational and "whole number of times" not in rational
    # a player rebuilds the same rules from its own view
    game = new_game(crafting_runs="whole", scoring={"sole_win": 4})
    view = player_view(game, 0)
    assert settings_from_view(view).crafting_runs == "whole"
    assert settings_from_view(view).scoring.sole_win == 4


# --- the command line ----------------------------------------------------------------------------
def test_craft_plan_and_possible_take_the_runs_rule() -> None:
    from craft_rules.cli import craft_group

    runner = CliRunner()
    hand = '{"oak_planks": 1, "coal": 1}'
    for runs, craftable in (("rational", True), ("whole", False)):
        result = runner.invoke(
            craft_group, ["plan", "--hand", hand, "--target", '{"torch": 1}', "--runs", runs, "--json"]
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["runs"] == runs and data["craftable"] is craftable
    result = runner.invoke(
        craft_group, ["possible", "--hand", '{"oak_planks": 3}', "--runs", "whole", "--json"]
    )
    crafts = {c["recipe"]: c["max_runs"] for c in json.loads(result.output)["crafts"]}
    assert crafts["stick"] == "1"
    bad = runner.invoke(craft_group, ["possible", "--hand", "{}", "--runs", "halves"])
    assert bad.exit_code != 0 and "rational" in bad.output


def test_queries_answer_under_the_games_rule() -> None:
    from server.game.queries import run_query

    hands = [{"oak_planks": 1, "coal": 1, "cobblestone": 1}, {"raw_iron": 2, "oak_planks": 1}]
    inst = instance(hands, [{"torch": 1}, {"shears": 1}])
    for runs, craftable in (("rational", True), ("whole", False)):
        game = new_game(inst, crafting_runs=runs)
        game.apply(0, {"type": "pass"})
        answer = run_query(game, 0, {"type": "craftable"})
        assert answer["craftable"] is craftable, runs
        crafts = run_query(game, 0, {"type": "possible_crafts"})["crafts"]
        sticks = [c for c in crafts if c["recipe"] == "stick"]
        # one plank is half a run of sticks: offered under rational runs only
        assert bool(sticks) is (runs == "rational")
        assert all(Fraction(c["max_runs"]).denominator == 1 for c in crafts) or runs == "rational"
