"""Environment overhead: bot-vs-bot self-play through the Gymnasium env against bare engine self-play.
Prints figures; not a pass/fail test.

    .venv/bin/python bench/bench_envs.py [--instances 40] [--repeats 2] [--json]

The same games are played three ways over the first ``--instances`` minecraft 1p_v_1p instances, each
seat a random bot seeded the same way:

- bare: :func:`agents.local.play_local` (the engine, views and the bots; nothing else);
- gym env: ``TradeCraftEnv`` built once, ``reset(seed, options={"instance": ...})`` per game, the learner
  seat's random bot reading ``info["view"]`` and sending tool calls; every step builds the narrator's
  text observation, the view JSON and the protocol-shaped ack;
- gym_lean: the same with ``narrate=False`` (no narration in ``text``; the structured parts stay);
- AEC env: ``tradecraft_v0.raw_env`` with a random bot per agent.

Overhead = env time / bare time - 1 (issue 10's target: at most 10%). Games are identical move for move
only when the bots see the same views in the same order; the figures compare work per game.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.bots.registry import make_policy
from agents.envs import tradecraft_v0
from agents.envs.core import tool_call
from agents.envs.gym_env import TradeCraftEnv
from agents.local import derive_seed, play_local
from craft_rules.loader import load_rule_set
from craft_rules.tasks import iter_instances
from server.game import GameSettings


def bare(instances: list[Any], rules: Any, seed: int) -> tuple[float, int]:
    start, events = time.perf_counter(), 0
    for index, instance in enumerate(instances):
        bots = [make_policy("random", derive_seed(seed + index, "seat", s)) for s in range(2)]
        events += len(play_local(instance, GameSettings(), rules, bots, seed + index).events)
    return time.perf_counter() - start, events


def gym(instances: list[Any], seed: int, narrate: bool = True) -> tuple[float, int]:
    env = TradeCraftEnv(instances[0], narrate=narrate)
    start, events = time.perf_counter(), 0
    for index, instance in enumerate(instances):
        _obs, info = env.reset(seed=seed + index, options={"instance": instance})
        me = make_policy("random", derive_seed(seed + index, "seat", 0))
        done = False
        while not done:
            view = info["view"]
            _obs, _reward, terminated, truncated, info = env.step(
                tool_call(me.act(view, view["legal_actions"]))
            )
            done = terminated or truncated
        events += len(env.match.game.events)
    return time.perf_counter() - start, events


def aec(instances: list[Any], seed: int) -> tuple[float, int]:
    start, events = time.perf_counter(), 0
    for index, instance in enumerate(instances):
        env = tradecraft_v0.raw_env(instance)
        env.reset(seed=seed + index)
        bots = {
            a: make_policy("random", derive_seed(seed + index, "seat", i)) for i, a in enumerate(env.agents)
        }
        for agent in env.agent_iter(max_iter=100_000):
            _obs, _reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            view = info["view"]
            env.step(tool_call(bots[agent].act(view, view["legal_actions"])))
        events += len(env.match.game.events)
    return time.perf_counter() - start, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rules = load_rule_set("minecraft")
    instances = list(iter_instances("minecraft", "1p_v_1p"))[: args.instances]
    runs: dict[str, list[float]] = {"bare": [], "gym": [], "gym_lean": [], "aec": []}
    events: dict[str, int] = {}
    for repeat in range(args.repeats):  # interleaved, so a busy machine slows every way alike
        seed = 1000 * repeat
        for name, run in (
            ("bare", lambda s=seed: bare(instances, rules, s)),
            ("gym", lambda s=seed: gym(instances, s)),
            ("gym_lean", lambda s=seed: gym(instances, s, narrate=False)),
            ("aec", lambda s=seed: aec(instances, s)),
        ):
            seconds, count = run()
            runs[name].append(seconds)
            events[name] = events.get(name, 0) + count
    best = {name: min(times) for name, times in runs.items()}
    figures = {
        "instances": len(instances),
        "repeats": args.repeats,
        "games_per_s": {name: round(len(instances) / t, 1) for name, t in best.items()},
        "ms_per_game": {name: round(1000 * t / len(instances), 2) for name, t in best.items()},
        "ms_per_game_median": {
            name: round(1000 * statistics.median(t) / len(instances), 2) for name, t in runs.items()
        },
        "events": events,
        "overhead_gym_pct": round(100 * (best["gym"] / best["bare"] - 1), 1),
        "overhead_gym_lean_pct": round(100 * (best["gym_lean"] / best["bare"] - 1), 1),
        "overhead_aec_pct": round(100 * (best["aec"] / best["bare"] - 1), 1),
        # the ways' games differ in length (the seats' seeds meet different views): per event is fairer
        "us_per_event": {name: round(1e6 * t / (events[name] / args.repeats), 1) for name, t in best.items()},
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{len(instances)} minecraft 1p_v_1p instances, best of {args.repeats}")
    for name in ("bare", "gym", "gym_lean", "aec"):
        print(
            f"  {name:<8} {figures['games_per_s'][name]:>8} games/s  "
            f"{figures['ms_per_game'][name]:>8} ms/game"
        )
    per_event = figures["us_per_event"]
    print(
        "  per event: "
        + ", ".join(f"{name} {per_event[name]} us" for name in ("bare", "gym", "gym_lean", "aec"))
        + f"  (gym env +{100 * (per_event['gym'] / per_event['bare'] - 1):.0f}%)"
    )
    print(
        f"  overhead: gym env {figures['overhead_gym_pct']}% "
        f"(narrate=False: {figures['overhead_gym_lean_pct']}%), "
        f"AEC env {figures['overhead_aec_pct']}% (target <= 10%)"
    )


if __name__ == "__main__":
    main()
