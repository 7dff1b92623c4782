"""Belief accuracy (analysis.beliefs) on hand-computed cases and synthetic reports with known divergence."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from analysis_support import minecraft, paper_settings, play
from scipy import stats

from analysis.beliefs import (
    COMPARISONS,
    KL_SMOOTHING,
    PAIR_COLUMNS,
    belief_curves,
    belief_game_means,
    belief_pairs,
    belief_summary,
    js_divergence,
    kl_divergence,
)
from analysis.dataset import AnalysisError, Dataset, load
from analysis.stats import grouped_mean_ci
from analysis.tom_scores import COLUMNS as TOM_VALUE_COLUMNS

# --- synthetic tables ------------------------------------------------------------------------------------


def _value_rows(
    game: str,
    turn: int,
    seat: int,
    order: int,
    opponent: int | None,
    values: dict[str, int],
    reference: dict[str, int],
    opponent_report: dict[str, int] | None,
    kind: str,
) -> list[dict[str, Any]]:
    return [
        {
            "game_id": game,
            "turn": turn,
            "seat": seat,
            "order": order,
            "opponent_seat": opponent,
            "item": item,
            "value": value,
            "reference": reference.get(item),
            "reference_kind": kind,
            "opponent_report": None if opponent_report is None else opponent_report.get(item),
        }
        for item, value in values.items()
    ]


def _seats(games: list[str], agents: dict[int, tuple[str, str, bool]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"game_id": game, "seat": seat, "agent": agent, "group": group, "focal": focal}
            for game in games
            for seat, (agent, group, focal) in agents.items()
        ]
    )


def _dataset(value_rows: list[dict[str, Any]], seats: pd.DataFrame) -> SimpleNamespace:
    return SimpleNamespace(tom_values=pd.DataFrame(value_rows, columns=list(TOM_VALUE_COLUMNS)), seats=seats)


def _two_seat_turn(
    game: str,
    turn: int,
    v0: tuple[dict[str, int], dict[str, int]],
    v1_of_seat0: dict[str, int],
    truth: tuple[dict[str, int], dict[str, int]],
    v2_of_seat0: dict[str, int] | None = None,
    v1_of_seat1: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """One turn's rows as analysis.tom_scores writes them: seat 0 reports V0 and V1 (and V2), seat 1 V0
    (and V1 about seat 0 when given)."""
    rows = _value_rows(game, turn, 0, 0, None, v0[0], truth[0], None, "own_target")
    rows += _value_rows(game, turn, 1, 0, None, v0[1], truth[1], None, "own_target")
    rows += _value_rows(game, turn, 0, 1, 1, v1_of_seat0, truth[1], v0[1], "opponent_target")
    if v1_of_seat1 is not None:
        rows += _value_rows(game, turn, 1, 1, 0, v1_of_seat1, truth[0], v0[0], "opponent_target")
    if v2_of_seat0 is not None:
        reference, kind = (v1_of_seat1, "opponent_v1_report") if v1_of_seat1 else (truth[0], "own_target")
        rows += _value_rows(game, turn, 0, 2, 1, v2_of_seat0, reference, v1_of_seat1, kind)
    return rows


# --- KL and JS of two dicts ------------------------------------------------------------------------------


def test_kl_is_zero_for_identical_dicts() -> None:
    for report in ({"a": 3, "b": 0, "c": 10}, {"a": 0, "b": 0}, {"x": 7}):
        assert kl_divergence(report, dict(report)) == 0.0
        assert js_divergence(report, dict(report)) == 0.0


def test_kl_matches_a_hand_computed_case() -> None:
    # target {a: 9, b: 0, c: 1} + 1 -> (10, 1, 2) / 13; estimate {a: 4, b: 4, c: 2} + 1 -> (5, 5, 3) / 13.
    # KL = 10/13 ln(10/5) + 1/13 ln(1/5) + 2/13 ln(2/3)
    #    = (6.931472 - 1.609438 - 0.810930) / 13 = 4.511104 / 13 = 0.347008 nats.
    target, estimate = {"a": 9, "b": 0, "c": 1}, {"a": 4, "b": 4, "c": 2}
    assert KL_SMOOTHING == 1.0
    assert kl_divergence(target, estimate) == pytest.approx(0.347008, abs=1e-6)
    # The other direction is a different number: KL is not symmetric, the direction matters.
    # KL(est || target) = 5/13 ln(5/10) + 5/13 ln(5/1) + 3/13 ln(3/2) = (-3.465736 + 8.047190 + 1.216395) / 13
    assert kl_divergence(estimate, target) == pytest.approx(5.797849 / 13, abs=1e-6)
    # Items only one report covers are left out; unsmoothed KL is the textbook formula.
    assert kl_divergence({**target, "extra": 5}, {**estimate, "other": 1}) == pytest.approx(
        0.347008, abs=1e-6
    )
    assert kl_divergence({"a": 1, "b": 1}, {"a": 3, "b": 1}, smoothing=0) == pytest.approx(
        0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    )


def test_js_is_symmetric_and_bounded_by_ln2() -> None:
    rng = np.random.default_rng(7)
    items = [f"i{k}" for k in range(8)]
    for _ in range(300):
        size = int(rng.integers(1, 9))
        a = {item: int(v) for item, v in zip(items[:size], rng.integers(0, 11, size), strict=True)}
        b = {item: int(v) for item, v in zip(items[:size], rng.integers(0, 11, size), strict=True)}
        forward, backward = js_divergence(a, b), js_divergence(b, a)
        assert forward == pytest.approx(backward, abs=1e-15)
        assert 0.0 <= forward < math.log(2)
    # Disjoint supports reach the bound exactly (without smoothing).
    assert js_divergence({"a": 10, "b": 0}, {"a": 0, "b": 10}, smoothing=0) == pytest.approx(math.log(2))
    # The most distant 0-10 reports stay below it once smoothed: (11, 1) / 12 against (1, 11) / 12.
    assert js_divergence({"a": 10, "b": 0}, {"a": 0, "b": 10}) < math.log(2)


def test_reports_sharing_no_item_have_no_divergence() -> None:
    with pytest.raises(AnalysisError) as caught:
        kl_divergence({"a": 1}, {"b": 1})
    assert caught.value.code == "invalid_input"


# --- pairs -----------------------------------------------------------------------------------------------

TRUTH = ({"log": 10, "coal": 4, "sand": 0}, {"log": 2, "coal": 10, "sand": 6})
SEATS = {0: ("model-a", "V0+V1+V2", True), 1: ("model-a", "V0", False)}


def test_pairs_score_every_comparison_against_its_target() -> None:
    v0 = ({"log": 9, "coal": 3, "sand": 0}, {"log": 1, "coal": 9, "sand": 9})
    v1 = {"log": 2, "coal": 8, "sand": 5}
    v2 = {"log": 8, "coal": 5, "sand": 1}
    v1_of_seat1 = {"log": 10, "coal": 2, "sand": 2}
    rows = _two_seat_turn("g1", 1, v0, v1, TRUTH, v2, v1_of_seat1)
    rows += _two_seat_turn("g1", 2, v0, v1, TRUTH, v2)  # turn 2: seat 1 reports no V1
    pairs = belief_pairs(_dataset(rows, _seats(["g1"], SEATS)))

    assert tuple(pairs.columns) == PAIR_COLUMNS
    by_key = pairs.set_index(["turn", "seat", "comparison"])
    expected_targets = {
        (1, 0, "v1_vs_opponent_v0"): (v0[1], v1),
        (1, 0, "v1_vs_reference"): (TRUTH[1], v1),
        (1, 0, "v2_vs_opponent_v1"): (v1_of_seat1, v2),
        (1, 0, "v2_vs_reference"): (TRUTH[0], v2),  # the own target's reference, not the opponent's V1
        (1, 1, "v1_vs_opponent_v0"): (v0[0], v1_of_seat1),
        (1, 1, "v1_vs_reference"): (TRUTH[0], v1_of_seat1),
        (2, 0, "v1_vs_opponent_v0"): (v0[1], v1),
        (2, 0, "v1_vs_reference"): (TRUTH[1], v1),
        (2, 0, "v2_vs_reference"): (TRUTH[0], v2),
    }
    assert set(by_key.index) == set(expected_targets)  # no V2 vs the opponent's V1 without one
    for key, (target, estimate) in expected_targets.items():
        row = by_key.loc[key]
        assert row["kl"] == pytest.approx(kl_divergence(target, estimate), abs=1e-12)
        assert row["js"] == pytest.approx(js_divergence(target, estimate), abs=1e-12)
        diffs = [abs(target[i] - estimate[i]) for i in target]
        assert row["mae"] == pytest.approx(sum(diffs) / 3)
        items = sorted(target)
        rho = stats.spearmanr([target[i] for i in items], [estimate[i] for i in items]).statistic
        assert row["spearman"] == pytest.approx(rho)
        assert row["n_items"] == 3
        assert (row["agent"], row["group"], row["focal"]) == SEATS[key[1]]
    assert list(pairs["comparison"].iloc[:4]) == list(COMPARISONS)  # sorted by key, comparisons in order


def test_pairs_cover_only_the_items_both_reports_hold() -> None:
    v0 = ({"log": 9, "coal": 3, "sand": 0}, {"log": 1, "coal": 9})  # seat 1 did not value sand
    rows = _two_seat_turn("g1", 1, v0, {"log": 2, "coal": 8, "sand": 5}, TRUTH)
    pairs = belief_pairs(_dataset(rows, _seats(["g1"], SEATS))).set_index("comparison")
    assert pairs.loc["v1_vs_opponent_v0", "n_items"] == 2
    assert pairs.loc["v1_vs_opponent_v0", "kl"] == pytest.approx(
        kl_divergence({"log": 1, "coal": 9}, {"log": 2, "coal": 8})
    )
    assert pairs.loc["v1_vs_reference", "n_items"] == 3


def test_spearman_handles_ties_and_constant_reports_like_scipy() -> None:
    rng = np.random.default_rng(3)
    rows: list[dict[str, Any]] = []
    cases = []
    items = [f"i{k}" for k in range(6)]
    for turn in range(1, 41):
        size = int(rng.integers(1, 7))
        target = {i: int(v) for i, v in zip(items[:size], rng.integers(0, 4, size), strict=True)}
        estimate = {i: int(v) for i, v in zip(items[:size], rng.integers(0, 4, size), strict=True)}
        if turn % 10 == 0:
            estimate = dict.fromkeys(estimate, 5)  # a constant report: rank correlation undefined
        rows += _two_seat_turn("g", turn, (dict(TRUTH[0]), target), estimate, TRUTH)
        cases.append((target, estimate))
    pairs = belief_pairs(_dataset(rows, _seats(["g"], SEATS)))
    got = pairs.loc[pairs["comparison"] == "v1_vs_opponent_v0", "spearman"].to_numpy()
    for value, (target, estimate) in zip(got, cases, strict=True):
        keys = sorted(target)
        if len(keys) < 2 or len(set(target.values())) == 1 or len(set(estimate.values())) == 1:
            assert math.isnan(value)
        else:
            expected = stats.spearmanr([target[k] for k in keys], [estimate[k] for k in keys]).statistic
            assert value == pytest.approx(expected, abs=1e-12)


def test_negative_values_and_missing_columns_are_refused() -> None:
    rows = _two_seat_turn("g1", 1, TRUTH, {"log": -1, "coal": 8, "sand": 5}, TRUTH)
    with pytest.raises(AnalysisError, match="0-10"):
        belief_pairs(_dataset(rows, _seats(["g1"], SEATS)))
    bad = SimpleNamespace(tom_values=pd.DataFrame({"game_id": []}), seats=_seats(["g1"], SEATS))
    with pytest.raises(AnalysisError) as caught:
        belief_pairs(bad)
    assert "opponent_report" in caught.value.details["missing"]


def test_no_reports_give_an_empty_table_with_the_columns() -> None:
    pairs = belief_pairs(_dataset([], _seats(["g1"], SEATS)))
    assert pairs.empty and tuple(pairs.columns) == PAIR_COLUMNS
    assert belief_curves(pairs).empty and "kl_ci_high" in belief_curves(pairs).columns
    assert belief_summary(pairs).empty and {"games", "pairs", "kl"} <= set(belief_summary(pairs).columns)


# --- curves and summaries on reports with known divergence ------------------------------------------------


def _drifting_beliefs(
    games: int, turns: int, seed: int
) -> tuple[SimpleNamespace, dict[tuple[str, int], float]]:
    """Two agents over ``games`` games: "exact" reports the opponent's V0 as its V1 every turn (KL 0);
    "learner"'s V1 moves from a fixed wrong report towards the opponent's V0 as turns go by, so its KL at
    turn t is known. The baseline opponent (seat 1, not focal) also reports a V1, which must be left out."""
    rng = np.random.default_rng(seed)
    wrong = {"log": 0, "coal": 0, "sand": 10}
    rows: list[dict[str, Any]] = []
    seats = []
    known: dict[tuple[str, int], float] = {}
    for g in range(games):
        agent = "exact" if g % 2 == 0 else "learner"
        game = f"{agent}-{g}"
        seats += [
            {"game_id": game, "seat": 0, "agent": agent, "group": "V0+V1", "focal": True},
            {"game_id": game, "seat": 1, "agent": agent, "group": "V0", "focal": False},
        ]
        for turn in range(1, turns + 1):
            opponent_v0 = {"log": 2, "coal": 10, "sand": 3}
            step = (turn - 1) / (turns - 1)
            learned = {i: round(wrong[i] + step * (opponent_v0[i] - wrong[i])) for i in wrong}
            v1 = dict(opponent_v0) if agent == "exact" else learned
            known[(agent, turn)] = kl_divergence(opponent_v0, v1)
            v1_of_baseline = {i: int(rng.integers(0, 11)) for i in wrong}
            rows += _two_seat_turn(game, turn, (TRUTH[0], opponent_v0), v1, TRUTH, v1_of_seat1=v1_of_baseline)
    return _dataset(rows, pd.DataFrame(seats)), known


def test_belief_curves_follow_the_known_divergence_per_turn() -> None:
    ds, known = _drifting_beliefs(games=10, turns=5, seed=1)
    curves = belief_curves(belief_pairs(ds))
    v1 = curves.loc[curves["comparison"] == "v1_vs_opponent_v0"].set_index(["agent", "turn"])
    assert set(v1["group"]) == {"V0+V1"}  # the non-focal V0 baseline's reports are left out
    for (agent, turn), kl in known.items():
        row = v1.loc[(agent, turn)]
        assert row["n"] == 5  # five games of each agent, one pair per game and turn
        assert row["kl_mean"] == pytest.approx(kl, abs=1e-12)
        # Every game has the same report at a turn: the interval collapses onto the mean.
        assert row["kl_ci_low"] == pytest.approx(kl) and row["kl_ci_high"] == pytest.approx(kl)
    learner = v1.loc["learner"].sort_index()["kl_mean"].to_numpy()
    assert learner[0] > 0.5 and learner[-1] == 0.0 and (np.diff(learner) <= 0).all()
    assert (v1.loc["exact", "kl_mean"] == 0.0).all()
    with_baseline = belief_curves(belief_pairs(ds), focal_only=False)
    assert "V0" in set(with_baseline["group"])


def test_curve_intervals_are_student_t_intervals_over_pairs() -> None:
    rng = np.random.default_rng(11)
    pairs = pd.DataFrame(
        {
            "game_id": [f"g{k}" for k in range(30)], "turn": np.repeat([1, 2, 3], 10), "seat": 0,
            "opponent_seat": 1, "agent": "m", "group": "V0+V1", "focal": True,
            "comparison": "v1_vs_reference",
            "kl": rng.gamma(2.0, 0.1, 30), "js": rng.uniform(0, 0.3, 30), "mae": rng.uniform(0, 4, 30),
            "spearman": np.where(np.arange(30) % 7 == 0, np.nan, rng.uniform(-1, 1, 30)), "n_items": 4,
        }
    )  # fmt: skip
    curves = belief_curves(pairs, level=0.9).set_index("turn")
    for turn, block in pairs.groupby("turn"):
        for metric in ("kl", "spearman"):
            values = block[metric].dropna().to_numpy()
            low, high = stats.t.interval(0.9, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
            assert curves.loc[turn, f"{metric}_mean"] == pytest.approx(values.mean())
            assert curves.loc[turn, f"{metric}_ci_low"] == pytest.approx(low)
            assert curves.loc[turn, f"{metric}_ci_high"] == pytest.approx(high)
        assert curves.loc[turn, "n"] == 10


def test_belief_summary_averages_per_game_means() -> None:
    ds, known = _drifting_beliefs(games=8, turns=5, seed=2)
    pairs = belief_pairs(ds)
    game_means = belief_game_means(pairs)
    assert len(game_means) == 8 * 2  # focal seats: 8 games x the two V1 comparisons
    summary = belief_summary(pairs).set_index(["agent", "comparison"])
    learner_game_kl = np.mean([known[("learner", t)] for t in range(1, 6)])
    row = summary.loc[("learner", "v1_vs_opponent_v0")]
    assert (row["games"], row["pairs"], row["group"]) == (4, 20, "V0+V1")
    assert row["kl"] == pytest.approx(learner_game_kl)
    assert row["kl_ci_low"] == pytest.approx(learner_game_kl)  # identical games: no spread
    assert summary.loc[("exact", "v1_vs_opponent_v0"), "kl"] == 0.0
    # Against the reference values the exact reporter is as far as the opponent's V0 is from the truth.
    assert summary.loc[("exact", "v1_vs_reference"), "kl"] == pytest.approx(
        kl_divergence(TRUTH[1], {"log": 2, "coal": 10, "sand": 3})
    )
    for column in ("kl", "js", "mae", "spearman"):
        assert {f"{column}_ci_low", f"{column}_ci_high"} <= set(summary.columns)


def test_summary_interval_is_over_games_not_pairs() -> None:
    """A game with many pairs weighs as much as a game with one: the mean is over per-game means."""
    rows = [{"game_id": "long", "turn": t, "kl": 1.0} for t in range(1, 10)] + [
        {"game_id": "short", "turn": 1, "kl": 0.0}
    ]
    pairs = pd.DataFrame(rows).assign(
        seat=0, opponent_seat=1, agent="m", group="V0+V1", focal=True, comparison="v1_vs_opponent_v0",
        js=0.0, mae=0.0, spearman=np.nan, n_items=3,
    )  # fmt: skip
    summary = belief_summary(pairs, level=0.95).iloc[0]
    assert summary["kl"] == pytest.approx(0.5) and summary["games"] == 2 and summary["pairs"] == 10
    low, high = stats.t.interval(0.95, 1, loc=0.5, scale=stats.sem([1.0, 0.0]))
    assert (summary["kl_ci_low"], summary["kl_ci_high"]) == pytest.approx((low, high))
    assert math.isnan(summary["spearman"])


def test_grouped_mean_ci_refuses_a_level_outside_zero_one() -> None:
    frame = pd.DataFrame({"g": [1, 1], "x": [0.0, 1.0]})
    with pytest.raises(AnalysisError):
        grouped_mean_ci(frame, ["g"], ["x"], level=90)
    single = grouped_mean_ci(frame.iloc[:1], ["g"], ["x"]).iloc[0]
    assert single["x_mean"] == 0.0 and math.isnan(single["x_ci_low"])


# --- real games ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bot_games() -> Dataset:
    """ToM-0 and ToM-1 bots (focal, V0+V1+V2) against a ToM-0 baseline that reports V0+V1."""
    settings = paper_settings(max_turns=3).model_copy(update={"tom_orders": [[0, 1, 2], [0, 1]]})
    played = [
        play("minecraft/1p_v_1p/paper#2", [spec, "tom0"], seed=2, game_id=f"{spec}-2", settings=settings)
        for spec in ("tom0", "tom1")
    ]
    return load([p.log for p in played], rules=minecraft())


def test_pairs_of_real_games_match_the_reports_read_directly(bot_games: Dataset) -> None:
    """Every V1-against-the-opponent's-V0 KL, recomputed from the raw reports (not from tom_values)."""
    reports: dict[tuple[str, int, int, int, int], dict[str, int]] = {}
    for row in bot_games.tom_reports.itertuples():
        opponent = -1 if pd.isna(row.opponent_seat) else int(row.opponent_seat)
        reports.setdefault((row.game_id, int(row.turn), int(row.seat), int(row.order), opponent), {})[
            str(row.item)
        ] = int(row.value)
    pairs = belief_pairs(bot_games)
    v1 = pairs.loc[pairs["comparison"] == "v1_vs_opponent_v0"]
    expected = {
        (game, turn, seat): kl_divergence(reports[(game, turn, opponent, 0, -1)], values)
        for (game, turn, seat, order, opponent), values in reports.items()
        if order == 1
    }
    assert len(v1) == len(expected) > 0
    for row in v1.itertuples():
        assert row.kl == pytest.approx(expected[(row.game_id, row.turn, row.seat)], abs=1e-12)
    assert set(pairs["comparison"]) == set(COMPARISONS)
    summary = belief_summary(pairs)  # the focal seats: one game each of tom0 and tom1
    assert set(summary["agent"]) == {"tom0", "tom1"} and (summary["games"] == 1).all()
