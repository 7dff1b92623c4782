"""Property-based tests (hypothesis) of exact crafting and the planner.

- crafting never makes a quantity negative, and conserves items exactly;
- flooring never raises a quantity;
- a plan the planner calls feasible always executes step by step with exact Fractions;
- the missing items really make the target craftable (and come from what is available);
- whatever a random sequence of crafts reaches, the planner also finds (no false "impossible").
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from craft_rules.crafting import CraftError, craft, floor_hand, max_runs
from craft_rules.model import RuleSet
from craft_rules.planner import Planner, planner_for

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


@pytest.fixture(scope="module", params=["mini", "minecraft", "alchemy"])
def rules(request: pytest.FixtureRequest) -> RuleSet:
    return request.getfixturevalue(request.param)


quantities = st.fractions(min_value=0, max_value=12, max_denominator=12)
run_amounts = st.fractions(min_value=F(1, 64), max_value=6, max_denominator=64)


def hands_over(items: list[str], max_size: int = 8) -> st.SearchStrategy[dict[str, F]]:
    return st.dictionaries(st.sampled_from(items), quantities, max_size=max_size)


def relevant_items(rules: RuleSet, target: str) -> list[str]:
    items, _ = planner_for(rules).ancestors({target})
    return sorted(items)


@st.composite
def hand_and_target(draw: st.DrawFn, rules: RuleSet) -> tuple[dict[str, F], dict[str, int]]:
    target = draw(st.sampled_from(sorted(rules.recipes_by_result)))
    near = relevant_items(rules, target)
    hand = draw(hands_over(near, 8))
    hand = {k: F(round(v)) if draw(st.booleans()) else v for k, v in hand.items()}
    return hand, {target: draw(st.integers(1, 3))}


def replay(rules: RuleSet, hand: Mapping[str, F], steps: object) -> dict[str, F]:
    current = {item: q for item, q in hand.items() if q}
    for step in steps:  # type: ignore[attr-defined]
        assert step.runs.denominator <= 10**6
        current = craft(rules, current, step.recipe_id, step.runs, step.choices, step.fuel).hand
    return current


def holds(hand: Mapping[str, F], target: Mapping[str, int]) -> bool:
    return all(hand.get(item, 0) >= n for item, n in target.items())


# --- exact crafting ---------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_crafting_never_makes_a_quantity_negative(rules: RuleSet, data: st.DataObject) -> None:
    recipe = data.draw(st.sampled_from(sorted(rules.recipes)))
    spec = rules.recipes[recipe]
    inputs = sorted({o for ing in spec.ingredients for o in ing.options} | set(rules.fuels.burn_ticks))
    hand = data.draw(hands_over(inputs[:40] if len(inputs) > 40 else inputs))
    runs = data.draw(run_amounts)
    choices = {}
    for index, ing in enumerate(spec.ingredients):
        if ing.is_choice and data.draw(st.booleans()):
            choices[index] = data.draw(st.sampled_from(ing.options))
    fuel = None
    if spec.burns_fuel and data.draw(st.booleans()):
        fuel = data.draw(st.sampled_from(sorted(rules.fuels.burn_ticks)))
    try:
        result = craft(rules, hand, recipe, runs, choices, fuel)
    except CraftError:
        return
    assert all(q > 0 for q in result.hand.values())
    for item in set(hand) | set(result.hand):  # conservation: new = old - consumed + produced
        expected = hand.get(item, 0) - result.consumed.get(item, 0) + result.produced.get(item, 0)
        assert result.hand.get(item, 0) == expected


@SETTINGS
@given(hand=st.dictionaries(st.text(min_size=1, max_size=5), quantities | st.integers(0, 99)))
def test_flooring_never_raises_a_quantity(hand: dict[str, F | int]) -> None:
    floored = floor_hand(hand)
    for item, value in floored.items():
        assert isinstance(value, int) and 0 < value <= hand[item] < value + 1
    assert all(hand[item] < 1 for item in set(hand) - set(floored))


@pytest.mark.slow
@SETTINGS
@given(data=st.data())
def test_max_runs_executes_with_the_default_rules(rules: RuleSet, data: st.DataObject) -> None:
    recipe = rules.recipes[data.draw(st.sampled_from(sorted(rules.recipes)))]
    inputs = sorted({o for ing in recipe.ingredients for o in ing.options})
    if recipe.burns_fuel:
        inputs += data.draw(st.lists(st.sampled_from(sorted(rules.fuels.burn_ticks)), max_size=3))
    hand = data.draw(hands_over(sorted(set(inputs))))
    runs = max_runs(rules, hand, recipe)
    assume(runs > 0 and runs.denominator <= 10**6 and runs <= 10**6)
    craft(rules, hand, recipe.id, runs)


# --- the planner -------------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_a_feasible_plan_executes_step_by_step(rules: RuleSet, data: st.DataObject) -> None:
    hand, target = data.draw(hand_and_target(rules))
    plan = planner_for(rules).plan(hand, target, find_missing=False)
    if plan.craftable:
        final = replay(rules, hand, plan.steps)
        assert final == plan.final_hand
        assert holds(final, target)
        assert plan.depth <= plan.craft_steps
    else:
        assert plan.steps == ()


@pytest.mark.slow
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_missing_items_make_the_target_craftable(rules: RuleSet, data: st.DataObject) -> None:
    hand, target = data.draw(hand_and_target(rules))
    planner = planner_for(rules)
    limited = data.draw(st.booleans())
    available = None
    if limited:
        near = relevant_items(rules, next(iter(target)))
        available = data.draw(st.dictionaries(st.sampled_from(near), st.integers(1, 9), max_size=8))
    missing = planner.missing(hand, target, available)
    if missing is None:
        assert limited
        assert not planner.lp_feasible({**hand, **_added(hand, available or {})}, target)
        return
    for item, count in missing.items():
        assert isinstance(count, int) and count > 0
        if available is not None:
            assert count <= available.get(item, 0)
    completed = _added(hand, missing)
    plan = planner.plan(completed, target, find_missing=False)
    assert plan.craftable
    assert holds(replay(rules, completed, plan.steps), target)


def _added(hand: Mapping[str, F], extra: Mapping[str, int]) -> dict[str, F]:
    out = dict(hand)
    for item, count in extra.items():
        out[item] = out.get(item, F(0)) + count
    return out


@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_what_random_crafting_reaches_the_planner_finds(rules: RuleSet, data: st.DataObject) -> None:
    """Completeness: a random walk of legal crafts is a plan, so the planner must find one too."""
    target_item = data.draw(st.sampled_from(sorted(rules.recipes_by_result)))
    near = relevant_items(rules, target_item)
    start = {k: F(v) for k, v in data.draw(st.dictionaries(st.sampled_from(near), st.integers(1, 9))).items()}
    planner = planner_for(rules)
    hand = dict(start)
    for _ in range(data.draw(st.integers(1, 6))):
        options = planner.possible_crafts(hand)
        if not options:
            break
        pick = data.draw(st.sampled_from(options))
        share = data.draw(st.sampled_from([F(1), F(1, 2), F(1, 3), F(3, 4)]))
        runs = pick.max_runs * share
        if runs.denominator > 10**6:
            continue
        hand = craft(rules, hand, pick.recipe_id, runs).hand
    reached = {item: int(q) for item, q in hand.items() if q >= 1 and start.get(item, 0) < q}
    for item, count in sorted(reached.items())[:3]:
        assert planner.can_craft(start, {item: count}), f"{item} x{count} from {start}"


def test_a_fresh_planner_agrees_with_the_cached_one(mini: RuleSet) -> None:
    hand = {"planks": F(1), "coal": F(1)}
    assert Planner(mini).plan(hand, {"torch": 1}) == planner_for(mini).plan(hand, {"torch": 1})
