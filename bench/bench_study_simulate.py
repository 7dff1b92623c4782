"""A whole study run by simulated participants (issue 22's "done means"): ``tradecraft study simulate`` with
60 participants arriving over 60 s on the example study (studies/duel_pilot.yaml), 10% failing the
comprehension check and 10% dropping out mid-game, on its own server (run_server.py, a temporary SQLite file).
Prints the checks (right codes, nobody paid twice, server errors) and the figures: time-to-match p50/p95,
games played, wall time (agents/study_simulation.py does the run).

    .venv/bin/python bench/bench_study_simulate.py [--participants 60] [--arrivals-over 60] [--study FILE]
        [--real-waits] [--json]

``--real-waits`` keeps the study's own waits (3 min before a bot fills in, 90 s before a dropout is noticed);
by default the run is sped up (agents.study_simulation.sped_up).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.study_simulation import simulate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=60)
    parser.add_argument("--arrivals-over", type=float, default=60.0)
    parser.add_argument("--drop-rate", type=float, default=0.1)
    parser.add_argument("--fail-quiz-rate", type=float, default=0.1)
    parser.add_argument("--study", type=Path, default=ROOT / "studies" / "duel_pilot.yaml")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--real-waits", action="store_true", help="the study's own waits (slow)")
    parser.add_argument("--json", action="store_true", help="the whole report as JSON")
    args = parser.parse_args()
    report = simulate(
        args.study,
        args.participants,
        args.arrivals_over,
        args.drop_rate,
        args.fail_quiz_rate,
        seed=args.seed,
        speed_up=not args.real_waits,
        timeout=3600,
        progress=True,
    )
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print(report.table())
        print(json.dumps({"bench": "study_simulate", "ok": report.ok, **report.figures}))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
