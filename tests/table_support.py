"""In-process server workers for the table tests: a ``Table`` and a ``Lobby`` over a store, pushes recorded,
as one server process holds them (several over one SQLite file stand for several processes); and the
people who play in them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from server.store import open_store
from server.table.config import Settings
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.table.timers import DeadlineScheduler
from server.table.transport import PushTransport
from server.web.lobby import Lobby

ADA = Principal(id="user-ada", name="Ada", kind="human")
BOB = Principal(id="user-bob", name="Bob", kind="human")
CY = Principal(id="user-cy", name="Cy", kind="human")


class Worker:
    """One server process's live state over a shared store, with its pushes recorded."""

    def __init__(self, settings: Settings) -> None:
        self.store = open_store(settings.database_uri)
        self.scheduler = DeadlineScheduler(workers=2)
        self.pushes: list[tuple[str, dict[str, Any], str]] = []
        self.table = Table(
            settings,
            self.store,
            self.scheduler,
            BotRegistry(),
            PushTransport(lambda e, d, r, s=None: self.pushes.append((e, d, r))),
        )
        self.lobby = Lobby(settings, self.store, self.table, BotRegistry())

    def close(self) -> None:
        self.table.close()  # its deadline timers and bot threads
        self.store.close()


def in_parallel(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` at once (released together by a barrier); their results in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results
