"""``tradecraft calibrate-difficulty``: measure how hard task instances are by bot self-play, and fit the
difficulty labels to the measure (docs/difficulty.md; the labels are read by :mod:`craft_rules.difficulty`).

The measure: pairs (or trios) of ToM-1 bots play each instance ``repeats`` times (seeded; the first
proposer rotates) under a lobby game's rules (10 turns, or the instance's own limit; passing allowed;
the first win ends the game; no value reports, which never change play). ToM-1 because it is the
lobby's built-in opponent and it trades by modelling what the partner needs, so its games take longer
when more must be negotiated; planner pairs see each other's needs through the planner and finish
almost every deal in one turn, which measures nothing. Per game: whether someone won and after how many
turns; the game's **cost** is its turns to the first win, ``max_turns + 1`` when nobody won.

Generated deals: per group (rule set, players, crafting-runs rule) a seeded sample of deals drawn over
every band's shapes (:func:`craft_rules.taskgen.generate_instance` without a band), each with its
structural score. The two cut points on the score are the pair, among the midpoints between sampled
scores, that minimises the squared deviation of the instances' mean costs from their band's mean (each
band at least :data:`MIN_BAND_SHARE` of the sample), keeping only pairs whose bands are ordered: finish
rate easy >= medium >= hard and mean cost easy <= medium <= hard, and among those the pairs that also
order the mean turns of the won games, when there are any. When no pair orders the bands the group keeps
the guessed cut points (``ordered: false``, ``thresholds: null``; the best pair is kept for the record).

Shipped instances: each is played the same way and labelled by its own mean cost, cut between its
group's band means (``cost_cuts``).

Games run one after another in this process through :func:`agents.local.play_local` (the one policy
loop, refusals answered with the safe move as the experiment runner does); the same arguments give the
same file, whatever the machine (only ``provenance.created`` differs).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from agents.bots.registry import make_policy
from agents.local import derive_seed, play_local
from craft_rules.difficulty import (
    CALIBRATION_PATH,
    GUESSED_THRESHOLDS,
    LEVELS,
    MEASURED_PLAY,
    fingerprint,
    fit_cuts,
    group_key,
    level_of,
)
from craft_rules.loader import load_rule_set
from craft_rules.provenance import package_versions
from craft_rules.taskgen import GenerationError, assess_instance, generate_instance
from craft_rules.tasks import TaskInstance, get_instance, iter_instances
from server.game import GameSettings
from server.game.policy import FALLBACK

POLICY = "tom1"
MAX_TURNS = 10
MIN_BAND_SHARE = 0.15
"""Each band holds at least this share of a group's sample, so no band's figures rest on a handful."""
DEFAULT_GROUPS = ("minecraft/2/rational", "minecraft/2/whole", "minecraft/3/rational", "alchemy/2/rational")
MAX_SAMPLES = 2000
MAX_REPEATS = 50


@dataclass(frozen=True)
class Measured:
    """One instance's games, summed: how many, how many someone won, and the turns those wins took."""

    instance_id: str
    score: float
    max_turns: int
    games: int
    wins: int
    finished_turns: int
    """Turns to the first win, summed over the won games."""

    @property
    def finish_rate(self) -> float:
        return self.wins / self.games

    @property
    def mean_cost(self) -> float:
        """Mean turns to the first win, a game nobody won counting ``max_turns + 1``."""
        return (self.finished_turns + (self.games - self.wins) * (self.max_turns + 1)) / self.games

    def row(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "score": self.score,
            "max_turns": self.max_turns,
            "games": self.games,
            "wins": self.wins,
            "finished_turns": self.finished_turns,
            "finish_rate": round(self.finish_rate, 4),
            "mean_turns": round(self.finished_turns / self.wins, 3) if self.wins else None,
            "mean_cost": round(self.mean_cost, 3),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Measured:
        """A recorded row back (``--refit``); rows written before ``wins`` was recorded hold exact enough
        rounded means to give the counts back."""
        games = int(row["games"])
        wins = int(row["wins"]) if "wins" in row else round(row["finish_rate"] * games)
        turns = (
            int(row["finished_turns"]) if "finished_turns" in row else round((row["mean_turns"] or 0) * wins)
        )
        return cls(
            row["instance_id"], float(row["score"]), int(row.get("max_turns", MAX_TURNS)), games, wins, turns
        )


def settings_for(instance: TaskInstance, repeat: int) -> GameSettings:
    return GameSettings(
        ruleset=instance.ruleset,
        max_turns=MAX_TURNS,
        crafting_runs=instance.crafting_runs or "rational",
        tom_orders=[],
        first_proposer=repeat % instance.players,
        **MEASURED_PLAY,
    )


def measure(instance: TaskInstance, score: float, repeats: int, seed: int) -> Measured:
    """Play ``instance`` ``repeats`` times with ToM-1 bots in every seat."""
    rules = load_rule_set(instance.ruleset)
    finished: list[bool] = []
    turns: list[int] = []
    for repeat in range(repeats):
        game_seed = derive_seed(seed, instance.id, repeat)
        policies = [
            make_policy(POLICY, derive_seed(game_seed, "seat", seat)) for seat in range(instance.players)
        ]
        settings = settings_for(instance, repeat)
        result = play_local(instance, settings, rules, policies, game_seed, on_refusal=FALLBACK)
        finished.append(bool(result.winners))
        turns.append(result.turns)
    limit = instance.turn_limit(MAX_TURNS)
    won = [t for done, t in zip(finished, turns, strict=True) if done]
    return Measured(instance.id, score, limit, len(finished), len(won), sum(won))


def _band_figures(members: Sequence[Measured]) -> dict[str, Any]:
    games = sum(m.games for m in members)
    wins = sum(m.wins for m in members)
    turns = sum(m.finished_turns for m in members)
    return {
        "instances": len(members),
        "games": games,
        "finish_rate": round(wins / games, 4) if games else None,
        "mean_turns": round(turns / wins, 3) if wins else None,
        "mean_cost": round(sum(m.mean_cost for m in members) / len(members), 3) if members else None,
    }


def _split(sample: Sequence[Measured], cuts: tuple[float, float]) -> dict[str, list[Measured]]:
    bands: dict[str, list[Measured]] = {level: [] for level in LEVELS}
    for m in sample:
        bands[level_of(m.score, cuts)].append(m)
    return bands


def fit_thresholds(sample: Sequence[Measured]) -> tuple[tuple[float, float], int]:
    """The score cut points for ``sample`` and how well they order its bands: the pair of the best order
    level with the least squared deviation of the deals' mean costs from their band's (the one fitting
    rule, :func:`craft_rules.difficulty.fit_cuts`)."""
    least = max(1, int(MIN_BAND_SHARE * len(sample) + 0.999))
    fitted = fit_cuts(sample, lambda m: m.score, lambda m: m.mean_cost, _band_figures, least)
    if fitted is None:
        scores = len({m.score for m in sample})
        raise click.ClickException(
            f"a sample of {len(sample)} deals with {scores} distinct scores cannot make three bands of "
            f"at least {least}; give more --samples"
        )
    return fitted


def _parse_group(text: str) -> tuple[str, int, str]:
    parts = text.split("/")
    if len(parts) != 3 or not parts[1].isdigit() or parts[2] not in ("rational", "whole"):
        raise click.BadParameter(f"{text!r}: a group is RULESET/PLAYERS/RUNS, e.g. minecraft/2/rational")
    return parts[0], int(parts[1]), parts[2]


def calibrate(
    groups: Iterable[str],
    samples: int,
    repeats: int,
    seed: int,
    *,
    shipped: bool = True,
    progress: Callable[[int], None] | None = None,
    created: str | None = None,
    command: str = "",
) -> dict[str, Any]:
    """The calibration record for ``groups`` (and the shipped instances of those groups when ``shipped``)."""
    tick = progress or (lambda _n: None)
    wanted = [_parse_group(g) for g in groups]
    measured: dict[str, list[Measured]] = {}
    failed: dict[str, int] = {}
    for ruleset, players, runs in wanted:
        key = group_key(ruleset, players, runs)
        rules = load_rule_set(ruleset)
        measured[key], failed[key] = [], 0
        for index in range(samples):
            try:
                dealt = generate_instance(
                    rules,
                    players,
                    derive_seed(seed, key, index),
                    crafting_runs=runs,  # type: ignore[arg-type]
                    instance_id=f"calibration/{key}#{index}",
                )
            except GenerationError:
                failed[key] += 1
                tick(repeats)
                continue
            score = float(dealt.instance.difficulty["score"])
            measured[key].append(measure(dealt.instance, score, repeats, seed))
            tick(repeats)
    files: list[tuple[str, Measured, str]] = []
    if shipped:
        for instance in _shipped(wanted):
            key = group_key(instance.ruleset, instance.players, instance.crafting_runs)
            report = assess_instance(load_rule_set(instance.ruleset), instance)
            score = float(report.difficulty.get("score", 0.0))
            made = fingerprint(instance.hands, instance.targets)
            files.append((key, measure(instance, score, repeats, seed), made))
            tick(repeats)
    provenance = {
        "command": command,
        "policy": POLICY,
        "seed": seed,
        "samples": samples,
        "repeats": repeats,
        "max_turns": MAX_TURNS,
        "min_band_share": MIN_BAND_SHARE,
        "created": created or dt.date.today().isoformat(),
        "versions": {k: v for k, v in package_versions().items() if k in ("python", "tradecraft")},
    }
    return fit(measured, failed, files, provenance)


def fit(
    measured: dict[str, list[Measured]],
    failed: dict[str, int],
    files: Sequence[tuple[str, Measured, str]],
    provenance: dict[str, Any],
) -> dict[str, Any]:
    """The record from the games' outcomes: per group the fitted cut points (or, when no pair of cut points
    orders the bands, none: the group keeps the guessed ones, and its bands are measured under them), per
    shipped instance its label by cost."""
    out_groups: dict[str, Any] = {}
    for key, sample in measured.items():
        cuts, order = fit_thresholds(sample)
        ordered = order > 0
        shown = cuts if ordered else GUESSED_THRESHOLDS
        bands = {level: _band_figures(members) for level, members in _split(sample, shown).items()}
        means = [bands[level]["mean_cost"] for level in LEVELS]
        limits = {m.max_turns for m in sample}
        out_groups[key] = {
            # the turn limit the sample was played with (figures belong to it), null when it varied
            "max_turns": limits.pop() if len(limits) == 1 else None,
            "ordered": ordered,
            "ordered_on": ["finish_rate", "mean_cost", "mean_turns"][: order + 1] if ordered else [],
            # null when no cut points order the bands: the score does not tell this group's deals apart
            "thresholds": {"easy_below": cuts[0], "hard_from": cuts[1]} if ordered else None,
            "best_unordered": None if ordered else {"easy_below": cuts[0], "hard_from": cuts[1]},
            "bands": bands,
            "cost_cuts": [round((means[0] + means[1]) / 2, 3), round((means[1] + means[2]) / 2, 3)]
            if ordered
            else None,
            "deals_not_generated": failed.get(key, 0),
            "sample": [m.row() for m in sample],
        }
    ordered_cuts = [g["cost_cuts"] for g in out_groups.values() if g["ordered"]]
    common = (
        [round(sum(c[i] for c in ordered_cuts) / len(ordered_cuts), 3) for i in (0, 1)]
        if ordered_cuts
        else None
    )
    instances: dict[str, Any] = {}
    for key, one, made in files:
        cuts = out_groups.get(key, {}).get("cost_cuts") or common
        if cuts is None:
            continue
        instances[one.instance_id] = {
            "fingerprint": made,
            **one.row(),
            "level": level_of(one.mean_cost, (cuts[0], cuts[1])),
            "group": key,
        }
    return {
        "provenance": provenance,
        "groups": out_groups,
        "common_cost_cuts": common,
        "instances": instances,
    }


def refit(record: dict[str, Any], command: str) -> dict[str, Any]:
    """Fit an earlier calibration's recorded outcomes again (after a change to the fitting rule), playing
    nothing: the games are deterministic, so this is what the original command would now write."""
    measured = {key: [Measured.from_row(r) for r in g["sample"]] for key, g in record["groups"].items()}
    failed = {key: int(g.get("deals_not_generated", 0)) for key, g in record["groups"].items()}
    files = [
        (r["group"], Measured.from_row(r), r.get("fingerprint") or _shipped_fingerprint(r["instance_id"]))
        for r in record.get("instances", {}).values()
    ]
    provenance = {**record["provenance"], "refit": command}
    return fit(measured, failed, files, provenance)


def _shipped_fingerprint(instance_id: str) -> str:
    instance = get_instance(instance_id)
    return fingerprint(instance.hands, instance.targets)


def _shipped(wanted: Sequence[tuple[str, int, str]]) -> list[TaskInstance]:
    keys = {group_key(*g) for g in wanted}
    return [
        inst for inst in iter_instances() if group_key(inst.ruleset, inst.players, inst.crafting_runs) in keys
    ]


def count_games(groups: Sequence[str], samples: int, repeats: int, shipped: bool) -> int:
    wanted = [_parse_group(g) for g in groups]
    return repeats * (samples * len(wanted) + (len(_shipped(wanted)) if shipped else 0))


def markdown_table(record: dict[str, Any]) -> str:
    """The measured bands per group, as docs/difficulty.md shows them."""
    lines = [
        "| group | band | score | deals | games | finish rate | mean turns to finish | mean cost |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, group in record["groups"].items():
        cut = group["thresholds"]
        low, high = (cut["easy_below"], cut["hard_from"]) if cut else GUESSED_THRESHOLDS
        guessed = "" if cut else " (guessed: not ordered)"
        ranges = {
            "easy": f"< {low}{guessed}",
            "medium": f"{low} – {high}{guessed}",
            "hard": f">= {high}{guessed}",
        }
        for level in LEVELS:
            b = group["bands"][level]
            lines.append(
                f"| {key} | {level} | {ranges[level]} | {b['instances']} | {b['games']} | "
                f"{b['finish_rate']:.0%} | {b['mean_turns']} | {b['mean_cost']} |"
            )
    return "\n".join(lines)


@click.command("calibrate-difficulty")
@click.option(
    "--group",
    "groups",
    multiple=True,
    default=DEFAULT_GROUPS,
    show_default=True,
    help="RULESET/PLAYERS/RUNS to calibrate (repeat the option for several).",
)
@click.option(
    "--samples",
    default=150,
    show_default=True,
    type=click.IntRange(3, MAX_SAMPLES),
    help="Generated deals per group.",
)
@click.option(
    "--repeats", default=4, show_default=True, type=click.IntRange(1, MAX_REPEATS), help="Games per deal."
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--shipped/--no-shipped", default=True, show_default=True, help="Also measure the shipped instances."
)
@click.option(
    "--refit",
    "refit_from",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Play nothing: fit the outcomes recorded in this calibration file again.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=CALIBRATION_PATH,
    show_default=True,
    help="Where to write the calibration (JSON).",
)
def calibrate_command(
    groups: tuple[str, ...],
    samples: int,
    repeats: int,
    seed: int,
    shipped: bool,
    refit_from: Path | None,
    out: Path,
) -> None:
    """Measure difficulty by ToM-1 self-play and fit the labels to it (docs/difficulty.md)."""
    if refit_from is not None:
        try:
            record = refit(
                json.loads(refit_from.read_text(encoding="utf-8")), "tradecraft calibrate-difficulty --refit"
            )
        except (ValueError, KeyError, TypeError) as err:
            raise click.ClickException(
                f"{refit_from} is not a calibration file this command wrote: {err}"
            ) from None
        out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        click.echo(markdown_table(record))
        click.echo(f"wrote {out}")
        return
    for group in groups:
        _parse_group(group)
    command = "tradecraft calibrate-difficulty " + " ".join(
        [*(f"--group {g}" for g in groups), f"--samples {samples}", f"--repeats {repeats}", f"--seed {seed}"]
        + ([] if shipped else ["--no-shipped"])
    )
    total = count_games(groups, samples, repeats, shipped)
    with click.progressbar(length=total, label="ToM-1 games", file=sys.stderr) as bar:
        record = calibrate(
            groups, samples, repeats, seed, shipped=shipped, progress=bar.update, command=command
        )
    out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    click.echo(markdown_table(record))
    click.echo(f"wrote {out}")
