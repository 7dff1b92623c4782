"""Worked examples of exact crafting (craft_rules.crafting): fractional runs, the tag and fuel choice
rules, fuel burning and remainders, and typed errors that name what is short.

Most examples use a small rule set written to tmp_path in the data-pack layout; the issue's examples
also run on the shipped minecraft rule set when it is installed.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from craft_rules.crafting import (
    CraftError,
    InsufficientItemsError,
    InvalidChoiceError,
    InvalidRunsError,
    NoFuelError,
    UnknownRecipeError,
    craft,
    floor_hand,
    max_runs,
    parse_runs,
    pick_fuel,
)
from craft_rules.model import RuleSet

# --- fractional runs --------------------------------------------------------------------------------


def test_quarter_run_of_torch_uses_quarters(mini: RuleSet) -> None:
    result = craft(mini, {"coal": F(1), "stick": F(1)}, "torch", F(1, 4))
    assert result.consumed == {"coal": F(1, 4), "stick": F(1, 4)}
    assert result.produced == {"torch": F(1)}
    assert result.hand == {"coal": F(3, 4), "stick": F(3, 4), "torch": F(1)}


def test_half_plank_makes_one_stick_and_the_torch_follows(mini: RuleSet) -> None:
    # the example: 1 planks + 1 coal -> 1 torch within one phase
    hand = {"planks": F(1), "coal": F(1)}
    hand = craft(mini, hand, "stick", F(1, 8)).hand  # 1/4 plank -> 1/2 stick
    assert hand == {"planks": F(3, 4), "coal": F(1), "stick": F(1, 2)}
    hand = craft(mini, hand, "torch", "1/4").hand
    assert hand == {"planks": F(3, 4), "coal": F(3, 4), "stick": F(1, 4), "torch": F(1)}
    assert floor_hand(hand) == {"torch": 1}


@pytest.mark.parametrize(
    ("raw", "expected"), [(1, F(1)), ("1/4", F(1, 4)), ("0.25", F(1, 4)), (0.5, F(1, 2)), (F(2, 3), F(2, 3))]
)
def test_run_amounts_accept_ints_strings_floats_and_fractions(raw: object, expected: F) -> None:
    assert parse_runs(raw) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", [0, -1, "-1/2", "abc", "1/0", None, F(1, 10**7), 10**7])
def test_bad_run_amounts_are_typed_errors(mini: RuleSet, raw: object) -> None:
    with pytest.raises(InvalidRunsError) as err:
        craft(mini, {"coal": F(1), "stick": F(1)}, "torch", raw)  # type: ignore[arg-type]
    assert err.value.code == "invalid_runs"


def test_crafting_does_not_change_the_input_hand(mini: RuleSet) -> None:
    hand = {"coal": F(1), "stick": F(1)}
    craft(mini, hand, "torch", 1)
    assert hand == {"coal": F(1), "stick": F(1)}


# --- which option fills a tag / alternatives ingredient ----------------------------------------------


def test_default_rule_takes_held_options_alphabetically(mini: RuleSet) -> None:
    result = craft(mini, {"log_b": F(1), "log_a": F(1)}, "planks", F(3, 2))
    assert result.consumed == {"log_a": F(1), "log_b": F(1, 2)}
    assert result.hand == {"log_b": F(1, 2), "planks": F(6)}


def test_explicit_choice_uses_only_that_item(mini: RuleSet) -> None:
    result = craft(mini, {"log_a": F(1), "log_b": F(1)}, "planks", 1, choices={0: "log_b"})
    assert result.consumed == {"log_b": F(1)}


def test_explicit_choice_short_names_the_chosen_item(mini: RuleSet) -> None:
    with pytest.raises(InsufficientItemsError) as err:
        craft(mini, {"log_a": F(5), "log_b": F(1, 2)}, "planks", 1, choices={0: "log_b"})
    assert err.value.short == {"log_b": F(1, 2)}


def test_alternatives_follow_the_alphabetical_rule_too(mini: RuleSet) -> None:
    # "charcoal" sorts before "coal": the charcoal held goes first, coal tops it up
    result = craft(mini, {"coal": F(1), "charcoal": F(1, 8), "stick": F(1)}, "torch", F(1, 4))
    assert result.consumed == {"charcoal": F(1, 8), "coal": F(1, 8), "stick": F(1, 4)}


@pytest.mark.parametrize(
    ("choices", "fragment"), [({0: "stick"}, "cannot fill"), ({5: "coal"}, "ingredients")]
)
def test_invalid_choices_are_typed_errors(mini: RuleSet, choices: dict[int, str], fragment: str) -> None:
    with pytest.raises(InvalidChoiceError) as err:
        craft(mini, {"coal": F(1), "stick": F(1)}, "torch", 1, choices=choices)
    assert err.value.code == "invalid_choice"
    assert fragment in err.value.message


def test_short_of_a_tag_names_the_tag(mini: RuleSet) -> None:
    with pytest.raises(InsufficientItemsError) as err:
        craft(mini, {"log_a": F(1, 2)}, "planks", 1)
    assert err.value.short == {"#logs": F(1, 2)}
    assert "#logs" in err.value.message


# --- fuel --------------------------------------------------------------------------------------------


def test_smelting_burns_fuel_in_proportion(mini: RuleSet) -> None:
    # one smelt takes 200 ticks; coal burns 1600: two smelts use 1/4 coal
    result = craft(mini, {"raw_iron": F(2), "coal": F(1)}, "iron_ingot", 2)
    assert result.consumed == {"raw_iron": F(2), "coal": F(1, 4)}
    assert result.hand == {"coal": F(3, 4), "iron_ingot": F(2)}


def test_default_fuel_is_the_cheapest_that_covers_the_whole_need(mini: RuleSet) -> None:
    # 2 smelts need 400 ticks: 3 sticks (300) do not cover it, 2 planks (600) do, coal would too
    hand = {"raw_iron": F(2), "stick": F(3), "planks": F(2), "coal": F(1)}
    assert pick_fuel(mini, hand, F(2)) == "planks"
    result = craft(mini, hand, "iron_ingot", 2)
    assert result.consumed == {"raw_iron": F(2), "planks": F(4, 3)}


def test_explicit_fuel_is_used(mini: RuleSet) -> None:
    result = craft(mini, {"raw_iron": F(1), "stick": F(5), "coal": F(1)}, "iron_ingot", 1, fuel="stick")
    assert result.consumed == {"raw_iron": F(1), "stick": F(2)}


def test_a_fuel_that_is_also_the_ingredient_covers_both(mini: RuleSet) -> None:
    result = craft(mini, {"log_a": F(3)}, "charcoal", 1)
    assert result.consumed == {"log_a": F(1) + F(2, 3)}
    assert result.hand == {"log_a": F(4, 3), "charcoal": F(1)}


def test_burning_lava_leaves_the_bucket(mini: RuleSet) -> None:
    result = craft(mini, {"raw_iron": F(10), "lava_bucket": F(1)}, "iron_ingot", 10)
    assert result.consumed == {"raw_iron": F(10), "lava_bucket": F(1, 10)}
    assert result.produced == {"iron_ingot": F(10), "bucket": F(1, 10)}
    assert result.hand == {"lava_bucket": F(9, 10), "iron_ingot": F(10), "bucket": F(1, 10)}


def test_no_fuel_is_a_typed_error(mini: RuleSet) -> None:
    with pytest.raises(NoFuelError) as err:
        craft(mini, {"raw_iron": F(2)}, "iron_ingot", 2)
    assert err.value.code == "no_fuel"
    assert "fuel" in err.value.message


def test_too_little_fuel_names_the_shortfall(mini: RuleSet) -> None:
    with pytest.raises(InsufficientItemsError) as err:
        craft(mini, {"raw_iron": F(2), "stick": F(1)}, "iron_ingot", 2, fuel="stick")
    assert err.value.short == {"stick": F(3)}


def test_campfire_cooking_burns_no_fuel(mini: RuleSet) -> None:
    result = craft(mini, {"potato": F(2)}, "campfire_potato", 2)
    assert result.consumed == {"potato": F(2)}


def test_not_a_fuel_is_rejected(mini: RuleSet) -> None:
    with pytest.raises(InvalidChoiceError):
        craft(mini, {"raw_iron": F(1), "potato": F(9)}, "iron_ingot", 1, fuel="potato")


# --- typed errors naming what is short ----------------------------------------------------------------


def test_short_items_are_named_with_amounts(mini: RuleSet) -> None:
    with pytest.raises(InsufficientItemsError) as err:
        craft(mini, {"iron_ingot": F(1)}, "shears", 1)
    assert err.value.code == "insufficient_items"
    assert err.value.short == {"iron_ingot": F(1)}
    assert err.value.details == {"short": {"iron_ingot": "1"}}
    assert "short of 1 iron_ingot" in err.value.message


def test_several_shortfalls_are_all_named(mini: RuleSet) -> None:
    with pytest.raises(InsufficientItemsError) as err:
        craft(mini, {"coal": F(1, 8)}, "torch", F(1, 2))
    assert err.value.short == {"coal or charcoal": F(3, 8), "stick": F(1, 2)}


def test_unknown_recipe_is_a_typed_error(mini: RuleSet) -> None:
    with pytest.raises(UnknownRecipeError) as err:
        craft(mini, {}, "golden_apple", 1)
    assert err.value.code == "unknown_recipe"
    assert isinstance(err.value, CraftError)


# --- flooring and max_runs ------------------------------------------------------------------------------


def test_floor_hand_rounds_down_and_drops_zeros() -> None:
    assert floor_hand({"a": F(7, 8), "b": F(3, 2), "c": F(2), "d": 4}) == {"b": 1, "c": 2, "d": 4}


def test_max_runs_examples(mini: RuleSet) -> None:
    torch = mini.recipes["torch"]
    assert max_runs(mini, {"coal": F(1), "charcoal": F(1), "stick": F(3)}, torch) == F(2)
    assert max_runs(mini, {"coal": F(1)}, torch) == 0
    smelt = mini.recipes["iron_ingot"]
    assert max_runs(mini, {"raw_iron": F(5), "coal": F(1, 4)}, smelt) == F(2)
    assert max_runs(mini, {"raw_iron": F(5)}, smelt) == 0
    charcoal = mini.recipes["charcoal"]
    assert max_runs(mini, {"log_a": F(5)}, charcoal) == F(3)  # 5 / (1 + 2/3)


def test_running_max_runs_with_the_default_rules_succeeds(mini: RuleSet) -> None:
    hand = {"log_a": F(2), "log_b": F(3), "raw_iron": F(4), "stick": F(7), "coal": F(1, 3)}
    for recipe in mini.recipes.values():
        runs = max_runs(mini, hand, recipe)
        if runs > 0:
            craft(mini, hand, recipe.id, runs)


# --- the shipped minecraft rule set ---------------------------------------------------------------------


def test_minecraft_torch_from_one_plank_and_one_coal(minecraft: RuleSet) -> None:
    hand = {"oak_planks": F(1), "coal": F(1)}
    hand = craft(minecraft, hand, "stick", F(1, 4)).hand  # 1/2 plank -> 1 stick
    hand = craft(minecraft, hand, "torch", F(1, 4)).hand  # 1/4 coal + 1/4 stick -> 1 torch
    assert hand["torch"] == 1
    assert floor_hand(hand) == {"torch": 1}


def _smelting_raw_iron(rules: RuleSet) -> str:
    return next(
        r.id
        for r in rules.recipes_by_result["iron_ingot"]
        if r.type.value == "smelting" and r.ingredients[0].options == ("raw_iron",)
    )


def test_minecraft_shears_from_two_raw_iron_and_coal(minecraft: RuleSet) -> None:
    smelt = _smelting_raw_iron(minecraft)
    hand = craft(minecraft, {"raw_iron": F(2), "coal": F(1)}, smelt, 2).hand
    assert hand == {"coal": F(3, 4), "iron_ingot": F(2)}
    assert craft(minecraft, hand, "shears", 1).hand == {"coal": F(3, 4), "shears": F(1)}


def test_minecraft_two_raw_iron_alone_cannot_smelt(minecraft: RuleSet) -> None:
    smelt = _smelting_raw_iron(minecraft)
    with pytest.raises(NoFuelError):
        craft(minecraft, {"raw_iron": F(2)}, smelt, 2)
