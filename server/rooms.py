"""Live games: one in-memory :class:`~server.game.state.Game` per game, guarded by a lock per game.

The path of every action (a player's, a bot's or a deadline's timeout):

1. take the game's lock and **catch up** from the store (another worker may have appended events);
2. ``game.apply(actor, action)`` validates fully or raises ``GameError`` (nothing changed);
3. **append** the new events to the store, durably; a :class:`SequenceConflict` means another worker got
   there first: replay from the store and try again against the new state (or refuse the action);
4. remember the answer under the client's action id (a retry gets the same answer), and **ack**;
5. **push** each seat its filtered events and its new view (each seat is its own Socket.IO room, spectators
   have one room), then reschedule the phase deadline and the bot seats.

Bot seats take the same path without holding the lock while their policy thinks: the seat's view, legal
actions and new events are copied under the lock, the policy decides on the bot executor
(:class:`server.bots.BotExecutor`), and its answer is submitted through step 1-5 with a client action id
derived from the move (see "Bot seats" below and docs/protocol.md §6a).

The store is the truth: the in-memory game is a cache rebuilt by replay whenever it may be stale, so several
server processes sharing one store never fork a game. Seat ownership lives in the store too, as
``set_value_if_absent`` claims (atomic across processes), see :func:`seat_claim_key`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import BaseModel

from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance, referenced_instance
from server.auth import Principal, ServerError
from server.bots import (
    BotExecutor,
    BotMove,
    BotRegistry,
    LivePolicy,
    bot_action_id,
    bot_move_key,
    bot_seed,
    bound_trace,
    environment_secrets,
    policy_seed,
)
from server.game.actions import parse_action
from server.game.errors import GameError
from server.game.events import Event, record_for_viewer, visible_to
from server.game.gamelog import trace_fields
from server.game.legal import legal_actions
from server.game.queries import answer_query, parse_query, query_context
from server.game.settings import GameSettings
from server.game.state import Game
from server.game.views import player_view, researcher_view, spectator_view
from server.policy_specs import model_of, policy_name
from server.settings import Settings
from server.store import SequenceConflict, Store, StoreError
from server.timers import DeadlineScheduler

log = logging.getLogger(__name__)

LOBBY_ROOM = "lobby"
APPLY_RETRY_SECONDS = 2.0
"""How long an action whose append lost a race with another worker keeps being retried (each try after a
catch-up and a backoff). A budget of time, not of tries: a worker that keeps writing the same game (one
client's burst of crafts) wins race after race while the burst lasts, since the loser must catch up before
each try; 8 tries (~0.13 s) could run out within such a burst."""
MAX_TRACES_PER_REQUEST = 50
"""Trace records an agent may send in one request (each is bounded by ``bots.trace_max_bytes``)."""
TRACE_BATCHES_REMEMBERED = 10_000
"""Answers to trace batches kept (by batch id) so a batch resent after a dropped connection counts once."""
#: push(event, payload, room, skip_sid): emit to a Socket.IO room, optionally not to one connection
Push = Callable[[str, dict[str, Any], str, str | None], None]


def _race_attempts() -> Iterator[int]:
    """Numbered tries at an action that may lose append races: the first at once, each later one after a
    jittered, doubling wait (up to 1, 2, 4 .. 64 ms, so two workers that keep writing the same game stop
    colliding in lockstep), until APPLY_RETRY_SECONDS have passed."""
    deadline = time.monotonic() + APPLY_RETRY_SECONDS
    attempt = 0
    while True:
        yield attempt
        if time.monotonic() >= deadline:
            return
        time.sleep(random.uniform(0, 0.001 * 2 ** min(attempt, 6)))
        attempt += 1


def seat_room(game_id: str, seat: int) -> str:
    return f"game:{game_id}:seat:{seat}"


def spectator_room(game_id: str) -> str:
    return f"game:{game_id}:spectators"


def seat_claim_key(game_id: str, seat: int) -> str:
    """Store key whose first writer owns the seat (``set_value_if_absent`` is atomic across processes)."""
    return f"seat:{game_id}:{seat}"


def overdue_key(game_id: str, seat: int) -> str:
    """Scheduler key of the watchdog that abandons a bot move past its time limit."""
    return f"botlimit:{game_id}:{seat}"


def takeover_key(game_id: str, seat: int) -> str:
    """Store key set once when an idle seat is handed to a built-in bot for the rest of the game."""
    return f"takeover:{game_id}:{seat}"


def game_instance(meta: Mapping[str, Any], ruleset: str) -> TaskInstance:
    """A stored game's task instance (see :func:`referenced_instance`); ``unknown_instance`` when its file
    is gone."""
    try:
        return referenced_instance({**meta, "ruleset": ruleset})
    except KeyError as exc:
        instance_id = meta.get("instance_id")
        raise ServerError(
            "unknown_instance", f"There is no task instance {instance_id!r}.", {"instance_id": instance_id}
        ) from exc


def _json_copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


@dataclass
class SeatState:
    """Who sits where. ``accepts`` is what the seat was created for; the rest is filled by a claim."""

    seat: int
    accepts: str  # open | human | agent | bot
    kind: str | None = None  # human | agent | bot, once taken
    name: str | None = None
    user_id: str | None = None
    bot: str | None = None
    takeover: str | None = None  # built-in bot playing for an idle human/agent

    @property
    def taken(self) -> bool:
        return self.kind is not None

    @property
    def bot_controlled(self) -> bool:
        return self.kind == "bot" or self.takeover is not None

    def record(self) -> dict[str, Any]:
        """The seat as stored in the game's metadata (server.store.base.SeatRecord + our extra keys); an LLM
        seat's model is recorded on its own too, so exports list it among the game's models."""
        record = {
            "seat": self.seat,
            "accepts": self.accepts,
            "kind": self.kind,
            "name": self.name,
            "user_id": self.user_id,
            "bot": self.bot,
            "takeover": self.takeover,
        }
        if self.bot and policy_name(self.bot) == "llm" and model_of(self.bot):
            record["model"] = model_of(self.bot)
        return record

    def public(self, online: bool | None = None) -> dict[str, Any]:
        """The seat as everyone may see it (no user id); ``online`` only where presence is known."""
        record = {
            "seat": self.seat,
            "accepts": self.accepts,
            "kind": self.kind,
            "name": self.name,
            "bot": self.bot or self.takeover,
            "taken": self.taken,
        }
        if online is not None:
            record["online"] = online or self.bot_controlled
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SeatState:
        return cls(
            seat=int(record["seat"]),
            accepts=str(record.get("accepts") or record.get("kind") or "open"),
            kind=record.get("kind") if record.get("user_id") or record.get("kind") == "bot" else None,
            name=record.get("name"),
            user_id=record.get("user_id"),
            bot=record.get("bot"),
            takeover=record.get("takeover"),
        )


@dataclass
class LiveGame:
    """One game in memory. Every field is guarded by ``lock``."""

    game_id: str
    meta: dict[str, Any]
    settings: GameSettings
    instance: TaskInstance
    rules: RuleSet
    seed: int
    seats: list[SeatState]
    game: Game | None = None
    records: list[dict[str, Any]] = field(default_factory=list)  # stored events, parallel to game.events
    lock: threading.RLock = field(default_factory=threading.RLock)
    online: dict[int, int] = field(default_factory=dict)  # seat -> open connections in this process
    bot_failures: dict[int, int] = field(default_factory=dict)  # failed attempts at the seat's current move
    bot_refused: dict[int, int] = field(default_factory=dict)  # failed bot attempts, all moves together
    bot_overdue: dict[int, int] = field(default_factory=dict)  # moves abandoned past the time limit
    policies: dict[int, LivePolicy] = field(default_factory=dict)  # bot seat -> its live policy
    fallbacks: set[int] = field(default_factory=set)  # bot seats whose overdue move the fallback is playing
    refusals: dict[int, dict[str, Any]] = field(
        default_factory=dict
    )  # bot seat -> why its answer was refused
    deadline: float | None = None
    # seat (None = spectator) -> (last_seq, view): a view is a pure function of the log, so each change
    # computes each seat's view at most once for the ack and every push
    views: dict[int | None, tuple[int, dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    @property
    def last_seq(self) -> int:
        return self.records[-1]["seq"] if self.records else -1

    @property
    def status(self) -> str:
        return str(self.meta.get("status", "waiting"))

    def seats_of(self, principal: Principal) -> list[int]:
        return [s.seat for s in self.seats if s.user_id is not None and s.user_id == principal.id]

    def public_seats(self) -> list[dict[str, Any]]:
        return [s.public(self.online.get(s.seat, 0) > 0) for s in self.seats]


def phase_anchor(records: list[dict[str, Any]], phase: str) -> float | None:
    """Server time at which the current phase began (a decision starts with the private ``proposed``)."""
    for record in reversed(records):
        kind = record.get("type")
        if phase == "trade_decide" and kind == "proposed":
            return float(record["time"])
        if kind == "phase_started" and record.get("payload", {}).get("phase") == phase:
            return float(record["time"])
    return float(records[-1]["time"]) if records else None


class Rooms:
    """The registry of live games of this process and the one path every action takes."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        scheduler: DeadlineScheduler,
        bots: BotRegistry,
        push: Push,
        clock: Callable[[], float] = time.time,
        has_listeners: Callable[[str, str | None], bool] = lambda room, skip_sid: True,
    ) -> None:
        self.settings = settings
        self.store = store
        self.scheduler = scheduler
        self.bots = bots
        self.push = push
        self.clock = clock
        # whether anyone but skip_sid may be listening in a room: pushes nobody would get are skipped, which
        # saves their views and their encoding (Socket.IO encodes a room's packet before skipping skip_sid)
        self.has_listeners = has_listeners
        self._games: dict[str, LiveGame] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._registry_lock = threading.Lock()
        self.bot_executor = BotExecutor(settings.bots.workers, settings.bots.max_abandoned_threads)
        self._secrets = environment_secrets()  # cut out of every trace record
        self._process_token = secrets.token_hex(8)  # who claims bot moves when processes share a store
        self._traces_full: set[str] = set()  # games whose trace records reached bots.traces_per_game
        self._client_traces: dict[tuple[str, int], int] = {}  # (game, seat) -> records its agent sent
        self._trace_batches: OrderedDict[tuple[str, int, str], dict[str, Any]] = OrderedDict()

    # ------------------------------------------------------------------------------------------ loading
    def get(self, game_id: Any) -> LiveGame:
        """The live game (loaded from the store on first use); ``unknown_game`` if there is none."""
        if not isinstance(game_id, str) or not game_id:
            raise ServerError("invalid_request", "Say which game: send its game_id.", status=400)
        live = self._games.get(game_id)
        if live is not None:
            return live
        with self._registry_lock:
            live = self._games.get(game_id)
            if live is None:
                live = self._load(game_id)
                self._games[game_id] = live
                if live.status in ("finished", "aborted"):
                    self._remember_finished(game_id)
        return live

    def _load(self, game_id: str) -> LiveGame:
        meta = self.store.get_game(game_id)
        if meta is None:
            raise ServerError(
                "unknown_game",
                f"There is no game {game_id!r}; list the games with GET /api/games.",
                {"game_id": game_id},
                status=404,
            )
        settings = GameSettings.model_validate(meta["settings"])
        live = LiveGame(
            game_id=game_id,
            meta=dict(meta),
            settings=settings,
            instance=game_instance(meta, settings.ruleset),
            rules=load_rule_set(settings.ruleset),
            seed=int(meta["seed"]),
            seats=[SeatState.from_record(r) for r in meta.get("seats", [])],
        )
        with live.lock:
            self._refresh_seats(live)
            self._replay(live, self.store.load_events(game_id))
        return live

    def _replay(self, live: LiveGame, records: list[dict[str, Any]]) -> None:
        if records:
            live.game = Game.replay(live.instance, live.settings, live.rules, live.seed, records)
        else:
            live.game = None
        live.records = list(records)
        live.views.clear()  # a replay may rebuild a different history than the cached views saw

    def catch_up(self, live: LiveGame) -> bool:
        """Bring the in-memory game up to the store's log; True if anything changed."""
        stored = self.store.last_seq(live.game_id)
        if stored == live.last_seq:
            return False
        if stored > live.last_seq:
            newer = self.store.load_events(live.game_id, after_seq=live.last_seq)
            self._replay(live, live.records + newer)
        else:  # never expected (the store lost events?): trust the store
            log.error(
                "game %s: store is behind memory (%s < %s); reloading", live.game_id, stored, live.last_seq
            )
            self._replay(live, self.store.load_events(live.game_id))
        meta = self.store.get_game(live.game_id)
        if meta is not None:
            live.meta = dict(meta)
            live.seats = [SeatState.from_record(r) for r in meta.get("seats", [])]
        self._refresh_seats(live)
        return True

    def _refresh_seats(self, live: LiveGame) -> None:
        """Merge the store's seat claims and takeovers (the authority) into the seat list."""
        for seat in live.seats:
            if seat.accepts != "bot" and seat.user_id is None:
                claim = self.store.get_value(seat_claim_key(live.game_id, seat.seat))
                if claim:
                    holder = json.loads(claim)
                    seat.kind, seat.name, seat.user_id = holder["kind"], holder["name"], holder["user_id"]
            if seat.takeover is None:
                seat.takeover = self.store.get_value(takeover_key(live.game_id, seat.seat))

    def _remember_finished(self, game_id: str) -> None:
        self._finished[game_id] = None
        self._finished.move_to_end(game_id)
        while len(self._finished) > self.settings.rooms.keep_finished_games:
            old, _ = self._finished.popitem(last=False)
            self._games.pop(old, None)
            self._traces_full.discard(old)

    # --------------------------------------------------------------------------------------- recovery
    def recover(self) -> int:
        """Load every running game from the store and resume its deadlines and bot seats."""
        count = 0
        for meta in self.store.list_games(status="running", limit=1_000_000):
            try:
                live = self.get(meta["game_id"])
                with live.lock:
                    self.catch_up(live)
                    if live.game is None:  # all seats were claimed but the start did not happen
                        self._start_locked(live)
                    else:
                        self._after_change(live, [], [])
                count += 1
            except Exception:
                log.exception("could not resume game %s", meta.get("game_id"))
        for meta in self.store.list_games(status="waiting", limit=1_000_000):
            try:
                self.seats_changed(meta["game_id"])  # starts games whose last seat was claimed before a crash
            except Exception:
                log.exception("could not check waiting game %s", meta.get("game_id"))
        return count

    # ----------------------------------------------------------------------------------------- seating
    def seats_changed(self, game_id: str) -> LiveGame:
        """A seat was claimed: record the seats, tell everyone, start the game once every seat is taken."""
        live = self.get(game_id)
        with live.lock:
            self._refresh_seats(live)
            if live.status == "waiting":
                records = [s.record() for s in live.seats]
                if records != live.meta.get("seats"):
                    self.store.update_game(game_id, seats=records)
                    live.meta["seats"] = records
                self._push_seats(live)
                self._lobby_changed(live)
                if all(s.taken for s in live.seats):
                    self._start_locked(live)
        return live

    def _start_locked(self, live: LiveGame) -> None:
        self.catch_up(live)
        if live.game is not None:
            return
        try:
            game = Game.new(live.instance, live.settings, live.rules, live.seed)
        except GameError as err:
            log.error("game %s cannot start: %s", live.game_id, err.message)
            self.store.update_game(live.game_id, status="aborted", abort_reason=err.to_dict())
            live.meta.update(status="aborted", abort_reason=err.to_dict())
            self._push_seats(live)
            self._lobby_changed(live)
            return
        records = [e.to_dict() for e in game.events]
        stamp = self.clock()
        for record in records:
            record["time"] = stamp
        try:
            self.store.append_events(live.game_id, records)
        except SequenceConflict:
            self.catch_up(live)  # another worker started it
            return
        live.game = game
        live.records = _json_copy(records)
        started = {"status": "running", "started_at": stamp, "seats": [s.record() for s in live.seats]}
        self.store.update_game(live.game_id, **started)
        live.meta.update(started)
        self._lobby_changed(live)
        self._after_change(live, list(game.events), live.records)

    # ------------------------------------------------------------------------------------------ acting
    def acting_seat(self, live: LiveGame, principal: Principal, seat: Any = None) -> int:
        """The seat ``principal`` acts for: its own (``seat`` chooses when it holds several)."""
        own = live.seats_of(principal)
        if seat is not None:
            if not isinstance(seat, int) or isinstance(seat, bool):
                raise ServerError("invalid_request", "seat must be a seat number such as 0 or 1.")
            if seat not in own:
                raise ServerError(
                    "not_your_seat",
                    f"You do not hold seat {seat} in this game; you can act only for your own seat.",
                    {"seat": seat, "your_seats": own},
                    status=403,
                )
            return seat
        if not own:
            raise ServerError(
                "spectator",
                "You hold no seat in this game: spectators can watch but not act. Join a free seat first.",
                {"game_id": live.game_id},
                status=403,
            )
        if len(own) > 1:
            raise ServerError(
                "seat_required", 'You hold several seats in this game; add "seat": N.', {"your_seats": own}
            )
        return own[0]

    def act(
        self,
        game_id: Any,
        principal: Principal,
        action: Any,
        seat: Any = None,
        client_action_id: Any = None,
        origin: str | None = None,
    ) -> dict[str, Any]:
        """Apply a player's action: the ack ``{"ok": True, "view": ..., "events": ...}``, or a typed error
        is raised. The ack carries the new events the seat may see, so the acting connection (``origin``, a
        Socket.IO sid) is left out of its seat's push; the seat's other connections still get it."""
        live = self.get(game_id)
        if client_action_id is not None and (
            not isinstance(client_action_id, str) or not 0 < len(client_action_id) <= 128
        ):
            raise ServerError("invalid_request", "client_action_id must be a string of 1 to 128 characters.")
        with live.lock:
            seat_no = self.acting_seat(live, principal, seat)
            parsed = parse_player_action(action)
            idempotency_key = f"{principal.id}:{client_action_id}" if client_action_id else None
            digest = action_digest(seat_no, parsed) if idempotency_key else ""
            for _ in _race_attempts():
                try:
                    outcome = self._apply_as_seat(
                        live, seat_no, parsed, idempotency_key, digest, action_id=client_action_id
                    )
                except SequenceConflict:
                    continue
                if isinstance(outcome, dict):
                    return outcome
                events, records = outcome
                remember = (idempotency_key, digest) if idempotency_key else None
                return self._answer_committed(live, seat_no, events, records, remember, origin)
        raise ServerError("conflict", "The game changed under concurrent requests; send the action again.")

    def _apply_as_seat(
        self,
        live: LiveGame,
        seat: int,
        parsed: BaseModel,
        idempotency_key: str | None,
        digest: str,
        *,
        action_id: str | None = None,
        bot: bool = False,
    ) -> dict[str, Any] | tuple[list[Event], list[dict[str, Any]]]:
        """The one path of a seat's action, a client's or a bot's (under the game's lock): catch up, answer
        a repeated action id with its remembered answer (a dict), else check the seat may act and apply and
        store the action (its events and records). Raises the typed refusal, or SequenceConflict after a
        lost race (the game has been reloaded: try again)."""
        self.catch_up(live)
        if idempotency_key:
            recalled = self.store.recall_action(live.game_id, idempotency_key)
            if recalled is not None:
                if recalled["action_digest"] not in ("", digest):
                    raise ServerError(
                        "idempotency_conflict",
                        f"client_action_id {action_id!r} was already used for another action in this game; a "
                        "retry must repeat the same action, a new action needs a new id.",
                        {"client_action_id": action_id},
                        status=409,
                    )
                return recalled["response"]
        self._check_can_act(live, seat, bot=bot)
        assert live.game is not None
        return self._commit(live, seat, parsed)

    def _answer_committed(
        self,
        live: LiveGame,
        seat: int,
        events: list[Event],
        records: list[dict[str, Any]],
        remember: tuple[str, str] | None,
        origin: str | None,
    ) -> dict[str, Any]:
        """The ack of a stored action. The change is durable, so no failure from here on may be answered as
        if nothing happened: bookkeeping and pushes are logged and skipped, and an ack that cannot be built
        is the typed ``answer_failed`` (the action took effect; read the view)."""
        try:
            self._settle(live, events)
        except Exception:
            log.exception("game %s: bookkeeping after a stored action failed", live.game_id)
        try:
            envelope = self.envelope(live, seat)
            visible = [r for e, r in zip(events, records, strict=True) if visible_to(e, seat)]
            response = {"ok": True, **envelope, "events": self._numbered(visible, envelope["log_size"])}
        except Exception:
            log.exception("game %s: the answer to seat %s's stored action failed", live.game_id, seat)
            raise ServerError(
                "answer_failed",
                "Your action was applied and stored, but the server could not build its answer; read the "
                "game's view (event view, or GET /api/games/<id>/view) before acting again.",
                {"game_id": live.game_id, "applied": True},
                status=500,
            ) from None
        try:
            if remember is not None:
                self.store.remember_action(live.game_id, remember[0], response, remember[1])
        except Exception:
            log.exception("game %s: could not remember the answer of a stored action", live.game_id)
        try:
            self._publish(live, events, records, skip=(seat, origin))
        except Exception:
            log.exception("game %s: pushing a stored action failed", live.game_id)
        return response

    def abort(self, game_id: Any, reason: str) -> None:
        """Stop a game for good (an admin decision; not a game event): no more actions, timers or bots."""
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            if live.status in ("finished", "aborted"):
                raise ServerError("game_over", f"The game is already {live.status}.", status=409)
            fields = {"status": "aborted", "abort_reason": reason, "finished_at": self.clock()}
            self.store.update_game(live.game_id, **fields)
            live.meta.update(fields)
            live.deadline = None
            self.scheduler.cancel(f"deadline:{live.game_id}")
            self._stop_bots(live)
            self._push_seats(live)
            self._lobby_changed(live)
            live.changed.notify_all()

    def _aborted(self, live: LiveGame) -> bool:
        if self.settings.socketio.message_queue:  # another worker may have aborted it: ask the store
            stored = self.store.get_game(live.game_id)
            if stored is not None:
                live.meta["status"] = stored.get("status", live.status)
        return live.status == "aborted"

    def _check_can_act(self, live: LiveGame, seat: int, *, bot: bool = False) -> None:
        if self._aborted(live):
            raise ServerError(
                "game_over", "An admin aborted this game; it accepts no more actions.", status=409
            )
        if live.game is None:
            raise ServerError(
                "not_started",
                "The game has not started yet: it waits for every seat to be taken.",
                status=409,
            )
        holder = live.seats[seat]
        if holder.takeover is not None and not bot:
            raise ServerError(
                "seat_taken_over",
                f"Seat {seat} was idle too long and a built-in bot ({holder.takeover}) now plays it "
                "for the rest of this game.",
                {"seat": seat, "bot": holder.takeover},
                status=409,
            )

    def _commit(
        self, live: LiveGame, actor: int | None, action: Any
    ) -> tuple[list[Event], list[dict[str, Any]]]:
        """Apply and durably append; on a lost race replay from the store and raise SequenceConflict."""
        assert live.game is not None
        events = live.game.apply(actor, action)  # GameError: nothing changed
        records = [e.to_dict() for e in events]
        stamp = self.clock()
        for record in records:
            record["time"] = stamp
        try:
            self.store.append_events(live.game_id, records)
        except SequenceConflict:
            log.info("game %s: another worker appended first; replaying", live.game_id)
            self.catch_up(live)
            raise
        except Exception:
            # the in-memory game already moved on: rebuild it from the store, which did not
            self._replay(live, self.store.load_events(live.game_id))
            raise
        records = _json_copy(records)
        live.records.extend(records)
        self._sync_status(live)  # before the ack is built, so it already says "finished"
        return events, records

    def _sync_status(self, live: LiveGame) -> None:
        game = live.game
        if game is not None and game.finished and live.status not in ("finished", "aborted"):
            done = {"status": "finished", "winners": list(game.winners), "finished_at": self.clock()}
            self.store.update_game(live.game_id, **done)
            live.meta.update(done)
            self._lobby_changed(live)

    # --------------------------------------------------------------------------------- after a change
    def _after_change(self, live: LiveGame, events: list[Event], records: list[dict[str, Any]]) -> None:
        self._settle(live, events)
        self._publish(live, events, records)

    def _settle(self, live: LiveGame, events: list[Event]) -> None:
        """Bookkeeping after a change: status, idle seats handed to bots, deadline and bot timers."""
        self._sync_status(live)
        self._hand_idle_seats_to_bots(live, events)
        self._schedule(live)

    def _publish(
        self,
        live: LiveGame,
        events: list[Event],
        records: list[dict[str, Any]],
        skip: tuple[int, str | None] = (-1, None),
    ) -> None:
        """Push the change to every seat and the spectators; wake long-polling readers."""
        game = live.game
        assert game is not None
        if events:
            self._push_events(live, events, records, skip)
        live.changed.notify_all()
        if game.finished:
            self._stop_bots(live)
            with self._registry_lock:
                self._remember_finished(live.game_id)

    def envelope(self, live: LiveGame, seat: int | None) -> dict[str, Any]:
        """What a seat (or a spectator, seat None) is told about the game now.

        No global sequence number: a viewer counts only the events it may see (``log_size``), since gaps
        in the global numbering would count other seats' private events. For the same reason a viewer
        outside the trade (the view's phase is ``"trade"``) gets no deadline: its restart when a proposal
        is made would reveal the proposal.
        """
        view = self._view(live, seat)
        outsider = view is not None and view["phase"] == "trade"
        return {
            "game_id": live.game_id,
            "hall": live.meta.get("hall"),
            "status": live.status,
            "seat": seat,
            "log_size": view["log_size"] if view is not None else 0,
            "deadline": None if outsider else live.deadline,
            "seats": live.public_seats(),
            "view": view,
        }

    @staticmethod
    def _numbered(visible: list[dict[str, Any]], log_size: int) -> list[dict[str, Any]]:
        """The newest ``visible`` records of a viewer's log, numbered ``n`` in that log, without ``seq``."""
        start = log_size - len(visible)
        return [
            {"n": start + i, **{k: v for k, v in record_for_viewer(record).items() if k != "seq"}}
            for i, record in enumerate(visible)
        ]

    def _view(self, live: LiveGame, seat: int | None) -> dict[str, Any] | None:
        if live.game is None:
            return None
        cached = live.views.get(seat)
        if cached is not None and cached[0] == live.last_seq:
            return cached[1]
        view = player_view(live.game, seat) if seat is not None else spectator_view(live.game)
        live.views[seat] = (live.last_seq, view)
        return view

    def _push_events(
        self,
        live: LiveGame,
        events: list[Event],
        records: list[dict[str, Any]],
        skip: tuple[int, str | None],
    ) -> None:
        for seat in [*range(len(live.seats)), None]:
            room = seat_room(live.game_id, seat) if seat is not None else spectator_room(live.game_id)
            skip_sid = skip[1] if seat == skip[0] else None
            if not self.has_listeners(room, skip_sid):
                continue  # e.g. the actor's seat whose only connection gets the ack instead
            visible = [r for e, r in zip(events, records, strict=True) if visible_to(e, seat)]
            if visible:
                envelope = self.envelope(live, seat)
                numbered = self._numbered(visible, envelope["log_size"])
                self.push("update", {**envelope, "events": numbered}, room, skip_sid)

    def _push_seats(self, live: LiveGame) -> None:
        payload = {"game_id": live.game_id, "status": live.status, "seats": live.public_seats()}
        for seat in range(len(live.seats)):
            self.push("seats", payload, seat_room(live.game_id, seat), None)
        self.push("seats", payload, spectator_room(live.game_id), None)

    def _lobby_changed(self, live: LiveGame) -> None:
        self.push(
            "lobby",
            {"game_id": live.game_id, "status": live.status, "hall": live.meta.get("hall")},
            LOBBY_ROOM,
            None,
        )

    # ------------------------------------------------------------------------------- deadlines, bots
    def _schedule(self, live: LiveGame) -> None:
        game = live.game
        assert game is not None
        key = f"deadline:{live.game_id}"
        if live.status == "aborted":
            live.deadline = None
            self.scheduler.cancel(key)
            return
        seconds = None if game.finished else live.settings.deadlines.for_phase(game.phase)
        if seconds is None:
            live.deadline = None
            self.scheduler.cancel(key)
        else:
            anchor = phase_anchor(live.records, game.phase) or self.clock()
            live.deadline = anchor + seconds
            self.scheduler.schedule(
                key, live.deadline, partial(self._deadline_expired, live.game_id, game.phase, game.turn)
            )
        if game.finished:
            return
        delay = self.settings.bots.move_delay_seconds
        for seat in sorted(game.waiting_for()):
            if live.seats[seat].bot_controlled:
                bot_key = f"bot:{live.game_id}:{seat}"
                due = self.clock() + delay
                pending = self.scheduler.when(bot_key)
                # keep an earlier pending move: other seats' actions must not starve a bot
                self.scheduler.schedule(
                    bot_key,
                    min(due, pending) if pending else due,
                    partial(self._bot_move, live.game_id, seat),
                )

    def _deadline_expired(self, game_id: str, phase: str, turn: int) -> None:
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            game = live.game
            if self._aborted(live):
                return
            if game is None or game.finished or (game.phase, game.turn) != (phase, turn):
                if game is not None:
                    self._schedule(live)  # stale timer: arm the current phase's instead
                return
            for _ in _race_attempts():
                try:
                    events, records = self._commit(
                        live, None, {"type": "timeout", "phase": phase, "turn": turn}
                    )
                except SequenceConflict:
                    continue
                except GameError as err:  # the phase moved on in another worker
                    log.info("game %s: timeout for %s/%s refused: %s", game_id, phase, turn, err.code)
                    if live.game is not None:
                        self._schedule(live)
                    return
                log.info("game %s: %s deadline of turn %s expired", game_id, phase, turn)
                self._after_change(live, events, records)
                return

    # Bot seats. A move is decided outside the game's lock: under the lock the seat's view, legal actions
    # and new events are copied (_prepare_bot_move); a thread of the bot executor feeds them to the seat's
    # live policy and asks it to act (_decide); the answer goes through the same path as a client's action,
    # under the lock again, unless the game moved on meanwhile (_bot_decided). A watchdog on the deadline
    # scheduler abandons a move that takes longer than bots.move_time_limit_seconds (_bot_overdue).
    def _bot_move(self, game_id: str, seat: int) -> None:
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            move = self._prepare_bot_move(live, seat)
            if move is None:
                return
            limit = self.settings.bots.move_time_limit_seconds
            self.scheduler.schedule(
                overdue_key(game_id, seat), move.submitted + limit, partial(self._bot_overdue, live, move)
            )
        self.bot_executor.submit(partial(self._decide, live, move))

    def _bot_move_valid(self, live: LiveGame, seat: int, move_key: str | None = None) -> bool:
        """Whether the bot seat ``seat`` is awaited (at the move ``move_key``, when given)."""
        game = live.game
        if self._aborted(live) or game is None or game.finished or seat not in game.waiting_for():
            return False
        if not live.seats[seat].bot_controlled:
            return False
        return move_key is None or bot_move_key(game, seat) == move_key

    def _prepare_bot_move(self, live: LiveGame, seat: int) -> BotMove | None:
        """Under the lock: what the seat's policy needs for its move, or None when there is nothing to do
        (not awaited, or a decision of this seat is already under way: its end reschedules)."""
        if not self._bot_move_valid(live, seat) or seat in live.fallbacks:
            return None
        game = live.game
        assert game is not None
        holder = live.seats[seat]
        spec = holder.takeover or holder.bot or self.settings.bots.default
        current = live.policies.get(seat)
        if current is not None and current.in_flight is not None:
            return None
        if current is None or current.spec != spec:
            current = LivePolicy(spec, policy_seed(live.seed, seat))
            live.policies[seat] = current
        move_key = bot_move_key(game, seat)
        attempt = live.bot_failures.get(seat, 0)
        if self.settings.socketio.message_queue and not self._claim_bot_move(live, seat, move_key, attempt):
            return None
        keeper: LivePolicy | None = current
        refusal = live.refusals.get(seat) if attempt else None
        if refusal is not None and getattr(current.policy, "refused", None) is not None:
            # a refused answer, and the policy can learn why (an LLM agent): told, then asked again
            seed, events = current.seed, self._seat_news(live, seat, current)
        elif attempt:
            # any other retry: a one-move policy with another seed (or it would repeat itself), whole log
            seed, events, keeper = (
                policy_seed(live.seed, seat, move_key, attempt),
                self.history(live, seat),
                None,
            )
            refusal = None
        else:
            seed, events = current.seed, self._seat_news(live, seat, current)
        move = BotMove(
            game_id=live.game_id,
            seat=seat,
            spec=spec,
            move_key=move_key,
            attempt=attempt,
            seed=seed,
            view=_json_copy(self._view(live, seat)),  # the policy may keep or change it: its own copy
            legal=list(legal_actions(game, seat)),
            events=_json_copy(events),
            live=keeper,
            submitted=self.clock(),
            refusal=refusal,
        )
        current.in_flight = move
        return move

    def _claim_bot_move(self, live: LiveGame, seat: int, move_key: str, attempt: int) -> bool:
        """With several server processes (a message queue), each one that has the game loaded would ask its
        own policy for every move: an LLM seat would be paid for twice. The first process to claim a move
        in the store (``set_value_if_absent``) decides it; the others look again after the move time limit,
        when a new claim window opens, in case the claimer died. (One small store value per bot move.)"""
        limit = self.settings.bots.move_time_limit_seconds
        window = int(self.clock() // limit)
        key = f"botclaim:{live.game_id}:{seat}:{move_key}:{attempt}:{window}"
        if self.store.set_value_if_absent(key, self._process_token) == self._process_token:
            return True
        self.scheduler.schedule(
            f"bot:{live.game_id}:{seat}", self.clock() + limit, partial(self._bot_move, live.game_id, seat)
        )
        return False

    def _seat_news(self, live: LiveGame, seat: int, policy: LivePolicy) -> list[dict[str, Any]]:
        """The seat's viewer events its policy has not been shown, numbered ``n`` exactly as a remote
        client's log (the whole log for a new policy); marks them shown."""
        assert live.game is not None
        start = policy.delivered
        visible = [
            record
            for event, record in zip(live.game.events[start:], live.records[start:], strict=True)
            if visible_to(event, seat)
        ]
        news = self._numbered(visible, policy.observed + len(visible))
        policy.delivered = len(live.game.events)
        policy.observed += len(visible)
        return news

    def _decide(self, live: LiveGame, move: BotMove) -> None:
        """On the bot executor, without the game's lock: build the policy if needed, show it the seat's new
        events, ask for its action and collect its trace records."""
        move.thread = threading.get_ident()
        if move.abandoned.is_set():
            return  # the time limit passed while the move waited for a thread
        policy = move.live.policy if move.live is not None else None
        action: Any = None
        error: Exception | None = None
        try:
            if policy is None:
                policy = self.bots.make(move.spec, move.seed)
                if move.live is not None:
                    move.live.policy = policy
            if move.refusal is not None:
                policy.refused(move.refusal)  # type: ignore[attr-defined]
            observe = getattr(policy, "observe", None)
            if observe is not None and move.events:
                observe(move.events)
            action = policy.act(move.view, move.legal)
        except Exception as err:
            error = err
        traces: list[Any] = []
        drain = getattr(policy, "drain_traces", None)
        if drain is not None:
            try:
                traces = list(drain())
            except Exception:
                log.exception("game %s: seat %s's policy lost its traces", live.game_id, move.seat)
        event_seq = self._bot_decided(live, move, action, error)
        self._store_traces(live.game_id, move.seat, event_seq, traces)

    def _bot_decided(self, live: LiveGame, move: BotMove, action: Any, error: Exception | None) -> int | None:
        """Under the lock: submit the policy's answer like a client's action, unless the move was abandoned
        or the game moved on. The sequence number of the first event the move produced, else None."""
        with live.lock:
            current = live.policies.get(move.seat)
            if move.abandoned.is_set() or current is None or current.in_flight is not move:
                log.info(
                    "game %s: seat %s answered move %s after it was abandoned; dropped",
                    live.game_id,
                    move.seat,
                    move.move_key,
                )
                return None
            current.in_flight = None
            self.scheduler.cancel(overdue_key(live.game_id, move.seat))
            if error is not None:
                if move.live is not None:
                    live.policies.pop(move.seat, None)  # its state is suspect: rebuilt from the log next move
                self.catch_up(live)
                if self._bot_move_valid(live, move.seat, move.move_key):
                    self._bot_failed(live, move.seat, move.spec, error)
                elif live.game is not None:
                    self._schedule(live)
                return None
            return self._submit_bot_action(live, move.seat, move.spec, move.move_key, action)

    def _submit_bot_action(
        self, live: LiveGame, seat: int, spec: str, move_key: str, action: Any
    ) -> int | None:
        """Under the lock: a bot's answer through the client path (same validation, a client action id
        derived from the move); a stale answer is dropped and the seat rescheduled; a refused one counts as
        a failure (retried with another seed, then the seat resigns)."""
        for _ in _race_attempts():
            self.catch_up(live)
            if not self._bot_move_valid(live, seat, move_key):
                log.info("game %s: seat %s's answer to %s is stale; dropped", live.game_id, seat, move_key)
                if live.game is not None:
                    self._schedule(live)
                return None
            action_id = bot_action_id(seat, move_key)
            try:
                parsed = parse_player_action(action)
                digest = action_digest(seat, parsed)
                outcome = self._apply_as_seat(
                    live, seat, parsed, action_id, digest, action_id=action_id, bot=True
                )
            except SequenceConflict:
                continue
            except (GameError, ServerError) as err:
                self._bot_failed(live, seat, spec, err)
                return None
            if isinstance(outcome, dict):  # another worker already played this move
                self._schedule(live)
                return None
            events, records = outcome
            live.bot_failures[seat] = 0
            live.refusals.pop(seat, None)
            try:
                answer = {"ok": True, "bot": spec, "seat": seat}
                self.store.remember_action(live.game_id, action_id, answer, digest)
            except Exception:
                log.exception("game %s: could not remember bot move %s", live.game_id, action_id)
            self._after_change(live, events, records)
            return events[0].seq if events else None
        self._schedule(live)
        return None

    def _bot_overdue(self, live: LiveGame, move: BotMove) -> None:
        """On the timer pool: the move ran past bots.move_time_limit_seconds. Abandon it (its thread is
        replaced; a late answer is dropped; the seat's policy is rebuilt from the log for its next move) and
        let the fallback policy play this one move, validated like any other."""
        seat = move.seat
        with live.lock:
            current = live.policies.get(seat)
            if current is None or current.in_flight is not move:
                return
            move.abandoned.set()
            current.in_flight = None
            if move.live is not None:
                live.policies.pop(seat, None)
            live.bot_overdue[seat] = live.bot_overdue.get(seat, 0) + 1
            log.warning(
                "game %s: the policy %s of seat %s took over %s s for move %s; abandoned, %s plays it",
                live.game_id,
                move.spec,
                seat,
                self.settings.bots.move_time_limit_seconds,
                move.move_key,
                self.settings.bots.fallback,
            )
            self.bot_executor.write_off(move.thread)
            self.catch_up(live)
            if not self._bot_move_valid(live, seat, move.move_key) or live.game is None:
                if live.game is not None:
                    self._schedule(live)
                return
            live.fallbacks.add(seat)
            view = _json_copy(self._view(live, seat))
            legal = list(legal_actions(live.game, seat))
            history = _json_copy(self.history(live, seat))
        spec = self.settings.bots.fallback
        action: Any = None
        error: Exception | None = None
        try:
            fallback = self.bots.make(spec, bot_seed(live.seed, seat, f"fallback:{move.move_key}"))
            observe = getattr(fallback, "observe", None)
            if observe is not None:
                observe(history)
            action = fallback.act(view, legal)
        except Exception as err:
            error = err
        with live.lock:
            live.fallbacks.discard(seat)
            if error is None:
                self._submit_bot_action(live, seat, spec, move.move_key, action)
                return
            self.catch_up(live)
            if self._bot_move_valid(live, seat, move.move_key):
                self._bot_failed(live, seat, spec, error)
            elif live.game is not None:
                self._schedule(live)

    def record_traces(
        self,
        game_id: Any,
        principal: Principal,
        traces: Any,
        seat: Any = None,
        event_n: Any = None,
        batch_id: Any = None,
    ) -> dict[str, Any]:
        """An agent's trace records for its own seat (what led to its moves: prompts, completions, token
        counts), kept with the game for researchers exactly like those of the bots the server plays.

        Only API-token agents send them (a person's browser has none, and the per-game quota must not be
        filled by a player to crowd out an agent's records); at most :data:`MAX_TRACES_PER_REQUEST` records
        per request, each bounded by ``bots.trace_max_bytes``. ``event_n`` is the number, in the seat's own
        log, of the first event the move produced; it links the records to that event. A ``batch_id`` (any
        text up to 64 characters) makes a resent batch (after a dropped connection) count once."""
        if principal.kind != "agent":
            raise ServerError(
                "not_an_agent",
                "Only agents connected with an API token send trace records; a person's moves need none.",
                status=403,
            )
        if (
            not isinstance(traces, list)
            or not 1 <= len(traces) <= MAX_TRACES_PER_REQUEST
            or not all(isinstance(t, dict) for t in traces)
        ):
            raise ServerError(
                "invalid_request",
                f"traces must be a list of 1 to {MAX_TRACES_PER_REQUEST} JSON objects; send more in several "
                "requests.",
            )
        if batch_id is not None and (not isinstance(batch_id, str) or not 1 <= len(batch_id) <= 64):
            raise ServerError("invalid_request", "batch_id must be a text of 1 to 64 characters, or null.")
        if event_n is not None and (not isinstance(event_n, int) or isinstance(event_n, bool) or event_n < 0):
            raise ServerError("invalid_request", "event_n must be an event number n of your log, or null.")
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            chosen = self.acting_seat(live, principal, seat)
            event_seq = None
            if event_n is not None:
                events = live.game.events if live.game is not None else []
                visible = [e.seq for e in events if visible_to(e, chosen)]
                if event_n >= len(visible):
                    raise ServerError(
                        "invalid_request",
                        f"Your log has {len(visible)} events, so event_n {event_n} names none of them.",
                        {"log_size": len(visible)},
                    )
                event_seq = visible[event_n]
        # each seat's own quota of the game's records, so one agent cannot crowd out the others' (and the
        # server's bots') records; counted per process, the store's per-game bound holds across processes
        quota = self.settings.bots.traces_per_game // max(1, len(live.seats))
        with self._registry_lock:
            if batch_id is not None:
                key = (live.game_id, chosen, batch_id)
                if key in self._trace_batches:
                    return {**self._trace_batches[key], "duplicate": True}
            sent = self._client_traces.get((live.game_id, chosen), 0)
            allowed = max(0, min(len(traces), quota - sent))
            self._client_traces[(live.game_id, chosen)] = sent + allowed
        stored = self._store_traces(live.game_id, chosen, event_seq, traces[:allowed]) if allowed else 0
        answer = {"game_id": live.game_id, "seat": chosen, "stored": stored, "dropped": len(traces) - stored}
        if batch_id is not None:
            with self._registry_lock:
                self._trace_batches[(live.game_id, chosen, batch_id)] = answer
                while len(self._trace_batches) > TRACE_BATCHES_REMEMBERED:
                    self._trace_batches.popitem(last=False)
        return answer

    def _store_traces(self, game_id: str, seat: int, event_seq: int | None, traces: list[Any]) -> int:
        """Keep a policy's trace records with the game (bounded: bots.trace_max_bytes per record, truncated;
        bots.traces_per_game per game, the rest dropped and logged once); how many were kept. Never raises."""
        if not traces or game_id in self._traces_full:
            return 0
        limit = self.settings.bots.trace_max_bytes
        stamp = self.clock()
        try:
            records = []
            for trace in traces:
                fields = dict(trace) if isinstance(trace, Mapping) else {"value": trace}
                records.append(
                    bound_trace(trace_fields(fields, seat, event_seq, stamp), limit, self._secrets)
                )
            self.store.append_traces(game_id, records, max_per_game=self.settings.bots.traces_per_game)
            return len(records)
        except StoreError as err:
            if err.code == "trace_limit_reached":
                self._traces_full.add(game_id)
                log.warning("game %s: %s later trace records are dropped", game_id, err.message)
            else:
                log.error("game %s: trace records of seat %s not stored: %s", game_id, seat, err.message)
            return 0
        except Exception:
            log.exception("game %s: trace records of seat %s not stored", game_id, seat)
            return 0

    def _bot_failed(self, live: LiveGame, seat: int, name: str, err: Exception) -> None:
        """Under the lock: a bot's move was refused or its policy raised. Count it; retry (another seed)
        until bots.max_failures in a row, then the seat resigns."""
        failures = live.bot_failures.get(seat, 0) + 1
        live.bot_failures[seat] = failures
        live.bot_refused[seat] = live.bot_refused.get(seat, 0) + 1
        if isinstance(err, GameError | ServerError):
            live.refusals[seat] = err.to_dict()  # what a client would have been answered
        else:
            live.refusals.pop(seat, None)
        detail = err.to_dict() if isinstance(err, GameError | ServerError) else repr(err)
        log.warning(
            "game %s: bot %s at seat %s failed (%s/%s): %s",
            live.game_id,
            name,
            seat,
            failures,
            self.settings.bots.max_failures,
            detail,
        )
        if failures < self.settings.bots.max_failures:
            self._schedule(live)
            return
        log.error("game %s: bot %s at seat %s keeps failing; its seat resigns", live.game_id, name, seat)
        live.bot_failures[seat] = 0
        live.refusals.pop(seat, None)
        try:
            events, records = self._commit(live, seat, {"type": "resign"})
        except (GameError, SequenceConflict):
            log.exception("game %s: could not resign the failing bot seat %s", live.game_id, seat)
            return
        self._after_change(live, events, records)

    def _stop_bots(self, live: LiveGame) -> None:
        """The game is over: no more bot moves; moves under way are dropped when they answer."""
        self.scheduler.cancel_prefix(f"bot:{live.game_id}:")
        self.scheduler.cancel_prefix(f"botlimit:{live.game_id}:")
        live.policies.clear()

    def _hand_idle_seats_to_bots(self, live: LiveGame, events: Iterable[Event]) -> None:
        """After a timeout, give seats that reached ``idle_timeouts_before_bot`` to the default bot."""
        limit = live.settings.idle_timeouts_before_bot
        game = live.game
        if limit is None or game is None or game.finished:
            return
        if not any(e.type == "timeout" for e in events):
            return
        idle = idle_counters(game)
        for seat in live.seats:
            if seat.bot_controlled or idle.get(seat.seat, 0) < limit:
                continue
            bot = self.settings.bots.default
            seat.takeover = self.store.set_value_if_absent(takeover_key(live.game_id, seat.seat), bot)
            log.info(
                "game %s: seat %s idle for %s timeouts; bot %s takes over",
                live.game_id,
                seat.seat,
                idle.get(seat.seat),
                seat.takeover,
            )
            records = [s.record() for s in live.seats]
            self.store.update_game(live.game_id, seats=records)
            live.meta["seats"] = records
            self._push_seats(live)

    # -------------------------------------------------------------------------------------- reading
    def view(self, game_id: Any, principal: Principal | None, seat: Any = None) -> dict[str, Any]:
        """The caller's envelope: its seat's view if it holds one, else the spectator view."""
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            own = live.seats_of(principal) if principal else []
            chosen = (
                self.acting_seat(live, principal, seat) if principal and (seat is not None or own) else None
            )
            return self.envelope(live, chosen)

    def events_since(
        self,
        game_id: Any,
        principal: Principal | None,
        after: int = -1,
        seat: Any = None,
        wait: float = 0,
    ) -> dict[str, Any]:
        """The caller's events numbered ``n > after`` in its own log; waits up to ``wait`` s for some."""
        if after < -1:
            raise ServerError("invalid_request", "after must be an event number n, or -1 for the whole log.")
        live = self.get(game_id)
        deadline = self.clock() + max(0.0, min(wait, self.settings.rooms.long_poll_max_seconds))
        with live.lock:
            own = live.seats_of(principal) if principal else []
            chosen = (
                self.acting_seat(live, principal, seat) if principal and (seat is not None or own) else None
            )
            while True:
                self.catch_up(live)
                log = self.history(live, chosen)
                remaining = deadline - self.clock()
                if len(log) > after + 1 or remaining <= 0:
                    return {
                        "game_id": live.game_id,
                        "seat": chosen,
                        "log_size": len(log),
                        "events": log[after + 1 :],
                    }
                live.changed.wait(timeout=min(remaining, 1.0))  # re-check the store each second

    def history(self, live: LiveGame, seat: int | None) -> list[dict[str, Any]]:
        """The viewer's whole log, numbered ``n`` = 0, 1, 2, ..."""
        if live.game is None:
            return []
        visible = [r for e, r in zip(live.game.events, live.records, strict=True) if visible_to(e, seat)]
        return self._numbered(visible, len(visible))

    def query(
        self, game_id: Any, principal: Principal | None, query: Any, seat: Any = None
    ) -> dict[str, Any]:
        """Answer an in-phase query (server.game.queries) for the caller's seat, or as a spectator when it
        holds none. What the query needs is copied under the game's lock; the answer (which may run the
        planner) is computed outside it, so a query never holds up the game's actions."""
        parsed = parse_query(query)
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            if live.game is None:
                raise ServerError(
                    "not_started",
                    "The game has not started yet: queries answer once every seat is taken.",
                    status=409,
                )
            own = live.seats_of(principal) if principal else []
            chosen = (
                self.acting_seat(live, principal, seat) if principal and (seat is not None or own) else None
            )
            records = live.records  # parallel to game.events; the store added each event's time
            context = query_context(live.game, chosen, parsed, lambda seq: records[seq].get("time"))
        return {"game_id": live.game_id, "seat": chosen, "answer": answer_query(context, parsed)}

    def researcher(self, game_id: Any) -> dict[str, Any]:
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            return {
                **self.envelope(live, None),
                "view": researcher_view(live.game) if live.game else None,
                "meta": live.meta,
                "bots": self._bot_counts(live),
            }

    @staticmethod
    def _bot_counts(live: LiveGame) -> dict[str, dict[str, int]]:
        """Per bot seat: its moves refused by the engine or failed in the policy, and its moves abandoned past
        the time limit (counted by this process since it loaded the game)."""
        seats = set(live.bot_refused) | set(live.bot_overdue)
        return {
            str(seat): {"failed": live.bot_refused.get(seat, 0), "overdue": live.bot_overdue.get(seat, 0)}
            for seat in sorted(seats)
        }

    # ------------------------------------------------------------------------------------- presence
    def presence(self, game_id: str, seat: int, delta: int) -> None:
        """A connection of the seat's holder opened (+1) or closed (-1); tell everyone on a change."""
        live = self.get(game_id)
        with live.lock:
            before = live.online.get(seat, 0) > 0
            live.online[seat] = max(0, live.online.get(seat, 0) + delta)
            now_online = live.online[seat] > 0
            if before == now_online:
                return
            holder = live.seats[seat]
            payload = {"game_id": game_id, "seat": seat, "name": holder.name, "online": now_online}
        for other in range(len(live.seats)):
            self.push("presence", payload, seat_room(game_id, other), None)
        self.push("presence", payload, spectator_room(game_id), None)

    def close(self) -> None:
        self.scheduler.close()
        self.bot_executor.close()


def parse_player_action(action: Any) -> BaseModel:
    """A seat's action (a client's or a bot's) validated by the engine's action models; a seat may not send
    what only the server sends (a timeout)."""
    parsed = parse_action(action)
    if parsed.type == "timeout":
        raise GameError(
            "not_allowed",
            "Timeouts are submitted by the server when a deadline expires, not by players.",
        )
    return parsed


def action_digest(seat: int, action: BaseModel) -> str:
    """sha256 of the seat and the validated action: equal for a retry of the same request, whatever its
    spelling (field order, a run amount sent as 0.5 or "0.5")."""
    canonical = json.dumps(
        {"seat": seat, "action": action.model_dump(mode="json")}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def idle_counters(game: Game) -> dict[int, int]:
    """Consecutive timeouts per seat since it last acted itself (kept by the engine)."""
    return dict(enumerate(game.idle_timeouts()))
