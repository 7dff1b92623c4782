"""``tradecraft study create|list|pause|resume|close|export|payments``: studies straight on the store (no
server needed).

A running server sees every change at once: it reads a study's status from the store on each arrival.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from server.store import Store, open_store
from server.table.config import Settings, load_settings
from server.table.errors import ServerError
from server.table.policies import BotRegistry
from server.web.study.definition import StudyDefinitionError, check_against_settings, load_definition
from server.web.study.exports import (
    EXPORT_FORMATS,
    create_payment_batch,
    export_study,
    list_payment_batches,
    load_payment_batch,
    write_chunks,
)
from server.web.study.records import (
    StudyStatus,
    iter_participants,
    list_studies,
    save_study,
    set_study_status,
)


def open_settings_store(settings: Settings) -> Store:
    if settings.database_uri.startswith("sqlite:///") and ":memory:" not in settings.database_uri:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return open_store(settings.database_uri)


config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), help="settings file (default settings.yaml)"
)


@click.command("create")
@click.argument("definition_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--check", is_flag=True, help="only validate the file against the settings; store nothing")
@config_option
def create_command(definition_file: str, check: bool, config_path: str | None) -> None:
    """Validate a study definition (YAML) and store it, open: its link is /study/<id>."""
    settings = load_settings(config_path)
    try:
        definition = load_definition(definition_file)
        check_against_settings(definition, settings, BotRegistry(settings=settings).require)
    except StudyDefinitionError as err:
        raise click.ClickException(str(err)) from None
    if check:
        click.echo(f"{definition_file}: study {definition.id!r} is valid ({definition.group_size} per game).")
        return
    with open_settings_store(settings) as store:
        try:
            save_study(store, definition)
        except ServerError as err:
            raise click.ClickException(err.message) from None
    param = definition.recruitment.participant_param
    click.echo(f"study {definition.id} created (open). Its link: <server>/study/{definition.id}?{param}=...")


@click.command("list")
@config_option
def list_command(config_path: str | None) -> None:
    """Every study with its status and how many participants are at each outcome."""
    settings = load_settings(config_path)
    with open_settings_store(settings) as store:
        studies = list_studies(store)
        if not studies:
            click.echo("no studies yet: `tradecraft study create FILE` (examples in studies/)")
        for record in studies:
            study_id = str(record.definition["id"])
            counts = Counter(p.outcome or p.step for p in iter_participants(store, study_id))
            shown = ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "no participants"
            click.echo(f"{study_id:<24} {record.status:<7} {record.definition['title'][:40]:<40} {shown}")


def _status_command(name: str, status: StudyStatus, words: str) -> click.Command:
    @click.command(name, help=words)
    @click.argument("study_id")
    @config_option
    def command(study_id: str, config_path: str | None) -> None:
        settings = load_settings(config_path)
        with open_settings_store(settings) as store:
            try:
                set_study_status(store, study_id, status)
            except ServerError as err:
                raise click.ClickException(err.message) from None
        click.echo(f"study {study_id} is {status}")

    return command


pause_command = _status_command("pause", "paused", "Pause a study: nobody new is admitted until it resumes.")
resume_command = _status_command("resume", "open", "Reopen a paused study to new participants.")
close_command = _status_command(
    "close", "closed", "Close a study for good: nobody new; those waiting leave with the no-partner code."
)


def _progress(items: Iterable[Any], unit: str) -> Iterable[Any]:
    """A progress bar on the terminal (none when output is not a terminal)."""
    from tqdm import tqdm

    return tqdm(items, desc=f"{unit}s", unit=unit, disable=None)


@click.command("export")
@click.argument("study_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="jsonl",
    show_default=True,
    help="file format",
)
@click.option(
    "--out", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path), help="file"
)
@config_option
def export_command(study_id: str, fmt: str, out_path: Path, config_path: str | None) -> None:
    """Export a study: its tables (participants, events, comprehension, games, questionnaire, messages) and
    its games' logs, as JSON lines or a zip of CSV or Parquet files (docs/studies.md, Exports)."""
    settings = load_settings(config_path)
    with open_settings_store(settings) as store:
        try:
            chunks, _, _ = export_study(store, study_id, fmt, _progress)
            out_path.parent.mkdir(parents=True, exist_ok=True)
            with out_path.open("wb") as out:
                written = write_chunks(chunks, out)
        except ServerError as err:
            raise click.ClickException(err.message) from None
    click.echo(f"study {study_id} exported to {out_path} ({written} bytes, {fmt})")


@click.command("payments")
@click.argument("study_id")
@click.option("--batch", "batch_id", default=None, help="download this earlier batch again (same file)")
@click.option("--list", "list_only", is_flag=True, help="list the study's batches; write nothing")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), help="CSV file to write")
@config_option
def payments_command(
    study_id: str, batch_id: str | None, list_only: bool, out_path: Path | None, config_path: str | None
) -> None:
    """Bonus payments in the platform's bulk-bonus CSV (<participant id>,<amount> per line). Without --batch:
    a new batch of every finished participant with a bonus whom no earlier batch pays (never twice)."""
    settings = load_settings(config_path)
    with open_settings_store(settings) as store:
        try:
            if list_only:
                for listed in list_payment_batches(store, study_id):
                    shown = listed.summary()
                    click.echo(
                        f"{shown['batch_id']}  {shown['status']:<8} {shown['participants']:>5} participants  "
                        f"{shown['total']} {shown['currency']}"
                    )
                return
            if out_path is None:
                raise click.UsageError("--out PATH is needed (or --list)")
            if batch_id is None:
                batch = create_payment_batch(store, study_id, _progress)
            else:
                batch = load_payment_batch(store, study_id, batch_id)
        except ServerError as err:
            raise click.ClickException(err.message) from None
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(batch.csv(), encoding="utf-8")
    click.echo(
        f"payment batch {batch.batch_id}: {len(batch.rows)} participants, {batch.total} {batch.currency} "
        f"-> {out_path}"
    )
