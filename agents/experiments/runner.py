"""Run an experiment: plan its games, skip the finished ones, play the rest, retry failures, keep count.

:func:`run_experiment` is what ``tradecraft experiment run`` calls. Resume is the same call again: the
store is the only state. Each job's attempts are stored games with ids that follow from the job
(:func:`agents.experiments.jobs.game_id_for`), so a new run reads, for every job, its attempts in order:

- a ``finished`` attempt: the job is done and never played again;
- an ``aborted`` attempt with an error: a failed attempt; the job is rerun until it has failed
  ``max_attempts`` times;
- an ``aborted`` attempt with the error ``interrupted`` (Ctrl-C) or one still ``running`` (the runner was
  killed; it is marked ``aborted``, ``interrupted`` now): rerun, not counted as a failure.

One runner per experiment at a time: a second one would take the first one's running games for
interrupted ones. A config that plays other games is refused (:func:`agents.experiments.manifest.register`);
``concurrency``, ``max_attempts``, ``limits`` and ``description`` may change. Each run is recorded in the
manifest's ``runs`` (code version, git commit, prompt version); a resume with other code than the last run
warns on stderr.

The progress bar shows games done / failed / running, tokens in / cached / out and the cost so far (from
the price table of the settings; ``n/a`` when a model is not in it). Tokens and cost count every attempt,
failed and interrupted ones too (their calls were paid for; each stored game keeps its usage), so a run's
totals are the same whether or not it was resumed; the summary's ``finished_games`` is the finished
games' part.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agents.bots.registry import make_policy
from agents.experiments.config import ExperimentConfig, ExperimentError
from agents.experiments.executors import Executor, LocalExecutor
from agents.experiments.jobs import (
    INTERRUPTED,
    GameJob,
    JobOutcome,
    clear_stop,
    game_id_for,
    stored_usage,
)
from agents.experiments.limits import limiter_from_config
from agents.experiments.manifest import add_reported, build_manifest, register, write_manifest
from agents.experiments.plan import plan_jobs
from server.store import GameRecord, Store, open_store
from server.table.costs import Tokens


def default_out(name: str) -> Path:
    """Where a run writes its manifest (and its SQLite store) unless told: ``experiments/<name>``."""
    return Path("experiments") / name


def default_store_url(out: Path) -> str:
    return f"sqlite:///{(out / 'experiment.db').resolve()}"


@dataclass
class JobState:
    """What the store says about one job: its attempts so far and what to do next."""

    job: GameJob
    attempts: list[GameRecord] = field(default_factory=list)
    failures: int = 0
    finished: GameRecord | None = None

    @property
    def next_attempt(self) -> int:
        return len(self.attempts) + 1


def _is_failure(record: GameRecord) -> bool:
    error = record.get("error")  # type: ignore[typeddict-item]
    return record.get("status") == "aborted" and not (
        isinstance(error, dict) and error.get("code") == INTERRUPTED
    )


def scan(store: Store, jobs: list[GameJob], *, mark_interrupted: bool = False) -> list[JobState]:
    """Each job's stored attempts. ``mark_interrupted``: games left ``running`` (a killed runner's) are
    marked ``aborted``, ``interrupted`` (only a runner about to resume may do this)."""
    states = []
    for job in jobs:
        state = JobState(job)
        while (
            record := store.get_game(game_id_for(job.experiment, job.key, state.next_attempt))
        ) is not None:
            if record.get("status") == "running" and mark_interrupted:
                error = {"code": INTERRUPTED, "message": "the runner stopped while this game was played"}
                spent = stored_usage(store, record["game_id"])  # its calls were paid for all the same
                store.update_game(record["game_id"], status="aborted", error=error, **spent)
                record = {**record, "status": "aborted", "error": error, **spent}  # type: ignore[typeddict-unknown-key]
            state.attempts.append(record)
            if record.get("status") == "finished":
                state.finished = record
                break
            state.failures += _is_failure(record)
        states.append(state)
    return states


def tokens_of(record: GameRecord | dict[str, Any]) -> Tokens:
    tokens = record.get("tokens") or {}
    return Tokens(int(tokens.get("input", 0)), int(tokens.get("cached", 0)), int(tokens.get("output", 0)))


@dataclass
class Spend:
    """Tokens, model calls and cost summed over games (``cost_known`` is False once a game with model
    calls had no price: its cost is then a lower bound)."""

    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float = 0.0
    cost_known: bool = True
    llm_calls: int = 0

    def add(self, tokens: Tokens, cost: float | None, calls: int) -> None:
        self.tokens += tokens
        self.llm_calls += calls
        if cost is None and calls:
            self.cost_known = False
        self.cost_usd += cost or 0.0

    def add_record(self, record: GameRecord | dict[str, Any]) -> None:
        """A stored attempt's usage (games stored before usage was kept on aborted ones count 0)."""
        stored: dict[str, Any] = dict(record)
        self.add(tokens_of(stored), stored.get("cost_usd"), int(stored.get("llm_calls") or 0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "tokens": dataclasses.asdict(self.tokens),
            "llm_calls": self.llm_calls,
            "cost_usd": round(self.cost_usd, 6) if self.cost_known else None,
        }


@dataclass
class Tally:
    """Running totals for the progress bar and the summary: ``spent`` sums every attempt (finished,
    failed, interrupted: the money spent), ``finished_part`` the finished games' share of it."""

    jobs: int
    finished: int = 0
    failed: int = 0
    running: int = 0
    played: int = 0
    """Games this run played to the end."""
    spent: Spend = field(default_factory=Spend)
    finished_part: Spend = field(default_factory=Spend)

    def postfix(self) -> str:
        spent = self.spent
        cost = f"${spent.cost_usd:.4f}" if spent.cost_known else f"${spent.cost_usd:.4f}+n/a"
        t = spent.tokens
        return (
            f"failed {self.failed} running {self.running} | tokens in {t.input} cached {t.cached} "
            f"out {t.output} | cost {cost}"
        )

    def summary(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "finished": self.finished,
            "failed": self.failed,
            "pending": self.jobs - self.finished - self.failed,
            **self.spent.as_dict(),
            "finished_games": self.finished_part.as_dict(),
        }


@dataclass(frozen=True)
class RunReport:
    """What a run did: the manifest (with its summary), where it was written, this run's outcomes."""

    manifest: dict[str, Any]
    manifest_path: Path
    outcomes: list[JobOutcome]
    interrupted: bool = False

    @property
    def summary(self) -> dict[str, Any]:
        return self.manifest["summary"]


def run_experiment(
    config: ExperimentConfig,
    raw: dict[str, Any],
    *,
    store_url: str | None = None,
    out: Path | None = None,
    executor: Executor | None = None,
    concurrency: int | None = None,
    progress: bool = True,
    on_outcome: Callable[[JobOutcome], None] | None = None,
) -> RunReport:
    """Run (or resume) ``config``'s experiment; see the module docstring.

    ``raw`` is the config as written (kept in the manifest). ``store_url`` defaults to a SQLite file in
    ``out`` (default ``experiments/<name>``); ``executor`` to a :class:`LocalExecutor` with ``concurrency``
    (default: the config's). Ctrl-C stops cleanly: running games are stored ``aborted`` (``interrupted``),
    the manifest is written, and ``KeyboardInterrupt`` is raised again for the caller.
    """
    out = out or default_out(config.name)
    store_url = store_url or default_store_url(out)
    if store_url.startswith("memory:") or ":memory:" in store_url:
        raise ExperimentError(
            "invalid_store",
            f"{store_url} is private to one store object, but every game opens the store itself: use a "
            "SQLite file (sqlite:///ABS/PATH/experiment.db, the default) or MongoDB",
        )
    jobs = plan_jobs(config, store_url)
    check_seats(jobs)
    out.mkdir(parents=True, exist_ok=True)
    store = open_store(store_url)
    manifest, code_changes = register(store, build_manifest(raw, config, store_url, jobs))
    if code_changes:
        print(
            f"warning: experiment {config.name!r} resumes with other code than its last run "
            f"({'; '.join(code_changes)}): games of both runs go into one data set; the manifest's `runs` "
            "records each run's code",
            file=sys.stderr,
        )
    manifest["store"] = store_url
    states = {state.job.key: state for state in scan(store, jobs, mark_interrupted=True)}
    tally = Tally(len(jobs))
    for state in states.values():
        for record in state.attempts:
            tally.spent.add_record(record)
        if state.finished is not None:
            tally.finished += 1
            tally.finished_part.add_record(state.finished)
            add_reported(store, manifest, state.finished.get("models") or [])  # type: ignore[arg-type]
        elif state.failures >= config.max_attempts:
            tally.failed += 1
    manifest_path = write_manifest(out, {**manifest, "summary": tally.summary()})
    executor = executor or LocalExecutor(
        concurrency or config.concurrency, limiter=limiter_from_config(config.limits)
    )
    outcomes: list[JobOutcome] = []
    bar = tqdm(total=len(jobs), initial=tally.finished, unit="game", desc=config.name, disable=not progress)
    bar.set_postfix_str(tally.postfix())

    def on_done(outcome: JobOutcome) -> None:
        outcomes.append(outcome)
        state = states[outcome.key]
        round_left[0] -= 1
        tally.running = min(round_left[0], slots)
        tally.spent.add(outcome.tokens, outcome.cost_usd, outcome.llm_calls)
        record = store.get_game(outcome.game_id)
        if record is not None:
            state.attempts.append(record)
        if outcome.status == "finished":
            state.finished = record or {"game_id": outcome.game_id, "status": "finished"}
            tally.finished += 1
            tally.played += 1
            tally.finished_part.add(outcome.tokens, outcome.cost_usd, outcome.llm_calls)
            bar.update(1)
            if add_reported(store, manifest, outcome.models, outcome.prompts):
                write_manifest(out, {**manifest, "summary": tally.summary()})
        elif not outcome.interrupted:
            state.failures += 1
            if state.failures >= config.max_attempts:
                tally.failed += 1
        # a game never stored (its worker died first, the store was down) leaves no gap: the next attempt
        # reuses its id, so a resumed scan, which reads attempts 1, 2, ... until one is missing, sees them all
        if on_outcome is not None:
            on_outcome(outcome)
        bar.set_postfix_str(tally.postfix())

    clear_stop()
    interrupted = False
    slots = getattr(executor, "concurrency", None) or concurrency or config.concurrency
    round_left = [0]  # games of this round not yet done: the running count is min(that, slots)
    try:
        while True:
            todo = [
                dataclasses.replace(state.job, attempt=state.next_attempt)
                for state in states.values()
                if state.finished is None and state.failures < config.max_attempts
            ]
            if not todo:
                break
            before = len(outcomes)
            round_left[0] = len(todo)
            tally.running = min(len(todo), slots)
            bar.set_postfix_str(tally.postfix())
            executor.run(todo, on_done)
            round_outcomes = outcomes[before:]
            if round_outcomes and all(o.interrupted for o in round_outcomes):
                interrupted = True  # something outside stopped every game: do not spin
                break
    except KeyboardInterrupt:
        interrupted = True
        _abort_running(store, states)
    finally:
        bar.close()
    manifest = {**manifest, "summary": {**tally.summary(), "interrupted": interrupted, "at": time.time()}}
    manifest_path = write_manifest(out, manifest)
    report = RunReport(manifest, manifest_path, outcomes, interrupted)
    if interrupted and not outcomes_done(report):
        raise KeyboardInterrupt
    return report


def check_seats(jobs: list[GameJob]) -> None:
    """Build every distinct seat's policy once before anything is played, so a seat that cannot be built
    (an LLM seat without its provider's key, a bot option out of range) stops the run with its own message
    instead of failing every game ``max_attempts`` times. Building a policy makes no model call."""
    seen: set[str] = set()
    for job in jobs:
        for seat in job.seats:
            if seat.spec in seen:
                continue
            seen.add(seat.spec)
            try:
                make_policy(seat.spec, 0)
            except Exception as err:  # whatever a policy factory raises, said with the seat it was for
                message = getattr(err, "message", None) or str(err) or type(err).__name__
                raise ExperimentError(
                    "seat_unavailable",
                    f"the seat {seat.spec!r} cannot be played: {message}. Nothing was played; fix it and "
                    "run the same command again.",
                ) from err


def failure_digest(report: RunReport, most: int = 3) -> list[str]:
    """The commonest errors of this run's failed games, as ``count x code: message`` lines."""
    counts: dict[tuple[str, str], int] = {}
    for outcome in report.outcomes:
        if outcome.status == "finished" or outcome.interrupted or not outcome.error:
            continue
        key = (str(outcome.error.get("code")), str(outcome.error.get("message") or "")[:300])
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])[:most]
    return [f"{count} x {code}: {message}" for (code, message), count in ranked]


def outcomes_done(report: RunReport) -> bool:
    return report.summary["pending"] == 0


def _abort_running(store: Store, states: dict[str, JobState]) -> None:
    """After Ctrl-C: games of unfinished jobs still ``running`` are stored aborted, ``interrupted``."""
    for state in states.values():
        if state.finished is not None:
            continue
        game_id = game_id_for(state.job.experiment, state.job.key, state.next_attempt)
        record = store.get_game(game_id)
        if record is not None and record.get("status") == "running":
            store.update_game(
                game_id,
                status="aborted",
                error={"code": INTERRUPTED, "message": "interrupted; the next run replays it"},
                **stored_usage(store, game_id),
            )
