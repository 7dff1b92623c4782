"""The experiment runner on real bot games in real SQLite stores: a run, a rerun that replays nothing,
determinism, retries of errored games, Ctrl-C, kill -9 and resume through the CLI."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from experiment_support import (
    bots_config,
    digests,
    experiment_games,
    finished_by_job,
    validated,
    write_config,
)

from agents.experiments import jobs as jobs_module
from agents.experiments.cli import experiment_group
from agents.experiments.config import ExperimentError
from agents.experiments.executors import LocalExecutor
from agents.experiments.jobs import INTERRUPTED, JobOutcome
from agents.experiments.manifest import MANIFEST_FILE
from agents.experiments.plan import plan_jobs
from agents.experiments.runner import failure_digest, run_experiment
from server.store import StoreError, open_store
from server.table.game_logs import load_game_log

pytestmark = pytest.mark.slow


def _run(raw: dict, tmp_path: Path, name: str = "run", **kwargs):
    out = tmp_path / name
    url = f"sqlite:///{out / 'store.db'}"
    report = run_experiment(
        validated(raw),
        raw,
        store_url=url,
        out=out,
        executor=kwargs.pop("executor", LocalExecutor(2, processes=0)),
        progress=False,
        **kwargs,
    )
    return report, open_store(url), out


def test_a_bots_run_stores_every_game_and_a_rerun_replays_none(tmp_path: Path) -> None:
    raw = bots_config()
    report, store, out = _run(raw, tmp_path)
    assert report.summary["finished"] == report.summary["jobs"] == 4
    games = experiment_games(store, "small")
    assert len(games) == 4 and {g["status"] for g in games} == {"finished"}
    for game in games:
        assert game["source"] == "experiment" and game["attempt"] == 1
        assert game["condition"] in ("tom0 V0+V1+V2 vs tom0 V0", "tom1 V0+V1+V2 vs tom0 V0")
        focal = [seat for seat in game["seats"] if seat["focal"]]
        assert len(focal) == 1 and focal[0]["seat"] == game["labels"]["focal_seat"]
        assert focal[0]["tom_orders"] == [0, 1, 2] and focal[0]["kind"] == "bot"
        opponent = next(seat for seat in game["seats"] if not seat["focal"])
        assert opponent["bot"] == "tom0" and opponent["tom_orders"] == [0]
        assert game["settings"]["tom_orders"][opponent["seat"]] == [0]
        log = load_game_log(store, game["game_id"])
        assert log.replay_error is None and log.game is not None and log.game.finished
        assert log.game.log_digest() == game["log_sha256"]  # the stream holds the whole game
        assert log.log.header.source == "experiment"
        assert any(e.type == "tom_reported" for e in log.log.events)
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["experiment"] == "small" and manifest["store"].startswith("sqlite:///")
    assert manifest["config"]["given"] == raw and manifest["jobs"] == 4
    assert manifest["prompts"]["personas"]["fair"]["sha256"]
    assert manifest["summary"]["finished"] == 4

    again, store, _ = _run(raw, tmp_path)
    assert again.outcomes == [] and again.summary["finished"] == 4
    assert len(experiment_games(store, "small")) == 4

    url = manifest["store"]
    listed = CliRunner().invoke(experiment_group, ["list", "--store", url])
    assert listed.exit_code == 0 and listed.output.startswith("small\t4 games")
    status = CliRunner().invoke(experiment_group, ["status", "small", "--store", url, "--json"])
    assert status.exit_code == 0, status.output
    conditions = json.loads(status.output)["conditions"]
    assert {label: c["finished"] for label, c in conditions.items()} == {
        "tom0 V0+V1+V2 vs tom0 V0": 2,
        "tom1 V0+V1+V2 vs tom0 V0": 2,
    }


def test_the_same_config_and_seed_give_the_same_games(tmp_path: Path) -> None:
    raw = bots_config()
    _, first, _ = _run(raw, tmp_path, "one")
    _, second, _ = _run(raw, tmp_path, "two", executor=LocalExecutor(2, processes=2))  # threads vs processes
    assert digests(first, "small") == digests(second, "small") and len(digests(first, "small")) == 4
    _, other_seed, _ = _run(bots_config(seeds=[7]), tmp_path, "three")
    assert set(digests(other_seed, "small").values()) != set(digests(first, "small").values())


def test_a_changed_config_is_refused_with_the_keys_that_differ(tmp_path: Path) -> None:
    _run(bots_config(), tmp_path)
    with pytest.raises(Exception) as caught:
        _run(bots_config(repetitions=2), tmp_path)
    assert getattr(caught.value, "code", None) == "config_changed"
    assert "repetitions" in str(caught.value) and "new `name:`" in str(caught.value)


def test_a_seat_that_cannot_be_built_stops_the_run_before_any_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an LLM seat whose provider has no key: said once, before anything is played or stored
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    raw = bots_config(name="no-key", focal={"agents": ["llm:openai:gpt-4o"], "tom_orders": [[0]]})
    with pytest.raises(ExperimentError) as refused:
        _run(raw, tmp_path)
    assert refused.value.code == "seat_unavailable" and "OPENAI_API_KEY" in refused.value.message
    assert "llm:openai:gpt-4o" in refused.value.message and not (tmp_path / "run").exists()
    path = write_config(tmp_path, raw)
    said = CliRunner().invoke(experiment_group, ["run", str(path), "--out", str(tmp_path / "cli")])
    assert said.exit_code == 1 and "cannot be played" in said.output and "Traceback" not in said.output


def test_an_errored_game_is_rerun_up_to_max_attempts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a seat that builds once but whose provider is gone when its games start: every attempt fails
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")

    def provider_gone(spec: str, seed: int) -> object:
        raise RuntimeError("the provider refused the connection")

    monkeypatch.setattr(jobs_module, "make_policy", provider_gone)
    raw = bots_config(
        name="broken",
        focal={"agents": ["llm:openai:gpt-4o"], "tom_orders": [[0]]},
        swap_seats=False,
        max_attempts=2,
    )
    report, store, _ = _run(raw, tmp_path)
    assert report.summary["failed"] == 1 and report.summary["finished"] == 0
    games = sorted(experiment_games(store, "broken"), key=lambda g: g["attempt"])
    assert [g["attempt"] for g in games] == [1, 2]
    assert all(g["status"] == "aborted" and "refused the connection" in g["error"]["message"] for g in games)
    assert failure_digest(report)[0].startswith("2 x ")  # the CLI's closing lines name the commonest errors
    again, store, _ = _run(raw, tmp_path)
    assert again.outcomes == [] and len(experiment_games(store, "broken")) == 2  # attempts used up


def test_a_store_failure_mid_game_is_retried_in_the_same_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = jobs_module._Streamer.__call__
    failed: list[str] = []

    def flaky(self, progress):  # the first game's third move cannot be stored
        if not failed and len(progress.game.events) > 2:
            failed.append(self.game_id)
            raise StoreError("backend_down", "injected store failure")
        return real(self, progress)

    monkeypatch.setattr(jobs_module._Streamer, "__call__", flaky)
    report, store, _ = _run(bots_config(swap_seats=False), tmp_path)
    assert report.summary["finished"] == 2 and report.summary["failed"] == 0
    broken = store.get_game(failed[0])
    assert broken["status"] == "aborted" and broken["error"]["code"] == "backend_down"
    rerun = finished_by_job(store, "small")[broken["job_key"]]
    assert len(rerun) == 1 and rerun[0]["attempt"] == 2


def test_a_game_taken_for_a_dead_runners_is_not_finished_behind_the_resumed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    job = plan_jobs(validated(bots_config()), url)[0]
    real = jobs_module._Streamer.__call__

    def resumed_meanwhile(self, progress):  # another run's scan marks the game interrupted mid-play
        real(self, progress)
        if len(progress.game.events) > 2:
            self.store.update_game(
                self.game_id, status="aborted", error={"code": INTERRUPTED, "message": "x"}
            )

    monkeypatch.setattr(jobs_module._Streamer, "__call__", resumed_meanwhile)
    outcome = jobs_module.play_job(job)
    assert outcome.status == "error" and outcome.interrupted
    assert open_store(url).get_game(job.game_id)["status"] == "aborted"


def test_a_worker_that_dies_costs_an_attempt_not_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.experiments import executors

    died: list[str] = []

    def dying(job, limiter=None):  # the first game's worker goes away before it can answer
        if not died:
            died.append(job.key)
            raise RuntimeError("worker lost")
        return jobs_module.play_job(job, limiter)

    monkeypatch.setattr(executors, "play_job", dying)
    report, store, _ = _run(bots_config(swap_seats=False), tmp_path)
    assert report.summary["finished"] == 2
    failed = [o for o in report.outcomes if o.status == "error"]
    assert [o.error["code"] for o in failed] == ["worker_failed"] and failed[0].key == died[0]
    assert finished_by_job(store, "small")[died[0]][0]["attempt"] == 1  # the lost attempt left no gap
    again, store, _ = _run(bots_config(swap_seats=False), tmp_path)
    assert again.outcomes == [] and len(experiment_games(store, "small")) == 2


def test_a_killed_worker_process_loses_its_pool_not_the_run(tmp_path: Path) -> None:
    # kill -9 one worker process mid-run: the pool breaks (the other worker is torn down too), a new
    # pool plays on, the cut-off games are interrupted (not failed), every game finishes once
    raw = bots_config(name="lost", instances={"set": "paper", "first": 2})  # 8 games
    killed: list[int] = []

    def kill_a_worker(outcome: JobOutcome) -> None:
        workers = multiprocessing.active_children()
        if not killed and workers:
            killed.append(workers[0].pid or 0)
            os.kill(workers[0].pid or 0, signal.SIGKILL)

    report, store, _ = _run(raw, tmp_path, executor=LocalExecutor(2, processes=2), on_outcome=kill_a_worker)
    assert killed and report.summary["finished"] == 8 and report.summary["failed"] == 0
    errors = [o.error["code"] for o in report.outcomes if o.error]
    assert set(errors) <= {INTERRUPTED}
    assert all(len(found) == 1 for found in finished_by_job(store, "lost").values())
    aborted = [g for g in experiment_games(store, "lost") if g["status"] != "finished"]
    assert all(g["status"] == "aborted" and g["error"]["code"] == INTERRUPTED for g in aborted)
    assert len(aborted) == len(errors)
    _, clean, _ = _run(raw, tmp_path, "clean")
    assert digests(store, "lost") == digests(clean, "lost")


def test_ctrl_c_stops_cleanly_and_resume_finishes(tmp_path: Path) -> None:
    raw = bots_config()

    def interrupt(outcome: JobOutcome) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(raw, tmp_path, on_outcome=interrupt)
    store = open_store(f"sqlite:///{tmp_path / 'run' / 'store.db'}")
    games = experiment_games(store, "small")
    assert "running" not in {g["status"] for g in games}
    aborted = [g for g in games if g["status"] == "aborted"]
    assert all(g["error"]["code"] == INTERRUPTED for g in aborted)
    manifest = json.loads((tmp_path / "run" / MANIFEST_FILE).read_text())
    assert manifest["summary"]["interrupted"] is True

    report, store, _ = _run(raw, tmp_path)
    assert report.summary["finished"] == 4
    assert all(len(found) == 1 for found in finished_by_job(store, "small").values())
    _, clean, _ = _run(raw, tmp_path, "clean")
    assert digests(store, "small") == digests(clean, "small")


def _start_cli(tmp_path: Path, raw: dict) -> tuple[subprocess.Popen, list[str], str]:
    """The CLI running ``raw`` in its own process group (as from a terminal), once some games finished."""
    config = write_config(tmp_path, raw)
    out = tmp_path / "out"
    url = f"sqlite:///{out / 'store.db'}"
    tradecraft = Path(sys.executable).with_name("tradecraft")  # the installed console script
    args = ["run", str(config), "--out", str(out), "--store", url, "--no-progress"]
    proc = subprocess.Popen(
        [str(tradecraft), "experiment", *args], start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if out.joinpath("store.db").exists() and len(finished_by_job(open_store(url), raw["name"])) >= 3:
            break
        time.sleep(0.2)
    if proc.poll() is not None:
        pytest.fail(f"the run ended before it could be stopped: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
    return proc, args, url


def test_ctrl_c_of_the_cli_stores_running_games_as_interrupted(tmp_path: Path) -> None:
    raw = bots_config(name="stopped", instances={"set": "paper", "first": 3}, concurrency=2)  # 12 games
    proc, args, url = _start_cli(tmp_path, raw)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the runner and its workers
    assert proc.wait(timeout=60) == 130
    store = open_store(url)
    games = experiment_games(store, "stopped")
    assert "running" not in {g["status"] for g in games}
    assert all(g["error"]["code"] == INTERRUPTED for g in games if g["status"] == "aborted")
    before = finished_by_job(store, "stopped")
    assert len(before) < 12
    result = CliRunner().invoke(experiment_group, args)
    assert result.exit_code == 0, result.output
    after = finished_by_job(store, "stopped")
    assert len(after) == 12 and all(len(found) == 1 for found in after.values())


def test_kill_9_mid_run_then_resume_repeats_no_finished_game(tmp_path: Path) -> None:
    raw = bots_config(name="killed", instances={"set": "paper", "first": 3}, concurrency=1)  # 12 games
    proc, args, url = _start_cli(tmp_path, raw)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its worker processes, no goodbyes
    proc.wait()
    store = open_store(url)
    before = finished_by_job(store, "killed")
    assert 3 <= len(before) < 12
    # usually one game was cut off mid-play (between two games there is none)
    cut_off = [g["game_id"] for g in experiment_games(store, "killed") if g["status"] == "running"]

    result = CliRunner().invoke(experiment_group, args)
    assert result.exit_code == 0, result.output
    after = finished_by_job(store, "killed")
    assert len(after) == 12 and all(len(games) == 1 for games in after.values())
    for key, games in before.items():  # a game finished before the kill is the one kept
        assert after[key][0]["game_id"] == games[0]["game_id"]
    aborted = {g["game_id"]: g for g in experiment_games(store, "killed") if g["status"] == "aborted"}
    assert set(aborted) == set(cut_off) and all(g["error"]["code"] == INTERRUPTED for g in aborted.values())
    _, clean, _ = _run(raw, tmp_path, "clean")
    assert digests(store, "killed") == digests(clean, "killed")

    out = tmp_path / "out"
    status = CliRunner().invoke(experiment_group, ["status", str(out), "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["total"]["finished"] == 12
    exported = CliRunner().invoke(experiment_group, ["export", str(out), "--out", str(tmp_path / "logs")])
    assert exported.exit_code == 0, exported.output
    logs = sorted((tmp_path / "logs").glob("*.jsonl"))
    assert len(logs) == 12 and json.loads(logs[0].read_text().splitlines()[0])["source"] == "experiment"


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc: Linux)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_kill_9_of_the_runner_alone_ends_its_worker_processes(tmp_path: Path) -> None:
    raw = bots_config(name="orphans", instances={"set": "paper", "first": 3}, concurrency=2)
    proc, _, _ = _start_cli(tmp_path, raw)
    workers = [pid for pid in _children(proc.pid) if "python" in Path(f"/proc/{pid}/cmdline").read_text()]
    assert workers, "the run has worker processes"
    os.kill(proc.pid, signal.SIGKILL)  # the runner only: its workers are orphaned
    proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.2)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    for pid in alive:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert alive == []
