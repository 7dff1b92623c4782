"""Item glyphs: every item of both shipped rule sets gets a readable, distinct-enough icon."""

from __future__ import annotations

from collections import Counter

import pytest

from craft_rules.loader import load_rule_set
from server.web.item_catalog import (
    ACCENTS,
    CATEGORY_STYLES,
    build_catalogue,
    catalogue_for,
    category_style,
    contrast_ratio,
)

RULESETS = ("minecraft", "alchemy")


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
        assert glyph.accent is None or glyph.accent in ACCENTS.values()


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
    assert items["red_wool"].accent == ACCENTS["red"] and items["oak_planks"].accent == ACCENTS["oak"]
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


def test_every_declared_category_colour_contrasts() -> None:
    for category in CATEGORY_STYLES:
        assert category_style(category).contrast >= 4.5, category
    assert category_style("made_up").contrast >= 4.5  # unknown categories fall back to a dark colour


def test_contrast_ratio_matches_wcag_examples() -> None:
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_catalogue_is_deterministic() -> None:
    rules = load_rule_set("minecraft")
    assert build_catalogue(rules) == build_catalogue(rules)
