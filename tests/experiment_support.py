"""Helpers for the experiment runner's tests: small configs, stored games by job."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.experiments.config import ExperimentConfig, parse_config
from agents.experiments.limits import RateLimiter, limiter_from_config
from agents.testing.openai_server import OpenAITestServer, Policy
from server.store import Store


def bots_config(name: str = "small", **overrides: Any) -> dict[str, Any]:
    """A small bots-only experiment: ToM-0 and ToM-1 focal seats against ToM-0 on the paper's first
    instance, seats swapped (4 games)."""
    return {
        "name": name,
        "instances": {"set": "paper", "first": 1},
        "focal": {"agents": ["tom0", "tom1"], "tom_orders": [[0, 1, 2]]},
        "opponent": {"agent": "tom0", "tom_orders": [0]},
        "swap_seats": True,
        "concurrency": 2,
        **overrides,
    }


def validated(raw: dict[str, Any]) -> ExperimentConfig:
    return parse_config(raw, "test config")


def write_config(folder: Path, raw: dict[str, Any]) -> Path:
    path = folder / f"{raw['name']}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def experiment_games(store: Store, experiment: str) -> list[dict[str, Any]]:
    """Every stored game of ``experiment`` (every attempt)."""
    return [g for g in store.list_games(limit=100_000) if g.get("experiment") == experiment]


def finished_by_job(store: Store, experiment: str) -> dict[str, list[dict[str, Any]]]:
    """Job key -> its finished games (a correct runner stores exactly one per job)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for game in experiment_games(store, experiment):
        if game["status"] == "finished":
            found.setdefault(game["job_key"], []).append(game)
    return found


def digests(store: Store, experiment: str) -> dict[str, str]:
    """Job key -> log sha256 of its finished game."""
    return {key: games[0]["log_sha256"] for key, games in finished_by_job(store, experiment).items()}


@contextmanager
def scripted_provider(
    monkeypatch: pytest.MonkeyPatch, policy: Policy, model: str = "test-model", *, answer_probes: bool = True
) -> Iterator[OpenAITestServer]:
    """The project's OpenAI-compatible test server answering with ``policy``, and the environment pointing
    every OpenAI seat at it (a placeholder key: the server checks none). ``answer_probes=False``: the
    agents' connection checks go to ``policy`` too."""
    with OpenAITestServer(policy=policy, model=model, answer_probes=answer_probes) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        yield server


def capture_limiters(monkeypatch: pytest.MonkeyPatch) -> list[RateLimiter]:
    """The limiters the runner builds from configs' ``limits`` from now on, in the order it builds them."""
    import agents.experiments.runner as runner_module

    built: list[RateLimiter] = []

    def capturing(limits: Any) -> RateLimiter | None:
        limiter = limiter_from_config(limits)
        assert limiter is not None
        built.append(limiter)
        return limiter

    monkeypatch.setattr(runner_module, "limiter_from_config", capturing)
    return built
