"""Abuse limits: how often one user or network address may create games, log in or try the admin password,
and how many Socket.IO events one connection or user may send.

Counting is a fixed window per rule: at most ``count`` events per ``seconds``, counted in windows that start
at multiples of ``seconds``; the answer to one more is ``rate_limited`` with ``retry_after`` (seconds until
the window ends; HTTP 429 + ``Retry-After`` over REST, an error acknowledgement over Socket.IO). A fixed
window can let through up to twice ``count`` around a window boundary; it costs one counter per key.

Where the counters live (``limits.storage``):
- ``null`` (default): in the server process. Each gunicorn worker counts on its own, so with W workers a
  client spreading its requests over them gets at most W times the limit. Nothing to set up.
- ``redis://HOST:PORT/DB``: in Redis (``INCR`` + ``EXPIRE``), shared by every worker and host: the limits are
  exact across workers. Use the Redis that already carries ``socketio.message_queue``.

A Redis that stops answering never locks people out: the check is skipped and logged once a minute.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from server.table.config import LimitsSection, RateRule
from server.table.errors import ServerError

log = logging.getLogger(__name__)

#: In-process counters kept before stale windows are swept (bounds memory under many addresses).
MAX_MEMORY_KEYS = 50_000


class CounterBackend(Protocol):
    def peek(self, key: str, window: int, seconds: float) -> int: ...
    def add(self, key: str, window: int, seconds: float) -> int: ...


class MemoryCounters:
    """Counters of this process: ``(key) -> (window, count)``, swept of old windows when large."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def peek(self, key: str, window: int, seconds: float) -> int:
        with self._lock:
            held = self._counts.get(key)
            return held[1] if held and held[0] == window else 0

    def add(self, key: str, window: int, seconds: float) -> int:
        with self._lock:
            held = self._counts.get(key)
            count = held[1] + 1 if held and held[0] == window else 1
            if len(self._counts) >= MAX_MEMORY_KEYS and key not in self._counts:
                self._sweep()
            self._counts[key] = (window, count)
            return count

    def _sweep(self) -> None:
        now = time.time()
        for key, (window, _) in list(self._counts.items()):
            seconds = float(key.rsplit("|", 1)[-1])
            if (window + 1) * seconds <= now:
                del self._counts[key]
        if len(self._counts) >= MAX_MEMORY_KEYS:  # every window still open: forget the oldest half
            for key in list(self._counts)[: MAX_MEMORY_KEYS // 2]:
                del self._counts[key]


class RedisCounters:
    """Counters in Redis, one key per (rule, who, window), expiring with the window."""

    def __init__(self, url: str) -> None:
        import redis  # only when configured

        self._redis = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def peek(self, key: str, window: int, seconds: float) -> int:
        value = self._redis.get(f"tradecraft:limit:{key}:{window}")
        return int(value) if value is not None else 0

    def add(self, key: str, window: int, seconds: float) -> int:
        name = f"tradecraft:limit:{key}:{window}"
        pipe = self._redis.pipeline()
        pipe.incr(name)
        pipe.expire(name, math.ceil(seconds) + 1)
        count, _ = pipe.execute()
        return int(count)


class RateLimiter:
    """Checks the rules of ``limits`` (server/table/config.py ``LimitsSection``) for one key at a time."""

    def __init__(self, settings: LimitsSection, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
        self.backend: CounterBackend = (
            RedisCounters(settings.storage) if settings.storage else MemoryCounters()
        )
        self._last_backend_warning = 0.0
        # a connection lives in one process: its counter needs no sharing (nor a Redis round trip per event)
        self.local_backend: CounterBackend = MemoryCounters()

    def rule(self, name: str) -> RateRule | None:
        rule: RateRule | None = getattr(self.settings, name)
        return rule

    def hit(self, name: str, who: str) -> None:
        """Count one event of rule ``name`` by ``who``; ``rate_limited`` when it is one too many."""
        self._count(name, who, add=True)

    def check(self, name: str, who: str) -> None:
        """``rate_limited`` if ``who`` has used up rule ``name`` already (counts nothing)."""
        self._count(name, who, add=False)

    def _count(self, name: str, who: str, *, add: bool) -> None:
        rule = self.rule(name)
        if rule is None:
            return
        now = self.clock()
        window = int(now // rule.seconds)
        key = f"{name}|{who}|{rule.seconds}"
        backend = self.local_backend if name in PROCESS_LOCAL_RULES else self.backend
        try:
            if add:
                over = backend.add(key, window, rule.seconds) > rule.count
            else:
                over = backend.peek(key, window, rule.seconds) >= rule.count
        except Exception as exc:  # a limiter that cannot count must not lock everyone out
            if now - self._last_backend_warning > 60:
                self._last_backend_warning = now
                log.warning("rate limit counters unavailable (%s): limits not enforced", exc)
            return
        if over:
            retry_after = max(1, math.ceil((window + 1) * rule.seconds - now))
            raise rate_limited(name, rule, retry_after)


#: Rules whose counters stay in the process whatever ``limits.storage`` says.
PROCESS_LOCAL_RULES = frozenset({"socket_events_per_connection"})

LIMIT_SENTENCES = {
    "games_per_user": "games created by one user",
    "games_per_address": "games created from one network address",
    "logins_per_address": "logins from one network address",
    "admin_failures_per_address": "wrong admin passwords from one network address",
    "password_failures_per_address": "wrong passwords of kept names from one network address",
    "password_failures_per_name": "wrong passwords for this kept name",
    "socket_events_per_connection": "Socket.IO events from one connection",
    "socket_events_per_user": "Socket.IO events from one user",
}


def rate_limited(name: str, rule: RateRule, retry_after: int) -> ServerError:
    what = LIMIT_SENTENCES.get(name, name)
    return ServerError(
        "rate_limited",
        f"Too many {what}: at most {rule.count} per {rule.seconds:g} s. Try again in {retry_after} s.",
        {"limit": name, "count": rule.count, "seconds": rule.seconds, "retry_after": retry_after},
        status=429,
    )


def open_games_limited(open_games: int, limit: int) -> ServerError:
    return ServerError(
        "too_many_open_games",
        f"You already have {open_games} games waiting for players (at most {limit}); start or abandon one "
        "before creating another.",
        {"open_games": open_games, "limit": limit},
        status=409,
    )


def count_socket_event(limiter: RateLimiter, connection: str, user: str | None) -> None:
    """Count one Socket.IO event before any work on it (its payload is not even read yet):
    ``rate_limited`` when its connection or its user sent too many."""
    limiter.hit("socket_events_per_connection", connection)
    if user is not None:
        limiter.hit("socket_events_per_user", user)


def retry_after_of(err: BaseException) -> Any:
    """The ``Retry-After`` value of a refusal, or None."""
    if isinstance(err, ServerError) and err.code == "rate_limited":
        return err.details.get("retry_after")
    return None
