"""Provider retries for the LLM agent: one model call, retried with exponential backoff on provider failures.

A failure is classified (``rate_limit`` | ``server_error`` | ``client_error`` | ``timeout`` |
``connection``); HTTP 408 / 409 / 429 / 5xx and failures without a status (timeouts, dropped connections)
are retried, other client errors are not. Each wait is exponential backoff with jitter, at least the
server's ``Retry-After`` and at most the cap. Retries stop after ``provider_retries`` per call, once the
game's ``game_retry_budget`` is spent (0: no limit per game), or when the wait would end past the move's
deadline: a provider outage ends the decision, never hangs the game.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

Answer = TypeVar("Answer")


class RetrySettings(Protocol):
    """How hard to retry (the agent's :class:`~agents.llm.agent.AgentSettings` has these fields)."""

    provider_retries: int
    game_retry_budget: int
    backoff_base: float
    backoff_cap: float


@dataclass
class CallOutcome(Generic[Answer]):
    """One model call with its retries: the ``answer`` (None when the call failed for good), a record per
    failure (kind, error, status, message, latency and the wait before the retry, if any), one per
    attempt (``latency_s``, ``outcome``: ``answered`` or the failure's kind) and the call's whole time
    (``elapsed``: attempts and waits)."""

    answer: Answer | None
    failures: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def retries(self) -> int:
        """How many times the call was retried."""
        return sum("wait_s" in failure for failure in self.failures)


class ProviderRetries:
    """Runs model calls under ``settings`` and counts the game's retries (:meth:`reset` for a new game).

    The settings are read at every call, so a change to them applies to the next call. ``seed`` seeds the
    jitter; ``sleep`` waits (tests pass a fake)."""

    def __init__(
        self, settings: RetrySettings, *, seed: int, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.settings = settings
        self.used = 0
        self._rng = random.Random(f"llm-backoff:{seed}")
        self._sleep = sleep

    def reset(self) -> None:
        """A new game: the game's retry budget starts afresh."""
        self.used = 0

    @property
    def budget_spent(self) -> bool:
        """Whether the game's retry budget (when there is one) is used up."""
        budget = self.settings.game_retry_budget
        return bool(budget) and self.used >= budget

    def call(self, invoke: Callable[[], Answer], deadline: float) -> CallOutcome[Answer]:
        """``invoke()`` until it answers or retrying must stop; no wait ends at or past ``deadline``
        (a ``time.monotonic()`` value)."""
        outcome: CallOutcome[Answer] = CallOutcome(None)
        attempt = 0
        began = time.monotonic()
        while True:
            started = time.monotonic()
            try:
                outcome.answer = invoke()
            except Exception as err:  # any provider or transport failure: classify, back off, retry
                latency = time.monotonic() - started
                status = status_of(err)
                kind = failure_kind(err, status)
                outcome.attempts.append({"latency_s": round(latency, 4), "outcome": kind})
                failure: dict[str, Any] = {
                    "kind": kind,
                    "error": type(err).__name__,
                    "status": status,
                    "message": str(err)[:500],
                    "latency_s": round(latency, 4),
                }
                outcome.failures.append(failure)
                wait = self.backoff(attempt, retry_after(err))
                retryable = status is None or status in (408, 409, 429) or status >= 500
                if (
                    not retryable
                    or attempt >= self.settings.provider_retries
                    or self.budget_spent
                    or time.monotonic() + wait >= deadline
                ):
                    outcome.elapsed = time.monotonic() - began
                    return outcome
                failure["wait_s"] = round(wait, 4)
                self.used += 1
                attempt += 1
                self._sleep(wait)
                continue
            latency = time.monotonic() - started
            outcome.attempts.append({"latency_s": round(latency, 4), "outcome": "answered"})
            outcome.elapsed = time.monotonic() - began
            return outcome

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff d with equal jitter (a wait in [d/2, d]), at least the server's Retry-After,
        capped."""
        cap = self.settings.backoff_cap
        delay = min(cap, self.settings.backoff_base * 2**attempt)
        wait = delay * (0.5 + 0.5 * self._rng.random())
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, cap)


def failure_kind(err: Exception, status: int | None) -> str:
    """rate_limit | server_error | client_error | timeout | connection: what a provider failure was."""
    if status == 429:
        return "rate_limit"
    if status is not None:
        return "server_error" if status >= 500 else "client_error"
    names = " ".join(cls.__name__ for cls in type(err).__mro__)
    return "timeout" if "Timeout" in names else "connection"


def status_of(err: Exception) -> int | None:
    """The HTTP status a provider client's exception carries, if any."""
    status = getattr(err, "status_code", None)
    if status is None:
        status = getattr(getattr(err, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def retry_after(err: Exception) -> float | None:
    """The server's ``Retry-After`` (seconds) on the failed response, if it sent one."""
    headers = getattr(getattr(err, "response", None), "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
