"""Missing items: the fewest whole items a hand must obtain to craft a target, as small integer programs.

Integer slack variables on the LP of :mod:`craft_rules.lp` say what to obtain: the fewest whole items
(from ``available`` if given), then raw materials (:attr:`RecipeGraph.obtain_rank`), then the simplest
plan, then versatile items. Every answer is verified by executing a plan (:mod:`craft_rules.plan_crafts`)
on the hand with the items added. Also here: the fewest kinds of items to add, and the smallest sub-hand
of a pool that crafts a target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from craft_rules.budget import SearchTooLarge, exact_limit, note_approximated, relaxed_check
from craft_rules.lp import LpModel, LpSolution, RecipeLp
from craft_rules.plan_crafts import FoundPlan, Plan

MAX_DIVE_ROUNDS = 6
"""Rounds of :meth:`MissingItems._rounding_dive`: each solves one LP and checks one plan."""


class MissingItems:
    """What to obtain, for one rule set and crafting-runs rule.

    ``find_plan``: the planner's "can this hand craft that" (which remembers answers within a
    computation), used to verify every answer."""

    def __init__(
        self, lp: RecipeLp, find_plan: Callable[[dict[str, Fraction], dict[str, int]], FoundPlan | None]
    ):
        self.lp = lp
        self.rules = lp.rules
        self.find_plan = find_plan

    def find(
        self,
        hand: dict[str, Fraction],
        need: dict[str, int],
        available: Mapping[str, int] | None,
        never: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, int] | None, Plan | None]:
        """The fewest whole items to add so ``hand`` crafts ``need`` (from ``available`` if given, else
        any item but ``never`` if possible), and the plan that then crafts it; (None, None) when even
        all of ``available`` does not suffice."""
        if available is None:
            anc_items, _ = self.lp.ancestors(need, fuel_leaves=True)
            useful = self._useful_to_obtain(anc_items, need)
            obtainable: dict[str, int | None] = dict.fromkeys(i for i in useful if i not in never)
        else:
            obtainable = {self.rules.canonical(k): int(v) for k, v in available.items() if v > 0}
        model = self.lp.build(hand, need, obtainable, None, 1.0, 0.0, fuel_leaves=available is None)
        if model is not None and available is None and exact_limit() is not None:
            keep_one_of_interchangeable(model, frozenset(need))
        solution = self.lp.solve(model, integral=True) if model else None
        if solution is not None:
            missing = {item: math.ceil(q - 1e-6) for item, q in solution.slack.items()}
            missing = {k: v for k, v in sorted(missing.items()) if v > 0}
            if solution.relaxed_from and available is None:
                # the relaxation likes fractions of compressed items (1/9 of a coal block): search
                # exactly among the items it used and what they are made from, a handful
                narrowed = self._narrowed_search(hand, need, solution.slack)
                if narrowed is not None:
                    note_approximated()
                    return narrowed
            if solution.relaxed_from:
                plan = self.relaxed_verified_with(hand, need, missing)
            else:
                plan = self.verified_with(hand, need, missing)
            if plan is not None:
                if solution.relaxed_from:
                    note_approximated()
                return missing, plan
            if solution.relaxed_from and model is not None:
                dived = self._rounding_dive(hand, need, model, solution)
                if dived is not None:
                    note_approximated()
                    return dived
            if solution.relaxed_from:  # the search was over its size limit: no answer from it
                raise SearchTooLarge(solution.relaxed_from, exact_limit() or 0)
        # The relaxation was too optimistic (rare): fall back to obtaining what the target lacks.
        direct = {item: n - math.floor(hand.get(item, 0)) for item, n in need.items()}
        direct = {k: v for k, v in sorted(direct.items()) if v > 0}
        if available is not None and any(available.get(k, 0) < v for k, v in direct.items()):
            return None, None
        return direct, self.verified_with(hand, need, direct)

    def _narrowed_search(
        self, hand: dict[str, Fraction], need: dict[str, int], relaxed: Mapping[str, float]
    ) -> tuple[dict[str, int], Plan] | None:
        """The fewest whole items among those a relaxed search obtained and their recipes' ingredients
        (at most the size limit's worth), with fractional runs; None unless its answer verifies."""
        limit = exact_limit() or 0
        candidates = set(relaxed)
        for item in sorted(relaxed):
            for recipe in self.rules.recipes_by_result.get(item, ()):
                candidates.update(ing.options[0] for ing in recipe.ingredients)
        if len(candidates) > limit:
            return None
        model = self.lp.build(hand, need, dict.fromkeys(sorted(candidates)), None, 1.0, 0.0)
        if model is None:
            return None
        model.runs_continuous = True
        solution = self.lp.solve(model, integral=True)
        if solution is None or solution.relaxed_from:
            return None
        missing = {item: math.ceil(q - 1e-6) for item, q in solution.slack.items()}
        missing = {k: v for k, v in sorted(missing.items()) if v > 0}
        plan = self.relaxed_verified_with(hand, need, missing)
        return None if plan is None else (missing, plan)

    def _rounding_dive(
        self, hand: dict[str, Fraction], need: dict[str, int], model: LpModel, solution: LpSolution
    ) -> tuple[dict[str, int], Plan] | None:
        """A verified answer from rounding the relaxation step by step, for a search over the size
        limit: every fractional amount it uses (runs under the whole rule, items to obtain) is fixed at
        no less than its next whole number and the relaxation solved again, at most
        ``MAX_DIVE_ROUNDS`` times (each a plain LP, milliseconds). Whole items that make a plan, but
        not proven the fewest; None when no round verifies."""
        floors: dict[int, int] = {}
        fractional_runs = self.lp.whole_runs
        for _ in range(MAX_DIVE_ROUNDS):
            assert solution.x is not None
            fixed = {}
            if fractional_runs:
                fixed.update({col: solution.x[col] for col in model.x_col.values()})
            fixed.update({col: solution.x[col] for col in model.slack_col.values()})
            raised = {
                col: math.ceil(value - 1e-6)
                for col, value in fixed.items()
                if value > 1e-6
                and abs(value - round(value)) > 1e-6
                and floors.get(col, 0) < math.ceil(value - 1e-6)
            }
            if not raised:
                return None
            for col, whole in raised.items():
                floors[col] = whole
                row = model.new_row(-float(whole))  # -x <= -whole: at least ``whole``
                model.add(row, col, -1.0)
            next_solution = self.lp.solve(model, integral=True)
            if next_solution is None:
                return None
            solution = next_solution
            missing = {item: math.ceil(q - 1e-6) for item, q in solution.slack.items()}
            missing = {k: v for k, v in sorted(missing.items()) if v > 0}
            plan = self.relaxed_verified_with(hand, need, missing)
            if plan is not None:
                return missing, plan
        return None

    def _useful_to_obtain(self, items: Iterable[str], need: Mapping[str, int]) -> list[str]:
        """``items`` without the fuels nobody would obtain: a fuel that is no recipe's ingredient (and
        not a target) is dropped when another such fuel burns at least as long and ranks as raw."""
        rules = self.rules
        burn = rules.fuels.burn_ticks
        rank = self.lp.graph.obtain_rank
        versatility = self.lp.graph.item_versatility
        pure = [i for i in items if i in burn and not versatility.get(i, 0) and i not in need]
        keep = set(items) - set(pure)
        for fuel in pure:
            dominated = any(
                other != fuel
                and burn[other] >= burn[fuel]
                and rank.get(other, 0) <= rank.get(fuel, 0)
                and (burn[other], -rank.get(other, 0), other) > (burn[fuel], -rank.get(fuel, 0), fuel)
                for other in pure
            )
            if not dominated:
                keep.add(fuel)
        return sorted(keep)

    def relaxed_verified_with(
        self, hand: dict[str, Fraction], need: dict[str, int], extra: Mapping[str, int]
    ) -> Plan | None:
        """:meth:`verified_with` for an answer from a relaxation, within a query's bound on its check."""
        with relaxed_check():
            return self.verified_with(hand, need, extra)

    def verified_with(
        self, hand: dict[str, Fraction], need: dict[str, int], extra: Mapping[str, int]
    ) -> Plan | None:
        combined = dict(hand)
        for item, qty in extra.items():
            combined[item] = combined.get(item, Fraction(0)) + qty
        found = self.find_plan(combined, need)
        if found is None:
            return None
        return Plan(combined, need, True, found[0], found[1])

    def fewest_kinds(
        self, hand: dict[str, Fraction], need: dict[str, int], available: Mapping[str, int]
    ) -> dict[str, int] | None:
        """Items to add from ``available`` so that ``hand``, which cannot craft ``need``, can: as few
        distinct kinds as possible (then as few units); None if even all of ``available`` does not
        suffice (see :meth:`craft_rules.planner.Planner.fewest_kinds`)."""
        bounds = {self.rules.canonical(k): int(v) for k, v in available.items() if v > 0}
        total = sum(bounds.values()) + 1
        model = self.lp.build(hand, need, bounds, dict.fromkeys(bounds, 1.0), 1e-4, 0.0)
        if model is None or not model.slack_col:
            return None
        for item, col in model.slack_col.items():  # units of a kind only once its indicator is 1
            indicator = model.new_col(float(total), 1.0)
            model.integer_cols.append(indicator)
            row = model.new_row(0.0)
            model.add(row, col, 1.0)
            model.add(row, indicator, -float(bounds[item]))
        solution = self.lp.solve(model, integral=True)
        if solution is not None:
            taken = {item: math.ceil(q - 1e-6) for item, q in solution.slack.items()}
            taken = {k: v for k, v in sorted(taken.items()) if v > 0}
            if self.verified_with(hand, need, taken) is not None:
                return taken
        return self.find(hand, need, bounds)[0]  # the relaxation was too optimistic

    def min_units(
        self, need: dict[str, int], pool: Mapping[str, int], favour: str | None = None
    ) -> tuple[int, dict[str, int]] | None:
        """The smallest sub-hand of ``pool`` (fewest whole items) that crafts ``need`` in one phase.

        Returns (units, sub-hand) or None if the pool cannot craft the target (by the LP relaxation).
        With ``favour``, among the smallest sub-hands one using as many units of that item as possible.
        """
        bounds = {item: int(q) for item, q in pool.items() if q > 0}
        total = sum(bounds.values()) + 1
        cost = {item: float(total) for item in bounds}
        if favour is not None and favour in cost:
            cost[favour] -= 1.0
        # a pinch of consumption cost breaks the many ties between equivalent plans: the MILP solves
        # about twice as fast, and units (cost ``total`` each) still decide
        model = self.lp.build({}, need, bounds, cost, 1e-4, 0.0)
        if model is None:
            return None
        solution = self.lp.solve(model, integral=True)
        if solution is None:
            return None
        taken = {item: round(q) for item, q in solution.slack.items() if round(q) > 0}
        return sum(taken.values()), taken


def keep_one_of_interchangeable(model: LpModel, need: frozenset[str]) -> None:
    """Drop the candidates to obtain (unbounded slack columns) that another candidate can stand in for
    exactly, keeping the cheapest of each such class; it shrinks a query's search for what to obtain
    from anywhere by half or more (nine kinds of planks, boats, slabs... each become one).

    Two items are interchangeable to obtain when every use of either in the model is a column with the
    same effect on every other row (both fill the same option pools, or burn as the same fuel): a unit
    of one can replace a unit of the other in any plan, so the fewest units stay the fewest. Items the
    target needs, or a recipe consumes as its only option, are never dropped."""
    entries: dict[int, list[tuple[int, float]]] = {}
    by_row: dict[int, list[tuple[int, float]]] = {}
    for row, col, value in zip(model.rows, model.cols, model.vals, strict=True):
        entries.setdefault(col, []).append((row, value))
        by_row.setdefault(row, []).append((col, value))
    run_cols = set(model.x_col.values())
    classes: dict[frozenset[tuple[Any, ...]], list[tuple[float, str]]] = {}
    for item, slack in model.slack_col.items():
        (item_row, _), *_ = entries[slack]
        consumers = [(col, value) for col, value in by_row[item_row] if value > 0]
        if item in need or any(col in run_cols for col, _ in consumers):
            continue
        signature = frozenset(
            (value, model.cost[col], *sorted((r, v) for r, v in entries[col] if r != item_row))
            for col, value in consumers
        )
        classes.setdefault(signature, []).append((model.cost[slack], item))
    for members in classes.values():
        for _, item in sorted(members)[1:]:
            model.col_upper[model.slack_col.pop(item)] = 0.0
