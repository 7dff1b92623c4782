"""``tradecraft study``: the study commands, gathered from the server's study package and (for ``simulate``,
a client of a running server) the agents package; each module loads only when its command runs."""

from __future__ import annotations

import click

from tradecraft.cli import LazyGroup

STUDY_COMMANDS: dict[str, tuple[str, str]] = {
    "create": (
        "server.web.study.cli:create_command",
        "Validate a study definition (YAML) and store it, open.",
    ),
    "list": ("server.web.study.cli:list_command", "Every study, its status and its participants' outcomes."),
    "pause": ("server.web.study.cli:pause_command", "Pause a study: nobody new is admitted."),
    "resume": ("server.web.study.cli:resume_command", "Reopen a paused study."),
    "close": ("server.web.study.cli:close_command", "Close a study for good."),
    "export": (
        "server.web.study.cli:export_command",
        "Export a study's tables and games (JSONL, CSV, Parquet).",
    ),
    "payments": ("server.web.study.cli:payments_command", "Bonus payments CSV batches, never paying twice."),
    "simulate": ("agents.study_simulation:simulate_command", "Run a study with simulated participants."),
}


@click.group("study", cls=LazyGroup, lazy=STUDY_COMMANDS)
def study_group() -> None:
    """Studies: from a recruitment link to a completion code (docs/studies.md)."""
