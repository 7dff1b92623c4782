"""`tradecraft rules|craft|tasks ...`: text for people and, with --json, JSON for scripts."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from craft_rules.loader import RuleSetError, load_report, load_rule_set, rule_set_dirs


def emit(data: Any, as_json: bool, text: str) -> None:
    """Print ``data`` as JSON for scripts or ``text`` for people."""
    if as_json:
        json.dump(data, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        click.echo(text)


@click.group("rules")
def rules_group() -> None:
    """Rule sets: list, statistics, comparison with vanilla, import."""


@rules_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def rules_list(as_json: bool) -> None:
    """List the installed rule sets."""
    records = []
    for name, path in rule_set_dirs().items():
        rs = load_rule_set(name)
        records.append({"name": name, "path": str(path), **rs.summary()})
    lines = [f"{r['name']:<12} {r['items']:>5} items {r['recipes']:>5} recipes  {r['path']}" for r in records]
    emit(records, as_json, "\n".join(lines) or "no rule sets installed")


@rules_group.command("check-vanilla")
@click.argument("name")
@click.argument("path", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="machine-readable output (every recipe listed)")
@click.option("--details", is_flag=True, help="list every differing, missing and extra recipe")
def rules_check_vanilla(name: str, path: str, as_json: bool, details: bool) -> None:
    """How completely and exactly rule set NAME reproduces the vanilla data at PATH.

    PATH is a vanilla data pack folder or a Minecraft client .jar. Recipes are matched by content, not
    by id; per recipe type the table counts reproduced, differing, missing and extra recipes.
    """
    from craft_rules.loader import RuleSetError
    from craft_rules.vanilla_check import check_vanilla

    try:
        result = check_vanilla(name, path)
    except RuleSetError as err:
        code = getattr(err, "code", "invalid_rule_set")
        if as_json:
            emit({"ok": False, "error": {"code": code, "path": err.path, "message": str(err)}}, True, "")
            sys.exit(1)
        raise click.ClickException(f"{err} [{code}]") from err
    emit(result.as_dict(), as_json, result.text(details))


@rules_group.command("stats")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--strict", is_flag=True, help="fail on the first malformed file")
def rules_stats(name: str, as_json: bool, strict: bool) -> None:
    """Counts of items, recipes by type, tags and fuels; what loading skipped or could not read."""
    try:
        rs = load_rule_set(name, strict=strict, use_cache=False)
    except RuleSetError as err:
        raise click.ClickException(f"{err.path}: {err.reason} [invalid_rule_set]") from err
    report = load_report(name)
    data = {**rs.summary(), **report.as_dict()}
    lines = [f"rule set {rs.name} (prefix {rs.prefix!r})", f"  items  {len(rs.items)}", "  recipes"]
    lines += [f"    {t:<20} {n}" for t, n in data["recipes_by_type"].items()]
    lines += [f"  tags   {len(rs.tags)}", f"  fuels  {len(rs.fuels.burn_ticks)}"]
    if report.skipped_by_type:
        lines.append(
            "  skipped (special recipes): "
            + ", ".join(f"{k} {v}" for k, v in data["skipped_by_type"].items())
        )
    for problem in data["problems"]:
        lines.append(f"  problem: {problem['path']}: {problem['reason']}")
    emit(data, as_json, "\n".join(lines))


@rules_group.group("import")
def rules_import() -> None:
    """Turn user-supplied game data into a rule set folder (never shipped with TradeCraft).

    The folder is DEST/NAME; DEST defaults to the first folder in $TRADECRAFT_RULE_SETS, else
    ~/.local/share/tradecraft/rule_sets. Rule sets there are found by name when
    $TRADECRAFT_RULE_SETS names that folder.
    """


def _import_options(func: Any) -> Any:
    func = click.option("--json", "as_json", is_flag=True, help="machine-readable output")(func)
    func = click.option("--force", is_flag=True, help="replace an existing imported rule set")(func)
    func = click.option("--dest", type=click.Path(file_okay=False), help="parent folder to write into")(func)
    return click.option("--name", required=True, help="name of the new rule set (its folder name)")(func)


def _run_import(kind: str, source: str, name: str, dest: str | None, force: bool, as_json: bool) -> None:
    from craft_rules.importers import RuleSetImportError, import_datapack, import_little_alchemy
    from craft_rules.loader import RuleSetError

    importer = import_little_alchemy if kind == "little-alchemy" else import_datapack
    try:
        report = importer(source, name, dest, force)
    except RuleSetError as err:
        code = err.code if isinstance(err, RuleSetImportError) else "invalid_rule_set"
        if as_json:
            emit({"ok": False, "error": {"code": code, "path": err.path, "message": str(err)}}, True, "")
            sys.exit(1)
        raise click.ClickException(f"{err} [{code}]") from err
    emit({"ok": True, **report.as_dict()}, as_json, report.text())


@rules_import.command("little-alchemy")
@click.argument("file", type=click.Path(dir_okay=False))
@_import_options
def rules_import_little_alchemy(file: str, name: str, dest: str | None, force: bool, as_json: bool) -> None:
    """A Little Alchemy 2 element table (JSON: {"<id>": {"n": name, "p": [[idA, idB], ...]}})."""
    _run_import("little-alchemy", file, name, dest, force, as_json)


@rules_import.command("datapack")
@click.argument("path", type=click.Path())
@_import_options
def rules_import_datapack(path: str, name: str, dest: str | None, force: bool, as_json: bool) -> None:
    """A vanilla data pack folder (data/<ns>/recipes, data/<ns>/tags/items) or a client .jar / .zip."""
    _run_import("datapack", path, name, dest, force, as_json)
