"""Events: the game's log. The state is a pure function of (instance, settings, seed, events).

An event has a sequence number (0, 1, 2, ... per game), a type, the seat that caused it (None for the
system), a JSON-safe payload (Fractions as strings like ``"3/4"``) and a visibility: ``"public"`` or
the tuple of seats that may see it. The store adds a server timestamp; the engine has no clock.

Event types and their visibility
================================
=====================  =============  ==========================================================
type                   visibility     payload
=====================  =============  ==========================================================
game_started           public         instance_id, ruleset, players, hands, max_turns, first_proposer
phase_started          public         turn, phase, proposer, awaiting; tom_report: items
tom_reported           the reporter   seat, turn, v0, v1, v2 (v1/v2 keyed by opponent seat)
tom_skipped            public         seat, turn, reason (timeout | resign)
proposed               the 2 parties  turn, proposer, to, offer, request, message
decided                the 2 parties  turn, proposer, seat, accept, message, reason (timeout|resign)
trade_executed         public         turn, proposer, to, offer, request[, message, reply] [3]
proposal_cancelled     the 2 parties  turn, proposer, to, reason (the proposer resigned)
passed                 the proposer   turn, seat, reason (absent | timeout | resign) [2]
crafted                the crafter    turn, seat, recipe, runs, choices, fuel, consumed, produced
craft_finished         public         turn, seat, reason (absent | timeout | resign): only THAT
                                      it is done
hands_revealed         public         turn, hands (floored, one per seat)
player_won             public         turn, seat (held its target after this craft phase)
turn_ended             public         turn
targets_revealed       public         turn, targets (one per seat), winners, scores (points per
                                      seat by the game's scoring rule); just before game_ended
game_ended             public         turn, winners, reason (target_crafted | max_turns |
                                      too_few_players)
timeout                public [1]     turn, phase, seats, policy
resigned               public         turn, seat
=====================  =============  ==========================================================

[1] A timeout of the decision phase is seen by the two parties only: its awaited seat would reveal
whom the proposal went to.
[2] Private so that a third player cannot tell a pass from a rejected proposal: both leave it a turn
without a trade (a timeout or a resignation that causes the pass is public on its own).
[3] message and reply only when the settings' ``trade_messages`` is ``public`` or the game has two
players; otherwise the two traders read them in their private proposed / decided events.

Viewers never see a running game's ``instance_id`` (``game_started`` keeps it for researchers and exports;
:func:`for_viewer` drops it): the id names a public task file that holds every player's target.

Players never see global sequence numbers: ``viewer_log`` numbers the events a viewer may see
0, 1, 2, ... (``n``), because gaps in the global numbering would count other seats' private events.

``actor`` is the seat whose own action caused the event; it is None for system transitions and for
duties resolved by a timeout or a resignation (those payloads carry ``reason``). An event with an
actor ends that seat's streak of consecutive timeouts.

A rejected (or cancelled) proposal is seen by its two parties only: ``proposed`` / ``decided`` are
private to them, and there is no public phase_started for the decision. An accepted one becomes
public through ``trade_executed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PUBLIC = "public"

EVENT_TYPES: frozenset[str] = frozenset(
    {
        "game_started",
        "phase_started",
        "tom_reported",
        "tom_skipped",
        "proposed",
        "decided",
        "trade_executed",
        "proposal_cancelled",
        "passed",
        "crafted",
        "craft_finished",
        "hands_revealed",
        "player_won",
        "turn_ended",
        "targets_revealed",
        "game_ended",
        "timeout",
        "resigned",
    }
)

Visibility = str | tuple[int, ...]

#: Payload keys kept in the log for researchers but never shown to players or spectators (see for_viewer).
RESEARCHER_ONLY_KEYS: dict[str, frozenset[str]] = {"game_started": frozenset({"instance_id"})}


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a game's log. Immutable; ``payload`` must not be mutated after creation."""

    seq: int
    type: str
    actor: int | None
    payload: dict[str, Any]
    visibility: Visibility = PUBLIC

    @property
    def is_public(self) -> bool:
        return self.visibility == PUBLIC

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: the record the store keeps and exports carry."""
        return {
            "seq": self.seq,
            "type": self.type,
            "actor": self.actor,
            "payload": self.payload,
            "visibility": PUBLIC if self.visibility == PUBLIC else list(self.visibility),
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Event:
        """Inverse of :meth:`to_dict`; extra keys a store adds (``time``, ``game_id``) are ignored."""
        visibility = record.get("visibility", PUBLIC)
        if visibility != PUBLIC:
            visibility = tuple(int(s) for s in visibility)
        actor = record.get("actor")
        return cls(
            seq=int(record["seq"]),
            type=str(record["type"]),
            actor=None if actor is None else int(actor),
            payload=dict(record.get("payload") or {}),
            visibility=visibility,
        )


def visible_to(event: Event, seat: int | None) -> bool:
    """Whether ``seat`` may see ``event``; ``seat=None`` is a spectator (public events only)."""
    if event.visibility == PUBLIC:
        return True
    return seat is not None and seat in event.visibility


def for_viewer(event: Event) -> Event:
    """``event`` as a player or spectator receives it: without researcher-only payload keys."""
    hidden = RESEARCHER_ONLY_KEYS.get(event.type)
    if not hidden or not hidden & event.payload.keys():
        return event
    payload = {k: v for k, v in event.payload.items() if k not in hidden}
    return Event(event.seq, event.type, event.actor, payload, event.visibility)


def record_for_viewer(record: dict[str, Any]) -> dict[str, Any]:
    """A stored event record (``Event.to_dict`` plus store keys) as a viewer receives it; see for_viewer."""
    hidden = RESEARCHER_ONLY_KEYS.get(record.get("type", ""))
    payload = record.get("payload")
    if not hidden or not isinstance(payload, dict) or not hidden & payload.keys():
        return record
    return {**record, "payload": {k: v for k, v in payload.items() if k not in hidden}}


def viewer_log(events: Iterable[Event], seat: int | None, start: int = 0) -> list[dict[str, Any]]:
    """The events ``seat`` may see (None: a spectator), as dicts numbered ``n`` = position in that
    viewer's own log, without the global ``seq``. ``start`` is the position of the first given event
    in the viewer's log (for numbering a batch that continues an earlier one)."""
    out: list[dict[str, Any]] = []
    for event in events:
        if visible_to(event, seat):
            record = for_viewer(event).to_dict()
            del record["seq"]
            out.append({"n": start + len(out), **record})
    return out


def filter_events(events: Iterable[Event], seat: int | None) -> list[Event]:
    """The log as ``seat`` may see it (``None``: a spectator's log), researcher-only keys dropped
    (:func:`for_viewer`). Sequence numbers keep their gaps."""
    return [for_viewer(e) for e in events if visible_to(e, seat)]


def as_events(records: Iterable[Event | dict[str, Any]]) -> list[Event]:
    """Accept events or their dict form (as loaded from a store)."""
    return [r if isinstance(r, Event) else Event.from_dict(r) for r in records]
