"""The data-pack loader on small rule set folders written here (tmp_path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from craft_rules.cli import rules_group
from craft_rules.loader import RuleSetError, load_rule_set_from
from craft_rules.model import RecipeType


def write(folder: Path, rel: str, data: Any) -> Path:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRADECRAFT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    """A tiny well-formed rule set with prefix ``tc:``, nested tags, every recipe kind and fuels."""
    folder = tmp_path / "tiny"
    write(folder, "ruleset.json", {"name": "tiny", "prefix": "tc:", "starting_items": ["tc:log"]})
    write(folder, "items.json", {"tc:log": "Log", "tc:planks": {"name": "Planks", "category": "wood"}})
    write(folder, "tags/items/logs.json", {"values": ["tc:log", "#tc:stems"]})
    write(folder, "tags/items/stems.json", {"values": ["tc:stem", {"id": "tc:hyphae", "required": False}]})
    write(folder, "tags/items/burnable.json", {"values": ["#tc:logs", "tc:planks"]})
    write(
        folder,
        "recipes/planks.json",
        {
            "type": "tc:crafting_shapeless",
            "ingredients": [{"tag": "tc:logs"}],
            "result": {"item": "tc:planks", "count": 4},
        },
    )
    write(
        folder,
        "recipes/box.json",
        {
            "type": "minecraft:crafting_shaped",
            "pattern": ["PP", "PS"],
            "key": {"P": {"item": "tc:planks"}, "S": [{"item": "tc:stick"}, {"item": "other:twig"}]},
            "result": {"item": "tc:box"},
        },
    )
    write(
        folder,
        "recipes/glass.json",
        {"type": "smelting", "ingredient": {"item": "tc:sand"}, "result": "tc:glass", "cookingtime": 200},
    )
    write(
        folder,
        "recipes/cut.json",
        {"type": "stonecutting", "ingredient": "tc:stone", "result": "tc:slab", "count": 2},
    )
    write(
        folder,
        "recipes/upgrade.json",
        {
            "type": "smithing_transform",
            "template": {"item": "tc:template"},
            "base": {"item": "tc:tool"},
            "addition": {"item": "tc:ingot"},
            "result": {"item": "tc:better_tool"},
        },
    )
    write(
        folder,
        "fuels.json",
        {
            "smelt_ticks": 200,
            "fuels": {"#tc:burnable": 300, "tc:planks": 150},
            "remainders": {"tc:lava": "tc:bucket"},
        },
    )
    return folder


def test_loads_every_recipe_kind_with_prefix_stripped(pack: Path) -> None:
    rules, report = load_rule_set_from(pack, strict=True)
    assert not report.problems and not report.skipped_by_type
    assert rules.name == "tiny" and rules.prefix == "tc:"
    assert {r.id: r.type for r in rules.recipes.values()} == {
        "planks": RecipeType.CRAFTING_SHAPELESS,
        "box": RecipeType.CRAFTING_SHAPED,
        "glass": RecipeType.SMELTING,
        "cut": RecipeType.STONECUTTING,
        "upgrade": RecipeType.SMITHING_TRANSFORM,
    }
    box = rules.recipes["box"]
    assert box.pattern == ("PP", "PS")
    planks_ing = box.ingredients[box.key["P"]]
    assert planks_ing.options == ("planks",) and planks_ing.count == 3
    # a foreign namespace keeps its prefix, so it never merges with an item of this rule set
    assert box.ingredients[box.key["S"]].options == ("other:twig", "stick")
    assert rules.recipes["glass"].cooking_time == 200 and rules.recipes["glass"].result == "glass"
    assert (rules.recipes["cut"].result, rules.recipes["cut"].count) == ("slab", 2)
    assert rules.recipes["planks"].count == 4
    assert rules.starting_items == ("log",)
    assert rules.canonical("tc:box") == "box" and rules.qualified("box") == "tc:box"


def test_nested_tags_resolve(pack: Path) -> None:
    rules, _ = load_rule_set_from(pack, strict=True)
    assert rules.tags["stems"] == {"stem", "hyphae"}
    assert rules.tags["logs"] == {"log", "stem", "hyphae"}
    assert rules.tags["burnable"] == {"log", "stem", "hyphae", "planks"}
    planks = rules.recipes["planks"].ingredients[0]
    assert planks.source == ("#logs",) and planks.options == ("hyphae", "log", "stem")
    assert rules.resolve("#tc:logs") == rules.tags["logs"]


def test_fuels_tags_items_and_remainders(pack: Path) -> None:
    rules, _ = load_rule_set_from(pack, strict=True)
    # an item named on its own overrides what its tag gives it
    assert rules.fuels.burn_ticks == {"log": 300, "stem": 300, "hyphae": 300, "planks": 150}
    assert rules.fuels.remainders == {"lava": "bucket"}


def test_item_names_given_or_derived(pack: Path) -> None:
    rules, _ = load_rule_set_from(pack, strict=True)
    assert rules.display_name("log") == "Log"
    assert rules.items["planks"].category == "wood"
    assert rules.display_name("better_tool") == "Better tool"  # mentioned by a recipe, not in items.json


def test_bare_data_pack_defaults_to_minecraft_prefix_and_override_keeps_ids(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    stick = {
        "type": "minecraft:crafting_shaped",
        "pattern": ["#", "#"],
        "key": {"#": {"item": "minecraft:oak_planks"}},
        "result": {"item": "minecraft:stick", "count": 4},
    }
    write(bare, "recipes/stick.json", stick)
    rules, _ = load_rule_set_from(bare)  # no ruleset.json: a vanilla data pack
    assert rules.prefix == "minecraft:" and rules.name == "bare"
    assert rules.recipes["stick"].result == "stick"
    assert rules.recipes["stick"].ingredients[0].options == ("oak_planks",)
    rules, _ = load_rule_set_from(bare, prefix="")
    assert rules.recipes["stick"].result == "minecraft:stick"
    assert rules.recipes["stick"].ingredients[0].options == ("minecraft:oak_planks",)


def test_special_recipes_are_skipped_and_counted(pack: Path) -> None:
    write(pack, "recipes/armor_dye.json", {"type": "minecraft:crafting_special_armordye"})
    write(pack, "recipes/map_cloning.json", {"type": "minecraft:crafting_special_mapcloning"})
    write(pack, "recipes/trim.json", {"type": "minecraft:smithing_trim", "template": {"item": "tc:t"}})
    write(pack, "recipes/pot.json", {"type": "minecraft:crafting_decorated_pot"})
    rules, report = load_rule_set_from(pack, strict=True)
    assert report.skipped_by_type == {
        "crafting_special_armordye": 1,
        "crafting_special_mapcloning": 1,
        "smithing_trim": 1,
        "crafting_decorated_pot": 1,
    }
    assert not report.problems
    assert len(rules.recipes) == 5


MALFORMED = [
    ("recipes/broken.json", '{"type": "crafting_shaped", ', "invalid JSON"),
    ("recipes/no_type.json", {"result": "tc:x"}, "'type'"),
    (
        "recipes/bad_key.json",
        {
            "type": "crafting_shaped",
            "pattern": ["AB"],
            "key": {"A": {"item": "tc:a"}},
            "result": {"item": "tc:x"},
        },
        "'B' is not in the key",
    ),
    (
        "recipes/no_result.json",
        {"type": "crafting_shapeless", "ingredients": [{"item": "tc:a"}]},
        "no result",
    ),
    (
        "recipes/bad_count.json",
        {
            "type": "crafting_shapeless",
            "ingredients": [{"item": "tc:a"}],
            "result": {"item": "tc:x", "count": 0},
        },
        "positive integer",
    ),
    (
        "recipes/unknown_tag.json",
        {"type": "smelting", "ingredient": {"tag": "tc:nothing"}, "result": "tc:x"},
        "unknown tag #nothing",
    ),
    ("tags/items/no_values.json", {"items": ["tc:a"]}, "'values' list"),
]


@pytest.mark.parametrize(("rel", "content", "reason"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_file_is_reported_with_path_and_reason(
    pack: Path, rel: str, content: Any, reason: str
) -> None:
    path = write(pack, rel, content)
    rules, report = load_rule_set_from(pack)
    assert [(p.path, reason in p.reason) for p in report.problems] == [(str(path), True)]
    assert len(rules.recipes) == 5  # everything else still loads
    with pytest.raises(RuleSetError) as err:
        load_rule_set_from(pack, strict=True)
    assert err.value.path == str(path) and reason in err.value.reason


def test_cyclic_tags_are_reported_not_looped(pack: Path) -> None:
    write(pack, "tags/items/a.json", {"values": ["#tc:b"]})
    write(pack, "tags/items/b.json", {"values": ["#tc:a", "tc:x"]})
    _, report = load_rule_set_from(pack)
    assert any("refers to itself" in p.reason for p in report.problems)
    with pytest.raises(RuleSetError, match="refers to itself"):
        load_rule_set_from(pack, strict=True)


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuleSetError, match="no such rule set folder"):
        load_rule_set_from(tmp_path / "absent")


def test_rules_stats_reports_problems_and_strict_makes_them_fatal(pack: Path) -> None:
    path = write(pack, "recipes/broken.json", "{not json")
    runner = CliRunner()
    lenient = runner.invoke(rules_group, ["stats", str(pack), "--json"])
    assert lenient.exit_code == 0, lenient.output
    data = json.loads(lenient.output)
    assert data["problems"] == [{"path": str(path), "reason": data["problems"][0]["reason"]}]
    assert data["problems"][0]["reason"].startswith("invalid JSON")
    strict = runner.invoke(rules_group, ["stats", str(pack), "--strict"])
    assert strict.exit_code != 0
    assert isinstance(strict.exception, RuleSetError) or "invalid JSON" in strict.output


def test_the_on_disk_cache_follows_every_file_of_the_folder(pack: Path, tmp_path: Path) -> None:
    """load_rule_set pickles a parsed folder under a key of its JSON files' paths, sizes and mtimes: a
    second process loads the pickle, and a changed, added or removed file in any subfolder (a nested tag,
    a recipe) gives a new key, so a stale pickle is never served."""
    from craft_rules import loader

    def fresh_load() -> Any:
        loader._load_cached.cache_clear()  # what a new process sees: only the on-disk cache
        return loader.load_rule_set(pack)

    first = fresh_load()
    pickles = set((tmp_path / "cache" / "rule_sets").glob("tiny-*.pickle"))
    assert len(pickles) == 1
    assert fresh_load().content_hash == first.content_hash  # served from the pickle
    assert set((tmp_path / "cache" / "rule_sets").glob("tiny-*.pickle")) == pickles

    write(pack, "tags/items/stems.json", {"values": ["tc:stem", "tc:log"]})  # a nested tag changed
    changed = fresh_load()
    assert changed.content_hash != first.content_hash
    added_recipe = write(pack, "recipes/more/rod.json", {
        "type": "crafting_shapeless", "ingredients": [{"item": "tc:planks"}], "result": {"item": "tc:rod"},
    })  # fmt: skip
    added = fresh_load()
    assert added.content_hash != changed.content_hash and "rod" in added.items
    added_recipe.unlink()
    assert fresh_load().content_hash == changed.content_hash
    assert len(set((tmp_path / "cache" / "rule_sets").glob("tiny-*.pickle"))) == 3
    (pack / "notes.txt").write_text("not part of a rule set", encoding="utf-8")  # only JSON counts
    assert loader._fingerprint(pack) == loader._fingerprint(pack)
    before = loader._fingerprint(pack)
    (pack / "notes.txt").write_text("still not", encoding="utf-8")
    assert loader._fingerprint(pack) == before
