"""The task instance of a stored game (the live table and the exports both load games from the store)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from craft_rules.tasks import TC_GAMES_DIR, TaskInstance, get_instance, instance_from_record


def game_instance(meta: Mapping[str, Any]) -> TaskInstance:
    """A stored game's task instance: the whole instance in its record (``instance``, as games dealt
    afresh keep it) or the shipped/operator file its ``instance_id`` (and ``instance_root``) names."""
    instance_id = str(meta.get("instance_id") or "")
    inline = meta.get("instance")
    if inline is not None:
        ruleset = str(meta.get("ruleset") or (meta.get("settings") or {}).get("ruleset") or "")
        mode = str(meta.get("mode") or "_v_".join(["1p"] * len(inline.get("hands") or [])))
        return instance_from_record(inline, instance_id, ruleset, mode)
    root = meta.get("instance_root")
    return get_instance(instance_id, Path(root) if root else TC_GAMES_DIR)
