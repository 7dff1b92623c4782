"""Decision latency of the ToM-k bots on 1-vs-1 minecraft (the paper protocol), and games per second.

Plays each ToM-k bot against ToM-1 on the first instances of the ``paper`` set (after one warm-up game
per instance, so the per-pool requirement cache is filled as in a tournament worker) and prints the
median and p99 of its ``act`` calls (trade and ToM-report decisions; craft steps are planner calls).
Target: ToM-2 median <= 50 ms. Usage: ``python bench/bench_tomk.py [instances]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from agents.bots.registry import make_policy
from agents.local import play_local
from agents.tournament import settings_for
from craft_rules.loader import load_rule_set
from craft_rules.tasks import get_instance, instance_set_ids


class Timed:
    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.times: list[float] = []

    def observe(self, events: list[dict[str, Any]]) -> None:
        self.policy.observe(events)

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        start = time.perf_counter()
        action: dict[str, Any] = self.policy.act(view, legal)
        self.times.append(time.perf_counter() - start)
        return action


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rules = load_rule_set("minecraft")
    ids = instance_set_ids("paper")[:count]
    print(f"ToM-k decision latency, 1-vs-1 minecraft paper set, {count} instances, opponent tom1")
    print(f"{'bot':<6}{'decisions':>10}{'median ms':>11}{'p99 ms':>9}{'games/s':>9}")
    for name in ("tom0", "tom1", "tom2", "tom3"):
        times: list[float] = []
        games = 0
        spent = 0.0
        for index, instance_id in enumerate(ids):
            instance = get_instance(instance_id)
            for repeat in range(2):  # the first game fills the caches; only the second is measured
                bot = Timed(make_policy(name, repeat))
                start = time.perf_counter()
                play_local(
                    instance, settings_for(instance, index), rules, [bot, make_policy("tom1", 9)], repeat
                )
                if repeat == 1:
                    spent += time.perf_counter() - start
                    games += 1
                    times += bot.times
        times.sort()
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(
            f"{name:<6}{len(times):>10}{1000 * statistics.median(times):>11.1f}{1000 * p99:>9.1f}"
            f"{games / spent:>9.2f}"
        )


if __name__ == "__main__":
    main()
