"""Belief accuracy (the paper's Figure 4): how close a seat's V1 (and V2) reports are to what they estimate.

Read from a :class:`analysis.dataset.Dataset`: ``ds.tom_values`` (:data:`analysis.tom_scores.COLUMNS`: every
reported value beside its reference value and the opponent's same-turn report) and ``ds.seats`` (``agent``,
``group``, ``focal``).

Comparisons (``comparison`` column), each a *target* (what is estimated) against the seat's *estimate*:

==================== ========================================== =========================================
comparison           target                                     estimate
==================== ========================================== =========================================
v1_vs_opponent_v0    the opponent's V0 reported the same turn   the seat's V1 about that opponent
v1_vs_reference      the reference values of the opponent's     the seat's V1 about that opponent
                     target (ground truth the paper lacked)
v2_vs_opponent_v1    the opponent's V1 about the seat, same turn the seat's V2 about that opponent
v2_vs_reference      the reference values of the seat's own     the seat's V2 about that opponent
                     target (the V1 of an opponent that inferred
                     the target exactly)
==================== ========================================== =========================================

Decisions where the paper is silent (issue 21), as computed here:

- **Direction and log**: ``kl`` = KL(target ‖ estimate), i.e. KL(opponent's V0 ‖ seat's V1) for the paper's
  measure; natural log (nats).
- **Items**: the items both the target and the estimate cover (``n_items``); a pair with none is dropped.
- **Smoothing**: add-one (:data:`KL_SMOOTHING`) on the 0–10 scale: each value ``v`` becomes ``v + 1`` and the
  values of a report are normalised to sum to 1 over those items, so a 0 never makes KL infinite and a
  report of all zeros is the uniform distribution.
- **Pairs**: same turn only (a V1 of turn t against the opponent's V0 of turn t).
- ``js``: the Jensen–Shannon divergence of the same smoothed distributions (natural log, so within [0, ln 2];
  symmetric). ``mae``: the mean absolute difference of the raw 0–10 values. ``spearman``: the rank
  correlation of the raw values over the items (NaN with fewer than two items or a constant report).
- **Aggregation**: :func:`belief_curves` gives the per-turn mean with a Student-t interval over the pairs of
  that turn; :func:`belief_summary` the mean of per-game means with a Student-t interval over games. Both use
  the focal seats only unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy.special import rel_entr

from analysis.dataset import AnalysisError, Dataset
from analysis.stats import INVALID_INPUT, grouped_mean_ci, require_columns

#: Add-one smoothing on the 0–10 scale, added to every value before normalising (KL and JS).
KL_SMOOTHING: float = 1.0
#: The comparisons of :func:`belief_pairs`, in order.
COMPARISONS: tuple[str, ...] = (
    "v1_vs_opponent_v0",
    "v1_vs_reference",
    "v2_vs_opponent_v1",
    "v2_vs_reference",
)
#: The divergence and agreement measures of every pair.
METRICS: tuple[str, ...] = ("kl", "js", "mae", "spearman")
#: Columns of :func:`belief_pairs`.
PAIR_COLUMNS: tuple[str, ...] = (
    "game_id", "turn", "seat", "opponent_seat", "agent", "group", "focal", "comparison", *METRICS, "n_items",
)  # fmt: skip
_PAIR_KEY = ["game_id", "turn", "seat", "opponent_seat", "comparison"]
_TOM_VALUE_COLUMNS = ("game_id", "turn", "seat", "order", "opponent_seat", "item", "value", "reference",
                      "reference_kind", "opponent_report")  # fmt: skip
_SEAT_COLUMNS = ("game_id", "seat", "agent", "group", "focal")


def kl_divergence(
    target: Mapping[str, float], estimate: Mapping[str, float], smoothing: float = KL_SMOOTHING
) -> float:
    """KL(target ‖ estimate) in nats over the items both dicts hold, ``smoothing`` added to each value."""
    p, q = _smoothed(target, estimate, smoothing)
    return float(rel_entr(p, q).sum())


def js_divergence(a: Mapping[str, float], b: Mapping[str, float], smoothing: float = KL_SMOOTHING) -> float:
    """Jensen–Shannon divergence in nats (within [0, ln 2]) over the shared items, smoothed as KL is."""
    p, q = _smoothed(a, b, smoothing)
    mid = (p + q) / 2
    return float((rel_entr(p, mid).sum() + rel_entr(q, mid).sum()) / 2)


def _smoothed(
    target: Mapping[str, float], estimate: Mapping[str, float], smoothing: float
) -> tuple[np.ndarray, np.ndarray]:
    items = sorted(set(target) & set(estimate))
    if not items:
        raise AnalysisError(
            INVALID_INPUT,
            "the two reports share no item, so no divergence is defined; compare reports of the same turn",
            {"target": sorted(target), "estimate": sorted(estimate)},
        )
    p = np.array([target[i] for i in items], dtype=np.float64) + smoothing
    q = np.array([estimate[i] for i in items], dtype=np.float64) + smoothing
    if (p < 0).any() or (q < 0).any():
        raise AnalysisError(
            INVALID_INPUT, "report values are on the 0-10 scale; a negative value has no divergence"
        )
    return p / p.sum(), q / q.sum()


def belief_pairs(ds: Dataset, smoothing: float = KL_SMOOTHING) -> pd.DataFrame:
    """One row per (game, turn, seat, opponent, comparison) with :data:`PAIR_COLUMNS` (see the module doc).

    ``agent``, ``group`` and ``focal`` are the reporting seat's (from ``ds.seats``).
    """
    values, seats = ds.tom_values, ds.seats
    require_columns(values, _TOM_VALUE_COLUMNS, "tom_values")
    require_columns(seats, _SEAT_COLUMNS, "seats")
    long = _target_estimate_rows(values)
    if long.empty:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in PAIR_COLUMNS})
    if (long["target"] < 0).any() or (long["estimate"] < 0).any():
        raise AnalysisError(
            INVALID_INPUT,
            "a ToM value is negative; reports and reference values are on the 0-10 scale",
            {"rows": int(((long["target"] < 0) | (long["estimate"] < 0)).sum())},
        )
    pairs = _pair_measures(long, smoothing)
    seat_info = seats.loc[:, list(_SEAT_COLUMNS)].drop_duplicates(["game_id", "seat"])
    pairs = pairs.merge(seat_info, on=["game_id", "seat"], how="left", validate="many_to_one")
    pairs["comparison"] = pd.Categorical(pairs["comparison"], categories=COMPARISONS, ordered=True)
    pairs = pairs.sort_values(_PAIR_KEY, ignore_index=True)
    pairs["comparison"] = pairs["comparison"].astype(str)
    return pairs.loc[:, list(PAIR_COLUMNS)]


def _target_estimate_rows(values: pd.DataFrame) -> pd.DataFrame:
    """Long rows (pair key, item, target, estimate) of every comparison, items covered by both only."""
    key = ["game_id", "turn", "seat", "opponent_seat", "item"]
    order = pd.to_numeric(values["order"])
    v1 = values.loc[order == 1]
    v2 = values.loc[order == 2]
    # The V1 a perfect opponent would hold of the seat: the reference values of the seat's own target, as
    # given on its V0 rows (and on V2 rows whose opponent reported no V1).
    own = values.loc[order == 0, ["game_id", "turn", "seat", "item", "reference"]]
    own = own.drop_duplicates(["game_id", "turn", "seat", "item"]).rename(columns={"reference": "own"})
    v2 = v2.merge(own, on=["game_id", "turn", "seat", "item"], how="left")
    v2["own"] = v2["own"].where(
        v2["own"].notna(), v2["reference"].where(v2["reference_kind"] == "own_target")
    )
    parts = [
        (v1, "opponent_report", "v1_vs_opponent_v0"),
        (v1, "reference", "v1_vs_reference"),
        (v2, "opponent_report", "v2_vs_opponent_v1"),
        (v2, "own", "v2_vs_reference"),
    ]
    frames = [
        rows.loc[:, key]
        .reset_index(drop=True)
        .assign(  # the key columns keep the dataset's dtypes
            comparison=comparison,
            target=pd.to_numeric(rows[target], errors="coerce").to_numpy(dtype=np.float64),
            estimate=pd.to_numeric(rows["value"], errors="coerce").to_numpy(dtype=np.float64),
        )
        for rows, target, comparison in parts
    ]
    long = pd.concat(frames, ignore_index=True)
    long = long.loc[long["target"].notna() & long["estimate"].notna()]
    return long.reset_index(drop=True)


def _pair_measures(long: pd.DataFrame, smoothing: float) -> pd.DataFrame:
    """KL, JS, MAE and Spearman per pair, vectorised over all pairs at once (sums by pair code)."""
    grouped = long.groupby(_PAIR_KEY, sort=False)
    # Codes number the pairs in order of first appearance, so the first row of each pair comes in code order.
    code = grouped.ngroup().to_numpy()
    n_pairs = int(code.max()) + 1

    def per_pair(weights: np.ndarray) -> np.ndarray:
        return np.bincount(code, weights=weights, minlength=n_pairs)

    raw_target, raw_estimate = long["target"].to_numpy(), long["estimate"].to_numpy()
    target, estimate = raw_target + smoothing, raw_estimate + smoothing
    n_items = per_pair(np.ones(len(long)))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = target / per_pair(target)[code]
        q = estimate / per_pair(estimate)[code]
        mid = (p + q) / 2
        pairs = long.loc[~pd.Series(code).duplicated().to_numpy(), _PAIR_KEY].reset_index(drop=True)
        pairs["kl"] = per_pair(rel_entr(p, q))
        pairs["js"] = (per_pair(rel_entr(p, mid)) + per_pair(rel_entr(q, mid))) / 2
        pairs["mae"] = per_pair(np.abs(raw_target - raw_estimate)) / n_items
    # Spearman's rho with ties: the Pearson correlation of the within-pair average ranks.
    rank_t = grouped["target"].rank(method="average").to_numpy()
    rank_e = grouped["estimate"].rank(method="average").to_numpy()
    sum_t, sum_e = per_pair(rank_t), per_pair(rank_e)
    var_t = per_pair(rank_t * rank_t) - sum_t * sum_t / n_items
    var_e = per_pair(rank_e * rank_e) - sum_e * sum_e / n_items
    cov = per_pair(rank_t * rank_e) - sum_t * sum_e / n_items
    defined = (var_t > 1e-9) & (var_e > 1e-9)  # ranks are half-integers: a constant report gives exactly 0
    pairs["spearman"] = np.where(defined, cov / np.sqrt(np.where(defined, var_t * var_e, 1.0)), np.nan)
    pairs["n_items"] = n_items.astype(np.int64)
    return pairs


def belief_game_means(pairs: pd.DataFrame, *, focal_only: bool = True) -> pd.DataFrame:
    """Per (agent, group, comparison, game_id): ``pairs`` and the mean of each of :data:`METRICS`."""
    rows = _selected(pairs, focal_only)
    by = ["agent", "group", "comparison", "game_id"]
    grouped = rows.groupby(by, sort=True, dropna=False)
    means = grouped[list(METRICS)].mean()
    means.insert(0, "pairs", grouped.size())
    return means.reset_index()


def belief_curves(pairs: pd.DataFrame, level: float = 0.95, *, focal_only: bool = True) -> pd.DataFrame:
    """Per (agent, group, comparison, turn): ``n`` pairs, then ``{metric}_mean``, ``{metric}_ci_low``,
    ``{metric}_ci_high`` for each of :data:`METRICS` (Student-t interval over that turn's pairs)."""
    rows = _selected(pairs, focal_only)
    return grouped_mean_ci(rows, ["agent", "group", "comparison", "turn"], METRICS, level)


def belief_summary(pairs: pd.DataFrame, level: float = 0.95, *, focal_only: bool = True) -> pd.DataFrame:
    """Per (agent, group, comparison): ``games``, ``pairs``, and for each of :data:`METRICS` the mean of the
    per-game means (``kl``, ...) with a Student-t interval over games (``kl_ci_low``, ``kl_ci_high``, ...)."""
    means = belief_game_means(pairs, focal_only=focal_only)
    summary = grouped_mean_ci(means, ["agent", "group", "comparison"], METRICS, level)
    summary = summary.rename(columns={"n": "games", **{f"{m}_mean": m for m in METRICS}})
    summary.insert(
        4,
        "pairs",
        means.groupby(["agent", "group", "comparison"], sort=True, dropna=False)["pairs"].sum().to_numpy(),
    )
    return summary


def _selected(pairs: pd.DataFrame, focal_only: bool) -> pd.DataFrame:
    require_columns(pairs, PAIR_COLUMNS, "belief pairs")
    return pairs.loc[pairs["focal"].fillna(True).astype(bool)] if focal_only else pairs
