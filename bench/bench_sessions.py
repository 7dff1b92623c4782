"""What server-side sessions cost per request: the session check alone, and over a live server.

    .venv/bin/python bench/bench_sessions.py [--requests 2000]

1. ``Sessions.load`` on a SQLite file store (the check every cookie-carrying request and socket event runs:
   the session record and the user's epoch, two key reads): p50 / p99 in microseconds.
2. A live server (run_server.py, SQLite, real sockets): ``GET /api/me`` without a cookie, with a session
   cookie and with an API token, and a Socket.IO ``whoami`` round trip on a cookie-opened and a token-opened
   socket: p50 / p99 in milliseconds. Prints a table; not a pass/fail test.
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

from e2e_helpers import ADMIN, Client, ServerProcess, write_config  # noqa: E402

from server.store import open_store  # noqa: E402
from server.table.config import Settings  # noqa: E402
from server.web.sessions import Sessions, StoredSession  # noqa: E402


def timed(call: Callable[[], Any], times: int) -> list[float]:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def row(what: str, samples: list[float], unit: float, unit_name: str) -> None:
    p99 = statistics.quantiles(samples, n=100)[98]
    p50 = statistics.median(samples)
    print(f"{what:<44} p50 {p50 * unit:8.1f} {unit_name}   p99 {p99 * unit:8.1f} {unit_name}")


def bench_check(folder: Path, times: int) -> None:
    store = open_store(f"sqlite:///{folder / 'bench.db'}")
    sessions = Sessions(Settings(), store, "bench-secret", socketio=None)  # type: ignore[arg-type]
    user = store.create_user("Bench")
    session_id = sessions._create(user["id"], None)
    assert sessions.load(session_id) is not None
    row("Sessions.load (2 SQLite key reads)", timed(lambda: sessions.load(session_id), times), 1e6, "us")
    row("Sessions.load, unknown id (1 read)", timed(lambda: sessions.load("x" * 43), times), 1e6, "us")
    assert isinstance(StoredSession(), dict)
    store.close()


def bench_live(folder: Path, times: int) -> None:
    server = ServerProcess(write_config(folder / "live")).start()
    try:
        anonymous = requests.Session()
        person = Client(server.url, "Bench")
        token = requests.post(
            server.url + "/api/admin/tokens", json={"name": "bench"}, auth=ADMIN, timeout=10
        )
        agent = Client(server.url, token=token.json()["token"])
        url = server.url + "/api/me"
        for what, http in (
            ("no cookie", anonymous),
            ("session cookie", person.http),
            ("API token", agent.http),
        ):
            http.get(url, timeout=10)
            row(f"GET /api/me, {what}", timed(lambda h=http: h.get(url, timeout=10), times), 1e3, "ms")
        for what, client in (("cookie", person), ("token", agent)):
            client.connect()
            client.call("whoami", {})
            row(
                f"socket whoami, {what}-opened",
                timed(lambda c=client: c.call("whoami", {}), times),
                1e3,
                "ms",
            )
            client.close()
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        bench_check(Path(tmp), args.requests * 5)
        bench_live(Path(tmp), args.requests)


if __name__ == "__main__":
    main()
