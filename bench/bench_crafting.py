"""Crafting-world speed: rule set loading, possible crafts, the planner, reference values, task instances.
Prints figures; not a pass/fail test.

    .venv/bin/python bench/bench_crafting.py [--ruleset minecraft] [--samples 300] [--seed 7] [--json]
        [--baseline REF | --no-baseline]

What it measures (targets from issue 2: possible crafts <= 1 ms median, a plan <= 10 ms median, on the
full minecraft rule set):
- loading the rule set cold (parsing every JSON file, no cache), cached from the on-disk pickle in a
  fresh subprocess (as a new worker would), and cached in-process (the second call);
- possible crafts from a hand of 5-10 items;
- a plan (is the target craftable within one phase, and one exact verified craft sequence), over all
  drawn cases and over those where the target turns out craftable (the LP and exact execution run);
- a plan that, when the target is not craftable, also finds the fewest items to obtain from another
  player's hand (``available``), as the bots and task validation ask it;
- the fewest items to obtain when any item may be obtained (``available=None``);
- reference values of the items in two random public hands, and for every player of the shipped task
  instances (all hands pooled: what a game computes each turn);
- generating + validating 40 task instances (when craft_rules.taskgen is installed);
- possible crafts side by side with the code of git revision ``--baseline`` (default 8fcd427, before the
  ingredient index): that revision's ``craft_rules`` is extracted with ``git archive`` into a temporary
  folder and both versions answer the same hands in separate subprocesses, in alternating rounds (the
  fastest round of each counts: other jobs on a shared machine only ever slow a round down). Hands: the
  original game's 20 public hands (``../shared/data``; skipped when absent) and 80-item hands, under the
  whole and the rational crafting-runs rule; it prints old and new ms per hand, the speed-up and whether
  every answer is identical.

Hands and targets are drawn with a fixed seed: a target is any item some recipe makes; a hand holds 5-10
kinds of items, each drawn with probability 0.7 from the items that can feed the target (the target's
ancestor sub-graph) and otherwise from all items, 1-8 of each.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from craft_rules import lp
from craft_rules.loader import load_rule_set, rule_set_dirs
from craft_rules.model import RuleSet
from craft_rules.planner import Planner, planner_for
from craft_rules.values import reference_values

lp.SILENCE_SOLVER_STDOUT = True  # a printed report, like the CLI's, stays free of solver noise

ROOT = Path(__file__).resolve().parents[1]
ORIGINAL_PROBLEMS = (
    Path(os.environ.get("TRADECRAFT_SHARED_DIR") or ROOT.parent / "shared")
    / "data"
    / "original-tradecraft-problems"
    / "minecraft_1p_v_1p.json"
)
"""The original game's public 1-vs-1 problems (see tests/suite_support.py)."""
BASELINE_REF = "8fcd427"
BIG_HAND_ITEMS = 80

# Run in a subprocess with one version of craft_rules first on sys.path: reads {"ruleset", "hand_sets":
# {label: [whole_runs, [hand, ...]]}, "blocks", "rounds"} on stdin, prints {label: {"ms": per hand in the
# fastest block of rounds, "answers"}}.
POSSIBLE_CRAFTS_PROBE = """
import json, sys, time
import craft_rules
from craft_rules.loader import load_rule_set
from craft_rules.planner import planner_for
job = json.load(sys.stdin)
rules = load_rule_set(job["ruleset"])
out = {"package": craft_rules.__file__}
for label, (whole_runs, hands) in job["hand_sets"].items():
    planner = planner_for(rules, whole_runs=whole_runs)
    answers = [[c.as_dict() for c in planner.possible_crafts(hand)] for hand in hands]
    blocks = []
    for _ in range(job["blocks"]):  # the fastest block counts, as timeit's repeat does
        start = time.perf_counter()
        for _ in range(job["rounds"]):
            for hand in hands:
                planner.possible_crafts(hand)
        blocks.append((time.perf_counter() - start) * 1000 / (job["rounds"] * len(hands)))
    out[label] = {"ms": min(blocks), "answers": answers}
print(json.dumps(out))
"""

Case = tuple[dict[str, int], dict[str, int], dict[str, int]]


def draw_hand(rules: RuleSet, near: Sequence[str], rng: random.Random) -> dict[str, int]:
    everything = sorted(rules.items)
    hand: dict[str, int] = {}
    for _ in range(rng.randint(5, 10)):
        pool = near if near and rng.random() < 0.7 else everything
        hand[rng.choice(pool)] = rng.randint(1, 8)
    return hand


def draw_cases(rules: RuleSet, planner: Planner, count: int, seed: int) -> list[Case]:
    """(hand, target, another player's hand) triples, reproducible for a seed."""
    rng = random.Random(seed)
    targets = sorted(rules.recipes_by_result)
    cases = []
    for _ in range(count):
        target = rng.choice(targets)
        near = sorted(planner.ancestors({target})[0] - {target})
        cases.append((draw_hand(rules, near, rng), {target: 1}, draw_hand(rules, near, rng)))
    return cases


def timed(label: str, cases: Sequence[Case], run: Callable[[Case], object]) -> list[float]:
    out = []
    for case in tqdm(cases, desc=label, unit="case", leave=False, file=sys.stderr):
        start = time.perf_counter()
        run(case)
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(times_ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(times_ms)
    p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * (len(ordered) - 1)))]
    return {
        "n": len(ordered),
        "median_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(p99, 3),
        "max_ms": round(ordered[-1], 3),
    }


def shipped_value_cases(ruleset: str) -> list[Case]:
    """(pooled hands, target, {}) for every player of every shipped task instance of the rule set."""
    from craft_rules.tasks import iter_instances

    cases: list[Case] = []
    for instance in iter_instances(ruleset):
        pool: dict[str, int] = {}
        for hand in instance.hands:
            for item, count in hand.items():
                pool[item] = pool.get(item, 0) + count
        cases.extend((pool, dict(target), {}) for target in instance.targets)
    return cases


def load_figures(name: str) -> dict[str, Any]:
    start = time.perf_counter()
    load_rule_set(name, use_cache=False)
    cold = time.perf_counter() - start
    load_rule_set(name)  # makes sure the pickle exists and fills the in-process cache
    start = time.perf_counter()
    load_rule_set(name)
    in_process = time.perf_counter() - start
    probe = (
        "import time; from craft_rules.loader import load_rule_set; "
        f"t = time.perf_counter(); load_rule_set({name!r}); print(time.perf_counter() - t)"
    )
    subprocess_runs = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        subprocess_runs.append(float(out.strip().splitlines()[-1]))
    return {
        "cold_ms": round(cold * 1000, 1),
        "cached_fresh_process_ms": round(statistics.median(subprocess_runs) * 1000, 1),
        "cached_in_process_ms": round(in_process * 1000, 4),
    }


def taskgen_figures(rules: RuleSet, seed: int) -> dict[str, Any] | None:
    try:
        from craft_rules import taskgen
    except ImportError:
        return None
    start = time.perf_counter()
    instances = taskgen.generate_instances(rules, 2, 40, seed)
    generated = time.perf_counter() - start
    start = time.perf_counter()
    reports = [taskgen.assess_instance(rules, inst) for inst in instances]
    validated = time.perf_counter() - start
    return {
        "instances": len(instances),
        "valid": sum(r.valid for r in reports),
        "generate_s": round(generated, 2),
        "validate_s": round(validated, 2),
    }


def possible_crafts_hand_sets(rules: RuleSet, seed: int) -> dict[str, tuple[bool, list[dict[str, int]]]]:
    """label -> (whole runs, hands): the public hands (when the oracle data is there) and 80-item hands."""
    rng = random.Random(seed)
    everything = sorted(rules.items)
    big = [{item: rng.randint(1, 8) for item in rng.sample(everything, BIG_HAND_ITEMS)} for _ in range(40)]
    sets: dict[str, tuple[bool, list[dict[str, int]]]] = {}
    if ORIGINAL_PROBLEMS.exists() and rules.name == "minecraft":
        problems = json.loads(ORIGINAL_PROBLEMS.read_text(encoding="utf-8"))
        public = [dict(hand) for problem in problems for hand in problem["hands"]]
        sets[f"{len(public)} public hands, whole runs"] = (True, public)
        sets[f"{len(public)} public hands, rational"] = (False, public)
    sets[f"{len(big)} {BIG_HAND_ITEMS}-item hands, whole runs"] = (True, big)
    sets[f"{len(big)} {BIG_HAND_ITEMS}-item hands, rational"] = (False, big)
    return sets


def extract_craft_rules(ref: str, into: Path) -> None:
    """``craft_rules`` as it was at git revision ``ref``, written under ``into``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "craft_rules"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def probe_possible_crafts(package_root: Path, job: dict[str, Any]) -> dict[str, Any]:
    """Run :data:`POSSIBLE_CRAFTS_PROBE` with ``package_root``'s craft_rules first on the path."""
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    done = subprocess.run(
        [sys.executable, "-c", POSSIBLE_CRAFTS_PROBE],
        cwd=package_root,
        env=env,
        input=json.dumps(job),
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    expected = package_root / "craft_rules" / "__init__.py"
    assert Path(found["package"]).resolve() == expected.resolve(), f"probe imported {found['package']}"
    return found


def baseline_figures(rules: RuleSet, ref: str, seed: int, rounds: int = 4) -> dict[str, Any]:
    """Possible crafts of revision ``ref`` and of this checkout on the same hands (see the docstring)."""
    sets = possible_crafts_hand_sets(rules, seed)
    job = {"ruleset": rules.name, "hand_sets": sets, "blocks": 5, "rounds": 5}
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as folder:
        extract_craft_rules(ref, Path(folder))
        old_runs, new_runs = [], []
        for _ in tqdm(range(rounds), desc="possible crafts, old and new", leave=False, file=sys.stderr):
            old_runs.append(probe_possible_crafts(Path(folder), job))
            new_runs.append(probe_possible_crafts(ROOT, job))
    figures: dict[str, Any] = {"ref": ref, "public_hands": ORIGINAL_PROBLEMS.exists()}
    for label in sets:
        old_ms = min(run[label]["ms"] for run in old_runs)
        new_ms = min(run[label]["ms"] for run in new_runs)
        figures[label] = {
            "old_ms": round(old_ms, 4),
            "new_ms": round(new_ms, 4),
            "speed_up": round(old_ms / new_ms, 1),
            "answers_identical": all(
                old[label]["answers"] == new[label]["answers"] for old in old_runs for new in new_runs
            ),
        }
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ruleset", default="minecraft")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--skip-taskgen", action="store_true")
    parser.add_argument(
        "--baseline",
        default=BASELINE_REF,
        metavar="REF",
        help=f"git revision whose possible crafts to time beside this checkout's (default {BASELINE_REF})",
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the side-by-side comparison")
    parser.add_argument("--baseline-only", action="store_true", help="only the side-by-side comparison")
    args = parser.parse_args(argv)
    if args.ruleset not in rule_set_dirs():
        print(f"rule set {args.ruleset!r} is not installed", file=sys.stderr)
        return 1

    if args.baseline_only:
        side_by_side = baseline_figures(load_rule_set(args.ruleset), args.baseline, args.seed)
        if args.json:
            print(json.dumps(side_by_side, indent=2))
        else:
            print_baseline(side_by_side)
        return 0
    figures: dict[str, Any] = {"ruleset": args.ruleset, "samples": args.samples, "seed": args.seed}
    figures["load"] = load_figures(args.ruleset)
    rules = load_rule_set(args.ruleset)
    start = time.perf_counter()
    planner = planner_for(rules)
    planner.possible_crafts({})
    _ = planner.graph.item_levels, planner.graph.obtain_rank
    figures["planner_setup_ms"] = round((time.perf_counter() - start) * 1000, 1)
    cases = draw_cases(rules, planner, args.samples, args.seed)
    for hand, target, _ in cases[:20]:  # warm the per-target caches the way a running game would
        planner.plan(hand, target, find_missing=False)

    craftable_times: list[float] = []

    def plan_only(case: Case) -> None:
        start = time.perf_counter()
        plan = planner.plan(case[0], case[1], find_missing=False)
        if plan.craftable:
            craftable_times.append((time.perf_counter() - start) * 1000)

    figures["possible_crafts"] = summary(
        timed("possible crafts", cases, lambda c: planner.possible_crafts(c[0]))
    )
    figures["plan"] = summary(timed("plan", cases, plan_only))
    figures["plan_craftable_share"] = round(len(craftable_times) / len(cases), 3)
    figures["plan_when_craftable"] = summary(craftable_times or [0.0])
    figures["plan_with_missing_from_other_hand"] = summary(
        timed("plan + missing (other hand)", cases, lambda c: planner.plan(c[0], c[1], available=c[2]))
    )
    figures["missing_any_item"] = summary(
        timed("missing (any item)", cases, lambda c: planner.missing(c[0], c[1]))
    )
    value_cases = cases[: max(1, len(cases) // 3)]
    figures["reference_values_two_hands"] = summary(
        timed("reference values", value_cases, lambda c: reference_values(rules, c[1], [c[0], c[2]]))
    )
    instance_cases = shipped_value_cases(args.ruleset)
    if instance_cases:

        def values_of(case: Case) -> object:
            return reference_values(rules, case[1], [case[0]])

        figures["reference_values_shipped_instances"] = summary(
            timed("reference values (instances)", instance_cases, values_of)
        )
    if not args.skip_taskgen:
        figures["taskgen_40_instances"] = taskgen_figures(rules, args.seed)
    if not args.no_baseline:
        figures["possible_crafts_vs_baseline"] = baseline_figures(rules, args.baseline, args.seed)

    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    load = figures["load"]
    print(f"crafting bench: rule set {args.ruleset}, {args.samples} random hands/targets (seed {args.seed})")
    print(f"  load cold (no cache)              {load['cold_ms']:>9.1f} ms")
    print(f"  load cached, fresh process        {load['cached_fresh_process_ms']:>9.1f} ms")
    print(f"  load cached, in process           {load['cached_in_process_ms']:>9.4f} ms")
    print(f"  planner setup (indexes, levels)   {figures['planner_setup_ms']:>9.1f} ms")
    print(f"  {'':<34}{'median':>9} {'p99':>9} {'max':>9}  (ms)")
    rows = [
        ("possible crafts (target <= 1 ms)", "possible_crafts"),
        ("plan (target <= 10 ms)", "plan"),
        ("  of which craftable targets", "plan_when_craftable"),
        ("plan + missing from other hand", "plan_with_missing_from_other_hand"),
        ("missing, any item obtainable", "missing_any_item"),
        ("reference values, two hands", "reference_values_two_hands"),
        ("reference values, task instances", "reference_values_shipped_instances"),
    ]
    for label, key in rows:
        if key not in figures:
            continue
        row = figures[key]
        print(f"  {label:<34}{row['median_ms']:>9.3f} {row['p99_ms']:>9.3f} {row['max_ms']:>9.3f}")
    print(f"  share of drawn targets craftable from the hand: {figures['plan_craftable_share']:.1%}")
    tasks = figures.get("taskgen_40_instances")
    if tasks:
        print(
            f"  generate + validate 40 instances: {tasks['generate_s']:.2f} s + {tasks['validate_s']:.2f} s"
            f" ({tasks['valid']}/{tasks['instances']} valid)"
        )
    elif not args.skip_taskgen:
        print("  generate + validate 40 instances: craft_rules.taskgen is not installed")
    side_by_side = figures.get("possible_crafts_vs_baseline")
    if side_by_side:
        print_baseline(side_by_side)
    return 0


def print_baseline(figures: dict[str, Any]) -> None:
    print(f"  possible crafts per hand, revision {figures['ref']} (old) vs this checkout (new):")
    if not figures["public_hands"]:
        print(f"    (the original game's public hands are absent: {ORIGINAL_PROBLEMS})")
    print(f"    {'':<34}{'old ms':>9} {'new ms':>9} {'speed-up':>9}  answers identical")
    for label, row in figures.items():
        if isinstance(row, dict):
            identical = "yes" if row["answers_identical"] else "NO"
            times = f"{row['old_ms']:>9.4f} {row['new_ms']:>9.4f} {row['speed_up']:>8.1f}x"
            print(f"    {label:<34}{times}  {identical}")


if __name__ == "__main__":
    sys.exit(main())
