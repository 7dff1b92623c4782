"""What a hand can craft now: every recipe it can run, with the largest run amount, as the engine's legal
moves, the planner, the bots, the GUI and the action masks all ask it (no LP).

"What can this hand run" has one answer, :func:`runnable_recipes` (with
:func:`craft_rules.crafting.clamp_runs` and the one run limit :data:`craft_rules.crafting.MAX_RUNS`), so
they all agree with what :func:`craft_rules.crafting.craft` accepts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from craft_rules.crafting import MAX_RUNS, fmt_qty
from craft_rules.model import Recipe, RuleSet


@dataclass(frozen=True, slots=True)
class PossibleCraft:
    recipe_id: str
    result: str
    count: int
    max_runs: Fraction

    @property
    def max_output(self) -> Fraction:
        return self.max_runs * self.count

    def as_dict(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe_id,
            "result": self.result,
            "count": self.count,
            "max_runs": fmt_qty(self.max_runs),
            "max_output": fmt_qty(self.max_output),
        }


@dataclass(frozen=True, slots=True)
class _RunBound:
    """What limits the run amount of one recipe under the default choices, as
    :func:`craft_rules.crafting.max_runs` counts it:
    each pooled ingredient (the ingredients with the same options) affords ``have / divisor`` runs, where
    the divisor is its count plus the counts of other ingredients sharing an option with it; a cooking
    recipe also needs fuel, ``fuel_uses[fuel]`` being what the ingredients use of a fuel as well."""

    recipe: Recipe
    divisors: tuple[int, ...]
    burns_fuel: bool
    fuel_uses: Mapping[str, int]


class _RunIndex:
    """The ingredient index of one rule set, built once: item -> (recipe number, pooled ingredient number,
    how many pooled ingredients the recipe has) for every pooled ingredient the item can fill. Recipes are
    numbered by result, then id (the order of :func:`possible_crafts`); ``id_rank`` orders them by id."""

    def __init__(self, rules: RuleSet):
        self.burn_ticks = rules.fuels.burn_ticks
        self.smelt_ticks = rules.fuels.smelt_ticks
        self.bounds: list[_RunBound] = []
        fills: dict[str, list[tuple[int, int, int]]] = {}
        for recipe in sorted(rules.recipes.values(), key=lambda r: (r.result, r.id)):
            pooled: dict[tuple[str, ...], int] = {}
            for ing in recipe.ingredients:
                pooled[ing.options] = pooled.get(ing.options, 0) + ing.count
            divisors = tuple(
                count
                + sum(c for other, c in pooled.items() if other != options and set(other) & set(options))
                for options, count in pooled.items()
            )
            fuel_uses = {
                fuel: sum(ing.count for ing in recipe.ingredients if fuel in ing.options)
                for fuel in {o for ing in recipe.ingredients for o in ing.options if o in self.burn_ticks}
            }
            number = len(self.bounds)
            self.bounds.append(_RunBound(recipe, divisors, recipe.burns_fuel, fuel_uses))
            for group, options in enumerate(pooled):
                for option in options:
                    fills.setdefault(option, []).append((number, group, len(pooled)))
        self.fills = {item: tuple(pairs) for item, pairs in fills.items()}
        by_id = sorted(range(len(self.bounds)), key=lambda number: self.bounds[number].recipe.id)
        self.id_rank = [0] * len(by_id)
        for rank, number in enumerate(by_id):
            self.id_rank[number] = rank


_RUN_INDEXES: dict[int, tuple[RuleSet, _RunIndex]] = {}


def _run_index(rules: RuleSet) -> _RunIndex:
    entry = _RUN_INDEXES.get(id(rules))
    if entry is None or entry[0] is not rules:  # a rule set is immutable once loaded: one index each
        if len(_RUN_INDEXES) >= 32:
            _RUN_INDEXES.pop(next(iter(_RUN_INDEXES)))
        entry = _RUN_INDEXES[id(rules)] = (rules, _RunIndex(rules))
    return entry[1]


def _whole_units(hand: Mapping[str, Fraction | int]) -> tuple[dict[str, int], int]:
    """The held quantities (> 0) as whole numbers of a common unit ``1/scale``: the hand itself when every
    count is whole (``scale`` 1, the usual case), else scaled by the least common multiple of the
    denominators, so every bound below is integer arithmetic and one Fraction is built per answer."""
    whole: dict[str, int] = {}
    parts: dict[str, Fraction] = {}
    for item, qty in hand.items():  # integer tests only: legal moves ask this for every seat's view
        if isinstance(qty, int):
            if qty > 0:
                whole[item] = qty
            continue
        exact = qty if isinstance(qty, Fraction) else Fraction(qty)
        if exact.numerator > 0:
            if exact.denominator == 1:
                whole[item] = exact.numerator
            else:
                parts[item] = exact
    if not parts:
        return whole, 1
    scale = math.lcm(*(qty.denominator for qty in parts.values()))
    units = {item: qty * scale for item, qty in whole.items()}
    units.update({item: qty.numerator * (scale // qty.denominator) for item, qty in parts.items()})
    return units, scale


def _runnable(
    index: _RunIndex, hand: Mapping[str, Fraction | int], whole_runs: bool
) -> Iterator[tuple[int, Fraction]]:
    """(recipe number, largest run amount) of every recipe ``hand`` can run, in no particular order.

    One pass over the ingredient index sums, per recipe, what the hand holds of each pooled ingredient;
    only the recipes with every ingredient held are then bounded, so the work grows with the recipes the
    hand touches and runs, not with the rule set."""
    units, scale = _whole_units(hand)
    bounds = index.bounds
    held_sums: dict[int, list[int]] = {}
    for item, qty in units.items():
        for number, group, groups in index.fills.get(item, ()):
            sums = held_sums.get(number)
            if sums is None:
                sums = held_sums[number] = [0] * groups
            sums[group] += qty
    fuels = [(fuel, qty, index.burn_ticks[fuel]) for fuel, qty in units.items() if fuel in index.burn_ticks]
    for number, sums in held_sums.items():
        if 0 in sums:
            continue  # an ingredient with no option held
        bound = bounds[number]
        if bound.burns_fuel and not fuels:
            continue
        # the smallest of the fractions sums[g] / divisors[g], kept as (numerator, denominator)
        divisors = bound.divisors
        num, den = sums[0], divisors[0]
        for group in range(1, len(sums)):
            if sums[group] * den < num * divisors[group]:
                num, den = sums[group], divisors[group]
        if bound.burns_fuel:
            # the best single fuel: held / (units per run + what the ingredients use of it), in ticks
            fuel_num, fuel_den = 0, 1
            for fuel, qty, ticks in fuels:
                f_num, f_den = qty * ticks, index.smelt_ticks + bound.fuel_uses.get(fuel, 0) * ticks
                if f_num * fuel_den > fuel_num * f_den:
                    fuel_num, fuel_den = f_num, f_den
            if fuel_num * den < num * fuel_den:
                num, den = fuel_num, fuel_den
        den *= scale
        if num * (1 if whole_runs else MAX_RUNS) < den:
            continue  # not one whole run (whole rule), or less than the smallest step
        yield number, _clamped(num, den, whole_runs)


def iter_runnable_recipes(
    rules: RuleSet, hand: Mapping[str, Fraction | int], *, whole_runs: bool = False
) -> Iterator[tuple[Recipe, Fraction]]:
    """:func:`runnable_recipes` lazily and in no particular order: for "can it run anything at all",
    which the first hit settles (legal moves are computed for every seat after every change)."""
    index = _run_index(rules)
    for number, runs in _runnable(index, hand, whole_runs):
        yield index.bounds[number].recipe, runs


@lru_cache(maxsize=4096)  # the same few amounts (1, 2, 1/2, ...) come back hand after hand
def _clamped(num: int, den: int, whole_runs: bool) -> Fraction:
    """:func:`craft_rules.crafting.clamp_runs` of ``num / den``, computed on integers; the caller has
    checked that it is at least one step (1/MAX_RUNS, or a whole run under ``whole_runs``)."""
    if num >= MAX_RUNS * den:
        return Fraction(MAX_RUNS)
    if whole_runs:
        return Fraction(num // den)
    runs = Fraction(num, den)
    if runs.denominator <= MAX_RUNS:
        return runs
    return Fraction(num * MAX_RUNS // den, MAX_RUNS)


def runnable_recipes(
    rules: RuleSet, hand: Mapping[str, Fraction | int], *, whole_runs: bool = False
) -> list[tuple[Recipe, Fraction]]:
    """Every recipe ``hand`` can run now with the default tag and fuel choices, each with the largest
    run amount :func:`~craft_rules.crafting.craft` accepts (:func:`~craft_rules.crafting.max_runs`
    through :func:`~craft_rules.crafting.clamp_runs`), sorted by recipe id.

    With ``whole_runs`` the amounts are whole numbers and recipes the hand cannot run once are left out.
    ``hand`` uses the rule set's item ids (see :meth:`RuleSet.canonical` for prefixed names).
    """
    index = _run_index(rules)
    found = sorted(
        (index.id_rank[number], number, runs) for number, runs in _runnable(index, hand, whole_runs)
    )
    return [(index.bounds[number].recipe, runs) for _, number, runs in found]


def possible_crafts(
    rules: RuleSet, hand: Mapping[str, Fraction | int], *, whole_runs: bool = False
) -> list[PossibleCraft]:
    """Every recipe the hand can run now, with its largest run amount
    (:func:`runnable_recipes`), by result then recipe id."""
    index = _run_index(rules)
    held = {rules.canonical(item): q for item, q in hand.items() if q > 0}
    out = []
    for number, runs in sorted(_runnable(index, held, whole_runs)):  # numbered by result, then id
        recipe = index.bounds[number].recipe
        out.append(PossibleCraft(recipe.id, recipe.result, recipe.count, runs))
    return out
