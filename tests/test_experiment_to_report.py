"""From a config file to the paper's figures and tables, one command each: ``tradecraft experiment run``
then ``tradecraft analyze`` on what it wrote.

- The shipped bots-only config (ToM-0, ToM-1 and ToM-2 bots whose structure is known): the analysis finds
  what their construction says — V1 improves the decision fit of ToM-1 and ToM-2 and not of ToM-0, which
  decides on its own values alone, and ToM-1's V1 is closer to its opponent's V0 than ToM-0's.
- An LLM config against the project's scripted OpenAI-compatible server: real ChatOpenAI calls, and a
  report whose outcomes carry the calls' tokens and cost.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from experiment_support import scripted_provider

from agents.testing.openai_server import Reply
from agents.testing.scripted_player import ScriptedPlayer
from analysis.cli import FIGURES
from tradecraft.cli import main

pytestmark = pytest.mark.slow


def tradecraft(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def embedded_figures(report: Path) -> int:
    page = report.read_text(encoding="utf-8")
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert all(base64.b64decode(image)[:4] == b"\x89PNG" for image in images)
    return len(images)


def test_the_bots_only_config_runs_and_its_report_recovers_the_bots_structure(tmp_path: Path) -> None:
    out, report_dir = tmp_path / "run", tmp_path / "report"
    store = f"sqlite:///{tmp_path / 'experiments.db'}"
    said = tradecraft("experiment", "run", "bots-only", "--store", store, "--out", str(out), "--no-progress")
    assert "120/120 games finished, 0 failed" in said
    tradecraft("analyze", str(out), "--out", str(report_dir), "--no-progress")
    assert embedded_figures(report_dir / "report.html") == len(FIGURES)

    table1 = pd.read_parquet(report_dir / "tables" / "table1.parquet").set_index(["agent", "utility"])
    f1 = table1["f1_mean"]
    # ToM-0 decides on V0 alone: V1 adds nothing (the fit puts no weight on it)
    assert f1["tom0", "U(0,1)"] == pytest.approx(f1["tom0", "U(0)"])
    assert table1.loc[("tom0", "U(0,1)"), "w1"] == 0
    # ToM-1 and ToM-2 model their opponent: V1 explains their decisions better
    for bot in ("tom1", "tom2"):
        assert f1[bot, "U(0,1)"] > f1[bot, "U(0)"] + 0.04, bot
    beliefs = pd.read_parquet(report_dir / "tables" / "belief_summary.parquet")
    kl = beliefs[beliefs["comparison"] == "v1_vs_opponent_v0"].set_index("agent")["kl"]
    assert kl["tom1"] < kl["tom0"] - 0.1 and kl["tom2"] < kl["tom0"] - 0.1


class CountedPlayer(ScriptedPlayer):
    """The scripted player, answering with a usage block as a provider does."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        reply = super().__call__(request)
        return dataclasses.replace(reply, usage=(1200, 30))


def test_an_llm_config_runs_against_the_scripted_server_and_its_report_counts_tokens_and_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "name": "llm-to-report",
        "instances": {"set": "paper", "first": 2},
        "focal": {"agents": ["llm:openai:gpt-4o-mini"], "tom_orders": [[0], [0, 1]]},
        "opponent": {"agent": "same", "tom_orders": [0]},
        "swap_seats": False,
        "game": {"max_turns": 2},
        "concurrency": 4,
    }
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out, report_dir = tmp_path / "run", tmp_path / "report"
    store = f"sqlite:///{tmp_path / 'experiments.db'}"
    run = ("experiment", "run", str(path), "--store", store, "--out", str(out), "--no-progress")
    with scripted_provider(  # the player answers the probe too, so every call carries the usage block
        monkeypatch, CountedPlayer(accept_every=1), model="gpt-4o-mini-2024-07-18", answer_probes=False
    ) as server:
        said = tradecraft(*run)
        requests = len(server.requests)
    assert "4/4 games finished, 0 failed" in said
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["reported"] == ["gpt-4o-mini-2024-07-18"]
    tradecraft("analyze", str(out), "--out", str(report_dir), "--no-progress")
    assert embedded_figures(report_dir / "report.html") >= 1
    outcomes = pd.read_parquet(report_dir / "tables" / "outcomes.parquet")
    assert outcomes["llm_calls"].sum() == requests > 0  # both seats are the model: every call counted once
    assert outcomes["input_tokens"].sum() == 1200 * requests
    # 1200 in (none cached) and 30 out per call at gpt-4o-mini's price: 0.15 and 0.60 USD per million
    assert outcomes["cost_usd"].sum() == pytest.approx(requests * (1200 * 0.15 + 30 * 0.60) / 1e6)
    summary = pd.read_parquet(report_dir / "tables" / "outcome_summary.parquet")
    assert set(summary["group"]) == {"V0", "V0+V1"} and set(summary["agent"]) == {"gpt-4o-mini"}
