"""The shipped `alchemy` rule set and its generator."""

from __future__ import annotations

import json
import re
from collections import deque
from fractions import Fraction
from pathlib import Path

import pytest

from craft_rules.build.alchemy import (
    AlchemyTable,
    AlchemyTableError,
    build,
    is_up_to_date,
    main,
    parse_combinations,
    parse_elements,
)
from craft_rules.crafting import InsufficientItemsError, craft, floor_hand
from craft_rules.loader import RULE_SETS_DIR, load_rule_set, load_rule_set_from, rule_set_dirs
from craft_rules.model import RecipeType, RuleSet

STARTING = ("water", "fire", "earth", "air")


@pytest.fixture(scope="module")
def alchemy() -> RuleSet:
    return load_rule_set("alchemy")


def reachable_by_bfs(rules: RuleSet) -> dict[str, int]:
    """Items a breadth-first search from the starting items reaches (value: a chain length, not minimal)."""
    found = dict.fromkeys(rules.starting_items, 0)
    frontier = deque(rules.starting_items)
    while frontier:
        item = frontier.popleft()
        for recipe in rules.recipes_by_input.get(item, ()):
            inputs = [ing.options[0] for ing in recipe.ingredients]
            if recipe.result not in found and all(i in found for i in inputs):
                found[recipe.result] = 1 + max(found[i] for i in inputs)
                frontier.append(recipe.result)
    return found


def test_is_installed_and_loads_by_name(alchemy: RuleSet) -> None:
    assert "alchemy" in rule_set_dirs()
    assert alchemy.name == "alchemy"
    assert alchemy.prefix == ""
    assert alchemy.starting_items == STARTING
    assert "licence" in alchemy.metadata and "TradeCraft" in str(alchemy.metadata["licence"])


def test_has_at_least_150_named_and_categorised_elements(alchemy: RuleSet) -> None:
    assert len(alchemy.items) >= 150
    raw = json.loads((RULE_SETS_DIR / "alchemy" / "items.json").read_text())
    assert set(raw) == set(alchemy.items)  # nothing is named only by the loader's fallback
    for item, info in alchemy.items.items():
        assert info.name and info.name[0].isupper(), item
        assert info.category, item
    categories = {info.category for info in alchemy.items.values()}
    assert len(categories) >= 8  # enough for distinct glyph colours


def test_every_element_is_reachable_from_the_starting_four(alchemy: RuleSet) -> None:
    found = reachable_by_bfs(alchemy)
    assert set(found) == set(alchemy.items), sorted(set(alchemy.items) - set(found))


def test_every_recipe_combines_exactly_two_elements_into_one(alchemy: RuleSet) -> None:
    pairs: dict[tuple[str, ...], str] = {}
    for recipe in alchemy.recipes.values():
        assert recipe.type is RecipeType.CRAFTING_SHAPELESS
        assert recipe.count == 1
        assert sum(ing.count for ing in recipe.ingredients) == 2, recipe.id
        assert all(len(ing.options) == 1 for ing in recipe.ingredients), recipe.id
        pair = tuple(sorted(ing.options[0] for ing in recipe.ingredients for _ in range(ing.count)))
        assert pair not in pairs, f"{pair} gives both {pairs[pair]} and {recipe.result}"
        pairs[pair] = recipe.result
    assert len(alchemy.recipes) >= len(alchemy.items) - len(STARTING)


def test_every_pair_of_starting_elements_makes_something(alchemy: RuleSet) -> None:
    made = {
        tuple(sorted(i.options[0] for i in r.ingredients for _ in range(i.count)))
        for r in alchemy.recipes.values()
    }
    for index, first in enumerate(STARTING):
        for second in STARTING[index:]:
            assert tuple(sorted((first, second))) in made


def test_interesting_targets_exist_at_depth_2_to_6_and_are_affordable(alchemy: RuleSet) -> None:
    table = AlchemyTable.load()
    depths, costs = table.depths(), table.costs()
    assert set(depths) == set(reachable_by_bfs(alchemy))
    for depth in range(2, 7):
        affordable = [e for e, d in depths.items() if d == depth and costs[e] <= 4 * depth]
        assert len(affordable) >= 10, (depth, affordable)
    assert max(depths.values()) >= 8  # hard targets exist too


def test_a_chain_from_starting_elements_crafts_a_volcano(alchemy: RuleSet) -> None:
    hand = {"earth": Fraction(4), "fire": Fraction(1), "air": Fraction(0)}
    steps = [
        "rock_from_earth_and_earth",  # earth + earth
        "hill_from_earth_and_rock",  # earth + rock
        "lava_from_earth_and_fire",  # fire + earth
        "volcano_from_hill_and_lava",
    ]
    for step in steps:
        hand = craft(alchemy, hand, step).hand
    assert hand == {"volcano": Fraction(1)}  # everything else was consumed


def test_combining_an_element_with_itself_needs_two(alchemy: RuleSet) -> None:
    with pytest.raises(InsufficientItemsError) as err:
        craft(alchemy, {"water": Fraction(1)}, "pond_from_water_and_water")
    assert err.value.short == {"water": Fraction(1)}
    half = craft(alchemy, {"water": Fraction(1)}, "pond_from_water_and_water", runs="1/2")
    assert half.hand == {"pond": Fraction(1, 2)}
    assert floor_hand(half.hand) == {}


def test_generator_output_is_committed_and_up_to_date() -> None:
    assert is_up_to_date(), "run: python -m craft_rules.build.alchemy"


def test_generator_is_byte_identical_on_rerun_and_removes_stale_files(tmp_path: Path) -> None:
    first = build(tmp_path)
    snapshot = {p: p.read_bytes() for p in tmp_path.rglob("*.json")}
    stale = tmp_path / "recipes" / "unicorn_from_air_and_air.json"
    stale.write_text("{}")
    second = build(tmp_path)
    assert first["written"] == len(snapshot) and second == {
        "written": 0,
        "unchanged": len(snapshot),
        "removed": 1,
    }
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.json")} == snapshot
    assert is_up_to_date(tmp_path)
    shipped = RULE_SETS_DIR / "alchemy"
    assert {p.relative_to(tmp_path) for p in snapshot} == {
        p.relative_to(shipped) for p in shipped.rglob("*.json")
    }
    rules, report = load_rule_set_from(tmp_path, strict=True)
    assert not report.problems and len(rules.items) >= 150


def test_generator_cli_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dest", str(tmp_path), "--check"]) == 1
    assert main(["--dest", str(tmp_path)]) == 0
    assert "elements: " in capsys.readouterr().out
    assert main(["--dest", str(tmp_path), "--check"]) == 0


ELEMENTS = parse_elements({"element": "water fire", "matter": "steam pond"}, {})


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("water + fire = steam\nfire + water = pond", "already gives steam"),
        ("water + fire = lava", "unknown element 'lava'"),
        ("water and fire make steam", "is not 'a + b = result'"),
    ],
)
def test_table_mistakes_are_reported_with_their_line(table: str, message: str) -> None:
    with pytest.raises(AlchemyTableError, match=re.escape(message)):
        parse_combinations(table, ELEMENTS)


def test_an_element_in_two_categories_is_an_error() -> None:
    with pytest.raises(AlchemyTableError, match="listed in both"):
        parse_elements({"a": "water", "b": "water"}, {})
