"""CPU cost of every in-phase query (server/game/queries.py) over every item of both rule sets, with the
hands a game can really hold. Prints a table per query kind and the worst queries; not a pass/fail test
(tests/test_query_bounds.py asserts the bound on the worst ones found here).

    .venv/bin/python bench/bench_query_cost.py [--rulesets minecraft alchemy] [--runs rational whole]
        [--hands seats all_in_one empty raw_max] [--instances-per-file 2] [--kinds craftable ...]
        [--counts 64 1] [--top 10] [--every 1]

CPU time is ``time.process_time`` around ``answer_query`` (the part a server runs outside the game's
lock). A client chooses the item and the count, never the hand: the viewer's own crafting hand and the
other seats' public hands are a game's. Hands:

- ``seats``: every seat of a shipped task instance (``craft_rules/TC_GAMES``), the others the other seats;
- ``all_in_one``: all of an instance's items in one hand, the others empty (trades can concentrate them:
  the most a real hand can hold);
- ``empty``: nothing held anywhere;
- ``raw_max`` (an extra column, not the target: no game deals it): every raw material of the rule set
  (``taskgen.base_items``) at 64 units, the others the same.

Instances: ``--instances-per-file`` of each instance file, evenly spread (0: every instance). For a
seats or all_in_one hand, ``craftable`` runs only for the items that anything held anywhere can feed
(the recipe graph's ancestors); for the other items the hand changes nothing and the ``empty`` hand
measures them. Per item: ``craftable`` at each ``--counts`` (64, the most a client may ask, and 1),
``crafting_tree`` at 64 and the deepest depth, ``item_info``; per recipe: ``craft_options``; per hand:
``possible_crafts`` (limit 500), ``match_grid`` with the busiest items in all nine cells and every shaped
recipe's own pattern, ``recipe_search`` for one letter (the most hits), ``history`` (200 events).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from craft_rules import lp
from craft_rules.grid import recipe_grid
from craft_rules.loader import load_rule_set
from craft_rules.model import RecipeType, RuleSet
from craft_rules.taskgen import base_items
from craft_rules.tasks import TaskInstance, iter_instances
from server.game.errors import GameError
from server.game.queries import MAX_TARGET_COUNT, MAX_TREE_DEPTH, QueryContext, answer_query, parse_query

lp.SILENCE_SOLVER_STDOUT = True  # the printed figures stay free of solver noise

RAW_MAX_UNITS = 64
HAND_KINDS = ("seats", "all_in_one", "empty", "raw_max")
QUERY_KINDS = (
    "craftable",
    "crafting_tree",
    "item_info",
    "craft_options",
    "possible_crafts",
    "match_grid",
    "recipe_search",
    "history",
)


@dataclass(frozen=True)
class Measured:
    ruleset: str
    runs: str
    hand: str
    query: dict[str, Any]
    cpu_ms: float
    outcome: str  # "ok", or the error code the query answered

    def label(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.query.items() if k not in ("type", "grid"))
        if "grid" in self.query:
            args = "grid=" + "/".join(",".join(c or "-" for c in row) for row in self.query["grid"])
        return f"{self.ruleset}/{self.runs}/{self.hand} {self.query['type']}({args[:60]})"


def hands_of(
    rules: RuleSet, name: str, per_file: int
) -> Iterator[tuple[str, dict[str, int], dict[str, int]]]:
    """(label, own hand, the other seats' pooled public hands) for one hand kind."""
    if name == "empty":
        yield "empty", {}, {}
        return
    if name == "raw_max":
        raw = dict.fromkeys(sorted(base_items(rules)), RAW_MAX_UNITS)
        yield "raw_max", raw, dict(raw)
        return
    by_file: dict[str, list[TaskInstance]] = {}
    for inst in iter_instances(rules.name):
        by_file.setdefault(inst.id.split("#")[0], []).append(inst)
    for instances in by_file.values():
        step = 1 if per_file <= 0 else max(1, len(instances) // per_file)
        for inst in instances[::step][: per_file or None]:
            if name == "all_in_one":
                yield f"{inst.id}:all", pooled(inst.hands), {}
                continue
            for seat in range(inst.players):
                others = pooled(h for other, h in enumerate(inst.hands) if other != seat)
                yield f"{inst.id}:seat{seat}", dict(inst.hands[seat]), others


def pooled(hands: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for hand in hands:
        for item, count in hand.items():
            total[item] = total.get(item, 0) + count
    return total


def fed_items(rules: RuleSet, held: Iterable[str]) -> set[str]:
    """The items that some recipe chain from ``held`` items can reach (the items whose ``craftable``
    answer a hand of them can change)."""
    reached = set(held)
    frontier = list(reached)
    while frontier:
        item = frontier.pop()
        for recipe in rules.recipes_by_input.get(item, ()):
            if recipe.result not in reached:
                reached.add(recipe.result)
                frontier.append(recipe.result)
    return reached


def context_for(
    rules: RuleSet, whole_runs: bool, hand: dict[str, int], others: dict[str, int]
) -> QueryContext:
    events = tuple(
        {"n": n, "type": "message", "turn": n, "actor": n % 2, "payload": {"text": "x" * 200}}
        for n in range(200)
    )
    return QueryContext(
        rules=rules,
        seat=0,
        players=2,
        public_hands=(dict(hand), dict(others)),
        own_hand={k: Fraction(v) for k, v in hand.items()},
        own_hand_kind="crafting",
        target={sorted(rules.recipes_by_result)[0]: 1},
        events=events,
        log_size=len(events),
        whole_runs=whole_runs,
    )


def queries_for(rules: RuleSet, every: int, counts: list[int]) -> Iterator[dict[str, Any]]:
    items = sorted(rules.items)[::every]
    for item in items:
        for count in counts:
            yield {"type": "craftable", "item": item, "count": count}
        yield {"type": "crafting_tree", "item": item, "count": MAX_TARGET_COUNT, "depth": MAX_TREE_DEPTH}
        yield {"type": "item_info", "item": item}
    for recipe in sorted(rules.recipes)[::every]:
        yield {"type": "craft_options", "recipe": recipe}
    yield {"type": "possible_crafts", "limit": 500}
    busiest = sorted(rules.recipes_by_input, key=lambda i: (-len(rules.recipes_by_input[i]), i))[:5]
    for item in busiest:
        yield {"type": "match_grid", "grid": [[item] * 3] * 3}
    for recipe in sorted(rules.recipes.values(), key=lambda r: r.id)[::every]:
        grid = recipe_grid(recipe) if recipe.type is RecipeType.CRAFTING_SHAPED else None
        if grid is not None:
            cells = [[None if i is None else recipe.ingredients[i].options[0] for i in row] for row in grid]
            yield {"type": "match_grid", "grid": cells}
    for letter in "aeiost_":
        yield {"type": "recipe_search", "text": letter, "limit": 50}
    yield {"type": "history", "since_n": 0, "limit": 200}


def measure(ctx: QueryContext, query: dict[str, Any]) -> tuple[float, str]:
    """CPU ms and the outcome: "ok", the error code, or the fields marked unknown / approximate."""
    parsed = parse_query(query)
    start = time.process_time()
    try:
        answer = answer_query(ctx, parsed)
        marked = [f"{mark}:{field}" for mark in ("unknown", "approximate") for field in answer.get(mark, {})]
        outcome = ",".join(marked) or "ok"
    except GameError as err:
        outcome = err.code
    return (time.process_time() - start) * 1000, outcome


def for_hand(rules: RuleSet, queries: list[dict[str, Any]], held: set[str]) -> list[dict[str, Any]]:
    """The queries whose answer a hand of ``held`` items (anywhere) can change from the empty hand's."""
    fed = fed_items(rules, held)
    kept = []
    for query in queries:
        if "item" in query and query["item"] not in fed:
            continue
        if "recipe" in query and not any(
            o in held for ing in rules.recipes[query["recipe"]].ingredients for o in ing.options
        ):
            continue
        kept.append(query)
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rulesets", nargs="+", default=["minecraft", "alchemy"])
    parser.add_argument("--runs", nargs="+", default=["rational", "whole"], choices=["rational", "whole"])
    parser.add_argument(
        "--hands", nargs="+", default=["seats", "all_in_one", "empty", "raw_max"], choices=HAND_KINDS
    )
    parser.add_argument("--instances-per-file", type=int, default=2, help="0: every instance")
    parser.add_argument("--kinds", nargs="+", default=list(QUERY_KINDS), choices=QUERY_KINDS)
    parser.add_argument("--counts", nargs="+", type=int, default=[MAX_TARGET_COUNT, 1])
    parser.add_argument("--items", nargs="*", help="only these items (craftable, crafting_tree, item_info)")
    parser.add_argument("--every", type=int, default=1, help="every n-th item and recipe only (a quick look)")
    parser.add_argument("--top", type=int, default=10, help="how many of the worst queries to list")
    args = parser.parse_args()

    results: list[Measured] = []
    wall = time.perf_counter()
    for name in args.rulesets:
        rules = load_rule_set(name)
        queries = [q for q in queries_for(rules, args.every, args.counts) if q["type"] in args.kinds]
        if args.items:
            queries = [q for q in queries if "item" not in q or q["item"] in args.items]
        for runs in args.runs:
            for hand_kind in args.hands:
                for label, hand, others in hands_of(rules, hand_kind, args.instances_per_file):
                    ctx = context_for(rules, runs == "whole", hand, others)
                    measure(ctx, {"type": "craftable", "item": sorted(rules.recipes_by_result)[0]})  # imports
                    held = {i for i, n in (*hand.items(), *others.items()) if n > 0}
                    asked = (
                        for_hand(rules, queries, held) if hand_kind in ("seats", "all_in_one") else queries
                    )
                    for query in asked:
                        cpu_ms, outcome = measure(ctx, query)
                        results.append(Measured(name, runs, label, query, cpu_ms, outcome))
                    print(f"  {name}/{runs}/{label}: {len(asked)} queries", file=sys.stderr, flush=True)
    wall = time.perf_counter() - wall

    print(f"{len(results)} queries in {wall:.0f} s wall; CPU ms per query (time.process_time)")
    print(f"{'kind':<16} {'n':>6} {'median':>8} {'p99':>8} {'max':>8}   marked  worst")
    for kind in args.kinds:
        of_kind = [r for r in results if r.query["type"] == kind]
        if not of_kind:
            continue
        times = sorted(r.cpu_ms for r in of_kind)
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        worst = max(of_kind, key=lambda r: r.cpu_ms)
        refused = sum(1 for r in of_kind if r.outcome != "ok")
        print(
            f"{kind:<16} {len(times):>6} {statistics.median(times):>8.1f} {p99:>8.1f} {times[-1]:>8.1f}"
            f"  {refused:>7}  {worst.label()}"
        )
    print(f"\nthe {args.top} most expensive queries:")
    for r in sorted(results, key=lambda r: -r.cpu_ms)[: args.top]:
        print(f"{r.cpu_ms:9.1f} ms  {r.outcome:<20} {r.label()}")
    over = [r for r in results if r.cpu_ms > 100]
    print(f"\nover 100 ms: {len(over)} of {len(results)}")
    for mark in sorted({r.outcome for r in results} - {"ok"}):
        print(f"{mark}: {sum(1 for r in results if r.outcome == mark)}")


if __name__ == "__main__":
    main()
