"""The planner: can a hand craft a target within one craft phase, what is missing, how deep is it.

:class:`Planner` is the one object callers ask (one per rule set and crafting-runs rule, from
:func:`planner_for`); it holds the indexes and caches and wires the parts, each in its own module:

- :mod:`craft_rules.recipe_graph`: the recipe graph (levels, ancestor sub-graphs, what can ever fire);
- :mod:`craft_rules.lp`: the LP/MILP over recipe runs, solved by scipy's HiGHS;
- :mod:`craft_rules.plan_crafts`: from an LP answer to exact, executed craft steps (:class:`Plan`);
- :mod:`craft_rules.missing`: the fewest items to obtain (small MILPs, verified by execution);
- :mod:`craft_rules.plan_inputs`: hands and targets read from JSON, and the planner's errors.

The LP-free answers live beside the crafting code: :mod:`craft_rules.possible_crafts` (what a hand can
run now) and :mod:`craft_rules.item_info`.

Under the **whole** crafting-runs rule (``planner_for(rules, whole_runs=True)``, the original game's
server) every recipe runs a whole number of times: the run variables become integers and the exact
execution rounds run amounts to whole numbers before anything is called craftable.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from craft_rules import budget
from craft_rules.item_info import ItemDetails, item_info
from craft_rules.lp import RecipeLp, load_solver
from craft_rules.missing import MissingItems
from craft_rules.model import RuleSet
from craft_rules.plan_crafts import ExactCrafts, FoundPlan, Plan, holds
from craft_rules.plan_inputs import clean_hand, clean_target
from craft_rules.possible_crafts import PossibleCraft, possible_crafts
from craft_rules.recipe_graph import RecipeGraph

# Plans one computation remembers (Planner.remembering): a task validator asks the same "can this hand
# craft that" several times (half of its plan solves were repeats).
REMEMBERED_PLANS = 1024


@dataclass
class _Memo:
    """What one computation remembers (see :meth:`Planner.remembering`)."""

    plans: dict[tuple[Any, ...], Any]
    ancestors: dict[tuple[frozenset[str], bool], tuple[frozenset[str], frozenset[str]]] | None


class Planner:
    """Planning queries over one rule set and crafting-runs rule (see :func:`planner_for`).

    ``whole_runs``: plans run every recipe a whole number of times (the ``whole`` rule)."""

    def __init__(self, rules: RuleSet, whole_runs: bool = False):
        self.rules = rules
        self.whole_runs = whole_runs
        self.graph = RecipeGraph(rules)
        self.lp = RecipeLp(self.graph, whole_runs, self.ancestors)
        self.crafts = ExactCrafts(self.lp)
        self.missing_items = MissingItems(self.lp, self._find_plan)
        self._ancestors_cached = lru_cache(maxsize=4096)(self.graph.ancestors)
        self._memo = threading.local()

    def prepare(self) -> None:
        """Do the one-time work now (the solver's imports, the graph's item levels and ranks), so a
        computation under a CPU budget (:mod:`craft_rules.budget`) spends it on its own question."""
        load_solver()
        for indexes in (self.graph.item_levels, self.graph.obtain_rank, self.graph.item_versatility):
            assert indexes is not None

    @contextmanager
    def remembering(self, *, private: bool = False) -> Iterator[None]:
        """Within the block, this thread's repeated plan questions are solved once. The memo ends with
        the outermost block: it is one computation's, never shared with another caller, whose answer
        would otherwise come back faster when someone else had asked the same (a timing side channel).

        ``private``: the block neither reads nor fills the planner's shared cache of ancestor sub-graphs
        either, so how fast it is answered does not depend on which targets anyone planned for before
        (a player's query about the opponent's secret target would otherwise come back faster)."""
        outer = getattr(self._memo, "block", None)
        if outer is not None and (outer.ancestors is not None or not private):
            yield  # the enclosing computation's memo (as private or more)
            return
        self._memo.block = _Memo({}, {} if private else None)
        try:
            yield
        finally:
            self._memo.block = outer

    def ancestors(
        self, target_items: Iterable[str], fuel_leaves: bool = False
    ) -> tuple[frozenset[str], frozenset[str]]:
        """(items, recipe ids) that can feed the target items (:meth:`RecipeGraph.ancestors`), cached:
        in the planner's shared cache, or inside a private block (:meth:`remembering`) in its own."""
        key = frozenset(target_items)
        block = getattr(self._memo, "block", None)
        if block is None or block.ancestors is None:
            return self._ancestors_cached(key, fuel_leaves)
        found = block.ancestors.get((key, fuel_leaves))
        if found is None:
            found = block.ancestors[key, fuel_leaves] = self.graph.ancestors(key, fuel_leaves)
        return found

    # --- in-phase queries --------------------------------------------------------------------------
    def possible_crafts(self, hand: Mapping[str, Fraction | int]) -> list[PossibleCraft]:
        """:func:`craft_rules.possible_crafts.possible_crafts` under this planner's crafting-runs rule."""
        return possible_crafts(self.rules, hand, whole_runs=self.whole_runs)

    def item_info(self, item: str) -> ItemDetails:
        return item_info(self.rules, item)

    # --- planning ----------------------------------------------------------------------------------
    def plan(
        self,
        hand: Mapping[str, Fraction | int],
        target: Mapping[str, int],
        available: Mapping[str, int] | None = None,
        find_missing: bool = True,
    ) -> Plan:
        """Craft ``target`` from ``hand`` within one phase, or say what is missing.

        ``available``: items that could be obtained from others (e.g. their pooled hands); when None,
        any item may be obtained.
        """
        hand_f = clean_hand(self.rules, hand)
        need = clean_target(self.rules, target)
        found = self._find_plan(hand_f, need)
        if found is not None:
            steps, final = found
            return Plan(hand_f, need, True, steps, final)
        if not find_missing:
            return Plan(hand_f, need, False, final_hand=hand_f)
        missing, missing_plan = self.missing_items.find(hand_f, need, available)
        return Plan(hand_f, need, False, final_hand=hand_f, missing=missing, missing_plan=missing_plan)

    def can_craft(self, hand: Mapping[str, Fraction | int], target: Mapping[str, int]) -> bool:
        return self._find_plan(clean_hand(self.rules, hand), clean_target(self.rules, target)) is not None

    def missing(
        self,
        hand: Mapping[str, Fraction | int],
        target: Mapping[str, int],
        available: Mapping[str, int] | None = None,
        *,
        never: Iterable[str] = (),
    ) -> dict[str, int] | None:
        """Fewest whole items to add to ``hand`` so the target becomes craftable ({} if it already is).

        None when ``available`` is given and even all of it does not suffice. ``never``: items not to
        obtain when any item may be (``available`` None), e.g. the target itself; if nothing else will do,
        the answer may still name them.
        """
        hand_f = clean_hand(self.rules, hand)
        need = clean_target(self.rules, target)
        if self._find_plan(hand_f, need) is not None:
            return {}
        return self.missing_items.find(hand_f, need, available, frozenset(never))[0]

    def fewest_kinds(
        self,
        hand: Mapping[str, Fraction | int],
        target: Mapping[str, int],
        available: Mapping[str, int],
    ) -> dict[str, int] | None:
        """Items to add from ``available`` so the target becomes craftable, with as few distinct
        kinds as possible (then as few units): ``{}`` if it already is, None if even all of
        ``available`` does not suffice. The answer is verified by executing a plan."""
        hand_f = clean_hand(self.rules, hand)
        need = clean_target(self.rules, target)
        if self._find_plan(hand_f, need) is not None:
            return {}
        return self.missing_items.fewest_kinds(hand_f, need, available)

    def lp_feasible(
        self, hand: Mapping[str, Fraction | int], target: Mapping[str, int], margin: float = 0.0
    ) -> bool:
        """The LP relaxation alone (no exact execution): False proves the target cannot be crafted."""
        hand_f = clean_hand(self.rules, hand)
        need = clean_target(self.rules, target)
        if holds(hand_f, need):
            return True
        model = self.lp.build(hand_f, need, None, None, 1.0, margin)
        return model is not None and self.lp.solve(model, integral=False) is not None

    def min_units(
        self,
        target: Mapping[str, int],
        pool: Mapping[str, int],
        favour: str | None = None,
    ) -> tuple[int, dict[str, int]] | None:
        """The smallest sub-hand of ``pool`` (fewest whole items) that crafts ``target`` in one phase.

        Returns (units, sub-hand) or None if the pool cannot craft the target (by the LP relaxation).
        With ``favour``, among the smallest sub-hands one using as many units of that item as possible.
        """
        return self.missing_items.min_units(clean_target(self.rules, target), pool, favour)

    def relevant_items(
        self, target: Mapping[str, int], pool: Iterable[str], *, through_crafted_fuel: bool = True
    ) -> frozenset[str]:
        """Items that some recipe chain the pool can run towards the target could use.

        With ``through_crafted_fuel=False`` a chain may burn a fuel but not craft one: an item whose only
        way to the target is being made into a fuel (an iron ingot into a smithing table, burnt to smelt
        a log into charcoal for a torch) is left out; the reference values value such an item only when
        a smallest sub-hand uses it."""
        need = clean_target(self.rules, target)
        _, anc_recipes = self.ancestors(need, fuel_leaves=not through_crafted_fuel)
        reach, fired = self.graph.fireable(pool, anc_recipes)
        used: set[str] = set(need)
        has_fuel_recipe = False
        for rid in fired:
            recipe = self.rules.recipes[rid]
            for ing in recipe.ingredients:
                used.update(o for o in ing.options if o in reach)
            has_fuel_recipe = has_fuel_recipe or recipe.burns_fuel
        if has_fuel_recipe:
            used.update(f for f in self.rules.fuels.burn_ticks if f in reach)
        return frozenset(used)

    def _find_plan(self, hand: dict[str, Fraction], need: dict[str, int]) -> FoundPlan | None:
        """A plan's steps and final hand, or None; remembered within a :meth:`remembering` block."""
        if holds(hand, need):
            return (), dict(hand)
        block = getattr(self._memo, "block", None)
        if block is None:
            return self.crafts.solve_plan(hand, need)
        memo = block.plans
        key = (tuple(hand.items()), tuple(need.items()))  # the caller's order: the answer it would get
        if key not in memo:
            found = self.crafts.solve_plan(hand, need)
            if found is None and budget.check_limit() is not None:
                return None  # maybe only too big to check now (budget.relaxed_check): not a fact to remember
            if len(memo) >= REMEMBERED_PLANS:
                memo.pop(next(iter(memo)))
            memo[key] = None if found is None else (found[0], tuple(found[1].items()))
        remembered = memo[key]
        return None if remembered is None else (remembered[0], dict(remembered[1]))


_PLANNERS: dict[tuple[int, bool], tuple[RuleSet, Planner]] = {}
_PLANNERS_LOCK = threading.Lock()


def planner_for(rules: RuleSet, whole_runs: bool = False) -> Planner:
    """The cached :class:`Planner` of a rule set (immutable once loaded) and crafting-runs rule
    (``whole_runs``: the ``whole`` rule, whole runs of every recipe)."""
    key = (id(rules), whole_runs)
    with _PLANNERS_LOCK:
        entry = _PLANNERS.get(key)
        if entry is None or entry[0] is not rules:
            if len(_PLANNERS) >= 32:
                _PLANNERS.pop(next(iter(_PLANNERS)))
            entry = (rules, Planner(rules, whole_runs))
            _PLANNERS[key] = entry
        return entry[1]
