"""The crafting world: rule sets, exact crafting, planning and task instances.

Knows nothing of games, players, storage or the web (see DESIGN.md, "the house").
"""

from craft_rules.crafting import (
    CraftError,
    CraftResult,
    InsufficientItemsError,
    InvalidChoiceError,
    InvalidRunsError,
    NoFuelError,
    UnknownRecipeError,
    craft,
    floor_hand,
    max_runs,
)
from craft_rules.loader import LoadReport, RuleSetError, load_rule_set, load_rule_set_from, rule_set_dirs
from craft_rules.model import FuelTable, Hand, Ingredient, ItemInfo, Recipe, RecipeType, RuleSet

__all__ = [
    "CraftError",
    "CraftResult",
    "FuelTable",
    "Hand",
    "Ingredient",
    "InsufficientItemsError",
    "InvalidChoiceError",
    "InvalidRunsError",
    "ItemInfo",
    "LoadReport",
    "NoFuelError",
    "Recipe",
    "RecipeType",
    "RuleSet",
    "RuleSetError",
    "UnknownRecipeError",
    "craft",
    "floor_hand",
    "load_rule_set",
    "load_rule_set_from",
    "max_runs",
    "rule_set_dirs",
]
