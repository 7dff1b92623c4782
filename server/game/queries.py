"""In-phase queries, declared once: what a participant may ask about the game besides acting.

Each query is a pydantic model with a ``type`` literal (:data:`QUERY_MODELS`, like
:data:`~server.game.actions.ACTION_MODELS`); the server derives its Socket.IO event ``query``, the REST
route ``POST /api/games/<id>/query`` and the JSON schemas at ``GET /api/queries`` from them, and the
language tools derive their arguments from them too.

A query answers only from what its viewer may see (:func:`run_query`): the rule set, the public hands,
the viewer's own target and own crafting hand, and the viewer's own log. A spectator has no hand and no
target, so the queries about "my hand" are refused (``not_a_player``); no query ever reads another
seat's crafting hand, target, ToM report or a proposal the viewer was not party to. Nor does its time:
a query's planner work reads and fills no cache that another caller shares, so it takes as long whether
or not a bot or another player planned for the same item before.

Every query's cost is bounded before the work starts: text and counts have limits in the models, result
lists are cut at ``limit`` (the answer says how many there were), and the crafting tree stops at a depth
and a node budget. The answers reuse the planner (:mod:`craft_rules.planner`): possible crafts, item
details, and plans with what is missing.

The work is split in two so a server can read the game under its lock and answer outside it:
:func:`query_context` copies what the query needs from the game (cheap), :func:`answer_query` computes
the answer from that copy alone (the planner may take milliseconds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from craft_rules.budget import BudgetExceeded, SearchTooLarge, cpu_budget, exact_search_limit
from craft_rules.crafting import clamp_runs, fmt_qty, max_runs
from craft_rules.grid import GRID_SIZE, match_grid, recipe_grid
from craft_rules.model import Recipe, RuleSet
from craft_rules.plan_inputs import PlannerError, UnknownItemError
from craft_rules.planner import Planner, planner_for
from server.game.actions import parse_tagged
from server.game.errors import GameError
from server.game.events import for_viewer, visible_to
from server.game.state import Game

MAX_ITEM_CHARS = 100
"""Longest item id a query accepts (rule set ids are far shorter)."""
MAX_SEARCH_CHARS = 64
"""Longest recipe search text."""
MAX_TARGET_COUNT = 64
"""Most units of an item a crafting tree or a craftable query may ask for."""
MAX_TREE_DEPTH = 8
"""Deepest crafting tree a query may ask for."""
MAX_TREE_NODES = 200
"""A crafting tree stops expanding after this many nodes (the answer says it was cut)."""
MAX_RECIPES_PER_ITEM = 3
"""A crafting tree shows at most this many ways to make each item (the simplest first)."""
MAX_HISTORY_EVENTS = 200
"""Most events one history query returns."""
MAX_MAKES = 60
"""An item_info answer lists at most this many of the items the item is used to make."""
MAX_CRAFT_OPTIONS = 50
"""A craft_options answer lists at most this many held items per ingredient and this many fuels."""
QUERY_MAX_INTEGER_COLUMNS = 20
"""The largest search for missing items (a mixed-integer program) a query solves exactly (integer columns:
candidate items to obtain, and run counts under the whole rule); a larger one is relaxed to an LP whose
answer is verified by executing a plan (see craft_rules.budget). Calibrated with bench/bench_query_cost.py:
admitted searches of real hands cost at most ~50 ms of CPU here, while from 20 columns up HiGHS needs up
to seconds (one torch from a plank and a coal under the whole rule: 92 columns, 230 ms; 64 golden
pickaxes: 116 columns, 5 s). Craftability itself is always solved exactly."""
QUERY_CPU_BUDGET_MS = 1000.0
"""A backstop on one query's planner CPU time, far above what the size limit admits (the worst query
costs ~100 ms): past it the query answers ``query_too_expensive``."""

ItemId = Annotated[
    str,
    Field(
        min_length=1, max_length=MAX_ITEM_CHARS, description="an item id of the game's rule set, e.g. torch"
    ),
]
Units = Annotated[
    int, Field(strict=True, ge=1, le=MAX_TARGET_COUNT, description=f"how many units, 1 to {MAX_TARGET_COUNT}")
]


class _QueryModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ItemInfo(_QueryModel):
    """Details of one item: its name, the recipes that make it and use it, its tags, its value as fuel."""

    type: Literal["item_info"] = "item_info"
    item: ItemId


class RecipeSearch(_QueryModel):
    """Find recipes whose id, result or result name contains the text (case-insensitive)."""

    type: Literal["recipe_search"] = "recipe_search"
    text: str = Field(
        min_length=1, max_length=MAX_SEARCH_CHARS, description="text to look for, e.g. 'pickaxe' or 'iron'"
    )
    limit: int = Field(10, strict=True, ge=1, le=50, description="most recipes to return, 1 to 50")


class PossibleCrafts(_QueryModel):
    """Every recipe your hand can run now, with its largest run amount: in the craft phase your private
    crafting hand, otherwise your public hand (what you could craft if the craft phase started now)."""

    type: Literal["possible_crafts"] = "possible_crafts"
    limit: int = Field(50, strict=True, ge=1, le=500, description="most recipes to return, 1 to 500")


class CraftingTree(_QueryModel):
    """How an item is made, recipe by recipe, down to items some hand holds or that no recipe makes."""

    type: Literal["crafting_tree"] = "crafting_tree"
    item: ItemId
    count: Units = 1
    depth: int = Field(
        4,
        strict=True,
        ge=1,
        le=MAX_TREE_DEPTH,
        description=f"how many crafting levels to show, 1 to {MAX_TREE_DEPTH}",
    )


class Craftable(_QueryModel):
    """Whether your hand can craft an item now (default: your target) and, if not, the fewest items to
    obtain, from what the other players' public hands hold and from anywhere."""

    type: Literal["craftable"] = "craftable"
    item: ItemId | None = Field(None, description="the item to craft; null = your own target")
    count: Units | None = Field(None, description="how many units; null = 1 (or your target's counts)")


GridCell = Annotated[
    str | None,
    Field(max_length=MAX_ITEM_CHARS, description="an item id placed in this cell, or null for an empty cell"),
]


class MatchGrid(_QueryModel):
    """Which crafting recipe a placement of items on the 3x3 crafting grid makes (as Minecraft's crafting
    table: a shaped recipe in its shape or its mirror image, anywhere on the grid; a shapeless one in any
    arrangement), with the item choices to send with the craft action and, for a player, the largest run
    amount their hand allows with those choices."""

    type: Literal["match_grid"] = "match_grid"
    grid: list[Annotated[list[GridCell], Field(min_length=1, max_length=GRID_SIZE)]] = Field(
        min_length=1,
        max_length=GRID_SIZE,
        description=f"up to {GRID_SIZE} rows, top to bottom, of up to {GRID_SIZE} cells (item id or null)",
    )


class CraftOptions(_QueryModel):
    """How your hand can run one recipe: the held items that can fill each ingredient that accepts several
    (a tag such as any planks), the held fuels a smelting/blasting/smoking recipe can burn, and the largest
    run amount with each (pass them as the craft action's ``choices`` and ``fuel``)."""

    type: Literal["craft_options"] = "craft_options"
    recipe: str = Field(
        min_length=1,
        max_length=MAX_ITEM_CHARS,
        description="a recipe id, e.g. iron_ingot_from_smelting_raw_iron",
    )


class History(_QueryModel):
    """Events of your own log (the numbering ``n`` of the events you receive), oldest first."""

    type: Literal["history"] = "history"
    since_n: int = Field(0, strict=True, ge=0, description="the first event number n to return")
    limit: int = Field(
        50,
        strict=True,
        ge=1,
        le=MAX_HISTORY_EVENTS,
        description=f"most events to return, 1 to {MAX_HISTORY_EVENTS}",
    )


Query = (
    ItemInfo | RecipeSearch | PossibleCrafts | CraftingTree | Craftable | MatchGrid | CraftOptions | History
)

QUERY_MODELS: dict[str, type[BaseModel]] = {
    "item_info": ItemInfo,
    "recipe_search": RecipeSearch,
    "possible_crafts": PossibleCrafts,
    "crafting_tree": CraftingTree,
    "craftable": Craftable,
    "match_grid": MatchGrid,
    "craft_options": CraftOptions,
    "history": History,
}
"""Query type -> model, in a stable order."""


def parse_query(obj: dict[str, Any] | str | bytes | BaseModel) -> Query:
    """Validate JSON into one of the query models, or raise ``GameError("invalid_query")`` naming the
    first bad field (details list every problem as ``{"field", "problem", "kind"}``)."""
    return parse_tagged(obj, QUERY_MODELS, "invalid_query", "query")  # type: ignore[return-value]


# ====================================================================================== context
@dataclass(frozen=True)
class QueryContext:
    """What one viewer may see that a query needs, copied out of the game (no reference into it)."""

    rules: RuleSet
    seat: int | None
    players: int
    public_hands: tuple[Mapping[str, int], ...]
    own_hand: Mapping[str, Fraction] | None = None  # crafting hand in the craft phase, else public hand
    own_hand_kind: Literal["crafting", "public"] | None = None
    target: Mapping[str, int] | None = None
    events: tuple[dict[str, Any], ...] = ()  # history queries: the requested slice of the viewer's log
    log_size: int = 0
    whole_runs: bool = False  # the game's crafting-runs rule is "whole"


def query_context(
    game: Game, viewer: int | None, query: Query, time_of: Callable[[int], float | None] | None = None
) -> QueryContext:
    """Copy what ``query`` needs and ``viewer`` (a seat, or None for a spectator) may see.

    ``time_of(seq)``: the stored time of event ``seq`` (the server's store keeps it; the engine has no
    clock), so history answers carry ``time`` like the events a client receives."""
    if viewer is not None and (isinstance(viewer, bool) or not 0 <= viewer < game.players):
        raise GameError(
            "not_a_player",
            f"Seat {viewer!r} is not a player of this game; seats are 0..{game.players - 1}.",
            {"seat": viewer if isinstance(viewer, int) else str(viewer)},
        )
    hands = tuple(game.hands)
    own_hand: dict[str, Fraction] | None = None
    kind: Literal["crafting", "public"] | None = None
    target = None
    if viewer is not None:
        crafting = game.crafting_hand(viewer)
        if crafting is not None:
            own_hand, kind = crafting, "crafting"
        else:
            own_hand, kind = {k: Fraction(v) for k, v in hands[viewer].items()}, "public"
        target = game.target(viewer)
    events: tuple[dict[str, Any], ...] = ()
    if isinstance(query, History):
        events = tuple(_log_slice(game, viewer, query.since_n, query.limit, time_of))
    return QueryContext(
        rules=game.rules,
        seat=viewer,
        players=game.players,
        public_hands=hands,
        own_hand=own_hand,
        own_hand_kind=kind,
        target=target,
        events=events,
        log_size=game.log_size(viewer),
        whole_runs=game.settings.crafting_runs == "whole",
    )


def _log_slice(
    game: Game, viewer: int | None, since_n: int, limit: int, time_of: Callable[[int], float | None] | None
) -> list[dict[str, Any]]:
    """Events ``since_n`` .. ``since_n + limit - 1`` of the viewer's log, numbered like ``viewer_log``;
    only the returned ones are copied."""
    out: list[dict[str, Any]] = []
    n = 0
    for event in game.events:
        if not visible_to(event, viewer):
            continue
        if n >= since_n:
            record = for_viewer(event).to_dict()
            del record["seq"]
            entry = {"n": n, **record, "payload": _copy_json(record["payload"])}
            if time_of is not None:
                entry["time"] = time_of(event.seq)
            out.append(entry)
            if len(out) >= limit:
                break
        n += 1
    return out


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


# ===================================================================================== answers
def run_query(
    game: Game, viewer: int | None, query: dict[str, Any] | str | bytes | BaseModel
) -> dict[str, Any]:
    """Answer ``query`` for ``viewer`` (a seat, or None for a spectator) from what it may see.

    Raises ``GameError``: ``invalid_query`` (bad input), ``unknown_item``, ``not_a_player`` (a
    spectator asking about its own hand or target). The answer is JSON-safe and starts with ``type``.
    """
    parsed = parse_query(query)
    return answer_query(query_context(game, viewer, parsed), parsed)


def answer_query(
    ctx: QueryContext, query: Query, *, cpu_budget_ms: float = QUERY_CPU_BUDGET_MS
) -> dict[str, Any]:
    """The answer to ``query`` from the copied context alone. A search for what is missing solves no
    mixed-integer program over ``QUERY_MAX_INTEGER_COLUMNS`` (decided from the program's size, so the
    answer never depends on the machine's load; see ``_answer_craftable``);
    ``GameError("query_too_expensive")`` when the CPU backstop ``cpu_budget_ms`` is spent."""
    handler = _ANSWERS[query.type]
    planner = _planner(ctx)
    planner.prepare()  # the rule set's first query would otherwise spend its time on one-time indexes
    too_expensive = GameError(
        "query_too_expensive",
        f"This {query.type} query needs more planning than a query may use; ask for fewer units or a "
        "simpler item, or craft part of it first and ask again.",
        {"query": query.type},
    )
    # private: the answer takes as long whatever other players or bots asked the planner before
    try:
        with planner.remembering(private=True), cpu_budget(cpu_budget_ms / 1000):
            return {"type": query.type, **handler(ctx, query)}
    except (BudgetExceeded, SearchTooLarge):
        raise too_expensive from None


def _planner(ctx: QueryContext) -> Planner:
    """The planner of the game's rule set under the game's crafting-runs rule."""
    return planner_for(ctx.rules, whole_runs=ctx.whole_runs)


def _item(ctx: QueryContext, raw: str, field_name: str) -> str:
    item = ctx.rules.canonical(raw.strip())
    if item not in ctx.rules.items:
        raise GameError(
            "unknown_item",
            f"{raw!r} is not an item of rule set {ctx.rules.name}; use recipe_search to find item ids "
            "(they look like 'oak_planks').",
            {"field": field_name, "item": raw},
        )
    return item


def _need_hand(ctx: QueryContext, what: str) -> tuple[Mapping[str, Fraction], str]:
    if ctx.own_hand is None or ctx.own_hand_kind is None:
        raise GameError(
            "not_a_player",
            f"Spectators hold no hand and no target, so they cannot ask {what}; ask about an item instead.",
            {"query": what},
        )
    return ctx.own_hand, ctx.own_hand_kind


def recipe_summary(rules: RuleSet, recipe: Recipe) -> dict[str, Any]:
    """A recipe as a query answer shows it; ``grid`` is a shaped recipe's pattern as rows of ingredient
    indices (null = empty cell), null for other recipes."""
    grid = recipe_grid(recipe)
    return {
        "recipe": recipe.id,
        "type": recipe.type.value,
        "result": recipe.result,
        "count": recipe.count,
        "ingredients": [{"options": list(ing.options), "count": ing.count} for ing in recipe.ingredients],
        "burns_fuel": recipe.burns_fuel,
        "grid": None if grid is None else [list(row) for row in grid],
        "text": recipe.describe(),
    }


def _answer_item_info(ctx: QueryContext, query: ItemInfo) -> dict[str, Any]:
    item = _item(ctx, query.item, "item")
    details = _planner(ctx).item_info(item).as_dict()
    made_by = [ctx.rules.recipes[r] for r in details["made_by"][: MAX_RECIPES_PER_ITEM * 3]]
    # what the item is used to make: the results of the recipes that take it, each once
    makes = sorted({ctx.rules.recipes[r].result for r in details["used_by"]} - {item})
    return {
        **details,
        "recipes": [recipe_summary(ctx.rules, r) for r in made_by],
        "makes": makes[:MAX_MAKES],
        "makes_total": len(makes),
    }


def _answer_recipe_search(ctx: QueryContext, query: RecipeSearch) -> dict[str, Any]:
    rules = ctx.rules
    text = rules.canonical(query.text.strip().lower()).replace(" ", "_")
    if not text:
        raise GameError(
            "invalid_query", "Invalid query: field 'text' is blank; give some letters to look for."
        )
    phrase = text.replace("_", " ")
    found = []
    for recipe in rules.recipes.values():
        name = rules.display_name(recipe.result).lower()
        if text in recipe.id.lower() or text in recipe.result or phrase in name:
            rank = 0 if recipe.result == text else 1 if recipe.result.startswith(text) else 2
            found.append((rank, recipe.result, recipe.id, recipe))
    found.sort(key=lambda entry: entry[:3])
    shown = [recipe_summary(rules, entry[3]) for entry in found[: query.limit]]
    return {"text": query.text, "recipes": shown, "total": len(found), "truncated": len(found) > len(shown)}


def _answer_possible_crafts(ctx: QueryContext, query: PossibleCrafts) -> dict[str, Any]:
    hand, kind = _need_hand(ctx, "what their hand can craft")
    crafts = _planner(ctx).possible_crafts(hand)
    shown = [
        {**c.as_dict(), **_craft_kind(ctx.rules, ctx.rules.recipes[c.recipe_id], hand)}
        for c in crafts[: query.limit]
    ]
    return {
        "hand": kind,
        "crafts": shown,
        "total": len(crafts),
        "truncated": len(crafts) > len(shown),
    }


def _craft_kind(rules: RuleSet, recipe: Recipe, hand: Mapping[str, Fraction]) -> dict[str, Any]:
    """What a client needs to know before offering a craft: the recipe's type, whether it burns fuel,
    and the ingredients the hand can fill with more than one item (``craft_options`` lists them)."""
    choosable = [
        i for i, ing in enumerate(recipe.ingredients) if sum(1 for o in ing.options if hand.get(o, 0) > 0) > 1
    ]
    return {"type": recipe.type.value, "burns_fuel": recipe.burns_fuel, "choosable": choosable}


def _answer_craftable(ctx: QueryContext, query: Craftable) -> dict[str, Any]:
    hand, kind = _need_hand(ctx, "what their hand can craft")
    if query.item is None:
        if query.count is not None:
            raise GameError(
                "invalid_query",
                "Invalid query: give 'item' with 'count' (without both, your target is used).",
            )
        assert ctx.target is not None
        target = dict(ctx.target)
    else:
        target = {_item(ctx, query.item, "item"): query.count or 1}
    others: dict[str, int] = {}
    for seat, public in enumerate(ctx.public_hands):
        if seat != ctx.seat:
            for item, count in public.items():
                others[item] = others.get(item, 0) + count
    planner = _planner(ctx)
    # Whether the hand can craft the target is always answered exactly (cheap: a plain LP, or small
    # integer ones under the whole rule). The searches for what is missing are over the size limit
    # for many items (seconds in HiGHS): a relaxation's verified answer stands in for them, marked
    # "approximate", or the field is null and marked "unknown" when none verifies.
    unknown: dict[str, str] = {}
    approximate: dict[str, str] = {}
    try:
        plan = planner.plan(hand, target, find_missing=False)
        from_others: dict[str, int] | None = {}
        anywhere: dict[str, int] | None = {}
        if not plan.craftable:
            try:
                with exact_search_limit(QUERY_MAX_INTEGER_COLUMNS) as search:
                    plan = planner.plan(hand, target, available=others)
                from_others = None if plan.missing is None else dict(plan.missing)
                if search.approximated:
                    approximate["missing_from_others"] = "too_expensive"
            except SearchTooLarge:
                from_others, unknown["missing_from_others"] = None, "too_expensive"
            try:
                with exact_search_limit(QUERY_MAX_INTEGER_COLUMNS) as search:
                    anywhere = planner.missing(hand, target)
                if search.approximated:
                    approximate["missing"] = "too_expensive"
            except SearchTooLarge:
                anywhere, unknown["missing"] = None, "too_expensive"
    except PlannerError as err:  # the models bound the input, so this is a rule set problem
        code = "unknown_item" if isinstance(err, UnknownItemError) else "invalid_query"
        raise GameError(code, err.message[0].upper() + err.message[1:] + ".", {"target": target}) from None
    answer = {
        "hand": kind,
        "target": dict(sorted(target.items())),
        "craftable": plan.craftable,
        "steps": [s.as_dict() for s in plan.steps],
        "missing_from_others": None if from_others is None else dict(sorted(from_others.items())),
        "missing": None if anywhere is None else dict(sorted(anywhere.items())),
        "with_missing_steps": [s.as_dict() for s in plan.missing_plan.steps] if plan.missing_plan else [],
    }
    if approximate:
        answer["approximate"] = approximate
    if unknown:
        answer["unknown"] = unknown
    return answer


# --- the crafting tree -------------------------------------------------------------------------------
class _Budget:
    def __init__(self, nodes: int) -> None:
        self.left = nodes
        self.cut = False
        self.reach: _Reach | None = None

    def take(self) -> bool:
        if self.left <= 0:
            self.cut = True
            return False
        self.left -= 1
        return True


def _answer_crafting_tree(ctx: QueryContext, query: CraftingTree) -> dict[str, Any]:
    item = _item(ctx, query.item, "item")
    budget = _Budget(MAX_TREE_NODES)
    held: dict[str, Fraction] = {}
    for public in ctx.public_hands:
        for name, count in public.items():
            held[name] = held.get(name, Fraction(0)) + count
    if ctx.own_hand_kind == "crafting" and ctx.own_hand is not None and ctx.seat is not None:
        # during crafting the viewer's own items are its crafting hand, not its public one
        for name, count in ctx.public_hands[ctx.seat].items():
            held[name] -= count
        for name, qty in ctx.own_hand.items():
            held[name] = held.get(name, Fraction(0)) + qty
    budget.take()
    budget.reach = _Reach(ctx.rules, held)
    tree = _tree_node(ctx, item, Fraction(query.count), query.depth, held, budget, (item,))
    return {"tree": tree, "nodes": MAX_TREE_NODES - budget.left, "truncated": budget.cut}


class _Reach:
    """Which items the hands can make from what they hold, a few crafts deep (memoised per answer): the
    tree prefers those routes to ones through items nobody holds."""

    DEPTH = 3

    def __init__(self, rules: RuleSet, held: Mapping[str, Fraction]) -> None:
        self.rules = rules
        self.held = held
        self.memo: dict[tuple[str, int, tuple[str, ...]], bool] = {}

    def __call__(self, item: str, path: tuple[str, ...], depth: int = DEPTH) -> bool:
        """Whether the hands hold ``item`` or can make it without passing through ``path`` (the item
        being made and its ancestors: nuggets from the ingot being made are no route to it)."""
        if item in path:
            return False
        if self.held.get(item, 0) > 0:
            return True
        if depth <= 0:
            return False
        key = (item, depth, path)
        if key not in self.memo:
            self.memo[key] = False  # a cycle back to this item is no route
            self.memo[key] = any(
                all(any(self(o, path, depth - 1) for o in ing.options) for ing in recipe.ingredients)
                for recipe in self.rules.recipes_by_result.get(item, ())
            )
        return self.memo[key]


def _holders(ctx: QueryContext, item: str) -> list[int]:
    return [seat for seat, hand in enumerate(ctx.public_hands) if hand.get(item, 0) > 0]


def _tree_node(
    ctx: QueryContext,
    item: str,
    need: Fraction,
    depth: int,
    held: Mapping[str, Fraction],
    budget: _Budget,
    path: tuple[str, ...],
) -> dict[str, Any]:
    rules = ctx.rules
    node: dict[str, Any] = {"item": item, "need": fmt_qty(need), "held_by": _holders(ctx, item)}
    if ctx.own_hand is not None:
        node["you_hold"] = fmt_qty(ctx.own_hand.get(item, Fraction(0)))
    recipes = rules.recipes_by_result.get(item, ())
    node["recipes_total"] = len(recipes)
    have = held.get(item, Fraction(0))
    if have >= need:
        node["stop"] = "held"
        return node
    levels = _planner(ctx).graph.item_levels
    # a recipe that only undoes another (raw iron from a block of raw iron, which is made of raw iron) is
    # no way to obtain the item unless some hand holds the block; an item made only so is as raw as one no
    # recipe makes. Packing (9 wheat -> a hay block) is a way: its input sits below the item.
    recipes = tuple(r for r in recipes if not _undoes(rules, r, item, path, held, levels))
    if not recipes:
        # "raw" (trade for it) only for an item no recipe makes from anything below it; an item whose
        # every way passes through its own ancestors in the tree is a cycle
        node["stop"] = "raw" if levels.get(item, 0) == 0 else "cycle"
        return node
    if depth <= 0:
        node["stop"] = "depth"
        return node
    # what the hands already hold is not made again: the runs cover only the rest
    to_make = need - max(have, Fraction(0))
    if to_make != need:
        node["to_make"] = fmt_qty(to_make)

    reach = budget.reach or _Reach(rules, held)

    def simplicity(recipe: Recipe) -> tuple[int, int, int, int, str]:
        # first the ways whose inputs the hands already hold (sticks from the planks someone has, not
        # from bamboo nobody has), then the shallowest
        # (or can make from what they hold: sticks from the oak log someone has, through planks)
        unheld = sum(1 for ing in recipe.ingredients if not any(held.get(o, 0) > 0 for o in ing.options))
        unreached = sum(1 for ing in recipe.ingredients if not any(reach(o, path) for o in ing.options))
        deepest = max((min(levels.get(o, 0) for o in ing.options) for ing in recipe.ingredients), default=0)
        return (unreached, unheld, deepest, len(recipe.ingredients), recipe.id)

    node["recipes"] = []
    for recipe in sorted(recipes, key=simplicity)[:MAX_RECIPES_PER_ITEM]:
        runs = to_make / recipe.count
        if ctx.whole_runs:  # whole runs only: the next whole number of runs
            runs = Fraction(math.ceil(runs))
        way: dict[str, Any] = {
            "recipe": recipe.id,
            "runs": fmt_qty(runs),
            "text": recipe.describe(),
            "inputs": [],
        }
        for index, ing in enumerate(recipe.ingredients):
            option = _pick_option(ing.options, held, levels, lambda o: reach(o, path))
            amount = ing.count * runs
            if option in path or not budget.take():
                child = {
                    "item": option,
                    "need": fmt_qty(amount),
                    "held_by": _holders(ctx, option),
                    "stop": "cycle",
                }
                if option not in path:
                    child["stop"] = "budget"
            else:
                child = _tree_node(ctx, option, amount, depth - 1, held, budget, (*path, option))
            child["ingredient"] = index
            if ing.is_choice:
                child["options"] = list(ing.options[:20])
            way["inputs"].append(child)
        if recipe.burns_fuel:
            fuels_held = sorted(f for f in rules.fuels.burn_ticks if held.get(f, 0) > 0)
            way["fuel"] = {
                "options_held": fuels_held[:20],
                "coal_units": fmt_qty(runs * rules.fuels.units_per_run("coal"))
                if "coal" in rules.fuels.burn_ticks
                else None,
            }
            # the fuel the step burns: the held fuel that covers the runs with the fewest units (else the
            # most held), or coal when no hand holds any fuel
            fuel = _pick_fuel(rules, fuels_held, held, runs)
            if fuel is not None:
                units = runs * rules.fuels.units_per_run(fuel)
                way["fuel"].update(
                    item=fuel,
                    need=fmt_qty(units),
                    held_by=_holders(ctx, fuel),
                    enough=held.get(fuel, Fraction(0)) >= units,
                )
        node["recipes"].append(way)
    return node


def _pick_fuel(
    rules: RuleSet, fuels_held: list[str], held: Mapping[str, Fraction], runs: Fraction
) -> str | None:
    if fuels_held:
        enough = [f for f in fuels_held if held[f] >= runs * rules.fuels.units_per_run(f)]
        if enough:
            return min(enough, key=lambda f: (runs * rules.fuels.units_per_run(f), f))
        return max(fuels_held, key=lambda f: (held[f] / rules.fuels.units_per_run(f), f))
    return "coal" if "coal" in rules.fuels.burn_ticks else None


def _undoes(
    rules: RuleSet,
    recipe: Recipe,
    item: str,
    path: tuple[str, ...],
    held: Mapping[str, Fraction],
    levels: Mapping[str, int],
) -> bool:
    """Whether ``recipe`` only undoes another: some input no hand holds sits above ``item`` (an unpacking
    of a storage form) and can only be made from items on ``path`` (the item being made and its
    ancestors in the tree), so running it would first need what it is meant to produce."""
    level = levels.get(item, 0)
    for ing in recipe.ingredients:
        if any(held.get(option, 0) > 0 for option in ing.options):
            continue  # a held block unpacks: a real way
        if min((levels.get(option, 0) for option in ing.options), default=0) <= level:
            continue  # packing goes up from what is below: a real way
        makers = [rules.recipes_by_result.get(option, ()) for option in ing.options]
        if all(
            ways and all(any(o in path for i in way.ingredients for o in i.options) for way in ways)
            for ways in makers
        ):
            return True
    return False


def _pick_option(
    options: tuple[str, ...],
    held: Mapping[str, Fraction],
    levels: Mapping[str, int],
    reach: Callable[[str], bool] | None = None,
) -> str:
    """The option a tree expands: one some hand holds (the most held), else one the hands can make from
    what they hold, else the simplest to make."""
    holding = [o for o in options if held.get(o, 0) > 0]
    if holding:
        return max(holding, key=lambda o: (held[o], o))
    if reach is not None:
        reachable = [o for o in options if reach(o)]
        if reachable:
            return min(reachable, key=lambda o: (levels.get(o, 0), o))
    return min(options, key=lambda o: (levels.get(o, 0), o))


def _answer_match_grid(ctx: QueryContext, query: MatchGrid) -> dict[str, Any]:
    grid = [
        [
            None if cell is None or not cell.strip() else _item(ctx, cell, f"grid.{r}.{c}")
            for c, cell in enumerate(row)
        ]
        for r, row in enumerate(query.grid)
    ]
    found = match_grid(ctx.rules, grid)
    matches = []
    for match in found.matches:
        entry = {
            **recipe_summary(ctx.rules, match.recipe),
            "choices": {str(i): item for i, item in match.choices.items()},
            "mirrored": match.mirrored,
            "max_runs": None,
        }
        if ctx.own_hand is not None:
            runs = max_runs(ctx.rules, ctx.own_hand, match.recipe, match.choices)
            entry["max_runs"] = fmt_qty(clamp_runs(runs, whole_runs=ctx.whole_runs))
        matches.append(entry)
    hint = None
    if not matches and found.mixed:
        hint = (
            f"Almost {ctx.rules.display_name(ctx.rules.recipes[found.mixed[0]].result)}: put the same item "
            "in every cell of one ingredient "
            "(for example only oak planks, not oak and birch)."
        )
    elif not matches and any(cell is not None for row in grid for cell in row):
        hint = "No recipe has this pattern; look the item up in the recipe book to see its shape."
    return {"matches": matches, "mixed": list(found.mixed), "hint": hint}


def _answer_craft_options(ctx: QueryContext, query: CraftOptions) -> dict[str, Any]:
    hand, kind = _need_hand(ctx, "how their hand can run a recipe")
    rules = ctx.rules
    recipe = rules.recipes.get(query.recipe) or rules.recipes.get(rules.canonical(query.recipe.strip()))
    if recipe is None:
        raise GameError(
            "unknown_recipe",
            f"There is no recipe {query.recipe!r} in rule set {rules.name}; recipe_search finds recipe ids.",
            {"field": "recipe", "recipe": query.recipe},
        )

    def runs_with(choices: Mapping[int, str], fuel: str | None = None) -> str:
        return fmt_qty(clamp_runs(max_runs(rules, hand, recipe, choices, fuel), whole_runs=ctx.whole_runs))

    ingredients = []
    for index, ing in enumerate(recipe.ingredients):
        held = [o for o in ing.options if hand.get(o, 0) > 0][:MAX_CRAFT_OPTIONS]
        ingredients.append(
            {
                "index": index,
                "label": ing.label,
                "count": ing.count,
                "choice": ing.is_choice,
                "held": [
                    {
                        "item": o,
                        "held": fmt_qty(hand[o]),
                        "max_runs": runs_with({index: o}) if ing.is_choice else None,
                    }
                    for o in held
                ],
            }
        )
    fuels = []
    if recipe.burns_fuel:
        held_fuels = sorted(f for f in hand if f in rules.fuels.burn_ticks and hand[f] > 0)
        for fuel in held_fuels[:MAX_CRAFT_OPTIONS]:
            fuels.append(
                {
                    "item": fuel,
                    "held": fmt_qty(hand[fuel]),
                    "per_run": fmt_qty(rules.fuels.units_per_run(fuel)),
                    "max_runs": runs_with({}, fuel),
                }
            )
    return {
        "recipe": recipe.id,
        "summary": recipe_summary(rules, recipe),
        "hand": kind,
        "max_runs": runs_with({}),
        "whole_runs": ctx.whole_runs,
        "inputs": ingredients,
        "fuels": fuels,
    }


def _answer_history(ctx: QueryContext, query: History) -> dict[str, Any]:
    return {
        "since_n": query.since_n,
        "events": [dict(e) for e in ctx.events],
        "log_size": ctx.log_size,
        "more": bool(ctx.events) and ctx.events[-1]["n"] + 1 < ctx.log_size,
    }


_ANSWERS: dict[str, Any] = {
    "item_info": _answer_item_info,
    "recipe_search": _answer_recipe_search,
    "possible_crafts": _answer_possible_crafts,
    "crafting_tree": _answer_crafting_tree,
    "craftable": _answer_craftable,
    "match_grid": _answer_match_grid,
    "craft_options": _answer_craft_options,
    "history": _answer_history,
}
assert set(_ANSWERS) == set(QUERY_MODELS)
