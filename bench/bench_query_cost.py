"""CPU cost of every in-phase query (server/game/queries.py) over every item of both rule sets, with the
worst parameters a client may send. Prints a table per query kind and the worst queries; not a pass/fail
test (tests/test_query_bounds.py asserts the bound on the worst ones found here).

    .venv/bin/python bench/bench_query_cost.py [--rulesets minecraft alchemy] [--runs rational whole]
        [--hands empty instance raw_max] [--kinds craftable crafting_tree ...] [--top 25] [--every 1]

CPU time is ``time.process_time`` around ``answer_query`` (the part a server runs outside the game's
lock). Hands, each the viewer's own crafting hand, with the other seats' public hands:

- ``empty``: nothing held, the others hold nothing either;
- ``instance``: the biggest hand of the rule set's shipped task instances, the others the rest of it;
- ``raw_max``: every raw material of the rule set (``taskgen.base_items``) at 64 units, the same for the
  others (more than any game deals, so more than a hand can gather by trading).

Per item: ``craftable`` and ``crafting_tree`` at the largest count (64; the tree at the deepest depth),
``item_info``; per recipe: ``craft_options``; per hand: ``possible_crafts`` (limit 500), ``match_grid``
with the busiest items in all nine cells and every shaped recipe's own pattern, ``recipe_search`` for
one letter (the most hits), ``history`` (200 events).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
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
from craft_rules.tasks import iter_instances
from server.game.errors import GameError
from server.game.queries import MAX_TARGET_COUNT, MAX_TREE_DEPTH, QueryContext, answer_query, parse_query

lp.SILENCE_SOLVER_STDOUT = True  # the printed figures stay free of solver noise

RAW_MAX_UNITS = 64
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
        return f"{self.ruleset}/{self.runs}/{self.hand} {self.query['type']}({args[:70]})"


def hands_of(rules: RuleSet, name: str) -> tuple[dict[str, int], dict[str, int]]:
    """(own hand, the other seat's public hand) for one hand kind."""
    if name == "empty":
        return {}, {}
    if name == "raw_max":
        raw = dict.fromkeys(sorted(base_items(rules)), RAW_MAX_UNITS)
        return raw, dict(raw)
    instances = list(iter_instances(rules.name))
    best = max(
        ((inst, seat) for inst in instances for seat in range(inst.players)),
        key=lambda pair: (sum(pair[0].hands[pair[1]].values()), pair[0].id, pair[1]),
    )
    inst, seat = best
    others: dict[str, int] = {}
    for other, hand in enumerate(inst.hands):
        if other != seat:
            for item, count in hand.items():
                others[item] = others.get(item, 0) + count
    return dict(inst.hands[seat]), others


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


def queries_for(rules: RuleSet, every: int) -> Iterator[dict[str, Any]]:
    items = sorted(rules.items)[::every]
    for item in items:
        yield {"type": "craftable", "item": item, "count": MAX_TARGET_COUNT}
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
    parsed = parse_query(query)
    start = time.process_time()
    try:
        answer_query(ctx, parsed)
        outcome = "ok"
    except GameError as err:
        outcome = err.code
    return (time.process_time() - start) * 1000, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rulesets", nargs="+", default=["minecraft", "alchemy"])
    parser.add_argument("--runs", nargs="+", default=["rational", "whole"], choices=["rational", "whole"])
    parser.add_argument("--hands", nargs="+", default=["empty", "instance", "raw_max"])
    parser.add_argument("--kinds", nargs="+", default=list(QUERY_KINDS), choices=QUERY_KINDS)
    parser.add_argument("--items", nargs="*", help="only these items (craftable, crafting_tree, item_info)")
    parser.add_argument("--every", type=int, default=1, help="every n-th item and recipe only (a quick look)")
    parser.add_argument("--top", type=int, default=25, help="how many of the worst queries to list")
    args = parser.parse_args()

    results: list[Measured] = []
    wall = time.perf_counter()
    for name in args.rulesets:
        rules = load_rule_set(name)
        queries = [q for q in queries_for(rules, args.every) if q["type"] in args.kinds]
        if args.items:
            queries = [q for q in queries if "item" not in q or q["item"] in args.items]
        for runs in args.runs:
            for hand_name in args.hands:
                hand, others = hands_of(rules, hand_name)
                ctx = context_for(rules, runs == "whole", hand, others)
                measure(ctx, {"type": "craftable", "item": sorted(rules.recipes_by_result)[0]})  # imports
                for query in queries:
                    cpu_ms, outcome = measure(ctx, query)
                    results.append(Measured(name, runs, hand_name, query, cpu_ms, outcome))
    wall = time.perf_counter() - wall

    print(f"{len(results)} queries in {wall:.0f} s wall; CPU ms per query (time.process_time)")
    print(f"{'kind':<16} {'n':>6} {'median':>8} {'p99':>8} {'max':>8}  refused  worst")
    for kind in args.kinds:
        of_kind = [r for r in results if r.query["type"] == kind]
        if not of_kind:
            continue
        times = sorted(r.cpu_ms for r in of_kind)
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        worst = max(of_kind, key=lambda r: r.cpu_ms)
        refused = sum(1 for r in of_kind if r.outcome == "query_too_expensive")
        print(
            f"{kind:<16} {len(times):>6} {statistics.median(times):>8.1f} {p99:>8.1f} {times[-1]:>8.1f}"
            f"  {refused:>7}  {worst.label()}"
        )
    print(f"\nthe {args.top} most expensive queries:")
    for r in sorted(results, key=lambda r: -r.cpu_ms)[: args.top]:
        print(f"{r.cpu_ms:9.1f} ms  {r.outcome:<20} {r.label()}")
    over = [r for r in results if r.cpu_ms > 100]
    print(f"\nover 100 ms: {len(over)} of {len(results)}")


if __name__ == "__main__":
    main()
