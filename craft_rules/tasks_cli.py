"""`tradecraft tasks list|validate|generate`: the shipped task instances and new ones."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from tqdm import tqdm

from craft_rules.cli import emit
from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.taskgen import InstanceReport, assess_instance, generate_instances
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


def _reports(instances: list[TaskInstance], progress: bool) -> list[InstanceReport]:
    reports = []
    for inst in tqdm(instances, desc="validating", unit="instance", disable=not progress, file=sys.stderr):
        try:
            rules = load_rule_set(inst.ruleset)
        except RuleSetError as err:
            reports.append(InstanceReport(inst.id, inst.ruleset, inst.mode, False, [str(err)]))
            continue
        reports.append(assess_instance(rules, inst))
    return reports


def _table(reports: list[InstanceReport]) -> str:
    lines = [f"{'id':<44} {'valid':<6} {'level':<7} depth steps units trades"]
    for r in reports:
        d = r.difficulty
        if r.valid:
            lines.append(
                f"{r.id:<44} {'yes':<6} {d['level']:<7} {d['depth']:>5} {d['craft_steps']:>5}"
                f" {d['units_from_others']:>5} {d['min_trades']:>6}"
            )
        else:
            lines.append(f"{r.id:<44} {'NO':<6} " + "; ".join(r.reasons))
    valid = sum(r.valid for r in reports)
    lines.append(f"{valid}/{len(reports)} valid")
    return "\n".join(lines)


@tasks_group.command("list")
@click.option("--ruleset", help="only this rule set")
@click.option("--mode", help="only this mode, e.g. 1p_v_1p")
@click.option("--json", "as_json", is_flag=True, help="one record per instance")
def tasks_list(ruleset: str | None, mode: str | None, as_json: bool) -> None:
    """List shipped instances with their validity and difficulty."""
    reports = _reports(_collect(ruleset, mode, ()), progress=not as_json)
    emit([r.as_dict() for r in reports], as_json, _table(reports))


@tasks_group.command("validate")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--ruleset", help="rule set of the files (default: their grandparent folder's name)")
@click.option("--mode", help="mode of the files (default: their parent folder's name)")
@click.option("--json", "as_json", is_flag=True, help="one record per instance")
def tasks_validate(files: tuple[str, ...], ruleset: str | None, mode: str | None, as_json: bool) -> None:
    """Validate FILES (default: every shipped instance); exit 1 if any is invalid."""
    try:
        instances = _collect(ruleset, mode, files)
    except RuleSetError as err:
        raise click.ClickException(str(err)) from err
    reports = _reports(instances, progress=not as_json)
    emit([r.as_dict() for r in reports], as_json, _table(reports))
    if not all(r.valid for r in reports):
        sys.exit(1)


@tasks_group.command("generate")
@click.option("--ruleset", required=True, help="rule set name")
@click.option("--players", default=2, show_default=True, type=click.IntRange(2, 8))
@click.option("--count", default=10, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--out", type=click.Path(dir_okay=False), help="write here (default: print to stdout)")
@click.option("--json", "as_json", is_flag=True, help="print one record per instance instead of the file")
def tasks_generate(ruleset: str, players: int, count: int, seed: int, out: str | None, as_json: bool) -> None:
    """Generate COUNT valid instances, spread from easy to hard, reproducible for a seed.

    Shipped sets are made with e.g. `--ruleset minecraft --count 40 --seed 1 --out
    craft_rules/TC_GAMES/minecraft/1p_v_1p/generated.json`.
    """
    rules = load_rule_set(ruleset)
    instances = generate_instances(rules, players, count, seed)
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
