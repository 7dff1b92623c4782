"""Provider rate limits (agents/experiments/limits.py): the sliding window with a fake clock, real threads,
and the callback on a real ChatOpenAI talking to the project's OpenAI-compatible test server."""

from __future__ import annotations

import dataclasses
import json
import pickle
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from experiment_support import bots_config, capture_limiters, experiment_games, scripted_provider, validated
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from agents.bots.registry import make_policy
from agents.experiments.limits import (
    LimitsError,
    ProviderLimit,
    RateLimiter,
    Ticket,
    attach_limiter,
    attach_to_model,
    limiter_from_config,
)
from agents.testing.openai_server import OpenAITestServer, Reply
from agents.testing.scripted_player import ScriptedPlayer
from server.store import open_store


class FakeClock:
    """Monotonic seconds that move only when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def fake_limiter(limit: ProviderLimit, clock: FakeClock, window: float = 60.0) -> RateLimiter:
    return RateLimiter({"openai": limit}, window=window, clock=clock, sleep=clock.sleep)


def assert_window_holds(
    calls: Sequence[tuple[float, int]], window: float, rpm: int | None, tpm: int | None
) -> None:
    """Every window of ``window`` seconds starting at a call holds at most rpm calls and tpm tokens."""
    ordered = sorted(calls)
    for i, (start, _) in enumerate(ordered):
        inside = [tokens for at, tokens in ordered[i:] if at < start + window]
        if rpm is not None:
            assert len(inside) <= rpm, f"{len(inside)} calls in the window from {start}"
        if tpm is not None:
            assert sum(inside) <= tpm, f"{sum(inside)} tokens in the window from {start}"


def test_request_limit_waits_for_the_oldest_call_to_leave_the_window() -> None:
    clock = FakeClock()
    limiter = fake_limiter(ProviderLimit(requests_per_minute=3), clock)
    for second in (0, 10, 20):
        clock.now = second
        assert limiter.acquire("openai", 5) is not None
    clock.now = 30
    ticket = limiter.acquire("openai", 5)
    assert ticket is not None and ticket.at == 60.0  # the call at 0 left at 60
    assert clock.slept == [30.0]
    assert limiter.usage("openai") == (3, 15)


def test_token_limit_counts_estimates_then_real_usage() -> None:
    clock = FakeClock()
    limiter = fake_limiter(ProviderLimit(tokens_per_minute=1000), clock)
    first = limiter.acquire("openai", 600)
    assert first is not None
    clock.now = 5
    second = limiter.acquire("openai", 300)  # 900 reserved: fits
    assert second is not None and clock.slept == []
    limiter.record(first, 100)  # the first call used far less than estimated
    clock.now = 6
    assert limiter.acquire("openai", 500) is not None  # 100 + 300 + 500 fits now
    assert clock.slept == []
    limiter.record(second, 700)  # ... and the second far more: 100 + 700 + 500 = 1300
    clock.now = 7
    assert limiter.acquire("openai", 50) is not None
    # 1350 > 1000 with the newcomer: the first (100) and second (700) calls must leave, at 60 and 65
    assert clock.now == 65.0


def test_a_call_larger_than_the_budget_passes_only_into_an_empty_window() -> None:
    clock = FakeClock()
    limiter = fake_limiter(ProviderLimit(tokens_per_minute=100), clock)
    assert limiter.acquire("openai", 500) is not None and clock.now == 0
    assert limiter.acquire("openai", 10) is not None and clock.now == 60


def test_unlimited_providers_are_never_held_and_bad_limits_are_refused() -> None:
    clock = FakeClock()
    limiter = fake_limiter(ProviderLimit(requests_per_minute=1), clock)
    for _ in range(100):
        assert limiter.acquire("vllm", 10_000) is None
    assert clock.slept == []
    with pytest.raises(LimitsError) as err:
        ProviderLimit(requests_per_minute=0)
    assert err.value.code == "invalid_limit" and "requests_per_minute" in err.value.message
    assert limiter_from_config({}) is None
    built = limiter_from_config({"openai": {"requests_per_minute": 5, "tokens_per_minute": None}})
    assert built is not None and built.limits == {"openai": ProviderLimit(requests_per_minute=5)}


def test_random_traffic_never_exceeds_either_limit_over_any_window() -> None:
    clock = FakeClock()
    rpm, tpm = 7, 2_000
    limiter = fake_limiter(ProviderLimit(requests_per_minute=rpm, tokens_per_minute=tpm), clock)
    rng = random.Random(21)
    calls: list[tuple[float, int]] = []
    for _ in range(300):
        clock.now += rng.choice([0.0, 0.5, 3.0, 11.0])
        tokens = rng.randint(50, 600)
        ticket = limiter.acquire("openai", tokens)
        assert ticket is not None
        calls.append((ticket.at, tokens))
        limiter.record(ticket, tokens)
    assert_window_holds(calls, 60.0, rpm, tpm)
    assert clock.now > 300 * 400 / tpm * 60 * 0.5  # the token budget really paced the run


def test_concurrent_threads_never_exceed_the_limits() -> None:
    window, rpm, tpm = 0.4, 4, 500
    limiter = RateLimiter(
        {"openai": ProviderLimit(requests_per_minute=rpm, tokens_per_minute=tpm)}, window=window
    )
    calls: list[tuple[float, int]] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(4):
            tokens = rng.randint(40, 150)
            ticket = limiter.acquire("openai", tokens + 20)  # estimate a little high
            assert ticket is not None
            time.sleep(rng.random() * 0.02)  # the "request"
            limiter.record(ticket, tokens)
            with lock:  # the window counts the real usage once recorded (the estimates were higher)
                calls.append((ticket.at, tokens))

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(calls) == 32
    assert_window_holds(calls, window, rpm, tpm)
    assert time.monotonic() - started >= (32 / rpm - 1) * window  # 32 calls at 4 a window: 7+ windows


def test_a_limiter_pickles_to_its_limits() -> None:
    limiter = RateLimiter({"openai": ProviderLimit(tokens_per_minute=9)}, window=2.0)
    copy = pickle.loads(pickle.dumps(limiter))
    assert copy.limits == limiter.limits and copy.window == 2.0


def usage_server(prompt_tokens: int, completion_tokens: int) -> tuple[OpenAITestServer, list[float]]:
    arrivals: list[float] = []

    def answer(request: dict) -> Reply:
        arrivals.append(time.monotonic())
        return Reply(content="ok", usage=(prompt_tokens, completion_tokens))

    return OpenAITestServer(policy=answer), arrivals


def test_chat_openai_calls_are_held_to_the_request_limit_and_record_real_usage() -> None:
    server, _ = usage_server(prompt_tokens=40, completion_tokens=2)
    window = 0.6
    limiter = RateLimiter({"openai": ProviderLimit(requests_per_minute=2)}, window=window)
    tickets: list[Ticket] = []
    with server:
        chat = ChatOpenAI(model="test-model", base_url=server.base_url, api_key="x", max_retries=0)
        handler = attach_to_model(chat, limiter, "openai")
        original = limiter.acquire

        def spying_acquire(provider: str, tokens: int) -> Ticket | None:
            ticket = original(provider, tokens)
            assert ticket is not None
            tickets.append(ticket)
            return ticket

        limiter.acquire = spying_acquire  # type: ignore[method-assign]
        started = time.monotonic()
        threads = [
            threading.Thread(target=lambda: chat.invoke([HumanMessage("hello there")])) for _ in range(5)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        elapsed = time.monotonic() - started
    assert len(server.requests) == 5 and len(tickets) == 5
    assert elapsed >= 2 * window  # calls 3-4 waited one window, call 5 two
    assert_window_holds([(t.at, 1) for t in tickets], window, 2, None)
    assert all(ticket.tokens > 0 for ticket in tickets)  # the o200k estimate of the prompt
    requests, tokens = limiter.usage("openai")
    assert tokens == requests * 42  # every estimate replaced by the server's usage (40 in + 2 out)
    assert not handler._tickets


def test_token_limit_on_an_llm_seat_built_from_its_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    server, arrivals = usage_server(prompt_tokens=300, completion_tokens=20)
    clock = FakeClock()
    limiter = fake_limiter(ProviderLimit(tokens_per_minute=500), clock)
    with server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        seat = make_policy("llm:openai:test-model", seed=1)
        bot = make_policy("random", seed=1)
        assert attach_limiter(bot, limiter) is None
        handler = attach_limiter(seat, limiter)
        assert handler is not None and handler.provider == "openai"
        chat = seat.model  # type: ignore[attr-defined]
        chat.invoke([HumanMessage("a")])
        assert clock.now == 0 and limiter.usage("openai") == (1, 320)
        chat.bind_tools([]).invoke([HumanMessage("b")])  # 320 used + the estimate of b fits
        assert clock.now == 0 and limiter.usage("openai") == (2, 640)
        chat.invoke([HumanMessage("c")])  # 640 + c > 500: waits for both to leave the window
        assert clock.now == 60.0 and limiter.usage("openai") == (1, 320)
    assert len(arrivals) == 3


@pytest.mark.slow
def test_an_experiment_config_s_limits_hold_every_llm_call_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner builds one limiter from the config's ``limits`` and every LLM seat of every game
    acquires from it: the window ends up holding exactly the requests the server saw, with their usage."""
    import agents.experiments.runner as runner_module

    built = capture_limiters(monkeypatch)
    usage: list[int] = []

    def answer(request: dict[str, Any]) -> Reply:
        reply = player(request)
        usage.append(len(json.dumps(request["messages"])) // 4 + 7)
        return dataclasses.replace(reply, usage=(usage[-1] - 7, 7))

    player = ScriptedPlayer(accept_every=1)
    raw = bots_config(
        name="llm-limited",
        focal={"agents": ["llm:openai:mini"], "tom_orders": [[0]]},
        opponent={"agent": "same", "tom_orders": [0]},
        swap_seats=True,
        game={"max_turns": 1},
        limits={"openai": {"requests_per_minute": 10_000, "tokens_per_minute": 10_000_000}},
    )
    with scripted_provider(monkeypatch, answer, answer_probes=False) as server:  # the probe counts too
        report = runner_module.run_experiment(
            validated(raw), raw, store_url=f"sqlite:///{tmp_path / 's.db'}", out=tmp_path, progress=False
        )
    assert report.summary["finished"] == 2
    assert len(built) == 1 and built[0].limits["openai"].requests_per_minute == 10_000
    assert built[0].usage("openai") == (len(server.requests), sum(usage)) and len(usage) > 4


@pytest.mark.slow
def test_simulated_llm_seats_are_llm_seats_held_to_their_provider_s_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``simulated_llm`` seat is an LLM seat (its policy plays through a chat model): its games run in
    threads, every call acquires from the ``simulated`` provider's limits, its seat record is an agent's."""
    import agents.experiments.runner as runner_module

    built = capture_limiters(monkeypatch)
    raw = bots_config(
        name="simulated-limited",
        focal={"agents": ["simulated_llm?latency=0"], "tom_orders": [[0, 1]]},
        opponent={"agent": "tom0", "tom_orders": [0]},
        swap_seats=True,
        game={"max_turns": 2},
        limits={"simulated": {"requests_per_minute": 100_000}},
    )
    url = f"sqlite:///{tmp_path / 's.db'}"
    report = runner_module.run_experiment(validated(raw), raw, store_url=url, out=tmp_path, progress=False)
    assert report.summary["finished"] == 2 and report.summary["llm_calls"] > 0
    assert built[0].usage("simulated")[0] == report.summary["llm_calls"]  # every call went through it
    games = experiment_games(open_store(url), "simulated-limited")
    focal = [seat for game in games for seat in game["seats"] if seat["focal"]]
    assert {(seat["kind"], seat["model"]) for seat in focal} == {
        ("agent", "simulated:simulated-fixed-latency")
    }
