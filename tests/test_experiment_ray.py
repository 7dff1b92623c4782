"""The Ray executor (agents/experiments/ray_executor.py) against a local Ray instance: the same games as the
local executor, limits shared by every task, `--executor ray` through the CLI, and the message without Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from experiment_support import bots_config, finished_by_job

from agents.experiments.cli import experiment_group
from agents.experiments.config import parse_config
from agents.experiments.jobs import GameJob, JobOutcome, SeatPlan
from agents.experiments.limits import ProviderLimit, RateLimiter
from agents.experiments.runner import run_experiment
from server.game import GameSettings
from server.store import Store, open_store


def finished_digests(store: Store, experiment: str) -> dict[str, list[str]]:
    """Job key -> the log sha256 of each of its finished games (one each when nothing was replayed)."""
    return {
        key: [game["log_sha256"] for game in games]
        for key, games in finished_by_job(store, experiment).items()
    }


@pytest.fixture(scope="module")
def local_ray() -> Any:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_a_bots_only_experiment_through_ray_stores_the_same_games_as_locally(
    local_ray: Any, tmp_path: Path
) -> None:
    from agents.experiments.ray_executor import RayExecutor

    raw = bots_config("ray-equal")
    config = parse_config(raw, "test config")
    local_url, ray_url = f"sqlite:///{tmp_path / 'local.db'}", f"sqlite:///{tmp_path / 'ray.db'}"
    local = run_experiment(config, raw, store_url=local_url, out=tmp_path / "local", progress=False)
    through_ray = run_experiment(
        config,
        raw,
        store_url=ray_url,
        out=tmp_path / "ray",
        executor=RayExecutor(concurrency=2),
        progress=False,
    )
    assert [o.status for o in through_ray.outcomes] == ["finished"] * 4
    expected = finished_digests(open_store(local_url), "ray-equal")
    assert len(expected) == 4
    assert finished_digests(open_store(ray_url), "ray-equal") == expected
    assert (tmp_path / "ray" / "manifest.json").is_file()
    assert through_ray.summary["finished"] == local.summary["finished"] == 4

    again = run_experiment(
        config, raw, store_url=ray_url, out=tmp_path / "ray", executor=RayExecutor(), progress=False
    )
    assert again.outcomes == []  # resume through Ray: nothing replayed
    assert finished_digests(open_store(ray_url), "ray-equal") == expected


def simulated_jobs(store_url: str, games: int) -> list[GameJob]:
    seats = tuple(
        SeatPlan(seat, "simulated_llm?latency=0", "agent", "simulated", "simulated", (0,), focal=seat == 0)
        for seat in range(2)
    )
    settings = GameSettings(max_turns=1, tom_orders=[[0], [0]]).model_dump(mode="json")
    return [
        GameJob("ray-limits", f"g{i}", i, 1, store_url, "minecraft/1p_v_1p/paper#0", seats, settings, i)
        for i in range(games)
    ]


@pytest.mark.slow
def test_every_ray_task_draws_on_one_shared_limiter(local_ray: Any, tmp_path: Path) -> None:
    from agents.experiments.ray_executor import RayExecutor

    window, rpm = 1.0, 8
    limiter = RateLimiter({"simulated": ProviderLimit(requests_per_minute=rpm)}, window=window)
    store_url = f"sqlite:///{tmp_path / 'limits.db'}"
    outcomes: list[JobOutcome] = []
    started = time.monotonic()
    RayExecutor(concurrency=3, limiter=limiter, llm_cpus=0.5).run(
        simulated_jobs(store_url, 3), outcomes.append
    )
    elapsed = time.monotonic() - started
    assert [o.status for o in outcomes] == ["finished"] * 3
    store = open_store(store_url)
    calls = sum(
        1 for o in outcomes for trace in store.load_traces(o.game_id) if trace.get("trace") == "llm_call"
    )
    assert calls >= 3 * 6
    # one budget for all three games: the calls beyond the first window's rpm each wait their turn
    assert elapsed >= (calls // rpm) * window * 0.95, (calls, elapsed)


@pytest.mark.slow
def test_executor_ray_through_the_cli(local_ray: Any, tmp_path: Path) -> None:
    raw = bots_config("ray-cli")
    path = tmp_path / "ray-cli.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    store_url = f"sqlite:///{tmp_path / 'cli.db'}"
    args = ["run", str(path), "--executor", "ray", "--store", store_url, "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(experiment_group, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "4/4 games finished" in result.output
    assert len(finished_digests(open_store(store_url), "ray-cli")) == 4


@pytest.mark.slow
def test_ctrl_c_of_a_ray_run_stores_games_interrupted_and_the_same_command_resumes(
    local_ray: Any, tmp_path: Path
) -> None:
    from agents.experiments.ray_executor import RayExecutor

    raw = {**bots_config("ray-interrupt"), "instances": {"set": "paper", "first": 3}}
    path = tmp_path / "ray-interrupt.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    store_url = f"sqlite:///{tmp_path / 'int.db'}"
    tradecraft = Path(sys.executable).with_name("tradecraft")
    command = [str(tradecraft), "experiment", "run", str(path), "--executor", "ray", "--store", store_url]
    # its own session, as a terminal's job: Ctrl-C reaches the whole process group (its Ray too)
    run = subprocess.Popen(
        [*command, "--out", str(tmp_path / "out"), "--no-progress"],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not finished_digests(open_store(store_url), "ray-interrupt") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert run.poll() is None, "the run ended before it could be interrupted"
        os.killpg(run.pid, signal.SIGINT)
        output, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 130, output
    games = [g for g in open_store(store_url).list_games(limit=100) if g["experiment"] == "ray-interrupt"]
    assert not [g for g in games if g["status"] == "running"]
    stopped = [g for g in games if g["status"] == "aborted"]
    assert all(g["error"]["code"] == "interrupted" for g in stopped)

    config = parse_config(raw, "test config")
    resumed = run_experiment(
        config, raw, store_url=store_url, out=tmp_path / "out", executor=RayExecutor(), progress=False
    )
    assert resumed.summary["finished"] == 12
    by_job = finished_digests(open_store(store_url), "ray-interrupt")
    assert len(by_job) == 12 and all(len(digests) == 1 for digests in by_job.values())


def test_executor_ray_without_ray_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    path = tmp_path / "no-ray.yaml"
    path.write_text(yaml.safe_dump(bots_config("no-ray")), encoding="utf-8")
    args = ["run", str(path), "--executor", "ray", "--store", f"sqlite:///{tmp_path / 'x.db'}"]
    result = CliRunner().invoke(experiment_group, [*args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert "pip install 'tradecraft[ray]'" in result.output
    assert not (tmp_path / "x.db").exists()  # refused before anything was run
