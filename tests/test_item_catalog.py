"""Item glyphs: every item of both shipped rule sets gets a readable, distinct-enough icon."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from craft_rules.catalog import (
    CATALOG_FILE,
    FALLBACK_CATALOGS,
    FALLBACK_COLOUR,
    CatalogTables,
    build_catalogue,
    catalog_tables,
    catalogue_for,
    category_style,
    contrast_ratio,
    fallback_tables,
)
from craft_rules.loader import RuleSetError, find_rule_set, load_rule_set, load_rule_set_from

RULESETS = ("minecraft", "alchemy")


def tables_of(name: str) -> CatalogTables:
    return catalog_tables(find_rule_set(name))


@pytest.mark.parametrize("name", RULESETS)
def test_every_item_has_a_glyph_with_a_monogram(name: str) -> None:
    rules = load_rule_set(name)
    catalogue = catalogue_for(name)
    assert set(catalogue.items) == set(rules.items)
    for item, glyph in catalogue.items.items():
        assert 1 <= len(glyph.monogram) <= 3 and glyph.monogram.strip() == glyph.monogram, item
        assert glyph.monogram[0].isalnum(), item
        assert glyph.category in catalogue.categories, item
        assert glyph.name == rules.display_name(item)
        assert glyph.accent is None or glyph.accent in tables_of(name).accents.values()


@pytest.mark.parametrize("name", RULESETS)
def test_no_two_items_look_alike(name: str) -> None:
    """Same category and accent (the glyph's colours) never come with the same letters or emoji."""
    catalogue = catalogue_for(name)
    letters = Counter((g.category, g.accent, g.monogram.lower()) for g in catalogue.items.values())
    assert max(letters.values()) == 1, letters.most_common(3)
    emoji = Counter((g.category, g.accent, g.emoji) for g in catalogue.items.values() if g.emoji)
    assert not emoji or max(emoji.values()) == 1, emoji.most_common(3)
    # the glyph as drawn with an emoji font (emoji instead of letters) is unique too
    drawn = Counter((g.category, g.accent, g.emoji or g.monogram.lower()) for g in catalogue.items.values())
    assert max(drawn.values()) == 1, drawn.most_common(3)


def test_minecraft_categories_follow_tags_recipes_and_names() -> None:
    items = catalogue_for("minecraft").items
    expected = {
        "oak_log": "wood",
        "spruce_planks": "wood",
        "stick": "wood",
        "iron_ingot": "mineral",
        "charcoal": "mineral",
        "iron_ore": "ore",
        "deepslate_gold_ore": "ore",
        "diamond_pickaxe": "tool",
        "iron_sword": "combat",
        "golden_helmet": "armor",
        "cooked_beef": "food",
        "bread": "food",
        "red_dye": "dye",
        "repeater": "redstone",
        "oak_boat": "transport",
        "white_wool": "coloured",
        "crafting_table": "utility",
        "stone_brick_stairs": "building",
        "poppy": "plant",
        "bone": "mob_drop",
        "pig_spawn_egg": "spawn_egg",
    }
    assert {item: items[item].category for item in expected} == expected
    # the colour or material of an item is its accent
    accents = tables_of("minecraft").accents
    assert items["red_wool"].accent == accents["red"] and items["oak_planks"].accent == accents["oak"]
    assert items["red_wool"].accent != items["blue_wool"].accent
    derived = Counter(g.category for g in items.values())
    assert derived["item"] < len(items) * 0.1, derived  # the fallback stays small


def test_alchemy_keeps_its_own_categories_and_gets_emoji() -> None:
    rules = load_rule_set("alchemy")
    catalogue = catalogue_for("alchemy")
    for item, glyph in catalogue.items.items():
        assert glyph.category == rules.items[item].category
    assert catalogue.items["fire"].emoji == "🔥" and catalogue.items["water"].emoji == "💧"
    assert sum(1 for g in catalogue.items.values() if g.emoji) > len(catalogue.items) / 2


@pytest.mark.parametrize("name", RULESETS)
def test_monogram_colours_contrast_at_icon_size(name: str) -> None:
    """WCAG AA for small text: 4.5:1 between the letters and the glyph's fill, in every category."""
    for category, style in catalogue_for(name).categories.items():
        assert contrast_ratio(style.text, style.background) >= 4.5, category
        assert style.contrast >= 4.5


@pytest.mark.parametrize("name", RULESETS)
def test_every_declared_category_colour_contrasts(name: str) -> None:
    tables = tables_of(name)
    for category in tables.categories:
        assert category_style(category, tables).contrast >= 4.5, category
    assert category_style("made_up", tables).contrast >= 4.5  # unknown categories fall back to a dark colour


def test_contrast_ratio_matches_wcag_examples() -> None:
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_catalogue_is_deterministic() -> None:
    rules = load_rule_set("minecraft")
    assert build_catalogue(rules, tables_of("minecraft")) == build_catalogue(rules, tables_of("minecraft"))


def small_rule_set(folder: Path) -> Path:
    """A user's rule set with a Minecraft-like item and an alchemy-like one, and no catalog.json."""
    recipes = {
        "pickaxe": {"result": "iron_pickaxe", "ingredients": ["iron_ingot", "stick"]},
        "volcano": {"result": "volcano", "ingredients": ["fire", "earth"]},
    }
    (folder / "recipes").mkdir(parents=True)
    (folder / "ruleset.json").write_text(json.dumps({"name": folder.name, "prefix": ""}))
    for recipe_id, recipe in recipes.items():
        recipe_json = {
            "type": "crafting_shapeless",
            "ingredients": [{"item": item} for item in recipe["ingredients"]],
            "result": {"item": recipe["result"], "count": 1},
        }
        (folder / "recipes" / f"{recipe_id}.json").write_text(json.dumps(recipe_json))
    return folder


def test_a_rule_set_without_a_catalogue_borrows_the_shipped_tables(tmp_path: Path) -> None:
    folder = small_rule_set(tmp_path / "imported")
    rules, _ = load_rule_set_from(folder)
    assert catalog_tables(folder) == fallback_tables()
    items = build_catalogue(rules, catalog_tables(folder)).items
    # minecraft's name rules and last words, alchemy's emoji
    assert (items["iron_pickaxe"].category, items["iron_pickaxe"].emoji) == ("tool", "⛏️")
    assert items["iron_pickaxe"].accent == tables_of("minecraft").accents["iron"]
    assert items["volcano"].emoji == "🌋" and items["volcano"].category == "item"
    # every entry of each shipped table is in the fallback, minecraft's first
    for name in FALLBACK_CATALOGS:
        shipped = tables_of(name)
        assert shipped.emoji_by_id.items() <= fallback_tables().emoji_by_id.items()
        assert shipped.categories.items() <= fallback_tables().categories.items()
    assert list(fallback_tables().accents)[: len(tables_of("minecraft").accents)] == list(
        tables_of("minecraft").accents
    )


def test_a_rule_set_with_its_own_catalogue_uses_only_that(tmp_path: Path) -> None:
    folder = small_rule_set(tmp_path / "own")
    own = {
        "categories": {"gear": {"label": "Gear", "colour": "#102030"}},
        "name_rules": [{"category": "gear", "pattern": "_pickaxe$"}],
    }
    (folder / CATALOG_FILE).write_text(json.dumps(own))
    rules, _ = load_rule_set_from(folder)
    catalogue = build_catalogue(rules, catalog_tables(folder))
    assert catalogue.items["iron_pickaxe"].category == "gear"
    assert (
        catalogue.categories["gear"].label == "Gear" and catalogue.categories["gear"].background == "#102030"
    )
    assert catalogue.items["iron_pickaxe"].accent is None and catalogue.items["volcano"].emoji is None
    assert catalogue.categories["item"].background == FALLBACK_COLOUR


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({"accents": {"oak": "brown"}}, "accents.oak"),
        ({"name_rules": [{"category": "x", "pattern": "(unclosed"}]}, "not a regular expression"),
        ({"emojis": {}}, "emojis"),
    ],
)
def test_a_malformed_catalogue_is_reported_with_its_path(tmp_path: Path, content: Any, reason: str) -> None:
    (tmp_path / CATALOG_FILE).write_text(json.dumps(content))
    with pytest.raises(RuleSetError, match=reason) as err:
        catalog_tables(tmp_path)
    assert err.value.path == str(tmp_path / CATALOG_FILE)
