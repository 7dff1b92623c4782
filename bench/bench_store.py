"""Store benchmark: append latency (p50/p99) and throughput, single-threaded and with 4 threads, plus
load_events speed, for the SQLite file backend (WAL) with synchronous=FULL (the default) and NORMAL.

    .venv/bin/python bench/bench_store.py [--appends 2000] [--threads 4] [--dir /tmp/...]

Each append is one action's batch of 2 events (an action plus the phase change it causes), the common case
for the server. Prints a table; not a pass/fail test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server.store import Store, open_store

EVENTS_PER_APPEND = 2


def make_event(seq: int, actor: int) -> dict[str, Any]:
    """An event about the size of a real proposal."""
    return {
        "seq": seq,
        "type": "proposed",
        "actor": actor,
        "payload": {
            "turn": seq // 8,
            "proposer": actor,
            "to": 1 - actor,
            "offer": {"oak_planks": 2, "stick": 1},
            "request": {"coal": 1},
            "message": "I can give you planks for a piece of coal, deal?",
        },
        "visibility": [0, 1],
    }


def append_run(store: Store, game_id: str, appends: int, latencies: list[float]) -> None:
    store.create_game(game_id, {"mode": "bench", "status": "running"})
    seq = 0
    for _ in range(appends):
        batch = [make_event(seq + i, (seq + i) % 2) for i in range(EVENTS_PER_APPEND)]
        started = time.perf_counter()
        store.append_events(game_id, batch)
        latencies.append(time.perf_counter() - started)
        seq += EVENTS_PER_APPEND


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_appends(url: str, threads: int, appends: int, label: str) -> None:
    store = open_store(url)
    per_thread: list[list[float]] = [[] for _ in range(threads)]
    workers = [
        threading.Thread(target=append_run, args=(store, f"{label}-{index}", appends, per_thread[index]))
        for index in range(threads)
    ]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    store.close()
    latencies = [value for values in per_thread for value in values]
    events = len(latencies) * EVENTS_PER_APPEND
    print(
        f"{label:<34} {threads:>3} thr  appends {len(latencies):>6}  "
        f"p50 {percentile(latencies, 0.50) * 1000:7.3f} ms  "
        f"p99 {percentile(latencies, 0.99) * 1000:7.3f} ms  "
        f"{events / elapsed:9.0f} events/s"
    )


def bench_load(url: str, events: int) -> None:
    store = open_store(url)
    store.create_game("load", {"mode": "bench"})
    for start in range(0, events, 100):
        store.append_events(
            "load", [make_event(seq, seq % 2) for seq in range(start, min(events, start + 100))]
        )
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        loaded = store.load_events("load")
        timings.append(time.perf_counter() - started)
        assert len(loaded) == events
    tail_timings = []
    for _ in range(200):
        started = time.perf_counter()
        store.load_events("load", after_seq=events - 3)
        tail_timings.append(time.perf_counter() - started)
    store.close()
    median = statistics.median(timings)
    print(
        f"load_events: {events} events in {median * 1000:.2f} ms (median of 20) "
        f"= {events / median:,.0f} events/s; "
        f"last 2 (after_seq) {statistics.median(tail_timings) * 1000:.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--appends", type=int, default=2000, help="append calls per thread")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to put the database (default: a temp dir)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"SQLite file backend (WAL) in {tmp}; {EVENTS_PER_APPEND} events per append")
        for synchronous in ("FULL", "NORMAL"):
            url = f"sqlite:///{tmp}/{synchronous.lower()}.db?synchronous={synchronous}"
            bench_appends(url, 1, args.appends, f"synchronous={synchronous}")
            bench_appends(url, args.threads, args.appends // 2, f"synchronous={synchronous} threads")
        bench_load(f"sqlite:///{tmp}/load.db", 5000)


if __name__ == "__main__":
    main()
