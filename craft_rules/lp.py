"""The LP/MILP over recipe runs (DESIGN.md §6): building it for a hand and a target, solving it with
scipy's HiGHS, and reading the answer back as run amounts, ingredient mixes, fuels and obtained items.

Variables are the run amounts of the recipes that can matter (the target's ancestor sub-graph, restricted
to the recipes the hand can ever fire) and conversion variables: which option fills a tag/alternative
ingredient (one *pool* per option set) and which fuel burns for cooking runs (one *pool* of fuel; burning
happens only for a cooking run, and returns remainders such as the bucket of a lava bucket). For every
item: ``hand + produced - consumed >= target need``. The objective keeps plans plain: consuming crafted
items costs more than raw ones, fuel costs the same per run whatever it is, and where the LP mixes items
in a pool a second solve tries a single one. Under the whole crafting-runs rule the run variables are
integers (a MILP); fuel still burns in proportion (a continuous conversion).
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from craft_rules import budget
from craft_rules.model import Recipe
from craft_rules.recipe_graph import RecipeGraph

if TYPE_CHECKING:  # numpy and scipy load only when an LP is solved (see RecipeLp.solve): cheap CLI start
    import numpy as np

RUN_COST = 1e-3  # a little cost per run keeps pointless cycles out of LP solutions
# Missing mode ranks answers by: fewest units obtained; then raw materials (obtain_rank); then the
# simplest plan (consumption costs); then items with many uses (what players actually trade for).
OBTAIN_COST = 1e5
LEVEL_COST = 1e3
VERSATILITY_COST = 0.5
TOL = 1e-9
MAX_LEVEL_WEIGHT = 8
FUEL_UNIT_COST = 0.01
HEAT = "heat"  # the fuel pool: every fuel can fire every cooking recipe
MAX_SOLVE_SECONDS = 20.0  # one MILP's wall-clock limit (then its best answer so far)


@dataclass
class Pool:
    """A conversion pool: several items can each supply a shared resource.

    The options of a tag/alternative ingredient (1 unit of resource per unit of item), or the fuels
    (one unit of resource = fuel for one cooking run). Recipes draw from the pool; the LP decides which
    items fill it, and every recipe drawing from it uses the same mix.
    """

    key: str
    row: int
    members: list[tuple[str, int, float]] = field(default_factory=list)  # (item, column, per unit)


@dataclass
class LpModel:
    """One LP/MILP over the recipes that can matter for (hand, target)."""

    recipes: list[Recipe]
    x_col: dict[str, int]
    pools: dict[str, Pool]
    ingredient_pool: dict[tuple[str, int], str]  # ingredients with several usable options
    single_option: dict[tuple[str, int], str]  # ingredients with one usable option -> that option
    heat_pool: dict[str, str]  # fuel-burning recipe id -> heat pool key
    slack_col: dict[str, int]
    cost: list[float]
    col_upper: list[float]
    rows: list[int]
    cols: list[int]
    vals: list[float]
    rhs: list[float]
    equal_rows: set[int] = field(default_factory=set)  # rows that must hold with equality
    integer_cols: list[int] = field(default_factory=list)  # further integer columns (0/1 indicators)
    # under the whole rule, fractional runs all the same (a small search for what to obtain; its answer
    # is verified by executing a whole-runs plan)
    runs_continuous: bool = False

    def new_col(self, cost: float, upper: float = math.inf) -> int:
        self.cost.append(cost)
        self.col_upper.append(upper)
        return len(self.cost) - 1

    def new_row(self, rhs: float) -> int:
        self.rhs.append(rhs)
        return len(self.rhs) - 1

    def add(self, row: int, col: int, value: float) -> None:
        self.rows.append(row)
        self.cols.append(col)
        self.vals.append(value)


@dataclass
class LpSolution:
    runs: dict[str, float]
    uses: dict[tuple[str, int], dict[str, float]]  # every ingredient -> {item: units}
    fuels: dict[str, dict[str, float]]  # recipe id -> {fuel: runs it fuels}
    slack: dict[str, float]
    objective: float
    x: np.ndarray | None = None  # the LP's column values
    # the integer columns of the MILP this solution relaxes (over budget.exact_limit), else 0: the
    # answer is fractional where it should be whole, and the caller must verify it by executing a plan
    relaxed_from: int = 0


_STDOUT_LOCK = threading.Lock()
# Swapping descriptor 1 also swallows what other threads print meanwhile, so only command-line use
# (where --json output must stay clean) turns it on; a server leaves the stray line in its log.
SILENCE_SOLVER_STDOUT = False


@contextmanager
def quiet_solver_stdout() -> Iterator[None]:
    """Discard whatever is written to file descriptor 1 for the duration (when
    :data:`SILENCE_SOLVER_STDOUT` is on).

    Why a descriptor swap and not a solver option: scipy's ``milp`` already turns HiGHS' logging off
    (``disp=False`` sets ``output_flag`` and ``log_to_console`` false, and a test checks that solves
    print nothing), but HiGHS 1.12.0, the one scipy 1.17 bundles, has an unconditional C ``printf`` in
    ``HighsMipSolverData::transformNewIntegerFeasibleSolution`` that no option guards (removed upstream
    in HiGHS commit 710aaa3, October 2025). It must never corrupt `--json` output or a terminal. The
    planner itself prints nothing, and the window is one small solve."""
    if not SILENCE_SOLVER_STDOUT:
        yield
        return
    with _STDOUT_LOCK:
        try:
            saved = os.dup(1)
            sink = os.open(os.devnull, os.O_WRONLY)
        except OSError:  # no descriptor 1 (embedded interpreter): nothing to protect
            yield
            return
        with suppress(ValueError, OSError, AttributeError):
            sys.stdout.flush()
        os.dup2(sink, 1)
        os.close(sink)
        try:
            yield
        finally:
            _flush_c_stdio()
            os.dup2(saved, 1)
            os.close(saved)


@lru_cache(maxsize=1)
def _libc() -> Any:
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def _flush_c_stdio() -> None:
    libc = _libc()
    with suppress(AttributeError, TypeError, OSError):
        if libc is not None:
            libc.fflush(None)


def load_solver() -> None:
    """Import numpy and scipy's solvers now (about 0.5 s the first time, then nothing), so that a
    computation under a CPU budget (:mod:`craft_rules.budget`) does not spend it on imports."""
    import numpy  # noqa: F401
    import scipy.optimize
    import scipy.sparse  # noqa: F401


class Ancestors(Protocol):
    """(items, recipe ids) of the sub-graph that can feed ``target_items`` (see
    :meth:`craft_rules.recipe_graph.RecipeGraph.ancestors`), as the planner caches them."""

    def __call__(
        self, target_items: Iterable[str], fuel_leaves: bool = False
    ) -> tuple[frozenset[str], frozenset[str]]: ...


class RecipeLp:
    """Builds and solves the LP/MILP over one rule set's recipes.

    ``whole_runs``: run variables are integers (the ``whole`` crafting-runs rule). ``ancestors``: where
    ancestor sub-graphs come from (the planner's, which caches them or keeps a computation's private)."""

    def __init__(self, graph: RecipeGraph, whole_runs: bool, ancestors: Ancestors):
        self.graph = graph
        self.rules = graph.rules
        self.whole_runs = whole_runs
        self.ancestors = ancestors

    def burn_cost(self, fuel: str) -> float:
        """Objective weight of burning one unit of fuel: the cooking runs it fuels, plus a little.

        Every fuel costs about the same per run, so no plan makes detours just to burn more
        efficiently (crafting logs into planks, or charcoal to smelt with); the little extra per unit
        prefers dense fuels, so one fuel usually covers a whole plan (fewer craft steps)."""
        return 1 / float(self.graph.fuel_units[fuel]) + FUEL_UNIT_COST

    def consume_cost(self, item: str) -> float:
        """Objective weight of consuming one unit as an ingredient: crafted items cost more than raw
        ones, so plans keep what is held and avoid needless intermediate crafts."""
        return 1.0 + min(self.graph.item_levels.get(item, 0), MAX_LEVEL_WEIGHT)

    def build(
        self,
        hand: Mapping[str, Fraction],
        need: Mapping[str, int],
        obtainable: Mapping[str, int | None] | None,
        slack_cost: Mapping[str, float] | None,
        consume_weight: float,
        margin: float,
        fuel_leaves: bool = False,
    ) -> LpModel | None:
        """The LP over the recipes that can matter; None when the target is structurally out of reach.

        Rows are ``consumed - produced - obtained <= held - needed`` per item, and ``drawn - supplied
        <= 0`` per pool. Columns: recipe runs, pool conversions, and (missing mode) obtained items.
        """
        rules = self.rules
        budget.check()
        _, anc_recipes = self.ancestors(need, fuel_leaves)
        start = {i for i, q in hand.items() if q > 0} | set(obtainable or ())
        reach, fired = self.graph.fireable(start, anc_recipes)
        if any(item not in reach for item in need):
            return None
        recipes = [rules.recipes[rid] for rid in fired]
        fuels = sorted(f for f in rules.fuels.burn_ticks if f in reach)
        if not fuels:
            recipes = [r for r in recipes if not r.burns_fuel]

        model = LpModel(recipes, {}, {}, {}, {}, {}, {}, [], [], [], [], [], [])
        item_row: dict[str, int] = {}

        def row(item: str) -> int:
            if item not in item_row:
                # with a margin, need a little more and use a little less of every stock, so that
                # rounding the LP's floats to Fractions cannot overdraw anything
                held = float(hand.get(item, 0)) * (1 - margin)
                wanted = need.get(item, 0) * (1 + margin) + (margin if item in need else 0.0)
                item_row[item] = model.new_row(held - wanted)
            return item_row[item]

        def pool(key: str, members: Iterable[tuple[str, float]]) -> Pool:
            found = model.pools.get(key)
            if found is None:
                found = model.pools[key] = Pool(key, model.new_row(0.0))
                # supply == draw: fuel burns only for a cooking run (else a lava bucket could be
                # "burnt" for nothing just to get its bucket back)
                model.equal_rows.add(found.row)
                is_heat = key == HEAT
                for item, per_unit in members:
                    unit_cost = self.burn_cost(item) if is_heat else self.consume_cost(item)
                    col = model.new_col(consume_weight * unit_cost)
                    found.members.append((item, col, per_unit))
                    model.add(row(item), col, 1.0)
                    model.add(found.row, col, -per_unit)
                    remainder = rules.fuels.remainders.get(item) if is_heat else None
                    if remainder:
                        model.add(row(remainder), col, -1.0)
            return found

        for recipe in recipes:
            usable = [[o for o in ing.options if o in reach] for ing in recipe.ingredients]
            fixed = sum(
                ing.count * self.consume_cost(options[0])
                for ing, options in zip(recipe.ingredients, usable, strict=True)
                if len(options) == 1
            )
            x = model.new_col(RUN_COST + consume_weight * fixed)
            model.x_col[recipe.id] = x
            model.add(row(recipe.result), x, -float(recipe.count))
            for index, (ing, options) in enumerate(zip(recipe.ingredients, usable, strict=True)):
                if len(options) == 1:
                    model.single_option[(recipe.id, index)] = options[0]
                    model.add(row(options[0]), x, float(ing.count))
                    continue
                key = "options:" + "|".join(options)
                model.ingredient_pool[(recipe.id, index)] = key
                model.add(pool(key, ((o, 1.0) for o in options)).row, x, float(ing.count))
            if recipe.burns_fuel:
                model.heat_pool[recipe.id] = HEAT
                heat = pool(HEAT, ((f, 1 / float(self.graph.fuel_units[f])) for f in fuels))
                model.add(heat.row, x, 1.0)
        for item in need:
            row(item)

        for item, bound in sorted((obtainable or {}).items()):
            if item not in item_row:
                continue  # no candidate recipe uses it, so it cannot help
            if slack_cost is not None:
                unit_cost = slack_cost[item]
            else:
                unit_cost = (
                    OBTAIN_COST
                    + LEVEL_COST * self.graph.obtain_rank.get(item, 0)
                    + VERSATILITY_COST / (1 + self.graph.item_versatility.get(item, 0))
                )
            s = model.new_col(unit_cost, math.inf if bound is None else float(bound))
            model.slack_col[item] = s
            model.add(item_row[item], s, -1.0)

        return model

    def consolidate(self, model: LpModel, solution: LpSolution) -> LpSolution:
        """Fewer crafts: where the LP mixes several items in one pool (two fuels, two kinds of log),
        try again with a single one of them, most used first; keep the first that is still feasible."""
        best = solution
        upper = list(model.col_upper)
        for pool in model.pools.values():
            used = sorted(
                ((best.x[col] * per, col) for _, col, per in pool.members if best.x[col] > TOL), reverse=True
            )
            if len(used) < 2:
                continue
            for _, keep in used:
                trial = list(upper)
                for _, col, _ in pool.members:
                    if col != keep:
                        trial[col] = 0.0
                found = self.solve(LpModel(**{**model.__dict__, "col_upper": trial}), integral=False)
                if found is not None:
                    best, upper = found, trial
                    break
        return best

    def solve(self, model: LpModel, integral: bool) -> LpSolution | None:
        n = len(model.cost)
        if not model.x_col and not model.slack_col:
            return None
        budget.check()
        whole_runs = self.whole_runs and not model.runs_continuous
        integer_columns = (
            (len(model.slack_col) if integral else 0)
            + len(model.integer_cols)
            + (len(model.x_col) if whole_runs else 0)
        )
        # over the limit (budget.exact_search_limit, a query's) the relaxation stands in for the MILP:
        # its size, not the clock, decides, so the answer never depends on the machine's load
        limit = budget.exact_limit()
        relaxed = limit is not None and integer_columns > limit
        checking = budget.check_limit()
        if checking is not None and integer_columns > checking:
            return None  # too big to check a relaxed answer within a query: it stays unverified
        # imported here, not at module level: scipy.optimize costs ~0.5 s to import, and only solving needs it
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, linprog, milp
        from scipy.sparse import csr_matrix

        matrix = csr_matrix((model.vals, (model.rows, model.cols)), shape=(len(model.rhs), n))
        rhs = np.asarray(model.rhs, dtype=float)
        equal = np.zeros(len(model.rhs), dtype=bool)
        equal[list(model.equal_rows)] = True
        cost = np.asarray(model.cost, dtype=float)
        upper = np.asarray(model.col_upper, dtype=float)
        if not relaxed and ((integral and model.slack_col) or whole_runs or model.integer_cols):
            integrality = np.zeros(n)
            if integral:
                integrality[list(model.slack_col.values())] = 1
            integrality[model.integer_cols] = 1
            if whole_runs:  # whole runs of every recipe: integer run variables
                integrality[list(model.x_col.values())] = 1
            with quiet_solver_stdout():
                res = milp(
                    cost,
                    constraints=[LinearConstraint(matrix, np.where(equal, rhs, -np.inf), rhs)],
                    integrality=integrality,
                    bounds=Bounds(np.zeros(n), upper),
                    options={"mip_rel_gap": 1e-9, "time_limit": MAX_SOLVE_SECONDS},
                )
            if res.x is None or res.status not in (0, 1):
                return None
        else:
            res = linprog(
                cost,
                A_ub=matrix[~equal],
                b_ub=rhs[~equal],
                A_eq=matrix[equal] if equal.any() else None,
                b_eq=rhs[equal] if equal.any() else None,
                bounds=np.column_stack([np.zeros(n), upper]),
                method="highs",
            )
            if res.status != 0:
                return None
        solution = self._read(model, res.x, float(res.fun))
        if relaxed:
            solution.relaxed_from = integer_columns
        return solution

    @staticmethod
    def _read(model: LpModel, x: np.ndarray, objective: float) -> LpSolution:
        mixes: dict[str, dict[str, float]] = {}
        for key, pool in model.pools.items():
            mixes[key] = {item: float(x[col]) * per for item, col, per in pool.members if x[col] > TOL}
        runs: dict[str, float] = {}
        uses: dict[tuple[str, int], dict[str, float]] = {}
        fuels: dict[str, dict[str, float]] = {}

        def spread(mix: dict[str, float], amount: float) -> dict[str, float]:
            total = sum(mix.values())
            return {item: amount * v / total for item, v in mix.items()} if total else {}

        for recipe in model.recipes:
            amount = float(x[model.x_col[recipe.id]])
            if amount <= TOL:
                continue
            runs[recipe.id] = amount
            for index, ing in enumerate(recipe.ingredients):
                single = model.single_option.get((recipe.id, index))
                if single is not None:
                    uses[(recipe.id, index)] = {single: ing.count * amount}
                else:
                    mix = mixes[model.ingredient_pool[(recipe.id, index)]]
                    uses[(recipe.id, index)] = spread(mix, ing.count * amount)
            if recipe.burns_fuel:
                fuels[recipe.id] = spread(mixes[model.heat_pool[recipe.id]], amount)
        slack = {item: float(x[c]) for item, c in model.slack_col.items() if x[c] > 1e-6}
        return LpSolution(runs, uses, fuels, slack, objective, x)
