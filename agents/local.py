"""Headless local games: drive :mod:`server.game` directly with one policy per seat.

No server, no network and no clock unless one is injected: :func:`play_local` asks each awaited seat's
policy for an action (with that seat's player view and legal action types), applies it, and repeats until
the game ends.
The order is fixed (awaited seats in seat order, one action each per round), so the same instance,
settings, seed and policies always give the same event log and the same ``log_sha256``.

A policy is anything with ``act(view, legal) -> dict`` (see :mod:`server.game.policy`). A policy that also
has ``observe(events: list[dict]) -> None`` is handed, before each of its moves and once at the end, the
events its seat may see that are new since its last call, as viewer-log records numbered ``n`` in the
seat's own log (:func:`server.game.events.viewer_log`, what a remote client receives): what an LLM agent
turns into text with :func:`agents.narrator.observation`.

With a ``clock`` (any ``() -> float`` of seconds since the epoch, e.g. ``time.time`` or a fake one in
tests), every event is stamped when it happens and :meth:`LocalResult.game_log` gives the game in the
researcher game-log format the server exports (:mod:`server.game.gamelog`), latencies included.

**Traces**: after each ``act`` the runner drains the policy's trace records (``drain_traces``, see
:mod:`server.game.policy`) and keeps them with the seat, the first event the move produced (``event_seq``;
null when refused) and the time; :meth:`LocalResult.game_log` writes them as ``trace`` records.
**Refusals**: each move is the one decide step (:func:`server.game.policy.decide`) every runner calls; a
refused move is handled by the runner's :class:`~server.game.policy.OnRefusal` strategy, here ``RAISE`` by
default: a policy with a ``refused`` hook is told the engine's typed error and asked again (up to its
``retries``); then (and at once for a policy without the hook) the game stops with :class:`LocalPlayError`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from craft_rules.errors import TradeCraftError
from craft_rules.model import RuleSet
from craft_rules.provenance import package_versions
from craft_rules.tasks import TaskInstance
from server.game import Event, Game, GameError, GameSettings, Timeout, viewer_log
from server.game.gamelog import (
    GameLog,
    InstanceRecord,
    LogHeader,
    LogSummary,
    RuleSetRef,
    TraceRecord,
    replay_with_latencies,
    trace_fields,
)
from server.game.legal import legal_actions
from server.game.policy import RAISE, OnRefusal, decide, listens, observe
from server.game.views import player_view

DEFAULT_MAX_ACTIONS_PER_PHASE = 1000
"""Actions a phase may take before the runner ends it with a system timeout (a stuck policy's guard)."""


class LocalPlayError(TradeCraftError):
    """A local game could not go on. ``code`` is machine-readable; the message says what to do.

    Codes: ``wrong_player_count`` (policies do not match the instance's seats) and every engine code
    (``item_not_held``, ``wrong_phase``, ...) when a policy sends an illegal action; then ``seat`` and
    ``action`` name the culprit (``to_dict`` reports both) and ``game`` is the game as it was before that
    action.
    """

    extra_fields = ("seat", "action")

    def __init__(
        self,
        code: str,
        message: str,
        seat: int | None = None,
        action: Any = None,
        details: dict[str, Any] | None = None,
        game: Game | None = None,
    ):
        super().__init__(code, message, details)
        self.seat = seat
        self.action = action
        self.game = game


@dataclass(frozen=True)
class LocalResult:
    """The outcome of a local game."""

    winners: list[int]
    turns: int
    events: list[Event]
    log_sha256: str
    """sha256 of the canonical event log (:meth:`server.game.Game.log_digest`)."""
    end_reason: str | None
    actions: int
    """Actions the policies sent (system timeouts not counted)."""
    timeouts: int
    game: Game = field(repr=False, compare=False)
    times: list[float | None] = field(default_factory=list, repr=False, compare=False)
    """When each event happened, by the injected clock (None without one)."""
    created_at: float | None = field(default=None, compare=False)
    traces: list[TraceRecord] = field(default_factory=list, repr=False, compare=False)
    """The policies' trace records, in the order they were made."""
    refusals: int = 0
    """Actions the engine refused and a policy then replaced."""

    def summary(self) -> dict[str, Any]:
        """The JSON-safe outcome ``tradecraft play --json`` prints."""
        return {
            "instance_id": self.game.instance.id,
            "ruleset": self.game.rules.name,
            "players": self.game.players,
            "seed": self.game.seed,
            "winners": self.winners,
            "end_reason": self.end_reason,
            "turns": self.turns,
            "events": len(self.events),
            "actions": self.actions,
            "timeouts": self.timeouts,
            "refusals": self.refusals,
            "traces": len(self.traces),
            "log_sha256": self.log_sha256,
        }

    def game_log(
        self,
        *,
        game_id: str | None = None,
        seats: Sequence[Mapping[str, Any]] = (),
        seeds: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> GameLog:
        """The game as a researcher game log (``source: local``), the same format the server exports.

        ``seats`` describe who played each seat (``{"seat", "kind", "name", "bot" | "model", ...}``);
        ``seeds`` adds e.g. the policies' seeds to the game's own (``"game"``).
        """
        game = self.game
        times = self.times or [None] * len(self.events)
        _, latencies = replay_with_latencies(
            game.instance, game.settings, game.rules, game.seed, self.events, times
        )
        header = LogHeader(
            game_id=game_id or f"local-{game.seed}",
            source="local",
            status="finished" if game.finished else "running",
            created_at=self.created_at,
            finished_at=times[-1] if game.finished and times else None,
            settings=game.settings.model_dump(mode="json"),
            ruleset=RuleSetRef(name=game.rules.name, content_hash=game.rules.content_hash),
            instance=InstanceRecord.of(game.instance),
            seeds={"game": game.seed, **(seeds or {})},
            versions=package_versions(),
            seats=[dict(seat) for seat in seats],
            models=[
                {"seat": seat.get("seat"), "model": seat["model"]} for seat in seats if seat.get("model")
            ],
            meta=dict(meta or {}),
        )
        return GameLog(
            header,
            list(self.events),
            list(times),
            latencies,
            traces=list(self.traces),
            summary=LogSummary.of(game),
        )


@dataclass(frozen=True)
class LocalProgress:
    """What a local game did since the last report: new events (with their times) and trace records."""

    game: Game
    events: Sequence[Event]
    times: Sequence[float | None]
    traces: Sequence[TraceRecord]


def derive_seed(seed: int, *parts: object) -> int:
    """A stable 63-bit seed for a part of a seeded run (e.g. one seat's bot), independent of hashing salt."""
    text = ":".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def play_local(
    instance: TaskInstance,
    settings: GameSettings,
    rules: RuleSet,
    policies: Sequence[Any],
    seed: int = 0,
    *,
    max_actions_per_phase: int = DEFAULT_MAX_ACTIONS_PER_PHASE,
    on_refusal: OnRefusal = RAISE,
    clock: Callable[[], float] | None = None,
    on_progress: Callable[[LocalProgress], None] | None = None,
) -> LocalResult:
    """Play ``instance`` to the end with ``policies[seat]`` choosing for each seat.

    ``seed`` seeds the game's own generator (e.g. a drawn first proposer); policies bring their own
    seeds. Each move is one :func:`server.game.policy.decide`; a refused move is handled by ``on_refusal``
    (default :data:`~server.game.policy.RAISE`: a policy that listens is told and asked again, then
    :class:`LocalPlayError`, whose ``error.game`` is the game as it was; ``FALLBACK`` plays the safe move
    instead). A phase that takes more than ``max_actions_per_phase`` actions is ended by a system timeout
    with the game's configured policy. ``clock`` (seconds since the epoch) stamps each event as it happens;
    the times are in ``result.times`` and the game log. ``on_progress`` is handed, after each move (and
    once before the first), what is new since its last call (:class:`LocalProgress`): how a caller streams
    the game into a store as it is played.
    """
    if len(policies) != instance.players:
        raise LocalPlayError(
            "wrong_player_count",
            f"Instance {instance.id} has {instance.players} seats but {len(policies)} policies were given; "
            "give exactly one policy per seat.",
            details={"seats": instance.players, "policies": len(policies)},
        )
    if on_refusal.deaf == "reseed":
        raise ValueError("play_local holds policies, not factories: it cannot reseed one (use RAISE)")
    created_at = clock() if clock is not None else None
    game = Game.new(instance, settings, rules, seed)
    times: list[float | None] = []

    streamed = [0, 0]  # events and trace records already handed to on_progress

    def stamp() -> None:
        # the events since the last stamp happened now (one action's events share its time)
        now = clock() if clock is not None else None
        times.extend([now] * (len(game.events) - len(times)))
        if on_progress is not None:
            on_progress(
                LocalProgress(game, game.events[streamed[0] :], times[streamed[0] :], traces[streamed[1] :])
            )
            streamed[:] = [len(game.events), len(traces)]

    traces: list[TraceRecord] = []
    stamp()
    delivered = [0] * game.players  # per seat: events of the game's log already scanned for it
    numbered = [0] * game.players  # per seat: events handed to its observe hook (its own log's length)
    observing = [getattr(p, "observe", None) is not None for p in policies]
    actions = timeouts = refusals = 0

    def keep(seat: int, records: list[dict[str, Any]], event_seq: int | None) -> None:
        now = clock() if clock is not None else None
        traces.extend(TraceRecord(**trace_fields(record, seat, event_seq, now)) for record in records)

    def news(seat: int) -> list[dict[str, Any]]:
        if not observing[seat]:
            return []
        new = viewer_log(game.events[delivered[seat] :], seat, start=numbered[seat])
        delivered[seat] = len(game.events)
        numbered[seat] += len(new)
        return new

    def move(seat: int) -> None:
        """One move of ``seat``: decide, apply; on a refusal, what ``on_refusal`` says."""
        nonlocal refusals
        policy = policies[seat]
        events, refusal, failures = news(seat), None, 0
        while True:
            view = player_view(game, seat)
            decision = decide(policy, view, legal_actions(game, seat), events, refusal)
            keep(seat, decision.refusal_traces, None)
            events = []
            if decision.failure is None:
                try:
                    first = len(game.events)
                    game.apply(seat, decision.action)
                    keep(seat, decision.traces, first)
                    return
                except GameError as err:
                    error = err.to_dict()
            elif on_refusal.then == "raise":
                keep(seat, decision.traces, None)
                raise decision.failure  # a policy that crashes is the caller's bug to see, as it is
            else:
                error = {"code": "policy_failed", "message": f"The policy raised {decision.failure!r}."}
            keep(seat, decision.traces, None)  # the refused move's traces
            failures += 1
            if on_refusal.next_try(failures, listens(policy)) == "ask_again":
                refusals += 1
                refusal = error
                continue
            fallback = on_refusal.final_action(view)
            if fallback is not None:
                game.apply(seat, fallback)
                return
            raise LocalPlayError(
                error["code"],
                f"Seat {seat} ({type(policy).__name__}) sent an illegal action: {error['message']}",
                seat=seat,
                action=decision.action,
                details=error.get("details"),
                game=game,
            )

    phase_key: tuple[int, str] = (game.turn, game.phase)
    phase_actions = 0
    while not game.finished:
        awaited = sorted(game.waiting_for())
        for seat in awaited:
            # an earlier seat's action this round may have ended the phase
            if game.finished or seat not in game.waiting_for():
                continue
            move(seat)
            stamp()
            actions += 1
            if (game.turn, game.phase) != phase_key:
                phase_key, phase_actions = (game.turn, game.phase), 0
            else:
                phase_actions += 1
            if phase_actions >= max_actions_per_phase and not game.finished:
                game.apply(None, Timeout(phase=game.phase, turn=game.turn))
                stamp()
                timeouts += 1
                phase_key, phase_actions = (game.turn, game.phase), 0
    for seat in range(game.players):
        end = news(seat)
        if end:
            observe(policies[seat], end)
    return LocalResult(
        winners=game.winners,
        turns=game.turn,
        events=list(game.events),
        log_sha256=game.log_digest(),
        end_reason=game.end_reason,
        actions=actions,
        timeouts=timeouts,
        game=game,
        times=times,
        created_at=created_at,
        traces=traces,
        refusals=refusals,
    )
