"""What the admin dashboard's polling costs the server, over a live server (run_server.py, SQLite, real HTTP).

    .venv/bin/python bench/bench_admin_dashboard.py [--games 50] [--participants 66] [--rounds 40]

A page polls every 2 s (docs/admin.md). Printed, p50 / p95 in milliseconds:

1. the home page's ``GET /api/admin/overview`` with ``--games`` running duels (each with a proposal made);
2. one game page's round: the researcher view, the events after the last one seen, the logged problems;
3. a study page's ``GET /api/admin/studies/<id>`` with ``--participants`` participants spread over the steps
   (the shipped pilot study, written to the server's store by the study core as another worker would).

Prints a table; not a pass/fail test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from e2e_helpers import ADMIN_PASSWORD, DUEL_TRADE, ServerProcess, write_config  # noqa: E402

from server.store import open_store  # noqa: E402
from server.table.config import load_settings  # noqa: E402
from server.web.study import flow  # noqa: E402
from server.web.study.definition import load_definition  # noqa: E402
from server.web.study.records import save_study  # noqa: E402


def timed(call: Callable[[], Any], times: int) -> str:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    p95 = samples[max(0, int(len(samples) * 0.95) - 1)]
    return f"{statistics.median(samples):8.1f} {p95:8.1f}"


def running_duels(url: str, count: int) -> list[str]:
    games = []
    for n in range(count):
        ada, bob = requests.Session(), requests.Session()
        ada.post(f"{url}/api/login", json={"name": f"Ada {n}"}, timeout=15).raise_for_status()
        bob.post(f"{url}/api/login", json={"name": f"Bob {n}"}, timeout=15).raise_for_status()
        game = ada.post(f"{url}/api/games", json={"hall": "duel", "join": True}, timeout=15).json()["game"]
        bob.post(f"{url}/api/games/{game['game_id']}/join", json={}, timeout=15).raise_for_status()
        ada.post(f"{url}/api/games/{game['game_id']}/actions/propose", json=DUEL_TRADE, timeout=15)
        games.append(game["game_id"])
    return games


def study_participants(config: Path, count: int) -> str:
    store = open_store(load_settings(config, environ={}).database_uri)
    try:
        record = save_study(store, load_definition(ROOT / "studies" / "duel_pilot.yaml"))
        definition = record.parsed()
        for n in range(count):
            participant = flow.arrive(store, record, {"PROLIFIC_PID": f"{n:024x}"})
            if n % 3:
                flow.give_consent(store, definition, participant.id, True)
            if n % 3 == 2:
                flow.send_message(store, definition, participant.id, "Are you there?")
        return definition.id
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=50)
    parser.add_argument("--participants", type=int, default=66)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-admin-"))
    config = write_config(folder)
    server = ServerProcess(config).start()
    try:
        games = running_duels(server.url, args.games)
        study = study_participants(config, args.participants)
        admin = requests.Session()
        admin.post(
            f"{server.url}/api/admin/login", json={"password": ADMIN_PASSWORD}, timeout=15
        ).raise_for_status()
        game = f"{server.url}/api/admin/games/{games[0]}"

        def page_round() -> None:
            for path in ("", "/events?after=3", "/errors"):
                admin.get(game + path, timeout=15).raise_for_status()

        rows = [
            (
                f"overview, {args.games} running games",
                lambda: admin.get(f"{server.url}/api/admin/overview", timeout=15),
            ),
            ("game page round (3 requests)", page_round),
            (
                f"study page, {args.participants} participants",
                lambda: admin.get(f"{server.url}/api/admin/studies/{study}", timeout=15),
            ),
        ]
        print(f"{'request':45} {'p50 ms':>8} {'p95 ms':>8}")
        for name, call in rows:
            print(f"{name:45} {timed(call, args.rounds)}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
