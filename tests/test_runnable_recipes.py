"""One answer to "what can this hand run": craft_rules.possible_crafts.runnable_recipes; everyone agrees.

The engine's legal moves, the planner's possible crafts and the random bot all ask the same function,
and every amount it names is accepted by the engine; these tests fail if any consumer grows its own rule.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from fractions import Fraction

import pytest
from engine_support import instance, small_rules
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_support import ORIGINAL_PROBLEMS

from agents.bots.random_bot import RandomBot
from craft_rules.crafting import (
    MAX_RUNS,
    CraftError,
    clamp_runs,
    craft,
    max_runs,
    parse_runs,
)
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.planner import Planner
from craft_rules.possible_crafts import possible_crafts as possible_crafts_of
from craft_rules.possible_crafts import runnable_recipes
from server.game import Game, GameSettings
from server.game.legal import legal_actions, possible_crafts
from server.game.views import player_view

SMALL = small_rules()


def test_clamp_runs_rounds_down_to_what_a_craft_accepts() -> None:
    assert clamp_runs(Fraction(3, 4)) == Fraction(3, 4)
    fine = Fraction(1, 3 * MAX_RUNS + 1)
    assert clamp_runs(Fraction(1, 2) + fine) == Fraction(1, 2)
    assert clamp_runs(Fraction(10 * MAX_RUNS)) == MAX_RUNS
    assert clamp_runs(fine) == 0
    assert clamp_runs(Fraction(-1)) == 0
    assert clamp_runs(Fraction(7, 2), whole_runs=True) == 3
    assert clamp_runs(Fraction(3, 4), whole_runs=True) == 0
    for value in (Fraction(1, 2) + fine, Fraction(10 * MAX_RUNS), Fraction(5, 3)):
        assert parse_runs(clamp_runs(value)) == clamp_runs(value)  # the craft's own check accepts it


def test_the_run_limit_is_the_one_parse_runs_enforces() -> None:
    assert parse_runs(MAX_RUNS) == MAX_RUNS
    with pytest.raises(CraftError):
        parse_runs(MAX_RUNS + 1)
    with pytest.raises(CraftError):
        parse_runs(Fraction(1, MAX_RUNS + 1))


def test_runnable_recipes_lists_each_recipe_with_its_max_runs_by_id() -> None:
    rules = load_rule_set("minecraft")
    hand = {"oak_log": Fraction(1, 2), "coal": Fraction(1), "stick": Fraction(3)}
    found = runnable_recipes(rules, hand)
    assert [r.id for r, _ in found] == sorted(r.id for r, _ in found)
    runs = {recipe.id: amount for recipe, amount in found}
    assert runs["torch"] == 1  # 1 coal + 1 stick -> 4 torch, limited by the coal
    assert runs["oak_planks"] == Fraction(1, 2)
    for recipe_id, amount in runs.items():
        assert amount == max_runs(rules, hand, rules.recipes[recipe_id]) > 0
    assert all(max_runs(rules, hand, r) == 0 for r in rules.recipes.values() if r.id not in runs)


def test_whole_runs_floor_the_amounts_and_drop_what_cannot_run_once() -> None:
    hand = {"oak_log": Fraction(3, 2), "birch_log": Fraction(1, 2), "coal": Fraction(1)}
    rational = dict((r.id, n) for r, n in runnable_recipes(SMALL, hand))
    whole = dict((r.id, n) for r, n in runnable_recipes(SMALL, hand, whole_runs=True))
    assert rational["oak_planks"] == Fraction(3, 2) and whole["oak_planks"] == 1
    assert "birch_planks" in rational and "birch_planks" not in whole
    assert all(n.denominator == 1 and n >= 1 for n in whole.values())


def craft_phase_game(hands: list[dict[str, int]]) -> Game:
    """A two-seat game of the small rule set already in its craft phase (the proposer passed)."""
    inst = instance(hands, [{"diamond": 99}, {"diamond": 99}], "runnable#0")
    game = Game.new(inst, GameSettings(ruleset="small", first_proposer=0), SMALL, 0)
    game.apply(0, {"type": "pass"})
    assert game.phase == "craft"
    return game


ITEMS = sorted(SMALL.items)
hands_strategy = st.dictionaries(st.sampled_from(ITEMS), st.integers(1, 6), max_size=6)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hand=hands_strategy, seed=st.integers(0, 2**32 - 1))
def test_every_consumer_agrees_with_what_the_engine_accepts(hand: dict[str, int], seed: int) -> None:
    """Through a spree of fractional crafts: engine, planner and bot name the same recipes and amounts,
    and the engine accepts every amount named (and nothing for a recipe left out)."""
    game = craft_phase_game([hand, {"diamond": 1}])
    rng = random.Random(seed)
    planner = Planner(SMALL)
    for _ in range(8):
        current = game.crafting_hand(0)
        assert current is not None
        answer = [(r.id, n) for r, n in runnable_recipes(SMALL, current)]
        assert [(c["recipe"], Fraction(c["max_runs"])) for c in possible_crafts(game, 0)] == answer
        assert sorted((p.recipe_id, p.max_runs) for p in planner.possible_crafts(current)) == answer
        assert ("craft" in legal_actions(game, 0)) == bool(answer)
        for recipe_id, amount in answer:
            craft(SMALL, current, recipe_id, amount)  # raises if the engine would refuse it
        listed = {rid for rid, _ in answer}
        for recipe in SMALL.recipes.values():
            if recipe.id not in listed and max_runs(SMALL, current, recipe) == 0:
                with pytest.raises(CraftError):
                    craft(SMALL, current, recipe.id, Fraction(1, MAX_RUNS))
        action = RandomBot(rng.getrandbits(63), rules=SMALL, finish_probability=0.0, max_crafts=99).act(
            player_view(game, 0), legal_actions(game, 0)
        )
        if action["type"] == "finish_crafting":
            assert not answer
            break
        assert action["recipe"] in listed
        assert Fraction(action["runs"]) <= dict(answer)[action["recipe"]]
        game.apply(0, action)


# --- the ingredient index answers exactly what the definition does -------------------------------------

MINECRAFT = load_rule_set("minecraft")
# what can matter to "what can run": every ingredient option and fuel, and two items that feed nothing
FEEDING = sorted({o for r in MINECRAFT.recipes.values() for ing in r.ingredients for o in ing.options})
MINECRAFT_ITEMS = sorted(set(FEEDING) | set(MINECRAFT.fuels.burn_ticks) | {"diamond_sword", "dragon_egg"})
UNUSED = next(item for item in sorted(MINECRAFT.items) if item not in MINECRAFT_ITEMS)


def defined_runnable(
    rules: RuleSet, hand: Mapping[str, Fraction], whole_runs: bool
) -> list[tuple[str, Fraction]]:
    """The definition, slowly: every recipe of the rule set, its :func:`max_runs` clamped as a craft
    accepts it, kept when positive, by recipe id."""
    out = []
    for recipe in sorted(rules.recipes.values(), key=lambda r: r.id):
        runs = clamp_runs(max_runs(rules, hand, recipe), whole_runs=whole_runs)
        if runs > 0:
            out.append((recipe.id, runs))
    return out


quantities = st.one_of(
    st.integers(1, 12),
    st.integers(1, 3 * MAX_RUNS),  # past the run limit
    st.fractions(min_value=Fraction(1, 12), max_value=40, max_denominator=12),
    st.integers(MAX_RUNS + 1, 10**15).map(lambda d: Fraction(1, d)),  # finer than a craft's step
    st.integers(1, 10**18).map(lambda d: Fraction(d + 7, d)),  # huge denominators, about 1
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    hand=st.dictionaries(st.sampled_from(MINECRAFT_ITEMS), quantities, max_size=80),
    whole_runs=st.booleans(),
)
def test_runnable_recipes_are_what_the_definition_says_on_random_hands(
    hand: dict[str, Fraction | int], whole_runs: bool
) -> None:
    expected = defined_runnable(MINECRAFT, {k: Fraction(v) for k, v in hand.items()}, whole_runs)
    assert [(r.id, n) for r, n in runnable_recipes(MINECRAFT, hand, whole_runs=whole_runs)] == expected
    assert all(type(n) is Fraction for _, n in runnable_recipes(MINECRAFT, hand, whole_runs=whole_runs))
    # the possible crafts: the same recipes and amounts, by result then id, whatever the name's prefix
    prefixed = {MINECRAFT.qualified(item): qty for item, qty in hand.items()}
    by_result = sorted(expected, key=lambda pair: (MINECRAFT.recipes[pair[0]].result, pair[0]))
    for asked in (hand, {**prefixed, UNUSED: 0}):
        crafts = possible_crafts_of(MINECRAFT, asked, whole_runs=whole_runs)
        assert [(c.recipe_id, c.max_runs) for c in crafts] == by_result
        assert all(c.result == MINECRAFT.recipes[c.recipe_id].result for c in crafts)


@settings(max_examples=150, deadline=None)
@given(hand=st.dictionaries(st.sampled_from(ITEMS), quantities, max_size=12), whole_runs=st.booleans())
def test_runnable_recipes_are_what_the_definition_says_on_the_small_rule_set(
    hand: dict[str, Fraction | int], whole_runs: bool
) -> None:
    expected = defined_runnable(SMALL, {k: Fraction(v) for k, v in hand.items()}, whole_runs)
    assert [(r.id, n) for r, n in runnable_recipes(SMALL, hand, whole_runs=whole_runs)] == expected


def test_the_original_games_public_hands_can_run_what_the_definition_says() -> None:
    if not ORIGINAL_PROBLEMS.exists():
        pytest.skip(f"oracle data absent: {ORIGINAL_PROBLEMS}")
    problems = json.loads(ORIGINAL_PROBLEMS.read_text(encoding="utf-8"))
    for hand in (hand for problem in problems for hand in problem["hands"]):
        held = {MINECRAFT.canonical(item): Fraction(qty) for item, qty in hand.items()}
        for whole_runs in (True, False):
            crafts = possible_crafts_of(MINECRAFT, hand, whole_runs=whole_runs)
            expected = defined_runnable(MINECRAFT, held, whole_runs)
            assert sorted((c.recipe_id, c.max_runs) for c in crafts) == expected
            assert crafts or not expected
