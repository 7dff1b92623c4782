"""The planner: can a hand craft a target within one craft phase, what is missing, how deep is it.

Crafting with rational run amounts makes "can this hand craft that target" a linear feasibility
problem (DESIGN.md §6). Variables are the run amounts of the recipes that can matter (the target's
ancestor sub-graph, cached per target, restricted to the recipes the hand can ever fire) and
conversion variables: which option fills a tag/alternative ingredient (one *pool* per option set) and
which fuel burns for cooking runs (one *pool* of fuel; burning happens only for a cooking run, and
returns remainders such as the bucket of a lava bucket). For every item:
``hand + produced - consumed >= target need``. scipy's HiGHS solves it over sparse matrices. The
objective keeps plans plain: consuming crafted items costs more than raw ones, fuel costs the same per
run whatever it is, and where the LP mixes items in a pool a second solve tries a single one.

The LP is a relaxation, so a plan is called feasible only after it has been *executed*: the LP
solution becomes exact Fractions, sized from the target down (producers before consumers), and runs
step by step through :func:`craft_rules.crafting.craft`. A used sub-graph with cycles (charcoal burnt
to smelt logs into charcoal) runs component by component in rounds instead, seeding a cycle with a
sliver of run on another fuel when it has nothing to start from.

Missing items come from integer slack variables (a small MILP): the fewest whole items to obtain
(from ``available`` if given), then raw materials (:attr:`Planner.obtain_rank`), then the simplest
plan, then versatile items; the answer is verified the same way.

Under the **whole** crafting-runs rule (``planner_for(rules, whole_runs=True)``, the original game's
server) every recipe runs a whole number of times: the run variables become integers (a MILP, still
solved by HiGHS), fuel still burns in proportion (a continuous conversion), and the exact execution
rounds run amounts to whole numbers before anything is called craftable.

One :class:`Planner` per rule set and crafting-runs rule (:func:`planner_for`) holds the indexes and
caches.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from craft_rules.crafting import MAX_RUNS, CraftError, craft, fmt_qty, max_runs, runnable_recipes
from craft_rules.model import Recipe, RuleSet

if TYPE_CHECKING:  # numpy and scipy load only when an LP is solved (see Planner._solve): cheap CLI start
    import numpy as np

# --- errors ----------------------------------------------------------------------------------------


class PlannerError(ValueError):
    """Bad input to the planner. ``code`` is machine-readable; the message says what to do."""

    code = "planner_error"

    def __init__(self, message: str, **details: object):
        super().__init__(message)
        self.message = message
        self.details = details


class UnknownItemError(PlannerError):
    code = "unknown_item"


class InvalidQuantityError(PlannerError):
    code = "invalid_quantity"


# --- results ---------------------------------------------------------------------------------------


@dataclass
class _Memo:
    """What one computation remembers (see :meth:`Planner.remembering`)."""

    plans: dict[tuple[Any, ...], Any]
    ancestors: dict[tuple[frozenset[str], bool], tuple[frozenset[str], frozenset[str]]] | None


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


@dataclass(frozen=True)
class ItemDetails:
    item: str
    name: str
    category: str | None
    made_by: tuple[str, ...]
    used_by: tuple[str, ...]
    tags: tuple[str, ...]
    burn_ticks: int | None
    smelts_per_unit: Fraction | None
    fuel_remainder: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "name": self.name,
            "category": self.category,
            "made_by": list(self.made_by),
            "used_by": list(self.used_by),
            "tags": ["#" + t for t in self.tags],
            "fuel": None
            if self.burn_ticks is None
            else {
                "burn_ticks": self.burn_ticks,
                "smelts_per_unit": fmt_qty(self.smelts_per_unit or Fraction(0)),
                "remainder": self.fuel_remainder,
            },
        }


# --- parsing hands and targets ---------------------------------------------------------------------


def parse_counts(
    rules: RuleSet, raw: str | Mapping[str, Any], *, integral: bool = False, what: str = "hand"
) -> dict[str, Fraction]:
    """A hand or target from JSON text or a mapping; prefixed names accepted; zero counts dropped.

    Quantities may be ints, Fractions or strings like ``"3/4"``; ``integral`` requires whole numbers.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidQuantityError(
                f'{what} is not valid JSON ({exc.msg}); write it like \'{{"oak_planks": 1, "coal": 1}}\''
            ) from exc
    if not isinstance(raw, Mapping):
        raise InvalidQuantityError(f'{what} must be a JSON object of item -> count, like {{"coal": 1}}')
    out: dict[str, Fraction] = {}
    for name, qty in raw.items():
        item = rules.canonical(str(name))
        if item not in rules.items:
            raise UnknownItemError(
                f"{name!r} is not an item of rule set {rules.name}; "
                f"see `tradecraft craft info --ruleset {rules.name} ITEM` for item ids",
                item=str(name),
            )
        try:
            value = Fraction(qty) if not isinstance(qty, bool) else None
        except (ValueError, TypeError, ZeroDivisionError):
            value = None
        if value is None or value < 0 or (integral and value.denominator != 1):
            kind = "a non-negative whole number" if integral else "a non-negative number like 2 or 1/4"
            raise InvalidQuantityError(f"count of {item} in the {what} must be {kind}, got {qty!r}")
        if value:
            out[item] = out.get(item, Fraction(0)) + value
    return out


def parse_target(rules: RuleSet, raw: str | Mapping[str, Any]) -> dict[str, int]:
    target = {k: int(v) for k, v in parse_counts(rules, raw, integral=True, what="target").items()}
    if not target:
        raise InvalidQuantityError("the target is empty; name at least one item with a positive count")
    return target


# --- the LP model ----------------------------------------------------------------------------------

RUN_COST = 1e-3  # a little cost per run keeps pointless cycles out of LP solutions
# Missing mode ranks answers by: fewest units obtained; then raw materials (obtain_rank); then the
# simplest plan (consumption costs); then items with many uses (what players actually trade for).
OBTAIN_COST = 1e5
LEVEL_COST = 1e3
VERSATILITY_COST = 0.5
NARROW_USE_LEVELS = 2  # items feeding fewer than 2 different results (ores, pure fuels): 2 levels up
TOL = 1e-9
GRID = 720720  # lcm(1..16): run amounts with huge denominators are rounded up to multiples of 1/GRID
MAX_ROUNDS = 64
MAX_LEVEL_WEIGHT = 8
FUEL_UNIT_COST = 0.01
HEAT = "heat"  # the fuel pool: every fuel can fire every cooking recipe
SEED_RUNS = Fraction(1, 64)
DEFAULT_RULE = ""  # in a split: no explicit option, crafting's default rule picks (whole runs only)
ROUNDS_MARGIN = 1e-5  # how much of a cooking run a seed craft makes to start a fuel cycle
# Plans one computation remembers (Planner.remembering): a task validator asks the same "can this hand
# craft that" several times (half of its plan solves were repeats).
REMEMBERED_PLANS = 1024


@dataclass
class _Pool:
    """A conversion pool: several items can each supply a shared resource.

    The options of a tag/alternative ingredient (1 unit of resource per unit of item), or the fuels
    (one unit of resource = fuel for one cooking run). Recipes draw from the pool; the LP decides which
    items fill it, and every recipe drawing from it uses the same mix.
    """

    key: str
    row: int
    members: list[tuple[str, int, float]] = field(default_factory=list)  # (item, column, per unit)


@dataclass
class _Model:
    """One LP/MILP over the recipes that can matter for (hand, target)."""

    recipes: list[Recipe]
    x_col: dict[str, int]
    pools: dict[str, _Pool]
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
class _Solution:
    runs: dict[str, float]
    uses: dict[tuple[str, int], dict[str, float]]  # every ingredient -> {item: units}
    fuels: dict[str, dict[str, float]]  # recipe id -> {fuel: runs it fuels}
    slack: dict[str, float]
    objective: float
    x: np.ndarray | None = None  # the LP's column values


@dataclass
class _Segment:
    recipe: Recipe
    runs: Fraction
    choices: dict[int, str]
    fuel: str | None


def _tarjan(nodes: Iterable[str], edges: Mapping[str, set[str]]) -> dict[str, int]:
    """Strongly connected components (iterative Tarjan): node -> component number."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    n_comp = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for succ in it:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(edges.get(succ, ()))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp[member] = n_comp
                    if member == node:
                        break
                n_comp += 1
    return comp


_STDOUT_LOCK = threading.Lock()
# Swapping descriptor 1 also swallows what other threads print meanwhile, so only command-line use
# (where --json output must stay clean) turns it on; a server leaves the stray line in its log.
SILENCE_SOLVER_STDOUT = False


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Discard whatever is written to file descriptor 1 for the duration.

    Some HiGHS builds print a stray debug line to C stdout from the MIP solver
    (ERGO-Code/HiGHS#2783); it must never corrupt `--json` output or a terminal. The planner itself
    prints nothing, and the window is one small solve."""
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


def _on_grid(value: Fraction, up: bool) -> Fraction:
    """``value`` unchanged if crafting accepts its denominator, else rounded to a multiple of 1/GRID."""
    if value.denominator <= MAX_RUNS:
        return value
    scaled = value * GRID
    whole = math.ceil(scaled) if up else math.floor(scaled)
    return Fraction(whole, GRID)


def _ratio(value: float, total: float, precise: bool = False) -> Fraction:
    """An LP share as a Fraction: a simple one (denominator <= 256) unless ``precise``."""
    if total <= 0:
        return Fraction(0)
    return Fraction(value / total).limit_denominator(GRID if precise else 256)


class Planner:
    """Planning queries over one rule set and crafting-runs rule (see :func:`planner_for`).

    ``whole_runs``: plans run every recipe a whole number of times (the ``whole`` rule)."""

    def __init__(self, rules: RuleSet, whole_runs: bool = False):
        self.rules = rules
        self.whole_runs = whole_runs
        self.fuel_units: dict[str, Fraction] = {
            fuel: rules.fuels.units_per_run(fuel) for fuel in rules.fuels.burn_ticks
        }
        # item -> [(recipe id, slot)]: slot i < len(ingredients) is ingredient i; the last slot of a
        # fuel-burning recipe is its fuel.
        slots: dict[str, list[tuple[str, int]]] = {}
        self._slot_count: dict[str, int] = {}
        fuel_recipes: list[str] = []
        for recipe in rules.recipes.values():
            n = len(recipe.ingredients)
            for index, ing in enumerate(recipe.ingredients):
                for option in ing.options:
                    slots.setdefault(option, []).append((recipe.id, index))
            if recipe.burns_fuel:
                fuel_recipes.append(recipe.id)
                n += 1
            self._slot_count[recipe.id] = n
        for fuel in rules.fuels.burn_ticks:
            bucket = slots.setdefault(fuel, [])
            for rid in fuel_recipes:
                bucket.append((rid, len(rules.recipes[rid].ingredients)))
        self._slots_of_item = {item: tuple(s) for item, s in slots.items()}
        self._ancestors_cached = lru_cache(maxsize=4096)(self._compute_ancestors)
        self._memo = threading.local()

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

    # --- static structure --------------------------------------------------------------------------
    @cached_property
    def item_levels(self) -> dict[str, int]:
        """Crafting level of every item: how many crafts above raw materials it sits.

        0 for items no recipe makes; else 1 + the cheapest recipe's deepest ingredient. Recipes that
        only unpack a storage form (1 raw iron block -> 9 raw iron, where the block is made from the
        output) are ignored, so raw iron stays raw and its block sits one level above it. Items only
        made inside cycles get the deepest level + 1."""
        return self._levels(raw_through_narrow=False)

    @cached_property
    def obtain_rank(self) -> dict[str, int]:
        """The tie-break among equally small sets of missing items: prefer raw materials players trade.

        Like :attr:`item_levels`, except that a *narrow* item (one that feeds fewer than two
        different results: an ore that only smelts into one thing, a lava bucket that is only fuel)
        ranks :data:`NARROW_USE_LEVELS` higher, and what a narrow raw item turns into counts as raw
        itself (coal smelted from coal ore is rank 0, like coal)."""
        levels = self._levels(raw_through_narrow=True)
        versatility = self.item_versatility
        return {
            item: level + (NARROW_USE_LEVELS if versatility[item] < 2 else 0)
            for item, level in levels.items()
        }

    @cached_property
    def item_versatility(self) -> dict[str, int]:
        """How many different results an item can be an ingredient of."""
        return {item: len(self._feeds.get(item, ())) for item in self.rules.items}

    @cached_property
    def _feeds(self) -> dict[str, set[str]]:
        edges: dict[str, set[str]] = {}
        for recipe in self.rules.recipes.values():
            for ing in recipe.ingredients:
                for option in ing.options:
                    edges.setdefault(option, set()).add(recipe.result)
        return edges

    def _levels(self, raw_through_narrow: bool) -> dict[str, int]:
        rules = self.rules
        edges = self._feeds
        comp = _tarjan(sorted(edges), edges)

        def unpacks(recipe: Recipe) -> bool:  # 1 iron block -> 9 iron ingots, and back again
            if len(recipe.ingredients) != 1 or recipe.ingredients[0].count != 1 or recipe.count == 1:
                return False
            home = comp.get(recipe.result)
            return any(comp.get(o) == home for o in recipe.ingredients[0].options)

        producing = [r for r in rules.recipes.values() if not unpacks(r)]
        made = {r.result for r in producing}
        narrow = (
            {item for item in rules.items if len(edges.get(item, ())) < 2} if raw_through_narrow else set()
        )
        level = {item: (-1 if item in narrow else 0) for item in rules.items if item not in made}
        changed = True
        while changed:
            changed = False
            for recipe in producing:
                deepest = -1
                for ing in recipe.ingredients:
                    best = min((level[o] for o in ing.options if o in level), default=None)
                    if best is None:
                        break
                    deepest = max(deepest, best)
                else:
                    if deepest + 1 < level.get(recipe.result, math.inf):
                        level[recipe.result] = deepest + 1
                        changed = True
        top = max(level.values(), default=0) + 1
        return {item: max(level.get(item, top), 0) for item in rules.items}

    def ancestors(
        self, target_items: Iterable[str], fuel_leaves: bool = False
    ) -> tuple[frozenset[str], frozenset[str]]:
        """(items, recipe ids) that can feed the target items: reverse reachability, cached.

        Every fuel feeds every cooking recipe. With ``fuel_leaves`` the recipes that make fuels are
        not followed (unless something else needs those fuels): choosing what to obtain from others
        never needs them, as a unit of coal block or lava bucket out-burns any crafted fuel."""
        key = frozenset(target_items)
        block = getattr(self._memo, "block", None)
        if block is None or block.ancestors is None:
            return self._ancestors_cached(key, fuel_leaves)
        found = block.ancestors.get((key, fuel_leaves))
        if found is None:
            found = block.ancestors[key, fuel_leaves] = self._compute_ancestors(key, fuel_leaves)
        return found

    def _compute_ancestors(
        self, targets: frozenset[str], fuel_leaves: bool
    ) -> tuple[frozenset[str], frozenset[str]]:
        rules = self.rules
        items = set(targets)
        recipes: set[str] = set()
        queue = list(targets)
        fuel_only: set[str] = set()  # reached only as fuel so far (fuel_leaves): not expanded
        skipped: set[str] = set()
        fuels_added = False
        while queue:
            item = queue.pop()
            if item in fuel_only:
                skipped.add(item)
                continue
            for recipe in rules.recipes_by_result.get(item, ()):
                if recipe.id in recipes:
                    continue
                recipes.add(recipe.id)
                for option in (o for ing in recipe.ingredients for o in ing.options):
                    if option in fuel_only:  # needed as an ingredient after all: expand it
                        fuel_only.discard(option)
                        if option in skipped:
                            skipped.discard(option)
                            queue.append(option)
                    if option not in items:
                        items.add(option)
                        queue.append(option)
                if recipe.burns_fuel and not fuels_added:
                    fuels_added = True
                    for fuel in rules.fuels.burn_ticks:
                        if fuel not in items:
                            items.add(fuel)
                            queue.append(fuel)
                            if fuel_leaves:
                                fuel_only.add(fuel)
        return frozenset(items), frozenset(recipes)

    def _fireable(self, start: Iterable[str], allowed: frozenset[str]) -> tuple[set[str], list[str]]:
        """Items reachable from ``start`` and the recipes (among ``allowed``) that can ever run."""
        have = set(start)
        satisfied: dict[str, set[int]] = {}
        fired: list[str] = []
        queue = list(have)
        recipes = self.rules.recipes
        while queue:
            item = queue.pop()
            for rid, slot in self._slots_of_item.get(item, ()):
                if rid not in allowed:
                    continue
                done = satisfied.setdefault(rid, set())
                if slot in done:
                    continue
                done.add(slot)
                if len(done) == self._slot_count[rid]:
                    fired.append(rid)
                    result = recipes[rid].result
                    if result not in have:
                        have.add(result)
                        queue.append(result)
        fired.sort()
        return have, fired

    # --- in-phase queries --------------------------------------------------------------------------
    def possible_crafts(self, hand: Mapping[str, Fraction | int]) -> list[PossibleCraft]:
        """Every recipe the hand can run now, with its largest run amount
        (:func:`~craft_rules.crafting.runnable_recipes`), by result then recipe id."""
        held = {self.rules.canonical(item): Fraction(q) for item, q in hand.items() if q > 0}
        out = [
            PossibleCraft(recipe.id, recipe.result, recipe.count, runs)
            for recipe, runs in runnable_recipes(self.rules, held, whole_runs=self.whole_runs)
        ]
        out.sort(key=lambda p: (p.result, p.recipe_id))
        return out

    def item_info(self, item: str) -> ItemDetails:
        rules = self.rules
        item = rules.canonical(item)
        if item not in rules.items:
            raise UnknownItemError(
                f"{item!r} is not an item of rule set {rules.name}; check the spelling (ids look like "
                f"'oak_planks')",
                item=item,
            )
        info = rules.items[item]
        ticks = rules.fuels.burn_ticks.get(item)
        return ItemDetails(
            item=item,
            name=info.name,
            category=info.category,
            made_by=tuple(sorted(r.id for r in rules.recipes_by_result.get(item, ()))),
            used_by=tuple(
                sorted(
                    r.id
                    for r in rules.recipes_by_input.get(item, ())
                    if any(item in ing.options for ing in r.ingredients)
                )
            ),
            tags=rules.tags_of_item.get(item, ()),
            burn_ticks=ticks,
            smelts_per_unit=Fraction(ticks, rules.fuels.smelt_ticks) if ticks else None,
            fuel_remainder=rules.fuels.remainders.get(item) if ticks else None,
        )

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
        hand_f = self._clean_hand(hand)
        need = self._clean_target(target)
        found = self._find_plan(hand_f, need)
        if found is not None:
            steps, final = found
            return Plan(hand_f, need, True, steps, final)
        if not find_missing:
            return Plan(hand_f, need, False, final_hand=hand_f)
        missing, missing_plan = self._find_missing(hand_f, need, available)
        return Plan(hand_f, need, False, final_hand=hand_f, missing=missing, missing_plan=missing_plan)

    def can_craft(self, hand: Mapping[str, Fraction | int], target: Mapping[str, int]) -> bool:
        return self._find_plan(self._clean_hand(hand), self._clean_target(target)) is not None

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
        hand_f = self._clean_hand(hand)
        need = self._clean_target(target)
        if self._find_plan(hand_f, need) is not None:
            return {}
        return self._find_missing(hand_f, need, available, frozenset(never))[0]

    def fewest_kinds(
        self,
        hand: Mapping[str, Fraction | int],
        target: Mapping[str, int],
        available: Mapping[str, int],
    ) -> dict[str, int] | None:
        """Items to add from ``available`` so the target becomes craftable, with as few distinct
        kinds as possible (then as few units): ``{}`` if it already is, None if even all of
        ``available`` does not suffice. The answer is verified by executing a plan."""
        hand_f = self._clean_hand(hand)
        need = self._clean_target(target)
        if self._find_plan(hand_f, need) is not None:
            return {}
        bounds = {self.rules.canonical(k): int(v) for k, v in available.items() if v > 0}
        total = sum(bounds.values()) + 1
        model = self._build(hand_f, need, bounds, dict.fromkeys(bounds, 1.0), 1e-4, 0.0)
        if model is None or not model.slack_col:
            return None
        for item, col in model.slack_col.items():  # units of a kind only once its indicator is 1
            indicator = model.new_col(float(total), 1.0)
            model.integer_cols.append(indicator)
            row = model.new_row(0.0)
            model.add(row, col, 1.0)
            model.add(row, indicator, -float(bounds[item]))
        solution = self._solve(model, integral=True)
        if solution is not None:
            taken = {item: math.ceil(q - 1e-6) for item, q in solution.slack.items()}
            taken = {k: v for k, v in sorted(taken.items()) if v > 0}
            if self._verified_with(hand_f, need, taken) is not None:
                return taken
        return self._find_missing(hand_f, need, bounds)[0]  # the relaxation was too optimistic

    def lp_feasible(
        self, hand: Mapping[str, Fraction | int], target: Mapping[str, int], margin: float = 0.0
    ) -> bool:
        """The LP relaxation alone (no exact execution): False proves the target cannot be crafted."""
        hand_f = self._clean_hand(hand)
        need = self._clean_target(target)
        if self._holds(hand_f, need):
            return True
        model = self._build(hand_f, need, None, None, 1.0, margin)
        return model is not None and self._solve(model, integral=False) is not None

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
        need = self._clean_target(target)
        bounds = {item: int(q) for item, q in pool.items() if q > 0}
        total = sum(bounds.values()) + 1
        cost = {item: float(total) for item in bounds}
        if favour is not None and favour in cost:
            cost[favour] -= 1.0
        # a pinch of consumption cost breaks the many ties between equivalent plans: the MILP solves
        # about twice as fast, and units (cost ``total`` each) still decide
        model = self._build({}, need, bounds, cost, 1e-4, 0.0)
        if model is None:
            return None
        solution = self._solve(model, integral=True)
        if solution is None:
            return None
        taken = {item: round(q) for item, q in solution.slack.items() if round(q) > 0}
        return sum(taken.values()), taken

    def relevant_items(
        self, target: Mapping[str, int], pool: Iterable[str], *, through_crafted_fuel: bool = True
    ) -> frozenset[str]:
        """Items that some recipe chain the pool can run towards the target could use.

        With ``through_crafted_fuel=False`` a chain may burn a fuel but not craft one: an item whose only
        way to the target is being made into a fuel (an iron ingot into a smithing table, burnt to smelt
        a log into charcoal for a torch) is left out; the reference values value such an item only when
        a smallest sub-hand uses it."""
        need = self._clean_target(target)
        _, anc_recipes = self.ancestors(need, fuel_leaves=not through_crafted_fuel)
        reach, fired = self._fireable(pool, anc_recipes)
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

    def _snap(self, value: Fraction, up: bool) -> Fraction:
        """A run amount crafting accepts: a whole number under the whole rule (rounded ``up`` or
        down), else ``value`` on the grid of :func:`_on_grid`."""
        if self.whole_runs:
            return Fraction(math.ceil(value) if up else math.floor(value))
        return _on_grid(value, up)

    # --- internals: inputs -------------------------------------------------------------------------
    def _clean_hand(self, hand: Mapping[str, Fraction | int]) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {}
        for item, qty in hand.items():
            value = Fraction(qty)
            if value < 0:
                raise InvalidQuantityError(f"count of {item} must not be negative, got {qty}")
            if value:
                out[self.rules.canonical(item)] = value
        return out

    def _clean_target(self, target: Mapping[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for item, qty in target.items():
            if qty < 0 or int(qty) != qty:
                raise InvalidQuantityError(f"target count of {item} must be a whole number, got {qty}")
            if qty:
                out[self.rules.canonical(item)] = int(qty)
        if not out:
            raise InvalidQuantityError("the target is empty; name at least one item with a positive count")
        return out

    @staticmethod
    def _holds(hand: Mapping[str, Fraction], need: Mapping[str, int]) -> bool:
        return all(hand.get(item, 0) >= n for item, n in need.items())

    # --- internals: the LP -------------------------------------------------------------------------
    def _burn_cost(self, fuel: str) -> float:
        """Objective weight of burning one unit of fuel: the cooking runs it fuels, plus a little.

        Every fuel costs about the same per run, so no plan makes detours just to burn more
        efficiently (crafting logs into planks, or charcoal to smelt with); the little extra per unit
        prefers dense fuels, so one fuel usually covers a whole plan (fewer craft steps)."""
        return 1 / float(self.fuel_units[fuel]) + FUEL_UNIT_COST

    def _consume_cost(self, item: str) -> float:
        """Objective weight of consuming one unit as an ingredient: crafted items cost more than raw
        ones, so plans keep what is held and avoid needless intermediate crafts."""
        return 1.0 + min(self.item_levels.get(item, 0), MAX_LEVEL_WEIGHT)

    def _build(
        self,
        hand: Mapping[str, Fraction],
        need: Mapping[str, int],
        obtainable: Mapping[str, int | None] | None,
        slack_cost: Mapping[str, float] | None,
        consume_weight: float,
        margin: float,
        fuel_leaves: bool = False,
    ) -> _Model | None:
        """The LP over the recipes that can matter; None when the target is structurally out of reach.

        Rows are ``consumed - produced - obtained <= held - needed`` per item, and ``drawn - supplied
        <= 0`` per pool. Columns: recipe runs, pool conversions, and (missing mode) obtained items.
        """
        rules = self.rules
        _, anc_recipes = self.ancestors(need, fuel_leaves)
        start = {i for i, q in hand.items() if q > 0} | set(obtainable or ())
        reach, fired = self._fireable(start, anc_recipes)
        if any(item not in reach for item in need):
            return None
        recipes = [rules.recipes[rid] for rid in fired]
        fuels = sorted(f for f in rules.fuels.burn_ticks if f in reach)
        if not fuels:
            recipes = [r for r in recipes if not r.burns_fuel]

        model = _Model(recipes, {}, {}, {}, {}, {}, {}, [], [], [], [], [], [])
        item_row: dict[str, int] = {}

        def row(item: str) -> int:
            if item not in item_row:
                # with a margin, need a little more and use a little less of every stock, so that
                # rounding the LP's floats to Fractions cannot overdraw anything
                held = float(hand.get(item, 0)) * (1 - margin)
                wanted = need.get(item, 0) * (1 + margin) + (margin if item in need else 0.0)
                item_row[item] = model.new_row(held - wanted)
            return item_row[item]

        def pool(key: str, members: Iterable[tuple[str, float]]) -> _Pool:
            found = model.pools.get(key)
            if found is None:
                found = model.pools[key] = _Pool(key, model.new_row(0.0))
                # supply == draw: fuel burns only for a cooking run (else a lava bucket could be
                # "burnt" for nothing just to get its bucket back)
                model.equal_rows.add(found.row)
                is_heat = key == HEAT
                for item, per_unit in members:
                    unit_cost = self._burn_cost(item) if is_heat else self._consume_cost(item)
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
                ing.count * self._consume_cost(options[0])
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
                heat = pool(HEAT, ((f, 1 / float(self.fuel_units[f])) for f in fuels))
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
                    + LEVEL_COST * self.obtain_rank.get(item, 0)
                    + VERSATILITY_COST / (1 + self.item_versatility.get(item, 0))
                )
            s = model.new_col(unit_cost, math.inf if bound is None else float(bound))
            model.slack_col[item] = s
            model.add(item_row[item], s, -1.0)

        return model

    def _consolidate(self, model: _Model, solution: _Solution) -> _Solution:
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
                found = self._solve(_Model(**{**model.__dict__, "col_upper": trial}), integral=False)
                if found is not None:
                    best, upper = found, trial
                    break
        return best

    def _solve(self, model: _Model, integral: bool) -> _Solution | None:
        n = len(model.cost)
        if not model.x_col and not model.slack_col:
            return None
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
        if (integral and model.slack_col) or self.whole_runs or model.integer_cols:
            integrality = np.zeros(n)
            if integral:
                integrality[list(model.slack_col.values())] = 1
            integrality[model.integer_cols] = 1
            if self.whole_runs:  # whole runs of every recipe: integer run variables
                integrality[list(model.x_col.values())] = 1
            with _quiet_stdout():
                res = milp(
                    cost,
                    constraints=[LinearConstraint(matrix, np.where(equal, rhs, -np.inf), rhs)],
                    integrality=integrality,
                    bounds=Bounds(np.zeros(n), upper),
                    options={"mip_rel_gap": 1e-9, "time_limit": 20.0},
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
        return self._read(model, res.x, float(res.fun))

    @staticmethod
    def _read(model: _Model, x: np.ndarray, objective: float) -> _Solution:
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
        return _Solution(runs, uses, fuels, slack, objective, x)

    # --- internals: from an LP solution to verified craft steps ------------------------------------
    def _find_plan(
        self, hand: dict[str, Fraction], need: dict[str, int]
    ) -> tuple[tuple[PlanStep, ...], dict[str, Fraction]] | None:
        if self._holds(hand, need):
            return (), dict(hand)
        block = getattr(self._memo, "block", None)
        if block is None:
            return self._solve_plan(hand, need)
        memo = block.plans
        key = (tuple(hand.items()), tuple(need.items()))  # the caller's order: the answer it would get
        if key not in memo:
            if len(memo) >= REMEMBERED_PLANS:
                memo.pop(next(iter(memo)))
            found = self._solve_plan(hand, need)
            memo[key] = None if found is None else (found[0], tuple(found[1].items()))
        remembered = memo[key]
        return None if remembered is None else (remembered[0], dict(remembered[1]))

    def _solve_plan(
        self, hand: dict[str, Fraction], need: dict[str, int]
    ) -> tuple[tuple[PlanStep, ...], dict[str, Fraction]] | None:
        model = self._build(hand, need, None, None, 1.0, 0.0)
        if model is None:
            return None
        solution = self._solve(model, integral=False)
        if solution is None:
            return None
        solution = self._consolidate(model, solution)
        segments = self._exact_segments(hand, need, solution)
        if segments is not None:
            done = self._execute(hand, need, segments)
            if done is None and self.whole_runs:
                # one option per craft call cannot split a whole run over two items (1 oak + 1 birch
                # plank for 4 sticks); the default rule pools the held options within one call
                pooled = [_Segment(seg.recipe, seg.runs, {}, seg.fuel) for seg in segments]
                done = self._execute(hand, need, pooled)
            if done is not None:
                return done
        # Cycles in the used sub-graph, or rounding that left an item short: run the LP amounts in
        # rounds, each craft as far as the hand allows; first from a solve with a little margin
        # that absorbs rounding, then from the plain one (a plan that is exactly tight).
        margin_model = self._build(hand, need, None, None, 1.0, ROUNDS_MARGIN)
        with_margin = self._solve(margin_model, integral=False) if margin_model else None
        for candidate in (with_margin, solution):
            if candidate is not None:
                done = self._execute_in_rounds(hand, need, candidate)
                if done is not None:
                    return done
        return None

    def _exact_segments(
        self, hand: Mapping[str, Fraction], need: Mapping[str, int], solution: _Solution
    ) -> list[_Segment] | None:
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
        order: list[list[_Segment]] = []
        sized = 0
        while queue:
            item = queue.popleft()
            deficit = demand.get(item, Fraction(0)) - hand.get(item, Fraction(0))
            makers = producers[item]
            made = [solution.runs[rid] * rules.recipes[rid].count for rid in makers]
            total = sum(made)
            shares = [_ratio(m, total) for m in made]
            shares[-1] = 1 - sum(shares[:-1])
            for rid, share in zip(makers, shares, strict=True):
                sized += 1
                recipe = rules.recipes[rid]
                if deficit > 0 and share > 0:
                    runs = self._snap(deficit * share / recipe.count, up=True)
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
    def _uses_of(rid: str, solution: _Solution) -> list[dict[str, float]]:
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
        solution: _Solution,
        bounded_left: Mapping[str, Fraction],
        precise: bool = False,
    ) -> list[_Segment] | None:
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
        segments: list[_Segment] = []
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
            segments.append(_Segment(recipe, step, choices, fuel))
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
            return Fraction(count) if count is not None else self.fuel_units[item]

        items = sorted(amounts, key=lambda i: (i not in bounded_left, -amounts[i], i))
        if not items:
            return None
        out: list[tuple[str, Fraction]] = []
        remaining = runs
        for n, item in enumerate(items):
            if n == len(items) - 1:
                length = remaining
            else:
                length = self._snap(runs * _ratio(amounts[item], total, precise), up=False)
                length = min(length, remaining)
            if item in bounded_left:
                cap = max(bounded_left[item], Fraction(0)) / per_run(item)
                if length > cap:
                    length = self._snap(cap, up=False)
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
                extra = min(self._snap(room, up=False), remaining)
                if extra > 0:
                    out[n] = (item, length + extra)
                    remaining -= extra
            if remaining > 0:
                return None
        return out

    def _consumption(self, seg: _Segment) -> dict[str, Fraction]:
        out: dict[str, Fraction] = {}
        for index, ing in enumerate(seg.recipe.ingredients):
            item = seg.choices.get(index, ing.options[0])
            out[item] = out.get(item, Fraction(0)) + ing.count * seg.runs
        if seg.fuel is not None:
            out[seg.fuel] = out.get(seg.fuel, Fraction(0)) + seg.runs * self.fuel_units[seg.fuel]
        return out

    def _execute(
        self, hand: Mapping[str, Fraction], need: Mapping[str, int], segments: list[_Segment]
    ) -> tuple[tuple[PlanStep, ...], dict[str, Fraction]] | None:
        """Run the segments with exact crafting; None unless every craft succeeds and the target is held."""
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
        if not self._holds(current, need):
            return None
        return tuple(steps), current

    def _execute_in_rounds(
        self, hand: Mapping[str, Fraction], need: Mapping[str, int], solution: _Solution
    ) -> tuple[tuple[PlanStep, ...], dict[str, Fraction]] | None:
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
            segments = self._split(recipe, self._snap(runs, up=True), solution, {}, precise=True)
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
        comp = _tarjan(sorted(feeds), feeds)  # components complete sinks first
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

    def _seed(
        self, hand: Mapping[str, Fraction], seg: _Segment, left: Fraction
    ) -> tuple[str | None, Fraction]:
        burn = self.rules.fuels.burn_ticks
        for fuel in sorted((f for f in hand if f in burn and f != seg.fuel), key=lambda f: (burn[f], f)):
            afford = max_runs(self.rules, hand, seg.recipe, seg.choices, fuel)
            seed = Fraction(1) if self.whole_runs else SEED_RUNS
            amount = self._snap(min(left, afford, seed), up=False)
            if amount > 0:
                return fuel, amount
        return seg.fuel, Fraction(0)

    # --- internals: missing items ------------------------------------------------------------------
    def _find_missing(
        self,
        hand: dict[str, Fraction],
        need: dict[str, int],
        available: Mapping[str, int] | None,
        never: frozenset[str] = frozenset(),
    ) -> tuple[dict[str, int] | None, Plan | None]:
        if available is None:
            anc_items, _ = self.ancestors(need, fuel_leaves=True)
            useful = self._useful_to_obtain(anc_items, need)
            obtainable: dict[str, int | None] = dict.fromkeys(i for i in useful if i not in never)
        else:
            obtainable = {self.rules.canonical(k): int(v) for k, v in available.items() if v > 0}
        model = self._build(hand, need, obtainable, None, 1.0, 0.0, fuel_leaves=available is None)
        solution = self._solve(model, integral=True) if model else None
        if solution is not None:
            missing = {item: math.ceil(q - 1e-6) for item, q in solution.slack.items()}
            missing = {k: v for k, v in sorted(missing.items()) if v > 0}
            plan = self._verified_with(hand, need, missing)
            if plan is not None:
                return missing, plan
        # The relaxation was too optimistic (rare): fall back to obtaining what the target lacks.
        direct = {item: n - math.floor(hand.get(item, 0)) for item, n in need.items()}
        direct = {k: v for k, v in sorted(direct.items()) if v > 0}
        if available is not None and any(available.get(k, 0) < v for k, v in direct.items()):
            return None, None
        return direct, self._verified_with(hand, need, direct)

    def _useful_to_obtain(self, items: Iterable[str], need: Mapping[str, int]) -> list[str]:
        """``items`` without the fuels nobody would obtain: a fuel that is no recipe's ingredient (and
        not a target) is dropped when another such fuel burns at least as long and ranks as raw."""
        rules = self.rules
        burn = rules.fuels.burn_ticks
        rank = self.obtain_rank
        versatility = self.item_versatility
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

    def _verified_with(
        self, hand: dict[str, Fraction], need: dict[str, int], extra: Mapping[str, int]
    ) -> Plan | None:
        combined = dict(hand)
        for item, qty in extra.items():
            combined[item] = combined.get(item, Fraction(0)) + qty
        found = self._find_plan(combined, need)
        if found is None:
            return None
        return Plan(combined, need, True, found[0], found[1])


class _RoundsRun:
    """The state of one execution in rounds: the hand so far and the steps taken."""

    def __init__(self, planner: Planner, hand: dict[str, Fraction], need: Mapping[str, int]):
        self.planner = planner
        self.current = hand
        self.need = need
        self.steps: list[PlanStep] = []
        self.made_at: dict[str, int] = {}

    def rounds(self, entries: list[list[Any]]) -> bool:
        """Run ``entries`` ([segment, runs left]) round after round; True once the target is held."""
        rules = self.planner.rules
        seeding = False
        for _ in range(MAX_ROUNDS):
            progress = False
            for entry in entries:
                seg, left = entry
                if left <= 0:
                    continue
                fuel = seg.fuel
                afford = max_runs(rules, self.current, seg.recipe, seg.choices, fuel)
                amount = self.planner._snap(min(left, afford), up=False)
                if amount <= 0 and fuel is not None and seeding:
                    # stuck: its fuel is made by this cycle and none is held yet (charcoal to smelt
                    # logs into charcoal): seed it with a sliver of run on the cheapest other fuel
                    fuel, amount = self.planner._seed(self.current, seg, left)
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
                        whole_runs=self.planner.whole_runs,
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
                if Planner._holds(self.current, self.need):
                    return True
            if all(left <= 0 for _, left in entries):
                return False
            if not progress:
                if seeding:
                    return False
                seeding = True  # one seed craft, only once nothing else can move
        return False


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
