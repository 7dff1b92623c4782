"""What a hand can craft now: every recipe it can run, with the largest run amount, as the engine's legal
moves, the planner, the bots, the GUI and the action masks all ask it (no LP).

"What can this hand run" has one answer, :func:`runnable_recipes` (with
:func:`craft_rules.crafting.clamp_runs` and the one run limit :data:`craft_rules.crafting.MAX_RUNS`), so
they all agree with what :func:`craft_rules.crafting.craft` accepts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from craft_rules.crafting import clamp_runs, fmt_qty, max_runs
from craft_rules.model import Recipe, RuleSet


@dataclass(frozen=True)
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


def iter_runnable_recipes(
    rules: RuleSet, hand: Mapping[str, Fraction], *, whole_runs: bool = False
) -> Iterator[tuple[Recipe, Fraction]]:
    """:func:`runnable_recipes` lazily and in no particular order: for "can it run anything at all",
    which the first hit settles (legal moves are computed for every seat after every change)."""
    held = {item for item, qty in hand.items() if qty > 0}
    has_fuel = not held.isdisjoint(rules.fuels.burn_ticks)
    seen: set[str] = set()
    for item in held:
        for recipe in rules.recipes_by_ingredient.get(item, ()):
            if recipe.id in seen:
                continue
            seen.add(recipe.id)
            # cheap filter before the exact max_runs: a recipe missing an ingredient (or fuel) cannot run
            if recipe.burns_fuel and not has_fuel:
                continue
            if any(held.isdisjoint(ing.options) for ing in recipe.ingredients):
                continue
            runs = clamp_runs(max_runs(rules, hand, recipe), whole_runs=whole_runs)
            if runs > 0:
                yield recipe, runs


def runnable_recipes(
    rules: RuleSet, hand: Mapping[str, Fraction], *, whole_runs: bool = False
) -> list[tuple[Recipe, Fraction]]:
    """Every recipe ``hand`` can run now with the default tag and fuel choices, each with the largest
    run amount :func:`craft` accepts (:func:`max_runs` through :func:`clamp_runs`), sorted by recipe id.

    With ``whole_runs`` the amounts are whole numbers and recipes the hand cannot run once are left out.
    ``hand`` uses the rule set's item ids (see :meth:`RuleSet.canonical` for prefixed names).
    """
    return sorted(iter_runnable_recipes(rules, hand, whole_runs=whole_runs), key=lambda pair: pair[0].id)


def possible_crafts(
    rules: RuleSet, hand: Mapping[str, Fraction | int], *, whole_runs: bool = False
) -> list[PossibleCraft]:
    """Every recipe the hand can run now, with its largest run amount
    (:func:`runnable_recipes`), by result then recipe id."""
    held = {rules.canonical(item): Fraction(q) for item, q in hand.items() if q > 0}
    out = [
        PossibleCraft(recipe.id, recipe.result, recipe.count, runs)
        for recipe, runs in runnable_recipes(rules, held, whole_runs=whole_runs)
    ]
    out.sort(key=lambda p: (p.result, p.recipe_id))
    return out
