"""One game of an experiment: :class:`GameJob` (everything a worker needs) and :func:`play_job` (play it).

A job is picklable, so a thread, a spawned process or a Ray task can run it. :func:`play_job` opens the
store named by ``job.store_url``, creates the game (``status: running``, ``source: experiment`` and the
job's metadata), builds the seats' policies, plays the game with :func:`agents.local.play_local` (the
table's one policy loop; a policy's illegal move is told, retried, then replaced by the safe move:
``FALLBACK``) and streams each move's events, then its trace records, into the store as it is played.
It ends the game ``finished`` (with its outcome: ``log_sha256``, ``turns``, ``winners``, ``tokens``,
``cost_usd``, ``llm_calls``, ``models``, ``prompts`` (system prompt digests), ``seconds``) or
``aborted`` with an ``error`` field, and never
raises for a game's failure: the :class:`JobOutcome` says what happened.

Game ids are a function of the experiment, the job key and the attempt (:func:`game_id_for`), so a resumed
run finds every attempt a job made, whether or not the runner that made it lived to record it.

Stored game metadata (beyond what the server keeps): ``source`` ("experiment"), ``experiment``,
``job_key``, ``attempt``, ``index``, ``condition`` (the grid cell's readable label), ``labels`` (the cell's
coordinates: condition, instance, seed, repetition, swapped), ``instance_id``, ``settings``, ``seed``,
``seeds`` (the policies' seeds by seat), ``seats`` (see :meth:`SeatPlan.metadata`).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Protocol

from agents.bots.registry import make_policy
from agents.local import LocalProgress, derive_seed, play_local
from craft_rules.errors import TradeCraftError
from craft_rules.loader import load_rule_set
from craft_rules.tasks import load_instance
from server.game import GameSettings
from server.game.policy import FALLBACK
from server.store import Store, open_store
from server.table.config import ModelPrice, load_settings
from server.table.costs import Tokens, call_model, cost_usd

SOURCE = "experiment"
"""The ``source`` of every game the runner stores."""

INTERRUPTED = "interrupted"
"""The error code of a game stopped by Ctrl-C or a killed runner: resume reruns it without counting it as
a failed attempt."""

LLM_CALL = "llm_call"
"""The ``trace`` field of an LLM agent's record of one model call (with its ``tokens``)."""
LLM_PREFIX = "llm_prefix"
"""The ``trace`` field of an LLM agent's record of its system prompt and tools (with their ``sha256``)."""


class Interrupted(TradeCraftError):
    """The run was asked to stop (Ctrl-C) while this game was being played."""

    def __init__(self) -> None:
        super().__init__(INTERRUPTED, "The experiment was interrupted; run the same command again to resume.")


class StopFlag(Protocol):
    """A threading or multiprocessing ``Event``: set = stop playing."""

    def is_set(self) -> bool: ...
    def set(self) -> None: ...
    def clear(self) -> None: ...


_STOP: StopFlag = threading.Event()


def request_stop() -> None:
    """Ask every game playing in this process to stop after its current move (it is stored ``aborted``
    with the error ``interrupted``)."""
    _STOP.set()


def clear_stop() -> None:
    """Let games play again (a new run in the same process)."""
    _STOP.clear()


def share_stop(flag: StopFlag) -> None:
    """Make ``flag`` (e.g. a multiprocessing Event the parent sets) this process's stop flag: how a worker
    process learns that the run is being interrupted."""
    global _STOP
    _STOP = flag


@dataclass(frozen=True)
class SeatPlan:
    """Who plays one seat: the policy spec to build and what the stored seat record says about it.

    ``spec`` is the full policy spec (:mod:`agents.bots.registry`), for LLM seats with the ``tom``,
    ``persona`` and ``cot`` options already written in.
    """

    seat: int
    spec: str
    kind: Literal["bot", "agent"]
    name: str
    """The bot's name (``tom1``) or the model as configured (``openai:gpt-4o``)."""
    agent: str
    """A readable label of the seat's agent, e.g. ``tom1`` or ``gpt-4o fair cot``; its ToM orders are
    stored apart (``tom_orders``), so the analysis compares one agent across its ToM groups."""
    tom_orders: tuple[int, ...]
    persona: str | None = None
    reasoning: str | None = None
    focal: bool = True

    @property
    def is_llm(self) -> bool:
        return self.kind == "agent"

    def metadata(self) -> dict[str, Any]:
        """The stored seat record: ``seat``, ``kind``, ``name``, ``bot`` or ``model``, ``agent``,
        ``tom_orders``, ``persona``, ``reasoning``, ``focal``, ``spec``."""
        record: dict[str, Any] = {
            "seat": self.seat,
            "kind": self.kind,
            "name": self.name,
            "agent": self.agent,
            "tom_orders": list(self.tom_orders),
            "persona": self.persona,
            "reasoning": self.reasoning,
            "focal": self.focal,
            "spec": self.spec,
        }
        record["model" if self.is_llm else "bot"] = self.name
        return record


class RateLimiter(Protocol):
    """Per-provider request and token limits shared by the games of a run (``agents.experiments.limits``
    implements it): ``attach`` returns the LLM seat's policy with its chat model held to the limits."""

    def attach(self, policy: Any, seat: SeatPlan) -> Any: ...


@dataclass(frozen=True)
class GameJob:
    """Everything a worker (thread, process or Ray task) needs to play one game of an experiment."""

    experiment: str
    key: str
    """Stable id of the grid cell x instance x seed x repetition (x seats swapped)."""
    index: int
    """The job's place in the experiment's plan."""
    attempt: int
    """1 for the first try; each rerun of an errored or interrupted game adds one."""
    store_url: str
    instance_id: str
    seats: tuple[SeatPlan, ...]
    settings: dict[str, Any]
    """:class:`server.game.GameSettings` as JSON."""
    seed: int
    """The game's own seed; each seat's policy gets :func:`policy_seed` of it."""
    labels: dict[str, Any] = field(default_factory=dict)
    """The grid coordinates (``condition``, ``instance``, ``seed``, ``repetition``, ``swapped``, ...)."""

    @property
    def game_id(self) -> str:
        return game_id_for(self.experiment, self.key, self.attempt)

    @property
    def has_llm(self) -> bool:
        """Whether a seat calls a model (such jobs wait on the network: threads, not processes)."""
        return any(seat.is_llm for seat in self.seats)


@dataclass(frozen=True)
class JobOutcome:
    """What became of one job's attempt. ``status`` is "finished" or "error" (then ``error`` has ``code``
    and ``message``; the code ``interrupted`` marks a game stopped by Ctrl-C)."""

    key: str
    attempt: int
    game_id: str
    status: Literal["finished", "error"]
    error: dict[str, Any] | None = None
    log_sha256: str | None = None
    turns: int | None = None
    winners: tuple[int, ...] = ()
    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float | None = None
    llm_calls: int = 0
    seconds: float = 0.0
    models: tuple[str, ...] = ()
    """Model names as the provider reported them in this game's calls."""
    prompts: tuple[dict[str, Any], ...] = ()
    """The LLM seats' system prompts (``llm_prefix`` traces): ``sha256``, ``model``, ``settings``,
    ``system``."""
    refusals: int = 0

    @property
    def interrupted(self) -> bool:
        return self.error is not None and self.error.get("code") == INTERRUPTED


def game_id_for(experiment: str, key: str, attempt: int) -> str:
    """The stored game id of a job's attempt: readable prefix, a digest of the key, the attempt."""
    digest = hashlib.sha256(f"{experiment}\n{key}".encode()).hexdigest()[:16]
    return f"exp-{experiment}-{digest}-a{attempt}"


def policy_seed(game_seed: int, seat: int, spec: str) -> int:
    """The seed of the policy on ``seat``: derived from the game's, so the same job plays the same game."""
    return derive_seed(game_seed, "policy", seat, spec)


@lru_cache(maxsize=8)
def _store(url: str) -> Store:
    # one store per URL and process: the Store is thread-safe and opening one per game is wasteful
    return open_store(url)


@lru_cache(maxsize=1)
def _prices() -> Mapping[str, ModelPrice]:
    return load_settings().prices.models


def build_policies(job: GameJob, limiter: RateLimiter | None = None) -> list[Any]:
    """One fresh policy per seat, seeded from the game's seed. ``limiter`` (per-provider request and token
    limits, :class:`RateLimiter`) is attached to the LLM seats' policies (their chat models)."""
    policies = []
    for seat in job.seats:
        policy = make_policy(seat.spec, policy_seed(job.seed, seat.seat, seat.spec))
        if limiter is not None and seat.is_llm:
            policy = limiter.attach(policy, seat)
        policies.append(policy)
    return policies


class _Streamer:
    """``on_progress`` for play_local: a move's events, then its trace records, into the store."""

    def __init__(self, store: Store, game_id: str) -> None:
        self.store = store
        self.game_id = game_id
        self.traces: list[dict[str, Any]] = []

    def __call__(self, progress: LocalProgress) -> None:
        events = [
            {**event.to_dict(), **({"time": when} if when is not None else {})}
            for event, when in zip(progress.events, progress.times, strict=True)
        ]
        traces = [trace.model_dump(exclude={"kind"}) for trace in progress.traces]
        if events:
            self.store.append_events(self.game_id, events)
        if traces:
            self.store.append_traces(self.game_id, traces)
            self.traces.extend(traces)
        if _STOP.is_set():
            raise Interrupted()


def usage_of(traces: list[dict[str, Any]], prices: Mapping[str, ModelPrice]) -> dict[str, Any]:
    """Tokens, cost, model calls, provider-reported model names and system prompts of a game's traces.

    A call's model is :func:`server.table.costs.call_model` (the provider's name for it, else the configured
    one). ``cost_usd`` is None when some model with tokens is not in the price table."""
    by_model: dict[str, Tokens] = {}
    reported: list[str] = []
    prompts: dict[str, dict[str, Any]] = {}
    calls = 0
    for record in traces:
        if record.get("trace") == LLM_PREFIX and isinstance(record.get("sha256"), str):
            prompts.setdefault(
                record["sha256"],
                {key: record.get(key) for key in ("sha256", "model", "settings", "system")},
            )
        if record.get("trace") != LLM_CALL:
            continue
        calls += 1
        provider_model = record.get("provider_model")
        if isinstance(provider_model, str) and provider_model and provider_model not in reported:
            reported.append(provider_model)
        model = call_model(record)
        by_model[model] = by_model.get(model, Tokens()) + Tokens.of_trace(record)
    total = sum(by_model.values(), Tokens())
    costs = [cost_usd(prices, model, tokens) for model, tokens in by_model.items()]
    cost = None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 8)
    return {
        "tokens": total,
        "cost_usd": cost,
        "llm_calls": calls,
        "models": tuple(reported),
        "prompts": tuple(prompts.values()),
    }


def usage_fields(usage: Mapping[str, Any]) -> dict[str, Any]:
    """The usage an attempt stores with its game, finished or aborted (money spent either way):
    ``tokens`` (input / cached / output), ``cost_usd`` (None if a model is not priced), ``llm_calls``."""
    tokens: Tokens = usage["tokens"]
    return {
        "tokens": {"input": tokens.input, "cached": tokens.cached, "output": tokens.output},
        "cost_usd": usage["cost_usd"],
        "llm_calls": usage["llm_calls"],
    }


def stored_usage(store: Store, game_id: str) -> dict[str, Any]:
    """:func:`usage_fields` of a game from its stored traces: for a game cut off with no one to count
    (its runner or worker was killed)."""
    return usage_fields(usage_of(store.load_traces(game_id), _prices()))


def job_metadata(job: GameJob) -> dict[str, Any]:
    """The metadata a job's game is created with (``status: running``)."""
    return {
        "status": "running",
        "source": SOURCE,
        "mode": "experiment",
        "experiment": job.experiment,
        "job_key": job.key,
        "attempt": job.attempt,
        "index": job.index,
        "condition": job.labels.get("condition"),
        "labels": dict(job.labels),
        "instance_id": job.instance_id,
        "ruleset": job.settings.get("ruleset"),
        "settings": dict(job.settings),
        "seed": job.seed,
        "seeds": {f"seat{s.seat}": policy_seed(job.seed, s.seat, s.spec) for s in job.seats},
        "seats": [seat.metadata() for seat in job.seats],
    }


def lost_outcome(job: GameJob) -> JobOutcome | None:
    """What became of ``job`` when the worker process playing it was lost (killed, or torn down with a
    broken pool): None if its game was never stored (it never started: replay the same attempt); a game
    still ``running`` is stored ``aborted``, ``interrupted`` (with the usage its traces show) and reported
    so, and the runner replays it without counting a failure; a game that ended before the worker went is
    reported as it was stored."""
    store = _store(job.store_url)
    record = store.get_game(job.game_id)
    if record is None:
        return None
    stored: dict[str, Any] = dict(record)
    if stored.get("status") == "running":
        error = {"code": INTERRUPTED, "message": "the worker process playing this game was lost"}
        spent = stored_usage(store, job.game_id)
        store.update_game(job.game_id, status="aborted", finished_at=time.time(), error=error, **spent)
        stored.update(status="aborted", error=error, **spent)
    tokens = stored.get("tokens") or {}
    finished = stored.get("status") == "finished"
    return JobOutcome(
        key=job.key,
        attempt=job.attempt,
        game_id=job.game_id,
        status="finished" if finished else "error",
        error=None if finished else stored.get("error") or {"code": INTERRUPTED, "message": "worker lost"},
        log_sha256=stored.get("log_sha256"),
        turns=stored.get("turns"),
        winners=tuple(stored.get("winners") or ()),
        tokens=Tokens(*(int(tokens.get(part, 0)) for part in ("input", "cached", "output"))),
        cost_usd=stored.get("cost_usd"),
        llm_calls=int(stored.get("llm_calls") or 0),
    )


def _error(err: BaseException) -> dict[str, Any]:
    if isinstance(err, KeyboardInterrupt | Interrupted):
        return {"code": INTERRUPTED, "message": "interrupted; the next run of the experiment replays it"}
    code = getattr(err, "code", None) or type(err).__name__
    return {
        "code": str(code),
        "message": str(err)[:2000],
        "type": type(err).__name__,
        "where": "".join(traceback.format_tb(err.__traceback__)[-3:])[-2000:],
    }


def play_job(job: GameJob, limiter: RateLimiter | None = None) -> JobOutcome:
    """Play ``job``'s game into its store and say how it went; never raises for the game's failure
    (a store that cannot be opened, a policy that cannot be built, a crash mid-game, Ctrl-C)."""
    started = time.monotonic()
    game_id = job.game_id
    created = False
    streamer: _Streamer | None = None
    try:
        store = _store(job.store_url)
        store.create_game(game_id, job_metadata(job))
        created = True
        instance = load_instance(job.instance_id)  # cached: a worker plays many games of few instances
        rules = load_rule_set(instance.ruleset)
        settings = GameSettings.model_validate(job.settings)
        policies = build_policies(job, limiter)
        streamer = _Streamer(store, game_id)
        result = play_local(
            instance,
            settings,
            rules,
            policies,
            job.seed,
            on_refusal=FALLBACK,
            clock=time.time,
            on_progress=streamer,
        )
        usage = usage_of(streamer.traces, _prices())
        seconds = round(time.monotonic() - started, 3)
        tokens: Tokens = usage["tokens"]
        current = store.get_game(game_id) or {}
        if current.get("status") != "running":  # a resumed run took it for a dead runner's: its rerun counts
            raise Interrupted()
        store.update_game(
            game_id,
            status="finished",
            finished_at=time.time(),
            log_sha256=result.log_sha256,
            turns=result.turns,
            winners=sorted(result.winners),
            end_reason=result.end_reason,
            refusals=result.refusals,
            **usage_fields(usage),
            models=list(usage["models"]),
            prompts=[prompt["sha256"] for prompt in usage["prompts"]],
            seconds=seconds,
        )
        return JobOutcome(
            key=job.key,
            attempt=job.attempt,
            game_id=game_id,
            status="finished",
            log_sha256=result.log_sha256,
            turns=result.turns,
            winners=tuple(sorted(result.winners)),
            tokens=tokens,
            cost_usd=usage["cost_usd"],
            llm_calls=usage["llm_calls"],
            seconds=seconds,
            models=usage["models"],
            prompts=usage["prompts"],
            refusals=result.refusals,
        )
    except (Exception, KeyboardInterrupt) as err:  # a game's failure is an outcome, not a crashed run
        error = _error(err)
        usage = usage_of(streamer.traces, _prices()) if streamer is not None else usage_of([], {})
        if created:
            # if the store itself failed, resume finds the game still running and reruns it
            with contextlib.suppress(Exception):
                store.update_game(
                    game_id, status="aborted", finished_at=time.time(), error=error, **usage_fields(usage)
                )
        return JobOutcome(
            key=job.key,
            attempt=job.attempt,
            game_id=game_id,
            status="error",
            error=error,
            tokens=usage["tokens"],
            cost_usd=usage["cost_usd"],
            llm_calls=usage["llm_calls"],
            seconds=round(time.monotonic() - started, 3),
            models=usage["models"],
            prompts=usage["prompts"],
        )
