"""Bot seats: the table plays a seat's policy exactly as a remote client would, never inside the game's lock.

A move is decided outside the game's lock: under the lock the seat's view, legal actions and new events are
copied (``_prepare_bot_move``); a thread of the bot executor builds the seat's live policy if needed and runs
the one decide step every runner calls (:func:`server.game.policy.decide`); the answer goes through the same
path as a client's action, under the lock again, unless the game moved on meanwhile (``_bot_decided``). A
refused answer is handled by the table's :class:`~server.game.policy.OnRefusal` strategy (told and asked again
if the policy listens, else another seed; then the seat resigns). A watchdog on the deadline scheduler
abandons a move that takes longer than ``bots.move_time_limit_seconds`` and the fallback policy plays it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from server.game.errors import GameError
from server.game.events import Event, visible_to
from server.game.legal import legal_actions
from server.game.policy import Decision, OnRefusal, decide, listens
from server.game.state import Game
from server.game.views import move_key as move_key_of
from server.store import SequenceConflict, Store
from server.table.actions import action_digest, parse_player_action, race_attempts
from server.table.bot_executor import BotExecutor
from server.table.config import Settings
from server.table.envelope import json_copy, number_events
from server.table.errors import ServerError
from server.table.live import BotMove, LiveGame, LivePolicy, overdue_key, takeover_key
from server.table.policies import BotRegistry, bot_action_id, bot_seed, policy_seed
from server.table.timers import Scheduler

log = logging.getLogger(__name__)


class BotSeats:
    """The table's bot seats (a part of :class:`server.table.master.Table`, which provides the rest)."""

    settings: Settings
    store: Store
    scheduler: Scheduler
    bots: BotRegistry
    bot_executor: BotExecutor
    on_refusal: OnRefusal
    clock: Callable[[], float]
    _process_token: str
    get: Callable[[Any], LiveGame]
    catch_up: Callable[[LiveGame], bool]
    history: Callable[[LiveGame, int | None], list[dict[str, Any]]]
    view_of: Callable[[LiveGame, int | None], dict[str, Any] | None]
    _schedule: Callable[[LiveGame], None]
    _commit: Callable[..., Any]
    _after_change: Callable[..., None]
    _apply_as_seat: Callable[..., Any]
    _push_seats: Callable[[LiveGame], None]
    _store_traces: Callable[..., int]
    _aborted: Callable[[LiveGame], bool]

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
        return move_key is None or move_key_of(game, seat) == move_key

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
        move_key = move_key_of(game, seat)
        attempt = live.bot_failures.get(seat, 0)
        if self.settings.socketio.message_queue and not self._claim_bot_move(live, seat, move_key, attempt):
            return None
        keeper: LivePolicy | None = current
        refusal = live.refusals.get(seat) if attempt else None
        hears = current.policy is not None and listens(current.policy)
        if attempt and not (refusal is not None and self.on_refusal.next_try(attempt, hears) == "ask_again"):
            # a retry the policy cannot learn from (no hook, or it raised): a one-move policy with another
            # seed (or it would repeat itself), shown the whole log
            seed, events, keeper = (
                policy_seed(live.seed, seat, move_key, attempt),
                self.history(live, seat),
                None,
            )
            refusal = None
        else:  # its move, or a refused answer it hears about (an LLM agent): told, then asked again
            seed, events = current.seed, self._seat_news(live, seat, current)
        move = BotMove(
            game_id=live.game_id,
            seat=seat,
            spec=spec,
            move_key=move_key,
            attempt=attempt,
            seed=seed,
            view=json_copy(self.view_of(live, seat)),  # the policy may keep or change it: its own copy
            legal=list(legal_actions(game, seat)),
            events=json_copy(events),
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
        news = number_events(visible, policy.observed + len(visible))
        policy.delivered = len(live.game.events)
        policy.observed += len(visible)
        return news

    def _decide(self, live: LiveGame, move: BotMove) -> None:
        """On the bot executor, without the game's lock: build the policy if needed, then the one decide step
        (:func:`server.game.policy.decide`: told its last refusal, shown its new events, asked, traces)."""
        move.thread = threading.get_ident()
        if move.abandoned.is_set():
            return  # the time limit passed while the move waited for a thread
        policy = move.live.policy if move.live is not None else None
        if policy is None:
            try:
                policy = self.bot_executor.think(self.bots.make, move.spec, move.seed)
            except Exception as err:
                self._bot_decided(live, move, Decision(failure=err))
                return
            if move.live is not None:
                move.live.policy = policy
        decision = self.bot_executor.think(decide, policy, move.view, move.legal, move.events, move.refusal)
        if decision.trace_failure is not None:
            failure = decision.trace_failure
            log.error("game %s: seat %s's policy lost its traces: %r", live.game_id, move.seat, failure)
        event_seq = self._bot_decided(live, move, decision)
        self._store_traces(live.game_id, move.seat, None, decision.refusal_traces)
        self._store_traces(live.game_id, move.seat, event_seq, decision.traces)

    def _bot_decided(self, live: LiveGame, move: BotMove, decision: Decision) -> int | None:
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
            if decision.failure is not None:
                if move.live is not None:
                    live.policies.pop(move.seat, None)  # its state is suspect: rebuilt from the log next move
                self.catch_up(live)
                if self._bot_move_valid(live, move.seat, move.move_key):
                    self._bot_failed(live, move.seat, move.spec, decision.failure)
                elif live.game is not None:
                    self._schedule(live)
                return None
            return self._submit_bot_action(live, move.seat, move.spec, move.move_key, decision.action)

    def _submit_bot_action(
        self, live: LiveGame, seat: int, spec: str, move_key: str, action: Any
    ) -> int | None:
        """Under the lock: a bot's answer through the client path (same validation, a client action id
        derived from the move); a stale answer is dropped and the seat rescheduled; a refused one counts as
        a failure (retried with another seed, then the seat resigns)."""
        for _ in race_attempts():
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
            view = json_copy(self.view_of(live, seat))
            legal = list(legal_actions(live.game, seat))
            history = json_copy(self.history(live, seat))
        spec = self.settings.bots.fallback
        try:
            fallback = self.bots.make(spec, bot_seed(live.seed, seat, f"fallback:{move.move_key}"))
            decision = decide(fallback, view, legal, history)
        except Exception as err:
            decision = Decision(failure=err)
        with live.lock:
            live.fallbacks.discard(seat)
            if decision.failure is None:
                self._submit_bot_action(live, seat, spec, move.move_key, decision.action)
                return
            self.catch_up(live)
            if self._bot_move_valid(live, seat, move.move_key):
                self._bot_failed(live, seat, spec, decision.failure)
            elif live.game is not None:
                self._schedule(live)

    def _bot_failed(self, live: LiveGame, seat: int, name: str, err: Exception) -> None:
        """Under the lock: a bot's move was refused or its policy raised. Count it; what next is the table's
        :class:`~server.game.policy.OnRefusal` (``RESEED_THEN_RESIGN`` with ``bots.max_failures`` answers):
        told and asked again, or another seed, until the answers are spent; then the seat resigns."""
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
        held = live.policies.get(seat)
        hears = held is not None and held.policy is not None and listens(held.policy)
        if self.on_refusal.next_try(failures, hears) != "give_up":
            self._schedule(live)
            return
        log.error("game %s: bot %s at seat %s keeps failing; its seat resigns", live.game_id, name, seat)
        live.bot_failures[seat] = 0
        live.refusals.pop(seat, None)
        final = self.on_refusal.final_action(self.view_of(live, seat) or {})
        if final is None:
            return
        try:
            events, records = self._commit(live, seat, final)
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

    def hand_seat_to_bot(self, game_id: str, seat: int, spec: str) -> dict[str, Any]:
        """An admin's intervention: the bot or listed LLM agent ``spec`` plays ``seat`` for the rest of the
        running game (the idle takeover: ``takeover_key``, ``seat.takeover``), its next move scheduled now.
        Refused, changing nothing: ``unknown_game``, ``unknown_seat``, ``not_started`` / ``game_over``, or the
        spec's own refusal (:meth:`BotRegistry.require`: ``invalid_bot_spec``, ``bot_not_allowed``,
        ``unknown_bot``, ``credentials_in_spec``, ``model_unavailable``). Answers the seat's public record."""
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            if not 0 <= seat < len(live.seats):
                raise ServerError(
                    "unknown_seat",
                    f"Game {game_id} has seats 0 to {len(live.seats) - 1}; there is no seat {seat}.",
                    {"seat": seat, "seats": len(live.seats)},
                    status=404,
                )
            if self._aborted(live) or live.status == "finished":
                raise ServerError("game_over", f"The game is already {live.status}.", status=409)
            if live.game is None:
                raise ServerError(
                    "not_started",
                    "The game waits for players: only a running game's seat is handed over.",
                    status=409,
                )
            self.bots.require(spec, hall=live.meta.get("hall"))
            # a listed model is stored (and shown to the players) by its public id, never by its full spec,
            # whose options may name the operator's servers; policies are built from the full spec
            listed = self.bots.models.entry(spec) if self.bots.models is not None else None
            spec = self.bots.models.public_id(listed) if listed is not None and self.bots.models else spec
            key = takeover_key(game_id, seat)
            for _ in race_attempts():
                current = self.store.get_value(key)
                if self.store.replace_value(key, current, spec):
                    break
            else:
                raise ServerError(
                    "conflict", "The seat changed under a concurrent request; retry.", status=409
                )
            holder = live.seats[seat]
            holder.takeover = spec
            live.bot_failures.pop(seat, None)
            live.refusals.pop(seat, None)
            log.info("game %s: an admin handed seat %s to %s", game_id, seat, spec)
            records = [s.record() for s in live.seats]
            self.store.update_game(game_id, seats=records)
            live.meta["seats"] = records
            self._push_seats(live)
            self._schedule(live)
            return holder.public(live.online.get(seat, 0) > 0)

    @staticmethod
    def _bot_counts(live: LiveGame) -> dict[str, dict[str, int]]:
        """Per bot seat: its moves refused by the engine or failed in the policy, and its moves abandoned past
        the time limit (counted by this process since it loaded the game)."""
        seats = set(live.bot_refused) | set(live.bot_overdue)
        return {
            str(seat): {"failed": live.bot_refused.get(seat, 0), "overdue": live.bot_overdue.get(seat, 0)}
            for seat in sorted(seats)
        }


def idle_counters(game: Game) -> dict[int, int]:
    """Consecutive timeouts per seat since it last acted itself (kept by the engine)."""
    return dict(enumerate(game.idle_timeouts()))
