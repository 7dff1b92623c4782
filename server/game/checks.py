"""The engine's checks of a player's action that a seat can judge from what it sees, as pure functions.

:class:`~server.game.state.Game` validates every action with these functions (over its own state), and
:func:`check_against_view` runs the same functions over a seat's player view
(:func:`server.game.views.player_view`), so a policy's tools can refuse a move before submitting it with
the very error (code, message, details) the engine would raise when applying it. What a view cannot
judge (a seat's identity, system-only actions, a stale timer) stays in the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from craft_rules.crafting import CraftError, CraftResult, craft, parse_runs
from craft_rules.model import RuleSet
from server.game.actions import Craft, Decide, Propose, ReportToM
from server.game.errors import GameError

ACTION_PHASES: dict[str, str] = {
    "report_tom": "tom_report",
    "propose": "trade_propose",
    "pass": "trade_propose",
    "decide": "trade_decide",
    "craft": "craft",
    "finish_crafting": "craft",
}
"""Player action type -> the phase it belongs to (``resign`` belongs to every phase)."""

SeatValues = dict[str, dict[str, int]]
"""A v1 or v2 report: opponent seat (as a string) -> item -> value."""


# --- whose move it is ----------------------------------------------------------------------------
def check_not_over(finished: bool, end_reason: str | None, winners: Sequence[int]) -> None:
    if finished:
        raise GameError(
            "game_over",
            f"The game is over ({end_reason}); no more actions are accepted.",
            {"winners": list(winners)},
        )


def check_active(seat: int, active: bool) -> None:
    if not active:
        raise GameError("player_left", f"Seat {seat} has resigned and can no longer act.", {"seat": seat})


def check_system_actor(actor: int | None) -> None:
    """Only the system (actor None) sends ``timeout``."""
    if actor is not None:
        raise GameError(
            "not_allowed", "'timeout' is a system action; players cannot send it.", {"actor": actor}
        )


def check_phase(phase: str, wanted: str, action: str) -> None:
    if phase != wanted:
        raise GameError(
            "wrong_phase",
            f"'{action}' is only allowed in the {wanted} phase; the phase now is {phase}.",
            {"phase": phase, "expected": wanted},
        )


def check_tom_due(seat: int, orders: Sequence[int], due: bool, turn: int) -> None:
    """``seat`` owes a ToM report now (the game asks it for some order and it has not reported)."""
    if not orders:
        raise GameError(
            "tom_not_requested",
            f"This game asks no ToM reports of seat {seat}; wait for the trade phase.",
            {"seat": seat},
        )
    if not due:
        raise GameError(
            "already_reported",
            f"Seat {seat}'s ToM report for turn {turn} is already closed; wait for the others.",
            {"seat": seat, "turn": turn},
        )


def check_proposer(seat: int, proposer: int, action: str) -> None:
    if seat != proposer:
        wait = "wait for its proposal" if action == "propose" else "only it may pass"
        raise GameError(
            "not_your_turn",
            f"Seat {proposer} is the proposer this turn; {wait}.",
            {"proposer": proposer},
        )


def check_pass_allowed(allowed: bool) -> None:
    if not allowed:
        raise GameError("not_allowed", "This game does not allow passing; make a proposal instead.", {})


def check_crafting_open(seat: int, done: bool, action: str) -> None:
    if done:
        already = "have finished" if action == "craft" else "have already finished"
        raise GameError(
            "already_finished",
            f"You {already} crafting this phase; wait for the others.",
            {"seat": seat},
        )


# --- what the action names -----------------------------------------------------------------------
def check_message(message: str, field: str, limit: int) -> None:
    if len(message) > limit:
        raise GameError(
            "message_too_long",
            f"The {field} has {len(message)} characters; shorten it to at most {limit}.",
            {"field": field, "length": len(message), "max": limit},
        )


def canonical_item(rules: RuleSet, item: str, field: str) -> str:
    canonical = rules.canonical(item)
    if canonical not in rules.items:
        raise GameError(
            "unknown_item",
            f"There is no item {item!r} in rule set {rules.name}; check the spelling "
            "(item ids look like 'oak_planks').",
            {"field": field, "item": item},
        )
    return canonical


def canonical_counts(rules: RuleSet, counts: Mapping[str, int], field: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item, count in counts.items():
        canonical = canonical_item(rules, item, field)
        out[canonical] = out.get(canonical, 0) + count
    return dict(sorted(out.items()))


def check_held(hand: Mapping[str, int], seat: int, wanted: Mapping[str, int], side: str) -> None:
    """``hand`` (seat ``seat``'s public hand) holds the ``wanted`` canonical items of a trade's ``side``."""
    for item, count in wanted.items():
        have = hand.get(item, 0)
        if have < count:
            whose = "you hold" if side == "offer" else f"seat {seat} holds"
            raise GameError(
                "item_not_held",
                f"The {side} names {count} {item} but {whose} {have}; "
                f"{side} only items {'you hold' if side == 'offer' else 'that player holds'}.",
                {"side": side, "seat": seat, "item": item, "wanted": count, "held": have},
            )


def check_proposal(
    seat: int,
    action: Propose,
    *,
    hands: Sequence[Mapping[str, int]],
    active: Sequence[bool],
    rules: RuleSet,
    message_max_chars: int,
) -> tuple[dict[str, int], dict[str, int]]:
    """A proposal's addressee, items and message against the public ``hands``; (offer, request) with
    canonical item ids."""
    to, players = action.to, len(hands)
    if not 0 <= to < players:
        raise GameError(
            "unknown_player",
            f"There is no seat {to}; propose to one of seats 0..{players - 1} other than yours.",
            {"to": to},
        )
    if to == seat:
        raise GameError(
            "proposal_to_self", "You cannot trade with yourself; propose to another seat.", {"to": to}
        )
    if not active[to]:
        raise GameError("player_left", f"Seat {to} has left the game; propose to an active seat.", {"to": to})
    offer = canonical_counts(rules, action.offer, "offer")
    request = canonical_counts(rules, action.request, "request")
    if not offer and not request:
        raise GameError(
            "empty_trade",
            "A proposal must offer or request at least one item (or pass, if the game allows it).",
            {},
        )
    both = sorted(offer.keys() & request.keys())
    if both:
        raise GameError(
            "same_item_both_sides",
            f"{', '.join(both)} cannot be both offered and requested; trade only the difference.",
            {"items": both},
        )
    check_held(hands[seat], seat, offer, "offer")
    check_held(hands[to], to, request, "request")
    check_message(action.message, "message", message_max_chars)
    return offer, request


def check_decision(
    seat: int,
    action: Decide,
    pending: Mapping[str, Any],
    hands: Sequence[Mapping[str, int]],
    message_max_chars: int,
) -> None:
    """A decision by ``seat`` on the ``pending`` proposal (an accepted trade must still be affordable)."""
    if seat != pending["to"]:
        raise GameError(
            "not_your_turn",
            "The pending proposal is not addressed to you; wait for the trade phase to end.",
            {},
        )
    check_message(action.message, "reply", message_max_chars)
    if action.accept:
        check_held(hands[pending["proposer"]], pending["proposer"], pending["offer"], "offer")
        check_held(hands[seat], seat, pending["request"], "request")


def check_tom_values(
    rules: RuleSet, field: str, values: Mapping[str, int], items: set[str]
) -> dict[str, int]:
    """One value dict of a ToM report covers exactly ``items``; it with canonical item ids."""
    out: dict[str, int] = {}
    for item, value in values.items():
        out[rules.canonical(item)] = value
    missing = sorted(items - out.keys())
    extra = sorted(out.keys() - items)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if extra:
            parts.append(f"not in any public hand: {', '.join(extra)}")
        raise GameError(
            "invalid_tom_report",
            f"{field} must give a 0-10 value for exactly the items in the public hands ({'; '.join(parts)}).",
            {"field": field, "missing": missing, "extra": extra},
        )
    return dict(sorted(out.items()))


def check_tom_report(
    seat: int,
    action: ReportToM,
    *,
    orders: Sequence[int],
    opponents: Sequence[int],
    items: Sequence[str],
    rules: RuleSet,
) -> tuple[dict[str, int], dict[str, SeatValues | None]]:
    """A ToM report's orders, seat keys and item sets; (v0, {"v1": ..., "v2": ...}) with canonical ids."""
    wanted = set(items)
    v0 = check_tom_values(rules, "v0", action.v0, wanted)
    per_order: dict[str, SeatValues | None] = {}
    for order, name, given in ((1, "v1", action.v1), (2, "v2", action.v2)):
        if order not in orders:
            if given is not None:
                raise GameError(
                    "tom_not_requested",
                    f"This game does not ask seat {seat} for {name}; send only "
                    f"{', '.join('v' + str(o) for o in orders)}.",
                    {"seat": seat, "order": order},
                )
            per_order[name] = None
            continue
        expected_keys = {str(s) for s in opponents}
        if given is None or set(given) != expected_keys:
            raise GameError(
                "invalid_tom_report",
                f"{name} must hold one value dict per opponent, keyed by seat: "
                f"{sorted(expected_keys)}; got {sorted(given or {})}.",
                {"field": name, "expected_seats": sorted(expected_keys), "got": sorted(given or {})},
            )
        per_order[name] = {
            key: check_tom_values(rules, f"{name}.{key}", values, wanted)
            for key, values in sorted(given.items())
        }
    return v0, per_order


@dataclass(frozen=True)
class CheckedCraft:
    """A craft the crafting hand affords, with canonical ids, and what it consumes and produces."""

    recipe: str
    runs: Fraction
    choices: dict[int, str]
    fuel: str | None
    result: CraftResult


def check_craft(
    rules: RuleSet, hand: Mapping[str, Fraction], action: Craft, *, whole_runs: bool
) -> CheckedCraft:
    """A craft run on the private crafting ``hand``."""
    recipe = action.recipe
    if recipe not in rules.recipes:
        recipe = rules.canonical(recipe)
    choices = {i: canonical_item(rules, item, f"choices.{i}") for i, item in action.choices.items()}
    fuel = canonical_item(rules, action.fuel, "fuel") if action.fuel is not None else None
    try:
        runs = parse_runs(action.runs, whole_runs=whole_runs)
        result = craft(rules, hand, recipe, runs, choices, fuel, whole_runs=whole_runs)
    except CraftError as err:
        raise GameError.from_craft_error(err) from None
    return CheckedCraft(recipe, runs, choices, fuel, result)


# --- the same checks over a player view ----------------------------------------------------------
def check_against_view(view: Mapping[str, Any], action: Any, rules: RuleSet) -> None:
    """Raise the :class:`GameError` the engine would raise applying the parsed ``action`` of the seat whose
    player ``view`` this is, as far as the view shows (see the module docstring); None when it would
    apply. ``rules`` is the game's rule set. The view must show the real phase: it does for every seat
    whose move is awaited (a third player sees ``"trade"`` during a trade phase)."""
    seat, kind = view["seat"], action.type
    check_not_over(view["finished"], view["end_reason"], view["winners"])
    if kind == "timeout":
        check_system_actor(seat)
    check_active(seat, view["active"][seat])
    if kind == "resign":
        return
    check_phase(view["phase"], ACTION_PHASES[kind], kind)
    hands, settings = view["hands"], view["rules"]
    if kind == "report_tom":
        tom = view["tom"] or {"orders": [], "due": False, "items": [], "opponents": []}
        check_tom_due(seat, tom["orders"], tom["due"], view["turn"])
        check_tom_report(
            seat, action, orders=tom["orders"], opponents=tom["opponents"], items=tom["items"], rules=rules
        )
    elif kind in ("propose", "pass"):
        check_proposer(seat, view["proposer"], kind)
        if kind == "pass":
            check_pass_allowed("pass" in view["legal_actions"])
        else:
            check_proposal(
                seat,
                action,
                hands=hands,
                active=view["active"],
                rules=rules,
                message_max_chars=settings["message_max_chars"],
            )
    elif kind == "decide":
        check_decision(seat, action, view["pending_proposal"], hands, settings["message_max_chars"])
    else:
        check_crafting_open(seat, seat in view["crafting_finished"], kind)
        if kind == "craft":
            hand = {item: Fraction(count) for item, count in (view["crafting_hand"] or {}).items()}
            check_craft(rules, hand, action, whole_runs=settings["crafting_runs"] == "whole")
