"""Turn user-supplied game data into TradeCraft rule set folders (`tradecraft rules import ...`).

Two sources are understood:

- a **Little Alchemy 2 table**: ``{"<id>": {"n": name, "p": [[idA, idB], ...], ...}}``. Each pair becomes
  a shapeless two-ingredient recipe; entries flagged ``prime``/``base`` or made by no pair become the
  starting items.
- a **vanilla data pack** folder (``data/<namespace>/recipes``, ``data/<namespace>/tags/items``) or a
  Minecraft client ``.jar`` / data pack ``.zip`` holding the same paths. Recipe and tag files are copied
  byte for byte; names come from ``assets/minecraft/lang/en_us.json`` when present.

The third-party data itself is never shipped with TradeCraft: imports land in a per-user folder
(``$TRADECRAFT_RULE_SETS`` or ``~/.local/share/tradecraft/rule_sets``).

The writer here (:func:`write_rule_set_files`, :func:`combination_recipe`) is also what the project's own
generators use, so a generated rule set and an imported one have the same layout, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from craft_rules.loader import RULE_SETS_DIR, RuleSetError, load_rule_set_from, rule_set_dirs
from craft_rules.loader import user_rule_sets_dir as loader_user_rule_sets_dir

VANILLA_PREFIX = "minecraft:"
IMPORTED_LICENCE = (
    "user-supplied data under its owner's terms; imported locally, not distributed with TradeCraft"
)
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


# --- errors ------------------------------------------------------------------------------------------


class RuleSetImportError(RuleSetError):
    """An import that cannot go ahead. ``code`` is machine-readable; the message says what to do."""

    code = "import_failed"


class MalformedInputError(RuleSetImportError):
    """The input file (or a file inside it) is not what its format requires."""

    code = "malformed_input"


class UnsupportedInputError(RuleSetImportError):
    """The input is readable but holds nothing this importer understands."""

    code = "unsupported_input"


class InvalidNameError(RuleSetImportError):
    code = "invalid_name"


class DestinationExistsError(RuleSetImportError):
    code = "destination_exists"


# --- writing rule set folders --------------------------------------------------------------------------


def json_bytes(data: Any) -> bytes:
    """The one JSON style of generated files: sorted keys, two-space indent, final newline."""
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def combination_recipe_id(first: str, second: str, result: str) -> str:
    low, high = sorted((first, second))
    return f"{result}_from_{low}_and_{high}"


def combination_recipe(first: str, second: str, result: str) -> dict[str, Any]:
    """A two-element combination as a vanilla shapeless recipe (one result), for a rule set without prefix."""
    low, high = sorted((first, second))
    return {
        "type": "crafting_shapeless",
        "ingredients": [{"item": low}, {"item": high}],
        "result": {"item": result, "count": 1},
    }


def write_rule_set_files(folder: Path, files: Mapping[str, bytes]) -> dict[str, int]:
    """Make ``folder`` hold exactly ``files`` (relative posix path -> content) among its JSON files.

    Unchanged files are not rewritten (so their mtimes, and the loader's cache, stay valid); JSON files
    that are not in ``files`` are stale and removed, as are folders left empty. Returns counts of
    written, unchanged and removed files.
    """
    folder.mkdir(parents=True, exist_ok=True)
    counts = {"written": 0, "unchanged": 0, "removed": 0}
    for rel, content in sorted(files.items()):
        path = folder / PurePosixPath(rel)
        if path.is_file() and path.read_bytes() == content:
            counts["unchanged"] += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(content)
        os.replace(tmp, path)
        counts["written"] += 1
    wanted = {folder / PurePosixPath(rel) for rel in files}
    for path in sorted(folder.rglob("*.json")):
        if path not in wanted:
            path.unlink()
            counts["removed"] += 1
    for path in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        if not any(path.iterdir()):
            path.rmdir()
    return counts


def user_rule_sets_dir() -> Path:
    """Where imports go by default: the first folder in TRADECRAFT_RULE_SETS, else the XDG data dir."""
    for entry in os.environ.get("TRADECRAFT_RULE_SETS", "").split(os.pathsep):
        if entry:
            return Path(entry).expanduser()
    return loader_user_rule_sets_dir()


def _destination(name: str, dest_root: Path | str | None, force: bool) -> Path:
    if not _NAME_PATTERN.match(name):
        raise InvalidNameError(
            name,
            "a rule set name must be 1-64 letters, digits, '_', '.' or '-' starting with a letter or "
            "digit; choose another --name",
        )
    folder = (Path(dest_root).expanduser() if dest_root else user_rule_sets_dir()) / name
    if folder.exists():
        is_rule_set = (folder / "ruleset.json").is_file()
        if not force or not is_rule_set:
            advice = (
                "pass --force to replace it"
                if is_rule_set
                else "it is not a rule set folder, so it is left alone; choose another --name or --dest"
            )
            raise DestinationExistsError(folder, f"already exists; {advice}")
    return folder


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- the report ---------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What an import wrote and what it had to leave out or found odd."""

    name: str
    kind: str
    source: str
    dest: str
    items: int = 0
    recipes: int = 0
    tags: int = 0
    starting_items: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    loaded: dict[str, Any] = field(default_factory=dict)

    def skip(self, reason: str, amount: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + amount

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source,
            "dest": self.dest,
            "items": self.items,
            "recipes": self.recipes,
            "tags": self.tags,
            "starting_items": self.starting_items,
            "skipped": dict(sorted(self.skipped.items())),
            "notes": self.notes,
            "loaded": self.loaded,
        }

    def text(self) -> str:
        lines = [
            f"imported {self.kind} {self.source} as rule set {self.name!r}",
            f"  folder   {self.dest}",
            f"  items    {self.items}",
            f"  recipes  {self.recipes}",
        ]
        if self.tags:
            lines.append(f"  tags     {self.tags}")
        if self.starting_items:
            lines.append(f"  starting {', '.join(self.starting_items)}")
        for reason, amount in sorted(self.skipped.items()):
            lines.append(f"  skipped  {amount} {reason.replace('_', ' ')}")
        lines += [f"  note     {note}" for note in self.notes]
        for problem in self.loaded.get("problems", []):
            lines.append(f"  problem  {problem['path']}: {problem['reason']}")
        return "\n".join(lines)


def _finish(report: ImportReport, folder: Path, strict: bool) -> ImportReport:
    """Load what was written, so an import that does not load is reported, never silently left behind."""
    rule_set, load = load_rule_set_from(folder, strict=strict)
    report.items = len(rule_set.items)
    report.recipes = len(rule_set.recipes)
    report.tags = len(rule_set.tags)
    report.loaded = {**load.as_dict(), "recipes_by_type": rule_set.summary()["recipes_by_type"]}
    found = rule_set_dirs().get(report.name)
    if found is None or found.resolve() != folder.resolve():
        report.notes.append(
            f"to use it by name, add {folder.parent} to TRADECRAFT_RULE_SETS (or load it by path: {folder})"
        )
    elif folder.parent.resolve() != RULE_SETS_DIR.resolve() and (RULE_SETS_DIR / report.name).is_dir():
        report.notes.append("it shadows the installed rule set of the same name when loaded by name")
    return report


# --- Little Alchemy 2 ---------------------------------------------------------------------------------


def element_slug(name: str) -> str:
    """An element name as an item id: ``"Primordial soup"`` -> ``primordial_soup``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _numeric_first(key: str) -> tuple[int, int | str]:
    return (0, int(key)) if key.isdigit() else (1, key)


def _examples(names: Iterable[str], limit: int = 8) -> str:
    listed = sorted(names)
    more = f" and {len(listed) - limit} more" if len(listed) > limit else ""
    return ", ".join(listed[:limit]) + more


def read_little_alchemy(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            table = json.load(fh)
    except json.JSONDecodeError as exc:
        raise MalformedInputError(path, f"invalid JSON: {exc.msg} at line {exc.lineno}") from exc
    except UnicodeDecodeError as exc:
        raise MalformedInputError(path, "not a UTF-8 text file; expected a JSON element table") from exc
    except OSError as exc:
        raise MalformedInputError(path, f"cannot read: {exc.strerror}") from exc
    if not isinstance(table, dict) or not table:
        raise MalformedInputError(
            path, 'expected a JSON object {"<id>": {"n": name, "p": [[idA, idB], ...]}, ...}'
        )
    if not any(isinstance(v, dict) and isinstance(v.get("n"), str) for v in table.values()):
        raise MalformedInputError(path, 'no entry has a name ("n"); is this a Little Alchemy 2 table?')
    return table


def import_little_alchemy(
    source: Path | str,
    name: str,
    dest_root: Path | str | None = None,
    force: bool = False,
) -> ImportReport:
    """Write a rule set folder from a Little Alchemy 2 element table (see the module docstring)."""
    source = Path(source)
    folder = _destination(name, dest_root, force)
    table = read_little_alchemy(source)
    report = ImportReport(name=name, kind="little-alchemy", source=str(source), dest=str(folder))

    # ids -> item ids; an element name used twice keeps its source id as a suffix
    slugs: dict[str, str] = {}
    names: dict[str, str] = {}
    taken: set[str] = set()
    for key in sorted(table, key=_numeric_first):
        entry = table[key]
        if not isinstance(entry, dict) or not isinstance(entry.get("n"), str) or not entry["n"].strip():
            report.skip("entries_without_a_name")
            continue
        slug = element_slug(entry["n"]) or f"element_{key}"
        if slug in taken:
            slug = f"{slug}_{element_slug(key) or len(taken)}"
            report.notes.append(f"name {entry['n']!r} is used twice; entry {key} became {slug!r}")
        taken.add(slug)
        slugs[key] = slug
        shown = entry["n"].strip()
        names[slug] = shown[:1].upper() + shown[1:]  # the table writes "water"; we show "Water"

    combos: dict[str, tuple[str, str, str]] = {}  # recipe id -> (first, second, result)
    made: set[str] = set()
    for key, slug in slugs.items():
        pairs = table[key].get("p") or []
        if not isinstance(pairs, list):
            report.skip("entries_with_a_malformed_pair_list")
            continue
        for pair in pairs:
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                report.skip("pairs_not_of_two_elements")
                continue
            first, second = (slugs.get(str(part)) for part in pair)
            if first is None or second is None:
                report.skip("pairs_naming_an_unknown_element")
                continue
            recipe_id = combination_recipe_id(first, second, slug)
            if recipe_id in combos:
                report.skip("duplicate_pairs")
                continue
            combos[recipe_id] = (first, second, slug)
            made.add(slug)

    # the prime elements first, then those the game grants along the way ("base")
    flagged = [slugs[k] for k in slugs if table[k].get("prime")]
    flagged += [slugs[k] for k in slugs if table[k].get("base") and not table[k].get("prime")]
    unmade = [slugs[k] for k in slugs if slugs[k] not in made and slugs[k] not in flagged]
    starting = flagged + unmade
    if unmade:
        report.notes.append(
            f"{len(unmade)} element(s) made by no pair became starting items: "
            + _examples(names[s] for s in unmade)
        )
    conditional = [slugs[k] for k in slugs if table[k].get("condition")]
    granted = [s for s in conditional if s in flagged]
    if granted:
        report.notes.append(
            f"{len(granted)} element(s) the game grants on a condition (progress, discoveries) are starting "
            "items here: " + _examples(names[s] for s in granted)
        )
    ignored = [s for s in conditional if s not in flagged]
    if ignored:
        report.notes.append(
            f"{len(ignored)} element(s) carry an unlock condition, which TradeCraft ignores: "
            + _examples(names[s] for s in ignored)
        )
    results_by_pair: dict[tuple[str, str], int] = {}
    for first, second, _ in combos.values():
        pair_key = (min(first, second), max(first, second))
        results_by_pair[pair_key] = results_by_pair.get(pair_key, 0) + 1
    several = sum(1 for n in results_by_pair.values() if n > 1)
    if several:
        report.notes.append(f"{several} pair(s) give several results: one recipe per result")
    unreachable = set(names) - _reachable(starting, combos.values())
    if unreachable:
        report.notes.append(
            f"{len(unreachable)} element(s) cannot be made from the starting items: "
            + _examples(names[s] for s in unreachable)
        )

    categories = _combination_categories(starting, combos.values())
    items = {slug: {"name": names[slug], "category": categories[slug]} for slug in sorted(names)}
    meta = {
        "name": name,
        "description": f"Imported from the Little Alchemy 2 table {source.name}",
        "prefix": "",
        "starting_items": starting,
        "source": {"kind": "little-alchemy-2", "file": source.name, "sha256": _sha256(source)},
        "licence": IMPORTED_LICENCE,
    }
    files = {"ruleset.json": json_bytes(meta), "items.json": json_bytes(items)}
    for recipe_id, (first, second, result) in combos.items():
        files[f"recipes/{recipe_id}.json"] = json_bytes(combination_recipe(first, second, result))
    write_rule_set_files(folder, files)
    report.starting_items = starting
    return _finish(report, folder, strict=True)


def _reachable(starting: Iterable[str], combos: Iterable[tuple[str, str, str]]) -> set[str]:
    """Every element a breadth-first search over the pairs reaches from ``starting``."""
    uses: dict[str, list[tuple[str, str, str]]] = {}
    for combo in combos:
        uses.setdefault(combo[0], []).append(combo)
        uses.setdefault(combo[1], []).append(combo)
    known = set(starting)
    queue = deque(known)
    while queue:
        element = queue.popleft()
        for first, second, result in uses.get(element, ()):
            if result not in known and first in known and second in known:
                known.add(result)
                queue.append(result)
    return known


def _combination_categories(
    starting: Iterable[str], combos: Iterable[tuple[str, str, str]]
) -> dict[str, str]:
    """A category per element for glyph colours: starting, intermediate (feeds a pair) or final."""
    combos = list(combos)
    feeds = {part for first, second, _ in combos for part in (first, second)}
    categories = {result: ("intermediate" if result in feeds else "final") for *_, result in combos}
    categories.update(dict.fromkeys(starting, "starting"))
    return categories


# --- data packs and client jars ----------------------------------------------------------------------

# data/<namespace>/<recipes|recipe|tags/items|tags/item>/<path>.json, possibly under one top folder
_PACK_ENTRY = re.compile(
    r"^(?P<root>(?:[^/]+/)?)data/(?P<ns>[^/]+)/(?P<kind>recipes|recipe|tags/items|tags/item)/(?P<rest>.+\.json)$"
)
# our own (flattened) layout: recipes/<path>.json and tags/items/<path>.json at the top
_FLAT_ENTRY = re.compile(r"^(?P<root>)(?P<kind>recipes|tags/items)/(?P<rest>.+\.json)$")


class _PackFiles:
    """Uniform read access to a data pack folder or a zip archive (jar)."""

    def __init__(self, path: Path):
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        if path.is_dir():
            self.names = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            try:
                self._zip = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError) as exc:
                raise MalformedInputError(
                    path, "not a data pack folder nor a readable .jar/.zip archive"
                ) from exc
            self.names = sorted(n for n in self._zip.namelist() if not n.endswith("/"))
        else:
            raise UnsupportedInputError(path, "no such file or folder; give a data pack folder or a .jar")

    def where(self, name: str) -> str:
        return f"{self.path}!/{name}" if self._zip else str(self.path / name)

    def read(self, name: str) -> bytes:
        try:
            if self._zip is not None:
                return self._zip.read(name)
            return (self.path / name).read_bytes()
        except (OSError, zipfile.BadZipFile, KeyError) as exc:
            raise MalformedInputError(self.where(name), f"cannot read: {exc}") from exc

    def read_json(self, name: str) -> tuple[bytes, Any]:
        raw = self.read(name)
        try:
            return raw, json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise MalformedInputError(self.where(name), "not UTF-8 text") from exc
        except json.JSONDecodeError as exc:
            raise MalformedInputError(
                self.where(name), f"invalid JSON: {exc.msg} at line {exc.lineno}"
            ) from exc

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> _PackFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class _PackEntry:
    name: str  # path inside the pack
    namespace: str
    is_recipe: bool
    rest: str  # path below recipes/ or tags/items/


def _pack_entries(files: _PackFiles) -> tuple[str, list[_PackEntry]]:
    """The pack's recipe and item-tag files, and the folder they sit under ("" or "<top>/")."""
    found: dict[str, list[_PackEntry]] = {}
    for name in files.names:
        match = _PACK_ENTRY.match(name)
        if match:
            kind = match["kind"]
            entry = _PackEntry(name, match["ns"], kind.startswith("recipe"), match["rest"])
            found.setdefault(match["root"], []).append(entry)
    if not found:
        for name in files.names:
            match = _FLAT_ENTRY.match(name)
            if match:
                entry = _PackEntry(name, "minecraft", match["kind"] == "recipes", match["rest"])
                found.setdefault("", []).append(entry)
    if not found:
        raise UnsupportedInputError(
            files.path,
            "holds no data/<namespace>/recipes/*.json (nor recipes/*.json); give a data pack folder, "
            "a data pack .zip or a Minecraft client .jar",
        )
    root = max(found, key=lambda r: (len(found[r]), r == ""))
    return root, found[root]


def _lang_names(files: _PackFiles, root: str) -> dict[str, str]:
    """English item and block names from assets/minecraft/lang/en_us.json, if the pack has it."""
    name = f"{root}assets/minecraft/lang/en_us.json"
    if name not in files.names:
        return {}
    _, lang = files.read_json(name)
    if not isinstance(lang, dict):
        raise MalformedInputError(files.where(name), "a language file must be a JSON object")
    names: dict[str, str] = {}
    # items win over blocks where both exist (e.g. "item.minecraft.x" names the held item)
    for kind in ("block", "item"):
        start = f"{kind}.minecraft."
        for key, value in lang.items():
            rest = key[len(start) :] if key.startswith(start) else ""
            if rest and "." not in rest and isinstance(value, str):
                names[rest] = value
    return names


def derived_name(item: str) -> str:
    """A readable name from an item id when the pack has none: ``oak_planks`` -> ``Oak Planks``."""
    return " ".join(word.capitalize() for word in item.split(":")[-1].split("_"))


def vanilla_fuels() -> dict[str, Any]:
    """fuels.json content: the vanilla furnace fuel table the minecraft rule set is built with."""
    # imported here: the minecraft build package itself uses this module's writer
    from craft_rules.build.minecraft_tables import fuels_json

    return fuels_json(VANILLA_PREFIX)


def import_datapack(
    source: Path | str,
    name: str,
    dest_root: Path | str | None = None,
    force: bool = False,
) -> ImportReport:
    """Write a rule set folder (prefix ``minecraft:``) from a data pack folder or a client jar/zip."""
    source = Path(source)
    folder = _destination(name, dest_root, force)
    report = ImportReport(name=name, kind="datapack", source=str(source), dest=str(folder))
    files: dict[str, bytes] = {}
    with _PackFiles(source) as pack:
        root, entries = _pack_entries(pack)
        for entry in entries:
            raw, _ = pack.read_json(entry.name)  # a file that is not JSON stops the import, named
            if entry.is_recipe:
                where = entry.rest if entry.namespace == "minecraft" else f"{entry.namespace}/{entry.rest}"
                files[f"recipes/{where}"] = raw
            elif entry.namespace == "minecraft":
                files[f"tags/items/{entry.rest}"] = raw
            else:
                # the loader names tags by their path under minecraft's namespace only
                report.skip(f"item_tags_in_namespace_{entry.namespace}")
        lang = _lang_names(pack, root)
        data_files = [n for n in pack.names if n.startswith(f"{root}data/") and n.endswith(".json")]
        if len(data_files) > len(entries):  # advancements, loot tables, block tags, ...
            report.skip("data_files_that_are_not_recipes_or_item_tags", len(data_files) - len(entries))

    meta = {
        "name": name,
        "description": f"Imported from the data pack {source.name}",
        "prefix": VANILLA_PREFIX,
        "starting_items": [],
        "source": {
            "kind": "datapack",
            "file": source.name,
            "sha256": _sha256(source) if source.is_file() else None,
        },
        "licence": IMPORTED_LICENCE,
    }
    files["ruleset.json"] = json_bytes(meta)
    files["fuels.json"] = json_bytes(vanilla_fuels())
    write_rule_set_files(folder, files)

    # name every item the rule set mentions: the pack's English names, else derived ones
    rule_set, _ = load_rule_set_from(folder)
    items = {
        f"{VANILLA_PREFIX}{item}" if ":" not in item else item: lang.get(item) or derived_name(item)
        for item in sorted(rule_set.items)
    }
    if not lang:
        report.notes.append(
            "the pack has no assets/minecraft/lang/en_us.json: item names are derived from ids"
        )
    files["items.json"] = json_bytes(items)
    write_rule_set_files(folder, files)
    return _finish(report, folder, strict=False)
