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
rate easy >= medium >= hard, mean cost and mean turns to finish easy <= medium <= hard (when no pair is
ordered, the best pair by cost alone, marked ``ordered: false``).

Shipped instances: each is played the same way and labelled by its own mean cost, cut between its
group's band means (``cost_cuts``).

Games run one after another in this process through :func:`agents.local.play_local` (the one policy
loop, refusals answered with the safe move as the experiment runner does); the same arguments give the
same file, whatever the machine (only ``provenance.created`` differs).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from agents.bots.registry import make_policy
from agents.local import derive_seed, play_local
from craft_rules.difficulty import CALIBRATION_PATH, LEVELS, group_key, level_of
from craft_rules.loader import load_rule_set
from craft_rules.provenance import package_versions
from craft_rules.taskgen import GenerationError, assess_instance, generate_instance
from craft_rules.tasks import TaskInstance, iter_instances
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
    """One instance's games: outcomes per repeat."""

    instance_id: str
    score: float
    max_turns: int
    finished: tuple[bool, ...]
    turns: tuple[int, ...]

    @property
    def finish_rate(self) -> float:
        return sum(self.finished) / len(self.finished)

    @property
    def costs(self) -> list[int]:
        return [t if done else self.max_turns + 1 for done, t in zip(self.finished, self.turns, strict=True)]

    @property
    def mean_cost(self) -> float:
        return sum(self.costs) / len(self.costs)

    def row(self) -> dict[str, Any]:
        done = [t for d, t in zip(self.finished, self.turns, strict=True) if d]
        return {
            "instance_id": self.instance_id,
            "score": self.score,
            "games": len(self.finished),
            "finish_rate": round(self.finish_rate, 4),
            "mean_turns": round(sum(done) / len(done), 3) if done else None,
            "mean_cost": round(self.mean_cost, 3),
        }


def settings_for(instance: TaskInstance, repeat: int) -> GameSettings:
    return GameSettings(
        ruleset=instance.ruleset,
        max_turns=MAX_TURNS,
        crafting_runs=instance.crafting_runs or "rational",
        allow_pass=True,
        tom_orders=[],
        first_proposer=repeat % instance.players,
        end_condition="first_win",
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
    return Measured(instance.id, score, limit, tuple(finished), tuple(turns))


def _band_figures(members: Sequence[Measured]) -> dict[str, Any]:
    games = sum(len(m.finished) for m in members)
    wins = sum(sum(m.finished) for m in members)
    done = [t for m in members for d, t in zip(m.finished, m.turns, strict=True) if d]
    return {
        "instances": len(members),
        "games": games,
        "finish_rate": round(wins / games, 4) if games else None,
        "mean_turns": round(sum(done) / len(done), 3) if done else None,
        "mean_cost": round(sum(m.mean_cost for m in members) / len(members), 3) if members else None,
    }


def _split(sample: Sequence[Measured], cuts: tuple[float, float]) -> dict[str, list[Measured]]:
    bands: dict[str, list[Measured]] = {level: [] for level in LEVELS}
    for m in sample:
        bands[level_of(m.score, cuts)].append(m)
    return bands


def _ordered(figures: dict[str, dict[str, Any]]) -> bool:
    rows = [figures[level] for level in LEVELS]
    if any(r["finish_rate"] is None or r["mean_turns"] is None for r in rows):
        return False
    rates = [r["finish_rate"] for r in rows]
    costs = [r["mean_cost"] for r in rows]
    turns = [r["mean_turns"] for r in rows]
    return rates == sorted(rates, reverse=True) and costs == sorted(costs) and turns == sorted(turns)


def fit_thresholds(sample: Sequence[Measured]) -> tuple[tuple[float, float], bool]:
    """The score cut points for ``sample`` (see the module docstring) and whether their bands are ordered."""
    scores = sorted({m.score for m in sample})
    candidates = [round((a + b) / 2, 3) for a, b in itertools.pairwise(scores)]
    least = max(1, int(MIN_BAND_SHARE * len(sample) + 0.999))
    best: tuple[float, tuple[float, float]] | None = None
    best_ordered: tuple[float, tuple[float, float]] | None = None
    for i, low in enumerate(candidates):
        for high in candidates[i + 1 :]:
            bands = _split(sample, (low, high))
            if any(len(members) < least for members in bands.values()):
                continue
            sse = 0.0
            for members in bands.values():
                mean = sum(m.mean_cost for m in members) / len(members)
                sse += sum((m.mean_cost - mean) ** 2 for m in members)
            key = (round(sse, 9), (low, high))
            if best is None or key < best:
                best = key
            if _ordered({b: _band_figures(ms) for b, ms in bands.items()}) and (
                best_ordered is None or key < best_ordered
            ):
                best_ordered = key
    if best_ordered is not None:
        return best_ordered[1], True
    if best is None:
        raise click.ClickException(
            f"a sample of {len(sample)} deals with {len(scores)} distinct scores cannot make three bands of "
            f"at least {least}; give more --samples"
        )
    return best[1], False


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
    out_groups: dict[str, Any] = {}
    wanted = [_parse_group(g) for g in groups]
    for ruleset, players, runs in wanted:
        key = group_key(ruleset, players, runs)
        rules = load_rule_set(ruleset)
        sample: list[Measured] = []
        failed = 0
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
                failed += 1
                tick(repeats)
                continue
            score = float(dealt.instance.difficulty["score"])
            sample.append(measure(dealt.instance, score, repeats, seed))
            tick(repeats)
        cuts, ordered = fit_thresholds(sample)
        bands = {level: _band_figures(members) for level, members in _split(sample, cuts).items()}
        means = [bands[level]["mean_cost"] for level in LEVELS]
        cost_cuts = [round((means[0] + means[1]) / 2, 3), round((means[1] + means[2]) / 2, 3)]
        out_groups[key] = {
            "thresholds": {"easy_below": cuts[0], "hard_from": cuts[1]},
            "ordered": ordered,
            "bands": bands,
            "cost_cuts": cost_cuts,
            "deals_not_generated": failed,
            "sample": [m.row() for m in sample],
        }
    instances: dict[str, Any] = {}
    if shipped:
        for instance in _shipped(wanted):
            key = group_key(instance.ruleset, instance.players, instance.crafting_runs)
            cuts = out_groups[key]["cost_cuts"]
            rules = load_rule_set(instance.ruleset)
            report = assess_instance(rules, instance)
            score = float(report.difficulty.get("score", 0.0))
            measured = measure(instance, score, repeats, seed)
            instances[instance.id] = {
                **measured.row(),
                "level": level_of(measured.mean_cost, (cuts[0], cuts[1])),
                "group": key,
            }
            tick(repeats)
    return {
        "provenance": {
            "command": command,
            "policy": POLICY,
            "seed": seed,
            "samples": samples,
            "repeats": repeats,
            "max_turns": MAX_TURNS,
            "min_band_share": MIN_BAND_SHARE,
            "created": created or dt.date.today().isoformat(),
            "versions": {k: v for k, v in package_versions().items() if k in ("python", "tradecraft")},
        },
        "groups": out_groups,
        "instances": instances,
    }


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
        low, high = group["thresholds"]["easy_below"], group["thresholds"]["hard_from"]
        ranges = {"easy": f"< {low}", "medium": f"{low} – {high}", "hard": f">= {high}"}
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
    default=60,
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
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=CALIBRATION_PATH,
    show_default=True,
    help="Where to write the calibration (JSON).",
)
def calibrate_command(
    groups: tuple[str, ...], samples: int, repeats: int, seed: int, shipped: bool, out: Path
) -> None:
    """Measure difficulty by ToM-1 self-play and fit the labels to it (docs/difficulty.md)."""
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
