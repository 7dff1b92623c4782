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

A worker process that dies (killed, out of memory) breaks its whole pool (``BrokenProcessPool``): the pool
is replaced, the games that were running in it are stored ``aborted``, ``interrupted`` and reported so (the
runner replays them without counting a failure), and the games that had not started are played in the new
pool; the run goes on. After :data:`MAX_POOL_LOSSES` lost pools in one round, a lost game counts as failed.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from typing import Protocol

from agents.experiments.jobs import (
    GameJob,
    JobOutcome,
    RateLimiter,
    StopFlag,
    lost_outcome,
    play_job,
    request_stop,
    share_stop,
)

MAX_POOL_LOSSES = 5
"""How often one ``run`` replaces a lost process pool; after that a lost worker's game counts as a failed
attempt (``worker_failed``), so a game that kills its worker every time cannot loop for ever."""


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
            use_procs = self.processes > 0 and any(not job.has_llm for job in jobs)
            stop: StopFlag | None = multiprocessing.get_context("spawn").Event() if use_procs else None
            pool: list[ProcessPoolExecutor] = []  # the current process pool (a lost one is replaced)
            losses = [0]

            def new_pool() -> ProcessPoolExecutor:
                procs = ProcessPoolExecutor(
                    self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_setup,
                    initargs=(stop,),
                )
                stack.callback(procs.shutdown, wait=True, cancel_futures=True)
                pool[:] = [procs]
                return procs

            if use_procs:
                new_pool()
            queue: deque[GameJob] = deque(jobs)
            running: set[Future[JobOutcome]] = set()
            job_of: dict[Future[JobOutcome], GameJob] = {}
            pool_of: dict[Future[JobOutcome], ProcessPoolExecutor] = {}

            def submit(job: GameJob) -> None:
                if pool and not job.has_llm:
                    try:
                        future = pool[0].submit(play_job, job)
                    except BrokenProcessPool:  # lost before its futures told us: replace it, submit again
                        lose_pool(pool[0])
                        future = pool[0].submit(play_job, job)
                    pool_of[future] = pool[0]
                else:
                    future = threads.submit(play_job, job, self.limiter)
                job_of[future] = job
                running.add(future)

            def lose_pool(broken: ProcessPoolExecutor) -> None:
                if pool and pool[0] is broken:
                    losses[0] += 1
                    new_pool()

            def finish(future: Future[JobOutcome]) -> None:
                job = job_of.pop(future)
                broken = pool_of.pop(future, None)
                pool_lost = broken is not None and isinstance(future.exception(), BrokenProcessPool)
                stopping = stop is not None and stop.is_set()
                if pool_lost and broken is not None and losses[0] < MAX_POOL_LOSSES and not stopping:
                    lose_pool(broken)
                    lost = lost_outcome(job)
                    if lost is None:  # it never started: play the same attempt in the new pool
                        queue.appendleft(job)
                        return
                    on_done(lost)
                    return
                on_done(outcome_of(future, job))

            try:
                while queue or running:
                    while queue and len(running) < self.concurrency:
                        submit(queue.popleft())
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        finish(future)
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
    half-written and the pool stays usable. It exits when its parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    share_stop(stop)
    parent = os.getppid()
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True, name="orphan-watch").start()


def _exit_when_orphaned(parent: int, every: float = 1.0) -> None:
    """Exit this worker once its runner is gone (``kill -9`` of the runner alone): else a spawned worker
    waits for work for ever. Its game, if any, stays ``running``; the next run marks it interrupted."""
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(1)
