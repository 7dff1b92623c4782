"""``tradecraft experiment``: run, resume, inspect and export experiments (docs/experiments.md).

- ``run CONFIG.yaml [--store URL] [--out DIR] [--concurrency N] [--executor local|ray] [--address ADDR]``:
  run or resume (the same command again) an experiment. CONFIG may also name a shipped example
  (``tradecraft experiment examples``). Exit status 0 when every game finished, 1 when some failed for
  good, 130 when interrupted (run it again to resume).
- ``status NAME|OUT [--store URL]``: games finished / failed / pending per condition; tokens and cost of
  every attempt (the money spent) and of the finished games.
- ``list [--store URL]``: the experiments a store holds.
- ``export NAME|OUT --out DIR [--store URL]``: every finished game's log as JSONL (one file per game).
- ``examples``: the shipped example configs and where they are.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import click

from agents.experiments.config import ExperimentError

EXAMPLES_PACKAGE = "agents.experiments.configs"


def example_configs() -> dict[str, Path]:
    """The shipped example configs: name (file stem) -> path."""
    folder = resources.files(EXAMPLES_PACKAGE)
    return {
        Path(entry.name).stem: Path(str(entry))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".yaml")
    }


def _config_path(text: str) -> Path:
    path = Path(text)
    if path.exists() or text.endswith((".yaml", ".yml")):
        return path
    examples = example_configs()
    if text in examples:
        return examples[text]
    raise click.ClickException(
        f"{text}: no such config file or example; the examples are: {', '.join(examples)}"
    )


def _fail(err: Exception) -> click.ClickException:
    return click.ClickException(getattr(err, "message", str(err)))


def _resolve(target: str, store_url: str | None) -> tuple[str, str, Path | None]:
    """``NAME|OUT`` -> (experiment name, store URL, OUT folder if known)."""
    from agents.experiments.manifest import MANIFEST_FILE, read_manifest_file
    from agents.experiments.runner import default_out, default_store_url

    folder = Path(target)
    if not (folder / MANIFEST_FILE).exists() and (default_out(target) / MANIFEST_FILE).exists():
        folder = default_out(target)
    if (folder / MANIFEST_FILE).exists():
        manifest = read_manifest_file(folder)
        return manifest["experiment"], store_url or manifest["store"], folder
    if store_url is None:
        raise click.ClickException(
            f"{target}: no {MANIFEST_FILE} there or in {default_out(target)}; give the run's --out folder, "
            "or the experiment's name with --store URL"
        )
    return target, store_url or default_store_url(default_out(target)), None


@click.group("experiment")
def experiment_group() -> None:
    """Experiments: a config's grid of games, run concurrently into a store, resumable, costed."""


@experiment_group.command("run")
@click.argument("config")
@click.option("--store", "store_url", default=None, help="store URL; default: a SQLite file in --out")
@click.option("--out", "out", type=click.Path(path_type=Path), default=None, help="default: experiments/NAME")
@click.option(
    "--concurrency", type=click.IntRange(1, 1024), default=None, help="games at once (default: the config's)"
)
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option(
    "--address", default=None, help="with --executor ray: the cluster's address (default: a local Ray)"
)
@click.option("--progress/--no-progress", default=True, show_default=True, help="the progress bar")
def run_command(
    config: str,
    store_url: str | None,
    out: Path | None,
    concurrency: int | None,
    executor: str,
    address: str | None,
    progress: bool,
) -> None:
    """Run (or resume: the same command again) the experiment CONFIG describes."""
    from agents.experiments.config import load_config
    from agents.experiments.runner import failure_digest, run_experiment
    from craft_rules.errors import TradeCraftError

    try:
        raw, validated = load_config(_config_path(config))
    except ExperimentError as err:
        raise _fail(err) from None
    chosen: Any = None
    if executor == "ray":
        from agents.experiments.limits import limiter_from_config
        from agents.experiments.ray_executor import RayExecutor

        try:  # without Ray installed: RayExecutorError ray_not_installed, which says how to install it
            chosen = RayExecutor(
                address=address,
                concurrency=concurrency or validated.concurrency,
                limiter=limiter_from_config(validated.limits),
            )
        except TradeCraftError as err:
            raise _fail(err) from None
    elif address is not None:
        raise click.UsageError("--address is for --executor ray")
    try:
        report = run_experiment(
            validated,
            raw,
            store_url=store_url,
            out=out,
            executor=chosen,
            concurrency=concurrency,
            progress=progress,
        )
    except KeyboardInterrupt:
        click.echo(
            "interrupted: running games were stored as aborted; run the same command to resume", err=True
        )
        sys.exit(130)
    except TradeCraftError as err:
        raise _fail(err) from None
    summary = report.summary
    click.echo(
        f"{validated.name}: {summary['finished']}/{summary['jobs']} games finished, "
        f"{summary['failed']} failed; "
        f"manifest {report.manifest_path}"
    )
    if summary["failed"]:
        for line in failure_digest(report):
            click.echo(f"  {line}", err=True)
        folder = report.manifest_path.parent
        click.echo(f"  every error is stored with its game: tradecraft experiment status {folder}", err=True)
        sys.exit(1)


@experiment_group.command("status")
@click.argument("target")
@click.option("--store", "store_url", default=None, help="the store (default: the one in OUT/manifest.json)")
@click.option("--json", "as_json", is_flag=True, help="print the status as JSON")
def status_command(target: str, store_url: str | None, as_json: bool) -> None:
    """Games finished / failed / pending per condition of experiment NAME (or run folder OUT)."""
    from agents.experiments.status import experiment_status

    name, url, _ = _resolve(target, store_url)
    try:
        status = experiment_status(name, url)
    except ExperimentError as err:
        raise _fail(err) from None
    if as_json:
        click.echo(json.dumps(status, indent=2))
        return
    total = status["total"]
    click.echo(f"experiment {name} ({url})")
    for label, counts in status["conditions"].items():
        click.echo(
            f"  {label}: {counts['finished']} finished, {counts['failed']} failed, "
            f"{counts['pending']} pending"
        )
    click.echo(
        f"total: {total['finished']}/{total['jobs']} finished, {total['failed']} failed, {total['pending']} "
        f"pending; every attempt: {_usage(total)}; finished games: {_usage(total['finished_games'])}"
    )


def _usage(spend: dict[str, Any]) -> str:
    cost = "n/a" if spend["cost_usd"] is None else f"${spend['cost_usd']:.4f}"
    tokens = spend["tokens"]
    return f"tokens in {tokens['input']} cached {tokens['cached']} out {tokens['output']}, cost {cost}"


@experiment_group.command("list")
@click.option("--store", "store_url", default=None, help="store URL (default: every experiments/*/ run here)")
def list_command(store_url: str | None) -> None:
    """The experiments a store holds (name, games planned, started)."""
    from agents.experiments.manifest import experiment_names, stored_manifest
    from agents.experiments.runner import default_out
    from server.store import open_store

    urls = [store_url] if store_url else []
    if not urls:
        parent = default_out("x").parent
        urls = [
            json.loads((path / "manifest.json").read_text())["store"]
            for path in sorted(parent.glob("*"))
            if (path / "manifest.json").exists()
        ]
    found = 0
    for url in dict.fromkeys(urls):
        store = open_store(url)
        for name in experiment_names(store):
            manifest = stored_manifest(store, name) or {}
            click.echo(f"{name}\t{manifest.get('jobs')} games\tstarted {manifest.get('created_at')}\t{url}")
            found += 1
    if not found:
        where = store_url or f"{default_out('x').parent}/*/manifest.json (runs from this directory)"
        click.echo(
            f"no experiments in {where}; give the store a run used: `tradecraft experiment list --store "
            "sqlite:///ABS/PATH/experiment.db` (its manifest.json says which), or run this where the "
            "experiments/ folder is",
            err=True,
        )


@experiment_group.command("export")
@click.argument("target")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True, help="folder for the logs")
@click.option("--store", "store_url", default=None, help="the store (default: the one in OUT/manifest.json)")
@click.option("--all-attempts", is_flag=True, help="also the aborted attempts' logs")
def export_command(target: str, out_dir: Path, store_url: str | None, all_attempts: bool) -> None:
    """Every finished game of experiment NAME (or run folder OUT) as a JSONL game log, one file per game."""
    from agents.experiments.status import export_logs

    name, url, _ = _resolve(target, store_url)
    try:
        written = export_logs(name, url, out_dir, all_attempts=all_attempts, progress=True)
    except ExperimentError as err:
        raise _fail(err) from None
    click.echo(f"wrote {len(written)} game logs to {out_dir}")


@experiment_group.command("examples")
def examples_command() -> None:
    """The example configs that ship with TradeCraft (run one by name: experiment run bots-only)."""
    from agents.experiments.config import read_config

    for name, path in example_configs().items():
        description = str(read_config(path).get("description", "")).strip().splitlines()
        click.echo(f"{name}\t{path}\n    {description[0] if description else ''}")
