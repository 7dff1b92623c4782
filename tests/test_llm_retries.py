"""Provider retries (agents/llm/retries.py) on their own: which failures are retried, how long it waits, and
the per-call, per-game and per-move limits."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from agents.llm.agent import AgentSettings
from agents.llm.retries import ProviderRetries, failure_kind


def _settings(**changes: Any) -> AgentSettings:
    """The agent's own settings (they are what it retries under), with small budgets."""
    return AgentSettings(**{"provider_retries": 3, "game_retry_budget": 10, **changes})


class ProviderError(Exception):
    def __init__(self, status: int | None, retry_after: str | None = None) -> None:
        super().__init__(f"status {status}")
        self.status_code = status
        self.response = SimpleNamespace(headers={"retry-after": retry_after} if retry_after else {})


class ReadTimeout(Exception):
    pass


def _flaky(failures: list[Exception], answer: str = "ok") -> Any:
    left = list(failures)

    def invoke() -> str:
        if left:
            raise left.pop(0)
        return answer

    return invoke


def _retrier(settings: AgentSettings, waits: list[float]) -> ProviderRetries:
    return ProviderRetries(settings, seed=1, sleep=waits.append)


FAR = float("inf")


def test_rate_limits_server_errors_and_timeouts_are_retried_with_growing_jittered_waits() -> None:
    waits: list[float] = []
    retries = _retrier(_settings(), waits)
    outcome = retries.call(_flaky([ProviderError(429), ProviderError(503), ReadTimeout()]), FAR)
    assert outcome.answer == "ok" and outcome.retries == 3 and retries.used == 3
    assert [f["kind"] for f in outcome.failures] == ["rate_limit", "server_error", "timeout"]
    for attempt, wait in enumerate(waits):  # full jitter in [d/2, d], d = base * 2^attempt
        assert 2**attempt / 2 <= wait <= 2**attempt
    assert [f["wait_s"] for f in outcome.failures] == [round(w, 4) for w in waits]


def test_a_client_error_is_not_retried_and_retry_after_and_the_cap_bound_the_wait() -> None:
    waits: list[float] = []
    outcome = _retrier(_settings(), waits).call(_flaky([ProviderError(400)]), FAR)
    assert outcome.answer is None and outcome.retries == 0 and waits == []
    assert outcome.failures[0]["kind"] == "client_error" and "wait_s" not in outcome.failures[0]
    outcome = _retrier(_settings(backoff_cap=5), waits).call(_flaky([ProviderError(429, "3")]), FAR)
    assert outcome.answer == "ok" and waits == [pytest.approx(3, abs=0.5)] and waits[0] >= 3
    waits.clear()
    _retrier(_settings(backoff_cap=5), waits).call(_flaky([ProviderError(429, "60")]), FAR)
    assert waits == [5]  # the server asked for a minute; the cap wins


def test_the_per_call_per_game_and_per_move_limits_stop_retrying() -> None:
    waits: list[float] = []
    per_call = _retrier(_settings(provider_retries=2), waits).call(_flaky([ProviderError(500)] * 5), FAR)
    assert per_call.answer is None and per_call.retries == 2 and len(per_call.failures) == 3
    game = _retrier(_settings(game_retry_budget=3), waits)
    game.call(_flaky([ProviderError(500)] * 2), FAR)
    assert not game.budget_spent
    second = game.call(_flaky([ProviderError(500)] * 2), FAR)
    assert second.answer is None and second.retries == 1 and game.used == 3 and game.budget_spent
    game.reset()
    assert game.used == 0 and not game.budget_spent
    waits.clear()
    soon = time.monotonic() + 0.1  # the first wait (0.5-1 s) would end past the move's deadline
    late = _retrier(_settings(), waits).call(_flaky([ProviderError(502)]), soon)
    assert late.answer is None and late.retries == 0 and waits == []


def test_failures_are_classified() -> None:
    assert failure_kind(ProviderError(429), 429) == "rate_limit"
    assert failure_kind(ProviderError(404), 404) == "client_error"
    assert failure_kind(ReadTimeout(), None) == "timeout"
    assert failure_kind(ConnectionResetError(), None) == "connection"


def test_a_game_retry_budget_of_0_means_no_limit_per_game() -> None:
    unlimited = _retrier(_settings(provider_retries=3, game_retry_budget=0), [])
    for _ in range(3):
        outcome = unlimited.call(_flaky([ProviderError(500)] * 3), FAR)
        assert outcome.answer == "ok" and outcome.retries == 3
    assert unlimited.used == 9 and not unlimited.budget_spent
