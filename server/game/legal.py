"""What a seat may do now, and enumerations of concrete actions for bots and environments.

``legal_actions`` lists action *types*; the enumerators give concrete, valid actions:
``possible_proposals`` (every trade up to a size bound: a finite space for masks and search),
``random_proposal`` (a uniform-ish random valid trade) and ``possible_crafts`` (every recipe the
crafting hand affords, with the largest run amount). Every action they return is accepted by
:meth:`Game.apply` at the moment they are called. The random *policy* is a bot
(``agents.bots.random_bot.RandomBot``): the engine plays no one's moves.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping
from typing import Any

from craft_rules.crafting import fmt_qty
from craft_rules.possible_crafts import iter_runnable_recipes, runnable_recipes
from server.game.actions import PLAYER_ACTION_TYPES, Craft, Decide, Propose
from server.game.state import Game


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
    running the recipe max_runs times)}``, sorted by recipe id: the answer of
    :func:`craft_rules.possible_crafts.runnable_recipes` (default tag and fuel choices). Empty outside
    the craft phase or once the seat has finished crafting.
    """
    if game.phase != "craft" or seat not in game.waiting_for():
        return []
    hand = game.crafting_hand(seat) or {}
    found = []
    whole = game.settings.whole_runs
    for recipe, runs in runnable_recipes(game.rules, hand, whole_runs=whole)[:limit]:
        found.append(
            {
                "recipe": recipe.id,
                "result": recipe.result,
                "count": recipe.count,
                "max_runs": fmt_qty(runs),
                "action": Craft(recipe=recipe.id, runs=fmt_qty(runs)),
            }
        )
    return found


def _any_craft(game: Game, seat: int) -> bool:
    # lazily: legal_actions runs for every seat's view after every change, and the first runnable
    # recipe settles it (scanning and sorting every candidate dominated the view's cost)
    hand = game.crafting_hand(seat) or {}
    whole = game.settings.whole_runs
    return next(iter_runnable_recipes(game.rules, hand, whole_runs=whole), None) is not None


# --- the safe move -------------------------------------------------------------------------------
def fallback_action(view: Mapping[str, Any]) -> dict[str, Any] | None:
    """A safe legal action for the seat whose player ``view`` this is, or None when it need not act.

    Safe means it gives nothing away and never ends the seat's game: a ToM report of 5 everywhere (only
    the orders asked), passing (else asking the next player for one unit of something), rejecting a
    proposal, finishing crafting. Never ``resign``. What a runner plays when a policy gives up
    (:class:`server.game.policy.OnRefusal`).
    """
    legal = view.get("legal_actions") or []
    if "report_tom" in legal:
        tom = view.get("tom") or {}
        items = tom.get("items") or []
        report: dict[str, Any] = {"type": "report_tom", "v0": dict.fromkeys(items, 5)}
        for order in tom.get("orders") or []:
            if order in (1, 2):
                report[f"v{order}"] = {str(s): dict.fromkeys(items, 5) for s in tom.get("opponents") or []}
        return report
    if "decide" in legal:
        return {"type": "decide", "accept": False, "message": ""}
    if "finish_crafting" in legal:
        return {"type": "finish_crafting"}
    if "pass" in legal:
        return {"type": "pass"}
    if "propose" in legal:
        seat, hands = view["seat"], view["hands"]
        active = view.get("active") or [True] * view["players"]
        for step in range(1, view["players"]):
            other = (seat + step) % view["players"]
            if not active[other]:  # a seat that resigned takes no proposals
                continue
            if hands[other]:
                item = sorted(hands[other])[0]
                return {"type": "propose", "to": other, "offer": {}, "request": {item: 1}, "message": ""}
            if hands[seat]:
                item = sorted(hands[seat])[0]
                return {"type": "propose", "to": other, "offer": {item: 1}, "request": {}, "message": ""}
    return None
