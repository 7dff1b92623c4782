"""Read an experiment back from its store: its status per condition, and its games as JSONL logs.

:func:`experiment_status` returns ``{"experiment", "store", "conditions": {label: counts}, "total":
counts}`` where counts are ``jobs``, ``finished``, ``failed`` (attempts used up), ``pending`` (not yet
finished, attempts left), ``attempts`` (games stored, every attempt), ``tokens`` (input / cached / output),
``llm_calls`` and ``cost_usd`` (None when a model is not priced) of every attempt, failed and interrupted
ones too (the money spent), and ``finished_games``: the same three for the finished games only.
:func:`export_logs` writes each finished game's researcher log (:func:`server.table.game_logs.load_game_log`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agents.experiments.config import ExperimentError, parse_config
from agents.experiments.jobs import GameJob
from agents.experiments.manifest import stored_manifest
from agents.experiments.plan import plan_jobs
from agents.experiments.runner import JobState, Spend, scan
from server.game.gamelog import encode_log
from server.store import GameRecord, Store, open_store
from server.table.game_logs import load_game_log


def experiment_jobs(store: Store, name: str, store_url: str) -> tuple[dict[str, Any], list[GameJob]]:
    """The experiment's manifest and its planned jobs (from the config it was started with)."""
    manifest = stored_manifest(store, name)
    if manifest is None:
        raise ExperimentError(
            "unknown_experiment",
            f"the store holds no experiment {name!r}; `tradecraft experiment list --store URL` lists them",
        )
    config = parse_config(manifest["config"]["validated"], f"experiment {name}")
    return manifest, plan_jobs(config, store_url)


def _counts(states: list[JobState], max_attempts: int) -> dict[str, Any]:
    finished = [s.finished for s in states if s.finished is not None]
    failed = sum(1 for s in states if s.finished is None and s.failures >= max_attempts)
    spent, finished_part = Spend(), Spend()
    for state in states:
        for record in state.attempts:
            spent.add_record(record)
    for record in finished:
        finished_part.add_record(record)
    return {
        "jobs": len(states),
        "finished": len(finished),
        "failed": failed,
        "pending": len(states) - len(finished) - failed,
        "attempts": sum(len(s.attempts) for s in states),
        **spent.as_dict(),
        "finished_games": finished_part.as_dict(),
    }


def experiment_status(name: str, store_url: str) -> dict[str, Any]:
    """Counts per condition and in total (see the module docstring)."""
    store = open_store(store_url)
    manifest, jobs = experiment_jobs(store, name, store_url)
    latest = (manifest.get("runs") or [{}])[-1].get("config") or manifest["config"]["validated"]
    max_attempts = int(latest["max_attempts"])  # the last run's: a resume may change it
    states = scan(store, jobs)
    by_condition: dict[str, list[JobState]] = {}
    for state in states:
        by_condition.setdefault(str(state.job.labels.get("condition")), []).append(state)
    return {
        "experiment": name,
        "store": store_url,
        "models": manifest["models"],
        "conditions": {label: _counts(group, max_attempts) for label, group in by_condition.items()},
        "total": _counts(states, max_attempts),
    }


def _safe(game_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", game_id)


def export_logs(
    name: str, store_url: str, out: Path, *, all_attempts: bool = False, progress: bool = False
) -> list[Path]:
    """Write each finished game's log to ``out/<game id>.jsonl`` (``all_attempts``: aborted ones too)."""
    store = open_store(store_url)
    _, jobs = experiment_jobs(store, name, store_url)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    records: list[GameRecord] = []
    for state in scan(store, jobs):
        records += state.attempts if all_attempts else [state.finished] if state.finished else []
    for record in tqdm(records, unit="game", desc="export", disable=not progress):
        log = load_game_log(store, record["game_id"]).log
        path = out / f"{_safe(record['game_id'])}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            handle.writelines(encode_log(log))
        written.append(path)
    return written
