"""How long a study's waiting room takes to match, and what a matcher round costs.

    .venv/bin/python bench/bench_study_matching.py [--pairs 20] [--stored 1000]

1. Time to match, over a live server (run_server.py, a SQLite file, the matcher's background rounds): for
   each pair, the first participant enters the waiting room, the second follows 0-1 s later; the time from
   the second's arrival in the waiting room until both records say ``playing`` (the matched write comes
   last: their game is created in the study's hall, both are seated and it runs). Pairs arrive over
   ``--pairs`` seconds. p50 / p95 / max in milliseconds.
2. One matcher round (server/web/study/matching.py ``StudyMatcher.round``) in-process over a SQLite file
   holding ``--stored`` finished participants of one study plus a waiting pair: the round reads every
   participant of every study, so its cost grows with the study's size. p50 / max in milliseconds.
Prints a table; not a pass/fail test.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from e2e_helpers import ServerProcess, write_config  # noqa: E402
from in_process import InProcessApp  # noqa: E402

from server.store import Store, open_store  # noqa: E402
from server.web.study import flow  # noqa: E402
from server.web.study.definition import parse_definition  # noqa: E402
from server.web.study.matching import StudyMatcher  # noqa: E402
from server.web.study.records import Participant, load_participant, load_study, save_study  # noqa: E402

STUDY: dict[str, Any] = {
    "title": "Matching benchmark",
    "hall": "duel",
    "consent": "Benchmark.",
    "practice": False,
    "codes": {"completed": "C1", "screened_out": "C2", "no_partner": "C3", "dropped": "C4"},
    "recruitment": {"session_param": None},
    "deadlines": {},
    "capacity": {"participants": 100_000},
    "waiting_room": {"max_wait_seconds": 600, "fill_in": {"kind": "bot", "bot": "random"}},
    "dropout": {"idle_timeouts": None},
}


def new_study(store: Store, study_id: str) -> None:
    save_study(store, parse_definition({**STUDY, "id": study_id}))


def arrive_waiting(store: Store, study_id: str, number: int) -> Participant:
    record = load_study(store, study_id)
    participant = flow.arrive(store, record, {"PROLIFIC_PID": f"bench{number:06d}"})
    return flow.give_consent(store, record.parsed(), participant.id, True)


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def row(what: str, samples: list[float]) -> None:
    print(
        f"{what:<52} p50 {statistics.median(samples) * 1e3:8.1f} ms   "
        f"p95 {percentile(samples, 0.95) * 1e3:8.1f} ms   max {max(samples) * 1e3:8.1f} ms   "
        f"(n={len(samples)})"
    )


def bench_time_to_match(folder: Path, pairs: int) -> None:
    uri = f"sqlite:///{folder / 'match.db'}"
    server = ServerProcess(write_config(folder / "server", database_uri=uri)).start()
    store = open_store(uri)
    samples: list[float] = []
    recorded: list[float] = []
    lock = threading.Lock()
    try:
        new_study(store, "bench")

        def pair(index: int) -> None:
            first = arrive_waiting(store, "bench", 2 * index)
            time.sleep(random.uniform(0, 1))
            second = arrive_waiting(store, "bench", 2 * index + 1)
            arrived = time.perf_counter()
            while True:
                people = [load_participant(store, "bench", p.id) for p in (first, second)]
                if all(p is not None and p.step == "playing" for p in people):
                    break
                if time.perf_counter() - arrived > 30:
                    raise RuntimeError(f"pair {index} not matched in 30 s")
                time.sleep(0.01)
            with lock:
                samples.append(time.perf_counter() - arrived)
                # the records' own clock: the later matched write after the second entered the waiting room
                matched_at = max(p.games[-1].matched_at for p in people if p)
                recorded.append(matched_at - (second.waiting_since or 0))

        threads = []
        for index in range(pairs):
            thread = threading.Thread(target=pair, args=(index,))
            thread.start()
            threads.append(thread)
            time.sleep(1)
        for thread in threads:
            thread.join()
    finally:
        store.close()
        server.stop()
    row("time to match (2nd arrival -> both playing, polled)", samples)
    row("time to match (records: waiting_since -> matched_at)", recorded)


def bench_round(folder: Path, stored: int) -> None:
    app = InProcessApp(write_config(folder / "app", database_uri=f"sqlite:///{folder / 'round.db'}"))
    try:
        for stop in app.services.on_close:  # this benchmark runs the rounds itself
            if isinstance(getattr(stop, "__self__", None), StudyMatcher):
                stop()
        store = app.services.store
        new_study(store, "rounds")
        record = load_study(store, "rounds")
        definition = record.parsed()
        for number in range(stored):
            participant = flow.arrive(store, record, {"PROLIFIC_PID": f"old{number:06d}"})
            flow.give_consent(store, definition, participant.id, False)  # done (declined): read, skipped
        matcher = StudyMatcher(app.services)
        idle = []
        for _ in range(20):
            started = time.perf_counter()
            matcher.round()
            idle.append(time.perf_counter() - started)
        row(f"round, {stored} finished participants, none waiting", idle)
        matching = []
        for number in range(10):
            for extra in range(2):
                arrive_waiting(store, "rounds", 10 * stored + 2 * number + extra)
            started = time.perf_counter()
            report = matcher.round()
            matching.append(time.perf_counter() - started)
            assert len(report.games) == 1, report
        row(f"round, {stored} finished participants, a pair matched", matching)
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--stored", type=int, default=1000)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder:
        bench_time_to_match(Path(folder), args.pairs)
        bench_round(Path(folder), args.stored)


if __name__ == "__main__":
    main()
