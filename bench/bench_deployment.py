"""The deployment under issue 18's load, for the README's production command and the previous gthread one:
1,000 idle WebSockets, 300 slowloris connections and 300 long polls held open while /healthz is measured
(p50/p95/p99), with the server's RSS and thread count (tests/deployment_load.py does the load).

    .venv/bin/python bench/bench_deployment.py [--websockets N] [--only new|old]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from deployment_load import OLD_COMMAND, readme_production_command, run_load, start_server


def measure(command: str, websockets: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(command, Path(tmp) / "data")
        try:
            figures = asyncio.run(run_load(server.url, server, websockets=websockets, measure_budget_s=60))
        finally:
            server.stop()
    return {"command": command, **figures.summary()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--websockets", type=int, default=1000)
    parser.add_argument("--only", choices=["new", "old"])
    args = parser.parse_args()
    commands = {"new": readme_production_command(), "old": OLD_COMMAND}
    for name, command in commands.items():
        if args.only in (None, name):
            print(json.dumps(measure(command, args.websockets)), flush=True)


if __name__ == "__main__":
    main()
