"""Cost of the game room's craft-helper queries (server/game/queries.py) on the full minecraft rule set.
Prints figures; not a pass/fail test.

    .venv/bin/python bench/bench_craft_queries.py [--samples 200] [--seed 7]

- ``match_grid``: random 3x3 placements (1-9 cells) drawn from the items of shaped recipes, and the
  worst-case first items (those feeding the most recipes: planks, sticks, coal); plus every shaped
  recipe's own pattern (which must match itself);
- ``craft_options``: one recipe for a hand of 5-10 items, including fuel-burning recipes with every fuel held;
- ``possible_crafts`` with the added recipe kinds, for comparison with bench_crafting's planner figure;
- ``craftable`` on random items, asked twice: the second answer should take as long as the first.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from craft_rules import lp
from craft_rules.grid import recipe_grid
from craft_rules.loader import load_rule_set
from craft_rules.model import RecipeType
from craft_rules.tasks import TaskInstance
from server.game import Game, GameSettings
from server.game.queries import answer_query, parse_query, query_context

lp.SILENCE_SOLVER_STDOUT = True  # the printed figures stay free of solver noise


def timed(samples: list[Any], run: Callable[[Any], object]) -> list[float]:
    out = []
    for sample in samples:
        start = time.perf_counter()
        run(sample)
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(name: str, times: list[float]) -> None:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    print(
        f"{name:<46} n={len(times):>4}  median {statistics.median(times):7.3f} ms  "
        f"p95 {p95:7.3f} ms  max {max(times):7.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rules = load_rule_set("minecraft")
    shaped = [r for r in rules.recipes.values() if r.type is RecipeType.CRAFTING_SHAPED]
    shaped_items = sorted({o for r in shaped for ing in r.ingredients for o in ing.options})
    fuels = sorted(rules.fuels.burn_ticks)
    hand = {"oak_planks": 3, "raw_iron": 2, "coal": 1, "stick": 2, "cobblestone": 4, "iron_ingot": 3}
    instance = TaskInstance(
        "bench/1p_v_1p/q#0", "minecraft", "1p_v_1p", (hand, {"stick": 1}), ({"torch": 1}, {"shears": 1})
    )
    game = Game.new(instance, GameSettings(), rules, 0)
    game.apply(0, {"type": "pass"})  # the craft phase: queries answer from the crafting hand

    def ask(query: dict[str, Any]) -> dict[str, Any]:
        parsed = parse_query(query)
        return answer_query(query_context(game, 0, parsed), parsed)

    def random_grid() -> list[list[str | None]]:
        cells: list[str | None] = [None] * 9
        for index in rng.sample(range(9), rng.randint(1, 9)):
            cells[index] = rng.choice(shaped_items)
        return [cells[0:3], cells[3:6], cells[6:9]]

    report(
        "match_grid, random placements",
        timed([random_grid() for _ in range(args.samples)], lambda g: ask({"type": "match_grid", "grid": g})),
    )
    busiest = sorted(rules.recipes_by_input, key=lambda item: -len(rules.recipes_by_input[item]))[:5]
    listing = ", ".join(f"{i} ({len(rules.recipes_by_input[i])} recipes)" for i in busiest)
    print(f"  busiest first items: {listing}")
    report(
        "match_grid, first item the busiest, 9 cells",
        timed(
            [busiest[i % len(busiest)] for i in range(args.samples)],
            lambda item: ask({"type": "match_grid", "grid": [[item] * 3] * 3}),
        ),
    )

    def own_pattern(recipe: Any) -> None:
        grid = recipe_grid(recipe)
        assert grid is not None
        cells = [[None if i is None else recipe.ingredients[i].options[0] for i in row] for row in grid]
        answer = ask({"type": "match_grid", "grid": cells})
        assert recipe.id in [m["recipe"] for m in answer["matches"]], recipe.id

    times = timed(shaped, own_pattern)
    report("match_grid, every shaped recipe's own pattern", times)
    print(f"  all {len(shaped)} shaped recipes match their own pattern")

    recipes = sorted(rules.recipes)
    report(
        "craft_options, random recipes",
        timed(rng.choices(recipes, k=args.samples), lambda r: ask({"type": "craft_options", "recipe": r})),
    )
    fuel_hand = {**hand, **{f: 1 for f in fuels}}
    game_fuels = Game.new(
        TaskInstance(
            "bench/1p_v_1p/f#0",
            "minecraft",
            "1p_v_1p",
            (fuel_hand, {"stick": 1}),
            ({"torch": 1}, {"shears": 1}),
        ),
        GameSettings(),
        rules,
        0,
    )
    game_fuels.apply(0, {"type": "pass"})
    smelting = [r.id for r in rules.recipes.values() if r.burns_fuel]

    def ask_fuels(recipe: str) -> None:
        parsed = parse_query({"type": "craft_options", "recipe": recipe})
        answer_query(query_context(game_fuels, 0, parsed), parsed)

    report(
        f"craft_options, fuel recipes, {len(fuels)} fuels held",
        timed(rng.choices(smelting, k=args.samples), ask_fuels),
    )
    report(
        "possible_crafts (with recipe kinds), 6 items",
        timed(range(args.samples), lambda _: ask({"type": "possible_crafts", "limit": 500})),
    )

    # craftable (a plan, and what is missing): the first question about an item and the same question
    # again should cost the same, whatever the planner answered before (no shared cache: see
    # Planner.remembering); a gap here would let a player time out someone else's target
    targets = rng.sample(sorted(rules.recipes_by_result), min(args.samples, len(rules.recipes_by_result)))
    first, again = [], []
    for item in targets:
        query = {"type": "craftable", "item": item}
        first += timed([query], ask)
        again += timed([query], ask)
    report("craftable, an item asked about the first time", first)
    report("craftable, the same question again", again)
    print(f"  median again / first: {statistics.median(again) / statistics.median(first):.3f}")


if __name__ == "__main__":
    main()
