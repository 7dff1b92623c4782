"""Proposal behaviour (analysis.proposals): request and offer values under the proposer's V0, and the fits of
offer on request with episode-level bootstrap intervals, on proposals simulated with a known slope and r."""

from __future__ import annotations

import json
import math
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from analysis_support import minecraft, play
from scipy import stats

from analysis.dataset import AnalysisError, load
from analysis.proposals import FIT_COLUMNS, VALUE_COLUMNS, proposal_fits, proposal_values
from analysis.stats import bootstrap_game_fits, fits_from_sums, resample_counts

# --- values of proposals ---------------------------------------------------------------------------------


def _v0_rows(game: str, turn: int, seat: int, values: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "game_id": game,
            "turn": turn,
            "seat": seat,
            "order": 0,
            "opponent_seat": None,
            "item": i,
            "value": v,
        }
        for i, v in values.items()
    ]


def _proposal(game: str, turn: int, proposer: int, offer: Any, request: Any, status: str) -> dict[str, Any]:
    return {
        "game_id": game, "turn": turn, "seq": turn * 10, "proposer": proposer, "to": 1 - proposer,
        "offer": offer, "request": request, "status": status,
    }  # fmt: skip


def _seats(focal: dict[int, bool]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"game_id": "g1", "seat": seat, "agent": "model-a", "group": "V0+V1" if f else "V0", "focal": f}
            for seat, f in focal.items()
        ]
    )


def test_values_sum_counts_times_the_proposers_same_turn_v0() -> None:
    reports = (
        _v0_rows("g1", 1, 0, {"log": 8, "coal": 2, "sand": 0})
        + _v0_rows("g1", 1, 1, {"log": 1, "coal": 9, "sand": 9})
        + _v0_rows("g1", 2, 0, {"log": 3, "coal": 7, "sand": 5})  # seat 0 revised its V0 by turn 2
        + [
            {
                "game_id": "g1",
                "turn": 2,
                "seat": 0,
                "order": 1,
                "opponent_seat": 1,
                "item": "log",
                "value": 10,
            }
        ]
        + _v0_rows("g1", 3, 0, {"log": 3, "coal": 7})  # no value for sand at turn 3
    )
    proposals = [
        _proposal("g1", 1, 0, {"coal": 2}, {"log": 1, "sand": 3}, "accepted"),
        _proposal("g1", 2, 0, {"coal": 2}, {"log": 1, "sand": 3}, "rejected"),
        _proposal("g1", 2, 1, {"log": 1}, {"coal": 1}, "rejected"),  # the non-focal baseline
        _proposal("g1", 3, 0, {"coal": 1}, {"sand": 1}, "cancelled"),
        _proposal("g1", 4, 0, {"coal": 1}, {"log": 1}, "pending"),  # no V0 reported at turn 4
        _proposal("g1", 1, 0, json.dumps({"log": 1}), "{}", "rejected"),  # JSON text as read back from CSV
    ]
    ds = SimpleNamespace(
        proposals=pd.DataFrame(proposals),
        tom_reports=pd.DataFrame(reports),
        seats=_seats({0: True, 1: False}),
    )
    values = proposal_values(ds)
    assert tuple(values.columns) == VALUE_COLUMNS
    assert list(values["proposer"]) == [0] * 5  # the baseline opponent's proposal is left out
    assert values["request_value"].iloc[0] == 1 * 8 + 3 * 0
    assert values["offer_value"].iloc[0] == 2 * 2
    assert values["request_value"].iloc[1] == 1 * 3 + 3 * 5  # turn 2's V0, not turn 1's; V1 ignored
    assert values["offer_value"].iloc[1] == 2 * 7
    assert math.isnan(values["request_value"].iloc[2]) and values["offer_value"].iloc[2] == 7
    assert values.iloc[3][["request_value", "offer_value"]].isna().all()
    assert (values["offer_value"].iloc[4], values["request_value"].iloc[4]) == (8, 0)  # asks nothing: worth 0
    assert list(values["status"]) == ["accepted", "rejected", "cancelled", "pending", "rejected"]
    assert (values["agent"] == "model-a").all() and (values["group"] == "V0+V1").all()


def test_values_need_the_documented_columns() -> None:
    ds = SimpleNamespace(
        proposals=pd.DataFrame({"game_id": []}), tom_reports=pd.DataFrame(), seats=pd.DataFrame()
    )
    with pytest.raises(AnalysisError) as caught:
        proposal_values(ds)
    assert caught.value.code == "invalid_input" and "request" in caught.value.details["missing"]


# --- fits ------------------------------------------------------------------------------------------------

SLOPE, INTERCEPT, MEAN_X = 0.6, 2.0, 20.0
SD_GAME_X, SD_X, SD_GAME_Y, SD_Y = 4.0, 6.0, 3.0, 4.0
VAR_X = SD_GAME_X**2 + SD_X**2
TRUE_R = SLOPE * VAR_X / math.sqrt(VAR_X * (SLOPE**2 * VAR_X + SD_GAME_Y**2 + SD_Y**2))
TRUE_M_ORIGIN = SLOPE + INTERCEPT * MEAN_X / (VAR_X + MEAN_X**2)  # E[xy] / E[x^2]


def _simulated(
    rng: np.random.Generator, games: int, agent: str = "sim", group: str = "V0+V1"
) -> pd.DataFrame:
    """Proposals clustered in games: 2-8 per game; request x and offer y = INTERCEPT + SLOPE x + noise, each
    with a game-level effect (a game shifts what is asked and what is given), so proposals of one game are
    correlated and only a resampling of games gives honest intervals."""
    per_game = rng.integers(2, 9, games)
    game = np.repeat(np.arange(games), per_game)
    n = int(per_game.sum())
    x = MEAN_X + rng.normal(0, SD_GAME_X, games)[game] + rng.normal(0, SD_X, n)
    y = INTERCEPT + SLOPE * x + rng.normal(0, SD_GAME_Y, games)[game] + rng.normal(0, SD_Y, n)
    return pd.DataFrame(
        {"game_id": [f"{agent}-{g}" for g in game], "agent": agent, "group": group, "request_value": x,
         "offer_value": y, "status": "rejected"}
    )  # fmt: skip


def test_point_estimates_match_scipy() -> None:
    values = _simulated(np.random.default_rng(5), games=30)
    fit = proposal_fits(values, b=200).iloc[0]
    x, y = values["request_value"], values["offer_value"]
    reference = stats.linregress(x, y)
    assert fit["r"] == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert fit["m"] == pytest.approx(reference.slope, abs=1e-12)
    assert fit["intercept"] == pytest.approx(reference.intercept, abs=1e-10)
    origin, *_ = np.linalg.lstsq(x.to_numpy()[:, None], y.to_numpy(), rcond=None)
    assert fit["m_origin"] == pytest.approx(origin[0], abs=1e-12)
    assert (fit["proposals"], fit["games"]) == (len(values), 30)
    assert fit["r_ci_low"] < fit["r"] < fit["r_ci_high"] and fit["m_ci_low"] < fit["m"] < fit["m_ci_high"]


def test_fits_are_per_agent_and_group_and_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(9)
    values = pd.concat(
        [_simulated(rng, 20, "a", "V0"), _simulated(rng, 25, "a", "V0+V1"), _simulated(rng, 15, "b", "V0")]
    )
    values.loc[values.index[:3], "offer_value"] = np.nan  # unvalued proposals are skipped
    fits = proposal_fits(values)
    assert tuple(fits.columns) == FIT_COLUMNS
    assert list(zip(fits["agent"], fits["group"], fits["games"], strict=True)) == [
        ("a", "V0", 20), ("a", "V0+V1", 25), ("b", "V0", 15)
    ]  # fmt: skip
    pd.testing.assert_frame_equal(fits, proposal_fits(values))
    assert not fits["r_ci_low"].equals(proposal_fits(values, seed=1)["r_ci_low"])
    # A group's intervals do not depend on which other groups are analysed with it.
    alone = proposal_fits(values.loc[values["agent"] == "b"])
    pd.testing.assert_frame_equal(alone, fits.iloc[[2]].reset_index(drop=True))


def test_the_bootstrap_resamples_games_not_proposals() -> None:
    """Repeating every proposal of every game 10 times adds no information at the game level: a game
    bootstrap gives exactly the same intervals (a proposal-level one would shrink them about √10-fold)."""
    values = _simulated(np.random.default_rng(2), games=25)
    repeated = pd.concat([values] * 10, ignore_index=True)
    once, tenfold = proposal_fits(values, seed=4).iloc[0], proposal_fits(repeated, seed=4).iloc[0]
    for column in ("r", "r_ci_low", "r_ci_high", "m", "m_ci_low", "m_ci_high", "m_origin_ci_high"):
        assert tenfold[column] == pytest.approx(once[column], rel=1e-9)
    assert tenfold["proposals"] == 10 * once["proposals"]


def test_resample_counts_draw_each_game_uniformly() -> None:
    counts = resample_counts(5, 4000, np.random.default_rng(0))
    assert counts.shape == (4000, 5) and (counts.sum(axis=1) == 5).all()
    assert counts.mean(axis=0) == pytest.approx(np.ones(5), abs=0.05)


def test_undefined_fits_are_nan() -> None:
    one_game = _simulated(np.random.default_rng(1), games=1)
    fit = proposal_fits(one_game).iloc[0]
    assert not math.isnan(fit["m"]) and math.isnan(fit["m_ci_low"]) and math.isnan(fit["r_ci_high"])
    constant = fits_from_sums(np.array([3.0, 6.0, 9.0, 12.0, 29.0, 18.0]))  # x = 2, 2, 2
    assert math.isnan(constant["r"]) and math.isnan(constant["m"]) and constant["m_origin"] == 1.5
    with pytest.raises(AnalysisError):
        bootstrap_game_fits(np.ones((3, 6)), level=1.5)
    assert proposal_fits(one_game.iloc[:0]).empty


@pytest.mark.slow
def test_intervals_cover_the_true_r_and_slopes_at_about_the_nominal_rate() -> None:
    """200 simulated studies of 80 games each; the 90% intervals should cover the truth in 90% of them.

    Tolerance 0.84-0.96: about ±2.8 binomial standard deviations of a 200-study rate around 0.90. (Percentile
    intervals run a little short with few games: about 0.87-0.88 at 40 games per group, measured over 600
    studies while writing this test.)"""
    studies = 200
    covered = np.zeros(3)
    for study in range(studies):
        fit = proposal_fits(_simulated(np.random.default_rng(10_000 + study), games=80), seed=study).iloc[0]
        covered += [
            fit["r_ci_low"] <= TRUE_R <= fit["r_ci_high"],
            fit["m_ci_low"] <= SLOPE <= fit["m_ci_high"],
            fit["m_origin_ci_low"] <= TRUE_M_ORIGIN <= fit["m_origin_ci_high"],
        ]
    rates = covered / studies
    assert ((rates >= 0.84) & (rates <= 0.96)).all(), rates


def test_bootstrap_of_a_large_group_takes_a_fraction_of_a_second() -> None:
    """10,000 proposals in about 2,000 games, one group, B = 2000: sums, estimates and resamples."""
    values = _simulated(np.random.default_rng(3), games=2000).iloc[:10_000]
    proposal_fits(values, b=20)  # warm up: the first large allocations of a process are slower
    started = time.perf_counter()
    fit = proposal_fits(values, b=2000).iloc[0]
    elapsed = time.perf_counter() - started
    assert fit["games"] >= 1500 and fit["m_ci_low"] < SLOPE < fit["m_ci_high"]
    assert elapsed < 2.0, f"{elapsed:.2f} s"


# --- real games ------------------------------------------------------------------------------------------


def test_values_of_real_games_match_the_reports_read_directly() -> None:
    """ToM-1 and ToM-2 bots (focal) against ToM-0 baselines: every focal proposal valued by hand from the
    raw tables; the baseline's proposals are left out."""
    played = [
        play(f"minecraft/1p_v_1p/paper#{n}", [spec, "tom0"], seed=n, game_id=f"{spec}-{n}")
        for n, spec in ((2, "tom1"), (5, "tom2"))
    ]
    ds = load([p.log for p in played], rules=minecraft())
    v0 = {
        (row.game_id, int(row.turn), int(row.seat), str(row.item)): int(row.value)
        for row in ds.tom_reports.itertuples()
        if row.order == 0
    }
    expected = [
        (
            sum(n * v0[(p.game_id, int(p.turn), 0, item)] for item, n in p.request.items()),
            sum(n * v0[(p.game_id, int(p.turn), 0, item)] for item, n in p.offer.items()),
        )
        for p in ds.proposals.itertuples()
        if p.proposer == 0
    ]
    values = proposal_values(ds)
    assert len(values) == len(expected) > 0 and (values["proposer"] == 0).all()
    assert list(zip(values["request_value"], values["offer_value"], strict=True)) == expected
    fits = proposal_fits(values, b=200)
    assert list(fits["agent"]) == ["tom1", "tom2"] and (fits["games"] == 1).all()
