"""The `tradecraft` command: one entry point that gathers every package's commands."""

from __future__ import annotations

import click

from agents.cli import play_command
from craft_rules import planner
from craft_rules.cli import craft_group, rules_group
from craft_rules.tasks_cli import tasks_group
from server.admin import admin_group
from server.export import export_command


@click.group()
@click.version_option(package_name="tradecraft")
def main() -> None:
    """TradeCraft: a trade-and-craft game and research platform."""
    planner.SILENCE_SOLVER_STDOUT = True  # keep --json output parseable (see craft_rules.planner)


main.add_command(rules_group)
main.add_command(craft_group)
main.add_command(tasks_group)
main.add_command(export_command)
main.add_command(play_command)
main.add_command(admin_group)

if __name__ == "__main__":
    main()
