"""What each participant may see: per-player, spectator and researcher views, and filtered logs.

All views are fresh JSON-safe dicts (Fractions as strings like ``"3/4"``); changing one never changes
the game. What a player never sees: other players' targets, their crafting in progress, their ToM
reports, and any proposal it was not party to — not even whom a pending proposal is addressed to (in
the decision phase a third player sees ``awaiting: []``).

Keys of a player view (the spectator view has the same keys, with the private ones empty):

- ``seat``, ``players``, ``instance_id``, ``ruleset``, ``turn``, ``max_turns``, ``phase``,
  ``proposer``, ``finished``, ``winners``, ``end_reason``, ``log_size`` (how many events the viewer's
  own log holds: see ``viewer_log``; the game's global sequence numbers are never shown to players,
  since their gaps would count other seats' private events)
- during the trade phase a seat that is neither the proposer nor the addressee of a pending proposal
  sees ``phase`` ``"trade"`` and no awaited seats: whether a proposal is on the table, and so whether
  a turn without a trade saw a rejection or a pass, is the two parties' business
- ``awaiting``: seats whose action is awaited that this viewer may know of; ``your_turn``: whether the
  viewer's own action is awaited; ``legal_actions``: action types the viewer may send now
- ``target``: own target; ``hands``: every public hand (list by seat); ``active``: per seat, not resigned
- ``crafting_hand``: own private hand during the craft phase, else None; ``crafts_this_phase``: own crafts
- ``crafting_finished``: seats that declared they are done crafting (public)
- ``pending_proposal``: the proposal awaiting a decision, only if the viewer is party to it
- ``proposals``: every proposal the viewer was party to, with status and reply
- ``trade_history``: per turn, the proposer and the public outcome (passed / traded with the trade /
  no_trade); for turns the viewer took part in, the private outcome
- ``tom``: the viewer's ToM duty: ``orders``, ``due`` (a report is awaited now), ``items`` to value,
  ``opponents`` (keys of v1/v2)
- ``rules``: settings every player may know (allow_pass, message_max_chars, end_condition, deadlines)
"""

from __future__ import annotations

import copy
from typing import Any

from craft_rules.crafting import fmt_qty
from server.game.errors import GameError
from server.game.events import filter_events, viewer_log, visible_to
from server.game.legal import legal_actions
from server.game.state import Game

__all__ = ["filter_events", "player_view", "researcher_view", "spectator_view", "viewer_log"]


def _party(proposal: dict[str, Any], seat: int | None) -> bool:
    return seat is not None and seat in (proposal["proposer"], proposal["to"])


def _trade_history(game: Game, viewer: int | None) -> list[dict[str, Any]]:
    by_turn = {p["turn"]: p for p in game.proposals}
    history = []
    for record in game.turn_records:
        outcome = record["outcome"]
        entry: dict[str, Any] = {"turn": record["turn"], "proposer": record["proposer"]}
        proposal = by_turn.get(record["turn"])
        if outcome == "passed":
            entry["outcome"] = "passed" if viewer == record["proposer"] else "no_trade"
        elif outcome == "traded" and proposal is not None:
            entry["outcome"] = "traded"
            entry["trade"] = {
                k: copy.deepcopy(proposal[k])
                for k in ("proposer", "to", "offer", "request", "message", "reply")
            }
        elif outcome is None:
            entry["outcome"] = "in_progress"
        elif proposal is not None and _party(proposal, viewer):
            entry["outcome"] = outcome  # proposed (pending) / rejected / cancelled, with whom
            entry["to"] = proposal["to"]
        else:
            # a third party learns only that no trade happened (or is still being decided)
            entry["outcome"] = "in_progress" if outcome == "proposed" else "no_trade"
        history.append(entry)
    return history


def _public_settings(game: Game) -> dict[str, Any]:
    s = game.settings
    return {
        "allow_pass": s.allow_pass,
        "message_max_chars": s.message_max_chars,
        "end_condition": s.end_condition,
        "deadlines": s.deadlines.model_dump(),
        "timeout_policies": s.timeout_policies.model_dump(),
    }


TRADE_PHASES = ("trade_propose", "trade_decide")


def _outsider_of_trade(game: Game, viewer: int | None) -> bool:
    """True when ``viewer`` may not know whether a proposal is pending this trade phase."""
    if game.phase not in TRADE_PHASES or viewer == game.proposer:
        return False
    pending = game.pending_proposal
    return pending is None or not _party(pending, viewer)


def _base_view(game: Game, viewer: int | None) -> dict[str, Any]:
    n = game.players
    outsider = _outsider_of_trade(game, viewer)
    awaiting = [] if outsider else sorted(game.waiting_for())
    return {
        "seat": viewer,
        "players": n,
        "instance_id": game.instance.id,
        "ruleset": game.rules.name,
        "turn": game.turn,
        "max_turns": game.settings.max_turns,
        "phase": "trade" if outsider else game.phase,
        "proposer": game.proposer,
        "finished": game.finished,
        "winners": game.winners,
        "end_reason": game.end_reason,
        "log_size": sum(1 for e in game.events if visible_to(e, viewer)),
        "awaiting": awaiting,
        "your_turn": False,
        "legal_actions": [],
        "target": None,
        "hands": game.hands,
        "active": [game.is_active(s) for s in range(n)],
        "crafting_hand": None,
        "crafts_this_phase": [],
        "crafting_finished": game.crafting_finished(),
        "pending_proposal": None,
        "proposals": [],
        "trade_history": _trade_history(game, viewer),
        "tom": None,
        "rules": _public_settings(game),
    }


def player_view(game: Game, seat: int) -> dict[str, Any]:
    """What ``seat`` sees now (see the module docstring for the keys)."""
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < game.players:
        raise GameError(
            "not_a_player",
            f"Seat {seat!r} is not a player of this game; seats are 0..{game.players - 1}.",
            {"seat": seat if isinstance(seat, int) else str(seat)},
        )
    view = _base_view(game, seat)
    view["your_turn"] = seat in game.waiting_for()
    view["legal_actions"] = legal_actions(game, seat)
    view["target"] = game.target(seat)
    hand = game.crafting_hand(seat)
    if hand is not None:
        view["crafting_hand"] = {item: fmt_qty(q) for item, q in sorted(hand.items())}
        view["crafts_this_phase"] = copy.deepcopy(game.crafts_this_phase(seat))
    pending = game.pending_proposal
    if pending is not None and _party(pending, seat):
        view["pending_proposal"] = copy.deepcopy(pending)
    view["proposals"] = [copy.deepcopy(p) for p in game.proposals if _party(p, seat)]
    orders = game.tom_orders(seat)
    if orders:
        due = seat in game.tom_awaiting()
        view["tom"] = {
            "orders": list(orders),
            "due": due,
            "items": game.tom_items if due else [],
            "opponents": [s for s in game.active_seats if s != seat],
        }
    return view


def spectator_view(game: Game) -> dict[str, Any]:
    """What an onlooker sees: public hands, phase, turn, proposer, public history; no targets."""
    return _base_view(game, None)


def researcher_view(game: Game) -> dict[str, Any]:
    """Everything: the full state (targets, crafting hands, all proposals, ToM reports, per-seat
    consecutive-timeout counters), the settings snapshot and the true set of awaited seats."""
    view = copy.deepcopy(game.snapshot())
    view.update(
        {
            "seat": None,
            "ruleset": game.rules.name,
            "settings": game.settings.model_dump(),
            "waiting_for": sorted(game.waiting_for()),
            "finished": game.finished,
            "winners": game.winners,
            "last_seq": len(game.events) - 1,
            "idle_timeouts": game.idle_timeouts(),
            "idle_timeouts_before_bot": game.settings.idle_timeouts_before_bot,
            "log_digest": game.log_digest(),
        }
    )
    return view
