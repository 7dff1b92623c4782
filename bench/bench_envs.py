"""Environment overhead: bot-vs-bot self-play through the envs against bare engine self-play.
Prints figures; not a pass/fail test.

    .venv/bin/python bench/bench_envs.py [--instances 40] [--repeats 5] [--protocol paper] [--json]

The same games are played each way over the first ``--instances`` minecraft 1p_v_1p instances: the
same settings (the env's defaults for each instance; with ``--protocol paper`` the paper's protocol of
:func:`agents.tournament.settings_for` for every game: 15 turns, whole runs, no passing, V0+V1+V2 reports
every turn, the first seat proposing first), the same game seeds, a random bot per seat
seeded the same way (``derive_seed(seed, "seat", s)``). The random bot draws from its seed and its own
place in the game only, so every way plays the same moves; only the order in which the two seats'
simultaneous craft-phase moves enter the log may differ (bare and AEC alternate, the Gymnasium env lets
the opponent finish first). The bench checks that each game has the same events (as a multiset), the
same winners and the same end as the bare game, and says so.

- bare: :func:`agents.local.play_local` (the engine, a view and the legal types per move, the bots);
- gym: ``TradeCraftEnv`` (default observation: narrated text + the structured parts), built once,
  ``reset(seed, options={"instance": ...})`` per game, seat 0's bot reading ``info["view"]``;
- gym_lean: the same with ``narrate=False``;
- gym_acks: the default observation with ``ack_views=True`` (the ack in ``info["result"]`` carries the
  view right after the agent's action, as a server's does: one more view per step);
- aec: ``tradecraft_v0.raw_env`` built once, a bot per agent reading ``env.last()`` (observation and
  info of the selected agent, as PettingZoo's loop does).

Measuring on a shared machine: one untimed warm-up round, then ``--repeats`` rounds; each round runs
every way once (the order rotates between rounds), with a garbage collection before each. Time is
taken both as process CPU time (what the work costs; hardly moved by other jobs on the machine) and
wall time. The overhead of a way is computed per round against that round's bare run; the median over
rounds is printed with the lowest and highest.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.bots.registry import make_policy
from agents.envs import tradecraft_v0
from agents.envs.core import make_settings, tool_call
from agents.envs.gym_env import TradeCraftEnv
from agents.local import derive_seed, play_local
from agents.tournament import settings_for
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance, iter_instances
from server.game import GameSettings

WAYS = ("bare", "gym", "gym_lean", "gym_acks", "aec")
Games = list[Any]


def game_digest(game: Any) -> str:
    """The game's events in a canonical order (the seats' simultaneous moves may interleave either way),
    its winners and end reason: equal for the same moves."""
    records = sorted(json.dumps([e.type, e.actor, e.payload], sort_keys=True) for e in game.events)
    return hashlib.sha256(json.dumps([records, game.winners, game.end_reason]).encode()).hexdigest()


def bots_for(seed: int, players: int = 2) -> list[Any]:
    return [make_policy("random", derive_seed(seed, "seat", s)) for s in range(players)]


def bare(instances: list[TaskInstance], seed: int, settings: GameSettings | None = None) -> Games:
    rules = load_rule_set("minecraft")
    games = []
    for index, instance in enumerate(instances):
        result = play_local(
            instance, make_settings(settings, instance), rules, bots_for(seed + index), seed + index
        )
        games.append(result.game)
    return games


def gym(
    instances: list[TaskInstance],
    seed: int,
    narrate: bool = True,
    ack_views: bool = False,
    settings: GameSettings | None = None,
) -> Games:
    env = TradeCraftEnv(instances[0], narrate=narrate, ack_views=ack_views, settings=settings)
    games = []
    for index, instance in enumerate(instances):
        _obs, info = env.reset(seed=seed + index, options={"instance": instance})
        me = bots_for(seed + index)[0]  # the opponent's bot is seeded the same way by the env
        done = False
        while not done:
            view = info["view"]
            _obs, _reward, terminated, truncated, info = env.step(
                tool_call(me.act(view, view["legal_actions"]))
            )
            done = terminated or truncated
        games.append(env.match.game)
    return games


def aec(instances: list[TaskInstance], seed: int, settings: GameSettings | None = None) -> Games:
    env = tradecraft_v0.raw_env(instances[0], settings=settings)
    games = []
    for index, instance in enumerate(instances):
        env.reset(seed=seed + index, options={"instance": instance})
        bots = dict(zip(env.agents, bots_for(seed + index, len(env.agents)), strict=True))
        for agent in env.agent_iter(max_iter=100_000):
            _obs, _reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            view = info["view"]
            env.step(tool_call(bots[agent].act(view, view["legal_actions"])))
        games.append(env.match.game)
    return games


def timed(run: Callable[[], Games]) -> tuple[float, float, int, list[str]]:
    """CPU and wall seconds of ``run``; then (not timed) its events and its games' digests."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    games = run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu, wall, sum(len(game.events) for game in games), [game_digest(game) for game in games]


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--protocol",
        choices=("env", "paper"),
        default="env",
        help="the env's default settings, or the paper's",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    instances = list(iter_instances("minecraft", "1p_v_1p"))[: args.instances]
    paper = settings_for(instances[0], 0) if args.protocol == "paper" else None
    runs: dict[str, Callable[[list[TaskInstance]], Games]] = {
        "bare": lambda chosen: bare(chosen, args.seed, paper),
        "gym": lambda chosen: gym(chosen, args.seed, settings=paper),
        "gym_lean": lambda chosen: gym(chosen, args.seed, narrate=False, settings=paper),
        "gym_acks": lambda chosen: gym(chosen, args.seed, ack_views=True, settings=paper),
        "aec": lambda chosen: aec(chosen, args.seed, paper),
    }
    for name in WAYS:  # warm-up: imports, rule set indexes, text spaces
        runs[name](instances[:3])
    cpu: dict[str, list[float]] = {name: [] for name in WAYS}
    wall: dict[str, list[float]] = {name: [] for name in WAYS}
    events: dict[str, int] = {}
    digests: dict[str, list[str]] = {}
    for repeat in range(args.repeats):
        order = WAYS[repeat % len(WAYS) :] + WAYS[: repeat % len(WAYS)]
        for name in order:
            seconds_cpu, seconds_wall, count, digest = timed(lambda n=name: runs[n](instances))
            cpu[name].append(seconds_cpu)
            wall[name].append(seconds_wall)
            events[name], digests[name] = count, digest
    games = len(instances)
    same = {name: digests[name] == digests["bare"] for name in WAYS}
    figures: dict[str, Any] = {
        "protocol": args.protocol,
        "instances": games,
        "repeats": args.repeats,
        "events": events,
        "same_games_as_bare": same,
        "ms_per_game_cpu": {n: {k: 1000 * v / games for k, v in spread(cpu[n]).items()} for n in WAYS},
        "ms_per_game_wall": {n: {k: 1000 * v / games for k, v in spread(wall[n]).items()} for n in WAYS},
        "games_per_s_cpu": {n: games / statistics.median(cpu[n]) for n in WAYS},
        "games_per_s_wall": {n: games / statistics.median(wall[n]) for n in WAYS},
        # paired with the same round's bare run, so a load swing between rounds cancels out
        "overhead_pct_cpu": {
            n: spread([100 * (t / b - 1) for t, b in zip(cpu[n], cpu["bare"], strict=True)]) for n in WAYS[1:]
        },
        "overhead_pct_wall": {
            n: spread([100 * (t / b - 1) for t, b in zip(wall[n], wall["bare"], strict=True)])
            for n in WAYS[1:]
        },
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"{games} minecraft 1p_v_1p instances, {args.protocol} protocol, {args.repeats} interleaved rounds "
        "(median, [min-max]); "
        f"same games as bare: {'yes' if all(same.values()) else same}"
    )
    for name in WAYS:
        c, w = figures["ms_per_game_cpu"][name], figures["ms_per_game_wall"][name]
        print(
            f"  {name:<8} {figures['games_per_s_cpu'][name]:7.1f} games/s  "
            f"cpu {c['median']:6.2f} ms/game [{c['min']:.2f}-{c['max']:.2f}]   "
            f"wall {w['median']:6.2f} ms/game [{w['min']:.2f}-{w['max']:.2f}]"
        )
    for name in WAYS[1:]:
        c, w = figures["overhead_pct_cpu"][name], figures["overhead_pct_wall"][name]
        print(
            f"  overhead {name:<8} cpu {c['median']:+6.1f}% [{c['min']:+.1f} .. {c['max']:+.1f}]   "
            f"wall {w['median']:+6.1f}% [{w['min']:+.1f} .. {w['max']:+.1f}]"
            + ("   (target <= 10%)" if name == "gym" else "")
        )


if __name__ == "__main__":
    main()
