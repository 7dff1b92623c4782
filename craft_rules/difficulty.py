"""Difficulty labels measured from bot self-play (docs/difficulty.md), read from the committed calibration.

The calibration file (:data:`CALIBRATION_PATH`, written by ``tradecraft calibrate-difficulty``,
:mod:`agents.difficulty_calibration`) holds, per *group* (rule set, number of players, crafting-runs rule):

- ``thresholds``: cut points on the structural score of :class:`craft_rules.taskgen.InstanceReport`
  (``easy`` below ``easy_below``, ``hard`` from ``hard_from``), fitted to how ToM-1 pairs fared on a
  seeded sample of generated deals; :func:`level_for_score` labels every generated deal with them. Null
  when no cut points order the group's bands (``ordered`` false): the score does not tell that group's
  deals apart, and it keeps the guessed cut points;
- ``bands``: the measured figures of each band on that sample (finish rate, mean turns to finish), which
  the lobby shows next to the band;
- ``cost_cuts``: cut points on the measured *cost* (turns to the first win, a game without one counting
  as ``max_turns + 1``) between the bands' mean costs, which label the shipped instances by their own
  measured cost (``instances``; an unordered group's instances use ``common_cost_cuts``, the mean of the
  ordered groups' cut points: every group's games have the same 10-turn rules).

A group without a calibration keeps the structural score's original guessed cut points
(:data:`GUESSED_THRESHOLDS`).

Figures belong to the rules they were measured under (:class:`HallRules`): the group, the turn limit
(``max_turns`` of each group and instance record) and :data:`MEASURED_PLAY`; a hall whose games differ in
any of them is shown none. A hall's pool of shipped instances whose measured labels leave a band with too
few instances is labelled by cut points fitted on its own instances' measured costs (:func:`pool_levels`).
This module only reads the file: it imports nothing above ``craft_rules``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from craft_rules.tasks import TaskInstance

CALIBRATION_PATH = Path(__file__).resolve().parent / "difficulty_calibration.json"
LEVELS = ("easy", "medium", "hard")
GUESSED_THRESHOLDS = (4.0, 7.0)
"""The structural score's cut points before any measurement (easy < 4 <= medium < 7 <= hard)."""
MEASURED_PLAY: dict[str, Any] = {"allow_pass": True, "end_condition": "first_win"}
"""The game rules every calibration game is played under, besides its group's and its turn limit."""

Item = TypeVar("Item")


def group_key(ruleset: str, players: int, crafting_runs: str | None) -> str:
    """The calibration group of a game: ``minecraft/2/rational``."""
    return f"{ruleset}/{players}/{crafting_runs or 'rational'}"


@cache
def _calibration(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return data if isinstance(data, dict) else {}


def calibration(path: Path | None = None) -> dict[str, Any]:
    """The calibration (``{}`` when the file is absent); read once per path."""
    return _calibration(path or CALIBRATION_PATH)


def thresholds(ruleset: str, players: int, crafting_runs: str | None) -> tuple[float, float]:
    """``(easy_below, hard_from)`` on the structural score for a group: measured, else guessed."""
    group = calibration().get("groups", {}).get(group_key(ruleset, players, crafting_runs))
    cut = group.get("thresholds") if group else None
    if not cut:  # uncalibrated, or no cut points ordered the group's bands: the score cannot tell
        return GUESSED_THRESHOLDS
    return float(cut["easy_below"]), float(cut["hard_from"])


@dataclass(frozen=True)
class HallRules:
    """The rules of a hall's games that measured figures depend on: figures are shown for a hall only when
    they were measured under the same rules (docs/difficulty.md)."""

    ruleset: str
    players: int
    crafting_runs: str
    max_turns: int
    """The hall's turn limit (an instance's own limit overrides it, as in a game)."""
    allow_pass: bool = True
    end_condition: str = "first_win"

    @property
    def group(self) -> str:
        return group_key(self.ruleset, self.players, self.crafting_runs)

    def measured_as(self, group: Any, max_turns: Any, instance: TaskInstance | None = None) -> bool:
        """Whether figures measured in ``group`` with a turn limit of ``max_turns`` belong to a game of these
        rules (of ``instance``, whose own turn limit overrides the hall's)."""
        limit = instance.turn_limit(self.max_turns) if instance else self.max_turns
        played = {"allow_pass": self.allow_pass, "end_condition": self.end_condition}
        return group == self.group and max_turns == limit and played == MEASURED_PLAY


def level_of(score: float, cuts: tuple[float, float]) -> str:
    """The level of ``score`` under ``cuts``: easy below the first, hard from the second."""
    return "easy" if score < cuts[0] else "medium" if score < cuts[1] else "hard"


def level_for_score(score: float, ruleset: str, players: int, crafting_runs: str | None) -> str:
    """The difficulty label of a structural score in a group (see the module docstring)."""
    return level_of(score, thresholds(ruleset, players, crafting_runs))


def band_measures(rules: HallRules) -> dict[str, dict[str, Any]]:
    """Per band, what ToM-1 pairs did on the calibration sample of the group of ``rules``: ``finish_rate``
    (share of games with a winner), ``mean_turns`` (turns to the first win, over the finished games),
    ``instances`` and ``games``. ``{}`` when uncalibrated, when no cut points ordered the group's bands (the
    figures would contradict the labels), or when ``rules`` are not those the sample was played under."""
    group = calibration().get("groups", {}).get(rules.group)
    if not group or not group.get("ordered") or not rules.measured_as(rules.group, group.get("max_turns")):
        return {}
    return dict(group["bands"])


def fingerprint(hands: Any, targets: Any) -> str:
    """A short digest of an instance's hands and targets: a measured label belongs to these, not to an id
    (an operator's own folder may reuse a shipped file's name)."""
    text = json.dumps({"hands": list(hands), "targets": list(targets)}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def measured_instance(instance: TaskInstance) -> dict[str, Any] | None:
    """The measured figures and label of a shipped instance (None when it was not calibrated, or when the
    instance under that id is not the one that was measured)."""
    record = calibration().get("instances", {}).get(instance.id)
    if not record or record.get("fingerprint") != fingerprint(instance.hands, instance.targets):
        return None
    return dict(record)


def measured_difficulty(instance: TaskInstance) -> dict[str, Any]:
    """An instance's difficulty record with its measured level in place of the generator's guess, and the
    figures behind it under ``measured`` (the record unchanged when the instance was not calibrated)."""
    record = measured_instance(instance)
    if record is None:
        return dict(instance.difficulty)
    return {**instance.difficulty, "level": record["level"], "measured": record}


def instance_measure(instance: TaskInstance, rules: HallRules) -> dict[str, Any] | None:
    """A shipped instance's measured record when it was measured under ``rules`` (its group, its turn limit
    in a game of ``rules``, :data:`MEASURED_PLAY`), else None: figures of other rules are not this game's."""
    record = measured_instance(instance)
    if record is None or not rules.measured_as(record.get("group"), record.get("max_turns"), instance):
        return None
    return record


def pooled_measure(measured: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The measured figures of a pool of shipped instances (a hall's band) from their ``measured`` records,
    or None when any of them was not calibrated: ``finish_rate`` and ``mean_turns`` over all their games."""
    if not measured or any(r is None for r in measured):
        return None
    records = [r for r in measured if r]
    games = sum(r["games"] for r in records)
    wins = sum(r["wins"] for r in records)
    turns = sum(r["finished_turns"] for r in records)
    return {
        "instances": len(records),
        "games": games,
        "finish_rate": round(wins / games, 4) if games else None,
        "mean_turns": round(turns / wins, 3) if wins else None,
    }


def order_level(figures: Mapping[str, Mapping[str, Any]]) -> int:
    """How well bands are ordered: 2 when finish rate falls and both mean cost and mean turns to finish rise
    from easy to hard, 1 when finish rate and mean cost do (the mean turns of the won games alone may
    not: they differ by tenths of a turn), 0 otherwise."""
    rows = [figures[level] for level in LEVELS]
    if any(r["finish_rate"] is None or r["mean_cost"] is None for r in rows):
        return 0
    rates = [r["finish_rate"] for r in rows]
    costs = [r["mean_cost"] for r in rows]
    if rates != sorted(rates, reverse=True) or costs != sorted(costs):
        return 0
    turns = [r["mean_turns"] for r in rows]
    return 2 if None not in turns and turns == sorted(turns) else 1


def fit_cuts(
    items: Sequence[Item],
    value: Callable[[Item], float],
    cost: Callable[[Item], float],
    figures: Callable[[Sequence[Item]], Mapping[str, Any]],
    least: int,
) -> tuple[tuple[float, float], int] | None:
    """The one fitting rule of the labels: two cut points on ``value`` (among the midpoints between its
    distinct values, so equal values share a band) that put at least ``least`` items in every band, of the
    best :func:`order_level` of the bands' ``figures``, then the least squared deviation of the items'
    ``cost`` from their band's mean; with that order level. None when no pair makes bands that big."""
    values = sorted({value(item) for item in items})
    candidates = [round((a + b) / 2, 3) for a, b in itertools.pairwise(values)]
    best: tuple[int, float, tuple[float, float]] | None = None
    for i, low in enumerate(candidates):
        for high in candidates[i + 1 :]:
            bands: dict[str, list[Item]] = {level: [] for level in LEVELS}
            for item in items:
                bands[level_of(value(item), (low, high))].append(item)
            if any(len(members) < least for members in bands.values()):
                continue
            sse = 0.0
            for members in bands.values():
                mean = sum(cost(m) for m in members) / len(members)
                sse += sum((cost(m) - mean) ** 2 for m in members)
            level = order_level({band: figures(members) for band, members in bands.items()})
            key = (-level, round(sse, 9), (low, high))
            if best is None or key < best:
                best = key
    return None if best is None else (best[2], -best[0])


def _pool_figures(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    pooled = pooled_measure(list(records)) or {"finish_rate": None, "mean_turns": None}
    costs = [float(r["mean_cost"]) for r in records]
    return {**pooled, "mean_cost": sum(costs) / len(costs) if costs else None}


def pool_levels(measured: Mapping[str, Mapping[str, Any] | None], least: int) -> dict[str, str] | None:
    """The levels of a pool of shipped instances (id -> measured record) when their calibrated labels leave
    a band with fewer than ``least`` of them (the 40 standard Minecraft duels measure 33 easy, 0 medium, 7
    hard): cut points fitted by :func:`fit_cuts` on the instances' own measured costs, every band holding
    ``least`` of them and ordered by finish rate and cost. None (keep the calibrated labels) when those
    fill every band already, when an instance was not measured, or when no cut points order such bands."""
    if not measured or any(record is None for record in measured.values()):
        return None
    records = [(instance_id, record) for instance_id, record in measured.items() if record is not None]
    counts = {level: 0 for level in LEVELS}
    for _, record in records:
        counts[record["level"]] = counts.get(record["level"], 0) + 1
    if all(counts[level] >= least for level in LEVELS):
        return None

    def cost_of(entry: tuple[str, Mapping[str, Any]]) -> float:
        return float(entry[1]["mean_cost"])

    def figures(entries: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
        return _pool_figures([record for _, record in entries])

    fitted = fit_cuts(records, cost_of, cost_of, figures, least)
    if fitted is None or fitted[1] == 0:
        return None
    return {
        instance_id: level_of(cost_of((instance_id, record)), fitted[0]) for instance_id, record in records
    }
