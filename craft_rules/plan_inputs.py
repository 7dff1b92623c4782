"""What a planner question is asked about: hands and targets read from JSON or mappings, and the errors
for bad ones (shared by the planner, the command line and the game's queries)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from craft_rules.errors import TradeCraftError
from craft_rules.model import RuleSet


class PlannerError(TradeCraftError, ValueError):
    """Bad input to the planner. ``code`` is machine-readable; the message says what to do."""

    code = "planner_error"

    def __init__(self, message: str, **details: object):
        super().__init__(self.code, message, details)


class UnknownItemError(PlannerError):
    code = "unknown_item"


class InvalidQuantityError(PlannerError):
    code = "invalid_quantity"


def parse_counts(
    rules: RuleSet, raw: str | Mapping[str, Any], *, integral: bool = False, what: str = "hand"
) -> dict[str, Fraction]:
    """A hand or target from JSON text or a mapping; prefixed names accepted; zero counts dropped.

    Quantities may be ints, Fractions or strings like ``"3/4"``; ``integral`` requires whole numbers.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidQuantityError(
                f'{what} is not valid JSON ({exc.msg}); write it like \'{{"oak_planks": 1, "coal": 1}}\''
            ) from exc
    if not isinstance(raw, Mapping):
        raise InvalidQuantityError(f'{what} must be a JSON object of item -> count, like {{"coal": 1}}')
    out: dict[str, Fraction] = {}
    for name, qty in raw.items():
        item = rules.canonical(str(name))
        if item not in rules.items:
            raise UnknownItemError(
                f"{name!r} is not an item of rule set {rules.name}; "
                f"see `tradecraft craft info --ruleset {rules.name} ITEM` for item ids",
                item=str(name),
            )
        try:
            value = Fraction(qty) if not isinstance(qty, bool) else None
        except (ValueError, TypeError, ZeroDivisionError):
            value = None
        if value is None or value < 0 or (integral and value.denominator != 1):
            kind = "a non-negative whole number" if integral else "a non-negative number like 2 or 1/4"
            raise InvalidQuantityError(f"count of {item} in the {what} must be {kind}, got {qty!r}")
        if value:
            out[item] = out.get(item, Fraction(0)) + value
    return out


def parse_target(rules: RuleSet, raw: str | Mapping[str, Any]) -> dict[str, int]:
    return clean_target(
        rules, {k: int(v) for k, v in parse_counts(rules, raw, integral=True, what="target").items()}
    )


def clean_hand(rules: RuleSet, hand: Mapping[str, Fraction | int]) -> dict[str, Fraction]:
    """A hand the planner works on: Fractions, canonical ids, zeros dropped; negative counts refused."""
    out: dict[str, Fraction] = {}
    for item, qty in hand.items():
        value = Fraction(qty)
        if value < 0:
            raise InvalidQuantityError(f"count of {item} must not be negative, got {qty}")
        if value:
            out[rules.canonical(item)] = value
    return out


def clean_target(rules: RuleSet, target: Mapping[str, int]) -> dict[str, int]:
    """A target the planner works on: whole counts, canonical ids, zeros dropped; an empty one refused."""
    out: dict[str, int] = {}
    for item, qty in target.items():
        if qty < 0 or int(qty) != qty:
            raise InvalidQuantityError(f"target count of {item} must be a whole number, got {qty}")
        if qty:
            out[rules.canonical(item)] = int(qty)
    if not out:
        raise InvalidQuantityError("the target is empty; name at least one item with a positive count")
    return out
