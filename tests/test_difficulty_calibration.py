"""Measured difficulty labels (craft_rules/difficulty.py, agents/difficulty_calibration.py): the calibration
of a tiny sample is the same for the same seed; the committed calibration's bands are ordered by what the
bots measured; generated deals and shipped instances are labelled from it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agents.difficulty_calibration import Measured, calibrate, calibrate_command, fit_thresholds, refit
from craft_rules import difficulty
from craft_rules.difficulty import CALIBRATION_PATH, LEVELS, level_of
from craft_rules.loader import load_rule_set
from craft_rules.taskgen import generate_instance
from craft_rules.tasks import iter_instances

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
            assert difficulty.band_measures(ruleset, int(players), runs) == {}
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
