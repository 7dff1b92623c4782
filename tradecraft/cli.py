"""The `tradecraft` command: one entry point that gathers every package's commands, loading each lazily.

Each command lives in its own package and is named here by ``module:attribute``; its module is imported
only when that command runs (or ``--help`` lists it). So ``tradecraft craft possible`` imports neither
Flask nor scipy's solver, and a command whose package fails to import breaks only itself. New commands
join by adding one line to :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib

import click

COMMANDS: dict[str, tuple[str, str]] = {
    "rules": ("craft_rules.cli:rules_group", "Rule sets: list, statistics, comparison with vanilla, import."),
    "craft": (
        "craft_rules.cli:craft_group",
        "Exact crafting: run recipes, plan targets, list what a hand can make.",
    ),
    "tasks": ("craft_rules.tasks_cli:tasks_group", "Task instances: list, generate, check."),
    "play": ("agents.cli:play_command", "Play a headless local game between built-in bots."),
    "bot": (
        "agents.bot_cli:bot_command",
        "Attach a bot or LLM agent to a seat of a game on a running server (Socket.IO, API token).",
    ),
    "bots": (
        "agents.bot_cli:bots_command",
        "The installed policies (bots, LLM agents) and their options: types, bounds, defaults.",
    ),
    "experiment": (
        "agents.experiments.cli:experiment_group",
        "Experiments: run a config's grid of games (resumable, costed), status, list, export.",
    ),
    "calibrate-difficulty": (
        "agents.difficulty_calibration:calibrate_command",
        "Measure difficulty by ToM-1 self-play and fit the easy/medium/hard labels to it.",
    ),
    "tournament": (
        "agents.tournament_cli:tournament_command",
        "Bot tournament: every ordered pairing over 1-vs-1 instances (win rates, KL of V1).",
    ),
    "analyze": (
        "analysis.cli:analyze_command",
        "Analyse games (logs, a store, an experiment): tables, figures and one HTML report.",
    ),
    "export": ("server.web.export:export_command", "Export games from a store (JSONL logs, CSV tables)."),
    "study": ("tradecraft.study_cli:study_group", "Studies: create, list, pause, close, export, simulate."),
    "admin": (
        "server.web.admin_cli:admin_group",
        "Administer a TradeCraft store: API tokens for bots and agents.",
    ),
}
"""Command name -> (``module:attribute`` of its click command, one-line help shown by ``--help``)."""


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use, from :data:`COMMANDS`."""

    def __init__(self, *args: object, lazy: dict[str, tuple[str, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # the short help comes from COMMANDS, so `tradecraft --help` imports no command module
        rows = [(name, self.lazy[name][1]) for name in sorted(self.lazy)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _load(self, name: str) -> click.Command:
        module_name, _, attribute = self.lazy[name][0].partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[name][0]} is not a click command")
        return command


@click.group(cls=LazyGroup, lazy=COMMANDS)
@click.version_option(package_name="tradecraft")
def main() -> None:
    """TradeCraft: a trade-and-craft game and research platform."""
    from craft_rules import lp  # light: numpy and scipy load only when something solves

    lp.SILENCE_SOLVER_STDOUT = True  # keep --json output parseable (see craft_rules.lp)


if __name__ == "__main__":
    main()
