"""How completely and exactly a rule set reproduces a vanilla data pack (`tradecraft rules check-vanilla`).

Recipes are matched by content, never by id. For every vanilla recipe (special ones skipped and counted):

- **reproduced**: the rule set has a recipe of the same type with the same result and count and the same
  ingredients (each ingredient's set of accepted items, with the same count); shaped recipes also need
  the same grid (trimmed of empty rows and columns; a mirrored grid counts as the same, as in the game);
- **differing**: no exact match, but the rule set has a recipe of the same family (crafting, cooking,
  ...) making the same result that no other vanilla recipe matched;
- **missing**: the rule set has nothing of the kind.

A rule-set recipe that matched no vanilla recipe is **extra**. Ingredients are compared as item sets, so a
tag and a list naming the same items are equal; whether the rule set writes a tag where vanilla writes
one is reported separately as tag usage.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from craft_rules.loader import RuleSetError, load_rule_set, load_rule_set_from
from craft_rules.model import COOKING_TYPES, Recipe, RecipeType, RuleSet

CRAFTING_TYPES = (RecipeType.CRAFTING_SHAPED, RecipeType.CRAFTING_SHAPELESS)

Options = tuple[str, ...]
Grid = tuple[tuple[Options | None, ...], ...]


class VanillaCheckError(RuleSetError):
    """The vanilla side cannot be read. ``code`` is machine-readable; the message says what to do."""

    code = "vanilla_unreadable"


# --- recipe content -----------------------------------------------------------------------------------


def _trim(rows: list[list[Options | None]]) -> Grid:
    while rows and all(c is None for c in rows[0]):
        rows.pop(0)
    while rows and all(c is None for c in rows[-1]):
        rows.pop()
    if not rows:
        return ()
    width = max(len(r) for r in rows)
    rows = [r + [None] * (width - len(r)) for r in rows]
    used = [i for i in range(width) if any(r[i] is not None for r in rows)]
    first, last = used[0], used[-1]
    return tuple(tuple(r[first : last + 1]) for r in rows)


def shaped_grid(recipe: Recipe) -> Grid:
    """The recipe's grid of accepted item sets, trimmed, in a canonical orientation (it or its mirror)."""
    assert recipe.pattern is not None and recipe.key is not None
    rows = [
        [None if ch == " " else recipe.ingredients[recipe.key[ch]].options for ch in row]
        for row in recipe.pattern
    ]
    grid = _trim(rows)
    mirror = tuple(tuple(reversed(row)) for row in grid)

    def order(g: Grid) -> tuple[tuple[Options, ...], ...]:
        return tuple(tuple(c or () for c in row) for row in g)

    return min(grid, mirror, key=order)


def ingredient_multiset(recipe: Recipe) -> tuple[tuple[Options, int], ...]:
    """Ingredients as (accepted items, count), merged by item set and sorted, whatever their notation."""
    counts: dict[Options, int] = {}
    for ing in recipe.ingredients:
        counts[ing.options] = counts.get(ing.options, 0) + ing.count
    return tuple(sorted(counts.items()))


def signature(recipe: Recipe) -> tuple[Any, ...]:
    """What must be equal for a rule-set recipe to reproduce a vanilla one exactly."""
    content: Any = shaped_grid(recipe) if recipe.type is RecipeType.CRAFTING_SHAPED else None
    return (recipe.type.value, recipe.result, recipe.count, ingredient_multiset(recipe), content)


def differences(vanilla: Recipe, ours: Recipe) -> list[str]:
    """Short reasons why two recipes of the same result are not the same."""
    reasons = []
    if vanilla.type is not ours.type:
        reasons.append(f"type {ours.type.value} instead of {vanilla.type.value}")
    if vanilla.count != ours.count:
        reasons.append(f"count {ours.count} instead of {vanilla.count}")
    theirs_ing, ours_ing = dict(ingredient_multiset(vanilla)), dict(ingredient_multiset(ours))
    if theirs_ing != ours_ing:
        lacking = [_label(o, n) for o, n in theirs_ing.items() if ours_ing.get(o) != n]
        added = [_label(o, n) for o, n in ours_ing.items() if theirs_ing.get(o) != n]
        reasons.append(f"ingredients: vanilla has {'; '.join(lacking)}; rule set has {'; '.join(added)}")
    elif vanilla.type is ours.type is RecipeType.CRAFTING_SHAPED and shaped_grid(vanilla) != shaped_grid(
        ours
    ):
        reasons.append(f"grid {list(ours.pattern or ())} instead of {list(vanilla.pattern or ())}")
    return reasons


def _label(options: Options, count: int) -> str:
    shown = " | ".join(options[:4]) + (f" | ... ({len(options)} items)" if len(options) > 4 else "")
    return f"{count} x {shown}"


def _similarity(a: Recipe, b: Recipe) -> tuple[int, int, int]:
    """How alike two recipes of one result are (higher is closer): same type, shared items, same count."""
    items_a = {o for ing in a.ingredients for o in ing.options}
    items_b = {o for ing in b.ingredients for o in ing.options}
    return (int(a.type is b.type), len(items_a & items_b) - len(items_a ^ items_b), int(a.count == b.count))


# --- the comparison ------------------------------------------------------------------------------------


@dataclass
class TypeCounts:
    vanilla: int = 0
    reproduced: int = 0
    differing: int = 0
    missing: int = 0
    extra: int = 0

    @property
    def exact_share(self) -> float:
        return self.reproduced / self.vanilla if self.vanilla else 1.0

    def add(self, other: TypeCounts) -> None:
        self.vanilla += other.vanilla
        self.reproduced += other.reproduced
        self.differing += other.differing
        self.missing += other.missing
        self.extra += other.extra

    def as_dict(self) -> dict[str, Any]:
        return {
            "vanilla": self.vanilla,
            "reproduced": self.reproduced,
            "differing": self.differing,
            "missing": self.missing,
            "extra": self.extra,
            "exact_share": round(self.exact_share, 4),
        }


@dataclass
class TagUsage:
    """Ingredients of matched recipe pairs where vanilla writes a ``#tag``: does the rule set too?"""

    vanilla_tags: int = 0
    same_tag: int = 0
    other_tag: int = 0
    items_instead: int = 0
    rule_set_only: int = 0  # the rule set writes a tag where vanilla lists items
    mismatches: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "vanilla_tags": self.vanilla_tags,
            "same_tag": self.same_tag,
            "other_tag": self.other_tag,
            "items_instead": self.items_instead,
            "rule_set_only": self.rule_set_only,
            "mismatches": self.mismatches,
        }


@dataclass
class VanillaComparison:
    rule_set: str
    vanilla_path: str
    by_type: dict[str, TypeCounts]
    reproduced: list[tuple[str, str]]
    differing: list[dict[str, Any]]
    missing: list[dict[str, str]]
    extra: list[dict[str, str]]
    vanilla_skipped: dict[str, int]
    tag_usage: TagUsage

    def family(self, types: Iterable[RecipeType]) -> TypeCounts:
        total = TypeCounts()
        for kind in types:
            total.add(self.by_type.get(kind.value, TypeCounts()))
        return total

    @property
    def crafting(self) -> TypeCounts:
        """Shaped and shapeless crafting together."""
        return self.family(CRAFTING_TYPES)

    @property
    def cooking(self) -> TypeCounts:
        """The smelting family: smelting, blasting, smoking, campfire cooking."""
        return self.family(sorted(COOKING_TYPES))

    @property
    def total(self) -> TypeCounts:
        return self.family(RecipeType)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule_set": self.rule_set,
            "vanilla_path": self.vanilla_path,
            "by_type": {k: v.as_dict() for k, v in sorted(self.by_type.items())},
            "crafting": self.crafting.as_dict(),
            "cooking": self.cooking.as_dict(),
            "total": self.total.as_dict(),
            "vanilla_skipped": dict(sorted(self.vanilla_skipped.items())),
            "tag_usage": self.tag_usage.as_dict(),
            "differing": self.differing,
            "missing": self.missing,
            "extra": self.extra,
            "reproduced": [{"vanilla": v, "rule_set": r} for v, r in self.reproduced],
        }

    def text(self, details: bool = False) -> str:
        head = f"{'type':<26}{'vanilla':>8}{'exact':>8}{'differ':>8}{'missing':>8}{'extra':>7}{'exact %':>9}"
        lines = [f"rule set {self.rule_set} vs vanilla {self.vanilla_path}", head]

        def row(name: str, c: TypeCounts) -> str:
            share = f"{100 * c.exact_share:.1f}" if c.vanilla else "-"
            counts = f"{c.vanilla:>8}{c.reproduced:>8}{c.differing:>8}{c.missing:>8}{c.extra:>7}"
            return f"{name:<26}{counts}{share:>9}"

        for kind in RecipeType:
            if kind.value in self.by_type:
                lines.append(row(kind.value, self.by_type[kind.value]))
        lines.append(row("crafting (shaped+shapeless)", self.crafting))
        lines.append(row("cooking (smelting family)", self.cooking))
        lines.append(row("total", self.total))
        if self.vanilla_skipped:
            skipped = ", ".join(f"{k} {v}" for k, v in sorted(self.vanilla_skipped.items()))
            lines.append(f"vanilla special recipes skipped: {skipped}")
        tags = self.tag_usage
        lines.append(
            f"tag usage: vanilla writes a tag in {tags.vanilla_tags} ingredients of matched recipes; "
            f"the rule set writes the same tag in {tags.same_tag}, another tag in {tags.other_tag}, "
            f"items in {tags.items_instead}; a tag where vanilla lists items: {tags.rule_set_only}"
        )
        if details:
            for entry in self.differing:
                lines.append(
                    f"  differing {entry['type']} {entry['vanilla']} ~ {entry['rule_set']}: "
                    + "; ".join(entry["reasons"])
                )
            lines += [f"  missing   {e['type']} {e['vanilla']}" for e in self.missing]
            lines += [f"  extra     {e['type']} {e['rule_set']}" for e in self.extra]
            lines += [
                f"  tag       {m['recipe']}: vanilla {m['vanilla']}, rule set {m['rule_set']}"
                for m in tags.mismatches
            ]
        elif self.differing or self.missing or self.extra or tags.mismatches:
            lines.append("(--details lists every differing, missing and extra recipe and tag mismatch)")
        return "\n".join(lines)


def _tag_usage(pairs: Iterable[tuple[Recipe, Recipe]], usage: TagUsage) -> None:
    for vanilla, ours in pairs:
        ours_by_options = {ing.options: ing for ing in ours.ingredients}
        for ing in vanilla.ingredients:
            theirs_tags = [s for s in ing.source if s.startswith("#")]
            match = ours_by_options.get(ing.options)
            our_tags = [s for s in match.source if s.startswith("#")] if match else []
            if not theirs_tags:
                if our_tags:
                    usage.rule_set_only += 1
                    usage.mismatches.append(
                        {
                            "recipe": vanilla.id,
                            "vanilla": ing.label,
                            "rule_set": match.label if match else "-",
                        }
                    )
                continue
            usage.vanilla_tags += 1
            if match is not None and set(theirs_tags) == set(our_tags):
                usage.same_tag += 1
                continue
            if our_tags:
                usage.other_tag += 1
            else:
                usage.items_instead += 1
            usage.mismatches.append(
                {"recipe": vanilla.id, "vanilla": ing.label, "rule_set": match.label if match else "-"}
            )


def compare(
    rules: RuleSet, vanilla: RuleSet, vanilla_path: str = "", skipped: Mapping[str, int] | None = None
) -> VanillaComparison:
    """Match ``vanilla``'s recipes against ``rules``' by content. See the module docstring."""
    by_type: dict[str, TypeCounts] = {}
    ours_by_signature: dict[tuple[Any, ...], list[Recipe]] = {}
    for recipe in sorted(rules.recipes.values(), key=lambda r: r.id):
        ours_by_signature.setdefault(signature(recipe), []).append(recipe)
    used: set[str] = set()
    reproduced: list[tuple[Recipe, Recipe]] = []
    unmatched: list[Recipe] = []
    vanilla_recipes = sorted(vanilla.recipes.values(), key=lambda r: r.id)
    for recipe in vanilla_recipes:
        by_type.setdefault(recipe.type.value, TypeCounts()).vanilla += 1
        candidates = [r for r in ours_by_signature.get(signature(recipe), []) if r.id not in used]
        if candidates:
            used.add(candidates[0].id)
            reproduced.append((recipe, candidates[0]))
            by_type[recipe.type.value].reproduced += 1
        else:
            unmatched.append(recipe)

    differing: list[dict[str, Any]] = []
    missing: list[dict[str, str]] = []
    differing_pairs: list[tuple[Recipe, Recipe]] = []
    for recipe in unmatched:
        family = recipe.type.family
        candidates = [
            r
            for r in rules.recipes_by_result.get(recipe.result, ())
            if r.id not in used and r.type.family == family
        ]
        if candidates:
            best = max(sorted(candidates, key=lambda r: r.id), key=lambda r: _similarity(recipe, r))
            used.add(best.id)
            differing_pairs.append((recipe, best))
            by_type[recipe.type.value].differing += 1
            differing.append(
                {
                    "type": recipe.type.value,
                    "vanilla": recipe.id,
                    "rule_set": best.id,
                    "reasons": differences(recipe, best),
                }
            )
        else:
            by_type[recipe.type.value].missing += 1
            missing.append({"type": recipe.type.value, "vanilla": recipe.id, "recipe": recipe.describe()})

    extra = []
    for recipe in sorted(rules.recipes.values(), key=lambda r: r.id):
        if recipe.id not in used:
            by_type.setdefault(recipe.type.value, TypeCounts()).extra += 1
            extra.append({"type": recipe.type.value, "rule_set": recipe.id, "recipe": recipe.describe()})

    usage = TagUsage()
    _tag_usage(reproduced + differing_pairs, usage)
    return VanillaComparison(
        rule_set=rules.name,
        vanilla_path=vanilla_path,
        by_type=by_type,
        reproduced=[(v.id, o.id) for v, o in reproduced],
        differing=differing,
        missing=missing,
        extra=extra,
        vanilla_skipped=dict(skipped or {}),
        tag_usage=usage,
    )


def load_vanilla(path: Path | str) -> tuple[RuleSet, dict[str, int]]:
    """A vanilla data pack folder, a data pack .zip or a client .jar as a rule set (prefix ``minecraft:``),
    and the special recipes loading skipped, by type.

    A folder with ``recipes/`` at its top is read in place; anything else (``data/minecraft/...`` layouts,
    archives) goes through the data-pack importer into a temporary folder.
    """
    path = Path(path)
    if path.is_dir() and (path / "recipes").is_dir():
        rules, report = load_rule_set_from(path, prefix="minecraft:")
        return rules, report.skipped_by_type
    if not path.exists():
        raise VanillaCheckError(
            path, "no such file or folder; give a vanilla data pack folder or a Minecraft client .jar"
        )
    from craft_rules.importers import import_datapack  # the importer knows every pack layout

    with tempfile.TemporaryDirectory(prefix="tradecraft-vanilla-") as tmp:
        import_datapack(path, "vanilla", tmp)
        rules, report = load_rule_set_from(Path(tmp) / "vanilla", prefix="minecraft:")
    return rules, report.skipped_by_type


def check_vanilla(rule_set: str | Path, vanilla_path: str | Path) -> VanillaComparison:
    """Compare the rule set named (or at) ``rule_set`` with the vanilla data at ``vanilla_path``."""
    rules = load_rule_set(rule_set)
    vanilla, skipped = load_vanilla(vanilla_path)
    if not vanilla.recipes:
        raise VanillaCheckError(
            vanilla_path, "holds no recipes the loader understands; give a vanilla data pack folder or a .jar"
        )
    return compare(rules, vanilla, str(vanilla_path), skipped)
