"""Task instance validation, difficulty and seeded generation.

An instance is **valid** when
  1. it has at least two players and as many targets as hands;
  2. every item in it belongs to the rule set, every count is a positive integer, every target is one item;
  3. the union of all initial hands suffices to craft each target on its own, within one craft phase;
  4. no player can craft its target from its own initial hand (trading is necessary).

**Difficulty** (recorded per player, and for the instance as the hardest player's figures):
  - ``depth``: the longest chain of crafts in the planner's plan from the pooled hands;
  - ``craft_steps``: the number of crafts in that plan;
  - ``units_from_others`` / ``distinct_from_others``: the fewest item units (and distinct items) the player
    must obtain from the other players' initial hands, at least cost;
  - ``min_trades``: the fewest trades that can bring those items in: one trade can carry any multiset from
    one partner, so this is the fewest partners whose hands cover the needed items (1 in two-player games);
  - ``score``: depth + craft_steps / 2 + units_from_others / 2 + (min_trades - 1), the ordering key behind the
    ``level`` label (easy < 4 <= medium < 7 <= hard).

Generation expands each target's recipe tree a random number of levels (seeded), so hands hold a mix of
raw materials and intermediates (planks next to raw iron), splits each target's bill between its owner and
the others so that the owner always lacks something, adds distractor items, and keeps only instances that
pass validation, spreading targets over crafting depths from easy to hard.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from craft_rules.model import Recipe, RecipeType, RuleSet
from craft_rules.planner import Planner, planner_for
from craft_rules.tasks import TaskInstance, mode_for_players


@dataclass
class PlayerDifficulty:
    depth: int
    craft_steps: int
    units_from_others: int
    distinct_from_others: int
    min_trades: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class InstanceReport:
    id: str
    ruleset: str
    mode: str
    valid: bool
    reasons: list[str] = field(default_factory=list)
    players: list[PlayerDifficulty] = field(default_factory=list)

    @property
    def difficulty(self) -> dict[str, Any]:
        if not self.players:
            return {}
        hardest = {
            key: max(getattr(p, key) for p in self.players)
            for key in ("depth", "craft_steps", "units_from_others", "distinct_from_others", "min_trades")
        }
        score = (
            hardest["depth"]
            + hardest["craft_steps"] / 2
            + hardest["units_from_others"] / 2
            + (hardest["min_trades"] - 1)
        )
        level = "easy" if score < 4 else "medium" if score < 7 else "hard"
        return {**hardest, "score": round(score, 2), "level": level}

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ruleset": self.ruleset,
            "mode": self.mode,
            "valid": self.valid,
            "reasons": self.reasons,
            "difficulty": self.difficulty,
            "players": [p.as_dict() for p in self.players],
        }


def _fraction_hand(hand: Mapping[str, int]) -> dict[str, Fraction]:
    return {item: Fraction(n) for item, n in hand.items() if n}


def min_trades(needed: Iterable[str], partner_hands: Mapping[int, Mapping[str, int]]) -> int:
    """Fewest partners whose hands together hold every needed item (exact set cover: N is tiny)."""
    needed_set = set(needed)
    if not needed_set:
        return 0
    partners = list(partner_hands)
    for size in range(1, len(partners) + 1):
        for group in itertools.combinations(partners, size):
            covered: set[str] = set()
            for seat in group:
                covered |= {i for i, n in partner_hands[seat].items() if n > 0}
            if needed_set <= covered:
                return size
    return len(partners)


def assess_instance(rules: RuleSet, instance: TaskInstance, planner: Planner | None = None) -> InstanceReport:
    """Validate ``instance`` and measure its difficulty; never raises for a bad instance."""
    planner = planner or planner_for(rules)
    report = InstanceReport(instance.id, instance.ruleset, instance.mode, valid=True)
    reasons = report.reasons
    if len(instance.hands) < 2:
        reasons.append("an instance needs at least two players")
    if len(instance.hands) != len(instance.targets):
        reasons.append(f"{len(instance.hands)} hands but {len(instance.targets)} targets")
    expected_mode = mode_for_players(len(instance.hands))
    if instance.mode.startswith("1p") and instance.mode != expected_mode:
        reasons.append(f"mode {instance.mode} does not fit {len(instance.hands)} players ({expected_mode})")
    for seat, (hand, target) in enumerate(zip(instance.hands, instance.targets, strict=False)):
        for item, count in [*hand.items(), *target.items()]:
            if item not in rules.items:
                reasons.append(f"player {seat}: unknown item {item!r} in rule set {rules.name}")
            if not isinstance(count, int) or count <= 0:
                reasons.append(f"player {seat}: count of {item} must be a positive integer")
        if len(target) != 1:
            reasons.append(f"player {seat}: a target is exactly one item, got {len(target)}")
    if reasons:
        report.valid = False
        return report

    pooled: dict[str, Fraction] = {}
    for hand in instance.hands:
        for item, count in hand.items():
            pooled[item] = pooled.get(item, Fraction(0)) + count
    for seat, target in enumerate(instance.targets):
        own = _fraction_hand(instance.hands[seat])
        if planner.can_craft(own, target):
            reasons.append(f"player {seat} can craft its target {_fmt(target)} from its own hand")
            continue
        pooled_plan = planner.plan(pooled, target, find_missing=False)
        if not pooled_plan.craftable:
            reasons.append(f"player {seat}: the pooled hands cannot craft its target {_fmt(target)}")
            continue
        others = {other: hand for other, hand in enumerate(instance.hands) if other != seat}
        others_pool: dict[str, int] = {}
        for hand in others.values():
            for item, count in hand.items():
                others_pool[item] = others_pool.get(item, 0) + count
        needed = planner.missing(own, target, available=others_pool)
        if needed is None:
            reasons.append(f"player {seat}: the other players cannot supply what its target needs")
            continue
        report.players.append(
            PlayerDifficulty(
                depth=pooled_plan.depth,
                craft_steps=pooled_plan.craft_steps,
                units_from_others=sum(needed.values()),
                distinct_from_others=len(needed),
                min_trades=min_trades(needed, others),
            )
        )
    report.valid = not reasons
    if not report.valid:
        report.players = []
    return report


def _fmt(target: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {item}" for item, n in target.items())


# --- generation ------------------------------------------------------------------------------------


class _TreeExpander:
    """Expands a target into a bill of items by walking its recipe tree a random number of levels."""

    def __init__(self, rules: RuleSet, rng: random.Random, base_items: frozenset[str]):
        self.rules = rules
        self.rng = rng
        self.base_items = base_items

    # a recipe that needs more input units than this per unit of output (9 nuggets -> 1 ingot) is not
    # expanded: hands of 36 gold nuggets make poor games
    MAX_UNITS_PER_OUTPUT = 4

    def _usable(self, recipe: Recipe, above: frozenset[str]) -> bool:
        if recipe.type is RecipeType.SMITHING_TRANSFORM:
            return False
        if sum(ing.count for ing in recipe.ingredients) > self.MAX_UNITS_PER_OUTPUT * recipe.count:
            return False
        # never recurse into an item we are already making (iron block <-> iron ingot loops)
        return not any(set(ing.options) <= above for ing in recipe.ingredients)

    def expand(self, item: str, amount: Fraction, levels: int, above: frozenset[str]) -> dict[str, Fraction]:
        recipes = [r for r in self.rules.recipes_by_result.get(item, ()) if self._usable(r, above | {item})]
        if levels <= 0 or not recipes or (item in self.base_items and self.rng.random() < 0.7):
            return {item: amount}
        recipe = self.rng.choice(sorted(recipes, key=lambda r: r.id))
        runs = amount / recipe.count
        bill: dict[str, Fraction] = {}
        for ing in recipe.ingredients:
            options = [o for o in ing.options if o not in above and o != item] or list(ing.options)
            choice = self.rng.choice(sorted(options))
            sub_levels = levels - 1 if self.rng.random() < 0.9 else 0
            for sub, qty in self.expand(choice, ing.count * runs, sub_levels, above | {item}).items():
                bill[sub] = bill.get(sub, Fraction(0)) + qty
        if recipe.burns_fuel:
            fuel = self._fuel()
            per_run = self.rules.fuels.units_per_run(fuel)
            bill[fuel] = bill.get(fuel, Fraction(0)) + runs * per_run
        return bill

    def _fuel(self) -> str:
        preferred = [
            f for f in ("coal", "charcoal", "oak_planks", "stick") if f in self.rules.fuels.burn_ticks
        ]
        return self.rng.choice(preferred or sorted(self.rules.fuels.burn_ticks))


# Items a survival player never holds (creative-only or technical blocks): never dealt, never targets.
UNOBTAINABLE = frozenset(
    {
        "bedrock",
        "barrier",
        "light",
        "structure_void",
        "structure_block",
        "jigsaw",
        "debug_stick",
        "command_block",
        "chain_command_block",
        "repeating_command_block",
        "command_block_minecart",
        "knowledge_book",
        "petrified_oak_slab",
        "spawner",
        "end_portal_frame",
        "reinforced_deepslate",
        "budding_amethyst",
        "farmland",
        "dirt_path",
        "player_head",
        "frogspawn",
        "air",
    }
)


def _obtainable(item: str) -> bool:
    return item not in UNOBTAINABLE and not item.endswith("_spawn_egg") and not item.startswith("infested_")


def base_items(rules: RuleSet) -> frozenset[str]:
    """Raw materials a player could hold: obtainable items no recipe makes, that some recipe uses,
    plus the rule set's declared starting items."""
    made = set(rules.recipes_by_result)
    used = set(rules.recipes_by_input)
    raw = {i for i in rules.items if i not in made and i in used and _obtainable(i)}
    return frozenset(raw | set(rules.starting_items))


def candidate_targets(rules: RuleSet, planner: Planner, max_depth: int = 6) -> dict[int, list[str]]:
    """Craftable items grouped by the depth of their cheapest plan from base items."""
    by_depth: dict[int, list[str]] = {}
    for item in sorted(rules.recipes_by_result):
        if item in rules.starting_items or not _obtainable(item):
            continue
        depth = planner.item_levels.get(item)
        if depth is not None and 1 <= depth <= max_depth:
            by_depth.setdefault(depth, []).append(item)
    return by_depth


def generate_instances(
    rules: RuleSet,
    players: int,
    count: int,
    seed: int,
    id_prefix: str | None = None,
    max_attempts: int = 200,
) -> list[TaskInstance]:
    """``count`` valid instances with targets spread over crafting depths, reproducible for a seed."""
    rng = random.Random(seed)
    planner = planner_for(rules)
    bases = base_items(rules)
    expander = _TreeExpander(rules, rng, bases)
    by_depth = candidate_targets(rules, planner)
    depths = sorted(by_depth)
    if not depths:
        raise ValueError(f"rule set {rules.name} has no craftable targets")
    mode = mode_for_players(players)
    distractor_pool = sorted(bases - set(rules.starting_items)) or sorted(bases)
    out: list[TaskInstance] = []
    seen: set[tuple[str, ...]] = set()
    for index in range(count):
        depth = depths[index * len(depths) // count]  # easy to hard across the set
        for _ in range(max_attempts):
            targets = [rng.choice(by_depth[depth])]
            while len(targets) < players:
                other_depth = rng.choice(depths[: max(1, depths.index(depth) + 1)])
                pick = rng.choice(by_depth[other_depth])
                if pick not in targets:
                    targets.append(pick)
            key = tuple(targets)
            if key in seen:
                continue
            hands = _deal(rules, expander, targets, distractor_pool, rng, planner, index / max(1, count - 1))
            instance = TaskInstance(
                id=f"{id_prefix or rules.name}/{mode}/generated#{index}",
                ruleset=rules.name,
                mode=mode,
                hands=tuple(hands),
                targets=tuple({t: 1} for t in targets),
            )
            if any(t in hand for t in targets for hand in hands):
                continue  # a target dealt as is makes a trivial game
            report = assess_instance(rules, instance, planner)
            if report.valid:
                seen.add(key)
                out.append(dataclasses.replace(instance, difficulty=report.difficulty))
                break
        else:
            raise RuntimeError(
                f"could not generate a valid instance at depth {depth} after {max_attempts} tries"
            )
    return out


def _deal(
    rules: RuleSet,
    expander: _TreeExpander,
    targets: list[str],
    distractors: list[str],
    rng: random.Random,
    planner: Planner,
    hardness: float,
) -> list[dict[str, int]]:
    players = len(targets)
    hands: list[dict[str, int]] = [{} for _ in range(players)]

    def give(seat: int, item: str, n: int) -> None:
        if n > 0:
            hands[seat][item] = hands[seat].get(item, 0) + n

    for owner, target in enumerate(targets):
        # later instances expand their targets closer to raw materials: easy to hard across the set
        full = planner.item_levels.get(target, 1)
        levels = max(1, round(full * (0.3 + 0.7 * hardness) + rng.uniform(-0.5, 0.5)))
        bill = {i: math.ceil(q) for i, q in expander.expand(target, Fraction(1), levels, frozenset()).items()}
        items = sorted(bill)
        rng.shuffle(items)
        # the owner keeps a share of the bill but always lacks at least one item
        keep = rng.randint(0, max(0, len(items) - 1))
        for item in items[:keep]:
            give(owner, item, bill[item])
        for item in items[keep:]:
            partner = rng.choice([s for s in range(players) if s != owner])
            give(partner, item, bill[item])
    for seat in range(players):
        for item in rng.sample(distractors, k=min(len(distractors), rng.randint(0, 2))):
            give(seat, item, rng.randint(1, 3))
    # an owner who can still craft its target alone hands one needed item over to a partner
    for owner, target in enumerate(targets):
        own = _fraction_hand(hands[owner])
        if hands[owner] and planner.can_craft(own, {target: 1}):
            item = rng.choice(sorted(hands[owner]))
            partner = rng.choice([s for s in range(players) if s != owner])
            give(partner, item, hands[owner].pop(item))
    return hands
