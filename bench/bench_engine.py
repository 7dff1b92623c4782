"""Engine throughput and replay speed. Prints figures; not a pass/fail test.

    .venv/bin/python bench/bench_engine.py [--games 300] [--ruleset minecraft] [--json]

What it measures (targets from issue 3: >= 20,000 actions/s; a 1,000-event game replays in <= 50 ms):
- engine actions/s: random games are played once to record their actions (the random policy is not
  timed), then the recorded actions are re-applied to fresh games and only ``Game.apply`` is timed —
  once with pydantic models (as the server passes after parsing) and once with raw JSON dicts
  (parse + validate + apply);
- full games/s with the random bot (:class:`agents.bots.random_bot.RandomBot`, policy included);
- replay speed: events/s over every recorded game, and ms to replay one game of >= 1,000 events;
- views: us per player/spectator view, each seat's and the spectator's after every recorded action
  (what the server builds after every change);
- view cost by game length: one long game (targets nobody can reach, so it never ends early) is
  replayed to its state after 1,000, 5,000 and 20,000 events, and a round of views (every seat's and
  the spectator's, from a cold per-state cache, as after a change) is timed there; flat within 1.5x
  means a view's cost does not grow with the game. For comparison the same is timed with the history
  window lifted (``VIEW_HISTORY_TURNS`` unbounded: what views cost when they carried the whole history).

Instances: the shipped task instances of the rule set when there are any, else instances this script
draws from the rule set's recipes (each player holds part of what some recipe needs).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.bots.random_bot import RandomBot
from craft_rules.loader import load_rule_set, rule_set_dirs
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance, iter_instances, mode_for_players
from server.game import Game, GameSettings, parse_action, views
from server.game.legal import legal_actions
from server.game.views import player_view, spectator_view

VIEW_COST_LENGTHS = (1_000, 5_000, 20_000)


def drawn_instances(rules: RuleSet, players: int, count: int, rng: random.Random) -> list[TaskInstance]:
    """Instances from recipes: targets are recipe results, the ingredients are split over the hands."""
    recipes = sorted(rules.recipes.values(), key=lambda r: r.id)
    out = []
    for index in range(count):
        hands: list[dict[str, int]] = [{} for _ in range(players)]
        targets = []
        for _ in range(players):
            recipe = rng.choice(recipes)
            targets.append({recipe.result: recipe.count})
            for ing in recipe.ingredients:
                item = rng.choice(ing.options)
                holder = rng.randrange(players)
                hands[holder][item] = hands[holder].get(item, 0) + ing.count
            if recipe.burns_fuel and rules.fuels.burn_ticks:
                fuel = rng.choice(sorted(rules.fuels.burn_ticks))
                hands[rng.randrange(players)][fuel] = 1
        mode = mode_for_players(players)
        out.append(
            TaskInstance(f"{rules.name}/{mode}/bench#{index}", rules.name, mode, tuple(hands), tuple(targets))
        )
    return out


def pick_instances(
    rules: RuleSet, players: int, count: int, rng: random.Random
) -> tuple[list[TaskInstance], str]:
    shipped = list(iter_instances(rules.name, mode_for_players(players)))
    if shipped:
        return [shipped[i % len(shipped)] for i in range(count)], "shipped"
    return drawn_instances(rules, players, count, rng), "drawn from recipes"


def record_game(
    inst: TaskInstance,
    rules: RuleSet,
    settings: GameSettings,
    seed: int,
    stop_after_events: int | None = None,
) -> tuple[Game, list]:
    game = Game.new(inst, settings, rules, seed)
    rng = random.Random(seed)
    actions: list[tuple[int | None, dict[str, Any]]] = []
    while not game.finished and (stop_after_events is None or len(game.events) < stop_after_events):
        seat = rng.choice(sorted(game.waiting_for()))
        # one random policy for the whole project: the bot, fed what a remote player sees
        bot = RandomBot(rng.getrandbits(63), rules=rules)
        action = bot.act(player_view(game, seat), legal_actions(game, seat))
        game.apply(seat, action)
        actions.append((seat, action))
    return game, actions


def endless_instance(inst: TaskInstance, rules: RuleSet) -> TaskInstance:
    """``inst`` with every target replaced by an item no recipe makes and no hand holds: a game that only
    ends at max_turns, however long."""
    held = {item for hand in inst.hands for item in hand}
    made = set(rules.recipes_by_result)
    unreachable = sorted(item for item in rules.items if item not in made and item not in held)[0]
    targets = tuple({unreachable: 1} for _ in inst.hands)
    return TaskInstance(inst.id + "-endless", inst.ruleset, inst.mode, inst.hands, targets)


def view_round_us(game: Game, rounds: int) -> float:
    """Median us per view of one round (every seat + the spectator) from a cold per-state cache."""
    samples = []
    for _ in range(rounds):
        game.state_cache().clear()  # as after a change: the shared parts are rebuilt once per state
        t0 = time.perf_counter()
        for viewer in range(game.players):
            player_view(game, viewer)
        spectator_view(game)
        samples.append((time.perf_counter() - t0) / (game.players + 1))
    return statistics.median(samples) * 1e6


def view_cost_by_length(
    rules: RuleSet, inst: TaskInstance, settings: GameSettings, seed: int
) -> dict[str, Any]:
    """us per view at each of VIEW_COST_LENGTHS events, with the history window and without it."""
    longest = max(VIEW_COST_LENGTHS)
    endless = endless_instance(inst, rules)
    long_settings = settings.model_copy(update={"max_turns": 10_000})
    game, _ = record_game(endless, rules, long_settings, seed, stop_after_events=longest)
    log = [e.to_dict() for e in game.events]
    if len(log) < longest:
        raise SystemExit(f"the endless game ended after {len(log)} events; raise max_turns")
    windowed, unbounded = {}, {}
    window = views.VIEW_HISTORY_TURNS
    for length in VIEW_COST_LENGTHS:
        state = Game.replay(endless, long_settings, rules, seed, log[:length])
        windowed[length] = round(view_round_us(state, 200), 1)
        views.VIEW_HISTORY_TURNS = 10**9  # what views cost when they carried the whole history
        try:
            unbounded[length] = round(view_round_us(state, 20), 1)
        finally:
            views.VIEW_HISTORY_TURNS = window
    return {"window_turns": window, "view_us_by_events": windowed, "unbounded_view_us_by_events": unbounded}


def run(rules: RuleSet, games: int, players: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    instances, source = pick_instances(rules, players, games, rng)
    settings = GameSettings(ruleset=rules.name, max_turns=10, tom_orders=[[0, 1, 2]] + [[0]] * (players - 1))

    # full games with the random policy (policy + engine)
    gc.collect()  # each timed section starts from a collected heap: no earlier garbage's GC pass inside it
    t0 = time.perf_counter()
    recorded = [record_game(inst, rules, settings, seed + i) for i, inst in enumerate(instances)]
    policy_seconds = time.perf_counter() - t0

    # engine only: re-apply recorded actions
    n_actions = sum(len(a) for _, a in recorded)
    models = [[(seat, parse_action(a)) for seat, a in acts] for _, acts in recorded]
    timings = {}
    for label, batches in (("models", models), ("dicts", [acts for _, acts in recorded])):
        gc.collect()
        t0 = time.perf_counter()
        for (game, _), acts in zip(recorded, batches, strict=True):
            fresh = Game.new(game.instance, settings, rules, game.seed)
            for seat, action in acts:
                fresh.apply(seat, action)
        timings[label] = time.perf_counter() - t0
    for (game, _), inst_seed in zip(recorded, range(len(recorded)), strict=True):
        del inst_seed
        assert game.finished

    # views after every action: every seat's and the spectator's (only the views are timed)
    view_seconds, n_views = 0.0, 0
    for (game, _), acts in zip(recorded, models, strict=True):
        fresh = Game.new(game.instance, settings, rules, game.seed)
        for seat, action in acts:
            fresh.apply(seat, action)
            t0 = time.perf_counter()
            for viewer in range(players):
                player_view(fresh, viewer)
            spectator_view(fresh)
            view_seconds += time.perf_counter() - t0
            n_views += players + 1

    # replay
    logs = [[e.to_dict() for e in game.events] for game, _ in recorded]
    n_events = sum(len(log) for log in logs)
    gc.collect()  # without it the garbage of the view pass above halves this figure (GC passes inside)
    t0 = time.perf_counter()
    for (game, _), log in zip(recorded, logs, strict=True):
        Game.replay(game.instance, settings, rules, game.seed, log)
    replay_seconds = time.perf_counter() - t0

    # one long game of >= 1,000 events
    long_settings = settings.model_copy(update={"max_turns": 400})
    long_game, _ = record_game(instances[0], rules, long_settings, seed)
    while len(long_game.events) < 1000:  # a quick win can end it early: try further seeds
        long_game, _ = record_game(rng.choice(instances), rules, long_settings, rng.randrange(10**9))
    long_log = [e.to_dict() for e in long_game.events]
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        rebuilt = Game.replay(long_game.instance, long_settings, rules, long_game.seed, long_log)
        samples.append(time.perf_counter() - t0)
    assert rebuilt.state_digest() == long_game.state_digest()
    first_thousand = []  # a log prefix is itself a valid log: the state after event 999
    for _ in range(15):
        t0 = time.perf_counter()
        Game.replay(long_game.instance, long_settings, rules, long_game.seed, long_log[:1000])
        first_thousand.append(time.perf_counter() - t0)
    by_length = view_cost_by_length(rules, instances[0], settings, seed)
    outcomes = {}
    for game, _ in recorded:
        outcomes[game.end_reason] = outcomes.get(game.end_reason, 0) + 1

    return {
        "ruleset": rules.name,
        "players": players,
        "instances": source,
        "games": games,
        "actions": n_actions,
        "events": n_events,
        "outcomes": outcomes,
        "engine_actions_per_s_models": round(n_actions / timings["models"]),
        "engine_actions_per_s_dicts": round(n_actions / timings["dicts"]),
        "games_per_s_random_policy": round(games / policy_seconds, 1),
        "actions_per_s_random_policy": round(n_actions / policy_seconds),
        "view_us": round(view_seconds / n_views * 1e6, 1),
        **by_length,
        "replay_events_per_s": round(n_events / replay_seconds),
        "replay_1000_events_ms_median": round(statistics.median(first_thousand) * 1000, 2),
        "long_game_events": len(long_log),
        "long_game_replay_ms_median": round(statistics.median(samples) * 1000, 2),
        "long_game_replay_ms_per_1000_events": round(
            statistics.median(samples) * 1000 * 1000 / len(long_log), 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--ruleset", default=None, help="default: minecraft if installed, else the first one")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = list(rule_set_dirs())
    if not names:
        sys.exit("no rule sets installed; build one first (see README)")
    name = args.ruleset or ("minecraft" if "minecraft" in names else names[0])
    rules = load_rule_set(name)
    results = [run(rules, args.games, players, args.seed) for players in (2, 3)]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(
            f"engine bench: rule set {r['ruleset']}, {r['players']} players, {r['games']} random games "
            f"({r['instances']} instances), {r['actions']} actions, {r['events']} events, "
            f"outcomes {r['outcomes']}"
        )
        print(
            f"  engine apply       {r['engine_actions_per_s_models']:>10,} actions/s (models)"
            f"   {r['engine_actions_per_s_dicts']:>10,} actions/s (JSON dicts, parsed)   target >= 20,000"
        )
        print(
            f"  random games       {r['games_per_s_random_policy']:>10,} games/s"
            f"   {r['actions_per_s_random_policy']:>10,} actions/s (policy included)"
        )
        print(f"  views              {r['view_us']:>10} us per view (every seat + spectator, every action)")
        costs, unbounded = r["view_us_by_events"], r["unbounded_view_us_by_events"]
        figures = "   ".join(f"{costs[n]} us at {n:,}" for n in VIEW_COST_LENGTHS)
        spread = max(costs.values()) / min(costs.values())
        print(
            f"  view by length     {figures} events   max/min {spread:.2f}x (target <= 1.5x; "
            f"history window {r['window_turns']} turns)"
        )
        print(
            "  without window     "
            + "   ".join(f"{unbounded[n]} us at {n:,}" for n in VIEW_COST_LENGTHS)
            + " events (the whole history in every view)"
        )
        print(
            f"  replay             {r['replay_events_per_s']:>10,} events/s"
            f"   {r['replay_1000_events_ms_median']} ms for 1,000 events (target <= 50 ms)"
            f"   {r['long_game_replay_ms_median']} ms for a whole {r['long_game_events']}-event game"
        )


if __name__ == "__main__":
    main()
