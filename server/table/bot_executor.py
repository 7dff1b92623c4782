"""The bounded pool of threads bot decisions run on, apart from the deadline timers."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class BotExecutor:
    """A bounded pool of threads for bot decisions, apart from the deadline timers.

    A slow policy (an LLM call, a deep search) only holds one of these threads. A move abandoned past its time
    limit cannot be stopped (Python threads cannot be killed), so its thread is written off: a fresh one
    takes its place, up to ``max_abandoned`` at a time, and the stuck one ends when the policy returns.
    """

    def __init__(self, workers: int, max_abandoned: int = 64) -> None:
        self._workers = workers
        self._max_abandoned = max_abandoned
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._written_off: set[int] = set()  # idents of threads whose move was abandoned
        self._threads: list[threading.Thread] = []
        self._closed = False
        for _ in range(workers):
            self._start_thread()

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
        self._tasks.put(task)

    def write_off(self, thread_ident: int | None) -> None:
        """The move running on ``thread_ident`` was abandoned: replace its thread (within the bound)."""
        with self._lock:
            if self._closed or thread_ident is None or thread_ident in self._written_off:
                return
            if len(self._written_off) >= self._max_abandoned:
                log.error(
                    "%d bot moves hang past their time limit; no more threads are added for them",
                    len(self._written_off),
                )
                return
            self._written_off.add(thread_ident)
            self._start_thread()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._tasks.put(None)

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._work, name="tc-bot", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _work(self) -> None:
        me = threading.get_ident()
        while True:
            task = self._tasks.get()
            if task is None:
                return
            try:
                task()
            except Exception:
                log.exception("a bot move failed outside its own error handling")
            with self._lock:
                if me in self._written_off:  # a replacement took this thread's place meanwhile
                    self._written_off.discard(me)
                    return
