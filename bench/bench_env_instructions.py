"""Where the Gymnasium env's overhead goes, in CPU instructions counted by valgrind (no timer involved).

    .venv/bin/python bench/bench_env_instructions.py [--instances 10] [--protocol paper|env] [--jobs 2]

Timings on a shared machine swing with other jobs (``bench_envs.py`` pairs interleaved rounds to cope);
instruction counts do not: the same games give the same count within a few thousandths, whatever else
runs. This bench plays the games of ``bench_envs.py`` (the same instances, settings, seeds and random
bots) under ``valgrind --tool=cachegrind --cache-sim=no`` each of these ways:

- ``bare``: engine self-play (:func:`agents.local.play_local`);
- ``gym``: seat 0 through ``TradeCraftEnv`` with its default observation;
- ``gym_lean``: the same with ``narrate=False`` (no narration);
- ``gym_no_json``: the default observation with the view's JSON text replaced by ``{}`` (an attribution
  harness only: an observation without its view text is not something the env offers);
- ``gym_lean_no_json``: both left out.

Each way runs in a child process once after a warm-up run and once without the measured run; the
difference is the instructions of one run. Printed: instructions per game of each way and its share
against bare, then the overhead split into the view's JSON text (``gym - gym_no_json``), the narration
(``gym - gym_lean``) and everything else the env does, net of what ``play_local`` does that the env does
not (``gym_lean_no_json - bare``). Instructions are not time (memory traffic differs between the parts),
so the split says where the work is; ``bench_envs.py`` says what it costs in seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

WAYS = ("bare", "gym", "gym_lean", "gym_no_json", "gym_lean_no_json")
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


class _EmptyViewJson:
    """Stands in for the env's view encoder in the attribution runs (``gym_no_json``)."""

    def encode(self, view: object) -> str:
        return "{}"


def child(way: str, measured_runs: int, count: int, protocol: str) -> None:
    """Play the games ``way`` once (warm-up), then ``measured_runs`` more times."""
    import bench_envs

    import agents.envs.core
    from agents.tournament import settings_for
    from craft_rules.tasks import iter_instances

    instances = list(iter_instances("minecraft", "1p_v_1p"))[:count]
    settings = settings_for(instances[0], 0) if protocol == "paper" else None
    if way.endswith("no_json"):
        agents.envs.core._VIEW_JSON = _EmptyViewJson()  # type: ignore[assignment]
    if way == "bare":
        run = lambda: bench_envs.bare(instances, 0, settings)  # noqa: E731
    else:
        narrate = "lean" not in way
        run = lambda: bench_envs.gym(instances, 0, narrate=narrate, settings=settings)  # noqa: E731
    for _ in range(1 + measured_runs):
        run()


def instructions(way: str, measured_runs: int, count: int, protocol: str) -> int:
    command = [
        "nice",
        "-n",
        "19",
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        way,
        str(measured_runs),
        "--instances",
        str(count),
        "--protocol",
        protocol,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=False
    )
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{way}: valgrind run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--protocol", choices=("env", "paper"), default="paper")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at a time")
    parser.add_argument("--child", nargs=2, metavar=("WAY", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.instances, args.protocol)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: run `make valgrind` (Debian's package, as root) first.")
    runs = [(way, k) for way in WAYS for k in (0, 1)]
    with ThreadPoolExecutor(args.jobs) as pool:
        measured = pool.map(lambda r: instructions(r[0], r[1], args.instances, args.protocol), runs)
        counts = dict(zip(runs, measured, strict=True))
    one = {way: counts[(way, 1)] - counts[(way, 0)] for way in WAYS}
    games, bare = args.instances, one["bare"]
    print(f"{games} minecraft 1p_v_1p instances, {args.protocol} protocol: instructions of one run")
    for way in WAYS:
        share = f"{100 * (one[way] / bare - 1):+6.1f}% vs bare" if way != "bare" else ""
        print(f"  {way:<17} {one[way] / games / 1e6:8.2f} M instructions per game  {share}")
    parts = {
        "the view's JSON text": one["gym"] - one["gym_no_json"],
        "the narration": one["gym"] - one["gym_lean"],
        "the rest, net of play_local's own extra work": one["gym_lean_no_json"] - bare,
    }
    print(f"  env overhead {100 * (one['gym'] / bare - 1):+.1f}% of bare, made of (not exactly additive):")
    for name, value in parts.items():
        print(f"    {name:<46} {100 * value / bare:+6.1f}%")


if __name__ == "__main__":
    main()
