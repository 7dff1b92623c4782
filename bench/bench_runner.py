"""Runner efficiency: many short LLM games at once against a simulated chat model of fixed latency.

Every seat is :class:`agents.testing.simulated_chat.SimulatedChatModel` (policy ``simulated_llm``): each
model call sleeps a fixed ``latency`` and answers a legal tool call, in process, so what is measured is the
experiment runner — its executor, the LLM agent's prompt building and parsing, the game engine and the
streaming of every move into the store — not a provider or an HTTP stack. Games are
:class:`~agents.experiments.jobs.GameJob` on the paper's instances with few turns, run by the same executor
``tradecraft experiment run`` uses.

Printed: games finished, model calls per game, the wall time, the ideal wall time and the efficiency
ideal / wall (target >= 90%), with the process's CPU time (the GIL is what 32 threads share). The ideal is
the simulated latency of all games' calls spread over ``concurrency`` workers, or the longest game's if
that is more, or — games being indivisible — the bound no schedule beats: among the ``concurrency * k + 1``
longest games, k + 1 share a worker (240 equal games on 32 workers take 8 game lengths, not 7.5); the
efficiency against the even spread alone is printed too. A warm-up game (imports, rule set, tokenizer)
is played first and not timed. ``--executor ray`` starts a local Ray before the clock; each Ray worker
process still imports everything before its first game (seconds each on a loaded machine), which a short
run does not amortise.

Usage: ``python bench/bench_runner.py [--games 240] [--concurrency 32] [--latency 1.0] [--turns 1]
[--store sqlite|sqlite-normal|memory] [--executor local|ray]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from agents.experiments.executors import LocalExecutor
from agents.experiments.jobs import GameJob, JobOutcome, SeatPlan, clear_stop, play_job
from craft_rules.tasks import instance_set_ids
from server.game import GameSettings

STORES = {
    "sqlite": "sqlite:///{folder}/bench.db",
    "sqlite-normal": "sqlite:///{folder}/bench.db?synchronous=NORMAL",
    "memory": "memory:",
}
"""The stores a run can stream into (``--store``)."""


def bench_jobs(
    games: int, latency: float, turns: int, store_url: str, experiment: str = "bench-runner"
) -> list[GameJob]:
    """``games`` two-seat games of simulated LLMs (V0 reports) on the paper instances, ``turns`` turns."""
    ids = instance_set_ids("paper")
    spec = f"simulated_llm?latency={latency:g}"
    seats = tuple(
        SeatPlan(
            seat=seat,
            spec=spec,
            kind="agent",
            name="simulated:fixed-latency",
            agent=f"simulated {latency:g}s",
            tom_orders=(0,),
            focal=seat == 0,
        )
        for seat in range(2)
    )
    settings = GameSettings(max_turns=turns, tom_orders=[[0], [0]]).model_dump(mode="json")
    return [
        GameJob(
            experiment=experiment,
            key=f"game-{index}",
            index=index,
            attempt=1,
            store_url=store_url,
            instance_id=ids[index % len(ids)],
            seats=seats,
            settings=settings,
            seed=index,
            labels={"condition": "simulated"},
        )
        for index in range(games)
    ]


def schedule_bound(lengths: list[float], workers: int) -> float:
    """A lower bound on any schedule's wall time for indivisible games of these lengths on ``workers``:
    among the ``workers * k + 1`` longest games, k + 1 share a worker, so the wall time is at least
    (k + 1) times the (workers * k + 1)-th longest, for every k (k = 0: the longest game)."""
    ordered = sorted(lengths, reverse=True)
    return max(
        ((k + 1) * ordered[workers * k] for k in range(len(ordered)) if workers * k < len(ordered)),
        default=0.0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=240)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per simulated model call")
    parser.add_argument("--turns", type=int, default=1, help="turns per game (max_turns)")
    parser.add_argument(
        "--store",
        choices=list(STORES),
        default="sqlite",
        help="sqlite: the default store (an fsync per commit); sqlite-normal: synchronous=NORMAL; memory",
    )
    parser.add_argument("--executor", choices=["local", "ray"], default="local")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        store_url = STORES[args.store].format(folder=Path(tmp))
        jobs = bench_jobs(args.games, args.latency, args.turns, store_url)
        if args.executor == "ray":
            from agents.experiments.ray_executor import RayExecutor, require_ray

            # a local Ray started before the clock (its start is not the runner's); each Ray worker's
            # first game still imports everything, and that is counted
            require_ray().init(include_dashboard=False, log_to_driver=False)
            executor: LocalExecutor | RayExecutor = RayExecutor(concurrency=args.concurrency)
        else:
            executor = LocalExecutor(concurrency=args.concurrency)
        outcomes: list[JobOutcome] = []
        clear_stop()
        # one game first, not timed: imports, the rule set, the tokenizer load once per process
        warm_started = time.perf_counter()
        play_job(bench_jobs(1, 0.0, args.turns, store_url, experiment="bench-warm-up")[0])
        warm_up = time.perf_counter() - warm_started
        with tqdm(total=len(jobs), unit="game", desc="games") as bar:

            def done(outcome: JobOutcome) -> None:
                outcomes.append(outcome)
                bar.update()

            cpu_started, started = time.process_time(), time.perf_counter()
            executor.run(jobs, done)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started

    finished = [o for o in outcomes if o.status == "finished"]
    errors = [o for o in outcomes if o.status != "finished"]
    calls = [o.llm_calls for o in finished]
    simulated = [n * args.latency for n in calls]
    spread = max(sum(simulated) / args.concurrency, max(simulated, default=0.0))
    ideal = max(spread, schedule_bound(simulated, args.concurrency))
    print(
        f"{args.games} games, {args.turns} turn(s) each, concurrency {args.concurrency}, "
        f"{args.latency:g} s per model call, {args.executor} executor, {args.store} store"
    )
    print(
        f"  finished {len(finished)}, errors {len(errors)}"
        + (f" (first: {errors[0].error})" if errors else "")
    )
    if calls:
        print(
            f"  model calls per game: min {min(calls)}, median {statistics.median(calls):g}, "
            f"max {max(calls)}; {sum(calls)} in all"
        )
    print(
        f"  wall {wall:.1f} s; ideal {ideal:.1f} s -> efficiency {ideal / wall:.1%} (target >= 90%); "
        f"against the latency spread evenly ({spread:.1f} s, no schedule reaches it when games are "
        f"indivisible): {spread / wall:.1%}"
    )
    print(f"  warm-up game (not counted: imports, rule set, tokenizer) {warm_up:.1f} s")
    print(f"  CPU of this process {cpu:.1f} s ({cpu / wall:.0%} of one core)")
    if calls:
        per_call = (wall - ideal) * args.concurrency / sum(calls)
        print(f"  runner overhead per model call, per worker: {per_call * 1000:.1f} ms")


if __name__ == "__main__":
    main()
