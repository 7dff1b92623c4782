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
(:data:`GUESSED_THRESHOLDS`). This module only reads: it imports nothing above ``craft_rules``.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from craft_rules.tasks import TaskInstance

CALIBRATION_PATH = Path(__file__).resolve().parent / "difficulty_calibration.json"
LEVELS = ("easy", "medium", "hard")
GUESSED_THRESHOLDS = (4.0, 7.0)
"""The structural score's cut points before any measurement (easy < 4 <= medium < 7 <= hard)."""


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


def level_of(score: float, cuts: tuple[float, float]) -> str:
    """The level of ``score`` under ``cuts``: easy below the first, hard from the second."""
    return "easy" if score < cuts[0] else "medium" if score < cuts[1] else "hard"


def level_for_score(score: float, ruleset: str, players: int, crafting_runs: str | None) -> str:
    """The difficulty label of a structural score in a group (see the module docstring)."""
    return level_of(score, thresholds(ruleset, players, crafting_runs))


def band_measures(ruleset: str, players: int, crafting_runs: str | None) -> dict[str, dict[str, Any]]:
    """Per band, what ToM-1 pairs did on the group's calibration sample (``{}`` when uncalibrated):
    ``finish_rate`` (share of games with a winner), ``mean_turns`` (turns to the first win, over the
    finished games), ``instances`` and ``games``; ``{}`` too for a group whose bands no cut points ordered."""
    group = calibration().get("groups", {}).get(group_key(ruleset, players, crafting_runs))
    # a group whose bands came out unordered shows no figures: they would contradict the labels
    return dict(group["bands"]) if group and group.get("ordered") else {}


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
