"""The game master: one in-memory :class:`~server.game.state.Game` per live game, a lock per game, and the
one path every action takes — whoever plays, over whatever transport.

The Flask-SocketIO server (``server/web``) and in-process local play (:mod:`agents.local_connection`) are two
thin adapters over this :class:`Table`, as boardgame.io's Master serves both its socket and its local
transport: they differ only in the store, scheduler, transport and clock they inject.

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
(:mod:`server.table.bot_seats`), and its answer is submitted through step 1-5 with a client
action id derived from the move (docs/protocol.md §6a).

The store is the truth: the in-memory game is a cache rebuilt by replay whenever it may be stale, so several
server processes sharing one store never fork a game. Seat ownership lives in the store too, as
``set_value_if_absent`` claims (atomic across processes), see :func:`seat_claim_key`; so does the one decision
of how a waiting game stops waiting (it starts, or is cancelled, expires or is aborted unstarted), a
conditional write of :func:`waiting_ended_key`, so a cancel racing the last join has one winner.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from pydantic import BaseModel

from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance, referenced_instance
from server.game.errors import GameError
from server.game.events import Event, visible_to
from server.game.policy import RESEED_THEN_RESIGN, OnRefusal
from server.game.queries import answer_query, parse_query, query_context
from server.game.settings import GameSettings
from server.game.state import Game
from server.game.views import player_view, researcher_view, spectator_view
from server.store import SequenceConflict, Store
from server.table.actions import action_digest, parse_player_action, race_attempts
from server.table.bot_executor import BotExecutor, CpuThreads
from server.table.bot_seats import BotSeats
from server.table.config import Settings
from server.table.envelope import envelope, number_events
from server.table.errors import ServerError
from server.table.live import (
    CLOSED_UNSTARTED,
    LEAVING_PREFIX,
    LiveGame,
    SeatState,
    claim_in_store,
    claim_is_stale,
    leaving_is_stale,
    phase_anchor,
    seat_claim_key,
    takeover_key,
    waiting_ended_key,
)
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.table.ratings import record_table_game
from server.table.timers import Scheduler
from server.table.traces import TraceRecords, environment_secrets
from server.table.transport import LOBBY_ROOM, NO_TRANSPORT, Transport, seat_room, spectator_room

log = logging.getLogger(__name__)


def game_instance(meta: Mapping[str, Any], ruleset: str) -> TaskInstance:
    """A stored game's task instance (:func:`craft_rules.tasks.referenced_instance`: the whole instance in its
    record, or the file it names); ``unknown_instance`` when that file is gone."""
    try:
        return referenced_instance({**meta, "ruleset": ruleset})
    except KeyError as exc:
        instance_id = meta.get("instance_id")
        raise ServerError(
            "unknown_instance", f"There is no task instance {instance_id!r}.", {"instance_id": instance_id}
        ) from exc


def action_claim_key(game_id: str, idempotency_key: str) -> str:
    """Store key claimed while one request applies an action id (hashed: the key names its principal)."""
    return f"game:{game_id}:action:{hashlib.sha256(idempotency_key.encode()).hexdigest()[:32]}"


def expiry_timer_key(game_id: str) -> str:
    """Scheduler key of the timer that closes a game still waiting for players."""
    return f"expiry:{game_id}"


#: A close meeting a leave in progress checks again this many times, this far apart (a leave takes a few
#: store writes).
LEAVE_WAIT_ROUNDS = 40
LEAVE_WAIT_SECONDS = 0.025


def not_waiting(status: str) -> ServerError:
    return ServerError(
        "not_waiting",
        f"The game no longer waits for players (it is {status}); only a waiting game can be cancelled.",
        status=409,
    )


class Table(BotSeats, TraceRecords):
    """The registry of live games of this process and the one path every action takes.

    Everything outside the game rules is injected: the ``store`` (the truth), the ``scheduler`` (deadlines
    and bot moves), the ``transport`` (pushes to rooms; pushes nobody would get are never built) and the
    ``clock`` (event times). The bot seats' refusal strategy is ``on_refusal`` (default: told or reseeded
    for ``bots.max_failures`` answers, then the seat resigns).
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        scheduler: Scheduler,
        bots: BotRegistry,
        transport: Transport = NO_TRANSPORT,
        clock: Callable[[], float] = time.time,
        on_refusal: OnRefusal | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.scheduler = scheduler
        self.bots = bots
        self.transport = transport
        self.clock = clock
        self.on_refusal = on_refusal or replace(RESEED_THEN_RESIGN, retries=settings.bots.max_failures - 1)
        self._games: dict[str, LiveGame] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._registry_lock = threading.Lock()
        self._executor: BotExecutor | None = None  # started at the first bot move: most tables have none
        self._query_threads: CpuThreads | None = None
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
        """Merge the store's seat claims and takeovers (the authority) into the seat list. While the game
        waits, a seat whose claim is gone was left (server/web/seat_moves.py, maybe in another process)."""
        waiting = live.status == "waiting"
        for seat in live.seats:
            if seat.accepts != "bot" and (seat.user_id is None or waiting):
                claim = self.store.get_value(seat_claim_key(live.game_id, seat.seat))
                if claim:
                    holder = json.loads(claim)
                    seat.kind, seat.name, seat.user_id = holder["kind"], holder["name"], holder["user_id"]
                elif waiting:
                    seat.kind, seat.name, seat.user_id = None, None, None
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
        """A seat was claimed: record the seats, tell everyone, start the game once every seat is taken.
        A waiting game's expiry timer is (re)armed here: at creation, after each join and on recovery."""
        live = self.get(game_id)
        with live.lock:
            self._refresh_seats(live)
            if live.status == "waiting":
                self._arm_expiry(live)
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
        if self._end_waiting(live.game_id, "started") != "started":
            self.reload_waiting_status(live)  # a cancel, an expiry, an abort or a leave won: it never starts
            return
        self._refresh_seats(live)
        if not all(s.taken for s in live.seats):
            # a leave (in another process) freed a seat between the count and the decision: undo the start,
            # and record the seats as the claims now have them (this worker's count was stale)
            self.store.replace_value(waiting_ended_key(live.game_id), "started", None)
            records = [s.record() for s in live.seats]
            self.store.update_game(live.game_id, seats=records)
            live.meta["seats"] = records
            self._push_seats(live)
            self._lobby_changed(live)
            return
        self.scheduler.cancel(expiry_timer_key(live.game_id))
        self._release_open_slot(live)
        try:
            game = Game.new(live.instance, live.settings, live.rules, live.seed)
        except GameError as err:
            log.error("game %s cannot start: %s", live.game_id, err.message)
            self.store.update_game(live.game_id, status="aborted", abort_reason=err.to_dict())
            live.meta.update(status="aborted", abort_reason=err.to_dict())
            self._push_seats(live)
            self._lobby_changed(live)
            return
        records = self._stamped(game.events)
        stamp = records[0]["time"] if records else self.clock()
        try:
            stored = self.store.append_events(live.game_id, records)
        except SequenceConflict:
            self.catch_up(live)  # another worker started it
            return
        live.game = game
        live.records = list(stored)
        started = {"status": "running", "started_at": stamp, "seats": [s.record() for s in live.seats]}
        self.store.update_game(live.game_id, **started)
        live.meta.update(started)
        self._lobby_changed(live)
        self._after_change(live, list(game.events), live.records)

    def host(self, game_id: str, game: Game, seats: list[SeatState], hall: str | None = None) -> LiveGame:
        """Seat an engine game that already exists in this process (in-process play): its record and events
        go to the store, the game object itself stays live (whoever holds it sees every change), and each
        seat counts as taken and online. From here on it is played like any other game of the table."""
        records = self._stamped(game.events)  # a new game has at least game_started
        meta = {
            "status": "finished" if game.finished else "running",
            "hall": hall,
            "ruleset": game.rules.name,
            "settings": game.settings.model_dump(mode="json"),
            "instance_id": game.instance.id,
            "seed": game.seed,
            "seats": [s.record() for s in seats],
            "started_at": records[0]["time"] if records else None,
        }
        self.store.create_game(game_id, meta)
        stored = self.store.append_events(game_id, records)
        live = LiveGame(
            game_id=game_id,
            meta=dict(self.store.get_game(game_id) or meta),
            settings=game.settings,
            instance=game.instance,
            rules=game.rules,
            seed=game.seed,
            seats=seats,
            game=game,
            records=list(stored),
        )
        live.online.update(dict.fromkeys(range(len(seats)), 1))
        with self._registry_lock:
            self._games[game_id] = live
        with live.lock:
            self._after_change(live, [], [])
        return live

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
        *,
        ack_view: bool = True,
        ack_events: bool = True,
    ) -> dict[str, Any]:
        """Apply a player's action: the ack ``{"ok": True, "view": ..., "events": ...}``, or a typed error
        is raised. The ack carries the new events the seat may see, so the acting connection (``origin``, a
        Socket.IO sid) is left out of its seat's push; the seat's other connections still get it.
        ``ack_view=False`` / ``ack_events=False`` leave the view (null) / the events (``[]``) out of the ack,
        for an in-process player that reads them when it needs them, so nobody builds what nobody reads."""
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
            # One request at a time applies an action id, across processes too: the game's lock is this
            # process's; without the claim a retry on another worker, racing the first request, found
            # nothing remembered yet and could apply the action twice (a craft is legal twice).
            claim = self._claim_action_id(live, idempotency_key, digest) if idempotency_key else None
            try:
                for _ in race_attempts():
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
                    return self._answer_committed(
                        live,
                        seat_no,
                        events,
                        records,
                        remember,
                        origin,
                        ack_view=ack_view,
                        ack_events=ack_events,
                    )
            finally:
                if claim is not None:
                    self.store.replace_value(claim[0], claim[1], None)
        raise ServerError("conflict", "The game changed under concurrent requests; send the action again.")

    def _claim_action_id(self, live: LiveGame, idempotency_key: str, digest: str) -> tuple[str, str] | None:
        """Claim an action id for this request: (key, value) to release when done, or None when another
        request's claim was found and its answer is remembered by now (the caller then answers it). Raises
        ``action_in_progress`` while another request holds a live claim on the id."""
        key = action_claim_key(live.game_id, idempotency_key)

        def judge(holder: dict[str, Any]) -> bool:
            if self.store.recall_action(live.game_id, idempotency_key) is not None:
                return False  # answered by the other request: _apply_as_seat recalls it
            if not claim_is_stale(holder, self.clock()):
                raise ServerError(
                    "action_in_progress",
                    "Another request is applying this client_action_id right now; wait for its answer, or "
                    "send the same action again in a moment to get it.",
                    status=409,
                )
            return True  # left by a crash: take it over

        claim = {"at": self.clock(), "digest": digest, "by": secrets.token_hex(8)}
        value = claim_in_store(self.store, key, claim, judge)
        return None if value is None else (key, value)

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
        *,
        ack_view: bool = True,
        ack_events: bool = True,
    ) -> dict[str, Any]:
        """The ack of a stored action. The change is durable, so no failure from here on may be answered as
        if nothing happened: bookkeeping and pushes are logged and skipped, and an ack that cannot be built
        is the typed ``answer_failed`` (the action took effect; read the view)."""
        try:
            self._settle(live, events)
        except Exception:
            log.exception("game %s: bookkeeping after a stored action failed", live.game_id)
        try:
            news = self._news(live, seat, events, records) if ack_events else []
            response = self.envelope(live, seat, news, ok=True, with_view=ack_view)
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
            if live.status == "waiting" and self._end_waiting(live.game_id, "aborted") == "aborted":
                self.scheduler.cancel(expiry_timer_key(live.game_id))
                self._release_open_slot(live)
            fields = {"status": "aborted", "abort_reason": reason, "finished_at": self.clock()}
            self.store.update_game(live.game_id, **fields)
            live.meta.update(fields)
            live.deadline = None
            self.scheduler.cancel(f"deadline:{live.game_id}")
            self._stop_bots(live)
            self._push_seats(live)
            self._lobby_changed(live)
            live.changed.notify_all()

    # ------------------------------------------------------------------------------- waiting games
    def close_waiting(self, game_id: Any, reason: str) -> None:
        """Close a game that still waits for players (``reason``: cancelled or expired): aborted with that
        reason, its expiry timer and open-game slot freed, its seats, spectators and the lobby told. Raises
        ``not_waiting`` when it has started or closed: the conditional write of :func:`waiting_ended_key`
        decides a close racing the start (or another close), in whatever process each runs."""
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            self.reload_waiting_status(live)
            if live.status != "waiting":
                raise not_waiting(live.status)
            decided = self._end_waiting(live.game_id, reason)
            if decided not in CLOSED_UNSTARTED:
                raise not_waiting("running")
            # a close another process decided but did not finish (it crashed) is finished here, as decided
            fields = {"status": "aborted", "abort_reason": decided, "finished_at": self.clock()}
            self.store.update_game(live.game_id, **fields)
            live.meta.update(fields)
            self.scheduler.cancel(expiry_timer_key(live.game_id))
            self._release_open_slot(live)
            closed = {"game_id": live.game_id, "reason": decided}
            for seat in range(len(live.seats)):
                self.transport.push("game_cancelled", closed, seat_room(live.game_id, seat), None)
            self.transport.push("game_cancelled", closed, spectator_room(live.game_id), None)
            self._push_seats(live)
            self._lobby_changed(live)
            live.changed.notify_all()
        with self._registry_lock:
            self._remember_finished(live.game_id)
        if decided != reason:
            raise not_waiting(f"already {decided}")

    def reload_waiting_status(self, live: LiveGame) -> None:
        """A waiting game's status and seat claims as the store has them (another worker may have closed it;
        a join may have claimed a seat not yet recorded). Under the game's lock."""
        if live.status != "waiting":
            return
        self._refresh_seats(live)
        stored = self.store.get_game(live.game_id)
        if stored is not None and stored.get("status") != "waiting":
            live.meta.update({k: stored[k] for k in ("status", "abort_reason", "finished_at") if k in stored})

    def _end_waiting(self, game_id: str, outcome: str) -> str:
        """Decide once how the game stops waiting: ``outcome`` if this call decided it, else what did. A
        player's leave in progress (:data:`LEAVING_PREFIX`) stops a start (a seat is being freed) and makes a
        close wait for it; one a crash left behind is taken back."""
        key = waiting_ended_key(game_id)
        for _ in range(LEAVE_WAIT_ROUNDS):
            if self.store.replace_value(key, None, outcome):
                return outcome
            decided = self.store.get_value(key)
            if decided is None:
                continue
            if not decided.startswith(LEAVING_PREFIX):
                return decided
            if leaving_is_stale(decided):
                self.store.replace_value(key, decided, None)
            elif outcome == "started":
                return decided
            else:
                time.sleep(LEAVE_WAIT_SECONDS)
        raise ServerError("conflict", "The game changed under concurrent requests; try again.", status=409)

    def _arm_expiry(self, live: LiveGame) -> None:
        """Schedule the close of a game that waits longer than ``limits.waiting_game_expiry_minutes`` after
        its creation (a time in the store, so a restarted server arms the same one)."""
        minutes = self.settings.limits.waiting_game_expiry_minutes
        if minutes is None:
            return
        created = live.meta.get("created_at")
        start = float(created) if isinstance(created, int | float) else self.clock()
        self.scheduler.schedule(
            expiry_timer_key(live.game_id), start + minutes * 60, partial(self._expire, live.game_id)
        )

    def _expire(self, game_id: str) -> None:
        try:
            self.close_waiting(game_id, "expired")
        except ServerError as err:  # it started (or closed) meanwhile
            log.info("game %s: expiry not applied: %s", game_id, err.code)
            return
        log.info(
            "game %s: closed unstarted after %s minutes",
            game_id,
            self.settings.limits.waiting_game_expiry_minutes,
        )

    def _release_open_slot(self, live: LiveGame) -> None:
        """Free the creator's open-game slot this game holds (server.web.lobby), if it still holds it."""
        slot = live.meta.get("open_slot")
        if isinstance(slot, dict) and isinstance(slot.get("key"), str) and isinstance(slot.get("claim"), str):
            self.store.replace_value(slot["key"], slot["claim"], None)

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

    def _stamped(self, events: list[Event]) -> list[dict[str, Any]]:
        """The records of ``events`` to store, stamped with one time: they happened together, now."""
        stamp = self.clock()
        return [{**event.to_dict(), "time": stamp} for event in events]

    def _commit(
        self, live: LiveGame, actor: int | None, action: Any
    ) -> tuple[list[Event], list[dict[str, Any]]]:
        """Apply and durably append; on a lost race replay from the store and raise SequenceConflict."""
        assert live.game is not None
        events = live.game.apply(actor, action)  # GameError: nothing changed
        records = self._stamped(events)
        try:
            stored = self.store.append_events(live.game_id, records)
        except SequenceConflict:
            log.info("game %s: another worker appended first; replaying", live.game_id)
            self.catch_up(live)
            raise
        except Exception:
            # the in-memory game already moved on: rebuild it from the store, which did not
            self._replay(live, self.store.load_events(live.game_id))
            raise
        records = list(stored)  # as the store keeps them: what a reload would rebuild
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
            # ratings and the players' histories, once per game whichever worker gets here (ratings.py)
            record_table_game(
                self.store,
                self.settings,
                live.meta,
                [seat.record() for seat in live.seats],
                game,
                bot_name=self.bots.seat_name,
            )

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

    def envelope(
        self,
        live: LiveGame,
        seat: int | None,
        events: list[dict[str, Any]] | None = None,
        *,
        ok: bool | None = None,
        with_view: bool = True,
    ) -> dict[str, Any]:
        """What a seat (or a spectator, seat None) is told about the game now (:class:`Envelope`), with the
        ``events`` given (already numbered) when there are any; ``with_view=False`` leaves the view null.

        A viewer outside the trade (the view's phase is ``"trade"``) gets no deadline: its restart when a
        proposal is made would reveal the proposal.
        """
        game = live.game
        view = self.view_of(live, seat) if with_view or live.deadline is not None else None
        outsider = view is not None and view["phase"] == "trade"
        return envelope(
            ok=ok,
            game_id=live.game_id,
            hall=live.meta.get("hall"),
            status=live.status,
            seat=seat,
            log_size=game.log_size(seat) if game is not None else 0,
            deadline=None if outsider else live.deadline,
            seats=live.public_seats(),
            view=view if with_view else None,
            events=events,
        )

    def view_of(self, live: LiveGame, seat: int | None) -> dict[str, Any] | None:
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
            if not self.transport.has_listeners(room, skip_sid):
                continue  # e.g. the actor's seat whose only connection gets the ack instead
            news = self._news(live, seat, events, records)
            if news:
                self.transport.push("update", self.envelope(live, seat, news), room, skip_sid)

    def _news(
        self, live: LiveGame, seat: int | None, events: list[Event], records: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Of a change's ``events`` (stored as ``records``), those ``seat`` may see, numbered in its log."""
        visible = [r for e, r in zip(events, records, strict=True) if visible_to(e, seat)]
        if not visible:
            return []
        return number_events(visible, live.game.log_size(seat) if live.game is not None else len(visible))

    def _push_seats(self, live: LiveGame) -> None:
        payload = {"game_id": live.game_id, "status": live.status, "seats": live.public_seats()}
        for seat in range(len(live.seats)):
            self.transport.push("seats", payload, seat_room(live.game_id, seat), None)
        self.transport.push("seats", payload, spectator_room(live.game_id), None)

    def _lobby_changed(self, live: LiveGame) -> None:
        self.transport.push(
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

    def apply_system(self, game_id: str, action: Any) -> list[Event]:
        """A system action (a timeout) that the game's runner decided on rather than a deadline (e.g. an
        environment's guard against a phase that never ends): committed and published like a deadline's.
        Raises the engine's refusal, changing nothing."""
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            events, records = self._commit(live, None, action)
            self._after_change(live, events, records)
            return events

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
            for _ in race_attempts():
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
        return number_events(visible, len(visible))

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
            timed = bool(records) and records[0].get("time") is not None  # an untimed game tells no times
            times = (lambda seq: records[seq].get("time")) if timed else None
            context = query_context(live.game, chosen, parsed, times)
        # the answer may take 100s of ms of CPU: under gevent off the event loop (a real OS thread)
        answer = self.query_threads.run(answer_query, context, parsed)
        return {"game_id": live.game_id, "seat": chosen, "answer": answer}

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
            self.transport.push("presence", payload, seat_room(game_id, other), None)
        self.transport.push("presence", payload, spectator_room(game_id), None)

    @property
    def query_threads(self) -> CpuThreads:
        """The threads queries are answered on (server.query_threads), made at the first query."""
        with self._registry_lock:
            if self._query_threads is None:
                self._query_threads = CpuThreads(self.settings.server.query_threads)
            return self._query_threads

    @property
    def bot_executor(self) -> BotExecutor:
        """The threads bot moves are decided on, started when the first bot seat moves."""
        with self._registry_lock:
            if self._executor is None:
                bots = self.settings.bots
                self._executor = BotExecutor(bots.workers, bots.max_abandoned_threads)
            return self._executor

    def close(self) -> None:
        self.scheduler.close()
        if self._executor is not None:
            self._executor.close()
