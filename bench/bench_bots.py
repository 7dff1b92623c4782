"""Decision latency of every built-in bot on 1-vs-1 minecraft (the paper protocol), and bot-vs-bot games/s.

Each bot plays ToM-1 on the first instances of the ``paper`` set (whole runs, 15 turns, no passing, V0/V1/V2
reports every turn). Each instance is played twice and only the second game is measured, so the per-pool
requirement cache is warm as in a tournament worker. Printed per bot: its ``act`` calls (trade decisions,
ToM reports and craft steps), their median and p99 in ms, and the games/s of the measured games. Then
games/s of a few bot-vs-bot pairings (whole games, both bots' time). Target: ToM-2 median <= 50 ms.

Usage: ``python bench/bench_bots.py [instances] [bots...]`` (default 8 instances, every bot below).
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

BOTS = (
    "random",
    "planner",
    "tom0",
    "tom1",
    "tom2",
    "tom3",
    "always_accept",
    "always_reject",
    "fixed_offer",
    "rational",
    "item_fixated",
    "tit_for_tat",
    "best_response",
)
PAIRINGS = (
    ("random", "random"),
    ("planner", "planner"),
    ("planner", "tom1"),
    ("tom1", "tom0"),
    ("tom2", "tom1"),
)


class Timed:
    """Times a policy's ``act`` calls, by the kind of decision."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.times: list[float] = []

    def observe(self, events: list[dict[str, Any]]) -> None:
        hook = getattr(self.policy, "observe", None)
        if hook is not None:
            hook(events)

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        start = time.perf_counter()
        action: dict[str, Any] = self.policy.act(view, legal)
        self.times.append(time.perf_counter() - start)
        return action


def _games(
    a: str, b: str, ids: list[str], rules: Any, measure_seat: int | None
) -> tuple[list[float], int, float]:
    times: list[float] = []
    games = 0
    spent = 0.0
    for index, instance_id in enumerate(ids):
        instance = get_instance(instance_id)
        for repeat in range(2):  # the first game fills the caches; only the second is measured
            seats = [Timed(make_policy(a, repeat)), Timed(make_policy(b, 9))]
            start = time.perf_counter()
            play_local(instance, settings_for(instance, index), rules, seats, repeat)
            if repeat == 1:
                spent += time.perf_counter() - start
                games += 1
                if measure_seat is not None:
                    times += seats[measure_seat].times
    return times, games, spent


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    bots = sys.argv[2:] or list(BOTS)
    rules = load_rule_set("minecraft")
    ids = instance_set_ids("paper")[:count]
    print(f"Decision latency, 1-vs-1 minecraft paper set, {count} instances, opponent tom1")
    print(f"{'bot':<14}{'decisions':>10}{'median ms':>11}{'p99 ms':>9}{'games/s':>9}")
    for name in bots:
        times, games, spent = _games(name, "tom1", ids, rules, measure_seat=0)
        times.sort()
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(
            f"{name:<14}{len(times):>10}{1000 * statistics.median(times):>11.2f}{1000 * p99:>9.1f}"
            f"{games / spent:>9.2f}"
        )
    print()
    print("Bot-vs-bot games/s (whole games, both bots)")
    for a, b in PAIRINGS:
        _, games, spent = _games(a, b, ids, rules, measure_seat=None)
        print(f"{a + ' vs ' + b:<22}{games / spent:>9.2f}")


if __name__ == "__main__":
    main()
