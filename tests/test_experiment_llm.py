"""An LLM experiment against the project's scripted OpenAI-compatible server: real ChatOpenAI calls over
HTTP, games finished, tokens counted and costed, the provider's model name in the manifest."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from experiment_support import bots_config, experiment_games, scripted_provider, validated

from agents.experiments import jobs as jobs_module
from agents.experiments.executors import LocalExecutor
from agents.experiments.manifest import MANIFEST_FILE
from agents.experiments.runner import run_experiment
from agents.experiments.status import experiment_status
from agents.testing.openai_server import Reply
from agents.testing.scripted_player import ScriptedPlayer
from server.store import StoreError, open_store
from server.table.config import load_settings
from server.table.costs import Tokens, cost_usd

pytestmark = pytest.mark.slow

PROVIDER_MODEL = "gpt-4o-mini-2024-07-18"
"""What the server says it is: priced as gpt-4o-mini by the settings' price table."""


class CountedPlayer(ScriptedPlayer):
    """The scripted player, with a usage block on every answer (as a provider sends)."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        reply = super().__call__(request)
        prompt = sum(len(json.dumps(m)) for m in request["messages"]) // 4
        return dataclasses.replace(reply, usage=(prompt, 20))


def test_an_llm_experiment_runs_against_the_scripted_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = bots_config(
        name="llm-small",
        focal={"agents": ["llm:openai:mini", "llm:openai:mini?temperature=0"], "tom_orders": [[0, 1]]},
        opponent={"agent": "same", "tom_orders": [0]},
        swap_seats=False,
        game={"max_turns": 2},
    )
    out = tmp_path / "out"
    url = f"sqlite:///{out / 'store.db'}"
    with scripted_provider(monkeypatch, CountedPlayer(accept_every=1), model=PROVIDER_MODEL) as server:
        report = run_experiment(
            validated(raw), raw, store_url=url, out=out, executor=LocalExecutor(2), progress=False
        )
        requests = len(server.requests)
    assert report.summary["finished"] == 2 and report.summary["failed"] == 0
    store = open_store(url)
    games = experiment_games(store, "llm-small")
    assert len(games) == 2 and {g["status"] for g in games} == {"finished"}
    calls = sum(g["llm_calls"] for g in games)
    assert calls == requests > 0  # every request the server saw is counted once
    prices = load_settings().prices.models
    for game in games:
        assert game["models"] == [PROVIDER_MODEL]
        focal = next(seat for seat in game["seats"] if seat["focal"])
        assert focal["kind"] == "agent" and focal["model"] == "openai:mini" and focal["tom_orders"] == [0, 1]
        assert focal["persona"] == "none" and focal["reasoning"] == "direct"
        traces = [t for t in store.load_traces(game["game_id"]) if t.get("trace") == "llm_call"]
        tokens = sum((Tokens.of_trace(t) for t in traces), Tokens())
        assert tokens.input > 0 and game["tokens"] == {
            "input": tokens.input,
            "cached": 0,
            "output": tokens.output,
        }
        assert game["cost_usd"] == pytest.approx(cost_usd(prices, PROVIDER_MODEL, tokens))
        reports = [e for e in store.load_events(game["game_id"]) if e["type"] == "tom_reported"]
        assert any(r["payload"]["seat"] == focal["seat"] and r["payload"].get("v1") for r in reports)
    summary = report.summary
    assert summary["tokens"]["input"] == sum(g["tokens"]["input"] for g in games)
    assert summary["cost_usd"] == pytest.approx(sum(g["cost_usd"] for g in games), abs=1e-6)
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["models"]["reported"] == [PROVIDER_MODEL]
    prompts = manifest["prompts"]["system_prompts"]
    assert len(prompts) == 2  # the focal seat's (asked V0+V1) and the opponent's (V0)
    assert {p["sha256"] for p in prompts} == {h for g in games for h in g["prompts"]}
    assert all(p["settings"]["persona"] == "none" and "tool" in p["system"].lower() for p in prompts)
    assert manifest["models"]["configured"] == ["openai:mini"]


def test_failed_attempts_keep_their_usage_and_count_in_every_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the first game fails after its first model calls: its tokens and cost are stored with it and
    # counted in the run's, the resumed run's and `status`'s totals (money spent), apart from the
    # finished games' part
    real = jobs_module._Streamer.__call__
    failed: list[str] = []

    def fails_after_a_call(self, progress):
        real(self, progress)
        if not failed and any(t.get("trace") == "llm_call" for t in self.traces):
            failed.append(self.game_id)
            raise StoreError("backend_down", "injected failure after a model call")

    monkeypatch.setattr(jobs_module._Streamer, "__call__", fails_after_a_call)
    raw = bots_config(
        name="llm-spend",
        focal={"agents": ["llm:openai:mini"], "tom_orders": [[0]]},
        swap_seats=False,
        game={"max_turns": 2},
    )
    out = tmp_path / "out"
    url = f"sqlite:///{out / 'store.db'}"
    with scripted_provider(monkeypatch, CountedPlayer(accept_every=1), model=PROVIDER_MODEL) as server:
        report = run_experiment(validated(raw), raw, store_url=url, out=out, progress=False)
        requests = len(server.requests)
    store = open_store(url)
    aborted = store.get_game(failed[0])
    assert aborted["status"] == "aborted" and aborted["llm_calls"] > 0 and aborted["cost_usd"] > 0
    traces = [t for t in store.load_traces(failed[0]) if t.get("trace") == "llm_call"]
    assert aborted["tokens"]["input"] == sum((Tokens.of_trace(t) for t in traces), Tokens()).input
    games = experiment_games(store, "llm-spend")
    finished = [g for g in games if g["status"] == "finished"]
    assert len(games) == 2 and len(finished) == 1
    summary = report.summary
    assert summary["llm_calls"] == requests == sum(g["llm_calls"] for g in games)
    assert summary["cost_usd"] == pytest.approx(sum(g["cost_usd"] for g in games), abs=1e-6)
    assert summary["finished_games"]["llm_calls"] == finished[0]["llm_calls"] < requests
    assert summary["finished_games"]["cost_usd"] == pytest.approx(finished[0]["cost_usd"], abs=1e-6)
    resumed = run_experiment(validated(raw), raw, store_url=url, out=out, progress=False)
    keys = ("tokens", "llm_calls", "cost_usd", "finished_games")
    assert {k: resumed.summary[k] for k in keys} == {k: summary[k] for k in keys}
    total = experiment_status("llm-spend", url)["total"]
    assert {k: total[k] for k in keys} == {k: summary[k] for k in keys}
