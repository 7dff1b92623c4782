"""`craft_rules.vanilla_check` and `tradecraft rules check-vanilla` on small packs written here."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from suite_support import VANILLA_REFERENCE

from craft_rules.cli import rules_group
from craft_rules.vanilla_check import VanillaCheckError, check_vanilla

M = "minecraft:"


def item(name: str) -> dict[str, str]:
    return {"item": M + name}


def shaped(pattern: list[str], key: dict[str, Any], result: str, count: int = 1) -> dict[str, Any]:
    return {
        "type": "minecraft:crafting_shaped",
        "pattern": pattern,
        "key": key,
        "result": {"item": M + result, "count": count},
    }


VANILLA_RECIPES: dict[str, dict[str, Any]] = {
    "chest": shaped(["###", "# #", "###"], {"#": {"tag": M + "planks"}}, "chest"),
    "torch": shaped(["X", "#"], {"X": [item("coal"), item("charcoal")], "#": item("stick")}, "torch", 4),
    "oak_stairs": shaped(["#  ", "## ", "###"], {"#": item("oak_planks")}, "oak_stairs", 4),
    "bread": shaped(["###"], {"#": item("wheat")}, "bread"),
    "glass": {
        "type": "minecraft:smelting",
        "ingredient": {"tag": M + "smelts_to_glass"},
        "result": M + "glass",
        "cookingtime": 200,
        "experience": 0.1,
    },
    "stone_slab_from_stone_stonecutting": {
        "type": "minecraft:stonecutting",
        "ingredient": item("stone"),
        "result": M + "stone_slab",
        "count": 2,
    },
    "armor_dye": {"type": "minecraft:crafting_special_armordye"},
}
VANILLA_TAGS = {
    "planks": [M + "oak_planks", M + "birch_planks"],
    "smelts_to_glass": [M + "sand", M + "red_sand"],
}

OUR_RECIPES: dict[str, dict[str, Any]] = {
    # the same items as vanilla's #planks, written as a list: reproduced, but a tag-usage mismatch
    "chest": shaped(["###", "# #", "###"], {"#": [item("birch_planks"), item("oak_planks")]}, "chest"),
    # a copy per variant is one recipe too many: extra
    "chest_from_birch": shaped(["###", "# #", "###"], {"#": item("birch_planks")}, "chest"),
    "torch": shaped(["X", "#"], {"X": {"tag": M + "coals"}, "#": item("stick")}, "torch", 4),
    # mirrored grid: the game treats it as the same recipe
    "oak_stairs": shaped(["  #", " ##", "###"], {"#": item("oak_planks")}, "oak_stairs", 4),
    "bread": shaped(["###"], {"#": item("wheat")}, "bread", 2),
    "glass": {
        "type": "minecraft:smelting",
        "ingredient": [item("red_sand"), item("sand")],
        "result": M + "glass",
    },
    "diamond_from_dirt": {
        "type": "minecraft:crafting_shapeless",
        "ingredients": [item("dirt")],
        "result": {"item": M + "diamond"},
    },
}
OUR_TAGS = {"coals": [M + "coal", M + "charcoal"]}


def write_pack(root: Path, recipes: dict[str, Any], tags: dict[str, list[str]]) -> Path:
    for recipe_id, data in recipes.items():
        path = root / "recipes" / f"{recipe_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    for tag, values in tags.items():
        path = root / "tags" / "items" / f"{tag}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"values": values}), encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRADECRAFT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def vanilla(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "vanilla", VANILLA_RECIPES, VANILLA_TAGS)


@pytest.fixture
def ours(tmp_path: Path) -> Path:
    folder = write_pack(tmp_path / "ours", OUR_RECIPES, OUR_TAGS)
    meta = {"name": "ours", "prefix": M}
    (folder / "ruleset.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_counts_per_type(ours: Path, vanilla: Path) -> None:
    result = check_vanilla(ours, vanilla)
    counts = {kind: c.as_dict() for kind, c in result.by_type.items()}
    assert counts["crafting_shaped"] == {
        "vanilla": 4,
        "reproduced": 3,
        "differing": 1,
        "missing": 0,
        "extra": 1,
        "exact_share": 0.75,
    }
    assert counts["crafting_shapeless"]["vanilla"] == 0 and counts["crafting_shapeless"]["extra"] == 1
    assert counts["smelting"]["reproduced"] == 1
    assert counts["stonecutting"]["missing"] == 1
    assert result.crafting.vanilla == 4 and result.crafting.extra == 2
    assert result.cooking.exact_share == 1.0
    assert result.vanilla_skipped == {"crafting_special_armordye": 1}
    assert {(v, o) for v, o in result.reproduced} == {
        ("chest", "chest"),
        ("torch", "torch"),
        ("oak_stairs", "oak_stairs"),
        ("glass", "glass"),
    }
    assert [e["rule_set"] for e in result.extra] == ["chest_from_birch", "diamond_from_dirt"]
    assert [e["vanilla"] for e in result.missing] == ["stone_slab_from_stone_stonecutting"]


def test_differing_recipe_says_why(ours: Path, vanilla: Path) -> None:
    (entry,) = check_vanilla(ours, vanilla).differing
    assert entry["vanilla"] == "bread" and entry["rule_set"] == "bread"
    assert entry["reasons"] == ["count 2 instead of 1"]


def test_grid_shape_matters_for_shaped_recipes(ours: Path, vanilla: Path) -> None:
    stairs = ours / "recipes" / "oak_stairs.json"
    data = json.loads(stairs.read_text(encoding="utf-8"))
    data["pattern"] = ["###", "## ", "#  "]  # upside down: same items, another grid
    stairs.write_text(json.dumps(data), encoding="utf-8")
    result = check_vanilla(ours, vanilla)
    reasons = {e["vanilla"]: e["reasons"] for e in result.differing}
    assert reasons["oak_stairs"][0].startswith("grid")


def test_tag_usage(ours: Path, vanilla: Path) -> None:
    usage = check_vanilla(ours, vanilla).tag_usage
    # vanilla tags: #planks (chest), #smelts_to_glass (glass); the rule set lists their items instead
    assert (usage.vanilla_tags, usage.same_tag, usage.items_instead) == (2, 0, 2)
    assert usage.rule_set_only == 1  # the torch's #coals where vanilla lists coal and charcoal
    assert {m["recipe"] for m in usage.mismatches} == {"chest", "glass", "torch"}


def test_a_jar_and_a_data_pack_layout_give_the_same_answer(ours: Path, vanilla: Path, tmp_path: Path) -> None:
    expected = check_vanilla(ours, vanilla).as_dict()
    jar = tmp_path / "client.jar"
    pack = tmp_path / "pack"
    with zipfile.ZipFile(jar, "w") as zf:
        for path in sorted(vanilla.rglob("*.json")):
            inside = f"data/minecraft/{path.relative_to(vanilla).as_posix()}"
            zf.write(path, inside)
            (pack / inside).parent.mkdir(parents=True, exist_ok=True)
            (pack / inside).write_bytes(path.read_bytes())
        zf.writestr("assets/minecraft/lang/en_us.json", "{}")
    for source in (jar, pack):
        got = check_vanilla(ours, source).as_dict()
        assert {k: v for k, v in got.items() if k != "vanilla_path"} == {
            k: v for k, v in expected.items() if k != "vanilla_path"
        }


def test_unreadable_vanilla_is_a_typed_error(ours: Path, tmp_path: Path) -> None:
    with pytest.raises(VanillaCheckError) as err:
        check_vanilla(ours, tmp_path / "nowhere")
    assert err.value.code == "vanilla_unreadable"
    empty = tmp_path / "empty"
    (empty / "recipes").mkdir(parents=True)
    with pytest.raises(VanillaCheckError):
        check_vanilla(ours, empty)


def test_cli_table_and_json(ours: Path, vanilla: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    text = runner.invoke(rules_group, ["check-vanilla", str(ours), str(vanilla), "--details"])
    assert text.exit_code == 0, text.output
    assert "crafting (shaped+shapeless)" in text.output
    assert "extra     crafting_shaped chest_from_birch" in text.output
    as_json = runner.invoke(rules_group, ["check-vanilla", str(ours), str(vanilla), "--json"])
    data = json.loads(as_json.output)
    assert data["crafting"]["reproduced"] == 3 and data["total"]["extra"] == 2
    assert data["by_type"]["stonecutting"]["missing"] == 1
    failed = runner.invoke(rules_group, ["check-vanilla", str(ours), str(tmp_path / "nowhere"), "--json"])
    assert failed.exit_code == 1
    assert json.loads(failed.output)["error"]["code"] == "vanilla_unreadable"
    unknown = runner.invoke(rules_group, ["check-vanilla", "no_such_rule_set", str(vanilla)])
    assert unknown.exit_code == 1 and "unknown rule set" in unknown.output


def test_reference_matches_itself() -> None:
    """The comparison is consistent on real vanilla data: every recipe reproduces itself, nothing extra."""
    reference = VANILLA_REFERENCE
    if not reference.is_dir():
        pytest.skip(f"vanilla reference data not found at {reference} (set TRADECRAFT_SHARED_DIR)")
    result = check_vanilla(reference, reference)
    assert result.total.vanilla > 1100
    assert result.total.reproduced == result.total.vanilla
    assert result.total.extra == 0
    assert result.tag_usage.same_tag == result.tag_usage.vanilla_tags
