"""An experiment's games as Ray tasks: ``tradecraft experiment run CONFIG --executor ray [--address ADDR]``.

:class:`RayExecutor` is an :class:`~agents.experiments.executors.Executor`: each
:class:`~agents.experiments.jobs.GameJob` becomes one Ray task running
:func:`~agents.experiments.jobs.play_job` on some node of the cluster, at most ``concurrency`` at a time;
``ray.wait`` hands each :class:`~agents.experiments.jobs.JobOutcome` to ``on_done`` in the caller's thread
as its game ends. Resume, retries, progress and the manifest stay the runner's, so a Ray run stores the
same games as a local one (bots: the same ``log_sha256``).

- **Where games go**: every task writes its game straight into ``job.store_url``, so that store must be
  reachable from every node under the same URL: an absolute ``sqlite:///`` path serves one machine (a
  local Ray instance), ``mongodb://`` a cluster.
- **Resources**: a bot-only game is CPU-bound and asks Ray for ``bot_cpus`` (1) CPU; a game with an LLM
  seat mostly waits for its provider and asks for ``llm_cpus`` (0.25), so a node runs four per core.
- **Limits**: one :class:`~agents.experiments.limits.RateLimiter` lives in a Ray actor
  (:class:`RemoteLimiter` is the handle every task gets), so all games on all nodes share one budget per
  provider.
- **Retries**: Ray never retries a game itself (``max_retries=0``): a game that fails, or whose worker
  dies, comes back as an ``error`` outcome and the runner reruns it as a new attempt.
- **Ctrl-C**: games that end within ``INTERRUPT_GRACE_S`` are handed on (a local instance's workers get
  the terminal's SIGINT too, so ``play_job`` stores theirs ``aborted``/``interrupted``), then
  ``KeyboardInterrupt`` is raised; disconnecting ends the job's other tasks and the runner stores their
  games interrupted. Tasks are never ``ray.cancel``-ed: that races inside Ray (see ``_run``).
- **Connecting**: with ``address`` (``auto``, ``ray://HEAD:10001`` or ``HEAD:6379``) it joins that
  cluster; without, it joins the cluster ``RAY_ADDRESS`` names or starts a local instance. It shuts down
  only a connection it opened itself. ``runtime_env`` is passed to ``ray.init`` (e.g. ``{"working_dir":
  "."}`` ships this checkout to the workers; installing the package on every node avoids it).

Ray is an optional extra (``pip install 'tradecraft[ray]'``); this module imports without it and
:func:`require_ray` says how to install it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agents.experiments.jobs import INTERRUPTED, GameJob, JobOutcome, play_job
from agents.experiments.limits import ProviderLimit, RateLimiter, Ticket, attach_limiter
from craft_rules.errors import TradeCraftError

INTERRUPT_GRACE_S = 5.0
"""After Ctrl-C, how long games that are ending anyway get to hand their outcomes on."""

if TYPE_CHECKING:
    from types import ModuleType

RAY_EXTRA_HINT = "pip install 'tradecraft[ray]' (or `make setup`, which installs it)"

LIMITER_POLL_SECONDS = 0.5
"""Longest a task sleeps between asking the limiter actor again (a finished call may free room early)."""


class RayExecutorError(TradeCraftError):
    """Ray cannot run the games. Codes: ``ray_not_installed`` (install the extra), ``ray_unavailable``
    (no cluster at the address: start one or fix ``--address``)."""


def require_ray() -> ModuleType:
    """The ``ray`` module, or :class:`RayExecutorError` ``ray_not_installed`` saying how to install it."""
    try:
        import ray
    except ImportError as err:
        raise RayExecutorError(
            "ray_not_installed",
            f"--executor ray needs Ray, an optional extra: {RAY_EXTRA_HINT}; or run with --executor local.",
            {"import_error": str(err)},
        ) from None
    return ray


class RemoteLimiter:
    """A handle on a :class:`RateLimiter` held by a Ray actor: what each game's LLM seats acquire from.

    Picklable (it holds only the actor handle), so every task gets it; :meth:`acquire` asks the actor's
    non-blocking ``try_acquire`` and sleeps here, so one waiting game never blocks the actor."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def acquire(self, provider: str, tokens: int) -> Ticket | None:
        import ray

        while True:
            ticket, wait = ray.get(self.actor.try_acquire.remote(provider, tokens))
            if ticket is not None or wait <= 0:
                return ticket
            time.sleep(min(wait, LIMITER_POLL_SECONDS))

    def record(self, ticket: Ticket, tokens: int) -> None:
        import ray

        ray.get(self.actor.record.remote(ticket, tokens))

    def usage(self, provider: str) -> tuple[int, int]:
        """(requests, tokens) of ``provider`` in the actor's current window."""
        import ray

        return ray.get(self.actor.usage.remote(provider))

    def attach(self, policy: Any, seat: object = None) -> Any:
        """``policy`` with its model calls held to the shared limits if it is an LLM seat."""
        attach_limiter(policy, self)
        return policy


def remote_limiter(limits: Mapping[str, ProviderLimit], window: float | None = None) -> RemoteLimiter:
    """Start a limiter actor (no CPU reserved) for ``limits`` on the connected cluster; its handle."""
    ray = require_ray()
    actor_class = ray.remote(num_cpus=0)(RateLimiter)
    kwargs = {} if window is None else {"window": window}
    return RemoteLimiter(actor_class.remote(dict(limits), **kwargs))


def _ray_failure(job: GameJob, err: BaseException) -> JobOutcome:
    """The outcome of a task Ray could not run to its end (its worker died, it was cancelled before
    starting): an error, so the runner reruns the game."""
    cancelled = type(err).__name__ == "TaskCancelledError"
    code = INTERRUPTED if cancelled else "ray_task_failed"
    return JobOutcome(
        key=job.key,
        attempt=job.attempt,
        game_id=job.game_id,
        status="error",
        error={"code": code, "message": f"{type(err).__name__}: {err}"[:2000], "type": type(err).__name__},
    )


class RayExecutor:
    """Games as Ray tasks, ``concurrency`` at a time (see the module docstring).

    ``limiter``: the run's per-provider limits; its limits are moved into one actor shared by every task.
    ``bot_cpus`` / ``llm_cpus``: the CPUs a bot-only / LLM game asks Ray for. ``runtime_env`` and
    ``address`` go to ``ray.init`` when this executor connects."""

    def __init__(
        self,
        address: str | None = None,
        concurrency: int = 4,
        *,
        limiter: RateLimiter | None = None,
        runtime_env: Mapping[str, Any] | None = None,
        bot_cpus: float = 1.0,
        llm_cpus: float = 0.25,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.address = address
        self.concurrency = concurrency
        self.limiter = limiter
        self.runtime_env = dict(runtime_env) if runtime_env else None
        self.bot_cpus = bot_cpus
        self.llm_cpus = llm_cpus
        require_ray()  # fail at once, before the runner plans anything

    def _connect(self, ray: ModuleType) -> bool:
        """Connect to the cluster unless this process already is; whether this call connected."""
        if ray.is_initialized():
            return False
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        try:
            ray.init(address=self.address, **options)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise RayExecutorError(
                "ray_unavailable",
                f"No Ray cluster at {self.address!r}: start one (`ray start --head`) or fix --address "
                f"({err}).",
                {"address": self.address},
            ) from None
        return True

    def run(self, jobs: Sequence[GameJob], on_done: Callable[[JobOutcome], None]) -> None:
        if not jobs:
            return
        ray = require_ray()
        connected = self._connect(ray)
        try:
            self._run(ray, jobs, on_done)
        finally:
            if connected:
                ray.shutdown()

    def _run(self, ray: ModuleType, jobs: Sequence[GameJob], on_done: Callable[[JobOutcome], None]) -> None:
        shared: RemoteLimiter | None = None
        if self.limiter is not None and any(job.has_llm for job in jobs):
            shared = remote_limiter(self.limiter.limits, self.limiter.window)
        play = ray.remote(max_retries=0)(play_job)
        running: dict[Any, GameJob] = {}

        def submit(job: GameJob) -> None:
            if job.has_llm:
                ref = play.options(num_cpus=self.llm_cpus).remote(job, shared)
            else:
                ref = play.options(num_cpus=self.bot_cpus).remote(job)
            running[ref] = job

        def finish(ref: Any) -> None:
            job = running.pop(ref)
            try:
                outcome = ray.get(ref)
            except ray.exceptions.RayError as err:
                outcome = _ray_failure(job, err)
            on_done(outcome)

        pending = iter(jobs)
        try:
            for job in pending:
                submit(job)
                while len(running) >= self.concurrency:
                    done, _ = ray.wait(list(running), num_returns=1)
                    finish(done[0])
            while running:
                done, _ = ray.wait(list(running), num_returns=1)
                finish(done[0])
        except KeyboardInterrupt:
            # No ray.cancel: a cancel racing with the task's own completion aborts the driver inside Ray
            # (RAY_CHECK "it != submissible_tasks_.end()", ray-project/ray#54527). Games already over are
            # handed on; the rest stop with the driver's ray.shutdown (Ray ends a job's tasks with it, and
            # local workers got the terminal's SIGINT too), and the runner stores them interrupted.
            done, _ = ray.wait(list(running), num_returns=len(running), timeout=INTERRUPT_GRACE_S)
            for ref in done:
                finish(ref)
            raise
        finally:
            if shared is not None:
                ray.kill(shared.actor)
