"""The crafting grid (craft_rules/grid.py): every shaped recipe of the minecraft rule set matches its own
pattern anywhere on the 3x3 grid and mirrored, a pattern missing a cell does not, shapeless recipes match in
any arrangement, and the choices a match names are accepted by craft()."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from craft_rules.crafting import craft
from craft_rules.grid import GRID_SIZE, match_grid, recipe_grid
from craft_rules.loader import load_rule_set
from craft_rules.model import Recipe, RecipeType

RULES = load_rule_set("minecraft")
SHAPED = sorted(
    (r for r in RULES.recipes.values() if r.type is RecipeType.CRAFTING_SHAPED), key=lambda r: r.id
)
SHAPELESS = sorted(
    (r for r in RULES.recipes.values() if r.type is RecipeType.CRAFTING_SHAPELESS), key=lambda r: r.id
)


def placed(recipe: Recipe, rng: random.Random) -> tuple[list[list[str | None]], dict[int, str]]:
    """The recipe's pattern on an empty 3x3 grid at a random offset, each ingredient one random option."""
    shape = recipe_grid(recipe)
    assert shape is not None
    items = {i: rng.choice(ing.options) for i, ing in enumerate(recipe.ingredients)}
    height, width = len(shape), len(shape[0])
    top, left = rng.randint(0, GRID_SIZE - height), rng.randint(0, GRID_SIZE - width)
    grid: list[list[str | None]] = [[None] * GRID_SIZE for _ in range(GRID_SIZE)]
    for r, row in enumerate(shape):
        for c, index in enumerate(row):
            grid[top + r][left + c] = None if index is None else items[index]
    return grid, items


def test_every_shaped_recipe_matches_its_pattern_anywhere_and_mirrored() -> None:
    rng = random.Random(5)
    assert len(SHAPED) > 500
    for recipe in SHAPED:
        grid, items = placed(recipe, rng)
        found = match_grid(RULES, grid)
        assert recipe.id in [m.recipe.id for m in found.matches], (recipe.id, grid)
        match = next(m for m in found.matches if m.recipe.id == recipe.id)
        assert match.choices == {i: item for i, item in items.items() if recipe.ingredients[i].is_choice}
        mirrored = [list(reversed(row)) for row in grid]
        assert recipe.id in [m.recipe.id for m in match_grid(RULES, mirrored).matches], recipe.id


def test_a_pattern_missing_a_cell_or_shifted_apart_does_not_match() -> None:
    rng = random.Random(6)
    for recipe in SHAPED:
        grid, _ = placed(recipe, rng)
        filled = [(r, c) for r in range(GRID_SIZE) for c in range(GRID_SIZE) if grid[r][c] is not None]
        if len(filled) < 2:
            continue
        r, c = rng.choice(filled)
        grid[r][c] = None
        assert recipe.id not in [m.recipe.id for m in match_grid(RULES, grid).matches], (recipe.id, grid)


def test_shapeless_recipes_match_in_any_arrangement() -> None:
    rng = random.Random(7)
    for recipe in SHAPELESS:
        cells: list[str | None] = [
            rng.choice(ing.options) for ing in recipe.ingredients for _ in range(ing.count)
        ]
        if len(cells) > GRID_SIZE * GRID_SIZE:
            continue
        cells += [None] * (GRID_SIZE * GRID_SIZE - len(cells))
        rng.shuffle(cells)
        grid = [cells[i : i + GRID_SIZE] for i in range(0, GRID_SIZE * GRID_SIZE, GRID_SIZE)]
        assert recipe.id in [m.recipe.id for m in match_grid(RULES, grid).matches], (recipe.id, grid)


@pytest.mark.parametrize("recipe_id", ["crafting_table", "stick", "torch", "chest"])
def test_the_choices_of_a_match_are_what_craft_accepts(recipe_id: str) -> None:
    recipe = RULES.recipes[recipe_id]
    grid, items = placed(recipe, random.Random(8))
    match = next(m for m in match_grid(RULES, grid).matches if m.recipe.id == recipe_id)
    hand = {item: Fraction(64) for item in items.values()}
    result = craft(RULES, hand, recipe_id, 1, match.choices)
    assert set(result.consumed) == set(items.values())


def test_mixed_items_in_one_ingredient_are_reported_not_matched() -> None:
    found = match_grid(RULES, [["oak_planks", "birch_planks"], ["oak_planks", "oak_planks"]])
    assert found.matches == () and found.mixed == ("crafting_table",)
    assert match_grid(RULES, [[None, None], [None]]).matches == ()
