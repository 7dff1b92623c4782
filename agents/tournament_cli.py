"""`tradecraft tournament`: every ordered pairing of bots over 1-vs-1 instances (:mod:`agents.tournament`)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click
from tqdm import tqdm

from agents.bots.registry import PolicySpecError, make_policy
from agents.tournament import (
    TournamentError,
    game_line,
    player_summary,
    resolve_instances,
    run_games,
    schedule,
    summarise,
    write_outputs,
)

COLUMNS = (
    ("player_a", 10),
    ("player_b", 10),
    ("games", 6),
    ("wins_a", 6),
    ("wins_b", 6),
    ("draws", 6),
    ("turns_to_win", 12),
    ("proposed_a", 10),
    ("accepted_a", 10),
    ("kl_v1_v0_a", 10),
    ("kl_v1_ref_a", 11),
)


def _cell(value: object, width: int) -> str:
    text = "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)
    return " " + text.rjust(width)


@click.command("tournament")
@click.option(
    "--players",
    default="planner,tom0,tom1,tom2,random",
    show_default=True,
    help="comma-separated policy specs (no commas inside options), each plays every other",
)
@click.option(
    "--instances",
    default="paper",
    show_default=True,
    help="an instance set name (paper) or comma-separated ids as `tradecraft tasks list` prints them",
)
@click.option(
    "--repeats",
    type=click.IntRange(1, 1000),
    default=1,
    show_default=True,
    help="games per ordered pairing and instance",
)
@click.option(
    "--focus",
    default="",
    help="comma-separated players: play only the pairings in which one of them plays",
)
@click.option("--seed", type=int, default=0, show_default=True, help="seed of every game and bot")
@click.option("--jobs", type=click.IntRange(1, 64), default=1, show_default=True, help="worker processes")
@click.option("--json", "as_json", is_flag=True, help="print one JSON record per ordered pairing")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="write games.jsonl, pairings.csv, players.csv and summary.json here",
)
def tournament_command(
    players: str,
    instances: str,
    repeats: int,
    focus: str,
    seed: int,
    jobs: int,
    as_json: bool,
    out_dir: Path | None,
) -> None:
    """Play every ordered pairing of PLAYERS (seats swapped) over INSTANCES and print the figures."""
    names = [p.strip() for p in players.split(",") if p.strip()]
    try:
        for name in names:
            make_policy(name, 0)
        ids = resolve_instances(instances)
        focus_names = [p.strip() for p in focus.split(",") if p.strip()]
        specs = schedule(names, ids, repeats, seed, focus=focus_names)
    except PolicySpecError as err:
        raise click.ClickException(f"{err.message} [{err.code}]") from None
    except TournamentError as err:
        raise click.ClickException(f"{err.message} [{err.code}]") from None
    started = time.time()
    # tqdm draws on stderr also when it is not a terminal (a log file shows how far a long run is)
    partial = None
    if out_dir is not None:  # games.jsonl grows game by game: a long run can be read before it ends
        out_dir.mkdir(parents=True, exist_ok=True)
        partial = (out_dir / "games.jsonl").open("w")

    def sink(record: dict[str, Any]) -> None:
        if partial is not None:
            partial.write(game_line(record))
            partial.flush()

    try:
        with tqdm(total=len(specs), desc="games", unit="game", file=sys.stderr, mininterval=2.0) as bar:
            records = run_games(specs, jobs=jobs, progress=bar.update, sink=sink)
    finally:
        if partial is not None:
            partial.close()
    pairings = summarise(records)
    per_player = player_summary(records)
    meta = {
        "players": names,
        "focus": focus_names,
        "instances": instances,
        "instance_count": len(ids),
        "repeats": repeats,
        "seed": seed,
        "jobs": jobs,
        "games": len(records),
        "seconds": round(time.time() - started, 1),
    }
    if out_dir is not None:
        write_outputs(out_dir, records, pairings, per_player, meta)
    if as_json:
        for row in pairings:
            sys.stdout.write(json.dumps(row, sort_keys=True) + "\n")
        return
    click.echo("".join(_cell(name, w) for name, w in COLUMNS))
    for row in pairings:
        click.echo("".join(_cell(row[name], w) for name, w in COLUMNS))
    click.echo("")
    click.echo(
        f"{'player':>10}{'games':>7}{'wins':>6}{'losses':>7}{'draws':>6}{'kl_v1_v0':>10}{'kl_v1_ref':>10}"
    )
    for p in per_player:
        click.echo(
            f"{p['player']:>10}{p['games']:>7}{p['wins']:>6}{p['losses']:>7}{p['draws']:>6}"
            f"{_cell(p['kl_v1_v0'], 10)}{_cell(p['kl_v1_ref'], 10)}"
        )
