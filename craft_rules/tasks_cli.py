"""`tradecraft tasks list|validate|generate`: the shipped task instances and new ones.

``--runs rational|whole`` judges instances under that crafting-runs rule; without it each instance is
judged under the rule its file records (the one it was generated for; ``rational`` when none).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from tqdm import tqdm

from craft_rules.cli import emit
from craft_rules.crafting import CraftingRuns
from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.taskgen import (
    DEFAULT_HAND_UNITS,
    DEFAULT_TRADES,
    ITEM_POOLS,
    InstanceReport,
    assess_instance,
    generate_instances,
)
from craft_rules.tasks import TaskInstance, iter_instances, mode_for_players, parse_instance_file


@click.group("tasks")
def tasks_group() -> None:
    """Task instances: list, validate, generate."""


def _collect(ruleset: str | None, mode: str | None, files: tuple[str, ...]) -> list[TaskInstance]:
    if not files:
        return list(iter_instances(ruleset, mode))
    out: list[TaskInstance] = []
    for name in files:
        path = Path(name)
        # a file inside a TC_GAMES-style tree names its rule set and mode by its folders
        rs = ruleset or path.resolve().parent.parent.name
        md = mode or path.resolve().parent.name
        out.extend(parse_instance_file(path, rs, md, prefix=f"{rs}:"))
    return out


def _runs_option(default: str | None, help_text: str):  # type: ignore[no-untyped-def]
    return click.option(
        "--runs", type=click.Choice(["rational", "whole"]), default=default, show_default=True, help=help_text
    )


_JUDGE_HELP = "crafting-runs rule to judge under (default: the rule each instance records)"


def _reports(
    instances: list[TaskInstance], progress: bool, runs: CraftingRuns | None = None
) -> list[InstanceReport]:
    reports = []
    for inst in tqdm(instances, desc="validating", unit="instance", disable=not progress, file=sys.stderr):
        try:
            rules = load_rule_set(inst.ruleset)
        except RuleSetError as err:
            reports.append(InstanceReport(inst.id, inst.ruleset, inst.mode, False, [str(err)]))
            continue
        reports.append(assess_instance(rules, inst, crafting_runs=runs))
    return reports


def _table(reports: list[InstanceReport]) -> str:
    lines = [f"{'id':<40} {'runs':<8} {'valid':<6} {'level':<7} depth steps units trades scarce"]
    for r in reports:
        d = r.difficulty
        if r.valid:
            lines.append(
                f"{r.id:<40} {r.crafting_runs:<8} {'yes':<6} {d['level']:<7} {d['depth']:>5}"
                f" {d['craft_steps']:>5} {d['units_from_others']:>5} {d['min_trades']:>6}"
                f" {'yes' if d['scarce'] else 'no':>6}"
            )
        else:
            lines.append(f"{r.id:<40} {r.crafting_runs:<8} {'NO':<6} " + "; ".join(r.reasons))
    valid = [r for r in reports if r.valid]
    lines.append(f"{len(valid)}/{len(reports)} valid")
    if valid:
        trades = {k: sum(1 for r in valid if min(r.difficulty["min_trades"], 3) == k) for k in (1, 2, 3)}
        scarce = sum(1 for r in valid if r.difficulty["scarce"])
        lines.append(
            f"valid instances by trading steps: 1: {trades[1]}, 2: {trades[2]}, 3+: {trades[3]}; "
            f"scarce: {scarce}"
        )
    return "\n".join(lines)


@tasks_group.command("list")
@click.option("--ruleset", help="only this rule set")
@click.option("--mode", help="only this mode, e.g. 1p_v_1p")
@click.option("--set", "set_name", help="only this instance set (file stem, e.g. paper)")
@_runs_option(None, _JUDGE_HELP)
@click.option("--json", "as_json", is_flag=True, help="one record per instance")
def tasks_list(
    ruleset: str | None, mode: str | None, set_name: str | None, runs: CraftingRuns | None, as_json: bool
) -> None:
    """List shipped instances with their validity and difficulty."""
    instances = _collect(ruleset, mode, ())
    if set_name:
        instances = [i for i in instances if i.id.split("/")[-1].split("#")[0] == set_name]
        if not instances:
            raise click.ClickException(f"no instance set {set_name!r}; `tradecraft tasks list` shows the ids")
    reports = _reports(instances, progress=not as_json, runs=runs)
    emit([r.as_dict() for r in reports], as_json, _table(reports))


@tasks_group.command("validate")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--ruleset", help="rule set of the files (default: their grandparent folder's name)")
@click.option("--mode", help="mode of the files (default: their parent folder's name)")
@_runs_option(None, _JUDGE_HELP)
@click.option("--json", "as_json", is_flag=True, help="one record per instance")
def tasks_validate(
    files: tuple[str, ...], ruleset: str | None, mode: str | None, runs: CraftingRuns | None, as_json: bool
) -> None:
    """Validate FILES (default: every shipped instance); exit 1 if any is invalid."""
    try:
        instances = _collect(ruleset, mode, files)
    except RuleSetError as err:
        raise click.ClickException(str(err)) from err
    reports = _reports(instances, progress=not as_json, runs=runs)
    emit([r.as_dict() for r in reports], as_json, _table(reports))
    if not all(r.valid for r in reports):
        sys.exit(1)


@tasks_group.command("generate")
@click.option("--ruleset", required=True, help="rule set name")
@click.option("--players", default=2, show_default=True, type=click.IntRange(2, 8))
@click.option("--count", default=10, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--out", type=click.Path(dir_okay=False), help="write here (default: print to stdout)")
@_runs_option(
    "rational", "crafting-runs rule the instances are made and validated for (recorded in the file)"
)
@click.option(
    "--pool",
    type=click.Choice([*ITEM_POOLS, "all"]),
    default=None,
    help="items hands are dealt from: survival (common items and intermediates; the default where the rule "
    "set has them) or all (every raw material, the older generator)",
)
@click.option(
    "--hand-units",
    default="-".join(map(str, DEFAULT_HAND_UNITS)),
    show_default=True,
    help="units per hand, LOW-HIGH (survival pool)",
)
@click.option(
    "--trades",
    default=",".join(map(str, DEFAULT_TRADES)),
    show_default=True,
    help="trading steps the k-th instance needs, cycled; the last value means 'at least' (survival pool)",
)
@click.option(
    "--scarcity",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="share of instances whose pooled hands cannot make every target at once (survival pool)",
)
@click.option("--json", "as_json", is_flag=True, help="print one record per instance instead of the file")
def tasks_generate(
    ruleset: str,
    players: int,
    count: int,
    seed: int,
    out: str | None,
    runs: CraftingRuns,
    pool: str | None,
    hand_units: str,
    trades: str,
    scarcity: float,
    as_json: bool,
) -> None:
    """Generate COUNT valid instances, reproducible for a seed.

    The shipped sets are made with e.g. `--ruleset minecraft --count 40 --seed 7 --runs whole
    --scarcity 0.3 --out craft_rules/TC_GAMES/minecraft/1p_v_1p/paper.json`.
    """
    try:
        low, _, high = hand_units.partition("-")
        units = (int(low), int(high or low))
        steps = tuple(int(t) for t in trades.split(","))
    except ValueError:
        raise click.BadParameter("write --hand-units as LOW-HIGH (e.g. 5-11) and --trades as 1,2,3") from None
    rules = load_rule_set(ruleset)
    with tqdm(
        total=count, desc="generating", unit="instance", disable=as_json or not out, file=sys.stderr
    ) as bar:
        try:
            instances = generate_instances(
                rules,
                players,
                count,
                seed,
                crafting_runs=runs,
                item_pool=pool,
                hand_units=units,
                trades=steps,
                scarcity=scarcity,
                progress=bar.update,
            )
        except (ValueError, RuntimeError) as err:
            raise click.ClickException(str(err)) from err
    if out:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        records = [inst.to_json(rules.prefix) for inst in instances]
        path.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if as_json or not out:
        records = [
            {
                "id": i.id,
                "ruleset": i.ruleset,
                "mode": mode_for_players(players),
                "crafting_runs": runs,
                "valid": True,
                "reasons": [],
                "difficulty": i.difficulty,
                **i.to_json(rules.prefix),
            }
            for i in instances
        ]
        emit(records, True, "")
    else:
        click.echo(f"wrote {len(instances)} instances to {out}")
