"""The table's timers: keyed deadlines and bot moves. :class:`DeadlineScheduler` is the server's (one
scheduler thread, callbacks on a small thread pool); :class:`ManualScheduler` is in-process play's, whose
timers fire only when its owner says the time has come.

Deadlines are wall-clock unix times because they are derived from event timestamps in the store (a phase's
deadline is its start time plus the configured seconds), so a restarted server — or another worker — computes
the same deadline. Scheduling a key again replaces its timer; a callback whose timer was replaced or
cancelled never runs. The callbacks themselves re-check the game state (see ``server.table.master``), so a
timer that fires late or twice is harmless.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

log = logging.getLogger(__name__)

Callback = Callable[[], None]


class Scheduler(Protocol):
    """What the table needs of its timers: keyed, replaceable, cancellable."""

    def schedule(self, key: str, when: float, callback: Callback) -> None: ...
    def cancel(self, key: str) -> None: ...
    def cancel_prefix(self, prefix: str) -> None: ...
    def when(self, key: str) -> float | None: ...
    def submit(self, callback: Callback) -> None: ...
    def close(self) -> None: ...


class DeadlineScheduler:
    """Run ``callback`` at unix time ``when``, at most once per scheduling, replaceable by key."""

    def __init__(self, workers: int = 8, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, str]] = []
        self._entries: dict[str, tuple[float, int, Callback]] = {}
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tc-timer")
        self._thread = threading.Thread(target=self._loop, name="tc-deadlines", daemon=True)
        self._thread.start()

    def schedule(self, key: str, when: float, callback: Callback) -> None:
        """(Re)place the timer ``key``; ``when`` in the past means "as soon as possible"."""
        with self._cond:
            if self._closed:
                return
            number = next(self._counter)
            self._entries[key] = (when, number, callback)
            heapq.heappush(self._heap, (when, number, key))
            self._cond.notify()

    def cancel(self, key: str) -> None:
        with self._cond:
            self._entries.pop(key, None)  # the heap entry is skipped when it comes up

    def cancel_prefix(self, prefix: str) -> None:
        with self._cond:
            for key in [k for k in self._entries if k.startswith(prefix)]:
                del self._entries[key]

    def when(self, key: str) -> float | None:
        with self._cond:
            entry = self._entries.get(key)
            return entry[0] if entry else None

    def pending(self) -> dict[str, float]:
        with self._cond:
            return {key: entry[0] for key, entry in self._entries.items()}

    def submit(self, callback: Callback) -> None:
        """Run ``callback`` on the pool now (errors are logged, never raised into the caller)."""
        if not self._closed:
            self._pool.submit(self._run, callback)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._entries.clear()
            self._heap.clear()
            self._cond.notify()
        self._thread.join(timeout=2)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                due = self._pop_due()
                if due is None:
                    timeout = self._heap[0][0] - self._clock() if self._heap else None
                    self._cond.wait(timeout=None if timeout is None else max(timeout, 0.0))
                    continue
            try:
                self._pool.submit(self._run, due)
            except RuntimeError:  # pool shut down while closing
                return

    def _pop_due(self) -> Callback | None:
        """The next due callback (removing stale heap entries on the way), or None."""
        now = self._clock()
        while self._heap:
            when, number, key = self._heap[0]
            entry = self._entries.get(key)
            if entry is None or entry[1] != number:
                heapq.heappop(self._heap)  # cancelled or replaced
                continue
            if when > now:
                return None
            heapq.heappop(self._heap)
            del self._entries[key]
            return entry[2]
        return None

    @staticmethod
    def _run(callback: Callback) -> None:
        try:
            callback()
        except Exception:
            log.exception("a timer callback failed")


class ManualScheduler:
    """Timers that fire only in :meth:`run_due` (in-process play: no threads, and time is the caller's)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, int, Callback]] = {}
        self._counter = itertools.count()

    def schedule(self, key: str, when: float, callback: Callback) -> None:
        self._entries[key] = (when, next(self._counter), callback)

    def cancel(self, key: str) -> None:
        self._entries.pop(key, None)

    def cancel_prefix(self, prefix: str) -> None:
        for key in [k for k in self._entries if k.startswith(prefix)]:
            del self._entries[key]

    def when(self, key: str) -> float | None:
        entry = self._entries.get(key)
        return entry[0] if entry else None

    def pending(self) -> dict[str, float]:
        return {key: entry[0] for key, entry in self._entries.items()}

    def submit(self, callback: Callback) -> None:
        callback()

    def run_due(self, now: float) -> int:
        """Run the timers due at ``now``, earliest first (a callback may schedule more); how many ran."""
        ran = 0
        while True:
            due = [(when, number, key) for key, (when, number, _) in self._entries.items() if when <= now]
            if not due:
                return ran
            _, _, key = min(due)
            callback = self._entries.pop(key)[2]
            callback()
            ran += 1

    def close(self) -> None:
        self._entries.clear()
