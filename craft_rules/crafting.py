"""Exact crafting with rational quantities.

A craft runs one recipe ``runs`` times, where ``runs`` is any positive rational: 1/4 of
"1 coal + 1 stick -> 4 torch" uses 1/4 coal and 1/4 stick and gives 1 torch. Fuel-burning recipes
(smelting, blasting, smoking) also burn ``runs * smelt_ticks / burn_ticks`` units of one fuel.

The **crafting-runs rule** (:data:`CraftingRuns`) decides which run amounts a game accepts:
``rational`` (the paper's text: "items can be used in rational numbers") accepts any positive
rational; ``whole`` (the authors' original server) accepts only whole runs of a recipe, while fuel is
still burnt in proportion (one smelt burns 1/8 coal). Under ``whole`` a torch needs a whole run of
"1 coal + 1 stick -> 4 torch", so 1 coal and 1 stick, and a stick needs a whole run of
"2 planks -> 4 sticks"; the 1/4-run shortcuts are refused with :class:`WholeRunsError`.

Which concrete item fills an ingredient that allows several (a tag, or a list of alternatives):
- an explicit choice ``choices[i] = item`` for ingredient index ``i`` uses that item only;
- otherwise the **default rule**: the held options are used in alphabetical order of item id,
  each as far as it lasts, until the ingredient's need is met.
Which fuel burns: an explicit ``fuel``; otherwise the held fuel with the smallest burn time that
covers the whole need on its own (cheap fuels first: sticks before planks before coal), ties by id.

At the end of a craft phase every quantity is rounded down by :func:`floor_hand`.

"What can this hand run" has one answer, :func:`craft_rules.possible_crafts.runnable_recipes` (with
:func:`clamp_runs` and the one run limit :data:`MAX_RUNS`), so that every caller agrees with what
:func:`craft` accepts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from craft_rules.errors import TradeCraftError
from craft_rules.model import Hand, Recipe, RuleSet
from craft_rules.number_text import rational_number

MAX_RUNS = 10**6
"""The one run limit: a craft runs at most ``MAX_RUNS`` times, in steps of at least ``1/MAX_RUNS``."""

RUNS_TEXT_MAX_CHARS = 40
"""Longest run-amount text read: checked before any conversion, so no text costs more than a tiny parse."""
RUNS_TEXT_MAX_EXPONENT = 12
"""Largest decimal exponent in a run amount ("1e-3"): ``Fraction("1e10000000")`` alone would take seconds."""
MAX_HAND_DENOMINATOR = 10**18
"""A craft may not leave any quantity finer than ``1/MAX_HAND_DENOMINATOR`` in the hand: crafts with run
amounts of distinct denominators multiply the hand's denominators, and unbounded they grow past what a
view can print. Ordinary play stays far below it (it allows three crafts with coprime six-digit
denominators in one phase); the craft phase's end floors every quantity, so the bound is per phase."""


class CraftError(TradeCraftError, ValueError):
    """An illegal craft. ``code`` is machine-readable; the message says what to do."""

    code = "craft_error"

    def __init__(self, message: str, **details: object):
        super().__init__(self.code, message, details)


class UnknownRecipeError(CraftError):
    code = "unknown_recipe"


class InvalidRunsError(CraftError):
    code = "invalid_runs"


class WholeRunsError(InvalidRunsError):
    """A fractional run amount in a game whose crafting-runs rule is ``whole``."""

    code = "whole_runs_only"


class InvalidChoiceError(CraftError):
    code = "invalid_choice"


class InsufficientItemsError(CraftError):
    """``short`` maps each item (or ``#tag`` / ``fuel``) to how much more is needed."""

    code = "insufficient_items"

    def __init__(self, message: str, short: Mapping[str, Fraction]):
        super().__init__(message, short={k: str(v) for k, v in short.items()})
        self.short = dict(short)


class NoFuelError(CraftError):
    code = "no_fuel"


CraftingRuns = Literal["rational", "whole"]
"""The crafting-runs rule of a game: ``rational`` run amounts, or ``whole`` runs only."""

CRAFTING_RUNS: tuple[CraftingRuns, ...] = ("rational", "whole")


@dataclass(frozen=True, slots=True)
class CraftResult:
    hand: dict[str, Fraction]
    consumed: dict[str, Fraction]
    produced: dict[str, Fraction]


def fmt_qty(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


class TooFinelyDividedError(CraftError):
    code = "too_finely_divided"


def _runs_from_text(runs: str) -> Fraction:
    """A run amount's text read by the one number grammar (craft_rules/number_text.py: ASCII digits, no
    spaces, "_" or "+"), bounded in length and exponent before the exact value is built."""
    if len(runs) > RUNS_TEXT_MAX_CHARS:
        raise InvalidRunsError(
            f"run amount text has {len(runs)} characters; write it in at most {RUNS_TEXT_MAX_CHARS}, "
            "like 2, 0.25 or 1/4"
        )
    exponent = runs.lower().partition("e")[2].lstrip("+-")
    if exponent.isascii() and exponent.isdigit() and int(exponent[-4:]) > RUNS_TEXT_MAX_EXPONENT:
        raise InvalidRunsError(
            f"run amount {runs!r} has an exponent beyond +-{RUNS_TEXT_MAX_EXPONENT}; "
            "write it like 2, 0.25 or 1/4"
        )
    value = rational_number(runs, RUNS_TEXT_MAX_CHARS)
    if value is None:
        raise InvalidRunsError(
            f"run amount {runs!r} is not a number like 1, 0.25 or 1/4 (ASCII digits, no spaces or signs)"
        )
    return value


def parse_runs(runs: int | str | Fraction, *, whole_runs: bool = False) -> Fraction:
    """A run amount from an int, a Fraction or text ("2", "0.25", "1/4", "1e-3"): positive, at most
    :data:`MAX_RUNS`, in steps of at least ``1/MAX_RUNS``; with ``whole_runs`` only whole numbers (the
    ``whole`` rule). Text and ints are bounded before the exact value is built, so no input costs more
    than a tiny parse."""
    if isinstance(runs, str):
        value = _runs_from_text(runs)
    else:
        if isinstance(runs, int) and not isinstance(runs, bool) and abs(runs) > MAX_RUNS:
            raise InvalidRunsError(f"run amount is too large (at most {MAX_RUNS})")
        try:
            value = Fraction(runs)
        except (ValueError, ZeroDivisionError, TypeError) as exc:
            raise InvalidRunsError(f"run amount {runs!r} is not a number like 1, 0.25 or 1/4") from exc
    if value <= 0:
        raise InvalidRunsError(f"run amount must be positive, got {fmt_qty(value)}")
    if value.denominator > MAX_RUNS or value > MAX_RUNS:
        raise InvalidRunsError(
            f"run amount is too large or too finely divided (at most {MAX_RUNS}, in steps of 1/{MAX_RUNS})"
        )
    if whole_runs and value.denominator != 1:
        raise WholeRunsError(
            f"this game crafts whole runs only: run the recipe 1, 2, 3, ... times, not {fmt_qty(value)}",
            runs=fmt_qty(value),
        )
    return value


def _take_ingredient(
    hand: Mapping[str, Fraction], options: tuple[str, ...], need: Fraction, choice: str | None
) -> tuple[dict[str, Fraction], Fraction]:
    """Pick items for one ingredient. Returns (take, shortfall)."""
    if choice is not None:
        have = hand.get(choice, Fraction(0))
        take = min(have, need)
        return ({choice: take} if take else {}), need - take
    take: dict[str, Fraction] = {}
    remaining = need
    for option in options:  # options are sorted: the documented alphabetical rule
        have = hand.get(option, Fraction(0))
        if have <= 0:
            continue
        used = min(have, remaining)
        take[option] = used
        remaining -= used
        if remaining == 0:
            break
    return take, remaining


def pick_fuel(rules: RuleSet, hand: Mapping[str, Fraction], runs: Fraction) -> str | None:
    """The default fuel for ``runs`` runs of a fuel-burning recipe, or None if no held fuel suffices."""
    candidates = []
    for item, have in hand.items():
        ticks = rules.fuels.burn_ticks.get(item)
        if ticks and have >= runs * rules.fuels.units_per_run(item):
            candidates.append((ticks, item))
    return min(candidates)[1] if candidates else None


def craft(
    rules: RuleSet,
    hand: Hand,
    recipe_id: str,
    runs: int | str | Fraction = 1,
    choices: Mapping[int, str] | None = None,
    fuel: str | None = None,
    *,
    whole_runs: bool = False,
) -> CraftResult:
    """Run ``recipe_id`` ``runs`` times on ``hand``; returns the new hand (the input is not changed).

    ``whole_runs``: the game's crafting-runs rule is ``whole`` (a fractional ``runs`` is refused)."""
    recipe = rules.recipes.get(recipe_id)
    if recipe is None:
        raise UnknownRecipeError(f"no recipe {recipe_id!r} in rule set {rules.name}", recipe=recipe_id)
    amount = parse_runs(runs, whole_runs=whole_runs)
    choices = dict(choices or {})
    for index, item in choices.items():
        if not 0 <= index < len(recipe.ingredients):
            raise InvalidChoiceError(
                f"recipe {recipe_id} has ingredients 0..{len(recipe.ingredients) - 1}, not {index}"
            )
        if item not in recipe.ingredients[index].options:
            raise InvalidChoiceError(
                f"{item} cannot fill ingredient {index} ({recipe.ingredients[index].label}) of {recipe_id}"
            )

    consumed: dict[str, Fraction] = {}
    short: dict[str, Fraction] = {}
    work = dict(hand)
    for index, ing in enumerate(recipe.ingredients):
        take, missing = _take_ingredient(work, ing.options, ing.count * amount, choices.get(index))
        for item, qty in take.items():
            consumed[item] = consumed.get(item, Fraction(0)) + qty
            work[item] = work[item] - qty
        if missing:
            key = choices.get(index) or (ing.source[0] if len(ing.source) == 1 else ing.label)
            short[key] = short.get(key, Fraction(0)) + missing

    produced: dict[str, Fraction] = {recipe.result: recipe.count * amount}
    if recipe.burns_fuel:
        _burn_fuel(rules, recipe, work, amount, fuel, consumed, produced, short)
    if short:
        listing = ", ".join(f"{fmt_qty(q)} {item}" for item, q in sorted(short.items()))
        raise InsufficientItemsError(
            f"cannot run {recipe_id} x{fmt_qty(amount)}: short of {listing}", short=short
        )

    new_hand = dict(hand)
    for item, qty in consumed.items():
        new_hand[item] = new_hand[item] - qty
    for item, qty in produced.items():
        new_hand[item] = new_hand.get(item, Fraction(0)) + qty
    for item in consumed.keys() | produced.keys():
        if new_hand[item].denominator > MAX_HAND_DENOMINATOR:
            raise TooFinelyDividedError(
                f"running {recipe_id} x{fmt_qty(amount)} would leave {item} in parts finer than "
                f"1/{MAX_HAND_DENOMINATOR}; choose a run amount with a smaller denominator, like one your "
                "earlier crafts used",
                item=item,
                runs=fmt_qty(amount),
            )
    return CraftResult({k: v for k, v in new_hand.items() if v}, consumed, produced)


def _burn_fuel(
    rules: RuleSet,
    recipe: Recipe,
    work: dict[str, Fraction],
    amount: Fraction,
    fuel: str | None,
    consumed: dict[str, Fraction],
    produced: dict[str, Fraction],
    short: dict[str, Fraction],
) -> None:
    if fuel is None:
        fuel = pick_fuel(rules, work, amount)
        if fuel is None:
            if not any(item in rules.fuels.burn_ticks for item, q in work.items() if q > 0):
                raise NoFuelError(
                    f"{recipe.id} burns fuel and no fuel is held (coal, charcoal, planks, sticks, ...)",
                    recipe=recipe.id,
                )
            ticks_needed = amount * rules.fuels.smelt_ticks
            short["fuel"] = ticks_needed / rules.fuels.burn_ticks.get("coal", rules.fuels.smelt_ticks * 8)
            return
    elif fuel not in rules.fuels.burn_ticks:
        raise InvalidChoiceError(f"{fuel} is not a fuel in rule set {rules.name}", fuel=fuel)
    need = amount * rules.fuels.units_per_run(fuel)
    have = work.get(fuel, Fraction(0))
    if have < need:
        short[fuel] = short.get(fuel, Fraction(0)) + need - have
        return
    consumed[fuel] = consumed.get(fuel, Fraction(0)) + need
    work[fuel] = have - need
    remainder = rules.fuels.remainders.get(fuel)
    if remainder:
        produced[remainder] = produced.get(remainder, Fraction(0)) + need


def max_runs(
    rules: RuleSet,
    hand: Hand,
    recipe: Recipe,
    choices: Mapping[int, str] | None = None,
    fuel: str | None = None,
) -> Fraction:
    """The largest run amount of ``recipe`` this hand affords (0 if none).

    Ingredients with several options pool them, as the default rule does. Two ingredients that share
    an option are counted conservatively (each against the pooled stock divided by their total need).
    """
    choices = choices or {}
    pooled: dict[tuple[str, ...], int] = {}
    for index, ing in enumerate(recipe.ingredients):
        options = (choices[index],) if index in choices else ing.options
        pooled[options] = pooled.get(options, 0) + ing.count
    best: Fraction | None = None
    for options, count in pooled.items():
        have = sum((hand.get(o, Fraction(0)) for o in options), Fraction(0))
        overlap = sum(c for opts, c in pooled.items() if opts != options and set(opts) & set(options))
        limit = have / (count + overlap)
        best = limit if best is None else min(best, limit)
    best = best if best is not None else Fraction(0)
    if recipe.burns_fuel and best > 0:
        fuels = [fuel] if fuel else [f for f in hand if f in rules.fuels.burn_ticks]
        fuel_limit = Fraction(0)
        for item in fuels:
            per_run = rules.fuels.units_per_run(item)
            held = hand.get(item, Fraction(0))
            # an item that is both ingredient and fuel must cover both uses
            uses = sum(ing.count for ing in recipe.ingredients if item in ing.options)
            fuel_limit = max(fuel_limit, held / (per_run + uses) if uses else held / per_run)
        best = min(best, fuel_limit)
    return best


def clamp_runs(runs: Fraction, *, whole_runs: bool = False) -> Fraction:
    """The largest run amount <= ``runs`` that :func:`craft` accepts (0 when none is).

    At most :data:`MAX_RUNS`, in steps of ``1/MAX_RUNS``; with ``whole_runs``, a whole number. Repeated
    fractional crafts leave quantities with huge denominators: rounding *down* keeps the craft affordable.
    """
    runs = min(runs, Fraction(MAX_RUNS))
    if runs <= 0:
        return Fraction(0)
    if whole_runs:
        return Fraction(math.floor(runs))
    if runs.denominator <= MAX_RUNS:
        return runs
    return Fraction(math.floor(runs * MAX_RUNS), MAX_RUNS)


def floor_hand(hand: Mapping[str, Fraction | int]) -> dict[str, int]:
    """End-of-phase rounding: every quantity rounded down to an integer; zeros dropped."""
    out: dict[str, int] = {}
    for item, qty in hand.items():
        whole = math.floor(qty)
        if whole > 0:
            out[item] = whole
    return out
