"""Task instances: each player's initial hand and private target, in the paper's file format.

    craft_rules/TC_GAMES/<ruleset>/<mode>/<file>.json  ->  [{"hands": [...], "targets": [...]}, ...]

An instance's stable id is ``<ruleset>/<mode>/<file stem>#<index>`` (index within the file's list).
Items may carry the rule set's prefix in the file (``minecraft:stick``); in memory they are canonical.
Optional per-instance keys: ``"max_turn"`` (the original game's per-instance turn limit; a game of
the instance ends after that many turns whatever its settings say), and the project's own (ignored by
other tools) ``"id"`` (a readable name), ``"crafting_runs"`` (``rational`` | ``whole``: the
crafting-runs rule the instance was made and validated for; absent = ``rational``) and
``"difficulty"`` (recorded by the generator, measured under that rule).

An **instance set** is one file; its name is the file's stem (``paper`` for
``TC_GAMES/minecraft/1p_v_1p/paper.json``), and :func:`instance_set_ids` lists its ids in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from craft_rules.crafting import CRAFTING_RUNS, CraftingRuns
from craft_rules.loader import RuleSetError

TC_GAMES_DIR = Path(__file__).resolve().parent / "TC_GAMES"


@dataclass(frozen=True)
class TaskInstance:
    id: str
    ruleset: str
    mode: str
    hands: tuple[dict[str, int], ...]
    targets: tuple[dict[str, int], ...]
    difficulty: dict[str, Any] = field(default_factory=dict, compare=False)
    max_turn: int | None = None
    crafting_runs: CraftingRuns | None = None

    @property
    def players(self) -> int:
        return len(self.hands)

    def turn_limit(self, default: int) -> int:
        """The turns a game of this instance lasts at most: its own ``max_turn``, else ``default``."""
        return self.max_turn if self.max_turn is not None else default

    def to_json(self, prefix: str = "") -> dict[str, Any]:
        def q(d: dict[str, int]) -> dict[str, int]:
            return {f"{prefix}{k}": v for k, v in sorted(d.items())}

        record: dict[str, Any] = {
            "hands": [q(h) for h in self.hands],
            "targets": [q(t) for t in self.targets],
        }
        if self.max_turn is not None:
            record["max_turn"] = self.max_turn
        if self.crafting_runs is not None:
            record["crafting_runs"] = self.crafting_runs
        if self.difficulty:
            record["difficulty"] = self.difficulty
        return record


def mode_for_players(players: int) -> str:
    """The conventional mode name: 2 -> 1p_v_1p, 3 -> 1p_v_1p_v_1p."""
    return "_v_".join(["1p"] * players)


def _strip(item: str, prefix: str) -> str:
    return item[len(prefix) :] if prefix and item.startswith(prefix) else item


def _counts(raw: Any, where: str, prefix: str) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise RuleSetError(where, "hands and targets must be objects of item -> count")
    out: dict[str, int] = {}
    for item, count in raw.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise RuleSetError(where, f"count of {item} must be a non-negative integer")
        if count:
            out[_strip(str(item), prefix)] = count
    return out


def parse_instance_file(path: Path, ruleset: str, mode: str, prefix: str = "") -> list[TaskInstance]:
    """Read one instance file; a malformed file raises :class:`RuleSetError` naming it."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RuleSetError(path, f"cannot read task instances: {exc}") from exc
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        raise RuleSetError(path, "a task instance file holds a list of {hands, targets}")
    return [
        instance_from_record(
            record, f"{ruleset}/{mode}/{path.stem}#{index}", ruleset, mode, prefix, f"{path}#{index}"
        )
        for index, record in enumerate(raw)
    ]


def instance_from_record(
    record: Any, instance_id: str, ruleset: str, mode: str, prefix: str = "", where: str | None = None
) -> TaskInstance:
    """One instance from its JSON record (:meth:`TaskInstance.to_json`'s inverse), as instance files and
    stored games (a server's freshly dealt instances) hold it; :class:`RuleSetError` when malformed."""
    where = where or instance_id
    if not isinstance(record, dict) or "hands" not in record or "targets" not in record:
        raise RuleSetError(where, "instance needs 'hands' and 'targets'")
    hands = record["hands"]
    targets = record["targets"]
    if not isinstance(hands, list) or not isinstance(targets, list) or len(hands) != len(targets):
        raise RuleSetError(where, "'hands' and 'targets' must be lists of the same length")
    if len(hands) < 2:
        raise RuleSetError(where, "an instance needs at least two players")
    max_turn = record.get("max_turn")
    if max_turn is not None and (
        not isinstance(max_turn, int) or isinstance(max_turn, bool) or not 1 <= max_turn <= 10_000
    ):
        raise RuleSetError(where, "max_turn must be a whole number of turns from 1 to 10000")
    runs = record.get("crafting_runs")
    if runs is not None and runs not in CRAFTING_RUNS:
        raise RuleSetError(where, f"crafting_runs must be one of {', '.join(CRAFTING_RUNS)}, got {runs!r}")
    return TaskInstance(
        id=instance_id,
        ruleset=ruleset,
        mode=mode,
        hands=tuple(_counts(h, where, prefix) for h in hands),
        targets=tuple(_counts(t, where, prefix) for t in targets),
        difficulty=dict(record.get("difficulty") or {}),
        max_turn=max_turn,
        crafting_runs=runs,
    )


def iter_instances(
    ruleset: str | None = None,
    mode: str | None = None,
    root: Path = TC_GAMES_DIR,
    prefixes: dict[str, str] | None = None,
) -> Iterator[TaskInstance]:
    """Every shipped instance, optionally of one rule set and mode, in a stable order.

    ``prefixes`` maps rule set name -> item prefix to strip (default: ``<ruleset>:`` is stripped
    when present, so both prefixed and bare files load).
    """
    if not root.is_dir():
        return
    for rs_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if ruleset and rs_dir.name != ruleset:
            continue
        prefix = (prefixes or {}).get(rs_dir.name, f"{rs_dir.name}:")
        for mode_dir in sorted(p for p in rs_dir.iterdir() if p.is_dir()):
            if mode and mode_dir.name != mode:
                continue
            for path in sorted(mode_dir.glob("*.json")):
                yield from parse_instance_file(path, rs_dir.name, mode_dir.name, prefix)


def get_instance(instance_id: str, root: Path = TC_GAMES_DIR) -> TaskInstance:
    """Look up ``<ruleset>/<mode>/<file>#<index>``; raises KeyError with a hint when absent."""
    ruleset, mode, _ = [*instance_id.split("/", 2), "", ""][:3]
    for inst in iter_instances(ruleset or None, mode or None, root):
        if inst.id == instance_id:
            return inst
    raise KeyError(f"no task instance {instance_id!r}; `tradecraft tasks list` shows the ids")


def load_instance(instance_id: str, root: str | Path | None = None) -> TaskInstance:
    """The instance ``instance_id`` names in the files under ``root`` (a TC_GAMES folder; None: the
    shipped one). Cached: a live server, its lobby and an export load the same few instances again and
    again. Raises KeyError with a hint when no file holds the id."""
    return _instance_from_files(instance_id, str(root) if root else None)


@lru_cache(maxsize=512)
def _instance_from_files(instance_id: str, root: str | None) -> TaskInstance:
    return get_instance(instance_id, Path(root) if root else TC_GAMES_DIR)


def referenced_instance(reference: Mapping[str, Any]) -> TaskInstance:
    """The instance a record refers to, as a stored game's record does: ``instance_id`` and, for a file
    outside the shipped folder, ``instance_root`` (see :func:`load_instance`); or, for an instance dealt
    afresh (it has no file), the whole JSON record as ``instance``, named by ``instance_id``,
    ``ruleset`` and ``mode`` (default: the players' mode). Other keys are ignored.

    Raises KeyError when no file holds the id, :class:`RuleSetError` when the record is malformed."""
    instance_id = str(reference.get("instance_id") or "")
    record = reference.get("instance")
    if record is None:
        return load_instance(instance_id, reference.get("instance_root"))
    players = len(record.get("hands") or []) if isinstance(record, Mapping) else 0
    mode = str(reference.get("mode") or mode_for_players(players))
    return instance_from_record(record, instance_id, str(reference.get("ruleset") or ""), mode)


def instance_set_ids(
    name: str, ruleset: str = "minecraft", mode: str = "1p_v_1p", root: Path = TC_GAMES_DIR
) -> list[str]:
    """The ids of instance set ``name`` (the file ``<root>/<ruleset>/<mode>/<name>.json``), in file order.

    Raises KeyError naming the sets that exist when there is no such set."""
    folder = root / ruleset / mode
    path = folder / f"{name}.json"
    if not name or "/" in name or "\\" in name or name.startswith(".") or not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.json"))) if folder.is_dir() else "none"
        raise KeyError(f"no instance set {name!r} in {ruleset}/{mode}; the sets there: {known}")
    return [inst.id for inst in parse_instance_file(path, ruleset, mode, prefix=f"{ruleset}:")]
