"""One item as the rule set describes it: name, the recipes that make and use it, tags, fuel."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from craft_rules.crafting import fmt_qty
from craft_rules.model import RuleSet
from craft_rules.plan_inputs import UnknownItemError


@dataclass(frozen=True)
class ItemDetails:
    item: str
    name: str
    category: str | None
    made_by: tuple[str, ...]
    used_by: tuple[str, ...]
    tags: tuple[str, ...]
    burn_ticks: int | None
    smelts_per_unit: Fraction | None
    fuel_remainder: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "name": self.name,
            "category": self.category,
            "made_by": list(self.made_by),
            "used_by": list(self.used_by),
            "tags": ["#" + t for t in self.tags],
            "fuel": None
            if self.burn_ticks is None
            else {
                "burn_ticks": self.burn_ticks,
                "smelts_per_unit": fmt_qty(self.smelts_per_unit or Fraction(0)),
                "remainder": self.fuel_remainder,
            },
        }


def item_info(rules: RuleSet, item: str) -> ItemDetails:
    """What the rule set knows of one item: its name, the recipes that make and use it, its tags and fuel."""
    item = rules.canonical(item)
    if item not in rules.items:
        raise UnknownItemError(
            f"{item!r} is not an item of rule set {rules.name}; check the spelling (ids look like "
            f"'oak_planks')",
            item=item,
        )
    info = rules.items[item]
    ticks = rules.fuels.burn_ticks.get(item)
    return ItemDetails(
        item=item,
        name=info.name,
        category=info.category,
        made_by=tuple(sorted(r.id for r in rules.recipes_by_result.get(item, ()))),
        used_by=tuple(
            sorted(
                r.id
                for r in rules.recipes_by_input.get(item, ())
                if any(item in ing.options for ing in r.ingredients)
            )
        ),
        tags=rules.tags_of_item.get(item, ()),
        burn_ticks=ticks,
        smelts_per_unit=Fraction(ticks, rules.fuels.smelt_ticks) if ticks else None,
        fuel_remainder=rules.fuels.remainders.get(item) if ticks else None,
    )
