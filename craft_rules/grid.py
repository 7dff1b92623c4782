"""The crafting grid: a recipe's 3×3 shape, and which recipe a placement of items on a grid makes.

A shaped recipe keeps its pattern (:attr:`Recipe.pattern` rows, :attr:`Recipe.key` mapping a pattern
character to an ingredient index). As in Minecraft's crafting table, a placement matches a shaped recipe
when the placement, trimmed of empty rows and columns, has the recipe's trimmed shape or its mirror image
and every cell holds an item the cell's ingredient accepts. A shapeless recipe matches any arrangement
with exactly its items. The engine takes one item per ingredient (``choices``), so all cells of one
ingredient must hold the same item: a placement that mixes, say, oak and birch planks in one ingredient
does not match (:attr:`GridMatches.mixed` says that was the only problem).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from craft_rules.model import Recipe, RecipeType, RuleSet

GRID_SIZE = 3
"""The crafting grid is 3 cells wide and 3 high."""

Cells = tuple[tuple[str | None, ...], ...]
IndexGrid = tuple[tuple[int | None, ...], ...]
Cell = TypeVar("Cell", str, int)


@dataclass(frozen=True)
class GridMatch:
    """A recipe the placement makes, with the item that fills each ingredient that accepts several."""

    recipe: Recipe
    choices: dict[int, str]
    mirrored: bool = False


@dataclass(frozen=True)
class GridMatches:
    matches: tuple[GridMatch, ...] = ()
    mixed: tuple[str, ...] = field(default=())
    """Recipes whose shape matched but whose cells of one ingredient hold different items."""


def recipe_grid(recipe: Recipe) -> IndexGrid | None:
    """A shaped recipe's pattern as rows of ingredient indices (None = empty cell), padded to one
    width; None for recipes without a shape."""
    if recipe.pattern is None or recipe.key is None:
        return None
    key = recipe.key
    width = max(len(row) for row in recipe.pattern)
    return tuple(tuple(None if ch == " " else key[ch] for ch in row.ljust(width)) for row in recipe.pattern)


def _trim(rows: Sequence[Sequence[Cell | None]]) -> tuple[tuple[Cell | None, ...], ...]:
    width = max((len(r) for r in rows), default=0)
    padded = [list(r) + [None] * (width - len(r)) for r in rows]
    kept_rows = [r for r in padded if any(c is not None for c in r)]
    if not kept_rows:
        return ()
    columns = [i for i in range(width) if any(r[i] is not None for r in kept_rows)]
    first_row = padded.index(kept_rows[0])
    last_row = len(padded) - 1 - padded[::-1].index(kept_rows[-1])
    return tuple(tuple(r[columns[0] : columns[-1] + 1]) for r in padded[first_row : last_row + 1])


def _shaped_choices(recipe: Recipe, shape: IndexGrid, cells: Cells) -> dict[int, str] | bool | None:
    """The per-ingredient items if ``cells`` fill ``shape``; None if they do not; False if they fit the
    shape but one ingredient's cells hold different items."""
    if len(shape) != len(cells) or any(len(a) != len(b) for a, b in zip(shape, cells, strict=True)):
        return None
    chosen: dict[int, str] = {}
    mixed = False
    for shape_row, cell_row in zip(shape, cells, strict=True):
        for index, item in zip(shape_row, cell_row, strict=True):
            if index is None or item is None:
                if index is not item:  # one empty, the other not
                    return None
                continue
            if item not in recipe.ingredients[index].options:
                return None
            if chosen.setdefault(index, item) != item:
                mixed = True
    return False if mixed else chosen


def _shapeless_choices(recipe: Recipe, cells: Cells) -> dict[int, str] | None:
    placed: dict[str, int] = {}
    for row in cells:
        for item in row:
            if item is not None:
                placed[item] = placed.get(item, 0) + 1
    if sum(placed.values()) != sum(ing.count for ing in recipe.ingredients):
        return None

    def assign(index: int, left: dict[str, int]) -> dict[int, str] | None:
        if index == len(recipe.ingredients):
            return {} if not any(left.values()) else None
        ing = recipe.ingredients[index]
        for item in sorted(left):
            if left[item] >= ing.count and item in ing.options:
                rest = assign(index + 1, {**left, item: left[item] - ing.count})
                if rest is not None:
                    return {index: item, **rest}
        return None

    return assign(0, placed)


def match_grid(rules: RuleSet, grid: Sequence[Sequence[str | None]]) -> GridMatches:
    """The crafting recipes (shaped or shapeless) a placement of items on the grid makes, by recipe id.

    ``grid``: up to 3 rows of up to 3 cells, each an item id of ``rules`` or None. The cost is bounded
    by the recipes that use the first placed item."""
    cells = _trim(grid)
    placed = [item for row in cells for item in row if item is not None]
    if not placed:
        return GridMatches()
    mirrored_cells = tuple(tuple(reversed(row)) for row in cells)
    matches: list[GridMatch] = []
    mixed: list[str] = []
    for recipe in sorted(rules.recipes_by_input.get(placed[0], ()), key=lambda r: r.id):
        if recipe.type is RecipeType.CRAFTING_SHAPELESS:
            choices = _shapeless_choices(recipe, cells)
            if choices is not None:
                matches.append(GridMatch(recipe, _only_choices(recipe, choices)))
            continue
        shape = recipe_grid(recipe)
        if recipe.type is not RecipeType.CRAFTING_SHAPED or shape is None:
            continue
        trimmed = _trim(shape)
        for mirrored, candidate in ((False, cells), (True, mirrored_cells)):
            found = _shaped_choices(recipe, trimmed, candidate)
            if found is False:
                mixed.append(recipe.id)
            elif isinstance(found, dict):
                matches.append(GridMatch(recipe, _only_choices(recipe, found), mirrored))
                break
    matched = {m.recipe.id for m in matches}
    return GridMatches(tuple(matches), tuple(dict.fromkeys(m for m in mixed if m not in matched)))


def _only_choices(recipe: Recipe, chosen: dict[int, str]) -> dict[int, str]:
    """Keep the items of ingredients that accept several (the others need no choice)."""
    return {i: item for i, item in sorted(chosen.items()) if recipe.ingredients[i].is_choice}
