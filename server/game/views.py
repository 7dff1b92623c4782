"""What each participant may see: per-player, spectator and researcher views, and filtered logs.

All views are fresh JSON-safe dicts (Fractions as strings like ``"3/4"``); changing one never changes
the game. What a player never sees: other players' targets, their crafting in progress, their ToM
reports, and any proposal it was not party to — not even whom a pending proposal is addressed to (in
the decision phase a third player sees ``awaiting: []``), nor, while the game runs, the task
instance's id (the shipped instance files hold the targets; researcher views and exports keep it).

Keys of a player view (the spectator view has the same keys, with the private ones empty):

- ``seat``, ``players``, ``instance_id`` (None while the game runs: the id names a public task file holding
  every target; shown once the game is over), ``ruleset``, ``turn``, ``max_turns``, ``phase``,
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
- ``proposals``: the proposals the viewer was party to in the last :data:`VIEW_HISTORY_TURNS` turns,
  with status and reply
- ``trade_history``: per turn of the last :data:`VIEW_HISTORY_TURNS` turns, the proposer and the public
  outcome (passed / traded with the trade / no_trade); for turns the viewer took part in, the private
  outcome. Older turns are in the viewer's events (clients keep them; the ``history`` query pages them),
  so a view costs the same at turn 500 as at turn 5.
- ``target_reachable``: whether any combination of all active seats' public hands can still make the
  viewer's own target (False: it cannot win any more; None: unknown, not started, over, or a spectator),
  computed for every seat alike and shown to that seat only (:mod:`server.game.reach`)
- ``tom``: the viewer's ToM duty: ``orders``, ``due`` (a report is awaited now), ``items`` to value,
  ``opponents`` (keys of v1/v2)
- ``rules``: settings every player may know (allow_pass, message_max_chars, end_condition, deadlines,
  timeout_policies, crafting_runs, scoring, trade_messages)
- an accepted trade's ``message`` / ``reply`` in ``trade_history`` are shown to a third player only
  when the game's ``trade_messages`` is ``public`` (always in a two-player game)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from craft_rules.crafting import fmt_qty
from server.game.errors import GameError
from server.game.events import filter_events, viewer_log
from server.game.legal import legal_actions
from server.game.reach import target_reachable
from server.game.state import Game

__all__ = [
    "VIEW_HISTORY_TURNS",
    "filter_events",
    "player_view",
    "researcher_view",
    "spectator_view",
    "viewer_log",
]

# Views are built on the server's hot path (each seat's view after every change), so they are made of
# fresh dicts and lists rather than copy.deepcopy, and the parts every viewer shares are computed once
# per state (Game.state_cache). Each view still owns every container in it: changing one never changes
# the game, another view or a later one.

TRADE_PHASES = ("trade_propose", "trade_decide")

VIEW_HISTORY_TURNS = 20
"""How many of the latest turns a view's ``trade_history`` and ``proposals`` cover. A view's cost must
not grow with the game's length (the server builds every seat's view after every change), and clients
already receive the whole history as events; 20 turns covers a whole game of the usual lengths."""
_TRADE_KEYS = ("proposer", "to", "offer", "request", "message", "reply")


@dataclass(frozen=True, slots=True)
class _Shared:
    """The viewer-independent parts of the current state's views; never handed out, only copied."""

    rules: dict[str, Any]
    messages_public: bool  # whether third players read accepted trades' messages
    # per turn: (turn, proposer, outcome, the public trade if one was made, the turn's proposal's parties)
    history: tuple[tuple[int, int, str | None, dict[str, Any] | None, tuple[int, int] | None], ...]


def _shared(game: Game) -> _Shared:
    cache = game.state_cache()
    shared: _Shared | None = cache.get("views")
    if shared is None:
        shared = cache["views"] = _build_shared(game)
    return shared


def _build_shared(game: Game) -> _Shared:
    by_turn = {p["turn"]: p for p in game.recent_proposals(VIEW_HISTORY_TURNS)}
    history = []
    for record in game.recent_turn_records(VIEW_HISTORY_TURNS):
        proposal = by_turn.get(record["turn"])
        trade = None
        if record["outcome"] == "traded" and proposal is not None:
            trade = {k: proposal[k] for k in _TRADE_KEYS}
        parties = (proposal["proposer"], proposal["to"]) if proposal is not None else None
        history.append((record["turn"], record["proposer"], record["outcome"], trade, parties))
    return _Shared(
        rules=_public_settings(game), messages_public=game.trade_messages_public, history=tuple(history)
    )


def _copy_trade(trade: dict[str, Any]) -> dict[str, Any]:
    return {**trade, "offer": dict(trade["offer"]), "request": dict(trade["request"])}


def _copy_rules(rules: dict[str, Any]) -> dict[str, Any]:
    return {
        **rules,
        "deadlines": dict(rules["deadlines"]),
        "timeout_policies": dict(rules["timeout_policies"]),
        "scoring": dict(rules["scoring"]),
    }


def _party(parties: tuple[int, int] | None, seat: int | None) -> bool:
    return parties is not None and seat is not None and seat in parties


def _trade_history(shared: _Shared, viewer: int | None) -> list[dict[str, Any]]:
    history = []
    for turn, proposer, outcome, trade, parties in shared.history:
        entry: dict[str, Any] = {"turn": turn, "proposer": proposer}
        if outcome == "passed":
            entry["outcome"] = "passed" if viewer == proposer else "no_trade"
        elif trade is not None:
            entry["outcome"] = "traded"
            entry["trade"] = _copy_trade(trade)
            if not shared.messages_public and viewer not in (parties or ()):
                del entry["trade"]["message"], entry["trade"]["reply"]
        elif outcome is None:
            entry["outcome"] = "in_progress"
        elif parties is not None and viewer in parties:
            entry["outcome"] = outcome  # proposed (pending) / rejected / cancelled, with whom
            entry["to"] = parties[1]
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
        "crafting_runs": s.crafting_runs,
        "scoring": s.scoring.model_dump(),
        "trade_messages": s.trade_messages,
    }


def _outsider_of_trade(game: Game, viewer: int | None) -> bool:
    """True when ``viewer`` may not know whether a proposal is pending this trade phase."""
    if game.phase not in TRADE_PHASES or viewer == game.proposer:
        return False
    return not _party(game.pending_parties, viewer)


def move_key(game: Game, seat: int | None) -> str:
    """Where ``seat`` is in its own play: the turn, the phase it sees and its crafts so far this phase.

    It names one move of the seat, whoever computes it (the view's ``move_key``; the server's bot seats key
    their retry seeds and client action ids by it; policies seed per-move randomness with it). Unlike the log
    position it does not depend on how simultaneous moves of other seats interleaved with the seat's own, and
    a seat outside a trade sees ``trade`` as the phase, so the key tells it no more than its view does.
    """
    return _move_key(game, seat, _outsider_of_trade(game, seat))


def _move_key(game: Game, seat: int | None, outsider: bool) -> str:
    crafts = game.craft_count(seat) if seat is not None else 0
    return f"{game.turn}:{'trade' if outsider else game.phase}:{crafts}"


def _base_view(game: Game, viewer: int | None) -> dict[str, Any]:
    shared = _shared(game)
    n = game.players
    outsider = _outsider_of_trade(game, viewer)
    awaiting = [] if outsider else sorted(game.waiting_for())
    return {
        "seat": viewer,
        "players": n,
        "instance_id": game.instance.id if game.finished else None,
        "ruleset": game.rules.name,
        "turn": game.turn,
        "max_turns": game.max_turns,
        "phase": "trade" if outsider else game.phase,
        "move_key": _move_key(game, viewer, outsider),
        "proposer": game.proposer,
        "finished": game.finished,
        "winners": game.winners,
        "end_reason": game.end_reason,
        "log_size": game.log_size(viewer),
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
        "trade_history": _trade_history(shared, viewer),
        "tom": None,
        "target_reachable": None,
        "rules": _copy_rules(shared.rules),
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
    view["target_reachable"] = target_reachable(game, seat)
    hand = game.crafting_hand(seat)
    if hand is not None:
        view["crafting_hand"] = {item: fmt_qty(q) for item, q in sorted(hand.items())}
        view["crafts_this_phase"] = game.crafts_this_phase(seat)  # fresh copies
    if _party(game.pending_parties, seat):
        view["pending_proposal"] = game.pending_proposal  # a fresh copy
    # fresh copies; a seat's proposals are the ones it made or was made, in the recent window
    recent = game.recent_proposals(VIEW_HISTORY_TURNS)
    view["proposals"] = [p for p in recent if seat in (p["proposer"], p["to"])]
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
    view = copy.deepcopy(game.snapshot())  # rare (admin/export): no need to be fast
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
