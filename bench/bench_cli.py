"""Cold start of the `tradecraft` command: whole processes, as a user runs them.

Prints the median, min and max wall time of each command over repeated runs (like hyperfine), the median
CPU time (user + system) of the process, and which heavy packages each one imported. On a shared, busy
machine the wall time waits for a core; the CPU time does not, so it is the figure to compare there.
Target: <= 0.4 s median for `craft possible` and `play` (they need no
server and solve no linear program; the original command took ~0.87 s because it imported scipy's
optimiser and Flask for everything).

    python bench/bench_cli.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("flask", "flask_socketio", "socketio", "scipy", "numpy", "pymongo")
HEAVY += ("langchain", "langchain_core", "langchain_openai", "openai", "gymnasium", "pettingzoo")

COMMANDS: dict[str, list[str]] = {
    "craft possible": ["craft", "possible", "--hand", '{"oak_planks": 2, "coal": 1, "stick": 3}'],
    "play": ["play"],
    "--help": ["--help"],
}


def executable() -> list[str]:
    """The installed `tradecraft` script next to this interpreter, else ``python -m tradecraft.cli``."""
    script = Path(sys.executable).with_name("tradecraft")
    if script.exists():
        return [str(script)]
    found = shutil.which("tradecraft")
    return [found] if found else [sys.executable, "-m", "tradecraft.cli"]


def heavy_imports(args: list[str]) -> list[str]:
    probe = (
        "import sys, json\nfrom tradecraft.cli import main\n"
        f"sys.argv = ['tradecraft', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def child_env() -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE: as a user's shell, the warm-up run writes the
    bytecode cache, so the timed runs do not compile the project's sources again each time (~0.25 s)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_command(args: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of each run of the command as a whole process."""
    command = [*executable(), *args]
    env = child_env()
    subprocess.run(command, capture_output=True, check=True, cwd=ROOT, env=env)  # warm the caches
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, cwd=ROOT, env=env)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="runs per command (default 15)")
    args = parser.parse_args()
    print(f"tradecraft cold start ({args.runs} runs each, {' '.join(executable())})")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"{'command':<16} {'median':>8} {'min':>8} {'max':>8} {'cpu med':>8}  heavy imports")
    for label, argv in COMMANDS.items():
        times, cpus = time_command(argv, args.runs)
        heavy = ", ".join(heavy_imports(argv)) or "none"
        print(
            f"{label:<16} {statistics.median(times):>7.3f}s {min(times):>7.3f}s {max(times):>7.3f}s "
            f"{statistics.median(cpus):>7.3f}s  {heavy}"
        )
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
