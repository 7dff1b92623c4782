"""Task instance validation, difficulty and seeded generation.

Every judgement is made under a **crafting-runs rule** (``rational`` or ``whole``, see
:mod:`craft_rules.crafting`): the one given by the caller (``tradecraft tasks ... --runs``), else the one
the instance records (``"crafting_runs"`` in its file: the rule it was generated for), else ``rational``.

An instance is **valid** (under a rule) when
  1. it has at least two players and as many targets as hands;
  2. every item in it belongs to the rule set, every count is a positive integer, every target is one item;
  3. the union of all initial hands suffices to craft each target on its own, within one craft phase;
  4. no player can craft its target from its own initial hand (trading is necessary).

**Difficulty** (recorded per player, and for the instance as the hardest player's figures):
  - ``depth``: the longest chain of crafts in the planner's plan from the pooled hands;
  - ``craft_steps``: the number of crafts in that plan;
  - ``units_from_others`` / ``distinct_from_others``: the fewest item units (and distinct items) the player
    must obtain from the other players' initial hands, at least cost;
  - ``min_trades``: the fewest *trading steps*, where a step brings one kind of item from one partner (how
    the original game's instances count "the minimum number of trading steps"): the fewest distinct kinds
    the player must obtain (a kind no single partner holds enough of counts once per partner needed).
    One proposal may bundle several kinds, so a quick pair of players can do it in fewer proposals; the
    figure measures how much must be negotiated, and spreads 1, 2, 3+ where partner counting cannot
    (one partner always suffices with two players);
  - ``min_partners``: the fewest partners whose hands hold the items needed at least cost;
  - ``score``: depth + craft_steps / 2 + units_from_others / 2 + (min_trades - 1), the ordering key behind the
    ``level`` label: cut points fitted to how ToM-1 pairs fare in self-play (:mod:`craft_rules.difficulty`,
    docs/difficulty.md), else the original guess (easy < 4 <= medium < 7 <= hard).
And for the instance: ``scarce``, whether the pooled hands cannot craft every target at the same time
(each one alone they can): players then compete for the same items, as the paper describes.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from craft_rules.crafting import CraftingRuns
from craft_rules.difficulty import level_for_score
from craft_rules.errors import TradeCraftError
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
    min_partners: int

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
    crafting_runs: CraftingRuns = "rational"
    scarce: bool = False

    @property
    def difficulty(self) -> dict[str, Any]:
        if not self.players:
            return {}
        keys = (
            "depth",
            "craft_steps",
            "units_from_others",
            "distinct_from_others",
            "min_trades",
            "min_partners",
        )
        hardest: dict[str, Any] = {key: max(getattr(p, key) for p in self.players) for key in keys}
        score = (
            hardest["depth"]
            + hardest["craft_steps"] / 2
            + hardest["units_from_others"] / 2
            + (hardest["min_trades"] - 1)
        )
        # the cut points are measured from bot self-play where calibrated (craft_rules/difficulty.py)
        level = level_for_score(round(score, 2), self.ruleset, len(self.players), self.crafting_runs)
        return {**hardest, "scarce": self.scarce, "score": round(score, 2), "level": level}

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ruleset": self.ruleset,
            "mode": self.mode,
            "crafting_runs": self.crafting_runs,
            "valid": self.valid,
            "reasons": self.reasons,
            "difficulty": self.difficulty,
            "players": [p.as_dict() for p in self.players],
        }


def _fraction_hand(hand: Mapping[str, int]) -> dict[str, Fraction]:
    return {item: Fraction(n) for item, n in hand.items() if n}


def min_partners(needed: Iterable[str], partner_hands: Mapping[int, Mapping[str, int]]) -> int:
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


def trading_steps(taken: Mapping[str, int], partner_hands: Mapping[int, Mapping[str, int]]) -> int:
    """Trading steps to bring ``taken`` in: one per kind, and one more for every further partner a kind
    needs because no single partner holds enough of it (largest holders first)."""
    steps = 0
    for item, units in taken.items():
        held = sorted((hand.get(item, 0) for hand in partner_hands.values()), reverse=True)
        for count in held:
            steps += 1
            units -= count
            if units <= 0:
                break
    return steps


def rule_of(instance: TaskInstance, crafting_runs: CraftingRuns | None = None) -> CraftingRuns:
    """The crafting-runs rule to judge ``instance`` under: the given one, else the one it records."""
    return crafting_runs or instance.crafting_runs or "rational"


def assess_instance(
    rules: RuleSet,
    instance: TaskInstance,
    planner: Planner | None = None,
    *,
    crafting_runs: CraftingRuns | None = None,
) -> InstanceReport:
    """Validate ``instance`` and measure its difficulty under a crafting-runs rule (see
    :func:`rule_of`; a given ``planner`` must plan under that rule); never raises for a bad instance."""
    runs = rule_of(instance, crafting_runs)
    planner = planner or planner_for(rules, whole_runs=runs == "whole")
    with planner.remembering():  # a seat's own hand is planned for up to three times
        return _assess(rules, instance, planner, runs)


def _assess(rules: RuleSet, instance: TaskInstance, planner: Planner, runs: CraftingRuns) -> InstanceReport:
    report = InstanceReport(instance.id, instance.ruleset, instance.mode, valid=True, crafting_runs=runs)
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
            fewest = None
        elif len(needed) == 1 and len(others) == 1:
            fewest = needed  # one kind from the one partner: one trading step, whichever kind it is
        else:
            fewest = planner.fewest_kinds(own, target, others_pool)
        if needed is None or fewest is None:
            reasons.append(f"player {seat}: the other players cannot supply what its target needs")
            continue
        report.players.append(
            PlayerDifficulty(
                depth=pooled_plan.depth,
                craft_steps=pooled_plan.craft_steps,
                units_from_others=sum(needed.values()),
                distinct_from_others=len(needed),
                min_trades=trading_steps(fewest, others),
                min_partners=min_partners(needed, others),
            )
        )
    report.valid = not reasons
    if not report.valid:
        report.players = []
    else:
        report.scarce = not planner.can_craft(pooled, all_targets(instance.targets))
    return report


def all_targets(targets: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Every player's target at once (the same item twice counts twice)."""
    total: dict[str, int] = {}
    for target in targets:
        for item, count in target.items():
            total[item] = total.get(item, 0) + count
    return total


def _fmt(target: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {item}" for item, n in target.items())


DEFAULT_HAND_UNITS = (5, 11)  # the original's public problems: 5 to 50 units a hand, median 9
DEFAULT_TRADES = (1, 2, 3)


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
        depth = planner.graph.item_levels.get(item)
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
    *,
    crafting_runs: CraftingRuns = "rational",
    item_pool: str | None = None,
    hand_units: tuple[int, int] = DEFAULT_HAND_UNITS,
    trades: tuple[int, ...] = DEFAULT_TRADES,
    scarcity: float = 0.0,
    progress: Callable[[int], None] | None = None,
) -> list[TaskInstance]:
    """``count`` valid instances (under ``crafting_runs``), reproducible for a seed.

    ``item_pool``: ``survival`` (default where the rule set has its items, see :data:`ITEM_POOLS`) deals
    hands from a curated pool of common survival items and intermediates, with hands of ``hand_units``
    units (low, high), the k-th instance needing ``trades[k % len(trades)]`` trading steps (the last
    value means "at least") and a share ``scarcity`` of instances where the pooled hands cannot make
    every target at once; ``all`` is the older generator over every raw material, spread over crafting
    depths (it ignores the hand, trade and scarcity options). ``progress`` is called once per instance.
    """
    pool_name = item_pool or ("survival" if set(ITEM_POOLS["survival"]) <= set(rules.items) else "all")
    if pool_name != "all":
        if pool_name not in ITEM_POOLS:
            raise ValueError(
                f"unknown item pool {pool_name!r}; choose one of {', '.join([*ITEM_POOLS, 'all'])}"
            )
        return _generate_from_pool(
            rules,
            players,
            count,
            seed,
            id_prefix,
            crafting_runs=crafting_runs,
            pool=ITEM_POOLS[pool_name],
            hand_units=hand_units,
            trades=trades,
            scarcity=scarcity,
            progress=progress,
        )
    rng = random.Random(seed)
    planner = planner_for(rules, whole_runs=crafting_runs == "whole")
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
            with planner.remembering():  # the deal's own-hand checks are the validator's first ones
                hands = _deal(
                    rules, expander, targets, distractor_pool, rng, planner, index / max(1, count - 1)
                )
                if any(t in hand for t in targets for hand in hands):
                    continue  # a target dealt as is makes a trivial game
                instance = _draft(
                    rules,
                    mode,
                    f"{id_prefix or rules.name}/{mode}/generated#{index}",
                    targets,
                    hands,
                    crafting_runs,
                )
                report = assess_instance(rules, instance, planner)
            if report.valid:
                seen.add(key)
                out.append(dataclasses.replace(instance, difficulty=report.difficulty))
                if progress is not None:
                    progress(1)
                break
        else:
            raise RuntimeError(
                f"could not generate a valid instance at depth {depth} after {max_attempts} tries"
            )
    return out


def _draft(
    rules: RuleSet,
    mode: str,
    instance_id: str,
    targets: Sequence[str],
    hands: Sequence[dict[str, int]],
    crafting_runs: CraftingRuns,
) -> TaskInstance:
    """A generated instance before validation: one unit of each target."""
    return TaskInstance(
        id=instance_id,
        ruleset=rules.name,
        mode=mode,
        hands=tuple(hands),
        targets=tuple({t: 1} for t in targets),
        crafting_runs=crafting_runs,
    )


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
        full = planner.graph.item_levels.get(target, 1)
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


# --- generation from a curated item pool (instances like the original game's) ---------------------

SURVIVAL_POOL: tuple[str, ...] = (
    # wood and stone
    "oak_log",
    "oak_planks",
    "oak_slab",
    "stick",
    "cobblestone",
    "cobblestone_slab",
    "stone",
    # fuels
    "coal",
    "charcoal",
    # ores and metals
    "iron_ore",
    "raw_iron",
    "iron_ingot",
    "iron_nugget",
    "raw_copper",
    "copper_ingot",
    "gold_ore",
    "raw_gold",
    "gold_ingot",
    "diamond",
    # redstone and minerals
    "redstone",
    "redstone_block",
    "quartz",
    "lapis_lazuli",
    # farming and mobs
    "string",
    "leather",
    "wheat",
    "sugar_cane",
    "paper",
    "feather",
    "flint",
    "slime_ball",
    "egg",
    # sand and clay
    "sand",
    "glass",
    "clay_ball",
    "brick",
)
"""Common survival items and their first products: what the original game's hands hold (logs, planks,
sticks, coal, cobblestone, ores and ingots, redstone, string, ...), rather than rare blocks."""

ITEM_POOLS: dict[str, tuple[str, ...]] = {"survival": SURVIVAL_POOL}
MAX_POOL_DEPTH = 4
POOL_FUELS = ("coal", "charcoal", "oak_planks", "oak_log", "stick")


class _PoolWorld:
    """The part of a rule set a curated pool reaches: which items it can make, how deep, and bills."""

    MAX_UNITS_PER_OUTPUT = 9  # an observer takes 9 items; the bill cap keeps hands small
    # building-block variants (slabs, stairs, polished stone, ...) make dull targets: the original's are
    # tools, redstone parts, rails, lanterns, shields, arrows
    DECORATIVE = (
        "_slab",
        "_stairs",
        "_wall",
        "_carpet",
        "_pane",
        "chiseled_",
        "polished_",
        "smooth_",
        "cut_",
        "cracked_",
        "_pillar",
        "_bricks",
        "bricks",
        "terracotta",
        "_dye",
        "granite",
        "diorite",
        "andesite",
    )

    def __init__(self, rules: RuleSet, pool: Iterable[str], whole_runs: bool, rng: random.Random):
        self.rules = rules
        self.pool = frozenset(i for i in pool if i in rules.items)
        self.whole_runs = whole_runs
        self.rng = rng
        self.fuels = [f for f in POOL_FUELS if f in self.pool and f in rules.fuels.burn_ticks]
        # survival crafting: no smithing, no stonecutter variants, nothing dyed, nothing that eats
        # more than a few inputs per output (9 nuggets -> 1 ingot)
        usable = [
            r
            for r in rules.recipes.values()
            if r.type not in (RecipeType.SMITHING_TRANSFORM, RecipeType.STONECUTTING)
            and sum(ing.count for ing in r.ingredients) <= self.MAX_UNITS_PER_OUTPUT * r.count
            and not any(o.endswith("_dye") for ing in r.ingredients for o in ing.options)
            and (self.fuels or not r.burns_fuel)
        ]
        level = dict.fromkeys(self.pool, 0)
        changed = True
        while changed:
            changed = False
            for recipe in usable:
                best = [
                    min((level[o] for o in ing.options if o in level), default=None)
                    for ing in recipe.ingredients
                ]
                if any(b is None for b in best):
                    continue
                new = 1 + max(b for b in best if b is not None)
                if new < level.get(recipe.result, math.inf):
                    level[recipe.result] = new
                    changed = True
        self.level = level
        self.recipes_for: dict[str, list[Recipe]] = {}
        for recipe in sorted(usable, key=lambda r: r.id):
            if all(any(o in level for o in ing.options) for ing in recipe.ingredients):
                self.recipes_for.setdefault(recipe.result, []).append(recipe)

    def targets(self, depth: int, levels: Mapping[str, int]) -> list[str]:
        """Items the pool can make whose crafting level (from raw materials, ``levels``) is ``depth``."""
        return sorted(
            item
            for item in self.level
            if levels.get(item) == depth
            and item not in self.pool
            and _obtainable(item)
            and item not in self.rules.starting_items
            and not any(mark in item for mark in self.DECORATIVE)
        )

    MAX_BILL_UNITS = 12  # a target should need a handful of items, as the original's do

    def bill(self, item: str) -> dict[str, int] | None:
        """Pool items that make one ``item`` (whole runs under the whole rule), or None."""
        out = self._expand(item, Fraction(1), frozenset())
        if out is None:
            return None
        bill = {k: math.ceil(v) for k, v in sorted(out.items()) if v > 0}
        return bill if sum(bill.values()) <= self.MAX_BILL_UNITS else None

    def _expand(self, item: str, amount: Fraction, above: frozenset[str]) -> dict[str, Fraction] | None:
        rng = self.rng
        recipes = [
            r
            for r in self.recipes_for.get(item, ())
            if not any(set(ing.options) & self.level.keys() <= above | {item} for ing in r.ingredients)
        ]
        if item in self.pool and (not recipes or rng.random() < 0.6):
            return {item: amount}
        if not recipes:
            return None
        recipe = rng.choice(recipes)
        runs = amount / recipe.count
        if self.whole_runs:
            runs = Fraction(math.ceil(runs))
        bill: dict[str, Fraction] = {}
        for ing in recipe.ingredients:
            options = sorted(o for o in ing.options if o in self.level and o not in above and o != item)
            if not options:
                return None
            in_pool = [o for o in options if o in self.pool]
            choice = rng.choice(in_pool or options)
            sub = self._expand(choice, ing.count * runs, above | {item})
            if sub is None:
                return None
            for key, qty in sub.items():
                bill[key] = bill.get(key, Fraction(0)) + qty
        if recipe.burns_fuel:
            fuel = rng.choice(self.fuels)
            bill[fuel] = bill.get(fuel, Fraction(0)) + runs * self.rules.fuels.units_per_run(fuel)
        return bill


def _generate_from_pool(
    rules: RuleSet,
    players: int,
    count: int,
    seed: int,
    id_prefix: str | None,
    *,
    crafting_runs: CraftingRuns,
    pool: tuple[str, ...],
    hand_units: tuple[int, int],
    trades: tuple[int, ...],
    scarcity: float,
    progress: Callable[[int], None] | None,
    max_attempts: int = 400,
) -> list[TaskInstance]:
    if not trades or min(trades) < 1:
        raise ValueError("trades must list at least one number of trading steps, each 1 or more")
    if not 0 <= scarcity <= 1:
        raise ValueError("scarcity is a share of instances, from 0 to 1")
    low, high = hand_units
    if not 1 <= low <= high:
        raise ValueError("hand_units must be (low, high) with 1 <= low <= high")
    rng = random.Random(seed)
    whole = crafting_runs == "whole"
    planner = planner_for(rules, whole_runs=whole)
    world = _PoolWorld(rules, pool, whole, rng)
    levels = planner.graph.item_levels
    by_depth = {d: world.targets(d, levels) for d in range(1, MAX_POOL_DEPTH + 1)}
    depths = [d for d, items in by_depth.items() if items]
    if not depths:
        raise ValueError(f"the item pool makes no target in rule set {rules.name}")
    mode = mode_for_players(players)
    top = max(trades)
    out: list[TaskInstance] = []
    seen: set[tuple[str, ...]] = set()
    for index in range(count):
        want_trades = trades[index % len(trades)]
        want_scarce = math.floor((index + 1) * scarcity) > math.floor(index * scarcity)
        depth = depths[index % len(depths)]
        for attempt in range(max_attempts):
            level = depth if attempt < max_attempts // 2 else rng.choice(depths)
            dealt = _deal_from_pool(
                world, planner, by_depth, level, players, want_trades, want_scarce, (low, high)
            )
            if dealt is None:
                continue
            targets, hands = dealt
            key = tuple(targets)
            if key in seen:
                continue
            instance = _draft(
                rules,
                mode,
                f"{id_prefix or rules.name}/{mode}/generated#{index}",
                targets,
                hands,
                crafting_runs,
            )
            report = assess_instance(rules, instance, planner, crafting_runs=crafting_runs)
            if not report.valid or report.scarce != want_scarce:
                continue
            got = report.difficulty["min_trades"]
            # a rare combination (scarce and many steps) may not come up: late tries take any count
            relaxed = attempt >= max_attempts * 3 // 4
            if got != want_trades and not (want_trades == top and got > top) and not relaxed:
                continue
            seen.add(key)
            out.append(dataclasses.replace(instance, difficulty=report.difficulty))
            if progress is not None:
                progress(1)
            break
        else:
            raise RuntimeError(
                f"could not generate instance {index} ({want_trades} trading steps, scarce={want_scarce}) "
                f"after {max_attempts} tries; loosen --trades or --scarcity"
            )
    return out


def _deal_from_pool(
    world: _PoolWorld,
    planner: Planner,
    by_depth: Mapping[int, list[str]],
    depth: int,
    players: int,
    want_trades: int,
    scarce: bool,
    hand_units: tuple[int, int],
) -> tuple[list[str], list[dict[str, int]]] | None:
    """Targets and hands for one instance, or None when this draw does not work out."""
    rng = world.rng
    first = rng.choice(by_depth[depth])
    targets = [first]
    while len(targets) < players:
        pick = rng.choice(by_depth[rng.choice([d for d in range(1, depth + 1) if by_depth.get(d)])])
        if pick not in targets:
            targets.append(pick)
    bills = [world.bill(t) for t in targets]
    if any(b is None or not b for b in bills):
        return None
    bills_ok = [b for b in bills if b is not None]
    if any(t in b for t in targets for b in bills_ok):
        return None  # a target that is also an ingredient of a bill would be dealt as is
    if scarce and not set(bills_ok[0]) & set().union(*bills_ok[1:]):
        return None  # scarcity needs the targets to draw on the same kind of item
    # the kinds each owner lacks: the first owner exactly the wanted number, the others up to it
    lacking: list[set[str]] = []
    for seat, bill in enumerate(bills_ok):
        kinds = sorted(bill)
        wanted = want_trades if seat == 0 else rng.randint(1, want_trades)
        if len(kinds) < wanted:
            if seat == 0:
                return None
            wanted = len(kinds)
        lacking.append(set(rng.sample(kinds, wanted)))
    totals: dict[str, int] = {}
    for bill in bills_ok:
        for item, units in bill.items():
            # scarce: the pool holds only what the hungriest target needs, so not both can be made
            totals[item] = max(totals.get(item, 0), units) if scarce else totals.get(item, 0) + units
    hands: list[dict[str, int]] = [{} for _ in range(players)]
    for item in sorted(totals):
        needing = [s for s in range(players) if item in bills_ok[s]]
        keepers = [s for s in needing if item not in lacking[s]]
        others = [s for s in range(players) if item not in lacking[s] or s not in needing]
        if keepers:
            hands[rng.choice(keepers)][item] = totals[item]
        elif others:
            hands[rng.choice(others)][item] = totals[item]
        else:  # every player lacks it: split it, so each holds too little
            for seat in range(players):
                share = totals[item] // players + (1 if seat < totals[item] % players else 0)
                if share:
                    hands[seat][item] = hands[seat].get(item, 0) + share
    relevant: set[str] = set()
    for target in targets:
        relevant |= planner.relevant_items({target: 1}, world.pool)
    distractors = sorted(world.pool - relevant - set(totals))
    for hand in hands:
        size = rng.randint(*hand_units)
        while sum(hand.values()) < size and distractors:
            item = rng.choice(distractors)
            hand[item] = hand.get(item, 0) + rng.randint(1, 3)
    return targets, hands


# --- one instance at a time, within a difficulty band (a server's fresh deal for each game) --------

DIFFICULTY_LEVELS = ("easy", "medium", "hard")

#: Survival pool: (crafting depth of the first target, trading steps it needs) drawn for each band. Measured
#: over many draws, these shapes land in their band most often (easy is the rarest level: mostly depth 1).
POOL_BAND_SHAPES: dict[str, tuple[tuple[int, int], ...]] = {
    "easy": ((1, 1), (1, 1), (1, 1), (2, 1)),
    "medium": ((1, 1), (2, 1), (2, 2), (3, 2)),
    "hard": ((2, 2), (3, 1), (3, 2), (3, 3), (4, 1), (4, 2), (4, 3)),
}
#: Every raw material (rule sets without the survival items, e.g. alchemy): (share of the rule set's depth
#: range for the first target, how close to raw materials the bills are expanded, 0 to 1) per band.
TREE_BAND_SHAPES: dict[str, tuple[tuple[float, float], ...]] = {
    "easy": ((0.0, 0.0), (0.0, 1.0), (0.2, 0.0), (0.4, 0.0)),
    "medium": ((0.2, 1.0), (0.4, 0.5), (0.4, 1.0), (1.0, 0.0)),
    "hard": ((0.5, 0.5), (0.5, 1.0), (0.7, 0.5), (0.7, 1.0), (1.0, 0.5)),
}
DEFAULT_DEAL_ATTEMPTS = 150


class GenerationError(TradeCraftError, RuntimeError):
    """No instance met the request within the attempts allowed (the message says what was asked)."""

    code = "generation_failed"

    def __init__(self, message: str) -> None:
        super().__init__(self.code, message)


@dataclass(frozen=True)
class Dealt:
    """One generated instance and the draws it took (each draw costs one assessment at most)."""

    instance: TaskInstance
    attempts: int


def generate_instance(
    rules: RuleSet,
    players: int,
    seed: int,
    *,
    band: str | None = None,
    crafting_runs: CraftingRuns = "rational",
    mode: str | None = None,
    instance_id: str | None = None,
    item_pool: str | None = None,
    max_attempts: int = DEFAULT_DEAL_ATTEMPTS,
    reject: Callable[[TaskInstance], bool] | None = None,
) -> Dealt:
    """One valid, not scarce instance for ``players`` under ``crafting_runs``, reproducible for a seed, whose
    difficulty level is ``band`` (any level when None); ``reject`` refuses a draw (e.g. one that repeats a
    published instance). At most ``max_attempts`` draws, then :class:`GenerationError`.

    Unlike :func:`generate_instances` (a set spread from easy to hard), each draw picks a shape likely to
    land in the band (:data:`POOL_BAND_SHAPES`, :data:`TREE_BAND_SHAPES`) and keeps the first that does."""
    if band is not None and band not in DIFFICULTY_LEVELS:
        raise ValueError(f"unknown difficulty {band!r}; choose one of {', '.join(DIFFICULTY_LEVELS)}")
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    rng = random.Random(seed)
    whole = crafting_runs == "whole"
    planner = planner_for(rules, whole_runs=whole)
    pool_name = item_pool or ("survival" if set(ITEM_POOLS["survival"]) <= set(rules.items) else "all")
    draw = (
        _tree_drawer(rules, planner, rng, players, band)
        if pool_name == "all"
        else _pool_drawer(rules, planner, rng, players, band, ITEM_POOLS[pool_name])
    )
    mode = mode or mode_for_players(players)
    for attempt in range(1, max_attempts + 1):
        dealt = draw()
        if dealt is None:
            continue
        targets, hands = dealt
        instance = _draft(
            rules, mode, instance_id or f"{rules.name}/{mode}/generated", targets, hands, crafting_runs
        )
        if reject is not None and reject(instance):
            continue
        report = assess_instance(rules, instance, planner, crafting_runs=crafting_runs)
        if not report.valid or report.scarce:
            continue
        if band is not None and report.difficulty["level"] != band:
            continue
        return Dealt(dataclasses.replace(instance, difficulty=report.difficulty), attempt)
    wanted = f"an {band} " if band == "easy" else f"a {band} " if band else "a "
    raise GenerationError(
        f"could not generate {wanted}{rules.name} instance for {players} players ({crafting_runs} runs) in "
        f"{max_attempts} tries"
    )


_Draw = Callable[[], tuple[list[str], list[dict[str, int]]] | None]


def _pool_drawer(
    rules: RuleSet,
    planner: Planner,
    rng: random.Random,
    players: int,
    band: str | None,
    pool: tuple[str, ...],
) -> _Draw:
    world = _PoolWorld(rules, pool, planner.whole_runs, rng)
    by_depth = {d: world.targets(d, planner.graph.item_levels) for d in range(1, MAX_POOL_DEPTH + 1)}
    if not any(by_depth.values()):
        raise GenerationError(f"the item pool makes no target in rule set {rules.name}")
    shapes = (
        POOL_BAND_SHAPES[band] if band else tuple(s for b in DIFFICULTY_LEVELS for s in POOL_BAND_SHAPES[b])
    )

    def draw() -> tuple[list[str], list[dict[str, int]]] | None:
        depth, trades = rng.choice(shapes)
        if not by_depth.get(depth):
            return None
        return _deal_from_pool(world, planner, by_depth, depth, players, trades, False, DEFAULT_HAND_UNITS)

    return draw


def _tree_drawer(
    rules: RuleSet, planner: Planner, rng: random.Random, players: int, band: str | None
) -> _Draw:
    bases = base_items(rules)
    expander = _TreeExpander(rules, rng, bases)
    by_depth = candidate_targets(rules, planner)
    depths = sorted(by_depth)
    if not depths:
        raise GenerationError(f"rule set {rules.name} has no craftable targets")
    distractors = sorted(bases - set(rules.starting_items)) or sorted(bases)
    shapes = (
        TREE_BAND_SHAPES[band] if band else tuple(s for b in DIFFICULTY_LEVELS for s in TREE_BAND_SHAPES[b])
    )

    def draw() -> tuple[list[str], list[dict[str, int]]] | None:
        share, hardness = rng.choice(shapes)
        depth = depths[min(len(depths) - 1, int(share * len(depths)))]
        targets = [rng.choice(by_depth[depth])]
        reachable = depths[: depths.index(depth) + 1]
        if sum(len(by_depth[d]) for d in reachable) < players:
            return None
        while len(targets) < players:
            pick = rng.choice(by_depth[rng.choice(reachable)])
            if pick not in targets:
                targets.append(pick)
        hands = _deal(rules, expander, targets, distractors, rng, planner, hardness)
        if any(t in hand for t in targets for hand in hands):
            return None  # a target dealt as is makes a trivial game
        return targets, hands

    return draw
