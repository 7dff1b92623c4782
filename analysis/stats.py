"""Statistics shared by the belief (:mod:`analysis.beliefs`) and proposal (:mod:`analysis.proposals`)
analyses.

- :func:`grouped_mean_ci`: per group, the mean of each column with a Student-t confidence interval
  (``scipy.stats.t``; NaN values skipped, the interval NaN with fewer than two values).
- Least-squares fits from sufficient statistics: a fit of y on x needs only the sums
  ``n, Σx, Σy, Σx², Σy², Σxy`` (:data:`FIT_SUMS`), and sums add across games. :func:`game_fit_sums` takes them
  per game, :func:`fits_from_sums` turns any array of them into Pearson r, the slope and intercept of y on x,
  and the slope of the line through the origin.
- :func:`bootstrap_game_fits`: the episode-level (game) bootstrap of those fits. A resample draws games with
  replacement, never single observations, so the dependence between the observations of one game is kept.
  Each of the B resamples is a vector of draw counts per game; the resampled sums are that count matrix times
  the per-game sums (one matrix product), so B = 2000 resamples of a few hundred games cost milliseconds.
- Errors: :class:`analysis.dataset.AnalysisError` with code ``invalid_input`` (:data:`INVALID_INPUT`).
  Intervals are percentile intervals (resamples where a statistic is undefined, e.g. constant x, are skipped).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from analysis.dataset import AnalysisError

#: The sufficient statistics of a least-squares fit of y on x, in the order the arrays hold them.
FIT_SUMS: tuple[str, ...] = ("n", "sx", "sy", "sxx", "syy", "sxy")
#: The statistics :func:`fits_from_sums` returns.
FIT_STATISTICS: tuple[str, ...] = ("r", "m", "intercept", "m_origin")


#: The :class:`AnalysisError` code of a table an analysis cannot use (a column missing, a value out of range).
INVALID_INPUT = "invalid_input"


def require_columns(frame: pd.DataFrame, columns: Iterable[str], table: str) -> None:
    """Raise :class:`AnalysisError` (``invalid_input``) naming the columns ``frame`` lacks."""
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise AnalysisError(
            INVALID_INPUT,
            f"the {table} table lacks the columns {missing}; build it with analysis.load(SOURCE), "
            "which gives every table its documented columns",
            {"table": table, "missing": missing},
        )


def grouped_mean_ci(
    frame: pd.DataFrame, by: Sequence[str], columns: Sequence[str], level: float = 0.95
) -> pd.DataFrame:
    """Per group of ``by``: ``n`` (rows), then for each column ``{c}_mean``, ``{c}_ci_low``, ``{c}_ci_high``.

    The interval is the Student-t interval of the mean over the group's non-missing values of that column
    (``mean ± t_{(1+level)/2, k-1} · sd / √k``): NaN with fewer than two values, the mean itself when the
    values are all equal.
    """
    _check_level(level)
    grouped = frame.groupby(list(by), sort=True, dropna=False)
    out = grouped.size().rename("n").to_frame()
    for column in columns:
        count = grouped[column].count()
        mean = grouped[column].mean()
        sem = grouped[column].std(ddof=1) / np.sqrt(count)
        with np.errstate(invalid="ignore"):
            half = stats.t.ppf((1 + level) / 2, (count - 1).where(count > 1)) * sem
        out[f"{column}_mean"] = mean
        out[f"{column}_ci_low"] = mean - half
        out[f"{column}_ci_high"] = mean + half
    return out.reset_index()


def game_fit_sums(games: pd.Series, x: pd.Series, y: pd.Series) -> pd.DataFrame:
    """The sums of :data:`FIT_SUMS` of the pairs (x, y) per game (index: game; sorted)."""
    terms = pd.DataFrame(
        {"game": games.to_numpy(), "n": 1.0, "sx": x, "sy": y, "sxx": x * x, "syy": y * y, "sxy": x * y},
        index=x.index,
    )
    return terms.groupby("game", sort=True)[list(FIT_SUMS)].sum()


def fits_from_sums(sums: np.ndarray) -> dict[str, np.ndarray]:
    """Pearson r, slope ``m`` and ``intercept`` of y on x, and the through-origin slope ``m_origin``.

    ``sums`` has :data:`FIT_SUMS` along its last axis (any leading shape: one fit, or one per resample).
    A statistic is NaN where it is undefined: r when x or y is constant, m and the intercept when x is,
    m_origin when every x is 0.
    """
    n, sx, sy, sxx, syy, sxy = np.moveaxis(np.asarray(sums, dtype=np.float64), -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Centred sums; a relative tolerance turns round-off on constant data into an exact zero.
        cxx = _centred(sxx, sx * sx / n)
        cyy = _centred(syy, sy * sy / n)
        cxy = sxy - sx * sy / n
        m = np.where(cxx > 0, cxy / cxx, np.nan)
        r = np.where((cxx > 0) & (cyy > 0), cxy / np.sqrt(cxx * cyy), np.nan)
        intercept = (sy - m * sx) / n
        m_origin = np.where(sxx > 0, sxy / sxx, np.nan)
    return {"r": np.clip(r, -1.0, 1.0), "m": m, "intercept": intercept, "m_origin": m_origin}


def _centred(raw: np.ndarray, correction: np.ndarray) -> np.ndarray:
    centred = raw - correction
    return np.where(centred > 1e-12 * np.maximum(np.abs(raw), 1.0), centred, 0.0)


def resample_counts(n_games: int, b: int, rng: np.random.Generator) -> np.ndarray:
    """``b`` bootstrap resamples of ``n_games`` games as a (b, n_games) matrix of how often each is drawn."""
    draws = rng.integers(0, n_games, size=(b, n_games))
    flat = (draws + n_games * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_games).reshape(b, n_games).astype(np.float64)


def bootstrap_game_fits(
    per_game_sums: np.ndarray, *, b: int = 2000, level: float = 0.90, seed: int | Sequence[int] = 0
) -> dict[str, tuple[float, float]]:
    """Percentile ``level`` intervals of :data:`FIT_STATISTICS` by resampling games ``b`` times.

    ``per_game_sums`` is (games, :data:`FIT_SUMS`); ``seed`` seeds ``numpy.random.default_rng`` (the same
    seed and sums give the same intervals). With fewer than two games every interval is (NaN, NaN): a
    bootstrap of one game only repeats it.
    """
    _check_level(level)
    if b < 1:
        raise AnalysisError(INVALID_INPUT, f"the bootstrap needs at least one resample, not b={b}", {"b": b})
    sums = np.asarray(per_game_sums, dtype=np.float64)
    nan = (float("nan"), float("nan"))
    if sums.shape[0] < 2:
        return dict.fromkeys(FIT_STATISTICS, nan)
    counts = resample_counts(sums.shape[0], b, np.random.default_rng(seed))
    resampled = fits_from_sums(counts @ sums)
    return {name: percentile_interval(resampled[name], level) for name in FIT_STATISTICS}


def percentile_interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` percentile interval of ``samples`` (NaN samples skipped; all NaN gives NaN)."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return (float("nan"), float("nan"))
    low, high = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    return (float(low), float(high))


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise AnalysisError(
            INVALID_INPUT,
            f"a confidence level is a fraction strictly between 0 and 1 (e.g. 0.9), not {level}",
            {"level": level},
        )
