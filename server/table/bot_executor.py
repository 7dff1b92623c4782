"""The bounded pool of threads bot decisions run on, apart from the deadline timers."""

from __future__ import annotations

import logging
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class NativeThreads(Protocol):
    """What is used of gevent's pool of real OS threads (``gevent.threadpool.ThreadPool``)."""

    def apply(self, func: Callable[..., Any], args: tuple[Any, ...] = ...) -> Any: ...


def on_gevent_loop() -> bool:
    """Whether this process runs on gevent's event loop (the standard library patched: ``threading``
    makes greenlets)."""
    if "gevent.monkey" not in sys.modules:
        return False
    from gevent import monkey

    return bool(monkey.is_module_patched("threading"))


def native_threads(size: int) -> NativeThreads | None:
    """Under gevent's event loop (the standard library patched: ``threading`` makes greenlets), the event
    loop's pool of real OS threads, grown to ``size``; else None (threads are real already)."""
    if not on_gevent_loop():
        return None
    from gevent import get_hub

    pool = get_hub().threadpool
    pool.maxsize = max(pool.maxsize, size)
    return pool


class CpuThreads:
    """Where CPU-heavy work a client asks for (answering a query) runs: under gevent's event loop on a
    bounded pool of ``size`` real OS threads of its own (so queries neither freeze the loop nor take the bot
    moves' threads); with threads, right in the calling thread, which is real already.

    The work must use no gevent object (no lock, no socket): it gets copies and returns a value."""

    def __init__(self, size: int) -> None:
        self._pool: NativeThreads | None = None
        if on_gevent_loop():
            from gevent.threadpool import ThreadPool

            self._pool = ThreadPool(size)

    def run(self, step: Callable[..., T], *args: Any) -> T:
        """``step(*args)``, on a pool thread under gevent: the calling greenlet waits, the loop runs on."""
        if self._pool is None:
            return step(*args)
        return self._pool.apply(step, args)  # type: ignore[no-any-return]


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
        # one real thread per worker, plus one per abandoned move still running on its own
        self._native = native_threads(workers + max_abandoned)
        for _ in range(workers):
            self._start_thread()

    def think(self, step: Callable[..., T], *args: Any) -> T:
        """Run a policy's CPU-heavy step (building a policy, deciding a move) called from a worker.

        With threads, right here. Under gevent, the workers are greenlets of the one event loop, so a step
        of 100s of ms (ToM or planner bots) would freeze every socket: it runs on a real OS thread of the
        loop's pool instead, and its result (or exception) comes back to the waiting greenlet, which alone
        touches the game, its lock and the sockets. The step must use no gevent object (a policy does not)."""
        if self._native is None:
            return step(*args)
        return self._native.apply(step, args)  # type: ignore[no-any-return]

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
