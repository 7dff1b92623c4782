"""The game: a mutable, single-threaded state machine driven by actions and recorded as events.

``Game.new(instance, settings, rules, seed)`` starts a game; ``game.apply(actor, action)`` validates
the action completely, then appends its events and returns them; ``Game.replay(...)`` rebuilds the
exact state from a log.

How the two paths stay identical: the state changes in exactly one place, ``_on_<event type>``, one
method per event type, which reads only the event's payload and the current state. The live path
validates an action, then *emits* events (each applied at once through its ``_on_`` method, so the
next decision sees the new state); replay calls the same ``_on_`` methods on the stored events.
Decisions (who wins, which phase comes next, what a timeout does) are taken only on the live path
and written into the log, so replay never re-decides anything.

Turn structure (DESIGN.md §2): [tom_report] -> trade_propose -> [trade_decide] -> craft -> reveal and
win check -> next turn (or the end). The proposer rotates over active seats in seat order.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any, ClassVar

from pydantic import BaseModel

from craft_rules.crafting import floor_hand, fmt_qty
from craft_rules.model import RuleSet
from craft_rules.report_items import compact_report_items
from craft_rules.tasks import TaskInstance
from server.game import checks
from server.game.actions import Action, parse_action
from server.game.errors import GameError
from server.game.events import EVENT_TYPES, PUBLIC, Event, Visibility, as_events
from server.game.settings import GameSettings

_CANONICAL_JSON = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False}


def _canonical_json(data: Any) -> str:
    return json.dumps(data, **_CANONICAL_JSON)  # type: ignore[arg-type]


def holds(hand: Mapping[str, int | Fraction], wanted: Mapping[str, int]) -> bool:
    """Whether ``hand`` has at least ``wanted`` of every item."""
    return all(hand.get(item, 0) >= count for item, count in wanted.items())


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class Game:
    """One game. Not thread-safe: the server holds a lock per game around :meth:`apply`.

    Create it with :meth:`new` or :meth:`replay`, never with the constructor directly.
    """

    def __init__(self, instance: TaskInstance, settings: GameSettings, rules: RuleSet, seed: int):
        self.instance = instance
        self.settings = settings
        self.rules = rules
        self.seed = seed
        n = instance.players
        self._n = n
        self._targets: list[dict[str, int]] = [dict(t) for t in instance.targets]
        self._hands: list[dict[str, int]] = [{} for _ in range(n)]
        self._crafting: list[dict[str, Fraction]] | None = None
        self._crafting_done: set[int] = set()
        self._craft_log: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        self._active: list[bool] = [True] * n
        self._phase = "starting"
        self._turn = 0
        self._proposer = 0
        self._pending: dict[str, Any] | None = None
        self._proposals: list[dict[str, Any]] = []
        self._turn_records: list[dict[str, Any]] = []
        self._tom_awaiting: set[int] = set()
        self._tom_items: list[str] = []
        self._tom_reports: list[dict[str, Any]] = []
        self._winners: list[int] = []
        self._end_reason: str | None = None
        self._scores: list[int] | None = None
        self._idle: list[int] = [0] * n
        self._events: list[Event] = []
        # derived from the log (not state: the digest ignores them)
        self._counted = 0  # events counted into the two counters below, by log_size() when asked
        self._public_events = 0
        self._private_events: list[int] = [0] * n  # per seat: non-public events it may see
        self._state_cache: dict[str, Any] = {}  # emptied by every event

    # =============================================================================================
    # construction
    # =============================================================================================
    @classmethod
    def new(cls, instance: TaskInstance, settings: GameSettings, rules: RuleSet, seed: int) -> Game:
        """Start a game: emits ``game_started`` and the first turn's ``phase_started``.

        Raises ``GameError("invalid_settings")`` when settings and instance do not fit together
        (tom_orders for the wrong number of seats, first_proposer out of range, unknown items).
        """
        _check_setup(instance, settings, rules)
        game = cls(instance, settings, rules, seed)
        first = settings.first_proposer
        if first is None:
            # the seed's only use: drawing the first proposer (recorded in game_started)
            first = random.Random(seed).randrange(instance.players)
        game._emit(
            "game_started",
            None,
            {
                "instance_id": instance.id,
                "ruleset": rules.name,
                "players": instance.players,
                "hands": [dict(sorted(h.items())) for h in instance.hands],
                "max_turns": instance.turn_limit(settings.max_turns),
                "first_proposer": first,
            },
        )
        game._start_turn(1, first)
        return game

    @classmethod
    def replay(
        cls,
        instance: TaskInstance,
        settings: GameSettings,
        rules: RuleSet,
        seed: int,
        events: Iterable[Event | dict[str, Any]],
    ) -> Game:
        """Rebuild a game from its log (events or their dicts, e.g. as loaded from a store).

        Replaying a game's own events gives a game with the same :meth:`state_digest`. Raises
        ``GameError("invalid_log")`` on a gap in the sequence numbers, an unknown event type or a
        payload that does not fit the state.
        """
        game = cls(instance, settings, rules, seed)
        game.apply_events(events)
        return game

    def apply_events(self, events: Iterable[Event | dict[str, Any]]) -> None:
        """Append already-decided events (catching up from a store); see :meth:`replay`."""
        for event in as_events(events):
            if event.seq != len(self._events):
                raise GameError(
                    "invalid_log",
                    f"Event log has a gap: expected seq {len(self._events)}, got {event.seq}; "
                    "load the whole log from seq 0.",
                    {"expected": len(self._events), "got": event.seq},
                )
            if event.type not in EVENT_TYPES:
                raise GameError(
                    "invalid_log",
                    f"Event {event.seq} has unknown type {event.type!r}; the log is from another version.",
                    {"seq": event.seq, "type": event.type},
                )
            if not self._events and event.type != "game_started":
                raise GameError("invalid_log", "An event log must begin with game_started.", {})
            try:
                self._apply_event(event)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise GameError(
                    "invalid_log",
                    f"Event {event.seq} ({event.type}) does not fit the game state: {exc!r}.",
                    {"seq": event.seq, "type": event.type},
                ) from exc

    # =============================================================================================
    # reading
    # =============================================================================================
    @property
    def events(self) -> list[Event]:
        """Every event so far (do not mutate)."""
        return self._events

    @property
    def players(self) -> int:
        return self._n

    @property
    def phase(self) -> str:
        """tom_report | trade_propose | trade_decide | craft | finished"""
        return self._phase

    @property
    def turn(self) -> int:
        """The current turn, 1-based (turn 1 is the first trade + craft)."""
        return self._turn

    @property
    def proposer(self) -> int:
        return self._proposer

    @property
    def max_turns(self) -> int:
        """Turns the game lasts at most: the instance's own ``max_turn``, else the settings'."""
        return self.instance.turn_limit(self.settings.max_turns)

    @property
    def finished(self) -> bool:
        return self._phase == "finished"

    @property
    def winners(self) -> list[int]:
        return sorted(self._winners)

    @property
    def scores(self) -> list[int] | None:
        """Points per seat, once the game has ended and its targets were revealed."""
        return list(self._scores) if self._scores is not None else None

    @property
    def end_reason(self) -> str | None:
        """target_crafted | max_turns | too_few_players, once finished."""
        return self._end_reason

    @property
    def hands(self) -> list[dict[str, int]]:
        """Public (floored) hands, one per seat. During crafting: the hands at the phase's start."""
        return [dict(h) for h in self._hands]

    @property
    def active_seats(self) -> list[int]:
        """Seats that have not resigned."""
        return [s for s in range(self._n) if self._active[s]]

    def is_active(self, seat: int) -> bool:
        return 0 <= seat < self._n and self._active[seat]

    def target(self, seat: int) -> dict[str, int]:
        """The private target of ``seat``."""
        return dict(self._targets[seat])

    def crafting_hand(self, seat: int) -> dict[str, Fraction] | None:
        """The private in-progress hand of ``seat`` during a craft phase, else None."""
        if self._crafting is None:
            return None
        return dict(self._crafting[seat])

    def crafts_this_phase(self, seat: int) -> list[dict[str, Any]]:
        """Payloads of the crafts ``seat`` made in the current craft phase (private to it); fresh copies."""
        return [_fresh(c) for c in self._craft_log[seat]] if self._crafting is not None else []

    def craft_count(self, seat: int) -> int:
        """How many crafts ``seat`` made in the current craft phase (0 outside one)."""
        return len(self._craft_log[seat]) if self._crafting is not None else 0

    def crafting_finished(self) -> list[int]:
        """Seats done crafting in the current craft phase (public knowledge)."""
        return sorted(self._crafting_done) if self._crafting is not None else []

    @property
    def pending_proposal(self) -> dict[str, Any] | None:
        """The proposal awaiting a decision (private to its two parties), else None; a fresh copy."""
        return _copy_proposal(self._pending) if self._pending is not None else None

    @property
    def pending_parties(self) -> tuple[int, int] | None:
        """(proposer, addressee) of the proposal awaiting a decision, else None (no copy made)."""
        pending = self._pending
        return (pending["proposer"], pending["to"]) if pending is not None else None

    @property
    def proposals(self) -> list[dict[str, Any]]:
        """Every proposal so far with its status (pending/accepted/rejected/cancelled); private.
        Fresh copies."""
        return [_copy_proposal(p) for p in self._proposals]

    @property
    def turn_records(self) -> list[dict[str, Any]]:
        """Per turn: proposer and outcome (passed/proposed/traded/rejected/cancelled); private detail."""
        return [dict(r) for r in self._turn_records]

    def recent_turn_records(self, turns: int) -> list[dict[str, Any]]:
        """:attr:`turn_records` of the last ``turns`` turns only (fresh copies): a view's bounded window,
        whose cost does not grow with the game."""
        return [dict(r) for r in self._turn_records[-turns:]] if turns > 0 else []

    def recent_proposals(self, turns: int) -> list[dict[str, Any]]:
        """:attr:`proposals` made in the last ``turns`` turns only (fresh copies, oldest first). There is
        at most one proposal per turn, so this reads at most ``turns`` records."""
        if turns <= 0 or not self._turn_records:
            return []
        first = self._turn_records[-min(turns, len(self._turn_records))]["turn"]
        out = []
        for record in reversed(self._proposals):
            if record["turn"] < first:
                break
            out.append(_copy_proposal(record))
        out.reverse()
        return out

    def tom_orders(self, seat: int) -> tuple[int, ...]:
        return self.settings.orders_for(seat)

    def tom_awaiting(self) -> set[int]:
        return set(self._tom_awaiting) if self._phase == "tom_report" else set()

    @property
    def tom_items(self) -> list[str]:
        """Items the current turn's ToM reports cover (every item in the public hands at its start)."""
        return list(self._tom_items)

    @property
    def tom_reports(self) -> list[dict[str, Any]]:
        """Every ToM report so far (researcher data; each is private to its reporter)."""
        return [dict(r) for r in self._tom_reports]

    def log_size(self, seat: int | None) -> int:
        """How many events ``seat`` may see (None: a spectator, public events only), i.e.
        ``sum(visible_to(e, seat) for e in events)``, counting each event once, when first asked
        (views need it after every change; replay should not pay for it)."""
        events = self._events
        if self._counted < len(events):
            counts = self._private_events
            for index in range(self._counted, len(events)):
                visibility = events[index].visibility
                if visibility == PUBLIC:
                    self._public_events += 1
                else:
                    for viewer in set(visibility):  # a set: visible_to counts an event once
                        if 0 <= viewer < self._n:
                            counts[viewer] += 1
            self._counted = len(events)
        if seat is not None and 0 <= seat < self._n:
            return self._public_events + self._private_events[seat]
        return self._public_events

    def state_cache(self) -> dict[str, Any]:
        """Scratch space for values derived from the current state (e.g. view parts every viewer
        shares). Every event empties it, so nothing in it outlives the state it was computed from."""
        return self._state_cache

    def idle_timeouts(self) -> list[int]:
        """Per seat: consecutive timeouts since the seat last acted itself."""
        return list(self._idle)

    def proposal_possible(self) -> bool:
        """Whether the proposer can make any valid proposal (some item on either side of a trade)."""
        seat = self._proposer
        if self._hands[seat]:
            return any(self._active[s] for s in range(self._n) if s != seat)
        return any(self._hands[s] for s in range(self._n) if s != seat and self._active[s])

    @property
    def trade_messages_public(self) -> bool:
        """Whether everyone reads an accepted trade's message and reply (always so with 2 players,
        who are both its parties); otherwise only the two traders do, from their private events."""
        return self.settings.trade_messages == "public" or self._n == 2

    def pass_allowed(self) -> bool:
        """Passing is allowed by the settings, or forced because no proposal is possible."""
        return self.settings.allow_pass or not self.proposal_possible()

    def waiting_for(self) -> set[int]:
        """Seats whose action is awaited now (empty when the game is over)."""
        phase = self._phase
        if phase == "tom_report":
            return set(self._tom_awaiting)
        if phase == "trade_propose":
            return {self._proposer}
        if phase == "trade_decide":
            return {self._pending["to"]} if self._pending else set()
        if phase == "craft":
            return {s for s in range(self._n) if self._active[s] and s not in self._crafting_done}
        return set()

    def snapshot(self) -> dict[str, Any]:
        """The whole state as canonical JSON-safe data (what :meth:`state_digest` hashes)."""
        crafting = None
        if self._crafting is not None:
            crafting = [{k: fmt_qty(v) for k, v in sorted(h.items())} for h in self._crafting]
        return {
            "instance_id": self.instance.id,
            "seed": self.seed,
            "players": self._n,
            "phase": self._phase,
            "turn": self._turn,
            "proposer": self._proposer,
            "active": list(self._active),
            "hands": self._hands,
            "targets": self._targets,
            "crafting": crafting,
            "crafting_done": sorted(self._crafting_done),
            "craft_log": self._craft_log,
            "pending": self._pending,
            "proposals": self._proposals,
            "turn_records": self._turn_records,
            "tom_awaiting": sorted(self._tom_awaiting),
            "tom_items": self._tom_items,
            "tom_reports": self._tom_reports,
            "winners": self._winners,
            "end_reason": self._end_reason,
            "scores": self._scores,
            "idle": self._idle,
            "events": len(self._events),
        }

    def state_digest(self) -> str:
        """sha256 of the canonical JSON of the whole state (equal states <=> equal digests)."""
        return hashlib.sha256(_canonical_json(self.snapshot()).encode()).hexdigest()

    def log_digest(self) -> str:
        """sha256 of the canonical JSON lines of the event log (same seed + actions -> same digest)."""
        digest = hashlib.sha256()
        for event in self._events:
            digest.update(_canonical_json(event.to_dict()).encode())
            digest.update(b"\n")
        return digest.hexdigest()

    # =============================================================================================
    # playing
    # =============================================================================================
    def apply(self, actor: int | None, action: Action | BaseModel | dict[str, Any] | str) -> list[Event]:
        """Validate ``action`` by ``actor`` (a seat, or None for the system) and apply it.

        Returns the new events (already appended to :attr:`events`). On an illegal action raises
        :class:`~server.game.errors.GameError` and the game is unchanged.
        """
        parsed = parse_action(action)
        checks.check_not_over(self._phase == "finished", self._end_reason, self.winners)
        start = len(self._events)
        try:
            self._HANDLERS[parsed.type](self, actor, parsed)
        except BaseException:
            # Validation happens before the first emit, so a GameError leaves nothing to undo; this
            # is the safety net for an unexpected failure after events were already applied.
            if len(self._events) > start:
                self._restore(start)
            raise
        return self._events[start:]

    def __repr__(self) -> str:
        return (
            f"<Game {self.instance.id} seed={self.seed} turn={self._turn} phase={self._phase} "
            f"events={len(self._events)}>"
        )

    def _restore(self, length: int) -> None:
        clean = Game.replay(self.instance, self.settings, self.rules, self.seed, self._events[:length])
        self.__dict__.update(clean.__dict__)

    # --- validation helpers ------------------------------------------------------------------------
    def _check_seat(self, actor: int | None, action: str) -> int:
        if actor is None:
            raise GameError(
                "not_a_player",
                f"'{action}' is a player action; the system may only send 'timeout'.",
                {"actor": None},
            )
        if isinstance(actor, bool) or not isinstance(actor, int) or not 0 <= actor < self._n:
            raise GameError(
                "not_a_player",
                f"Seat {actor!r} is not a player of this game; seats are 0..{self._n - 1}.",
                {"actor": actor if isinstance(actor, int) else str(actor)},
            )
        checks.check_active(actor, self._active[actor])
        return actor

    def _check_phase(self, wanted: str, action: str) -> None:
        checks.check_phase(self._phase, wanted, action)

    # --- action handlers: validate everything, then emit ---------------------------------------
    def _do_report_tom(self, actor: int | None, action: Any) -> None:
        seat = self._check_seat(actor, "report_tom")
        self._check_phase("tom_report", "report_tom")
        orders = self.settings.orders_for(seat)
        checks.check_tom_due(seat, orders, seat in self._tom_awaiting, self._turn)
        v0, per_order = checks.check_tom_report(
            seat,
            action,
            orders=orders,
            opponents=[s for s in range(self._n) if s != seat and self._active[s]],
            items=self._tom_items,
            rules=self.rules,
        )
        self._emit(
            "tom_reported",
            seat,
            {"turn": self._turn, "seat": seat, "v0": v0, "v1": per_order["v1"], "v2": per_order["v2"]},
            (seat,),
        )
        self._after_tom_report()

    def _do_propose(self, actor: int | None, action: Any) -> None:
        seat = self._check_seat(actor, "propose")
        self._check_phase("trade_propose", "propose")
        checks.check_proposer(seat, self._proposer, "propose")
        offer, request = checks.check_proposal(
            seat,
            action,
            hands=self._hands,
            active=self._active,
            rules=self.rules,
            message_max_chars=self.settings.message_max_chars,
        )
        self._emit(
            "proposed",
            seat,
            {
                "turn": self._turn,
                "proposer": seat,
                "to": action.to,
                "offer": offer,
                "request": request,
                "message": action.message,
            },
            tuple(sorted((seat, action.to))),
        )

    def _do_pass(self, actor: int | None, action: Any) -> None:
        seat = self._check_seat(actor, "pass")
        self._check_phase("trade_propose", "pass")
        checks.check_proposer(seat, self._proposer, "pass")
        checks.check_pass_allowed(self.pass_allowed())
        self._emit("passed", seat, {"turn": self._turn, "seat": seat}, (seat,))
        self._start_craft()

    def _do_decide(self, actor: int | None, action: Any) -> None:
        seat = self._check_seat(actor, "decide")
        self._check_phase("trade_decide", "decide")
        assert self._pending is not None
        checks.check_decision(seat, action, self._pending, self._hands, self.settings.message_max_chars)
        self._decide(seat, action.accept, action.message, None)

    def _decide(self, seat: int, accept: bool, message: str, reason: str | None) -> None:
        pending = self._pending
        assert pending is not None
        payload: dict[str, Any] = {
            "turn": self._turn,
            "proposer": pending["proposer"],
            "seat": seat,
            "accept": accept,
            "message": message,
        }
        if reason:
            payload["reason"] = reason
        parties = tuple(sorted((pending["proposer"], seat)))
        self._emit("decided", None if reason else seat, payload, parties)
        if accept:
            trade: dict[str, Any] = {
                "turn": self._turn,
                "proposer": pending["proposer"],
                "to": seat,
                "offer": pending["offer"],
                "request": pending["request"],
            }
            if self.trade_messages_public:
                trade.update(message=pending["message"], reply=message)
            self._emit("trade_executed", None, trade)
        self._start_craft()

    def _do_craft(self, actor: int | None, action: Any) -> None:
        seat = self._check_seat(actor, "craft")
        self._check_phase("craft", "craft")
        checks.check_crafting_open(seat, seat in self._crafting_done, "craft")
        assert self._crafting is not None
        checked = checks.check_craft(
            self.rules, self._crafting[seat], action, whole_runs=self.settings.whole_runs
        )
        self._emit(
            "crafted",
            seat,
            {
                "turn": self._turn,
                "seat": seat,
                "recipe": checked.recipe,
                "runs": fmt_qty(checked.runs),
                "choices": {str(i): item for i, item in sorted(checked.choices.items())},
                "fuel": checked.fuel,
                "consumed": {k: fmt_qty(v) for k, v in sorted(checked.result.consumed.items())},
                "produced": {k: fmt_qty(v) for k, v in sorted(checked.result.produced.items())},
            },
            (seat,),
        )

    def _do_finish_crafting(self, actor: int | None, action: Any) -> None:
        seat = self._check_seat(actor, "finish_crafting")
        self._check_phase("craft", "finish_crafting")
        checks.check_crafting_open(seat, seat in self._crafting_done, "finish_crafting")
        self._emit("craft_finished", seat, {"turn": self._turn, "seat": seat})
        self._after_craft_progress()

    def _do_timeout(self, actor: int | None, action: Any) -> None:
        checks.check_system_actor(actor)
        if (action.phase is not None and action.phase != self._phase) or (
            action.turn is not None and action.turn != self._turn
        ):
            raise GameError(
                "wrong_phase",
                f"This timeout is for {action.phase or self._phase} of turn {action.turn or self._turn}, "
                f"but the game is in {self._phase} of turn {self._turn}; drop the stale timer.",
                {"phase": self._phase, "turn": self._turn},
            )
        phase = self._phase
        seats = sorted(self.waiting_for())
        policy = self.settings.timeout_policies.for_phase(phase)
        # who is awaited in the decision phase would reveal the addressee of a private proposal
        visibility: Visibility = PUBLIC
        if phase == "trade_decide" and self._pending is not None:
            visibility = tuple(sorted((self._pending["proposer"], self._pending["to"])))
        self._emit(
            "timeout",
            None,
            {"turn": self._turn, "phase": phase, "seats": seats, "policy": policy},
            visibility,
        )
        if phase == "tom_report":
            for seat in seats:
                self._emit("tom_skipped", None, {"turn": self._turn, "seat": seat, "reason": "timeout"})
            self._after_tom_report()
        elif phase == "trade_propose":
            self._emit(
                "passed",
                None,
                {"turn": self._turn, "seat": self._proposer, "reason": "timeout"},
                (self._proposer,),
            )
            self._start_craft()
        elif phase == "trade_decide":
            pending = self._pending
            assert pending is not None
            accept = policy == "accept" and (
                holds(self._hands[pending["proposer"]], pending["offer"])
                and holds(self._hands[pending["to"]], pending["request"])
            )
            self._decide(pending["to"], accept, "", "timeout")
        elif phase == "craft":
            for seat in seats:
                self._emit("craft_finished", None, {"turn": self._turn, "seat": seat, "reason": "timeout"})
            self._after_craft_progress()

    def _do_resign(self, actor: int | None, action: Any) -> None:
        seat = self._check_seat(actor, "resign")
        phase = self._phase
        self._emit("resigned", seat, {"turn": self._turn, "seat": seat})
        if sum(self._active) < 2:
            if phase == "craft":
                self._end_craft_phase(forced_end=True)
            else:
                self._end_game("too_few_players")
            return
        # the seat's pending duty resolves as its timeout policy would
        if phase == "tom_report":
            if seat in self._tom_awaiting:
                self._emit("tom_skipped", None, {"turn": self._turn, "seat": seat, "reason": "resign"})
            self._after_tom_report()
        elif phase == "trade_propose" and seat == self._proposer:
            self._emit("passed", None, {"turn": self._turn, "seat": seat, "reason": "resign"}, (seat,))
            self._start_craft()
        elif phase == "trade_decide" and self._pending is not None:
            pending = self._pending
            if seat == pending["to"]:
                self._decide(seat, False, "", "resign")
            elif seat == pending["proposer"]:
                self._emit(
                    "proposal_cancelled",
                    None,
                    {"turn": self._turn, "proposer": seat, "to": pending["to"], "reason": "resign"},
                    tuple(sorted((seat, pending["to"]))),
                )
                self._start_craft()
        elif phase == "craft":
            if seat not in self._crafting_done:
                self._emit("craft_finished", None, {"turn": self._turn, "seat": seat, "reason": "resign"})
            self._after_craft_progress()

    _HANDLERS: ClassVar[dict[str, Callable[[Game, int | None, Any], None]]] = {
        "report_tom": _do_report_tom,
        "propose": _do_propose,
        "pass": _do_pass,
        "decide": _do_decide,
        "craft": _do_craft,
        "finish_crafting": _do_finish_crafting,
        "timeout": _do_timeout,
        "resign": _do_resign,
    }

    # --- transitions (live path only: they decide, and write the decision into the log) ---------
    def _start_turn(self, turn: int, proposer: int) -> None:
        reporters = [s for s in range(self._n) if self._active[s] and self.settings.orders_for(s)]
        if reporters:
            items = sorted({item for hand in self._hands for item, count in hand.items() if count > 0})
            if self.settings.tom_report_items == "compact":
                items = compact_report_items(self.rules, items)
            self._emit(
                "phase_started",
                None,
                {
                    "turn": turn,
                    "phase": "tom_report",
                    "proposer": proposer,
                    "awaiting": reporters,
                    "items": items,
                },
            )
        else:
            self._start_trade(turn, proposer)

    def _start_trade(self, turn: int, proposer: int) -> None:
        self._emit(
            "phase_started",
            None,
            {"turn": turn, "phase": "trade_propose", "proposer": proposer, "awaiting": [proposer]},
        )

    def _after_tom_report(self) -> None:
        if self._tom_awaiting:
            return
        if self._active[self._proposer]:
            self._start_trade(self._turn, self._proposer)
        else:  # the proposer resigned while the others were reporting
            self._emit(
                "passed",
                None,
                {"turn": self._turn, "seat": self._proposer, "reason": "resign"},
                (self._proposer,),
            )
            self._start_craft()

    def _start_craft(self) -> None:
        self._emit(
            "phase_started",
            None,
            {"turn": self._turn, "phase": "craft", "proposer": self._proposer, "awaiting": self.active_seats},
        )

    def _after_craft_progress(self) -> None:
        if all(s in self._crafting_done for s in range(self._n) if self._active[s]):
            self._end_craft_phase()

    def _end_craft_phase(self, forced_end: bool = False) -> None:
        assert self._crafting is not None
        hands = [floor_hand(h) for h in self._crafting]
        self._emit(
            "hands_revealed", None, {"turn": self._turn, "hands": [dict(sorted(h.items())) for h in hands]}
        )
        for seat in range(self._n):
            if self._active[seat] and seat not in self._winners and holds(hands[seat], self._targets[seat]):
                self._emit("player_won", None, {"turn": self._turn, "seat": seat})
        active = self.active_seats
        if forced_end:
            self._end_game("too_few_players")
        elif self._winners and (
            self.settings.end_condition == "first_win" or all(s in self._winners for s in active)
        ):
            self._end_game("target_crafted")
        elif self._turn >= self.max_turns:
            self._end_game("max_turns")
        else:
            self._emit("turn_ended", None, {"turn": self._turn})
            self._start_turn(self._turn + 1, self._next_proposer())

    def _next_proposer(self) -> int:
        seat = self._proposer
        for _ in range(self._n):
            seat = (seat + 1) % self._n
            if self._active[seat]:
                return seat
        return self._proposer

    def _end_game(self, reason: str) -> None:
        # every target is revealed to everyone at the end, with the points the scoring rule pays
        winners = sorted(self._winners)
        self._emit(
            "targets_revealed",
            None,
            {
                "turn": self._turn,
                "targets": [dict(sorted(t.items())) for t in self._targets],
                "winners": winners,
                "scores": self.settings.scoring.scores(self._n, winners),
            },
        )
        self._emit(
            "game_ended", None, {"turn": self._turn, "winners": sorted(self._winners), "reason": reason}
        )

    # --- the only place the state changes ---------------------------------------------------------
    def _emit(
        self, event_type: str, actor: int | None, payload: dict[str, Any], visibility: Visibility = PUBLIC
    ) -> None:
        self._apply_event(Event(len(self._events), event_type, actor, payload, visibility))

    def _apply_event(self, event: Event) -> None:
        self._state_cache.clear()  # first: a failing effect may already have changed the state
        self._EVENT_EFFECTS[event.type](self, event.payload)
        if event.actor is not None:
            self._idle[event.actor] = 0  # the seat acted itself: its idleness streak ends
        self._events.append(event)

    def _on_game_started(self, p: dict[str, Any]) -> None:
        if p["players"] != self._n or len(p["hands"]) != self._n:
            raise ValueError(f"log is for {p['players']} players, instance has {self._n}")
        self._hands = [{str(k): int(v) for k, v in h.items()} for h in p["hands"]]
        self._proposer = int(p["first_proposer"])

    def _on_phase_started(self, p: dict[str, Any]) -> None:
        turn = int(p["turn"])
        if turn != self._turn:
            self._turn = turn
            self._turn_records.append({"turn": turn, "proposer": int(p["proposer"]), "outcome": None})
        self._proposer = int(p["proposer"])
        phase = p["phase"]
        self._phase = phase
        if phase == "tom_report":
            self._tom_awaiting = {int(s) for s in p["awaiting"]}
            self._tom_items = list(p["items"])
        elif phase == "craft":
            self._pending = None
            self._crafting = [{k: Fraction(v) for k, v in h.items()} for h in self._hands]
            self._crafting_done = {s for s in range(self._n) if not self._active[s]}
            self._craft_log = [[] for _ in range(self._n)]
        elif phase != "trade_propose":
            raise ValueError(f"unknown phase {phase!r}")

    def _on_tom_reported(self, p: dict[str, Any]) -> None:
        self._tom_awaiting.discard(int(p["seat"]))
        self._tom_reports.append(dict(p))

    def _on_tom_skipped(self, p: dict[str, Any]) -> None:
        self._tom_awaiting.discard(int(p["seat"]))

    def _on_proposed(self, p: dict[str, Any]) -> None:
        record = {
            "turn": int(p["turn"]),
            "proposer": int(p["proposer"]),
            "to": int(p["to"]),
            "offer": dict(p["offer"]),
            "request": dict(p["request"]),
            "message": p["message"],
            "status": "pending",
            "reply": None,
        }
        self._proposals.append(record)
        self._pending = record
        self._phase = "trade_decide"
        self._turn_records[-1]["outcome"] = "proposed"

    def _on_decided(self, p: dict[str, Any]) -> None:
        pending = self._pending
        if pending is None:
            raise ValueError("decided without a pending proposal")
        pending["status"] = "accepted" if p["accept"] else "rejected"
        pending["reply"] = p["message"]
        if p.get("reason"):
            pending["reason"] = p["reason"]
        self._turn_records[-1]["outcome"] = pending["status"]

    def _on_trade_executed(self, p: dict[str, Any]) -> None:
        proposer, to = int(p["proposer"]), int(p["to"])
        giver, taker = self._hands[proposer], self._hands[to]
        for item, count in p["offer"].items():
            _move(giver, taker, item, int(count))
        for item, count in p["request"].items():
            _move(taker, giver, item, int(count))
        self._turn_records[-1]["outcome"] = "traded"

    def _on_proposal_cancelled(self, p: dict[str, Any]) -> None:
        if self._pending is None:
            raise ValueError("cancellation without a pending proposal")
        self._pending["status"] = "cancelled"
        self._turn_records[-1]["outcome"] = "cancelled"

    def _on_passed(self, p: dict[str, Any]) -> None:
        self._turn_records[-1]["outcome"] = "passed"

    def _on_crafted(self, p: dict[str, Any]) -> None:
        seat = int(p["seat"])
        if self._crafting is None:
            raise ValueError("crafted outside a craft phase")
        hand = self._crafting[seat]
        for item, qty in p["consumed"].items():
            left = hand[item] - Fraction(qty)
            if left < 0:
                raise ValueError(f"crafted consumes more {item} than held")
            if left:
                hand[item] = left
            else:
                del hand[item]
        for item, qty in p["produced"].items():
            hand[item] = hand.get(item, Fraction(0)) + Fraction(qty)
        self._craft_log[seat].append(dict(p))

    def _on_craft_finished(self, p: dict[str, Any]) -> None:
        self._crafting_done.add(int(p["seat"]))

    def _on_hands_revealed(self, p: dict[str, Any]) -> None:
        self._hands = [{str(k): int(v) for k, v in h.items()} for h in p["hands"]]
        self._crafting = None
        self._crafting_done = set()
        self._craft_log = [[] for _ in range(self._n)]

    def _on_player_won(self, p: dict[str, Any]) -> None:
        self._winners.append(int(p["seat"]))

    def _on_turn_ended(self, p: dict[str, Any]) -> None:
        self._pending = None

    def _on_targets_revealed(self, p: dict[str, Any]) -> None:
        self._scores = [int(points) for points in p["scores"]]

    def _on_game_ended(self, p: dict[str, Any]) -> None:
        self._phase = "finished"
        self._winners = [int(s) for s in p["winners"]]
        self._end_reason = p["reason"]
        self._pending = None
        self._tom_awaiting = set()

    def _on_timeout(self, p: dict[str, Any]) -> None:
        for seat in p["seats"]:
            self._idle[int(seat)] += 1

    def _on_resigned(self, p: dict[str, Any]) -> None:
        self._active[int(p["seat"])] = False

    _EVENT_EFFECTS: ClassVar[dict[str, Callable[[Game, dict[str, Any]], None]]] = {
        "game_started": _on_game_started,
        "phase_started": _on_phase_started,
        "tom_reported": _on_tom_reported,
        "tom_skipped": _on_tom_skipped,
        "proposed": _on_proposed,
        "decided": _on_decided,
        "trade_executed": _on_trade_executed,
        "proposal_cancelled": _on_proposal_cancelled,
        "passed": _on_passed,
        "crafted": _on_crafted,
        "craft_finished": _on_craft_finished,
        "hands_revealed": _on_hands_revealed,
        "player_won": _on_player_won,
        "turn_ended": _on_turn_ended,
        "targets_revealed": _on_targets_revealed,
        "game_ended": _on_game_ended,
        "timeout": _on_timeout,
        "resigned": _on_resigned,
    }


def _fresh(value: Any) -> Any:
    """A copy of JSON-like data: dicts and lists are copied at every level, scalars are immutable.
    Several times faster than copy.deepcopy, which the view hot path cannot afford."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def _copy_proposal(record: dict[str, Any]) -> dict[str, Any]:
    """A proposal record's copy: offer and request are its only containers (flat item -> count maps,
    see _on_proposed); they are shared with event payloads, so a caller must never get them."""
    return {**record, "offer": dict(record["offer"]), "request": dict(record["request"])}


def _move(giver: dict[str, int], taker: dict[str, int], item: str, count: int) -> None:
    left = giver.get(item, 0) - count
    if left < 0:
        raise ValueError(f"trade moves more {item} than held")
    if left:
        giver[item] = left
    else:
        giver.pop(item, None)
    taker[item] = taker.get(item, 0) + count


def _check_setup(instance: TaskInstance, settings: GameSettings, rules: RuleSet) -> None:
    n = instance.players
    if n < 2 or len(instance.targets) != n:
        raise GameError(
            "invalid_settings",
            f"Task instance {instance.id} needs at least two players with one target each.",
            {"instance_id": instance.id},
        )
    if settings.tom_orders and len(settings.tom_orders) != n:
        raise GameError(
            "invalid_settings",
            f"tom_orders lists {_plural(len(settings.tom_orders), 'seat')} but the game has {n}; "
            "give one list per seat (or [] for no reports).",
            {"tom_orders": settings.tom_orders, "players": n},
        )
    if settings.first_proposer is not None and settings.first_proposer >= n:
        raise GameError(
            "invalid_settings",
            f"first_proposer is seat {settings.first_proposer} but seats are 0..{n - 1}.",
            {"first_proposer": settings.first_proposer},
        )
    unknown = sorted(
        {item for part in (*instance.hands, *instance.targets) for item in part} - set(rules.items)
    )
    if unknown:
        raise GameError(
            "invalid_settings",
            f"Task instance {instance.id} names items rule set {rules.name} does not have: "
            f"{', '.join(unknown[:10])}; pick the instance's own rule set.",
            {"unknown_items": unknown},
        )
