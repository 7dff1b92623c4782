"""What a seat may do now, and enumerations of concrete actions for bots and environments.

``legal_actions`` lists action *types*; the enumerators give concrete, valid actions:
``possible_proposals`` (every trade up to a size bound: a finite space for masks and search),
``random_proposal`` (a uniform-ish random valid trade for random bots) and ``possible_crafts``
(every recipe the crafting hand affords, with the largest run amount). Every action they return is
accepted by :meth:`Game.apply` at the moment they are called.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from craft_rules.crafting import max_runs
from server.game.actions import PLAYER_ACTION_TYPES, Craft, Decide, Propose
from server.game.state import Game

MAX_RUNS = 10**6
"""Largest run amount and finest step craft_rules accepts (see craft_rules.crafting.parse_runs)."""


def legal_actions(game: Game, seat: int) -> list[str]:
    """Action types ``seat`` may send now, in :data:`~server.game.actions.ACTION_MODELS` order.

    Empty for a resigned seat or a finished game. ``resign`` is always legal for an active seat.
    ``craft`` is listed only when at least one recipe is affordable.
    """
    if game.finished or not game.is_active(seat):
        return []
    allowed: set[str] = {"resign"}
    phase = game.phase
    if phase == "tom_report" and seat in game.tom_awaiting():
        allowed.add("report_tom")
    elif phase == "trade_propose" and seat == game.proposer:
        if game.proposal_possible():
            allowed.add("propose")
        if game.pass_allowed():
            allowed.add("pass")
    elif phase == "trade_decide" and seat in game.waiting_for():
        allowed.add("decide")
    elif phase == "craft" and seat in game.waiting_for():
        allowed.add("finish_crafting")
        if _any_craft(game, seat):
            allowed.add("craft")
    return [t for t in PLAYER_ACTION_TYPES if t in allowed]


def action_mask(game: Game, seat: int) -> dict[str, bool]:
    """For every player action type (stable order): whether it is legal for ``seat`` now."""
    legal = set(legal_actions(game, seat))
    return {t: t in legal for t in PLAYER_ACTION_TYPES}


def decision_options(game: Game, seat: int) -> list[Decide]:
    """The two decisions when ``seat`` must decide (accept only while both sides still hold the items)."""
    if "decide" not in legal_actions(game, seat):
        return []
    return [Decide(accept=True), Decide(accept=False)]


# --- proposals -----------------------------------------------------------------------------------
def _bundles(hand: dict[str, int], max_items: int, max_units: int) -> list[dict[str, int]]:
    """Every multiset of up to ``max_items`` distinct items, up to ``max_units`` units each."""
    items = sorted(i for i, c in hand.items() if c > 0)
    bundles: list[dict[str, int]] = [{}]
    for size in range(1, max_items + 1):
        for chosen in itertools.combinations(items, size):
            ranges = [range(1, min(hand[i], max_units) + 1) for i in chosen]
            for counts in itertools.product(*ranges):
                bundles.append(dict(zip(chosen, counts, strict=True)))
    return bundles


def possible_proposals(
    game: Game, seat: int, max_items: int = 1, max_units: int = 1, to: int | None = None
) -> Iterator[Propose]:
    """Every valid proposal of ``seat`` whose offer and request each name at most ``max_items``
    distinct items of at most ``max_units`` units (defaults: one-for-one swaps, gifts and asks).

    Finite and deterministic (seat, then offer, then request order), so it can serve as an action
    space with a mask. Nothing when ``seat`` may not propose now.
    """
    if "propose" not in legal_actions(game, seat):
        return
    hands = game.hands
    offers = _bundles(hands[seat], max_items, max_units)
    for other in game.active_seats:
        if other == seat or (to is not None and other != to):
            continue
        requests = _bundles(hands[other], max_items, max_units)
        for offer in offers:
            for request in requests:
                if (offer or request) and not (offer.keys() & request.keys()):
                    yield Propose(to=other, offer=offer, request=request)


def random_proposal(game: Game, seat: int, rng: random.Random, max_units: int = 3) -> Propose | None:
    """A random valid proposal of ``seat`` (None when it may not propose now).

    Picks a random other active seat, then for each side a random subset of the held items with
    random counts (up to ``max_units`` each), keeping the two sides disjoint and not both empty.
    """
    if "propose" not in legal_actions(game, seat):
        return None
    hands = game.hands
    partners = [s for s in game.active_seats if s != seat]
    rng.shuffle(partners)
    for to in partners:
        mine = sorted(i for i, c in hands[seat].items() if c > 0)
        theirs = sorted(i for i, c in hands[to].items() if c > 0)
        if not mine and not theirs:
            continue
        offer = {i: rng.randint(1, min(hands[seat][i], max_units)) for i in mine if rng.random() < 0.4}
        request = {
            i: rng.randint(1, min(hands[to][i], max_units))
            for i in theirs
            if i not in offer and rng.random() < 0.4
        }
        if not offer and not request:
            if mine and (not theirs or rng.random() < 0.5):
                item = rng.choice(mine)
                offer = {item: 1}
            else:
                item = rng.choice(theirs)
                request = {item: 1}
        return Propose(to=to, offer=offer, request=request, message="")
    return None


# --- crafts --------------------------------------------------------------------------------------
def possible_crafts(game: Game, seat: int, limit: int | None = None) -> list[dict[str, Any]]:
    """Recipes the private crafting hand of ``seat`` affords now, with the largest run amount.

    Each entry: ``{"recipe", "result", "count" (per run), "max_runs" (str), "action" (a Craft
    running the recipe max_runs times)}``, sorted by recipe id. Asks the crafting planner
    (:mod:`craft_rules.planner`) when it is installed, else :func:`craft_rules.crafting.max_runs`
    directly; both use the default tag and fuel choices. Empty outside the craft phase or once the
    seat has finished crafting.
    """
    if game.phase != "craft" or seat not in game.waiting_for():
        return []
    hand = game.crafting_hand(seat) or {}
    found = []
    whole = game.settings.whole_runs
    for recipe_id, most in _affordable(game, hand):
        runs = _acceptable_runs(most, whole)
        if runs > 0:
            recipe = game.rules.recipes[recipe_id]
            found.append(
                {
                    "recipe": recipe_id,
                    "result": recipe.result,
                    "count": recipe.count,
                    "max_runs": _fmt(runs),
                    "action": Craft(recipe=recipe_id, runs=_fmt(runs)),
                }
            )
            if limit is not None and len(found) >= limit:
                break
    return found


def _affordable(game: Game, hand: dict[str, Fraction]) -> list[tuple[str, Fraction]]:
    """(recipe id, max runs > 0) for every recipe the hand can run, sorted by recipe id."""
    try:
        from craft_rules.planner import planner_for
    except ImportError:  # the planner is optional for the engine: fall back to max_runs
        pairs = [(r.id, max_runs(game.rules, hand, r)) for r in _candidate_recipes(game, hand)]
    else:
        pairs = [(p.recipe_id, p.max_runs) for p in planner_for(game.rules).possible_crafts(hand)]
    return sorted((rid, runs) for rid, runs in pairs if runs > 0)


def _candidate_recipes(game: Game, hand: dict[str, Fraction]) -> list[Any]:
    """Recipes whose every ingredient (and fuel, if it burns any) has some held option, by id.

    A cheap filter before the exact :func:`max_runs`: a recipe missing an ingredient cannot run.
    """
    return sorted(_iter_candidates(game, hand), key=lambda recipe: recipe.id)


def _iter_candidates(game: Game, hand: dict[str, Fraction]) -> Iterator[Any]:
    """The recipes of :func:`_candidate_recipes`, each once, in no particular order (lazily)."""
    held = {item for item, qty in hand.items() if qty > 0}
    has_fuel = any(item in game.rules.fuels.burn_ticks for item in held)
    by_input = game.rules.recipes_by_input
    seen: set[str] = set()
    for item in held:
        for recipe in by_input.get(item, ()):
            if recipe.id in seen:
                continue
            seen.add(recipe.id)
            if (has_fuel or not recipe.burns_fuel) and all(
                not held.isdisjoint(ing.options) for ing in recipe.ingredients
            ):
                yield recipe


def _any_craft(game: Game, seat: int) -> bool:
    # lazily: legal_actions runs for every seat's view after every change, and the first affordable
    # candidate settles it (scanning and sorting every candidate dominated the view's cost)
    hand = game.crafting_hand(seat) or {}
    whole = game.settings.whole_runs
    return any(
        _acceptable_runs(max_runs(game.rules, hand, r), whole) > 0 for r in _iter_candidates(game, hand)
    )


def _acceptable_runs(runs: Fraction, whole_runs: bool = False) -> Fraction:
    """The largest run amount <= ``runs`` that a Craft accepts (at most 10^6, in steps of 1/10^6;
    with ``whole_runs`` a whole number, possibly 0).

    Repeated fractional crafts can leave quantities with huge denominators; rounding *down* keeps
    the craft affordable.
    """
    if whole_runs:
        return Fraction(math.floor(min(runs, Fraction(MAX_RUNS))))
    if runs.denominator <= MAX_RUNS and runs <= MAX_RUNS:
        return runs
    return Fraction(math.floor(min(runs, Fraction(MAX_RUNS)) * MAX_RUNS), MAX_RUNS)


def _fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


# --- a random legal action (random bots, property tests, benchmarks) -----------------------------
def random_action(
    game: Game, seat: int, rng: random.Random, finish_probability: float = 0.3
) -> dict[str, Any] | None:
    """A random legal action of ``seat`` as an action dict (None when it has nothing to do now).

    Never resigns. ToM reports carry random 0-10 values for exactly the requested orders; proposals
    come from :func:`random_proposal`; in a craft phase the seat finishes with
    ``finish_probability``, else runs a random affordable recipe 1, 1/2 or 1/4 of its max runs.
    """
    legal = [t for t in legal_actions(game, seat) if t != "resign"]
    if not legal:
        return None
    if "finish_crafting" in legal:
        if "craft" not in legal or rng.random() < finish_probability:
            return {"type": "finish_crafting"}
        options = possible_crafts(game, seat)
        pick = rng.choice(options)
        most = Fraction(pick["max_runs"])
        share = rng.choice((Fraction(1), Fraction(1, 2), Fraction(1, 4)))
        runs = _acceptable_runs(most * share, game.settings.whole_runs)
        return {"type": "craft", "recipe": pick["recipe"], "runs": _fmt(runs if runs > 0 else most)}
    kind = rng.choice(legal)
    if kind == "report_tom":
        items = game.tom_items
        opponents = [str(s) for s in game.active_seats if s != seat]
        report: dict[str, Any] = {"type": "report_tom", "v0": {i: rng.randint(0, 10) for i in items}}
        for order in game.tom_orders(seat):
            if order:
                report[f"v{order}"] = {o: {i: rng.randint(0, 10) for i in items} for o in opponents}
        return report
    if kind == "propose":
        proposal = random_proposal(game, seat, rng)
        assert proposal is not None  # "propose" is legal, so some proposal exists
        return {**proposal.model_dump(), "message": f"offer #{rng.randrange(10**6)}"}
    if kind == "decide":
        return {"type": "decide", "accept": rng.random() < 0.5, "message": ""}
    return {"type": kind}
