"""Where an experiment's games run: the :class:`Executor` protocol and the :class:`LocalExecutor`.

An executor plays a batch of :class:`~agents.experiments.jobs.GameJob` with
:func:`~agents.experiments.jobs.play_job` and hands each :class:`~agents.experiments.jobs.JobOutcome` to
``on_done`` in the caller's thread, as each game ends. Resume, retries, progress and the manifest are the
runner's; an executor only runs games (the Ray one is ``agents.experiments.ray_executor``).

:class:`LocalExecutor` runs at most ``concurrency`` games at a time on this machine: games with an LLM seat
in threads (they wait on the network), bot-only games in spawned processes (they are CPU-bound, and the
GIL would serialise them). Ctrl-C asks running games, in threads and processes alike, to stop after their
current move (they are stored ``aborted``, error ``interrupted``), drops the games not yet started, waits
for the running ones to be stored and raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from contextlib import ExitStack
from typing import Protocol

from agents.experiments.jobs import (
    GameJob,
    JobOutcome,
    RateLimiter,
    StopFlag,
    play_job,
    request_stop,
    share_stop,
)


class Executor(Protocol):
    """Runs games; ``on_done`` is called in the caller's thread with each outcome as it comes."""

    def run(self, jobs: Sequence[GameJob], on_done: Callable[[JobOutcome], None]) -> None: ...


class LocalExecutor:
    """Threads for jobs with LLM seats, spawned processes for bot-only jobs, ``concurrency`` games at once.

    ``processes``: the most worker processes for bot-only games (default: the CPU count, at most
    ``concurrency``; 0 plays them in threads too). ``limiter`` is handed to every
    :func:`~agents.experiments.jobs.play_job` running in a thread (a process would get a copy, so bot-only
    games, which make no model calls, do not take it)."""

    def __init__(
        self, concurrency: int = 4, *, processes: int | None = None, limiter: RateLimiter | None = None
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        cpus = os.cpu_count() or 1
        self.processes = min(concurrency, cpus) if processes is None else min(processes, concurrency)
        self.limiter = limiter

    def run(self, jobs: Sequence[GameJob], on_done: Callable[[JobOutcome], None]) -> None:
        if not jobs:
            return
        with ExitStack() as stack:
            threads = stack.enter_context(ThreadPoolExecutor(self.concurrency, "tradecraft-game"))
            procs: ProcessPoolExecutor | None = None
            stop: StopFlag | None = None
            if self.processes > 0 and any(not job.has_llm for job in jobs):
                context = multiprocessing.get_context("spawn")
                stop = context.Event()
                procs = ProcessPoolExecutor(
                    self.processes, mp_context=context, initializer=_worker_setup, initargs=(stop,)
                )
                stack.callback(procs.shutdown, wait=True, cancel_futures=True)

            def submit(job: GameJob) -> Future[JobOutcome]:
                if procs is not None and not job.has_llm:
                    return procs.submit(play_job, job)
                return threads.submit(play_job, job, self.limiter)

            pending: Iterator[GameJob] = iter(jobs)
            running: set[Future[JobOutcome]] = set()
            job_of: dict[Future[JobOutcome], GameJob] = {}
            try:
                for job in pending:
                    future = submit(job)
                    job_of[future] = job
                    running.add(future)
                    if len(running) < self.concurrency:
                        continue
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        on_done(outcome_of(future, job_of.pop(future)))
                while running:
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        on_done(outcome_of(future, job_of.pop(future)))
            except KeyboardInterrupt:
                request_stop()  # threads and worker processes stop after their current move
                if stop is not None:
                    stop.set()
                for future in running:
                    future.cancel()
                for future in wait(running).done:  # the games that stopped are stored aborted
                    if not future.cancelled():
                        on_done(outcome_of(future, job_of[future]))
                raise


def outcome_of(future: Future[JobOutcome], job: GameJob) -> JobOutcome:
    """The future's outcome; a worker that died or raised (play_job itself never does) becomes an error
    outcome, so the runner counts the attempt and reruns the job instead of the whole run crashing."""
    try:
        return future.result()
    except Exception as err:  # e.g. BrokenProcessPool: a worker process was killed
        error = {"code": "worker_failed", "message": f"the worker running this game failed: {err!r}"}
        return JobOutcome(key=job.key, attempt=job.attempt, game_id=job.game_id, status="error", error=error)


def _worker_setup(stop: StopFlag) -> None:
    """A worker process ignores Ctrl-C (the terminal sends it to the whole process group) and stops its
    game when the parent sets ``stop``: so the game is stored ``aborted``, ``interrupted``, never cut off
    half-written and the pool stays usable."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    share_stop(stop)
