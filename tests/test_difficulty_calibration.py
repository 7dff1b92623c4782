"""Measured difficulty labels (craft_rules/difficulty.py, agents/difficulty_calibration.py): the calibration
of a tiny sample is the same for the same seed; the committed calibration's bands are ordered by what the
bots measured; generated deals and shipped instances are labelled from it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from click.testing import CliRunner
from in_process import MakeApp

from agents.difficulty_calibration import Measured, calibrate, calibrate_command, fit_thresholds, refit
from craft_rules import difficulty
from craft_rules.difficulty import CALIBRATION_PATH, LEVELS, HallRules, level_of, order_level, pool_levels
from craft_rules.loader import load_rule_set
from craft_rules.taskgen import generate_instance
from craft_rules.tasks import get_instance, iter_instances
from server.web.lobby import MIN_BAND_INSTANCES

TINY = {"groups": ["minecraft/2/rational"], "samples": 16, "repeats": 1, "shipped": False, "created": "test"}


def test_a_tiny_calibration_is_the_same_for_a_seed() -> None:
    first = calibrate(seed=5, **TINY)  # type: ignore[arg-type]
    again = calibrate(seed=5, **TINY)  # type: ignore[arg-type]
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    group = first["groups"]["minecraft/2/rational"]
    assert len(group["sample"]) + group["deals_not_generated"] == 16
    assert sum(band["instances"] for band in group["bands"].values()) == len(group["sample"])


def test_the_command_writes_the_file_with_its_provenance(tmp_path) -> None:
    out = tmp_path / "calibration.json"
    args = ["--group", "minecraft/2/rational", "--samples", "16", "--repeats", "1", "--no-shipped"]
    result = CliRunner().invoke(calibrate_command, [*args, "--seed", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["provenance"]["command"].startswith("tradecraft calibrate-difficulty --group minecraft/2/")
    assert record["provenance"]["seed"] == 5 and record["provenance"]["policy"] == "tom1"
    assert "| minecraft/2/rational | easy |" in result.output
    bad = CliRunner().invoke(calibrate_command, ["--group", "minecraft/two", "--out", str(out)])
    assert bad.exit_code != 0 and "RULESET/PLAYERS/RUNS" in bad.output


def test_thresholds_prefer_ordered_bands() -> None:
    # scores 1..9; costs rise with the score except one cheap outlier at 9
    sample = [Measured(f"i{s}", float(s), 10, 1, 1, s if s != 9 else 1) for s in range(1, 10)]
    cuts, order = fit_thresholds(sample)
    assert order == 2
    bands = {level: [m for m in sample if level_of(m.score, cuts) == level] for level in LEVELS}
    means = [sum(m.mean_cost for m in bands[level]) / len(bands[level]) for level in LEVELS]
    assert means == sorted(means) and all(len(b) >= 2 for b in bands.values())


committed = pytest.mark.skipif(not CALIBRATION_PATH.exists(), reason="no committed calibration")


@committed
def test_the_committed_bands_order_by_finish_rate_and_turns() -> None:
    record = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
    assert record["provenance"]["command"].startswith("tradecraft calibrate-difficulty")
    # the lobby's main hall (two players, Minecraft, rational runs) is ordered on every figure
    assert record["groups"]["minecraft/2/rational"]["ordered_on"] == [
        "finish_rate",
        "mean_cost",
        "mean_turns",
    ]
    for key, group in record["groups"].items():
        bands = [group["bands"][level] for level in LEVELS]
        rates = [b["finish_rate"] for b in bands]
        costs = [b["mean_cost"] for b in bands]
        turns = [b["mean_turns"] for b in bands]
        if not group["ordered"]:
            # no cut points order this group: it keeps the guess, says so, and the lobby shows no figures
            assert group["thresholds"] is None and group["cost_cuts"] is None
            ruleset, players, runs = key.split("/")
            assert difficulty.thresholds(ruleset, int(players), runs) == difficulty.GUESSED_THRESHOLDS
            assert difficulty.band_measures(difficulty.HallRules(ruleset, int(players), runs, 10)) == {}
            continue
        assert rates == sorted(rates, reverse=True), (key, rates)
        assert costs == sorted(costs), (key, costs)
        if "mean_turns" in group["ordered_on"]:
            assert turns == sorted(turns), (key, turns)
        assert rates[0] > rates[2] and costs[0] < costs[2], f"{key}: easy and hard measured the same"
        # the thresholds really are what split the sample into those bands
        cuts = (group["thresholds"]["easy_below"], group["thresholds"]["hard_from"])
        counted = {level: 0 for level in LEVELS}
        for row in group["sample"]:
            counted[level_of(row["score"], cuts)] += 1
        assert counted == {level: group["bands"][level]["instances"] for level in LEVELS}


def test_a_refit_of_recorded_outcomes_plays_nothing_and_gives_the_same_record() -> None:
    record = calibrate(seed=5, **TINY)  # type: ignore[arg-type]
    again = refit(record, "test")
    assert again["groups"] == record["groups"] and again["instances"] == record["instances"]
    assert again["provenance"]["refit"] == "test"


@committed
def test_generated_deals_and_shipped_instances_carry_the_measured_label() -> None:
    low, high = difficulty.thresholds("minecraft", 2, "rational")
    assert (low, high) != difficulty.GUESSED_THRESHOLDS or difficulty.calibration()["groups"]
    rules = load_rule_set("minecraft")
    for seed in range(6):
        dealt = generate_instance(rules, 2, seed).instance.difficulty
        assert dealt["level"] == level_of(dealt["score"], (low, high))
    for level in LEVELS:  # every band can still be dealt under the fitted cut points
        assert generate_instance(rules, 2, 11, band=level).instance.difficulty["level"] == level
    shipped = {inst.id: inst for inst in iter_instances("minecraft", "1p_v_1p")}
    record = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))["instances"]
    measured = [i for i in shipped if i in record]
    assert measured, "the shipped instances are measured"
    for instance_id in measured:
        entry = record[instance_id]
        whole = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
        cost_cuts = whole["groups"][entry["group"]]["cost_cuts"] or whole["common_cost_cuts"]
        assert entry["level"] == level_of(entry["mean_cost"], tuple(cost_cuts))
        label = difficulty.measured_difficulty(shipped[instance_id])
        assert label["level"] == entry["level"] and label["measured"]["games"] == entry["games"]


def test_a_band_of_shipped_instances_sums_their_games() -> None:
    one = {"games": 4, "wins": 3, "finished_turns": 6}
    two = {"games": 4, "wins": 1, "finished_turns": 4}
    assert difficulty.pooled_measure([one, two]) == {
        "instances": 2,
        "games": 8,
        "finish_rate": 0.5,
        "mean_turns": 2.5,
    }
    assert difficulty.pooled_measure([one, None]) is None  # one unmeasured instance: no figures at all
    assert difficulty.pooled_measure([]) is None


DUEL_RULES = HallRules("minecraft", 2, "rational", 10)
"""A lobby duel's rules, as the calibration played them (10 turns, passing allowed, first win ends)."""


@committed
@pytest.mark.parametrize(
    "change",
    [
        {"max_turns": 3},
        {"max_turns": 11},
        {"crafting_runs": "whole"},
        {"allow_pass": False},
        {"end_condition": "all_win"},
        {"players": 3},
    ],
)
def test_figures_belong_only_to_the_rules_they_were_measured_under(change: dict[str, Any]) -> None:
    """Review finding 5: a band's or an instance's figures are shown for a hall only when its games are
    played as the measured ones were (group, turn limit, passing, end condition)."""
    standard = get_instance("minecraft/1p_v_1p/standard#0")
    assert difficulty.band_measures(DUEL_RULES)["medium"]["games"] > 0
    assert difficulty.instance_measure(standard, DUEL_RULES) is not None
    other = dataclasses.replace(DUEL_RULES, **change)
    group = difficulty.calibration()["groups"].get(other.group, {})
    if other.group == DUEL_RULES.group or not group.get("ordered"):
        assert difficulty.band_measures(other) == {}
    else:  # another measured group: its own figures, never the duel's
        assert difficulty.band_measures(other) == group["bands"] != difficulty.band_measures(DUEL_RULES)
    assert difficulty.instance_measure(standard, other) is None


def _pooled(records: list[dict[str, Any]]) -> dict[str, Any]:
    pooled = difficulty.pooled_measure(records)
    assert pooled is not None
    return {**pooled, "mean_cost": sum(r["mean_cost"] for r in records) / len(records)}


@committed
@pytest.mark.parametrize("shipped_set", ["minecraft/1p_v_1p/standard", "minecraft/1p_v_1p/paper"])
def test_a_set_whose_labels_leave_a_band_short_is_labelled_by_its_own_measured_costs(
    shipped_set: str,
) -> None:
    """Review finding 4: the standard duel set measures 33 easy, 0 medium, 7 hard; its hall is labelled by
    cut points on its instances' own measured costs: three bands of MIN_BAND_INSTANCES or more, ordered by
    finish rate and cost, no instance cheaper than one of an easier band."""
    pool = [inst for inst in iter_instances("minecraft", "1p_v_1p") if inst.id.startswith(shipped_set + "#")]
    records = {inst.id: difficulty.measured_instance(inst) for inst in pool}
    calibrated = [r["level"] for r in records.values() if r]
    assert len(calibrated) == len(pool) and min(calibrated.count(b) for b in LEVELS) < MIN_BAND_INSTANCES
    levels = pool_levels(records, MIN_BAND_INSTANCES)
    assert levels is not None and set(levels) == set(records)
    bands = {band: [records[i] for i, level in levels.items() if level == band] for band in LEVELS}
    assert all(len(members) >= MIN_BAND_INSTANCES for members in bands.values()), levels
    assert order_level({band: _pooled(members) for band, members in bands.items()}) >= 1  # type: ignore[arg-type]
    costs = [[r["mean_cost"] for r in bands[band]] for band in LEVELS]  # type: ignore[index]
    assert max(costs[0]) < min(costs[1]) and max(costs[1]) < min(costs[2])


def test_pool_levels_keep_the_calibrated_labels_unless_a_refit_orders_full_bands() -> None:
    def record(level: str, cost: float, wins: int = 4) -> dict[str, Any]:
        turns = round(cost * 4) if wins == 4 else wins
        return {"level": level, "mean_cost": cost, "games": 4, "wins": wins, "finished_turns": turns}

    full = {f"i{n}": record(LEVELS[n % 3], 1 + n % 3) for n in range(15)}
    assert pool_levels(full, 5) is None  # every band already big enough: the calibrated labels stay
    assert pool_levels({**full, "unmeasured": None}, 5) is None  # one instance without a measure
    short = {f"i{n}": record("easy", 1 + n % 3) for n in range(15)}
    assert pool_levels(short, 5) == {f"i{n}": LEVELS[n % 3] for n in range(15)}
    assert pool_levels(dict(list(short.items())[:14]), 5) is None  # 14 cannot make three bands of 5
    # costs rise but the dearer instances finish more often: no order, so no relabelling
    backwards = {f"i{n}": record("easy", 1 + n % 3, wins=4 - (2 - n % 3)) for n in range(15)}
    assert pool_levels(backwards, 5) is None


@committed
def test_the_lobby_offers_three_bands_over_the_standard_set_with_figures_only_under_its_rules(
    make_app: MakeApp,
) -> None:
    hall = {"ruleset": "minecraft", "players": 2, "instances": {"choice": "random", "set": "standard"}}
    generated = {"ruleset": "minecraft", "players": 2, "instances": {"choice": "generated"}}
    halls = {
        "standard": hall,
        "short": {**hall, "game": {"max_turns": 3}},
        "dealt": generated,
        "dealt_all_win": {**generated, "game": {"end_condition": "all_win"}},
    }
    made = make_app(overrides={"halls": halls})
    offered = {h["name"]: h["difficulties"] for h in made.client().rest("GET", "/api/halls")[1]["halls"]}
    standard = offered["standard"]
    assert [b["band"] for b in standard] == list(LEVELS)
    assert all(b["instances"] >= MIN_BAND_INSTANCES and b["measured"] for b in standard)
    rates = [b["measured"]["finish_rate"] for b in standard]
    assert rates == sorted(rates, reverse=True) and rates[0] > rates[2]
    assert [b["band"] for b in offered["short"]] == list(LEVELS)  # the same labels,
    assert all(b["measured"] is None for b in offered["short"])  # but 10-turn figures are not a 3-turn hall's
    assert [b["measured"] for b in offered["dealt"]] == [
        difficulty.band_measures(DUEL_RULES)[band] for band in LEVELS
    ]
    assert all(b["measured"] is None for b in offered["dealt_all_win"])
