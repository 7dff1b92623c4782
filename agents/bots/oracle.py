"""The crafting-score oracle: how far a hand is from a target, and what a trade does to each side.

Every value-reasoning bot (``planner``, ``tom0`` .. ``tom3``, the scripted partners) scores hands here, so
there is one definition of progress (``docs/bots.md`` has the prose):

* A target's **requirement** is the smallest sub-hand of the pooled public hands (fewest whole items)
  that crafts it within one craft phase under the game's crafting-runs rule
  (``view["rules"]["crafting_runs"]``: ``whole`` -> integer runs, ``rational`` -> any run amounts), found
  by :meth:`craft_rules.planner.Planner.min_units` (an integer program, exact for the pool it is given).
  Trades never change the pool, so one program per target and pool serves a whole trade phase; results
  are cached per process (:func:`requirement`).
* A hand's **progress** towards the target is the share of the requirement it holds (:func:`coverage`):
  1 means it holds a sub-hand that crafts the target; what is **missing at least cost** is
  ``requirement - hand`` (:func:`missing`), the whole items still to obtain along the cheapest plan.
  The cheapest plan is one plan: a hand that could craft the target by another route (planks where the
  plan uses logs) is not credited for it. Whether a *crafting hand* can craft the target is answered
  exactly by the planner (:meth:`CraftingOracle.craftable`, executed step by step).
* A trade's **gain** for a player is the change of its progress (:func:`gain`); for a proposal both sides'
  gains are :meth:`CraftingOracle.trade_gains`.

Items a rule set does not know (a view from an imported rule set) are dropped from every hand before
scoring (:func:`known_hands`), so a bot never reasons about, asks for or offers them.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from craft_rules.crafting import fmt_qty
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.plan_inputs import PlannerError
from craft_rules.planner import Planner, planner_for

Hand = Mapping[str, int]
Bundle = tuple[tuple[str, int], ...]
"""Items with counts, sorted by item: hashable and canonical."""
Offer = tuple[int, Bundle, Bundle]
"""(addressee, offered items, requested items) of a proposal."""

EPS = 1e-9

# --- requirements: one integer program per (rule set, crafting-runs rule, target, pool) -------------

_REQUIREMENTS: dict[tuple[int, bool, str, Bundle], dict[str, int] | None] = {}
_CANDIDATES: dict[tuple[int, bool, Bundle], tuple[str, ...]] = {}
_CRAFTABLE: dict[tuple[int, bool, str, tuple[tuple[str, str], ...]], bool] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_LIMIT = 20000


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    with _CACHE_LOCK:
        if len(cache) >= _CACHE_LIMIT:  # bounded memory in a long-running server
            cache.clear()
        cache[key] = value


def bundle(hand: Mapping[str, int]) -> Bundle:
    """A hand as a canonical tuple (positive counts only)."""
    return tuple(sorted((k, int(v)) for k, v in hand.items() if v > 0))


def pool_of(hands: Iterable[Hand]) -> dict[str, int]:
    """All public hands added together (whole items)."""
    pool: dict[str, int] = {}
    for hand in hands:
        for item, count in hand.items():
            if count > 0:
                pool[item] = pool.get(item, 0) + int(count)
    return pool


def known_hands(rules: RuleSet, hands: Iterable[Mapping[str, Any]]) -> list[dict[str, int]]:
    """Public hands as whole counts, without items ``rules`` does not know."""
    return [
        {k: int(v) for k, v in hand.items() if int(v) > 0 and rules.has_item(rules.canonical(k))}
        for hand in hands
    ]


def requirement(planner: Planner, target: Mapping[str, int], pool: Hand) -> dict[str, int] | None:
    """The smallest sub-hand of ``pool`` that crafts ``target`` in one craft phase (None: the pool cannot)."""
    tkey = ",".join(f"{k}:{v}" for k, v in sorted(target.items()))
    key = (id(planner), planner.whole_runs, tkey, bundle(pool))
    with _CACHE_LOCK:
        if key in _REQUIREMENTS:
            return _REQUIREMENTS[key]
    try:
        found = planner.min_units(dict(target), dict(pool))
    except (PlannerError, KeyError):  # an item the rule set does not know: no requirement
        found = None
    value = dict(found[1]) if found else None
    _remember(_REQUIREMENTS, key, value)
    return value


def candidate_targets(planner: Planner, pool: Hand, limit: int) -> tuple[str, ...]:
    """Items a recipe chain can make from ``pool`` (not already in it) that the pool can craft.

    Bounded to ``limit`` items, those with the largest requirements first (a player's target needs trades,
    so it is rarely a one-item craft), then by name.
    """
    key = (id(planner), planner.whole_runs, bundle(pool))
    with _CACHE_LOCK:
        cached = _CANDIDATES.get(key)
    if cached is None:
        reach, _ = planner.graph.fireable(pool, frozenset(planner.rules.recipes))
        sized = []
        for item in sorted(reach - set(pool)):
            need = requirement(planner, {item: 1}, pool)
            if need:
                sized.append((-sum(need.values()), item))
        cached = tuple(item for _, item in sorted(sized))
        _remember(_CANDIDATES, key, cached)
    return cached[:limit]


def coverage(hand: Hand, need: Mapping[str, int] | None) -> float:
    """Progress: the share of the requirement ``need`` the hand holds (1: the target is craftable)."""
    if need is None:
        return 0.0
    total = sum(need.values())
    if total <= 0:
        return 1.0
    return sum(min(hand.get(item, 0), count) for item, count in need.items()) / total


def missing(hand: Hand, need: Mapping[str, int] | None) -> dict[str, int]:
    """What the hand still lacks of the requirement: the items to obtain along the cheapest plan."""
    return {item: n - hand.get(item, 0) for item, n in sorted((need or {}).items()) if hand.get(item, 0) < n}


def after_trade(
    hand: Hand, give: Iterable[tuple[str, int]], get: Iterable[tuple[str, int]]
) -> dict[str, int]:
    """The hand after giving ``give`` away and receiving ``get``."""
    out = dict(hand)
    for item, count in give:
        out[item] = out.get(item, 0) - count
    for item, count in get:
        out[item] = out.get(item, 0) + count
    return out


def gain(hand: Hand, need: Mapping[str, int] | None, give: Bundle, get: Bundle) -> float:
    """``pi``: the progress change a trade (``give`` away, ``get`` in) makes for a player needing ``need``."""
    if not need:
        return 0.0
    total = sum(need.values())
    if total <= 0:
        return 0.0
    # only the traded kinds change the coverage: no copy of the hand (this runs per offer and target)
    delta: dict[str, int] = {}
    for item, count in give:
        delta[item] = delta.get(item, 0) - count
    for item, count in get:
        delta[item] = delta.get(item, 0) + count
    change = 0
    for item, moved in delta.items():
        wanted = need.get(item, 0)
        if wanted:
            held = hand.get(item, 0)
            change += min(held + moved, wanted) - min(held, wanted)
    return change / total


def completes(hand: Hand, need: Mapping[str, int] | None, give: Bundle, get: Bundle) -> bool:
    """Whether the trade leaves the hand holding the whole requirement."""
    return bool(need) and coverage(after_trade(hand, give, get), need) >= 1 - EPS


def holds(hand: Hand, items: Bundle) -> bool:
    return all(hand.get(item, 0) >= count for item, count in items)


def marginal_values(hand: Hand, need: Mapping[str, int] | None, items: Iterable[str]) -> dict[str, float]:
    """Per item: the progress one more unit adds or one unit fewer takes away, whichever is larger."""
    out: dict[str, float] = {}
    for item in items:
        if not need or item not in need:
            out[item] = 0.0
            continue
        up = gain(hand, need, (), ((item, 1),))
        down = -gain(hand, need, ((item, 1),), ()) if hand.get(item, 0) > 0 else 0.0
        out[item] = max(up, down)
    return out


def scale_0_10(values: Mapping[str, float]) -> dict[str, int]:
    """Scale non-negative values so the largest is 10 (all 0 when none is positive), rounded."""
    top = max((v for v in values.values()), default=0.0)
    if top <= EPS:
        return dict.fromkeys(values, 0)
    return {k: max(0, min(10, round(10 * max(v, 0.0) / top))) for k, v in values.items()}


def enumerate_offers(
    me: int,
    to: int,
    my_hand: Hand,
    their_hand: Hand,
    need: Mapping[str, int] | None,
    limit: int,
) -> list[Offer]:
    """The bounded proposals from ``me`` to ``to`` every bot searches.

    Request at most two kinds ``me`` still needs (the deficit, as far as ``to`` holds it); offer nothing
    or at most two kinds of ``me``'s hand (one unit, the surplus over ``need``, or all of it). At most
    ``limit`` offers, smallest bundles first; offered and requested kinds never overlap.
    """
    need = need or {}
    deficit = {
        item: min(count - my_hand.get(item, 0), their_hand.get(item, 0))
        for item, count in sorted(need.items())
        if count > my_hand.get(item, 0) and their_hand.get(item, 0) > 0
    }
    kinds = sorted(deficit, key=lambda i: (-deficit[i], i))[:6]
    requests: list[Bundle] = [((i, deficit[i]),) for i in kinds]
    requests += [
        tuple(sorted(((a, deficit[a]), (b, deficit[b])))) for a, b in itertools.combinations(kinds, 2)
    ]
    mine = [i for i, c in sorted(my_hand.items()) if c > 0]
    surplus = {i: my_hand[i] - need.get(i, 0) for i in mine}
    mine.sort(key=lambda i: (-surplus[i], i))
    mine = mine[:8]

    def amounts(item: str) -> list[int]:
        have = my_hand[item]
        return sorted({1, have, *([surplus[item]] if surplus[item] > 0 else [])})

    singles = [((i, n),) for i in mine for n in amounts(i)]
    pairs = [
        tuple(sorted(((a, x), (b, y))))
        for a, b in itertools.combinations(mine, 2)
        for x in amounts(a)
        for y in amounts(b)
    ]
    gives: list[Bundle] = [(), *singles, *pairs]
    offers: list[Offer] = []
    for request in requests:
        asked = {i for i, _ in request}
        for give in gives:
            if any(i in asked for i, _ in give):
                continue
            offers.append((to, give, request))
            if len(offers) >= limit:
                return offers
    return offers


def harmless_offer(
    me: int,
    hands: list[dict[str, int]],
    opponents: list[int],
    need: Hand | None,
    strict: bool = False,
) -> Offer | None:
    """A proposal that costs the proposer nothing, for when passing is not allowed: one unit of an item it
    does not need from an opponent, for nothing in return (a rational opponent rejects it).

    Without ``strict`` (the ToM and planner bots' fallback, kept as the recorded tournaments played it),
    when an opponent holds only items the proposer needs or holds, one unit of any of them is asked, which
    is not harmless to a responder that gives away what it does not need. With ``strict`` (the scripted
    partners' idle proposal) a needed item is never asked: one unit of an unneeded item the proposer
    also holds, else one unit of its own least-needed item is given away.
    """
    need = need or {}
    for to in opponents:
        for item, count in sorted(hands[to].items()):
            if count > 0 and item not in need and hands[me].get(item, 0) == 0:
                return (to, (), ((item, 1),))
        for item, count in sorted(hands[to].items()):
            if count > 0 and (not strict or item not in need):
                return (to, (), ((item, 1),))
    # the opponents hold nothing (strict: nothing we do not need): give away one unit of what we need least
    mine = sorted(((k, v) for k, v in hands[me].items() if v > 0), key=lambda kv: (need.get(kv[0], 0), kv[0]))
    if opponents and mine:
        return (opponents[0], ((mine[0][0], 1),), ())
    return None


def offer_action(offer: Offer, message: str = "") -> dict[str, Any]:
    to, give, request = offer
    return {"type": "propose", "to": to, "offer": dict(give), "request": dict(request), "message": message}


def offer_json(offer: Offer | None) -> dict[str, Any] | None:
    if offer is None:
        return None
    to, give, request = offer
    return {"to": to, "offer": dict(give), "request": dict(request)}


# --- one seat's view, scored -------------------------------------------------------------------------


@dataclass
class CraftingOracle:
    """Scores for one seat's view: its target's requirement, every player's progress, trade gains.

    Build it with :meth:`for_view` before each decision (cheap: the integer programs are cached).
    ``pool`` is the pool requirements are computed on: the current pooled hands unless a bot pins an
    earlier one (ToM bots keep the first pool they saw for their opponents' candidate targets).
    """

    rules: RuleSet
    planner: Planner
    hands: list[dict[str, int]]
    pool: dict[str, int]
    me: int
    target: dict[str, int]
    my_need: dict[str, int] | None
    opponents: list[int]
    _needs: dict[str, dict[str, int] | None] = field(default_factory=dict)

    @classmethod
    def for_view(
        cls, view: Mapping[str, Any], rules: RuleSet, pool: Mapping[str, int] | None = None
    ) -> CraftingOracle:
        whole = (view.get("rules") or {}).get("crafting_runs") == "whole"
        planner = planner_for(rules, whole_runs=whole)
        hands = known_hands(rules, view["hands"])
        current = pool_of(hands)
        me = int(view["seat"])
        target = {rules.canonical(k): int(v) for k, v in (view.get("target") or {}).items()}
        if any(not rules.has_item(k) for k in target):
            my_need = None  # a target this rule set cannot name: no model of our own progress
        else:
            my_need = requirement(planner, target, current) if target else None
        opponents = [s for s, active in enumerate(view.get("active") or []) if active and s != me]
        return cls(
            rules, planner, hands, dict(pool) if pool is not None else current, me, target, my_need, opponents
        )

    def need_of(self, item: str) -> dict[str, int] | None:
        """The requirement of one unit of ``item`` on :attr:`pool` (a candidate target of an opponent)."""
        if item not in self._needs:
            self._needs[item] = requirement(self.planner, {item: 1}, self.pool)
        return self._needs[item]

    def progress(self, hand: Hand | None = None) -> float:
        """Our progress from ``hand`` (default: our public hand)."""
        return coverage(self.hands[self.me] if hand is None else hand, self.my_need)

    def missing(self) -> dict[str, int]:
        """What we still lack at least cost (the cheapest plan's items we do not hold)."""
        return missing(self.hands[self.me], self.my_need)

    def my_gain(self, give: Bundle, get: Bundle) -> float:
        """Our progress change if we give ``give`` and get ``get`` (-1 when we do not hold ``give``)."""
        hand = self.hands[self.me]
        return gain(hand, self.my_need, give, get) if holds(hand, give) else -1.0

    def trade_gains(
        self, proposer: int, offer: Offer, needs: Mapping[int, Mapping[str, int] | None]
    ) -> tuple[float, float]:
        """(proposer's gain, addressee's gain) of ``offer`` given each side's requirement in ``needs``."""
        to, give, request = offer
        return (
            gain(self.hands[proposer], needs.get(proposer), give, request),
            gain(self.hands[to], needs.get(to), request, give),
        )

    def marginal_values(self, items: Iterable[str]) -> dict[str, float]:
        return marginal_values(self.hands[self.me], self.my_need, items)

    def craftable(self, crafting_hand: Mapping[str, Any]) -> bool:
        """Exactly: can ``crafting_hand`` craft our target in one craft phase (the planner executes it)."""
        if not self.target or any(not self.rules.has_item(k) for k in self.target):
            return False
        hand = _fractions(self.rules, crafting_hand)
        key = (
            id(self.planner),
            self.planner.whole_runs,
            ",".join(f"{k}:{v}" for k, v in sorted(self.target.items())),
            tuple(sorted((k, fmt_qty(v)) for k, v in hand.items())),
        )
        with _CACHE_LOCK:
            cached = _CRAFTABLE.get(key)
        if cached is None:
            try:
                cached = self.planner.can_craft(hand, self.target)
            except PlannerError:
                cached = False
            _remember(_CRAFTABLE, key, cached)
        return cached

    def craft_action(self, crafting_hand: Mapping[str, Any]) -> dict[str, Any]:
        """The next craft of the planner's plan for our target from ``crafting_hand``, or finish crafting
        (the target is held, cannot be crafted, or the rule set cannot name it)."""
        finish = {"type": "finish_crafting"}
        if not self.target or any(not self.rules.has_item(k) for k in self.target):
            return finish
        hand = _fractions(self.rules, crafting_hand)
        if all(hand.get(k, 0) >= v for k, v in self.target.items()):
            return finish
        try:
            plan = self.planner.plan(hand, self.target, find_missing=False)
        except PlannerError:
            return finish
        if not plan.craftable or not plan.steps:
            return finish
        step = plan.steps[0]
        action: dict[str, Any] = {"type": "craft", "recipe": step.recipe_id, "runs": fmt_qty(step.runs)}
        if step.choices:
            action["choices"] = {int(k): v for k, v in step.choices.items()}
        if step.fuel:
            action["fuel"] = step.fuel
        return action


def _fractions(rules: RuleSet, hand: Mapping[str, Any]) -> dict[str, Fraction]:
    return {
        k: Fraction(v)
        for k, v in (hand or {}).items()
        if rules.has_item(rules.canonical(k)) and Fraction(v) > 0
    }


class RulesCache:
    """The rule set a bot plays with: the one given to it, else the installed one the view names."""

    def __init__(self, rules: RuleSet | None = None) -> None:
        self._given = rules
        self._loaded: RuleSet | None = None

    def for_view(self, view: Mapping[str, Any]) -> RuleSet:
        if self._given is not None:
            return self._given
        if self._loaded is None or self._loaded.name != view["ruleset"]:
            self._loaded = load_rule_set(view["ruleset"])
        return self._loaded


def tom_report(
    view: Mapping[str, Any],
    v0: Mapping[str, float],
    v1: Mapping[str, Mapping[str, float]] | None = None,
    v2: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Any]:
    """A ``report_tom`` action for the view's duty: ``v0`` (raw values per item) and, per opponent seat
    (as a string), ``v1``/``v2`` raw values, each scaled 0-10 (:func:`scale_0_10`). A missing opponent or
    order reports all 0 (no model of it)."""
    duty = view["tom"]
    items = sorted(duty["items"])
    report: dict[str, Any] = {"type": "report_tom", "v0": scale_0_10({i: v0.get(i, 0.0) for i in items})}
    for order, values in ((1, v1), (2, v2)):
        if order in duty["orders"]:
            report[f"v{order}"] = {
                str(s): scale_0_10({i: (values or {}).get(str(s), {}).get(i, 0.0) for i in items})
                for s in duty["opponents"]
            }
    return report
