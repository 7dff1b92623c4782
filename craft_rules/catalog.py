"""Item icons without game art: a category, a colour accent, a monogram and, where one fits, an emoji.

The browser draws each item as a small SVG glyph (``static/js/icons.js``): a rounded square in the colour
of the item's category, framed by an accent colour (the item's material or dye: oak, iron, red, ...), with
a one-to-three letter monogram, or the emoji when the browser has an emoji font. The catalogue is a pure
function of the rule set and its hand-written tables (:class:`CatalogTables`, the rule set folder's
``catalog.json``); the web layer serves it read-only as ``GET /api/rulesets/<name>/items``.

How an item gets its parts:

- **category**: a rule set that names categories itself (the alchemy set's ``items.json``) keeps its own.
  Otherwise the item's tags (``categories_by_tag``), name patterns (``name_rules``: ``*_ore``,
  ``*_pickaxe``, ...) and the recipe types that make it (``categories_by_recipe_type``: smokers make
  food) decide, first match wins.
- **accent**: the first material word of the id (``dark_oak``, ``light_blue``, ``iron``, ``golden``...).
- **monogram**: letters of the remaining words, chosen so that no two items of the same category and
  accent look alike (case-insensitively); the choice is deterministic (items in id order).
- **emoji**: from the tables of whole ids and last words; two items of one category and accent never
  share an emoji (the later one keeps its monogram).

A rule set without ``catalog.json`` (a user's import) borrows the shipped rule sets' tables, merged
(:data:`FALLBACK_CATALOGS`): an imported data pack draws like minecraft, an imported Little Alchemy table
gets alchemy's emoji. Text colours are chosen per category for a WCAG contrast of at least 4.5:1 at icon
size (tests check it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache, reduce
from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from craft_rules.loader import RULE_SETS_DIR, RuleSetError, find_rule_set, load_rule_set
from craft_rules.model import RecipeType, RuleSet

#: The file of a rule set folder that holds its :class:`CatalogTables`.
CATALOG_FILE = "catalog.json"
#: Shipped rule sets whose tables a rule set without a catalogue borrows; the first to name a key wins.
FALLBACK_CATALOGS = ("minecraft", "alchemy")
#: Colour of a category the tables do not know.
FALLBACK_COLOUR = "#3d4555"
#: Category of an item nothing else places.
FALLBACK_CATEGORY = "item"

Colour = Annotated[str, Field(pattern=r"^#[0-9a-fA-F]{6}$", description="#rrggbb")]


# ------------------------------------------------------------------------------ the hand-written tables
class CategoryColour(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(description="the category's name, for people")
    colour: Colour = Field(description="the glyph's fill")


class NameRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    category: str
    pattern: str = Field(description="a regular expression searched in the item id")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as err:
            raise ValueError(f"not a regular expression: {err}") from err
        return pattern


class CatalogTables(BaseModel):
    """A rule set's ``catalog.json``: the tables its glyphs are drawn from (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    about: dict[str, str] = Field(default_factory=dict, description="what each key means, for editors")
    categories: dict[str, CategoryColour] = Field(default_factory=dict)
    accents: dict[str, Colour] = Field(default_factory=dict)
    categories_by_tag: dict[str, str] = Field(default_factory=dict)
    name_rules: tuple[NameRule, ...] = ()
    categories_by_recipe_type: dict[RecipeType, str] = Field(default_factory=dict)
    emoji_by_id: dict[str, str] = Field(default_factory=dict)
    emoji_by_last_word: dict[str, str] = Field(default_factory=dict)

    def merged_with(self, other: CatalogTables) -> CatalogTables:
        """These tables plus what only ``other`` names (in order: these entries first)."""
        return CatalogTables(
            categories=_first_wins(self.categories, other.categories),
            accents=_first_wins(self.accents, other.accents),
            categories_by_tag=_first_wins(self.categories_by_tag, other.categories_by_tag),
            name_rules=self.name_rules + tuple(r for r in other.name_rules if r not in self.name_rules),
            categories_by_recipe_type=_first_wins(
                self.categories_by_recipe_type, other.categories_by_recipe_type
            ),
            emoji_by_id=_first_wins(self.emoji_by_id, other.emoji_by_id),
            emoji_by_last_word=_first_wins(self.emoji_by_last_word, other.emoji_by_last_word),
        )


_Value = TypeVar("_Value")


def _first_wins(first: Mapping[str, _Value], second: Mapping[str, _Value]) -> dict[str, _Value]:
    return {**first, **{key: value for key, value in second.items() if key not in first}}


def read_catalog_tables(path: Path) -> CatalogTables:
    """One ``catalog.json``; a malformed file raises :class:`RuleSetError` naming it."""
    try:
        return CatalogTables.model_validate_json(path.read_bytes())
    except OSError as err:
        raise RuleSetError(path, f"cannot read: {err.strerror}") from err
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise RuleSetError(path, f"{where}: {first['msg']}") from err


@lru_cache(maxsize=16)
def catalog_tables(folder: Path) -> CatalogTables:
    """The tables of the rule set in ``folder``: its ``catalog.json``, else the shipped ones merged."""
    path = folder / CATALOG_FILE
    if path.is_file():
        return read_catalog_tables(path)
    return fallback_tables()


def shipped_catalog_file(name: str) -> bytes:
    """A shipped rule set's ``catalog.json`` as written by hand: its builder copies it, byte for byte."""
    return (RULE_SETS_DIR / name / CATALOG_FILE).read_bytes()


@lru_cache(maxsize=1)
def fallback_tables() -> CatalogTables:
    shipped = [read_catalog_tables(RULE_SETS_DIR / name / CATALOG_FILE) for name in FALLBACK_CATALOGS]
    return reduce(CatalogTables.merged_with, shipped)


# ---------------------------------------------------------------------------------- the served catalogue
class CategoryStyle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="the category's name, for people")
    background: str = Field(description="the glyph's fill colour, #rrggbb")
    text: str = Field(description="the monogram's colour (#000000 or #ffffff, whichever contrasts more)")
    contrast: float = Field(description="WCAG contrast ratio of text on background")


class ItemGlyph(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the item's display name")
    category: str = Field(description="a key of the catalogue's categories")
    monogram: str = Field(description="1-3 letters drawn on the glyph")
    accent: str | None = Field(
        description="the frame colour (#rrggbb) of the item's material or dye, or null"
    )
    emoji: str | None = Field(
        description="a Unicode emoji for the item, drawn instead of the monogram, or null"
    )


class ItemCatalogue(BaseModel):
    """``GET /api/rulesets/<name>/items``: how to draw every item of a rule set."""

    model_config = ConfigDict(extra="forbid")

    ok: bool = True
    ruleset: str
    content_hash: str = Field(description="the rule set's content hash: the catalogue changes only with it")
    categories: dict[str, CategoryStyle]
    items: dict[str, ItemGlyph]


# ------------------------------------------------------------------------------------------- colours
def relative_luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def category_style(category: str, tables: CatalogTables) -> CategoryStyle:
    known = tables.categories.get(category)
    label = known.label if known else category.replace("_", " ").capitalize()
    background = known.colour if known else FALLBACK_COLOUR
    text = max(("#000000", "#ffffff"), key=lambda t: contrast_ratio(t, background))
    return CategoryStyle(
        label=label, background=background, text=text, contrast=round(contrast_ratio(text, background), 2)
    )


# ------------------------------------------------------------------------------------------- glyphs
class _GlyphRules:
    """The tables, prepared for drawing one rule set's items."""

    def __init__(self, rules: RuleSet, tables: CatalogTables):
        self.rules = rules
        self.tables = tables
        # the word of most words, then most letters, is tried first ("dark_oak" before "oak")
        self.accent_words = sorted(tables.accents, key=lambda w: (-w.count("_"), -len(w)))
        self.name_rules = tuple((re.compile(rule.pattern), rule.category) for rule in tables.name_rules)

    def category(self, item: str) -> str:
        own = self.rules.items[item].category if item in self.rules.items else None
        return own or self._derived_category(item)

    def _derived_category(self, item: str) -> str:
        """Category of an item its rule set does not place: tags, then the name, then recipe types."""
        tags = set(self.rules.tags_of_item.get(item, ()))
        for tag, category in self.tables.categories_by_tag.items():
            if tag in tags:
                return category
        for pattern, category in self.name_rules:
            if pattern.search(item):
                return category
        for recipe in self.rules.recipes_by_result.get(item, ()):
            if recipe.type in self.tables.categories_by_recipe_type:
                return self.tables.categories_by_recipe_type[recipe.type]
        return FALLBACK_CATEGORY

    def accent_word(self, item: str) -> str | None:
        for word in self.accent_words:
            if item == word:
                return None  # the material itself ("iron" is not iron-accented iron)
            if item.startswith(word + "_") or f"_{word}_" in f"_{item}_":
                return word
        return None

    def emoji(self, item: str) -> str | None:
        if item in self.tables.emoji_by_id:
            return self.tables.emoji_by_id[item]
        return self.tables.emoji_by_last_word.get(item.rsplit("_", 1)[-1])


def _base_words(item: str, accent: str | None) -> list[str]:
    words = item.split("_")
    if accent is not None:
        accent_words = accent.split("_")
        for start in range(len(words) - len(accent_words) + 1):
            if words[start : start + len(accent_words)] == accent_words:
                rest = words[:start] + words[start + len(accent_words) :]
                if rest:
                    words = rest
                break
    return [w for w in words if w] or [item]


def _monogram_candidates(words: list[str]) -> Iterator[str]:
    """Monograms for an item's words, the most natural first (all of 1-3 letters)."""
    letters = [w for w in words if w[0].isalnum()]
    if not letters:
        letters = words
    first, last = letters[0], letters[-1]
    if len(letters) == 1:
        yield first[:2].capitalize()
    else:
        yield (first[0] + last[0]).upper()
        yield (first[0] + letters[1][0]).upper()
        yield "".join(w[0] for w in letters[:3]).upper()
        yield first[0].upper() + last[:2].capitalize()
    # more letters of the words themselves
    for word in letters:
        for i in range(1, len(word)):
            yield (word[0] + word[i]).capitalize()
    for word in letters:
        for i in range(1, len(word)):
            for j in range(i + 1, len(word)):
                yield (word[0] + word[i] + word[j]).capitalize()
    for n in range(2, 100):
        yield f"{first[0].upper()}{n}"


@dataclass(frozen=True)
class _Glyph:
    category: str
    accent_word: str | None
    monogram: str
    emoji: str | None


def _glyphs(glyph_rules: _GlyphRules) -> dict[str, _Glyph]:
    used_monograms: dict[tuple[str, str | None], set[str]] = {}
    used_emoji: dict[tuple[str, str | None], set[str]] = {}
    glyphs: dict[str, _Glyph] = {}
    for item in sorted(glyph_rules.rules.items):
        category = glyph_rules.category(item)
        accent = glyph_rules.accent_word(item)
        group = (category, accent)
        taken = used_monograms.setdefault(group, set())
        monogram = next(m for m in _monogram_candidates(_base_words(item, accent)) if m.lower() not in taken)
        taken.add(monogram.lower())
        emoji = glyph_rules.emoji(item)
        emoji_taken = used_emoji.setdefault(group, set())
        if emoji is not None:
            if emoji in emoji_taken:
                emoji = None
            else:
                emoji_taken.add(emoji)
        glyphs[item] = _Glyph(category, accent, monogram, emoji)
    return glyphs


def build_catalogue(rules: RuleSet, tables: CatalogTables) -> ItemCatalogue:
    glyphs = _glyphs(_GlyphRules(rules, tables))
    categories = {c: category_style(c, tables) for c in sorted({g.category for g in glyphs.values()})}
    items = {
        item: ItemGlyph(
            name=rules.display_name(item),
            category=g.category,
            monogram=g.monogram,
            accent=tables.accents[g.accent_word] if g.accent_word else None,
            emoji=g.emoji,
        )
        for item, g in glyphs.items()
    }
    return ItemCatalogue(
        ruleset=rules.name, content_hash=rules.content_hash, categories=categories, items=items
    )


@lru_cache(maxsize=16)
def catalogue_for(ruleset: str) -> ItemCatalogue:
    """The item catalogue of a rule set by name or folder (cached: a pure function of the rule set)."""
    folder = find_rule_set(ruleset)
    return build_catalogue(load_rule_set(folder), catalog_tables(folder))
