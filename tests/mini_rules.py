"""The mini rule set: a small hand-written world with tags, fuels, remainders and every recipe kind, written
to a folder in the data-pack layout (the ``mini`` fixture of conftest.py loads it; tests/test_crafting.py
works its examples on it)."""

from __future__ import annotations

import json
from pathlib import Path

MINI_RECIPES: dict[str, dict] = {
    "planks": {
        "type": "crafting_shapeless",
        "ingredients": [{"tag": "logs"}],
        "result": {"item": "planks", "count": 4},
    },
    "stick": {
        "type": "crafting_shaped",
        "pattern": ["#", "#"],
        "key": {"#": {"item": "planks"}},
        "result": {"item": "stick", "count": 4},
    },
    "torch": {
        "type": "crafting_shaped",
        "pattern": ["X", "#"],
        "key": {"X": [{"item": "coal"}, {"item": "charcoal"}], "#": {"item": "stick"}},
        "result": {"item": "torch", "count": 4},
    },
    "charcoal": {"type": "smelting", "ingredient": {"tag": "logs"}, "result": "charcoal", "cookingtime": 200},
    "iron_ingot": {"type": "smelting", "ingredient": {"item": "raw_iron"}, "result": "iron_ingot"},
    "campfire_potato": {
        "type": "campfire_cooking",
        "ingredient": {"item": "potato"},
        "result": "baked_potato",
    },
    "shears": {
        "type": "crafting_shaped",
        "pattern": [" #", "# "],
        "key": {"#": {"item": "iron_ingot"}},
        "result": {"item": "shears"},
    },
    "bucket": {
        "type": "crafting_shaped",
        "pattern": ["# #", " # "],
        "key": {"#": {"item": "iron_ingot"}},
        "result": {"item": "bucket"},
    },
    "iron_block": {
        "type": "crafting_shapeless",
        "ingredients": [{"item": "iron_ingot"}] * 9,
        "result": {"item": "iron_block"},
    },
    "iron_ingot_from_iron_block": {
        "type": "crafting_shapeless",
        "ingredients": [{"item": "iron_block"}],
        "result": {"item": "iron_ingot", "count": 9},
    },
    "stone_from_cobblestone": {"type": "smelting", "ingredient": {"item": "cobblestone"}, "result": "stone"},
    "cobblestone_wall": {
        "type": "stonecutting",
        "ingredient": {"item": "cobblestone"},
        "result": "cobblestone_wall",
        "count": 1,
    },
}
MINI_TAGS = {"logs": ["log_a", "log_b"]}
MINI_FUELS = {
    "smelt_ticks": 200,
    "fuels": {
        "coal": 1600,
        "charcoal": 1600,
        "#logs": 300,
        "planks": 300,
        "stick": 100,
        "lava_bucket": 20000,
    },
    "remainders": {"lava_bucket": "bucket"},
}


def write_rule_set(
    folder: Path,
    recipes: dict[str, dict],
    tags: dict[str, list[str]] | None = None,
    fuels: dict | None = None,
    name: str = "mini",
) -> Path:
    """A rule set folder in the data-pack layout, prefix "" (items written bare)."""
    (folder / "recipes").mkdir(parents=True)
    (folder / "tags" / "items").mkdir(parents=True)
    (folder / "ruleset.json").write_text(json.dumps({"name": name, "prefix": ""}))
    for rid, data in recipes.items():
        (folder / "recipes" / f"{rid}.json").write_text(json.dumps(data))
    for tag, values in (tags or {}).items():
        (folder / "tags" / "items" / f"{tag}.json").write_text(json.dumps({"values": values}))
    if fuels is not None:
        (folder / "fuels.json").write_text(json.dumps(fuels))
    return folder
