"""An experiment's manifest: what was run, with which code, config, settings, prompts, models and seeds.

Kept in two places: in the store (the value ``experiment:<name>:manifest``, written once, with the names of
the models the provider reported and the system prompts the LLM seats used appended as
``experiment:<name>:model:<i>`` and ``experiment:<name>:prompt:<i>`` as games finish; every
experiment's name under ``experiments:<i>``; each run under ``experiment:<name>:run:<i>``) and as
``OUT/manifest.json``, rewritten as games finish, which ``tradecraft analyze OUT`` and
``tradecraft experiment status OUT`` read.

``OUT/manifest.json`` keys: ``experiment`` (name), ``store`` (the store URL as given), ``created_at``
(ISO time), ``code`` (``versions`` of the packages, ``git`` commit and whether the work tree was dirty),
``config`` (``given``: the file as written; ``validated``: with every default filled in),
``config_sha256`` (of the keys that decide the games: all but :data:`OPERATIONAL_KEYS`), ``runs`` (every
run: ``at``, ``code``, ``prompts_version``, ``config``: its operational keys), ``settings`` (the game
settings every game shares, before the seats' ToM orders),
``prompts`` (``version``: a digest of every prompt text; ``module_sha256`` of agents/llm/prompts.py;
``personas`` and ``reasoning_modes``: text and sha256 of each; ``system_prompts``: each LLM seat's system
prompt as its games reported it, ``sha256``, ``model``, ``settings``, ``system``), ``models`` (model
names as the provider reported them;
configured names under ``configured``), ``seeds`` (the base seeds and how game and policy seeds derive),
``jobs`` (how many games the plan has), ``conditions`` (their labels) and, after a run, ``summary``
(finished / failed / pending games, tokens, cost).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.experiments.config import ExperimentConfig, ExperimentError
from agents.experiments.jobs import GameJob
from agents.llm import prompts
from craft_rules.provenance import package_versions
from server.store import Store
from server.store.base import json_dumps

MANIFEST_FILE = "manifest.json"
INDEX_KEY = "experiments:{}"
MANIFEST_KEY = "experiment:{}:manifest"
MODEL_KEY = "experiment:{}:model:{}"
PROMPT_KEY = "experiment:{}:prompt:{}"
RUN_KEY = "experiment:{}:run:{}"

OPERATIONAL_KEYS = ("description", "concurrency", "max_attempts", "limits")
"""Config keys that change how a run goes, not which games it plays: a resume may change them."""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def git_state() -> dict[str, Any]:
    """The git commit of the code (and whether the work tree has changes), or nulls outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": bool(dirty)}


def prompt_versions() -> dict[str, Any]:
    """Every prompt text of agents/llm/prompts.py with its sha256, and one ``version`` digest of them all."""
    personas = {name: {"text": text, "sha256": _sha(text)} for name, text in prompts.PERSONAS.items()}
    modes = {name: {"text": text, "sha256": _sha(text)} for name, text in prompts.REASONING_MODES.items()}
    template = _sha(inspect.getsource(prompts))
    version = _sha(json_dumps({"personas": personas, "reasoning_modes": modes, "module": template}))
    return {
        "version": version[:16],
        "module_sha256": template,
        "personas": personas,
        "reasoning_modes": modes,
        "system_prompts": [],  # filled in from the games' llm_prefix traces as they finish
    }


def plan_keys(validated: dict[str, Any]) -> dict[str, Any]:
    """The config keys that decide which games are played (all but :data:`OPERATIONAL_KEYS`)."""
    return {key: value for key, value in validated.items() if key not in OPERATIONAL_KEYS}


def config_digest(validated: dict[str, Any]) -> str:
    """The digest a resumed run's config must match: of :func:`plan_keys` only."""
    return _sha(json_dumps(plan_keys(validated)))


def run_record(manifest: dict[str, Any]) -> dict[str, Any]:
    """One run's entry in the run history: when, which code and prompts, its operational keys."""
    validated = manifest["config"]["validated"]
    return {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "code": manifest["code"],
        "prompts_version": manifest["prompts"]["version"],
        "config": {key: validated.get(key) for key in OPERATIONAL_KEYS},
    }


def code_differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two runs' code and prompts (git commit, uncommitted changes, package
    versions, prompt version), as readable phrases; empty when they ran the same code."""
    found = []
    old_git, new_git = before["code"].get("git") or {}, after["code"].get("git") or {}
    if old_git.get("commit") != new_git.get("commit"):
        found.append(f"git commit {old_git.get('commit')} -> {new_git.get('commit')}")
    elif new_git.get("dirty"):
        found.append("uncommitted changes in the work tree")
    old_versions, new_versions = before["code"].get("versions") or {}, after["code"].get("versions") or {}
    for package in sorted(set(old_versions) | set(new_versions)):
        if old_versions.get(package) != new_versions.get(package):
            found.append(f"{package} {old_versions.get(package)} -> {new_versions.get(package)}")
    if before["prompts_version"] != after["prompts_version"]:
        found.append(f"prompt version {before['prompts_version']} -> {after['prompts_version']}")
    return found


def build_manifest(
    raw: dict[str, Any], config: ExperimentConfig, store_url: str, jobs: list[GameJob]
) -> dict[str, Any]:
    """The manifest of a new experiment (no models reported yet, no summary)."""
    validated = config.model_dump(mode="json")
    configured = sorted({seat.name for job in jobs for seat in job.seats if seat.is_llm})
    return {
        "experiment": config.name,
        "store": store_url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "code": {"versions": package_versions(), "git": git_state()},
        "config": {"given": raw, "validated": validated},
        "config_sha256": config_digest(validated),
        "settings": config.game_settings(),
        "prompts": prompt_versions(),
        "models": {"reported": [], "configured": configured},
        "seeds": {
            "base": list(config.seeds),
            "game": "derive_seed(base, instance_id, repetition) (agents.local.derive_seed)",
            "policy": "derive_seed(game, 'policy', seat, spec)",
        },
        "jobs": len(jobs),
        "conditions": sorted({str(job.labels.get("condition")) for job in jobs}),
    }


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths of the keys whose values differ between two JSON values."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                found.append(where)
            else:
                found += differences(old[key], new[key], where)
        return found
    return [] if old == new else [path or "(the whole config)"]


def stored_manifest(store: Store, name: str) -> dict[str, Any] | None:
    """The manifest an experiment was started with (models reported so far and its run history filled
    in), or None."""
    text = store.get_value(MANIFEST_KEY.format(name))
    if text is None:
        return None
    manifest = json.loads(text)
    manifest["models"]["reported"] = reported_models(store, name)
    manifest["prompts"]["system_prompts"] = reported_prompts(store, name)
    manifest["runs"] = run_history(store, name)
    return manifest


def register(store: Store, manifest: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Store a new experiment's manifest, or check a resumed one plays the same games; append this run to
    the run history. Returns the stored manifest and what differs between the code and prompts of this
    run and the previous one (empty for a first run or the same code: the caller warns).

    Only :func:`plan_keys` must match (``concurrency``, ``max_attempts``, ``limits`` and
    ``description`` may change between runs); else :class:`ExperimentError` ``config_changed`` names the
    keys that differ."""
    name = manifest["experiment"]
    stored_text = store.set_value_if_absent(MANIFEST_KEY.format(name), json_dumps(manifest))
    stored = json.loads(stored_text)
    old, new = plan_keys(stored["config"]["validated"]), plan_keys(manifest["config"]["validated"])
    if config_digest(old) != config_digest(new):
        keys = differences(old, new)
        raise ExperimentError(
            "config_changed",
            f"experiment {name!r} was started with another config (keys that differ: {', '.join(keys)}); "
            "to resume it, run it with its original config; to run this one, give it a new `name:` "
            "(or use another --store)",
        )
    if stored_text == json_dumps(manifest):  # new: list it
        _append(store, INDEX_KEY, name)
    history = run_history(store, name)
    previous = history[-1] if history else {**stored, "prompts_version": stored["prompts"]["version"]}
    this_run = run_record(manifest)
    _append(store, RUN_KEY, json_dumps(this_run), name)
    stored["models"]["reported"] = reported_models(store, name)
    stored["prompts"]["system_prompts"] = reported_prompts(store, name)
    stored["runs"] = [*history, this_run]
    changed = code_differences(previous, this_run) if stored_text != json_dumps(manifest) else []
    return stored, changed


def _append(store: Store, pattern: str, value: str, *prefix: str) -> None:
    """Append ``value`` to an append-only list of store values (``pattern`` numbered from 0)."""
    index = 0
    while True:
        key = pattern.format(*prefix, index)
        if store.set_value_if_absent(key, value) == value:
            return
        index += 1


def _read_list(store: Store, pattern: str, *prefix: str) -> list[str]:
    values, index = [], 0
    while (value := store.get_value(pattern.format(*prefix, index))) is not None:
        values.append(value)
        index += 1
    return values


def run_history(store: Store, name: str) -> list[dict[str, Any]]:
    """Every run of the experiment (:func:`run_record`), first to last."""
    return [json.loads(text) for text in _read_list(store, RUN_KEY, name)]


def reported_models(store: Store, name: str) -> list[str]:
    return _read_list(store, MODEL_KEY, name)


def reported_prompts(store: Store, name: str) -> list[dict[str, Any]]:
    return [json.loads(text) for text in _read_list(store, PROMPT_KEY, name)]


def add_reported(
    store: Store,
    manifest: dict[str, Any],
    models: Sequence[str] = (),
    prompts: Sequence[dict[str, Any]] = (),
) -> bool:
    """Record the model names and system prompts games reported that the manifest lacks (in the store and
    in ``manifest``); True if any was new."""
    name = manifest["experiment"]
    known_models = manifest["models"]["reported"]
    known_prompts = {p["sha256"] for p in manifest["prompts"]["system_prompts"]}
    new_models = [m for m in dict.fromkeys(models) if m not in known_models]
    new_prompts = [p for p in prompts if p["sha256"] not in known_prompts]
    for model in new_models:
        if model not in reported_models(store, name):  # another run may have recorded it meanwhile
            _append(store, MODEL_KEY, model, name)
        known_models.append(model)
    for prompt in new_prompts:
        if prompt["sha256"] not in {p["sha256"] for p in reported_prompts(store, name)}:
            _append(store, PROMPT_KEY, json_dumps(prompt), name)
        manifest["prompts"]["system_prompts"].append(prompt)
        known_prompts.add(prompt["sha256"])
    return bool(new_models or new_prompts)


def experiment_names(store: Store) -> list[str]:
    """Every experiment the store holds, in the order they were started."""
    return _read_list(store, INDEX_KEY)


def write_manifest(out: Path, manifest: dict[str, Any]) -> Path:
    """Write ``OUT/manifest.json`` (atomically: a reader never sees half a file)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / MANIFEST_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_manifest_file(out: Path) -> dict[str, Any]:
    path = out / MANIFEST_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExperimentError(
            "unknown_experiment", f"{path} does not exist: give an experiment's output folder or its name"
        ) from None
