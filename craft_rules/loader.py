"""Load a rule set from a folder in the Minecraft data-pack layout.

    <folder>/ruleset.json        metadata: name, description, prefix, starting_items, source, licence
    <folder>/items.json          {"<item>": "English name"} or {"<item>": {"name": ..., "category": ...}}
    <folder>/fuels.json          {"smelt_ticks": 200, "fuels": {"coal": 1600, "#planks": 300},
                                  "remainders": {"lava_bucket": "bucket"}}
    <folder>/recipes/*.json      vanilla recipe files (one recipe each)
    <folder>/tags/items/*.json   vanilla item tags {"values": ["minecraft:x", "#minecraft:y"]}
    <folder>/catalog.json        optional: how the browser draws the items (read by craft_rules.catalog)

Special recipes (``crafting_special_*``, ``smithing_trim``, decorated pots) cannot be written as
"these inputs give that output", so they are skipped and counted. A malformed file is reported with
its path and reason; with ``strict=True`` the first one raises :class:`RuleSetError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from craft_rules.errors import TradeCraftError
from craft_rules.model import (
    DEFAULT_SMELT_TICKS,
    FuelTable,
    Ingredient,
    ItemInfo,
    Recipe,
    RecipeType,
    RuleSet,
)

RULE_SETS_DIR = Path(__file__).resolve().parent / "rule_sets"
CACHE_FORMAT = 1


class RuleSetError(TradeCraftError, ValueError):
    """A rule set (or one of its files) cannot be loaded; the message is ``"{path}: {reason}"``."""

    code = "invalid_rule_set"

    def __init__(self, path: Path | str, reason: str):
        super().__init__(self.code, f"{path}: {reason}", {"path": str(path), "reason": reason})
        self.path = str(path)
        self.reason = reason


@dataclass
class LoadReport:
    """What loading skipped or could not read; kept next to the rule set for `rules stats`."""

    skipped_by_type: dict[str, int] = field(default_factory=dict)
    problems: list[RuleSetError] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "skipped_by_type": dict(sorted(self.skipped_by_type.items())),
            "problems": [{"path": p.path, "reason": p.reason} for p in self.problems],
        }


def _strip(ref: str, prefix: str) -> str:
    if ref.startswith("#"):
        return "#" + _strip(ref[1:], prefix)
    if prefix and ref.startswith(prefix):
        return ref[len(prefix) :]
    return ref  # a foreign namespace keeps its prefix, so it is never merged with ours


def _read_json(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise RuleSetError(path, f"invalid JSON: {exc.msg} at line {exc.lineno}") from exc
    except OSError as exc:
        raise RuleSetError(path, f"cannot read: {exc.strerror}") from exc


def resolve_tags(
    raw: Mapping[str, list[str]],
    where: Path | str = "tags",
    problems: list[RuleSetError] | None = None,
) -> dict[str, frozenset[str]]:
    """Expand nested ``#tag`` references.

    An unknown or cyclic reference raises, or, when ``problems`` is given, is recorded there and
    treated as empty so the rest of the tags stay usable.
    """
    resolved: dict[str, frozenset[str]] = {}
    visiting: set[str] = set()

    def fail(reason: str) -> frozenset[str]:
        err = RuleSetError(where, reason)
        if problems is None:
            raise err
        problems.append(err)
        return frozenset()

    def expand(tag: str) -> frozenset[str]:
        if tag in resolved:
            return resolved[tag]
        if tag not in raw:
            return fail(f"unknown tag #{tag}")
        if tag in visiting:
            return fail(f"tag #{tag} refers to itself")
        visiting.add(tag)
        members: set[str] = set()
        for value in raw[tag]:
            members |= expand(value[1:]) if value.startswith("#") else {value}
        visiting.discard(tag)
        resolved[tag] = frozenset(members)
        return resolved[tag]

    for tag in raw:
        expand(tag)
    return resolved


class _RecipeParser:
    """Turns one data-pack recipe object into a :class:`Recipe` (or None for a skipped one)."""

    SUPPORTED: ClassVar[frozenset[str]] = frozenset(t.value for t in RecipeType)

    def __init__(self, prefix: str, tags: Mapping[str, frozenset[str]]):
        self.prefix = prefix
        self.tags = tags

    def _refs(self, spec: Any, path: Path) -> tuple[str, ...]:
        """An ingredient spec -> its alternatives as item ids or ``#tag`` references."""
        if isinstance(spec, list):
            if not spec:
                raise RuleSetError(path, "empty ingredient list")
            refs: list[str] = []
            for alt in spec:
                refs.extend(self._refs(alt, path))
            return tuple(refs)
        if isinstance(spec, str):  # some packs write a bare item id
            return (_strip(spec, self.prefix),)
        if isinstance(spec, dict):
            if "item" in spec:
                return (_strip(str(spec["item"]), self.prefix),)
            if "tag" in spec:
                return ("#" + _strip(str(spec["tag"]), self.prefix),)
        raise RuleSetError(path, f"ingredient must name an item or a tag, got {spec!r}")

    def _options(self, refs: tuple[str, ...], path: Path) -> tuple[str, ...]:
        items: set[str] = set()
        for ref in refs:
            if ref.startswith("#"):
                if ref[1:] not in self.tags:
                    raise RuleSetError(path, f"unknown tag {ref}")
                items |= self.tags[ref[1:]]
            else:
                items.add(ref)
        return tuple(sorted(items))

    def _result(self, data: dict[str, Any], path: Path) -> tuple[str, int]:
        result = data.get("result")
        count = data.get("count", 1)
        if isinstance(result, dict):
            item = result.get("item") or result.get("id")
            count = result.get("count", count)
        else:
            item = result
        if not isinstance(item, str) or not item:
            raise RuleSetError(path, "recipe has no result item")
        if not isinstance(count, int) or count < 1:
            raise RuleSetError(path, f"result count must be a positive integer, got {count!r}")
        return _strip(item, self.prefix), count

    def _merge(self, slots: list[tuple[str, ...]], path: Path) -> tuple[tuple[Ingredient, ...], list[int]]:
        """Merge identical slots into one ingredient with a count; return the slot -> index map."""
        order: dict[tuple[str, ...], int] = {}
        counts: list[int] = []
        slot_index: list[int] = []
        for refs in slots:
            if refs not in order:
                order[refs] = len(counts)
                counts.append(0)
            counts[order[refs]] += 1
            slot_index.append(order[refs])
        ingredients = tuple(
            Ingredient(options=self._options(refs, path), count=counts[i], source=refs)
            for refs, i in order.items()
        )
        return ingredients, slot_index

    def parse(self, recipe_id: str, data: Any, path: Path) -> Recipe | None:
        if not isinstance(data, dict) or "type" not in data:
            raise RuleSetError(path, "a recipe must be a JSON object with a 'type'")
        rtype = _strip(str(data["type"]), self.prefix).split(":")[-1]
        if rtype not in self.SUPPORTED:
            return None
        kind = RecipeType(rtype)
        group = data.get("group") or None
        if kind is RecipeType.CRAFTING_SHAPED:
            return self._shaped(recipe_id, data, path, group)
        if kind is RecipeType.CRAFTING_SHAPELESS:
            raw = data.get("ingredients")
            if not isinstance(raw, list) or not raw:
                raise RuleSetError(path, "shapeless recipe needs a non-empty 'ingredients' list")
            ingredients, _ = self._merge([self._refs(s, path) for s in raw], path)
            item, count = self._result(data, path)
            return Recipe(recipe_id, kind, ingredients, item, count, group=group)
        if kind is RecipeType.SMITHING_TRANSFORM:
            slots = []
            for part in ("template", "base", "addition"):
                if part not in data:
                    raise RuleSetError(path, f"smithing recipe lacks '{part}'")
                slots.append(self._refs(data[part], path))
            ingredients, _ = self._merge(slots, path)
            item, count = self._result(data, path)
            return Recipe(recipe_id, kind, ingredients, item, count, group=group)
        # cooking and stonecutting: one ingredient
        if "ingredient" not in data:
            raise RuleSetError(path, f"{rtype} recipe lacks 'ingredient'")
        ingredients, _ = self._merge([self._refs(data["ingredient"], path)], path)
        item, count = self._result(data, path)
        cooking_time = data.get("cookingtime") if kind.family == "cooking" else None
        return Recipe(recipe_id, kind, ingredients, item, count, cooking_time=cooking_time, group=group)

    def _shaped(self, recipe_id: str, data: dict[str, Any], path: Path, group: str | None) -> Recipe:
        pattern = data.get("pattern")
        key = data.get("key")
        if not isinstance(pattern, list) or not pattern or not all(isinstance(r, str) for r in pattern):
            raise RuleSetError(path, "shaped recipe needs a 'pattern' list of strings")
        if len(pattern) > 3 or any(len(r) > 3 for r in pattern):
            raise RuleSetError(path, "shaped pattern is larger than 3x3")
        if not isinstance(key, dict):
            raise RuleSetError(path, "shaped recipe needs a 'key' object")
        slots: list[tuple[str, ...]] = []
        slot_chars: list[str] = []
        for row in pattern:
            for char in row:
                if char == " ":
                    continue
                if char not in key:
                    raise RuleSetError(path, f"pattern symbol {char!r} is not in the key")
                slots.append(self._refs(key[char], path))
                slot_chars.append(char)
        if not slots:
            raise RuleSetError(path, "shaped pattern has no ingredients")
        ingredients, slot_index = self._merge(slots, path)
        char_to_index = dict(zip(slot_chars, slot_index, strict=True))
        item, count = self._result(data, path)
        return Recipe(
            recipe_id,
            RecipeType.CRAFTING_SHAPED,
            ingredients,
            item,
            count,
            pattern=tuple(pattern),
            key=char_to_index,
            group=group,
        )


def _load_items(path: Path, prefix: str) -> dict[str, ItemInfo]:
    if not path.exists():
        return {}
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise RuleSetError(path, "items.json must map item ids to names")
    items: dict[str, ItemInfo] = {}
    for key, value in raw.items():
        item = _strip(key, prefix)
        if isinstance(value, str):
            items[item] = ItemInfo(item, value)
        elif isinstance(value, dict) and isinstance(value.get("name"), str):
            items[item] = ItemInfo(item, value["name"], value.get("category"))
        else:
            raise RuleSetError(path, f"item {key!r} needs a name")
    return items


def _load_fuels(path: Path, prefix: str, tags: Mapping[str, frozenset[str]]) -> FuelTable:
    if not path.exists():
        return FuelTable({}, {})
    raw = _read_json(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("fuels", {}), dict):
        raise RuleSetError(path, "fuels.json must be an object with a 'fuels' object")
    burn: dict[str, int] = {}
    # items listed by name override what a tag gives them, whatever the file order
    entries = sorted(raw.get("fuels", {}).items(), key=lambda kv: not kv[0].startswith("#"))
    for ref, ticks in entries:
        if not isinstance(ticks, int) or ticks <= 0:
            raise RuleSetError(path, f"burn time of {ref} must be a positive integer of ticks")
        ref = _strip(ref, prefix)
        if ref.startswith("#"):
            if ref[1:] not in tags:
                raise RuleSetError(path, f"unknown tag {ref}")
            for item in tags[ref[1:]]:
                burn[item] = ticks
        else:
            burn[ref] = ticks
    remainders = {_strip(k, prefix): _strip(v, prefix) for k, v in raw.get("remainders", {}).items()}
    smelt_ticks = raw.get("smelt_ticks", DEFAULT_SMELT_TICKS)
    if not isinstance(smelt_ticks, int) or smelt_ticks <= 0:
        raise RuleSetError(path, "smelt_ticks must be a positive integer")
    return FuelTable(burn, remainders, smelt_ticks)


def _load_tags(folder: Path, prefix: str, report: LoadReport, strict: bool) -> dict[str, frozenset[str]]:
    raw: dict[str, list[str]] = {}
    if folder.is_dir():
        for path in sorted(folder.rglob("*.json")):
            name = path.relative_to(folder).with_suffix("").as_posix()
            try:
                data = _read_json(path)
                values = data.get("values") if isinstance(data, dict) else None
                if not isinstance(values, list):
                    raise RuleSetError(path, "a tag file needs a 'values' list")
                refs = []
                for value in values:
                    if isinstance(value, dict):  # {"id": ..., "required": false}
                        value = value.get("id")
                    if not isinstance(value, str):
                        raise RuleSetError(path, f"tag value must be an item or #tag, got {value!r}")
                    refs.append(_strip(value, prefix))
                raw[name] = refs
            except RuleSetError as err:
                if strict:
                    raise
                report.problems.append(err)
    return resolve_tags(raw, folder, None if strict else report.problems)


def load_rule_set_from(
    folder: Path | str, strict: bool = False, prefix: str | None = None
) -> tuple[RuleSet, LoadReport]:
    """Read a rule set folder. Returns the rule set and what was skipped or malformed.

    ``prefix`` overrides ruleset.json's; a bare vanilla data pack (no ruleset.json) uses ``minecraft:``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise RuleSetError(folder, "no such rule set folder")
    meta_path = folder / "ruleset.json"
    meta: dict[str, Any] = _read_json(meta_path) if meta_path.exists() else {}
    if not isinstance(meta, dict):
        raise RuleSetError(meta_path, "ruleset.json must be a JSON object")
    name = str(meta.get("name", folder.name))
    if prefix is None:
        prefix = str(meta.get("prefix", "" if meta_path.exists() else "minecraft:"))
    report = LoadReport()

    tags = _load_tags(folder / "tags" / "items", prefix, report, strict)
    parser = _RecipeParser(prefix, tags)
    recipes: dict[str, Recipe] = {}
    recipe_dir = folder / "recipes"
    for path in sorted(recipe_dir.rglob("*.json")) if recipe_dir.is_dir() else []:
        recipe_id = path.relative_to(recipe_dir).with_suffix("").as_posix()
        try:
            data = _read_json(path)
            recipe = parser.parse(recipe_id, data, path)
        except RuleSetError as err:
            if strict:
                raise
            report.problems.append(err)
            continue
        if recipe is None:
            data_type = str(data.get("type", "?")).split(":")[-1]
            report.skipped_by_type[data_type] = report.skipped_by_type.get(data_type, 0) + 1
            continue
        recipes[recipe_id] = recipe

    items = _load_items(folder / "items.json", prefix)
    try:
        fuels = _load_fuels(folder / "fuels.json", prefix, tags)
    except RuleSetError as err:
        if strict:
            raise
        report.problems.append(err)
        fuels = FuelTable({}, {})
    # every item that occurs anywhere is an item of the rule set, named even when items.json is silent
    mentioned: set[str] = set(fuels.burn_ticks) | set(fuels.remainders.values())
    for members in tags.values():
        mentioned |= members
    for recipe in recipes.values():
        mentioned.add(recipe.result)
        for ing in recipe.ingredients:
            mentioned.update(ing.options)
    starting = tuple(_strip(i, prefix) for i in meta.get("starting_items", []))
    mentioned.update(starting)
    for item in mentioned - items.keys():
        items[item] = ItemInfo(item, item.split(":")[-1].replace("_", " ").capitalize())

    rule_set = RuleSet(
        name=name,
        prefix=prefix,
        items=dict(sorted(items.items())),
        recipes=recipes,
        tags=tags,
        fuels=fuels,
        description=str(meta.get("description", "")),
        starting_items=starting,
        metadata={k: v for k, v in meta.items() if k not in {"name", "prefix", "description"}},
    )
    return rule_set, report


# --- lookup by name, with an on-disk cache ----------------------------------------------------------


def rule_set_dirs() -> dict[str, Path]:
    """Shipped rule sets, then the user's (imported) ones, then folders named in TRADECRAFT_RULE_SETS
    (os.pathsep-separated); a later folder of the same name wins."""
    found: dict[str, Path] = {}
    roots = [RULE_SETS_DIR, user_rule_sets_dir()]
    roots += [Path(p) for p in os.environ.get("TRADECRAFT_RULE_SETS", "").split(os.pathsep) if p]
    for root in roots:
        if (root / "recipes").is_dir():  # the variable may name a rule set folder itself
            found[root.name] = root
            continue
        if root.is_dir():
            for child in sorted(root.iterdir()):
                if child.is_dir() and (child / "recipes").is_dir():
                    found[child.name] = child
    return found


def user_rule_sets_dir() -> Path:
    """Where `tradecraft rules import` writes by default."""
    base = os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share"))
    return Path(base) / "tradecraft" / "rule_sets"


def _fingerprint(folder: Path) -> str:
    """The cache key of a rule set folder: every JSON file's relative path, size and mtime. Walked with
    os.scandir, not Path.rglob: every command that loads a rule set pays this (~1,200 files for minecraft),
    and pathlib's objects made it 4x slower (~45 ms of a 0.3 s cold start)."""
    files: list[tuple[str, int, int]] = []
    folders = [(str(folder), "")]
    while folders:
        path, relative = folders.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                name = relative + entry.name
                if entry.is_dir():
                    folders.append((entry.path, name + "/"))
                elif entry.name.endswith(".json"):
                    stat = entry.stat()
                    files.append((name, stat.st_size, stat.st_mtime_ns))
    digest = hashlib.sha256(f"{CACHE_FORMAT}".encode())
    for name, size, mtime_ns in sorted(files):
        digest.update(f"{name}:{size}:{mtime_ns}".encode())
    return digest.hexdigest()[:20]


def cache_dir() -> Path:
    base = os.environ.get("TRADECRAFT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tradecraft"
    )
    return Path(base) / "rule_sets"


def load_rule_set(name_or_path: str | Path, strict: bool = False, use_cache: bool = True) -> RuleSet:
    """A rule set by name (``minecraft``, ``alchemy``) or by folder path.

    Parsed rule sets are pickled under :func:`cache_dir` keyed by the files' sizes and mtimes, so a
    second process loads in milliseconds; within a process the same object is returned every time.
    """
    folder = find_rule_set(name_or_path)
    if not use_cache:
        rule_set, _ = load_rule_set_from(folder, strict=strict)
        return rule_set
    return _load_cached(str(folder), strict)


def load_report(name_or_path: str | Path) -> LoadReport:
    return load_rule_set_from(find_rule_set(name_or_path))[1]


def find_rule_set(name_or_path: str | Path) -> Path:
    """The folder of a rule set by name (see :func:`rule_set_dirs`) or by folder path."""
    path = Path(name_or_path)
    if path.is_dir():
        return path.resolve()
    dirs = rule_set_dirs()
    if str(name_or_path) in dirs:
        return dirs[str(name_or_path)]
    known = ", ".join(sorted(dirs)) or "none"
    raise RuleSetError(str(name_or_path), f"unknown rule set (installed: {known})")


@lru_cache(maxsize=16)
def _load_cached(folder_str: str, strict: bool) -> RuleSet:
    folder = Path(folder_str)
    pickle_path = cache_dir() / f"{folder.name}-{_fingerprint(folder)}.pickle"
    if pickle_path.exists():
        try:
            with pickle_path.open("rb") as fh:
                cached = pickle.load(fh)
            if isinstance(cached, RuleSet):
                return cached
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            pass  # a stale or foreign cache file is simply rebuilt
    rule_set, report = load_rule_set_from(folder, strict=strict)
    if not report.problems:
        try:
            pickle_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = pickle_path.with_suffix(f".{os.getpid()}.tmp")
            with tmp.open("wb") as fh:
                pickle.dump(rule_set, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, pickle_path)
        except OSError:
            pass  # a read-only home still loads, just without the cache
    return rule_set
