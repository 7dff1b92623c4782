"""`tradecraft rules import`: Little Alchemy 2 tables, data pack folders and client jars."""

from __future__ import annotations

import json
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from suite_support import LA2_REFERENCE, VANILLA_REFERENCE

from craft_rules.crafting import craft
from craft_rules.importers import (
    DestinationExistsError,
    InvalidNameError,
    MalformedInputError,
    UnsupportedInputError,
    element_slug,
    import_datapack,
    import_little_alchemy,
    user_rule_sets_dir,
    write_rule_set_files,
)
from craft_rules.loader import load_rule_set, load_rule_set_from, rule_set_dirs
from craft_rules.model import RecipeType, RuleSet
from tradecraft.cli import main as tradecraft

needs_la2 = pytest.mark.skipif(
    not LA2_REFERENCE.is_file(), reason=f"Little Alchemy 2 reference table absent ({LA2_REFERENCE})"
)
needs_vanilla = pytest.mark.skipif(
    not (VANILLA_REFERENCE / "recipes").is_dir(),
    reason=f"vanilla reference data absent ({VANILLA_REFERENCE})",
)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the loader's pickles of these throwaway rule sets out of the user's cache."""
    monkeypatch.setenv("TRADECRAFT_CACHE_DIR", str(tmp_path / "cache"))


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def recipes_from(rules: RuleSet, *inputs: str) -> dict[str, str]:
    """Recipe id -> result of every recipe whose ingredients are exactly ``inputs`` (a multiset)."""
    wanted = sorted(inputs)
    return {
        r.id: r.result
        for r in rules.recipes.values()
        if sorted(i.options[0] for i in r.ingredients for _ in range(i.count)) == wanted
    }


# --- Little Alchemy 2: a small table with every oddity -------------------------------------------------

SMALL_TABLE = {
    "1": {"n": "Water", "prime": True, "p": []},
    "2": {"n": "Fire", "prime": True},
    "3": {"n": "Earth", "base": 1, "p": []},
    "4": {"n": "Steam", "p": [["1", "2"], ["2", "1"], [1, 7]]},  # reversed duplicate; a numeric id
    "5": {"n": "Sea", "p": [["1", "1"], ["1", "99"], ["1"]]},  # unknown id; a one-element pair
    "6": {"n": "Time", "condition": {"min": 100}},  # no pairs: becomes a starting item
    "7": {"n": "Primordial soup", "p": [["5", "3"], ["5", "2"]]},
    "8": {"n": "Cloud", "p": [["4", "4"]], "hidden": True},
    "9": {"p": [["1", "2"]]},  # no name
    "10": {"n": "Geyser", "p": [["1", "2"]]},  # the same pair as steam gives a second result
    "11": {"n": "Unreachable", "p": [["12", "12"]]},
    "12": {"n": "Loop", "p": [["11", "11"]]},
}


def test_small_table_imports_with_its_oddities_reported(tmp_path: Path) -> None:
    source = write_json(tmp_path / "table.json", SMALL_TABLE)
    report = import_little_alchemy(source, "small", tmp_path / "sets")
    assert report.dest == str(tmp_path / "sets" / "small")
    assert report.starting_items == ["water", "fire", "earth", "time"]
    assert report.items == 11  # the nameless entry is left out
    # steam x2 (water+fire, fire+primordial soup), sea, primordial soup x2, cloud, geyser, unreachable, loop
    assert report.recipes == 9
    assert report.skipped == {
        "duplicate_pairs": 1,
        "entries_without_a_name": 1,
        "pairs_naming_an_unknown_element": 1,
        "pairs_not_of_two_elements": 1,
    }
    notes = " | ".join(report.notes)
    assert "1 element(s) made by no pair became starting items: Time" in notes
    assert "unlock condition" in notes and "1 pair(s) give several results" in notes
    assert "2 element(s) cannot be made from the starting items: Loop, Unreachable" in notes
    assert f"to use it by name, add {tmp_path / 'sets'} to TRADECRAFT_RULE_SETS" in notes

    rules, load = load_rule_set_from(tmp_path / "sets" / "small", strict=True)
    assert not load.problems and rules.prefix == "" and rules.name == "small"
    assert rules.display_name("primordial_soup") == "Primordial soup"
    assert rules.items["water"].category == "starting" and rules.items["cloud"].category == "final"
    assert rules.items["steam"].category == "intermediate"
    assert recipes_from(rules, "water", "fire") == {
        "steam_from_fire_and_water": "steam",
        "geyser_from_fire_and_water": "geyser",
    }
    assert recipes_from(rules, "water", "water") == {"sea_from_water_and_water": "sea"}
    hand = craft(rules, {"water": Fraction(3), "earth": Fraction(1)}, "sea_from_water_and_water").hand
    hand = craft(rules, hand, "primordial_soup_from_earth_and_sea").hand
    assert hand == {"water": Fraction(1), "primordial_soup": Fraction(1)}


def test_import_is_reproducible_and_force_replaces_stale_recipes(tmp_path: Path) -> None:
    source = write_json(tmp_path / "table.json", SMALL_TABLE)
    import_little_alchemy(source, "small", tmp_path)
    folder = tmp_path / "small"
    before = {p: p.read_bytes() for p in folder.rglob("*.json")}
    with pytest.raises(DestinationExistsError, match="--force") as err:
        import_little_alchemy(source, "small", tmp_path)
    assert err.value.code == "destination_exists"
    import_little_alchemy(source, "small", tmp_path, force=True)
    assert {p: p.read_bytes() for p in folder.rglob("*.json")} == before

    smaller = {k: v for k, v in SMALL_TABLE.items() if k != "10"}  # geyser is gone
    write_json(source, smaller)
    import_little_alchemy(source, "small", tmp_path, force=True)
    assert not (folder / "recipes" / "geyser_from_fire_and_water.json").exists()


def test_a_folder_that_is_not_a_rule_set_is_never_replaced(tmp_path: Path) -> None:
    source = write_json(tmp_path / "table.json", SMALL_TABLE)
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.json").write_text("{}")
    with pytest.raises(DestinationExistsError, match="not a rule set folder"):
        import_little_alchemy(source, "photos", tmp_path, force=True)
    assert (tmp_path / "photos" / "cat.json").exists()


@pytest.mark.parametrize("name", ["", "../up", "a/b", "-dash", "x" * 65, "sp ace"])
def test_unsafe_names_are_refused(tmp_path: Path, name: str) -> None:
    source = write_json(tmp_path / "table.json", SMALL_TABLE)
    with pytest.raises(InvalidNameError) as err:
        import_little_alchemy(source, name, tmp_path)
    assert err.value.code == "invalid_name"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"1": {"n": "Water", ', "invalid JSON"),
        (b"[1, 2, 3]", "expected a JSON object"),
        (b'{"1": {"name": "Water"}}', 'no entry has a name ("n")'),
        (b"\xff\xfe\x00garbage", "not a UTF-8 text file"),
    ],
)
def test_malformed_tables_name_the_file(tmp_path: Path, content: bytes, reason: str) -> None:
    source = tmp_path / "broken.json"
    source.write_bytes(content)
    with pytest.raises(MalformedInputError) as err:
        import_little_alchemy(source, "broken", tmp_path / "sets")
    assert err.value.code == "malformed_input"
    assert str(source) in str(err.value) and reason in str(err.value)
    assert not (tmp_path / "sets" / "broken").exists()


def test_element_slugs() -> None:
    assert element_slug("Primordial soup") == "primordial_soup"
    assert element_slug("Jack-o'-lantern") == "jack_o_lantern"
    assert element_slug("  ") == ""


# --- Little Alchemy 2: the real table (test oracle) ----------------------------------------------------


@pytest.mark.slow
@needs_la2
def test_real_little_alchemy_2_table(tmp_path: Path) -> None:
    report = import_little_alchemy(LA2_REFERENCE, "la2", tmp_path)
    table = json.loads(LA2_REFERENCE.read_text(encoding="utf-8"))
    distinct_pairs = {
        (key, tuple(sorted(map(str, pair)))) for key, entry in table.items() for pair in entry.get("p") or []
    }
    assert report.items == 720
    assert report.recipes == len(distinct_pairs)
    assert report.recipes == 3452  # distinct pair -> result entries (the file repeats a few pairs)
    # the four prime elements first, then those the game grants on progress ("base")
    flagged = [element_slug(e["n"]) for e in table.values() if e.get("prime")]
    flagged += [element_slug(e["n"]) for e in table.values() if e.get("base") and not e.get("prime")]
    assert report.starting_items[:4] == ["water", "fire", "earth", "air"]
    assert sorted(report.starting_items) == sorted(flagged)
    assert not any("cannot be made" in note for note in report.notes)  # all reachable
    assert report.loaded["problems"] == []

    rules = load_rule_set(tmp_path / "la2")
    assert rules.name == "la2" and len(rules.items) == 720 and len(rules.recipes) == report.recipes
    assert all(r.type is RecipeType.CRAFTING_SHAPELESS for r in rules.recipes.values())
    steam = [rid for rid, result in recipes_from(rules, "water", "fire").items() if result == "steam"]
    assert steam, "water + fire should make steam"
    result = craft(rules, {"water": Fraction(1), "fire": Fraction(1)}, steam[0])
    assert result.hand == {"steam": Fraction(1)}


# --- data packs: a small pack written here -------------------------------------------------------------


def small_pack(root: Path) -> Path:
    data = root / "data"
    write_json(
        data / "minecraft/recipes/stick.json",
        {
            "type": "minecraft:crafting_shaped",
            "pattern": ["#", "#"],
            "key": {"#": {"tag": "minecraft:planks"}},
            "result": {"item": "minecraft:stick", "count": 4},
        },
    )
    write_json(
        data / "minecraft/recipes/glass.json",
        {
            "type": "minecraft:smelting",
            "ingredient": {"item": "minecraft:sand"},
            "result": "minecraft:glass",
            "cookingtime": 200,
        },
    )
    write_json(data / "minecraft/recipes/armor_dye.json", {"type": "minecraft:crafting_special_armordye"})
    write_json(
        data / "minecraft/tags/items/planks.json",
        {"values": ["minecraft:oak_planks", "#minecraft:fancy_planks"]},
    )
    write_json(data / "minecraft/tags/items/fancy_planks.json", {"values": ["minecraft:cherry_planks"]})
    write_json(
        data / "mypack/recipes/cherry_stick.json",
        {
            "type": "minecraft:crafting_shapeless",
            "ingredients": [{"item": "minecraft:cherry_planks"}],
            "result": {"item": "minecraft:stick"},
        },
    )
    write_json(data / "mypack/tags/items/odd.json", {"values": ["minecraft:stick"]})
    write_json(data / "minecraft/advancements/story/root.json", {"criteria": {}})
    write_json(root / "assets/minecraft/lang/en_us.json", {"item.minecraft.stick": "Fancy Stick"})
    (root / "pack.mcmeta").write_text('{"pack": {"pack_format": 15, "description": "test"}}')
    return root


def test_small_data_pack_folder(tmp_path: Path) -> None:
    pack = small_pack(tmp_path / "pack")
    report = import_datapack(pack, "small_pack", tmp_path / "sets")
    folder = tmp_path / "sets" / "small_pack"
    # recipe and tag files are copied byte for byte
    original = pack / "data/minecraft/recipes/stick.json"
    assert (folder / "recipes/stick.json").read_bytes() == original.read_bytes()
    assert (folder / "recipes/mypack/cherry_stick.json").is_file()
    assert (folder / "tags/items/fancy_planks.json").is_file()
    assert report.skipped == {
        "data_files_that_are_not_recipes_or_item_tags": 1,
        "item_tags_in_namespace_mypack": 1,
    }
    assert report.loaded["skipped_by_type"] == {"crafting_special_armordye": 1}

    rules = load_rule_set(folder)
    assert rules.prefix == "minecraft:" and rules.name == "small_pack"
    assert set(rules.recipes) == {"stick", "glass", "mypack/cherry_stick"}
    assert rules.tags["planks"] == frozenset({"oak_planks", "cherry_planks"})
    assert rules.display_name("stick") == "Fancy Stick"  # from the pack's lang file
    assert rules.display_name("oak_planks") == "Oak Planks"  # derived
    assert rules.fuels.burn_ticks["coal"] == 1600 and rules.fuels.remainders["lava_bucket"] == "bucket"
    hand = {"sand": Fraction(1), "stick": Fraction(2)}
    assert craft(rules, hand, "glass").hand == {"glass": Fraction(1)}  # two sticks smelt one item
    meta = json.loads((folder / "ruleset.json").read_text())
    assert meta["source"]["kind"] == "datapack" and meta["prefix"] == "minecraft:"


def test_zipped_pack_under_a_top_folder_matches_the_folder_import(tmp_path: Path) -> None:
    pack = small_pack(tmp_path / "pack")
    archive = tmp_path / "pack.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(pack.rglob("*")):
            if path.is_file():
                zf.write(path, f"my_pack/{path.relative_to(pack).as_posix()}")
    import_datapack(pack, "from_folder", tmp_path / "sets")
    import_datapack(archive, "from_zip", tmp_path / "sets")
    folder_files = {
        p.relative_to(tmp_path / "sets/from_folder"): p.read_bytes()
        for p in (tmp_path / "sets/from_folder").rglob("*.json")
    }
    zip_files = {
        p.relative_to(tmp_path / "sets/from_zip"): p.read_bytes()
        for p in (tmp_path / "sets/from_zip").rglob("*.json")
    }
    assert folder_files.keys() == zip_files.keys()
    differing = {str(p) for p in folder_files if folder_files[p] != zip_files[p]}
    assert differing == {"ruleset.json"}  # name, source file and checksum


def test_malformed_recipe_inside_a_jar_is_named(tmp_path: Path) -> None:
    archive = tmp_path / "client.jar"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("data/minecraft/recipes/ok.json", '{"type": "minecraft:crafting_special_x"}')
        zf.writestr("data/minecraft/recipes/torch.json", '{"type": "minecraft:crafting_shaped",')
    with pytest.raises(MalformedInputError) as err:
        import_datapack(archive, "broken", tmp_path / "sets")
    assert f"{archive}!/data/minecraft/recipes/torch.json" in str(err.value)
    assert "invalid JSON" in str(err.value)
    assert not (tmp_path / "sets" / "broken").exists()


def test_inputs_that_are_not_packs(tmp_path: Path) -> None:
    not_zip = tmp_path / "notes.jar"
    not_zip.write_text("hello")
    with pytest.raises(MalformedInputError, match=r"readable \.jar/\.zip"):
        import_datapack(not_zip, "x", tmp_path / "sets")
    empty = tmp_path / "empty"
    (empty / "data/minecraft/loot_tables").mkdir(parents=True)
    with pytest.raises(UnsupportedInputError, match="holds no data/<namespace>/recipes") as err:
        import_datapack(empty, "x", tmp_path / "sets")
    assert err.value.code == "unsupported_input"
    with pytest.raises(UnsupportedInputError, match="no such file or folder"):
        import_datapack(tmp_path / "missing", "x", tmp_path / "sets")


# --- data packs: vanilla reference (test oracle) -------------------------------------------------------


@pytest.mark.slow
@needs_vanilla
def test_vanilla_reference_folder_imports_as_a_data_pack(tmp_path: Path) -> None:
    report = import_datapack(VANILLA_REFERENCE, "vanilla", tmp_path)
    reference, _ = load_rule_set_from(VANILLA_REFERENCE)
    imported = load_rule_set(tmp_path / "vanilla")
    assert report.recipes == len(reference.recipes) > 1000
    assert imported.recipes == reference.recipes
    assert imported.tags == reference.tags
    assert report.loaded["problems"] == []
    assert sum(report.loaded["skipped_by_type"].values()) > 0  # special recipes are counted
    for item in imported.items:
        assert imported.items[item].name  # every item is named (derived: the folder has no lang file)
    assert imported.display_name("oak_planks") == "Oak Planks"
    hand = {"raw_iron": Fraction(2), "coal": Fraction(1)}
    iron = next(
        r.id
        for r in imported.recipes_by_result["iron_ingot"]
        if r.type is RecipeType.SMELTING and r.ingredients[0].options == ("raw_iron",)
    )
    assert craft(imported, hand, iron, runs=2).hand == {"iron_ingot": Fraction(2), "coal": Fraction(3, 4)}


@pytest.mark.slow
@needs_vanilla
def test_client_jar_built_from_the_reference(tmp_path: Path) -> None:
    archive = tmp_path / "client-1.20.1.jar"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((VANILLA_REFERENCE / "recipes").glob("*.json")):
            zf.write(path, f"data/minecraft/recipes/{path.name}")
        for path in sorted((VANILLA_REFERENCE / "tags" / "items").rglob("*.json")):
            rel = path.relative_to(VANILLA_REFERENCE / "tags" / "items").as_posix()
            zf.write(path, f"data/minecraft/tags/items/{rel}")
        zf.writestr("net/minecraft/client/Main.class", b"\xca\xfe\xba\xbe")
        lang = {
            "item.minecraft.stick": "Stick",
            "block.minecraft.oak_planks": "Oak Planks",
            "gui.done": "Done",
        }
        zf.writestr("assets/minecraft/lang/en_us.json", json.dumps(lang))
    report = import_datapack(archive, "vanilla_jar", tmp_path)
    reference, _ = load_rule_set_from(VANILLA_REFERENCE)
    imported = load_rule_set(tmp_path / "vanilla_jar")
    assert imported.recipes == reference.recipes
    assert report.recipes == len(reference.recipes)
    assert imported.display_name("stick") == "Stick"
    assert imported.display_name("gui") == "Gui"  # lang keys other than items and blocks are ignored
    assert "done" not in imported.items


# --- the command line ----------------------------------------------------------------------------------


def test_cli_imports_into_the_user_folder_found_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADECRAFT_RULE_SETS", str(tmp_path / "mine"))
    assert user_rule_sets_dir() == tmp_path / "mine"
    source = write_json(tmp_path / "table.json", SMALL_TABLE)
    runner = CliRunner()
    result = runner.invoke(
        tradecraft, ["rules", "import", "little-alchemy", str(source), "--name", "tiny", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ok"] is True and data["recipes"] == 9 and data["dest"] == str(tmp_path / "mine" / "tiny")
    assert "tiny" in rule_set_dirs()
    assert not any("TRADECRAFT_RULE_SETS" in note for note in data["notes"])
    assert load_rule_set("tiny").starting_items == ("water", "fire", "earth", "time")

    text = runner.invoke(tradecraft, ["rules", "import", "little-alchemy", str(source), "--name", "tiny"])
    assert text.exit_code == 1 and "pass --force to replace it [destination_exists]" in text.output
    forced = runner.invoke(
        tradecraft, ["rules", "import", "little-alchemy", str(source), "--name", "tiny", "--force"]
    )
    assert (
        forced.exit_code == 0
        and "imported little-alchemy" in forced.output
        and "skipped  1 duplicate pairs" in forced.output
    )


def test_a_user_rule_set_may_shadow_an_installed_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRADECRAFT_RULE_SETS", str(tmp_path))
    report = import_little_alchemy(write_json(tmp_path / "table.json", SMALL_TABLE), "alchemy")
    assert "it shadows the installed rule set of the same name when loaded by name" in report.notes
    assert rule_set_dirs()["alchemy"] == tmp_path / "alchemy"


def test_cli_reports_errors_as_json(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    result = CliRunner().invoke(
        tradecraft,
        ["rules", "import", "datapack", str(broken), "--name", "x", "--dest", str(tmp_path), "--json"],
    )
    assert result.exit_code == 1
    error = json.loads(result.output)["error"]
    assert error["code"] == "malformed_input" and error["path"] == str(broken)


def test_cli_datapack_with_dest(tmp_path: Path) -> None:
    pack = small_pack(tmp_path / "pack")
    result = CliRunner().invoke(
        tradecraft, ["rules", "import", "datapack", str(pack), "--name", "p", "--dest", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    assert "recipes  3" in result.output and "skipped  1 item tags in namespace mypack" in result.output


# --- the shared writer ---------------------------------------------------------------------------------


def test_writer_leaves_unchanged_files_alone_and_removes_stale_ones(tmp_path: Path) -> None:
    files = {"a.json": b"{}\n", "recipes/b.json": b"[]\n"}
    assert write_rule_set_files(tmp_path, files) == {"written": 2, "unchanged": 0, "removed": 0}
    mtime = (tmp_path / "a.json").stat().st_mtime_ns
    (tmp_path / "recipes/old").mkdir()
    (tmp_path / "recipes/old/c.json").write_text("{}")
    (tmp_path / "README.txt").write_text("kept: not a generated kind of file")
    counts = write_rule_set_files(tmp_path, {**files, "recipes/b.json": b"[1]\n"})
    assert counts == {"written": 1, "unchanged": 1, "removed": 1}
    assert (tmp_path / "a.json").stat().st_mtime_ns == mtime
    assert not (tmp_path / "recipes/old").exists() and (tmp_path / "README.txt").exists()
