"""How long a fresh deal takes: the generated halls of settings.yaml, each difficulty band.

    python bench/bench_fresh_deals.py [--count 30] [--live 20]

First, in process, ``count`` deals per hall and band exactly as the lobby makes them (the hall's rule set,
players, crafting-runs rule and max_attempts; draws repeating a shipped instance refused), each from a new
secret seed: median / p90 / max milliseconds and draws. Then, unless ``--live 0``, a live server
(run_server.py, SQLite, real sockets) with the real halls: ``live`` games created over REST in each
generated hall (a new user each, band drawn by the server), printing the creation request's latency and
the deal time the game records for researchers (``instance_choice.seconds``).
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e_helpers import ServerProcess, write_config  # noqa: E402

from craft_rules.loader import load_rule_set  # noqa: E402
from craft_rules.taskgen import GenerationError, generate_instance  # noqa: E402
from server.table.config import DEFAULT_CONFIG_PATH, load_settings  # noqa: E402
from server.web.lobby import DIFFICULTY_BANDS, repeats_published  # noqa: E402


def row(label: str, seconds: list[float], extra: str = "") -> str:
    ms = sorted(s * 1000 for s in seconds)
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    median = statistics.median(ms)
    return f"{label:<32} median {median:7.1f} ms  p90 {p90:7.1f} ms  max {ms[-1]:7.1f} ms  {extra}"


def in_process(count: int) -> None:
    settings = load_settings(DEFAULT_CONFIG_PATH, environ={})
    print(f"in process: {count} deals per hall and band (new secret seed each)")
    for name, hall in settings.halls.items():
        if hall.instances.choice != "generated":
            continue
        rules = load_rule_set(hall.ruleset)
        runs = hall.game_settings().crafting_runs
        everything: list[float] = []
        for band in DIFFICULTY_BANDS:
            times: list[float] = []
            draws: list[int] = []
            failed = 0
            for _ in range(count):
                started = time.perf_counter()
                try:
                    dealt = generate_instance(
                        rules,
                        hall.players,
                        secrets.randbits(128),
                        band=band,
                        crafting_runs=runs,
                        mode=hall.mode_name,
                        max_attempts=hall.instances.max_attempts,
                        reject=lambda instance, ruleset=hall.ruleset: repeats_published(instance, ruleset),
                    )
                    draws.append(dealt.attempts)
                except GenerationError:
                    failed += 1
                times.append(time.perf_counter() - started)
            everything += times
            extra = (
                f"draws median {statistics.median(draws or [0]):g} max {max(draws or [0])}  failed {failed}"
            )
            print(row(f"  {name} {band}", times, extra))
        print(row(f"  {name} (all bands)", everything))


def live(games: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        config = write_config(Path(folder))
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        real = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))["halls"]
        generated = [name for name, hall in real.items() if hall["instances"]["choice"] == "generated"]
        for name in generated:
            data["halls"][name] = real[name]
        config.write_text(yaml.safe_dump(data), encoding="utf-8")
        server = ServerProcess(config).start()
        admin = ("admin", "test-admin-password")
        print(f"live server: {games} games created over REST per generated hall (band drawn by the server)")
        try:
            for name in generated:
                latencies: list[float] = []
                made: list[str] = []
                for index in range(games):
                    http = requests.Session()
                    http.post(server.url + "/api/login", json={"name": f"{name}-{index}"}, timeout=10)
                    started = time.perf_counter()
                    answer = http.post(server.url + "/api/games", json={"hall": name}, timeout=60)
                    latencies.append(time.perf_counter() - started)
                    answer.raise_for_status()
                    made.append(answer.json()["game"]["game_id"])
                records = requests.get(
                    f"{server.url}/api/admin/games?limit=10000", auth=admin, timeout=30
                ).json()
                dealt = [g["instance_choice"]["seconds"] for g in records["games"] if g["game_id"] in made]
                print(row(f"  {name} create request", latencies))
                print(row(f"  {name} deal (recorded)", dealt))
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30, help="deals per hall and band, in process")
    parser.add_argument("--live", type=int, default=20, help="games per hall on a live server; 0 = skip")
    args = parser.parse_args()
    in_process(args.count)
    if args.live:
        live(args.live)


if __name__ == "__main__":
    main()
