"""From an LP answer to verified craft steps, and the plan the planner answers with.

The LP is a relaxation, so a plan is called feasible only after it has been *executed*: the LP solution
becomes exact Fractions, sized from the target down (producers before consumers), and runs step by step
through :func:`craft_rules.crafting.craft`. A used sub-graph with cycles (charcoal burnt to smelt logs
into charcoal) runs component by component in rounds instead, seeding a cycle with a sliver of run on
another fuel when it has nothing to start from. Under the whole crafting-runs rule the exact execution
rounds run amounts to whole numbers before anything is called craftable.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from craft_rules import budget
from craft_rules.crafting import MAX_RUNS, CraftError, craft, fmt_qty, max_runs
from craft_rules.lp import LpSolution, RecipeLp
from craft_rules.model import Recipe
from craft_rules.recipe_graph import strongly_connected

GRID = 720720  # lcm(1..16): run amounts with huge denominators are rounded up to multiples of 1/GRID
MAX_ROUNDS = 64
SEED_RUNS = Fraction(1, 64)  # how much of a cooking run a seed craft makes to start a fuel cycle
DEFAULT_RULE = ""  # in a split: no explicit option, crafting's default rule picks (whole runs only)
# the margin of the re-solve before executing in rounds: every need a little larger, every stock a
# little smaller, so rounding the LP's floats cannot leave an item short
ROUNDS_MARGIN = 1e-5


@dataclass(frozen=True)
class PlanStep:
    """One craft call: ``craft(rules, hand, recipe_id, runs, choices, fuel)``."""

    recipe_id: str
    runs: Fraction
    result: str
    produced: Fraction
    choices: Mapping[int, str] = field(default_factory=dict)
    fuel: str | None = None
    depth: int = 1  # length of the longest chain of crafts ending with this step

    def as_dict(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe_id,
            "runs": fmt_qty(self.runs),
            "result": self.result,
            "produced": fmt_qty(self.produced),
            "choices": {str(k): v for k, v in sorted(self.choices.items())},
            "fuel": self.fuel,
            "depth": self.depth,
        }


FoundPlan = tuple[tuple[PlanStep, ...], dict[str, Fraction]]
"""The steps of an executed plan and the hand they leave."""


@dataclass(frozen=True)
class Plan:
    """The planner's answer for one hand and target.

    ``craftable``: the steps were executed exactly and the final hand holds the target.
    ``missing``: when not craftable, the fewest whole items to obtain (with ``available``: from those
    items only; ``None`` when even all of them do not suffice). ``missing_plan`` crafts the target from
    the hand plus the missing items.
    """

    hand: Mapping[str, Fraction]
    target: Mapping[str, int]
    craftable: bool
    steps: tuple[PlanStep, ...] = ()
    final_hand: Mapping[str, Fraction] = field(default_factory=dict)
    missing: Mapping[str, int] | None = field(default_factory=dict)
    missing_plan: Plan | None = None

    @property
    def depth(self) -> int:
        """Longest chain of crafts in the plan (0 when the target is already held)."""
        return max((s.depth for s in self.steps), default=0)

    @property
    def craft_steps(self) -> int:
        return len(self.steps)

    @property
    def missing_units(self) -> int:
        return sum(self.missing.values()) if self.missing else 0

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "target": dict(sorted(self.target.items())),
            "hand": {k: fmt_qty(v) for k, v in sorted(self.hand.items())},
            "craftable": self.craftable,
            "missing": None if self.missing is None else dict(sorted(self.missing.items())),
            "depth": self.depth,
            "craft_steps": self.craft_steps,
            "steps": [s.as_dict() for s in self.steps],
            "final_hand": {k: fmt_qty(v) for k, v in sorted(self.final_hand.items())},
        }
        if self.missing_plan is not None:
            data["with_missing"] = {
                "depth": self.missing_plan.depth,
                "craft_steps": self.missing_plan.craft_steps,
                "steps": [s.as_dict() for s in self.missing_plan.steps],
            }
        return data


@dataclass
class Segment:
    recipe: Recipe
    runs: Fraction
    choices: dict[int, str]
    fuel: str | None


def on_grid(value: Fraction, up: bool) -> Fraction:
    """``value`` unchanged if crafting accepts its denominator, else rounded to a multiple of 1/GRID."""
    if value.denominator <= MAX_RUNS:
        return value
    scaled = value * GRID
    whole = math.ceil(scaled) if up else math.floor(scaled)
    return Fraction(whole, GRID)


def ratio(value: float, total: float, precise: bool = False) -> Fraction:
    """An LP share as a Fraction: a simple one (denominator <= 256) unless ``precise``."""
    if total <= 0:
        return Fraction(0)
    return Fraction(value / total).limit_denominator(GRID if precise else 256)


def holds(hand: Mapping[str, Fraction], need: Mapping[str, int]) -> bool:
    return all(hand.get(item, 0) >= n for item, n in need.items())


class ExactCrafts:
    """Plans as executed craft steps for one rule set and crafting-runs rule, from the LP's answers."""

    def __init__(self, lp: RecipeLp):
        self.lp = lp
        self.graph = lp.graph
        self.rules = lp.rules
        self.whole_runs = lp.whole_runs

    def snap(self, value: Fraction, up: bool) -> Fraction:
        """A run amount crafting accepts: a whole number under the whole rule (rounded ``up`` or
        down), else ``value`` on the grid of :func:`on_grid`."""
        if self.whole_runs:
            return Fraction(math.ceil(value) if up else math.floor(value))
        return on_grid(value, up)

    def solve_plan(self, hand: dict[str, Fraction], need: dict[str, int]) -> FoundPlan | None:
        """Steps that craft ``need`` from ``hand`` and the hand they leave, or None; always exact (a
        query's size limit on searches, :mod:`craft_rules.budget`, does not apply to craftability)."""
        with budget.without_size_limit():
            return self._solve_plan(hand, need)

    def _solve_plan(self, hand: dict[str, Fraction], need: dict[str, int]) -> FoundPlan | None:
        model = self.lp.build(hand, need, None, None, 1.0, 0.0)
        if model is None:
            return None
        solution = self.lp.solve(model, integral=False)
        if solution is None:
            return None
        solution = self.lp.consolidate(model, solution)
        segments = self._exact_segments(hand, need, solution)
        if segments is not None:
            done = self._execute(hand, need, segments)
            if done is None and self.whole_runs:
                # one option per craft call cannot split a whole run over two items (1 oak + 1 birch
                # plank for 4 sticks); the default rule pools the held options within one call
                pooled = [Segment(seg.recipe, seg.runs, {}, seg.fuel) for seg in segments]
                done = self._execute(hand, need, pooled)
            if done is not None:
                return done
        # Cycles in the used sub-graph, or rounding that left an item short: run the LP amounts in
        # rounds, each craft as far as the hand allows; first from a solve with a little margin
        # that absorbs rounding, then from the plain one (a plan that is exactly tight).
        margin_model = self.lp.build(hand, need, None, None, 1.0, ROUNDS_MARGIN)
        with_margin = self.lp.solve(margin_model, integral=False) if margin_model else None
        for candidate in (with_margin, solution):
            if candidate is not None:
                done = self._execute_in_rounds(hand, need, candidate)
                if done is not None:
                    return done
        return None

    def _exact_segments(
        self, hand: Mapping[str, Fraction], need: Mapping[str, int], solution: LpSolution
    ) -> list[Segment] | None:
        """Exact run amounts for the LP's support, sized from the target down (None on a cycle)."""
        rules = self.rules
        used = sorted(solution.runs)
        inputs: dict[str, set[str]] = {}
        producers: dict[str, list[str]] = {}
        consumers: dict[str, int] = {}
        for rid in used:
            items = {o for amounts in self._uses_of(rid, solution) for o in amounts}
            items |= set(solution.fuels.get(rid, {}))
            inputs[rid] = items
            producers.setdefault(rules.recipes[rid].result, []).append(rid)
            for item in items:
                consumers[item] = consumers.get(item, 0) + 1
        bounded_left = {item: Fraction(hand.get(item, 0)) for item in consumers if item not in producers}
        demand: dict[str, Fraction] = {item: Fraction(n) for item, n in need.items()}
        queue = deque(sorted(item for item in producers if consumers.get(item, 0) == 0))
        order: list[list[Segment]] = []
        sized = 0
        while queue:
            item = queue.popleft()
            deficit = demand.get(item, Fraction(0)) - hand.get(item, Fraction(0))
            makers = producers[item]
            made = [solution.runs[rid] * rules.recipes[rid].count for rid in makers]
            total = sum(made)
            shares = [ratio(m, total) for m in made]
            shares[-1] = 1 - sum(shares[:-1])
            for rid, share in zip(makers, shares, strict=True):
                sized += 1
                recipe = rules.recipes[rid]
                if deficit > 0 and share > 0:
                    runs = self.snap(deficit * share / recipe.count, up=True)
                    segments = self._split(recipe, runs, solution, bounded_left)
                    if segments is None:
                        return None
                    order.append(segments)
                    for seg in segments:
                        for consumed, qty in self._consumption(seg).items():
                            demand[consumed] = demand.get(consumed, Fraction(0)) + qty
                            if consumed in bounded_left:
                                bounded_left[consumed] -= qty
                for consumed in sorted(inputs[rid]):
                    consumers[consumed] -= 1
                    if consumers[consumed] == 0 and consumed in producers:
                        queue.append(consumed)
        if sized < len(used):
            return None  # a cycle: some producer was never sized
        if any(left < 0 for left in bounded_left.values()):
            return None
        order.reverse()
        return [seg for group in order for seg in group]

    @staticmethod
    def _uses_of(rid: str, solution: LpSolution) -> list[dict[str, float]]:
        out = []
        index = 0
        while (rid, index) in solution.uses:
            out.append(solution.uses[(rid, index)])
            index += 1
        return out

    def _split(
        self,
        recipe: Recipe,
        runs: Fraction,
        solution: LpSolution,
        bounded_left: Mapping[str, Fraction],
        precise: bool = False,
    ) -> list[Segment] | None:
        """Split ``runs`` of ``recipe`` into craft calls with one option per ingredient and one fuel,
        in the LP's proportions; an option held only in the hand is never asked for more than is left."""
        dims: list[tuple[int | None, list[tuple[str, Fraction]]]] = []
        # under the whole rule a run may need two options at once (1 oak + 1 birch plank for one run
        # of sticks): then the ingredient (or fuel) is left to the default rule, which pools them
        pooled = [(DEFAULT_RULE, runs)] if self.whole_runs else None
        for index, ing in enumerate(recipe.ingredients):
            if not ing.is_choice:
                continue
            amounts = solution.uses[(recipe.id, index)]
            lengths = self._portion(runs, amounts, bounded_left, Fraction(ing.count), precise) or pooled
            if lengths is None:
                return None
            dims.append((index, lengths))
        if recipe.burns_fuel:
            lengths = self._portion(runs, solution.fuels[recipe.id], bounded_left, None, precise) or pooled
            if lengths is None:
                return None
            dims.append((None, lengths))
        segments: list[Segment] = []
        pos = [0] * len(dims)
        left = [lengths[0][1] if lengths else Fraction(0) for _, lengths in dims]
        remaining = runs
        while remaining > 0:
            step = min([remaining, *left])
            choices: dict[int, str] = {}
            fuel = None
            for d, (index, lengths) in enumerate(dims):
                option = lengths[pos[d]][0]
                if option == DEFAULT_RULE:
                    continue
                if index is None:
                    fuel = option
                else:
                    choices[index] = option
            segments.append(Segment(recipe, step, choices, fuel))
            remaining -= step
            for d, (_, lengths) in enumerate(dims):
                left[d] -= step
                if left[d] == 0 and pos[d] + 1 < len(lengths):
                    pos[d] += 1
                    left[d] = lengths[pos[d]][1]
        return segments

    def _portion(
        self,
        runs: Fraction,
        amounts: Mapping[str, float],
        bounded_left: Mapping[str, Fraction],
        count: Fraction | None,
        precise: bool = False,
    ) -> list[tuple[str, Fraction]] | None:
        """Run lengths per option (or per fuel when ``count`` is None), summing exactly to ``runs``.

        Options only held in the hand are capped at what is left of them; producible options come
        last and absorb the rest (and any grid rounding)."""
        total = sum(amounts.values())

        def per_run(item: str) -> Fraction:
            return Fraction(count) if count is not None else self.graph.fuel_units[item]

        items = sorted(amounts, key=lambda i: (i not in bounded_left, -amounts[i], i))
        if not items:
            return None
        out: list[tuple[str, Fraction]] = []
        remaining = runs
        for n, item in enumerate(items):
            if n == len(items) - 1:
                length = remaining
            else:
                length = self.snap(runs * ratio(amounts[item], total, precise), up=False)
                length = min(length, remaining)
            if item in bounded_left:
                cap = max(bounded_left[item], Fraction(0)) / per_run(item)
                if length > cap:
                    length = self.snap(cap, up=False)
            if length > 0:
                out.append((item, length))
                remaining -= length
        if remaining > 0:  # the last option was capped: spread the rest over options with room
            for n, (item, length) in enumerate(out):
                room = (
                    max(bounded_left[item], Fraction(0)) / per_run(item) - length
                    if item in bounded_left
                    else remaining
                )
                extra = min(self.snap(room, up=False), remaining)
                if extra > 0:
                    out[n] = (item, length + extra)
                    remaining -= extra
            if remaining > 0:
                return None
        return out

    def _consumption(self, seg: Segment) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {}
        for index, ing in enumerate(seg.recipe.ingredients):
            item = seg.choices.get(index, ing.options[0])
            out[item] = out.get(item, Fraction(0)) + ing.count * seg.runs
        if seg.fuel is not None:
            out[seg.fuel] = out.get(seg.fuel, Fraction(0)) + seg.runs * self.graph.fuel_units[seg.fuel]
        return out

    def _execute(
        self, hand: Mapping[str, Fraction], need: Mapping[str, int], segments: list[Segment]
    ) -> FoundPlan | None:
        """Run the segments with exact crafting; None unless every craft succeeds and the target is held."""
        budget.check()
        current = dict(hand)
        steps: list[PlanStep] = []
        made_at: dict[str, int] = {}
        for seg in segments:
            try:
                result = craft(
                    self.rules,
                    current,
                    seg.recipe.id,
                    seg.runs,
                    seg.choices,
                    seg.fuel,
                    whole_runs=self.whole_runs,
                )
            except CraftError:
                return None
            current = result.hand
            depth = 1 + max((made_at.get(item, 0) for item in result.consumed), default=0)
            for item in result.produced:
                made_at[item] = max(made_at.get(item, 0), depth)
            steps.append(
                PlanStep(
                    seg.recipe.id,
                    seg.runs,
                    seg.recipe.result,
                    seg.runs * seg.recipe.count,
                    dict(seg.choices),
                    seg.fuel,
                    depth,
                )
            )
        if not holds(current, need):
            return None
        return tuple(steps), current

    def _execute_in_rounds(
        self, hand: Mapping[str, Fraction], need: Mapping[str, int], solution: LpSolution
    ) -> FoundPlan | None:
        """Execute LP amounts whose support has cycles.

        Recipes are grouped into strongly connected components of "feeds" and run producers first;
        inside a component every craft runs as far as the hand allows, round after round, so a
        seeded cycle (charcoal smelting logs into charcoal) grows geometrically before anything
        outside it consumes its output. A final pass mops up, stopping once the target is held."""
        rules = self.rules
        pending: dict[str, list[list[Any]]] = {}
        for rid in sorted(solution.runs):
            recipe = rules.recipes[rid]
            runs = Fraction(solution.runs[rid]).limit_denominator(GRID)
            segments = self._split(recipe, self.snap(runs, up=True), solution, {}, precise=True)
            pending[rid] = [[seg, seg.runs] for seg in segments or ()]
        feeds: dict[str, set[str]] = {rid: set() for rid in pending}
        for rid, entries in pending.items():
            made = {rules.recipes[rid].result}
            made |= {
                rules.fuels.remainders[seg.fuel] for seg, _ in entries if seg.fuel in rules.fuels.remainders
            }
            for other, other_entries in pending.items():
                if any(made & self._consumption(seg).keys() for seg, _ in other_entries):
                    feeds[rid].add(other)
        comp = strongly_connected(sorted(feeds), feeds)  # components complete sinks first
        groups: dict[int, list[list[Any]]] = {}
        for rid in sorted(pending):
            groups.setdefault(comp[rid], []).extend(pending[rid])
        stages = [groups[c] for c in sorted(groups, reverse=True)]
        stages.append([entry for group in stages for entry in group])  # mop-up pass over everything
        run = _RoundsRun(self, dict(hand), need)
        for stage in stages:
            if run.rounds(stage):
                return tuple(run.steps), run.current
        return None

    def seed(self, hand: Mapping[str, Fraction], seg: Segment, left: Fraction) -> tuple[str | None, Fraction]:
        burn = self.rules.fuels.burn_ticks
        for fuel in sorted((f for f in hand if f in burn and f != seg.fuel), key=lambda f: (burn[f], f)):
            afford = max_runs(self.rules, hand, seg.recipe, seg.choices, fuel)
            seed = Fraction(1) if self.whole_runs else SEED_RUNS
            amount = self.snap(min(left, afford, seed), up=False)
            if amount > 0:
                return fuel, amount
        return seg.fuel, Fraction(0)


class _RoundsRun:
    """The state of one execution in rounds: the hand so far and the steps taken."""

    def __init__(self, crafts: ExactCrafts, hand: dict[str, Fraction], need: Mapping[str, int]):
        self.crafts = crafts
        self.current = hand
        self.need = need
        self.steps: list[PlanStep] = []
        self.made_at: dict[str, int] = {}

    def rounds(self, entries: list[list[Any]]) -> bool:
        """Run ``entries`` ([segment, runs left]) round after round; True once the target is held."""
        rules = self.crafts.rules
        seeding = False
        for _ in range(MAX_ROUNDS):
            budget.check()  # up to 64 rounds of exact crafts: the costliest Python part of a plan
            progress = False
            for entry in entries:
                seg, left = entry
                if left <= 0:
                    continue
                fuel = seg.fuel
                afford = max_runs(rules, self.current, seg.recipe, seg.choices, fuel)
                amount = self.crafts.snap(min(left, afford), up=False)
                if amount <= 0 and fuel is not None and seeding:
                    # stuck: its fuel is made by this cycle and none is held yet (charcoal to smelt
                    # logs into charcoal): seed it with a sliver of run on the cheapest other fuel
                    fuel, amount = self.crafts.seed(self.current, seg, left)
                    seeding = amount <= 0
                if amount <= 0:
                    continue
                try:
                    result = craft(
                        rules,
                        self.current,
                        seg.recipe.id,
                        amount,
                        seg.choices,
                        fuel,
                        whole_runs=self.crafts.whole_runs,
                    )
                except CraftError:
                    continue
                self.current = result.hand
                entry[1] = left - amount
                progress = True
                depth = 1 + max((self.made_at.get(item, 0) for item in result.consumed), default=0)
                for item in result.produced:
                    self.made_at[item] = max(self.made_at.get(item, 0), depth)
                made = amount * seg.recipe.count
                step = PlanStep(
                    seg.recipe.id, amount, seg.recipe.result, made, dict(seg.choices), fuel, depth
                )
                self.steps.append(step)
                if holds(self.current, self.need):
                    return True
            if all(left <= 0 for _, left in entries):
                return False
            if not progress:
                if seeding:
                    return False
                seeding = True  # one seed craft, only once nothing else can move
        return False
