"""Analysis time for 10,000 logged turns with B = 2000 (target: <= 60 s on this machine), stage by stage.

How the turns are made: real headless bot games (:func:`agents.local.play_local`) on the 40 minecraft 1-vs-1
instances of the ``paper`` set, under the paper's protocol (:func:`agents.tournament.settings_for`: 15 turns,
whole crafting runs, no passing) except that a game ends when both seats have won or at turn 15
(``end_condition: all_win``; first-win games last two or three turns). The design is the paper's: a focal
ToM-k bot (``tom0``, ``tom1``, ``tom2``) asked for V0, V0+V1 or V0+V1+V2 plays a ``tom0`` baseline asked for
V0 only (its seat marked ``focal: false``), seats alternating. Games are played in a fixed order (seeds from
:func:`agents.local.derive_seed`), two processes at a time, until the turns logged reach the target; each
game's JSONL log is cached in ``bench/results/bench_analysis/games`` (git-ignored), so a second run only
analyses. Playing them the first time takes several minutes.

Then ``analysis.cli.run_analysis`` runs on that directory (``--bootstrap 2000 --seed 0``, CSV and Parquet)
and the wall time of each stage is printed: load (parse logs, tidy tables, reference values), beliefs,
proposals (including the bootstrap), utility (grid search and CV), outcomes, tables (writing), figures,
report.

Usage: ``python bench/bench_analysis.py [--turns 10000] [--bootstrap 2000] [--jobs 2] [--games-only]
[--out DIR]`` (``--out`` keeps the tables, figures and report instead of a temporary directory).
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CACHE = Path(__file__).resolve().parent / "results" / "bench_analysis" / "games"
TARGET_SECONDS = 60.0
FOCAL_BOTS = ("tom0", "tom1", "tom2")
ORDERS = ((0,), (0, 1), (0, 1, 2))
BASELINE = "tom0"
SEED = 21
SUMMARY_TAIL_BYTES = 64 * 1024


def schedule() -> Iterator[tuple[int, str, tuple[int, ...], str, int]]:
    """(index, focal bot, its orders, instance id, repeat), endlessly, in a fixed order.

    Endless on purpose; callers bound it (``Pool.imap`` queues its whole input up front).
    """
    from craft_rules.tasks import instance_set_ids

    instance_ids = instance_set_ids("paper", ruleset="minecraft", mode="1p_v_1p")
    index = 0
    for repeat in itertools.count():
        for instance_id in instance_ids:
            for bot, orders in itertools.product(FOCAL_BOTS, ORDERS):
                yield index, bot, orders, instance_id, repeat
                index += 1


def play_game(job: tuple[int, str, tuple[int, ...], str, int]) -> tuple[int, int]:
    """Play one scheduled game (or read its cached log); (index, turns)."""
    index, bot, orders, instance_id, repeat = job
    path = CACHE / f"game-{index:05d}.jsonl"
    if path.exists():
        with path.open("rb") as handle:  # the summary record closes the log: read the last line only
            handle.seek(max(0, path.stat().st_size - SUMMARY_TAIL_BYTES))
            summary = json.loads(handle.read().splitlines()[-1])
        if summary.get("kind") == "summary":
            return index, int(summary["turn"])
    from agents.bots.registry import make_policy
    from agents.local import derive_seed, play_local
    from agents.tournament import settings_for
    from craft_rules.loader import load_rule_set
    from craft_rules.tasks import get_instance
    from server.game.gamelog import encode_log

    instance = get_instance(instance_id)
    focal_seat = (index // len(ORDERS)) % 2
    names = [BASELINE, BASELINE]
    names[focal_seat] = bot
    tom_orders = [[0], [0]]
    tom_orders[focal_seat] = list(orders)
    seed = derive_seed(SEED, instance_id, repeat, bot, *orders)
    settings = settings_for(instance, repeat).model_copy(
        update={"tom_orders": tom_orders, "end_condition": "all_win"}
    )
    policies = [make_policy(name, derive_seed(seed, "seat", seat)) for seat, name in enumerate(names)]
    result = play_local(instance, settings, load_rule_set(instance.ruleset), policies, seed)
    seats: list[dict[str, Any]] = [
        {"seat": seat, "kind": "bot", "name": name, "bot": name, "focal": seat == focal_seat}
        for seat, name in enumerate(names)
    ]
    log = result.game_log(game_id=f"bench-{index:05d}", seats=seats, meta={"bench": "analysis"})
    partial = path.with_suffix(".part")
    with partial.open("w", encoding="utf-8") as handle:
        handle.writelines(encode_log(log))
    partial.replace(path)  # a killed run leaves no half-written log behind
    return index, result.turns


def make_games(turns: int, jobs: int) -> tuple[int, int, float]:
    """Play (or reuse) games in schedule order until ``turns`` turns are logged: (games, turns, seconds)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    for partial in CACHE.glob("*.part"):  # a game a killed run was writing: it is played again
        partial.unlink()
    started = time.perf_counter()
    total = games = 0
    wanted: set[Path] = set()
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        for index, game_turns in pool.imap(play_game, itertools.islice(schedule(), turns), chunksize=1):
            wanted.add(CACHE / f"game-{index:05d}.jsonl")
            total += game_turns
            games += 1
            if games % 50 == 0:
                print(f"  {games} games, {total} turns ({time.perf_counter() - started:.0f} s)", flush=True)
            if total >= turns:
                pool.terminate()
                break
    for stale in CACHE.glob("game-*.jsonl"):  # a larger earlier target: keep the analysed set exact
        if stale not in wanted:
            stale.rename(stale.with_suffix(".extra"))
    for extra in CACHE.glob("game-*.extra"):
        if extra.with_suffix(".jsonl") in wanted:
            extra.rename(extra.with_suffix(".jsonl"))
    return games, total, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--games-only", action="store_true", help="make the cached games and stop")
    parser.add_argument(
        "--out", type=Path, help="keep the analysis (tables, figures, report) in this directory"
    )
    args = parser.parse_args()
    games, turns, seconds = make_games(args.turns, args.jobs)
    print(f"games: {games} ({turns} turns) ready in {seconds:.1f} s under {CACHE}")
    if args.games_only:
        return
    from analysis.cli import run_analysis

    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as scratch:
        out = args.out or Path(scratch)
        run = run_analysis(CACHE, out, bootstrap=args.bootstrap, seed=0, progress=False)
        total = sum(run.timings.values())
        size = f"{len(run.dataset.games)} games, {len(run.dataset.turns)} turns"
        print(f"analysis of {size}, B = {args.bootstrap}:")
        for stage, elapsed in run.timings.items():
            print(f"  {stage:<10} {elapsed:7.2f} s")
        verdict = "within" if total <= TARGET_SECONDS else "OVER"
        print(f"  {'total':<10} {total:7.2f} s   ({verdict} the {TARGET_SECONDS:.0f} s target)")
        for section, texts in run.results.missing.items():
            for text in texts:
                print(f"  note ({section}): {text}")
        if args.out:
            print(f"report: {run.report.resolve()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
