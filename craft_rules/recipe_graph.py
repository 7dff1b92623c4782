"""The recipe graph of one rule set: which items feed which, crafting levels, ancestor sub-graphs, and which
recipes a set of items can ever fire. Pure structure: no quantities, no LP."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import cached_property

from craft_rules.model import Recipe, RuleSet

NARROW_USE_LEVELS = 2  # items feeding fewer than 2 different results (ores, pure fuels): 2 levels up


def strongly_connected(nodes: Iterable[str], edges: Mapping[str, set[str]]) -> dict[str, int]:
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


class RecipeGraph:
    """The structure of one rule set's recipes, built once per rule set (a planner holds one)."""

    def __init__(self, rules: RuleSet):
        self.rules = rules
        self.fuel_units: dict[str, Fraction] = {
            fuel: rules.fuels.units_per_run(fuel) for fuel in rules.fuels.burn_ticks
        }
        # item -> [(recipe id, slot)]: slot i < len(ingredients) is ingredient i; the last slot of a
        # fuel-burning recipe is its fuel.
        slots: dict[str, list[tuple[str, int]]] = {}
        self.slot_count: dict[str, int] = {}
        fuel_recipes: list[str] = []
        for recipe in rules.recipes.values():
            n = len(recipe.ingredients)
            for index, ing in enumerate(recipe.ingredients):
                for option in ing.options:
                    slots.setdefault(option, []).append((recipe.id, index))
            if recipe.burns_fuel:
                fuel_recipes.append(recipe.id)
                n += 1
            self.slot_count[recipe.id] = n
        for fuel in rules.fuels.burn_ticks:
            bucket = slots.setdefault(fuel, [])
            for rid in fuel_recipes:
                bucket.append((rid, len(rules.recipes[rid].ingredients)))
        self.slots_of_item = {item: tuple(s) for item, s in slots.items()}

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
        comp = strongly_connected(sorted(edges), edges)

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

    def ancestors(self, targets: frozenset[str], fuel_leaves: bool) -> tuple[frozenset[str], frozenset[str]]:
        """(items, recipe ids) that can feed ``targets``: reverse reachability (uncached; see
        :meth:`craft_rules.planner.Planner.ancestors`). Every fuel feeds every cooking recipe. With
        ``fuel_leaves`` the recipes that make fuels are not followed (unless something else needs those
        fuels): choosing what to obtain from others never needs them, as a unit of coal block or lava
        bucket out-burns any crafted fuel."""
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

    def fireable(self, start: Iterable[str], allowed: frozenset[str]) -> tuple[set[str], list[str]]:
        """Items reachable from ``start`` and the recipes (among ``allowed``) that can ever run."""
        have = set(start)
        satisfied: dict[str, set[int]] = {}
        fired: list[str] = []
        queue = list(have)
        recipes = self.rules.recipes
        while queue:
            item = queue.pop()
            for rid, slot in self.slots_of_item.get(item, ()):
                if rid not in allowed:
                    continue
                done = satisfied.setdefault(rid, set())
                if slot in done:
                    continue
                done.add(slot)
                if len(done) == self.slot_count[rid]:
                    fired.append(rid)
                    result = recipes[rid].result
                    if result not in have:
                        have.add(result)
                        queue.append(result)
        fired.sort()
        return have, fired
