"""The crafting world's data model: items, ingredients, recipes and rule sets.

Items are identified by their canonical id: the name without the rule set's prefix
(``oak_planks``, not ``minecraft:oak_planks``). Tags are named the same way (``planks``) and are
written ``#planks`` wherever an item or a tag may stand.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from functools import cached_property


class RecipeType(StrEnum):
    CRAFTING_SHAPED = "crafting_shaped"
    CRAFTING_SHAPELESS = "crafting_shapeless"
    SMELTING = "smelting"
    BLASTING = "blasting"
    SMOKING = "smoking"
    CAMPFIRE_COOKING = "campfire_cooking"
    STONECUTTING = "stonecutting"
    SMITHING_TRANSFORM = "smithing_transform"

    @property
    def burns_fuel(self) -> bool:
        return self in FUEL_BURNING_TYPES

    @property
    def family(self) -> str:
        """Group used in statistics: crafting, cooking, stonecutting or smithing."""
        if self in (RecipeType.CRAFTING_SHAPED, RecipeType.CRAFTING_SHAPELESS):
            return "crafting"
        if self in COOKING_TYPES:
            return "cooking"
        return self.value


FUEL_BURNING_TYPES = frozenset({RecipeType.SMELTING, RecipeType.BLASTING, RecipeType.SMOKING})
COOKING_TYPES = FUEL_BURNING_TYPES | {RecipeType.CAMPFIRE_COOKING}

# Vanilla: one item smelts in 200 ticks of fuel. Blast furnaces and smokers cook twice as fast but also
# burn fuel twice as fast, so every fuel-burning recipe costs the same 200 ticks of fuel per item.
DEFAULT_SMELT_TICKS = 200


@dataclass(frozen=True, slots=True)
class Ingredient:
    """One kind of input of a recipe: any of ``options``, ``count`` units per run.

    ``source`` keeps how the data pack wrote it (``("#planks",)`` or ``("coal", "charcoal")``) so a
    rule set can be compared with vanilla and shown faithfully; ``options`` is the expanded item set.
    """

    options: tuple[str, ...]
    count: int
    source: tuple[str, ...]

    @property
    def is_choice(self) -> bool:
        return len(self.options) > 1

    @property
    def label(self) -> str:
        return " or ".join(self.source)


@dataclass(frozen=True, slots=True)
class Recipe:
    """One recipe. A run consumes every ingredient's ``count`` and yields ``count`` of ``result``.

    Shaped recipes keep their grid: ``pattern`` rows with ``key`` mapping a pattern character to the
    index of its ingredient in ``ingredients`` (identical slots are merged into one ingredient).
    """

    id: str
    type: RecipeType
    ingredients: tuple[Ingredient, ...]
    result: str
    count: int
    pattern: tuple[str, ...] | None = None
    key: Mapping[str, int] | None = None
    cooking_time: int | None = None
    group: str | None = None

    @property
    def burns_fuel(self) -> bool:
        return self.type.burns_fuel

    def describe(self) -> str:
        parts = [f"{ing.count} {ing.label}" for ing in self.ingredients]
        fuel = " + fuel" if self.burns_fuel else ""
        return f"{' + '.join(parts)}{fuel} -> {self.count} {self.result} ({self.type.value})"


@dataclass(frozen=True, slots=True)
class FuelTable:
    """Burn time in ticks per concrete fuel item, and what burning one leaves behind."""

    burn_ticks: Mapping[str, int]
    remainders: Mapping[str, str]
    smelt_ticks: int = DEFAULT_SMELT_TICKS

    def units_per_run(self, fuel: str) -> Fraction:
        """Units of ``fuel`` one run of a fuel-burning recipe consumes (1/8 for coal)."""
        return Fraction(self.smelt_ticks, self.burn_ticks[fuel])


@dataclass(frozen=True, slots=True)
class ItemInfo:
    id: str
    name: str
    category: str | None = None


@dataclass(frozen=True)
class RuleSet:
    """A complete crafting world. Immutable once loaded; indexes are built lazily and cached."""

    name: str
    prefix: str
    items: Mapping[str, ItemInfo]
    recipes: Mapping[str, Recipe]
    tags: Mapping[str, frozenset[str]]
    fuels: FuelTable
    description: str = ""
    starting_items: tuple[str, ...] = ()
    metadata: Mapping[str, object] = field(default_factory=dict)

    # --- names -------------------------------------------------------------------------------------
    def canonical(self, item: str) -> str:
        """Strip this rule set's prefix (``minecraft:stick`` -> ``stick``)."""
        if self.prefix and item.startswith(self.prefix):
            return item[len(self.prefix) :]
        return item

    def qualified(self, item: str) -> str:
        return f"{self.prefix}{item}"

    def display_name(self, item: str) -> str:
        info = self.items.get(item)
        return info.name if info else item.replace("_", " ").capitalize()

    def has_item(self, item: str) -> bool:
        return item in self.items

    # --- indexes -----------------------------------------------------------------------------------
    @cached_property
    def recipes_by_result(self) -> Mapping[str, tuple[Recipe, ...]]:
        index: dict[str, list[Recipe]] = {}
        for recipe in self.recipes.values():
            index.setdefault(recipe.result, []).append(recipe)
        return {item: tuple(rs) for item, rs in index.items()}

    @cached_property
    def recipes_by_input(self) -> Mapping[str, tuple[Recipe, ...]]:
        """Every recipe an item can feed, as an ingredient option or (for cooking) as fuel."""
        index: dict[str, dict[str, Recipe]] = {}
        fuel_recipes = [r for r in self.recipes.values() if r.burns_fuel]
        for recipe in self.recipes.values():
            for ing in recipe.ingredients:
                for option in ing.options:
                    index.setdefault(option, {})[recipe.id] = recipe
        for fuel in self.fuels.burn_ticks:
            bucket = index.setdefault(fuel, {})
            for recipe in fuel_recipes:
                bucket[recipe.id] = recipe
        return {item: tuple(rs.values()) for item, rs in index.items()}

    @cached_property
    def recipes_by_ingredient(self) -> Mapping[str, tuple[Recipe, ...]]:
        """Every recipe an item can feed as an ingredient option (fuel left out). A recipe runs only when
        every ingredient has an option in hand, so these are all the candidates for "what can this hand
        run"; indexing fuels too would add every cooking recipe under every fuel held."""
        index: dict[str, dict[str, Recipe]] = {}
        for recipe in self.recipes.values():
            for ing in recipe.ingredients:
                for option in ing.options:
                    index.setdefault(option, {})[recipe.id] = recipe
        return {item: tuple(rs.values()) for item, rs in index.items()}

    @cached_property
    def tags_of_item(self) -> Mapping[str, tuple[str, ...]]:
        index: dict[str, list[str]] = {}
        for tag, members in sorted(self.tags.items()):
            for item in members:
                index.setdefault(item, []).append(tag)
        return {item: tuple(tags) for item, tags in index.items()}

    def resolve(self, ref: str) -> frozenset[str]:
        """Items an item-or-``#tag`` reference stands for."""
        if ref.startswith("#"):
            return self.tags[self.canonical(ref[1:])]
        return frozenset({self.canonical(ref)})

    def recipe(self, recipe_id: str) -> Recipe:
        return self.recipes[recipe_id]

    @cached_property
    def content_hash(self) -> str:
        """sha256 of everything that decides play (items, recipes, tags, fuels), not where it came from.

        Game logs record it next to the rule set's name, so a replay can tell whether the rule set it
        loads is the one the game was played with. Description and metadata are left out: they do not
        change any craft.
        """
        recipes = [
            {
                "id": r.id,
                "type": r.type.value,
                "ingredients": [[list(i.options), i.count] for i in r.ingredients],
                "result": r.result,
                "count": r.count,
                "cooking_time": r.cooking_time,
            }
            for r in sorted(self.recipes.values(), key=lambda r: r.id)
        ]
        content = {
            "name": self.name,
            "prefix": self.prefix,
            "items": sorted(self.items),
            "recipes": recipes,
            "tags": {tag: sorted(items) for tag, items in sorted(self.tags.items())},
            "fuels": [sorted(self.fuels.burn_ticks.items()), sorted(self.fuels.remainders.items())],
            "smelt_ticks": self.fuels.smelt_ticks,
            "starting_items": list(self.starting_items),
        }
        text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def summary(self) -> dict[str, object]:
        by_type: dict[str, int] = {}
        for recipe in self.recipes.values():
            by_type[recipe.type.value] = by_type.get(recipe.type.value, 0) + 1
        return {
            "name": self.name,
            "prefix": self.prefix,
            "items": len(self.items),
            "recipes": len(self.recipes),
            "recipes_by_type": dict(sorted(by_type.items())),
            "tags": len(self.tags),
            "fuels": len(self.fuels.burn_ticks),
            "starting_items": list(self.starting_items),
        }


Hand = Mapping[str, Fraction]
"""A player's items during crafting: item id -> exact rational quantity."""


def as_fraction_hand(hand: Mapping[str, int | Fraction | str]) -> dict[str, Fraction]:
    """Normalise counts (ints, Fractions or strings like ``"3/4"``) into a Fraction hand without zeros."""
    out: dict[str, Fraction] = {}
    for item, qty in hand.items():
        value = Fraction(qty)
        if value < 0:
            raise ValueError(f"negative quantity {qty} of {item}")
        if value:
            out[item] = value
    return out
