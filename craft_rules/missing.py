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

from craft_rules.lp import RecipeLp
from craft_rules.plan_crafts import FoundPlan, Plan

# Under the whole rule, a search for what to obtain from anywhere with this many candidate items solves
# with fractional runs: integer runs and that many integer items take HiGHS up to 2.5 s at the root (64
# carpets from a hand of every raw material), fractional runs milliseconds. The answer is still verified
# by executing a whole-runs plan; it may then ask for an item more than the fewest.
RELAX_RUNS_FROM_CANDIDATES = 60


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
        tries: tuple[bool, ...] = ()  # runs_relaxed of each solve
        if model is not None:
            many = available is None and len(model.slack_col) >= RELAX_RUNS_FROM_CANDIDATES
            tries = (True, False) if many and self.lp.whole_runs else (False,)
        for runs_relaxed in tries:
            assert model is not None
            model.runs_relaxed = runs_relaxed  # if a relaxed answer fails its check, integer runs after all
            solution = self.lp.solve(model, integral=True)
            if solution is not None:
                missing = {item: math.ceil(q - 1e-6) for item, q in solution.slack.items()}
                missing = {k: v for k, v in sorted(missing.items()) if v > 0}
                plan = self.verified_with(hand, need, missing)
                if plan is not None:
                    return missing, plan
        # The relaxation was too optimistic (rare): fall back to obtaining what the target lacks.
        direct = {item: n - math.floor(hand.get(item, 0)) for item, n in need.items()}
        direct = {k: v for k, v in sorted(direct.items()) if v > 0}
        if available is not None and any(available.get(k, 0) < v for k, v in direct.items()):
            return None, None
        return direct, self.verified_with(hand, need, direct)

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
