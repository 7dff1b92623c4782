"""Generate the `alchemy` rule set from the project's own table (:mod:`craft_rules.build.alchemy_table`).

    python -m craft_rules.build.alchemy [--dest DIR] [--check]

Writes ``craft_rules/rule_sets/alchemy/`` reproducibly: the same table gives byte-identical files,
files the table no longer makes are removed. ``--check`` writes nothing and exits 1 if the folder is
out of date (for CI). The table is validated first: unknown elements, malformed lines, a pair that
would give two results, and elements unreachable from the starting four are all errors.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from craft_rules.build import alchemy_table
from craft_rules.catalog import CATALOG_FILE, shipped_catalog_file
from craft_rules.errors import TradeCraftError
from craft_rules.importers import combination_recipe, combination_recipe_id, json_bytes, write_rule_set_files
from craft_rules.loader import RULE_SETS_DIR

RULE_SET_NAME = "alchemy"
DESCRIPTION = (
    "An original element-combination world in the spirit of Little Alchemy 2: start from water, fire, "
    "earth and air; every other element is made by combining two elements."
)
SOURCE = "written by the TradeCraft project (craft_rules/build/alchemy_table.py)"
LICENCE = "MIT (the TradeCraft project's own licence)"

_LINE = re.compile(r"^\s*([a-z0-9_]+)\s*\+\s*([a-z0-9_]+)\s*=\s*([a-z0-9_]+)\s*$")


class AlchemyTableError(TradeCraftError, ValueError):
    """The element table is inconsistent; the message names the line or element to fix."""

    code = "invalid_alchemy_table"

    def __init__(self, message: str) -> None:
        super().__init__(self.code, message)


@dataclass(frozen=True, slots=True)
class Element:
    id: str
    name: str
    category: str


@dataclass(frozen=True, slots=True)
class Combination:
    first: str
    second: str
    result: str

    @property
    def recipe_id(self) -> str:
        return combination_recipe_id(self.first, self.second, self.result)

    @property
    def pair(self) -> tuple[str, str]:
        low, high = sorted((self.first, self.second))
        return low, high


def parse_elements(by_category: Mapping[str, str], display_names: Mapping[str, str]) -> dict[str, Element]:
    elements: dict[str, Element] = {}
    for category, ids in by_category.items():
        for element_id in ids.split():
            if element_id in elements:
                raise AlchemyTableError(
                    f"element {element_id!r} is listed in both {elements[element_id].category!r} and "
                    f"{category!r}; keep one"
                )
            name = display_names.get(element_id) or element_id.replace("_", " ").capitalize()
            elements[element_id] = Element(element_id, name, category)
    return elements


def parse_combinations(text: str, elements: Mapping[str, Element]) -> list[Combination]:
    combos: list[Combination] = []
    result_of_pair: dict[tuple[str, str], str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0]
        if not line.strip():
            continue
        match = _LINE.match(line)
        if not match:
            raise AlchemyTableError(f"combination line {number}: {line.strip()!r} is not 'a + b = result'")
        combo = Combination(*match.groups())
        for element in (combo.first, combo.second, combo.result):
            if element not in elements:
                raise AlchemyTableError(
                    f"combination line {number}: unknown element {element!r}; add it to ELEMENTS_BY_CATEGORY"
                )
        if combo.pair in result_of_pair:
            raise AlchemyTableError(
                f"combination line {number}: {combo.pair[0]} + {combo.pair[1]} already gives "
                f"{result_of_pair[combo.pair]}; a pair gives one result"
            )
        result_of_pair[combo.pair] = combo.result
        combos.append(combo)
    return combos


def element_depths(starting: Iterable[str], combos: Iterable[Combination]) -> dict[str, int]:
    """Fewest combination steps in the longest branch needed to make each element (starting = 0)."""
    depth = dict.fromkeys(starting, 0)
    combos = list(combos)
    changed = True
    while changed:
        changed = False
        for c in combos:
            if c.first in depth and c.second in depth:
                candidate = 1 + max(depth[c.first], depth[c.second])
                if candidate < depth.get(c.result, candidate + 1):
                    depth[c.result] = candidate
                    changed = True
    return depth


def starting_costs(starting: Iterable[str], combos: Iterable[Combination]) -> dict[str, int]:
    """Fewest starting-element units one unit of each element consumes (crafting consumes inputs)."""
    cost = dict.fromkeys(starting, 1)
    combos = list(combos)
    changed = True
    while changed:
        changed = False
        for c in combos:
            if c.first in cost and c.second in cost:
                candidate = cost[c.first] + cost[c.second]
                if candidate < cost.get(c.result, candidate + 1):
                    cost[c.result] = candidate
                    changed = True
    return cost


@dataclass(frozen=True)
class AlchemyTable:
    elements: dict[str, Element]
    combinations: list[Combination]
    starting: tuple[str, ...]

    @classmethod
    def load(cls) -> AlchemyTable:
        """The project's table, validated."""
        elements = parse_elements(alchemy_table.ELEMENTS_BY_CATEGORY, alchemy_table.DISPLAY_NAMES)
        unknown_names = set(alchemy_table.DISPLAY_NAMES) - set(elements)
        if unknown_names:
            raise AlchemyTableError(f"DISPLAY_NAMES names unknown elements: {sorted(unknown_names)}")
        starting = alchemy_table.STARTING_ELEMENTS
        combos = parse_combinations(alchemy_table.COMBINATIONS, elements)
        table = cls(elements, combos, starting)
        unreachable = set(elements) - set(table.depths())
        if unreachable:
            raise AlchemyTableError(
                f"elements no combination chain reaches from {', '.join(starting)}: {sorted(unreachable)}"
            )
        return table

    def depths(self) -> dict[str, int]:
        return element_depths(self.starting, self.combinations)

    def costs(self) -> dict[str, int]:
        return starting_costs(self.starting, self.combinations)

    def files(self) -> dict[str, bytes]:
        """The rule set folder's files: relative path -> exact bytes."""
        meta = {
            "name": RULE_SET_NAME,
            "description": DESCRIPTION,
            "prefix": "",
            "starting_items": list(self.starting),
            "source": SOURCE,
            "licence": LICENCE,
        }
        items = {e.id: {"name": e.name, "category": e.category} for e in self.elements.values()}
        files = {"ruleset.json": json_bytes(meta), "items.json": json_bytes(items)}
        files[CATALOG_FILE] = shipped_catalog_file(RULE_SET_NAME)  # hand-written, not generated
        for combo in self.combinations:
            recipe = combination_recipe(combo.first, combo.second, combo.result)
            files[f"recipes/{combo.recipe_id}.json"] = json_bytes(recipe)
        return files

    def summary(self) -> dict[str, object]:
        depths, costs = self.depths(), self.costs()
        by_depth: dict[int, int] = {}
        for depth in depths.values():
            by_depth[depth] = by_depth.get(depth, 0) + 1
        made = [e for e in self.elements if e not in self.starting]
        return {
            "elements": len(self.elements),
            "combinations": len(self.combinations),
            "elements_by_depth": dict(sorted(by_depth.items())),
            "max_depth": max(depths.values()),
            "median_starting_cost": sorted(costs[e] for e in made)[len(made) // 2],
            "max_starting_cost": max(costs[e] for e in made),
        }


def build(dest: Path | None = None) -> dict[str, int]:
    """Write the rule set folder; returns counts of written, unchanged and removed files."""
    table = AlchemyTable.load()
    return write_rule_set_files(dest or RULE_SETS_DIR / RULE_SET_NAME, table.files())


def is_up_to_date(dest: Path | None = None) -> bool:
    """True if ``dest`` already holds exactly what the generator would write."""
    dest = dest or RULE_SETS_DIR / RULE_SET_NAME
    expected = AlchemyTable.load().files()
    present = {p.relative_to(dest).as_posix() for p in dest.rglob("*.json")} if dest.is_dir() else set()
    if present != set(expected):
        return False
    return all((dest / rel).read_bytes() == content for rel, content in expected.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, help="output folder (default: the shipped rule set)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the folder is out of date")
    args = parser.parse_args(argv)
    try:
        table = AlchemyTable.load()
    except AlchemyTableError as err:
        print(f"error ({err.code}): {err}", file=sys.stderr)
        return 2
    if args.check:
        fresh = is_up_to_date(args.dest)
        print("alchemy rule set is up to date" if fresh else "alchemy rule set is out of date: regenerate")
        return 0 if fresh else 1
    counts = build(args.dest)
    print(
        f"alchemy: {counts['written']} written, {counts['unchanged']} unchanged, {counts['removed']} removed"
    )
    for key, value in table.summary().items():
        print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
