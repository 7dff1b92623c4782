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


# --- tradecraft craft ... ---------------------------------------------------------------------------


@click.group("craft")
def craft_group() -> None:
    """Crafting helpers: plan a target from a hand, possible crafts, item info, reference values."""


def _craft_fail(err: Exception, as_json: bool) -> None:
    """A typed error: JSON with a code for scripts, a sentence for people; exit status 1."""
    code = getattr(err, "code", "invalid_rule_set" if isinstance(err, RuleSetError) else "error")
    message = getattr(err, "message", None) or str(err)
    if as_json:
        emit({"ok": False, "error": {"code": code, "message": message}}, True, "")
        sys.exit(1)
    raise click.ClickException(f"{message} [{code}]")


def _ruleset_option(func: Any) -> Any:
    return click.option("--ruleset", default="minecraft", show_default=True, help="rule set name or folder")(
        func
    )


def runs_option(func: Any) -> Any:
    """``--runs rational|whole``: the crafting-runs rule (shared by the craft and tasks commands)."""
    return click.option(
        "--runs",
        "runs",
        type=click.Choice(["rational", "whole"]),
        default="rational",
        show_default=True,
        help="crafting-runs rule: rational (a recipe may run 1/4 times) or whole (whole runs only, as "
        "the original game; fuel still burns in proportion)",
    )(func)


def _counts_text(counts: Any) -> str:
    from craft_rules.crafting import fmt_qty

    return ", ".join(f"{fmt_qty(q)} {item}" for item, q in sorted(counts.items())) or "nothing"


def _steps_text(rules: Any, steps: Any) -> list[str]:
    from craft_rules.crafting import fmt_qty

    lines = []
    for n, step in enumerate(steps, 1):
        recipe = rules.recipes[step.recipe_id]
        picks = [f"{item} for {recipe.ingredients[i].label}" for i, item in sorted(step.choices.items())]
        if step.fuel:
            picks.append(f"{step.fuel} as fuel")
        using = f"  (using {', '.join(picks)})" if picks else ""
        made = f"{fmt_qty(step.produced)} {step.result}"
        lines.append(f"  {n:>2}. {step.recipe_id} x{fmt_qty(step.runs)} -> {made}{using}")
    return lines


@craft_group.command("plan")
@_ruleset_option
@click.option("--hand", required=True, help='items held, JSON: \'{"oak_planks": 1, "coal": 1}\'')
@click.option("--target", required=True, help="the target, JSON: '{\"torch\": 1}'")
@click.option("--available", default=None, help="items others could give (JSON); default: any item")
@runs_option
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def craft_plan(ruleset: str, hand: str, target: str, available: str | None, runs: str, as_json: bool) -> None:
    """Can the hand craft the target within one craft phase? If not, what is missing at least?

    Prints the answer, the crafting depth and number of steps, and one valid craft sequence (exact
    fractional run amounts, the option chosen for tag ingredients and the fuel burnt)."""
    from craft_rules.crafting import floor_hand
    from craft_rules.plan_inputs import PlannerError, parse_counts, parse_target
    from craft_rules.planner import planner_for

    try:
        rules = load_rule_set(ruleset)
        held = parse_counts(rules, hand)
        need = parse_target(rules, target)
        others = None
        if available is not None:
            others = {k: int(v) for k, v in parse_counts(rules, available, integral=True).items()}
        plan = planner_for(rules, whole_runs=runs == "whole").plan(held, need, available=others)
    except (PlannerError, RuleSetError) as err:
        _craft_fail(err, as_json)
        return
    lines = [f"target: {_counts_text(plan.target)}   hand: {_counts_text(plan.hand)}   runs: {runs}"]
    if plan.craftable:
        lines.append(f"craftable within one phase: yes (depth {plan.depth}, {plan.craft_steps} craft steps)")
        lines += _steps_text(rules, plan.steps)
        lines.append(f"final hand: {_counts_text(plan.final_hand)}")
        lines.append(f"after rounding down: {_counts_text(floor_hand(plan.final_hand))}")
    else:
        lines.append("craftable within one phase: no")
        if plan.missing is None:
            lines.append("missing: even everything available does not suffice")
        else:
            lines.append(f"missing (fewest items to obtain): {_counts_text(plan.missing)}")
        if plan.missing_plan is not None:
            with_plan = plan.missing_plan
            lines.append(f"with them: depth {with_plan.depth}, {with_plan.craft_steps} craft steps")
            lines += _steps_text(rules, with_plan.steps)
    emit({"ok": True, "ruleset": rules.name, "runs": runs, **plan.as_dict()}, as_json, "\n".join(lines))


@craft_group.command("possible")
@_ruleset_option
@click.option("--hand", required=True, help='items held, JSON: \'{"oak_planks": 2, "coal": 1}\'')
@runs_option
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def craft_possible(ruleset: str, hand: str, runs: str, as_json: bool) -> None:
    """Every recipe the hand can run now, with the largest run amount it affords."""
    from craft_rules.crafting import fmt_qty
    from craft_rules.plan_inputs import PlannerError, parse_counts
    from craft_rules.planner import planner_for

    try:
        rules = load_rule_set(ruleset)
        crafts = planner_for(rules, whole_runs=runs == "whole").possible_crafts(parse_counts(rules, hand))
    except (PlannerError, RuleSetError) as err:
        _craft_fail(err, as_json)
        return
    lines = [
        f"{c.recipe_id:<40} up to x{fmt_qty(c.max_runs):<8} -> {fmt_qty(c.max_output)} {c.result}"
        for c in crafts
    ]
    emit(
        {"ok": True, "ruleset": rules.name, "runs": runs, "crafts": [c.as_dict() for c in crafts]},
        as_json,
        "\n".join(lines) or "nothing can be crafted from this hand",
    )


@craft_group.command("info")
@_ruleset_option
@click.argument("item")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def craft_info(ruleset: str, item: str, as_json: bool) -> None:
    """An item: display name, recipes that make it and use it, its tags, its fuel value."""
    from craft_rules.plan_inputs import PlannerError
    from craft_rules.planner import planner_for

    try:
        rules = load_rule_set(ruleset)
        info = planner_for(rules).item_info(item)
    except (PlannerError, RuleSetError) as err:
        _craft_fail(err, as_json)
        return
    data = info.as_dict()
    fuel = data["fuel"]
    lines = [
        f"{info.name} ({info.item})" + (f", category {info.category}" if info.category else ""),
        f"  made by ({len(info.made_by)}): "
        + ("; ".join(rules.recipes[r].describe() for r in info.made_by) or "nothing (a raw material)"),
        f"  used by ({len(info.used_by)}): {', '.join(info.used_by) or 'no recipe'}",
        f"  tags: {', '.join(data['tags']) or 'none'}",
        "  fuel: "
        + (
            f"burns {fuel['burn_ticks']} ticks = {fuel['smelts_per_unit']} smelts"
            + (f", leaves {fuel['remainder']}" if fuel["remainder"] else "")
            if fuel
            else "no"
        ),
    ]
    emit({"ok": True, "ruleset": rules.name, **data}, as_json, "\n".join(lines))


@craft_group.command("values")
@_ruleset_option
@click.option("--target", required=True, help="the player's target, JSON: '{\"torch\": 1}'")
@click.option(
    "--hands", required=True, help='public hands, JSON: one hand {"coal": 1} or a list [{...}, {...}]'
)
@runs_option
@click.option("--json", "as_json", is_flag=True, help="machine-readable output (with harm and share)")
def craft_values(ruleset: str, target: str, hands: str, runs: str, as_json: bool) -> None:
    """Reference values (0-10) of the items in the public hands for crafting the target.

    Definition: docs/reference-values.md."""
    from craft_rules.plan_inputs import InvalidQuantityError, PlannerError, parse_counts, parse_target
    from craft_rules.values import value_report

    try:
        rules = load_rule_set(ruleset)
        need = parse_target(rules, target)
        try:
            raw = json.loads(hands)
        except json.JSONDecodeError as exc:
            raise InvalidQuantityError(f"--hands is not valid JSON ({exc.msg})") from exc
        raw_hands = raw if isinstance(raw, list) else [raw]
        parsed = [{k: int(v) for k, v in parse_counts(rules, h, integral=True).items()} for h in raw_hands]
        report = value_report(rules, need, parsed, whole_runs=runs == "whole")
    except (PlannerError, RuleSetError) as err:
        _craft_fail(err, as_json)
        return
    lines = [f"target: {_counts_text(report.target)}   pool: {_counts_text(report.pool)}   runs: {runs}"]
    if report.completed_with:
        lines.append(f"the pool cannot craft it; values assume also {_counts_text(report.completed_with)}")
    lines.append(f"smallest sub-hand ({report.min_units} items): {_counts_text(report.smallest_subhand)}")
    for item, value in sorted(report.values.items(), key=lambda kv: (-kv[1].value, kv[0])):
        lines.append(f"  {value.value:>2}  {item:<32} {value.reason}")
    emit({"ok": True, "ruleset": rules.name, "runs": runs, **report.as_dict()}, as_json, "\n".join(lines))
