"""Reference values: how much each item in the public hands matters for crafting one target.

The ground truth against which reported V0 / V1 / V2 are scored (DESIGN.md §6). The exact
definition, with worked examples, is in ``docs/reference-values.md``; in short, over the *pool* (all
public hands added together) and the player's target:

* ``U(S)``: the fewest whole items a sub-hand of ``S`` needs to craft the target within one craft
  phase (a small integer program, see :meth:`Planner.min_units`).
* **0** (``no_use``): no recipe chain the pool can run towards the target could use the item (a fuel
  counts only when a recipe on the way cooks; an item whose only route is being crafted into a fuel
  counts only when some smallest sub-hand uses it).
* **10** (``indispensable``): without every unit of the item the pool cannot craft the target.
* otherwise (``replaceable``) ``1 + round(8 * max(harm, share))``, kept within 1..9, where
  ``harm = 1 - U(pool) / U(pool without the item)`` (how much harder the target gets without it) and
  ``share`` = the largest number of units of the item any smallest sub-hand uses, divided by
  ``U(pool)`` (how much the cheapest plans can rest on it).

When the pool cannot craft the target at all, it is first completed with the planner's missing items
(the fewest items from outside, never the target itself); values are then computed on that completed pool,
for the pool's items.

Crafting follows the game's crafting-runs rule (``whole_runs``): under ``whole`` runs a sub-hand must craft
the target with whole runs of every recipe, so 2 planks that make one run of sticks are both
indispensable for a torch, where under ``rational`` runs either plank alone would do.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from craft_rules.model import RuleSet
from craft_rules.planner import Planner, planner_for

NO_USE = "no_use"
INDISPENSABLE = "indispensable"
REPLACEABLE = "replaceable"
CACHE_SIZE = 4096


@dataclass(frozen=True)
class ItemValue:
    item: str
    value: int
    reason: str
    harm: float = 0.0
    share: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "value": self.value,
            "reason": self.reason,
            "harm": round(self.harm, 4),
            "share": round(self.share, 4),
        }


@dataclass(frozen=True)
class ValueReport:
    """Values of every pool item for one target, with the figures they come from."""

    target: Mapping[str, int]
    pool: Mapping[str, int]
    values: Mapping[str, ItemValue]
    min_units: int | None
    smallest_subhand: Mapping[str, int] = field(default_factory=dict)
    completed_with: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": dict(sorted(self.target.items())),
            "pool": dict(sorted(self.pool.items())),
            "min_units": self.min_units,
            "smallest_subhand": dict(sorted(self.smallest_subhand.items())),
            "completed_with": dict(sorted(self.completed_with.items())),
            "values": {item: v.as_dict() for item, v in sorted(self.values.items())},
        }

    def as_values(self) -> dict[str, int]:
        return {item: v.value for item, v in sorted(self.values.items())}


def pool_hands(hands: Mapping[str, int] | Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Add hands together (a single hand is accepted as is); non-positive counts are dropped."""
    if isinstance(hands, Mapping):
        hands = [hands]
    pool: dict[str, int] = {}
    for hand in hands:
        for item, qty in hand.items():
            count = math.floor(qty)
            if count > 0:
                pool[item] = pool.get(item, 0) + count
    return pool


def grade(harm: float, share: float) -> int:
    """The 1..9 grade of a replaceable item (round half up, so it never depends on float ties)."""
    return max(1, min(9, 1 + math.floor(8 * max(harm, share) + 0.5)))


def value_report(
    rules: RuleSet,
    target: Mapping[str, int],
    hands: Mapping[str, int] | Iterable[Mapping[str, int]],
    *,
    whole_runs: bool = False,
) -> ValueReport:
    """Reference values of every item in ``hands`` (one hand or several) for crafting ``target``, under
    the ``whole`` crafting-runs rule when ``whole_runs`` (the game's rule: see the module docstring)."""
    planner = planner_for(rules, whole_runs=whole_runs)
    need = {rules.canonical(k): int(v) for k, v in target.items() if v > 0}
    pool = {rules.canonical(k): v for k, v in pool_hands(hands).items()}
    key = (frozenset(need.items()), frozenset(pool.items()))
    cache = _cache_of(planner)
    with _CACHE_LOCK:
        found = cache.get(key)
    if found is None:
        found = _compute(planner, need, pool)
        with _CACHE_LOCK:
            if len(cache) >= CACHE_SIZE:
                cache.pop(next(iter(cache)))
            cache[key] = found
    return found


def reference_values(
    rules: RuleSet,
    target: Mapping[str, int],
    hands: Mapping[str, int] | Iterable[Mapping[str, int]],
    *,
    whole_runs: bool = False,
) -> dict[str, int]:
    """``{item: 0..10}`` for every item in ``hands`` (see the module docstring for the definition)."""
    return value_report(rules, target, hands, whole_runs=whole_runs).as_values()


_CACHES: dict[int, tuple[Planner, dict[Any, ValueReport]]] = {}
_CACHE_LOCK = threading.Lock()


def _cache_of(planner: Planner) -> dict[Any, ValueReport]:
    with _CACHE_LOCK:
        entry = _CACHES.get(id(planner))
        if entry is None or entry[0] is not planner:
            entry = (planner, {})
            _CACHES[id(planner)] = entry
        return entry[1]


def _completion(planner: Planner, pool: dict[str, int], need: dict[str, int]) -> dict[str, int]:
    """The fewest items from outside that make the target craftable, but never the target items themselves:
    obtaining the target (1 furnace rather than 5 more stones) would leave every pooled item looking
    useless. Falls back to any item when nothing else completes the pool."""
    return planner.missing(pool, need, never=need) or {}


def _compute(planner: Planner, need: dict[str, int], pool: dict[str, int]) -> ValueReport:
    completed: dict[str, int] = {}
    base = planner.min_units(need, pool)
    full = dict(pool)
    if base is None:
        completed = _completion(planner, pool, need)
        for item, qty in completed.items():
            full[item] = full.get(item, 0) + qty
        base = planner.min_units(need, full)
    if base is None:  # the target cannot be made at all: only "no use" can be said
        return ValueReport(need, pool, {i: ItemValue(i, 0, NO_USE) for i in pool}, None, {}, completed)
    units, subhand = base
    relevant = planner.relevant_items(need, full)
    # items whose only route is being crafted into a fuel: worth something only if a cheapest way uses them
    direct = planner.relevant_items(need, full, through_crafted_fuel=False) | set(subhand)
    values: dict[str, ItemValue] = {}
    for item in sorted(pool):
        if item not in relevant:
            values[item] = ItemValue(item, 0, NO_USE)
            continue
        if item in subhand:
            reduced = planner.min_units(need, {k: v for k, v in full.items() if k != item})
            if reduced is None:
                values[item] = ItemValue(item, 10, INDISPENSABLE, 1.0, 1.0)
                continue
            harm = max(0.0, 1 - units / reduced[0])
        else:  # the smallest sub-hand does without it, so removing it costs nothing
            harm = 0.0
        favoured = planner.min_units(need, full, favour=item)
        share = favoured[1].get(item, 0) / units if favoured and favoured[0] == units else 0.0
        if item not in direct and share == 0:  # e.g. iron for a torch, via a smithing table burnt
            values[item] = ItemValue(item, 0, NO_USE)
            continue
        values[item] = ItemValue(item, grade(harm, share), REPLACEABLE, harm, min(share, 1.0))
    return ValueReport(need, pool, values, units, subhand, completed)
