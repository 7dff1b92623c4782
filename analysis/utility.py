"""Decision utility fitting (the paper's §4.2, Table 1 and Figure 6): how well ToM-valued gains and losses
predict a decision maker's accept/reject.

**Features** (:func:`decision_features`): one row per decision of a focal seat on a proposal. The decider
receives the proposal's ``offer`` and gives its ``request``; each item count is valued by the *decider's own*
report of the same turn (the latest one before the decision):

- ``G0`` / ``L0``: received / given items under the decider's V0 (its own values);
- ``G1`` / ``L1``: the same under its V1 about the proposer (its estimate of the proposer's values);
- ``G2`` / ``L2``: the same under its V2 about the proposer (its estimate of the proposer's V1 about it).

A feature is NaN when the decider did not report that order that turn, or its report omits an item of the
proposal (no value is guessed for it). Decisions the decider did not choose are left out: those the game
made for it (a ``reason`` such as a deadline or a resignation) and an LLM agent's fallback moves (a
``fallback`` trace record linked to the decision).

**Utilities** (:data:`UTILITIES`): ``U(0) = G0 − ρ·L0``; ``U(0,1) = U(0) + w1·(G1 − γ·L1)``;
``U(0,1,2) = U(0,1) + w2·(G2 − κ·L2)``. The standardised utility is the single feature of a logistic
regression ``P(accept) = σ(β·Ũ + b)`` (scikit-learn, L-BFGS, its default L2 penalty ``C = 1``, which keeps β
finite on separable decisions). ρ, γ, κ range over −2…2 and w1, w2 over −3…3 in steps of 0.25
(:data:`GRID`; pass a coarser :class:`ParameterGrid` for speed); the grid point whose fitted logistic has
the highest training log-likelihood wins — the penalised one, ``ℓ − β²/(2C)``, the objective the logistic
regression itself maximises (it differs from ℓ by the small penalty; exact ties go to the simplest point,
smallest |w1| + |w2| first).

**Search.** Every grid point is a direction of ``[G0, L0, G1, L1, G2, L2]`` and costs one one-feature
logistic fit (vectorised Newton steps for many points at once, :func:`grid_log_likelihood`, the same optimum
as scikit-learn's L-BFGS). A set of points is searched *exactly* without fitting them all (:func:`_best`):
best-first branch and bound, where every fitted point's dual variables bound every other point's objective
from above in O(1) (Fenchel duality), and the search stops when no unfitted point's bound reaches the best
fitted value. ``U(0)`` (17 points) and ``U(0,1)`` (7,225 points) are searched this way over the whole grid,
so exactly. ``U(0,1,2)`` has 17³·25² ≈ 3.1 M points; it is searched by **block coordinate ascent from two
starts**: (a) the best ``U(0,1)`` point (``w2 = 0``) and (b) the unconstrained six-feature logistic fit
snapped to the grid. From each start, until no move improves: exactly over all (ρ, γ, w1) with (κ, w2)
fixed; exactly over all (ρ, κ, w2) with (γ, w1) fixed; over (γ, κ, w1, w2) within one step of the current
point; over every move of all five parameters by one step. The result is at least as good as the best
``w2 = 0`` point and a local optimum under all these moves. Start (b) matters: over 12 random decision makers
on a half-step grid, (a) alone missed the exhaustive optimum twice and (a)+(b) never. The tests compare the
search with exact optima of small grids and (marked slow) of the full grid (:func:`exhaustive_search`,
~20 s a case). Cost: :func:`utility_table` on 10,000 simulated decisions (4 agents × 3 groups,
:func:`simulated_features`: 24 cross-validated fits) takes 4–8 s on this project's two shared cores at load
average 5–6, most of it scikit-learn's final fits.

**Cross-validation** (:func:`fit_utility`): stratified ``folds``-fold CV grouped by game
(``StratifiedGroupKFold``, shuffled with ``seed``); the grid search is re-run on every training fold; the
score is the macro-F1 of the held-out fold (scikit-learn's, over the classes the fold holds or is predicted
to hold); ``f1_mean`` ± ``f1_sd`` over the folds (``f1_sd`` is the population sd, ``numpy.std``). The
reported parameters, β, intercept and log-likelihood (unpenalised ℓ) come from one more fit on all the
decisions. When a fit cannot be made, F1 is NaN and ``reason`` says why (:data:`REASONS`); nothing raises.

**Figure 6 weights** (``coefficients`` of :func:`utility_table`): ``weight_raw = (β/σ_U)·[1, −ρ, w1, −w1·γ,
w2, −w2·κ]`` for the terms ``G0 L0 G1 L1 G2 L2`` a utility uses (the logistic's coefficient on each raw
feature), and ``weight`` = the same divided by the sum of their absolute values. γ (κ) is reported NaN when
w1 (w2) is 0: it then does not change the utility.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedGroupKFold
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from analysis.dataset import AnalysisError

#: The utilities and the ToM orders each uses.
UTILITIES: dict[str, tuple[int, ...]] = {"U(0)": (0,), "U(0,1)": (0, 1), "U(0,1,2)": (0, 1, 2)}
#: The raw features, in the order of the coefficient vector ``[1, −ρ, w1, −w1γ, w2, −w2κ]``.
TERMS: tuple[str, ...] = ("G0", "L0", "G1", "L1", "G2", "L2")
#: The utility parameters, in the order :class:`ParameterGrid` and the search use.
PARAMETERS: tuple[str, ...] = ("rho", "gamma", "kappa", "w1", "w2")
#: Columns of :func:`decision_features`.
FEATURE_COLUMNS: tuple[str, ...] = (
    "game_id", "turn", "seat", "proposer", "agent", "group", "accept", *TERMS,
)  # fmt: skip
#: Columns of the first table of :func:`utility_table` (Table 1).
TABLE1_COLUMNS: tuple[str, ...] = (
    "agent", "group", "utility", "decisions", "games", "accept_rate", "folds_scored", "f1_mean", "f1_sd",
    *PARAMETERS, "beta", "intercept", "log_likelihood", "reason",
)  # fmt: skip
#: Columns of the second table of :func:`utility_table` (Figure 6).
COEFFICIENT_COLUMNS: tuple[str, ...] = ("agent", "group", "utility", "term", "weight", "weight_raw")
#: Why a fit has no F1 (the ``reason`` column; empty when it has one).
REASONS: dict[str, str] = {
    "too_few_decisions": "fewer decisions than the fit needs (MIN_DECISIONS)",
    "one_class": "every decision is the same (all accepts or all rejects)",
    "too_few_games": "fewer games than folds: game-grouped cross-validation is impossible",
    "one_class_training_fold": "a training fold holds one class only: no classifier can be fit on it",
}
#: Fewest decisions (with the utility's features present) a fit is attempted on.
MIN_DECISIONS = 10
#: Inverse L2 strength of the logistic regression (scikit-learn's default).
LOGISTIC_C = 1.0


class UtilityFitError(AnalysisError):
    """A call the utility fitting cannot serve: ``unknown_utility`` (a name not in :data:`UTILITIES`),
    ``missing_columns`` (a table lacking columns the fitting reads)."""


@dataclass(frozen=True)
class ParameterGrid:
    """Values the search may give ρ, γ, κ (``loss``) and w1, w2 (``order``)."""

    loss: tuple[float, ...]
    order: tuple[float, ...]

    def values(self, parameter: str) -> np.ndarray:
        return np.asarray(self.order if parameter in ("w1", "w2") else self.loss, dtype=float)

    @property
    def size(self) -> int:
        return len(self.loss) ** 3 * len(self.order) ** 2


def _steps(low: float, high: float, step: float) -> tuple[float, ...]:
    count = round((high - low) / step)
    return tuple(round(low + i * step, 10) for i in range(count + 1))


#: The issue's grid: ρ, γ, κ ∈ [−2, 2] and w1, w2 ∈ [−3, 3] in steps of 0.25.
GRID = ParameterGrid(loss=_steps(-2.0, 2.0, 0.25), order=_steps(-3.0, 3.0, 0.25))

#: The paper's Table 1 (macro-F1 mean ± sd over episode-wise 3-fold CV): ``group`` is the ToM group whose
#: decisions were fit with ``utility`` (zero / first / second order).
PAPER_TABLE1: pd.DataFrame = pd.DataFrame(
    [
        (model, group, utility, mean, sd)
        for model, scores in (
            ("GPT-4o", ((0.77, 0.28), (0.94, 0.09), (1.00, 0.00))),
            ("o3", ((0.80, 0.19), (1.00, 0.00), (1.00, 0.00))),
            ("o4-mini", ((0.74, 0.18), (0.80, 0.09), (0.83, 0.04))),
            ("GPT-5 (medium)", ((0.74, 0.24), (0.92, 0.06), (0.85, 0.11))),
        )
        for (group, utility), (mean, sd) in zip(
            (("V0", "U(0)"), ("V0+V1", "U(0,1)"), ("V0+V1+V2", "U(0,1,2)")), scores, strict=True
        )
    ],
    columns=["model", "group", "utility", "f1_mean", "f1_sd"],
)


class DecisionTables(Protocol):
    """What :func:`decision_features` reads of an :class:`analysis.dataset.Dataset` (any object with these
    DataFrames will do)."""

    seats: pd.DataFrame
    decisions: pd.DataFrame
    proposals: pd.DataFrame
    tom_reports: pd.DataFrame


# ---------------------------------------------------------------------------------------------------------
# Features


def _counts(cell: Any) -> dict[str, float]:
    if isinstance(cell, str):
        cell = json.loads(cell) if cell.strip() else {}
    if not isinstance(cell, Mapping):
        return {}
    return {str(item): float(count) for item, count in cell.items()}


def _valued(counts: Mapping[str, float], values: Mapping[str, float] | None) -> float:
    if values is None or any(item not in values for item in counts):
        return math.nan
    return float(sum(count * values[item] for item, count in counts.items()))


def _require(frame: pd.DataFrame, name: str, columns: Iterable[str]) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise UtilityFitError(
            "missing_columns",
            f"The {name} table lacks the columns {missing}; build it with analysis.dataset.load.",
            {"table": name, "missing": missing},
        )


def decision_features(ds: DecisionTables) -> pd.DataFrame:
    """One row per decision of a focal seat on a proposal (:data:`FEATURE_COLUMNS`; see the module doc).

    Reads ``ds.seats`` (``game_id, seat, agent, group, focal``), ``ds.decisions`` (``game_id, turn, seq,
    proposer, seat, accept``), ``ds.proposals`` (``game_id, turn, seq, proposer, offer, request``) and
    ``ds.tom_reports`` (``game_id, turn, seq, seat, order, opponent_seat, item, value``).
    """
    _require(ds.seats, "seats", ("game_id", "seat", "agent", "group", "focal"))
    _require(ds.decisions, "decisions", ("game_id", "turn", "seq", "proposer", "seat", "accept"))
    _require(ds.proposals, "proposals", ("game_id", "turn", "seq", "proposer", "offer", "request"))
    _require(ds.tom_reports, "tom_reports", ("game_id", "turn", "seq", "seat", "order", "opponent_seat"))
    focal = ds.seats[ds.seats["focal"].fillna(True).astype(bool)]
    seats = {
        (game, int(seat)): (agent, group)
        for game, seat, agent, group in zip(
            focal["game_id"], focal["seat"], focal["agent"], focal["group"], strict=True
        )
    }
    proposals: dict[tuple[Any, int, int], list[tuple[int, Any, Any]]] = {}
    for row in ds.proposals.itertuples(index=False):
        key = (row.game_id, int(row.turn), int(row.proposer))
        proposals.setdefault(key, []).append((int(row.seq), row.offer, row.request))
    reports = _report_values(ds.tom_reports)
    traces = getattr(ds, "traces", None)
    fallbacks: set[tuple[Any, int]] = set()
    if traces is not None and {"kind", "event_seq"} <= set(traces.columns):
        linked = traces[(traces["kind"] == "fallback") & traces["event_seq"].notna()]
        pairs = zip(linked["game_id"], linked["event_seq"], strict=True)
        fallbacks = {(game, int(seq)) for game, seq in pairs}
    chosen = ds.decisions
    if "reason" in chosen.columns:  # the game decided for the seat (deadline, resignation)
        chosen = chosen[chosen["reason"].isna() | chosen["reason"].eq("")]
    rows: list[dict[str, Any]] = []
    for decision in chosen.itertuples(index=False):
        seat, proposer = int(decision.seat), int(decision.proposer)
        if (decision.game_id, seat) not in seats or (decision.game_id, int(decision.seq)) in fallbacks:
            continue
        before = [
            p
            for p in proposals.get((decision.game_id, int(decision.turn), proposer), ())
            if p[0] < decision.seq
        ]
        if not before:
            continue  # a decision without its proposal in the log: nothing to value
        _, offer, request = max(before, key=lambda p: p[0])
        received, given = _counts(offer), _counts(request)
        agent, group = seats[(decision.game_id, seat)]
        report = _latest_report(reports.get((decision.game_id, int(decision.turn), seat), ()), decision.seq)
        row: dict[str, Any] = {
            "game_id": decision.game_id, "turn": int(decision.turn), "seat": seat, "proposer": proposer,
            "agent": agent, "group": group, "accept": int(bool(decision.accept)),
        }  # fmt: skip
        for order in (0, 1, 2):
            values = report.get((order, None if order == 0 else proposer))
            row[f"G{order}"] = _valued(received, values)
            row[f"L{order}"] = _valued(given, values)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(FEATURE_COLUMNS)).astype({term: float for term in TERMS})


ReportValues = dict[tuple[int, int | None], dict[str, float]]


def _report_values(tom_reports: pd.DataFrame) -> dict[tuple[Any, int, int], list[tuple[int, ReportValues]]]:
    """(game, turn, seat) → [(seq, {(order, opponent): {item: value}})] of every report."""
    out: dict[tuple[Any, int, int], dict[int, ReportValues]] = {}
    for row in tom_reports.itertuples(index=False):
        if pd.isna(row.value):
            continue
        order = int(row.order)
        opponent = None if order == 0 or pd.isna(row.opponent_seat) else int(row.opponent_seat)
        per_seq = out.setdefault((row.game_id, int(row.turn), int(row.seat)), {})
        per_seq.setdefault(int(row.seq), {}).setdefault((order, opponent), {})[str(row.item)] = float(
            row.value
        )
    return {key: sorted(per_seq.items()) for key, per_seq in out.items()}


def _latest_report(reports: Sequence[tuple[int, ReportValues]], before_seq: int) -> ReportValues:
    earlier = [values for seq, values in reports if seq < before_seq]
    return earlier[-1] if earlier else {}


def simulated_features(
    decisions: int = 10_000,
    *,
    agents: Sequence[str] = ("sim-a", "sim-b", "sim-c", "sim-d"),
    games_per_group: int = 20,
    beta: float = 3.0,
    seed: int = 0,
) -> pd.DataFrame:
    """Synthetic :func:`decision_features` rows (for benchmarks and demos): ``decisions`` split evenly over
    every agent and the groups V0, V0+V1, V0+V1+V2, each deciding by the logistic utility model with
    parameters ρ = 1, γ = 0.5, κ = −0.5, w1 = 1.5, w2 = −1 (the orders it does not report left out), item
    counts Poisson(0.7) over six items valued 0-10 at every order."""
    rng = np.random.default_rng(seed)
    groups = (("V0", (0,)), ("V0+V1", (0, 1)), ("V0+V1+V2", (0, 1, 2)))
    per_cell = max(1, decisions // (len(agents) * len(groups)))
    truth = {"rho": 1.0, "gamma": 0.5, "kappa": -0.5, "w1": 1.5, "w2": -1.0}
    frames = []
    for agent in agents:
        for group, orders in groups:
            received, given = rng.poisson(0.7, (2, per_cell, 6))
            x = np.full((per_cell, len(TERMS)), np.nan)
            for order in orders:
                values = rng.integers(0, 11, (per_cell, 6))
                x[:, 2 * order] = (received * values).sum(axis=1)
                x[:, 2 * order + 1] = (given * values).sum(axis=1)
            theta = {**truth, **({} if 1 in orders else {"w1": 0.0}), **({} if 2 in orders else {"w2": 0.0})}
            u = np.nan_to_num(x) @ coefficient_vectors(np.array([[theta[name] for name in PARAMETERS]]))[0]
            probability = expit(beta * (u - u.mean()) / u.std())
            game = rng.integers(0, games_per_group, per_cell)
            frame = pd.DataFrame(x, columns=list(TERMS))
            frame.insert(0, "game_id", [f"{agent}/{group}/{g}" for g in game])
            frame.insert(1, "turn", np.arange(per_cell) // games_per_group)
            frame.insert(2, "seat", 0)
            frame.insert(3, "proposer", 1)
            frame.insert(4, "agent", agent)
            frame.insert(5, "group", group)
            frame.insert(6, "accept", (rng.random(per_cell) < probability).astype(int))
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)[list(FEATURE_COLUMNS)]


# ---------------------------------------------------------------------------------------------------------
# Vectorised one-feature logistic fits


def coefficient_vectors(thetas: np.ndarray) -> np.ndarray:
    """``[1, −ρ, w1, −w1·γ, w2, −w2·κ]`` for each row ``(ρ, γ, κ, w1, w2)`` of ``thetas``."""
    rho, gamma, kappa, w1, w2 = np.asarray(thetas, dtype=float).T
    return np.stack([np.ones_like(rho), -rho, w1, -w1 * gamma, w2, -w2 * kappa], axis=1)


# numpy's exp and log rather than scipy.special's expit / log_expit / entr: ~10x faster here, and these loops
# run over millions of cells.
def _sigmoid(eta: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(eta, -700.0, 700.0)))


def _softplus(eta: np.ndarray) -> np.ndarray:
    """log(1 + e^η), stable for large |η|."""
    return np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))


def _x_log_x(x: np.ndarray) -> np.ndarray:
    return x * np.log(np.maximum(x, 1e-300))


def _log_likelihood(eta: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Σ y·η − log(1 + e^η) over the last axis."""
    return eta @ y - _softplus(eta).sum(axis=-1)


def _standardise(utilities: np.ndarray) -> np.ndarray:
    """Rows of ``utilities`` centred and scaled to unit (population) sd; a constant row becomes zeros."""
    z = utilities - utilities.mean(axis=1, keepdims=True)
    sd = np.sqrt(np.einsum("ij,ij->i", z, z) / z.shape[1])
    flat = sd <= 1e-12 * np.maximum(1.0, np.abs(utilities).max(axis=1))
    z[flat] = 0.0
    z[~flat] /= sd[~flat, None]
    return z


def _one_step_start(z: np.ndarray, y: np.ndarray, c: float = LOGISTIC_C) -> tuple[np.ndarray, np.ndarray]:
    """One Newton step from (β, b) = (0, logit ȳ); standardised rows (Σz = 0, Σz² = n) decouple it."""
    mean_y = float(np.clip(y.mean(), 1e-6, 1 - 1e-6))
    beta = (z @ (y - mean_y)) / (mean_y * (1 - mean_y) * len(y) + 1 / c)
    return beta, np.full(len(z), math.log(mean_y / (1 - mean_y)))


def grid_log_likelihood(
    utilities: np.ndarray,
    y: np.ndarray,
    *,
    c: float = LOGISTIC_C,
    tol: float = 1e-8,
    fast_iterations: int = 25,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit ``P(y=1) = σ(β·z + b)`` on the standardised rows ``z`` of ``utilities`` (P × n), all at once.

    Maximises ``ℓ − β²/(2c)`` (scikit-learn's L2-penalised objective), strictly concave, so a Newton
    iteration that settles has found the maximum. Rows take plain Newton steps from the one-step estimate
    until a step moves less than ``tol`` (at most ``fast_iterations``); rows that have not settled (near
    separation) are finished by damped Newton (a step that lowers the objective is halved). Returns (the
    log-likelihood ℓ, β, b) per row; a constant row gets β = 0.
    """
    z = _standardise(np.atleast_2d(np.asarray(utilities, dtype=float)))
    y = np.asarray(y, dtype=float)
    beta, bias = _one_step_start(z, y, c)
    unsettled = np.arange(len(z))
    for _ in range(fast_iterations):
        step_beta, step_bias = _newton_step(z[unsettled], y, beta[unsettled], bias[unsettled], c)
        beta[unsettled] += step_beta
        bias[unsettled] += step_bias
        unsettled = unsettled[~(np.maximum(np.abs(step_beta), np.abs(step_bias)) <= tol)]
        if unsettled.size == 0:
            break
    if unsettled.size:
        beta[unsettled], bias[unsettled] = _damped_newton(z[unsettled], y, c, tol)
    eta = beta[:, None] * z + bias[:, None]
    return _log_likelihood(eta, y), beta, bias


def _newton_step(
    z: np.ndarray, y: np.ndarray, beta: np.ndarray, bias: np.ndarray, c: float
) -> tuple[np.ndarray, np.ndarray]:
    p = _sigmoid(beta[:, None] * z + bias[:, None])
    weight = p * (1 - p)
    weighted_z = weight * z
    g_beta = z @ y - np.einsum("ij,ij->i", p, z) - beta / c
    g_bias = y.sum() - p.sum(axis=1)
    h_bb = np.einsum("ij,ij->i", weighted_z, z) + 1 / c
    h_bz = weighted_z.sum(axis=1)
    h_zz = np.maximum(weight.sum(axis=1), 1e-12)
    det = h_bb * h_zz - h_bz**2
    return (h_zz * g_beta - h_bz * g_bias) / det, (h_bb * g_bias - h_bz * g_beta) / det


def _damped_newton(
    z: np.ndarray, y: np.ndarray, c: float, tol: float, max_iter: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """Newton from (0, logit ȳ) halving steps that lower the penalised objective (slow, always converges)."""
    mean_y = float(np.clip(y.mean(), 1e-6, 1 - 1e-6))
    beta = np.zeros(len(z))
    bias = np.full(len(z), math.log(mean_y / (1 - mean_y)))

    def objective(b_beta: np.ndarray, b_bias: np.ndarray) -> np.ndarray:
        return _log_likelihood(b_beta[:, None] * z + b_bias[:, None], y) - b_beta**2 / (2 * c)

    current = objective(beta, bias)
    for _ in range(max_iter):
        step_beta, step_bias = _newton_step(z, y, beta, bias, c)
        scale = np.ones(len(z))
        new = objective(beta + step_beta, bias + step_bias)
        for _ in range(40):
            worse = ~(new >= current - 1e-12)
            if not worse.any():
                break
            scale[worse] /= 2
            new[worse] = objective(beta + scale * step_beta, bias + scale * step_bias)[worse]
        beta += scale * step_beta
        bias += scale * step_bias
        current = new
        if np.all(np.maximum(np.abs(scale * step_beta), np.abs(scale * step_bias)) <= tol):
            break
    return beta, bias


def _penalised(ll: np.ndarray, beta: np.ndarray, c: float = LOGISTIC_C) -> np.ndarray:
    return ll - beta**2 / (2 * c)


def _utility_chunks(
    features: np.ndarray, y: np.ndarray, thetas: np.ndarray, chunk_cells: int = 32_000
) -> Iterable[tuple[slice, np.ndarray]]:
    """(rows of ``thetas``, their utilities) in chunks small enough for the CPU cache."""
    coefficients = coefficient_vectors(thetas)
    rows = max(1, chunk_cells // max(1, len(y)))
    for start in range(0, len(thetas), rows):
        yield slice(start, start + rows), coefficients[start : start + rows] @ features.T


def _evaluate(features: np.ndarray, y: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """The penalised log-likelihood ``ℓ − β²/(2C)`` of every parameter row of ``thetas``, fully converged."""
    out = np.empty(len(thetas))
    # Small matrices: BLAS threads only contend (measured 3x slower on two busy cores).
    with threadpool_limits(limits=1):
        for rows, utilities in _utility_chunks(features, y, thetas):
            ll, beta, _ = grid_log_likelihood(utilities, y)
            out[rows] = _penalised(ll, beta)
    return out


# ---------------------------------------------------------------------------------------------------------
# Grid search


def _theta_grid(
    grid: ParameterGrid, free: Mapping[str, np.ndarray], fixed: Mapping[str, float]
) -> np.ndarray:
    """Rows (ρ, γ, κ, w1, w2): the product of ``free`` values, the ``fixed`` ones elsewhere."""
    names = list(free)
    combos = np.array(list(itertools.product(*(free[name] for name in names))), dtype=float)
    thetas = np.empty((len(combos), len(PARAMETERS)))
    for j, parameter in enumerate(PARAMETERS):
        thetas[:, j] = combos[:, names.index(parameter)] if parameter in free else fixed[parameter]
    return thetas


def _best(
    features: np.ndarray, y: np.ndarray, thetas: np.ndarray, *, batch: int = 16
) -> tuple[np.ndarray, float]:
    """The row of ``thetas`` with the highest penalised log-likelihood (on exact ties the simplest,
    :func:`_simplest`), and that value.

    Exact without fitting every row, by best-first branch and bound on Fenchel-duality bounds. A fitted row
    gives dual variables ``a`` (its probabilities, ``Σa = Σy``) that bound *every* row θ from above in
    O(1): ``max F(θ) ≤ Σ (a log a + (1−a) log(1−a)) + (C/2)·(Σ (y − a)·z_θ)²``, where ``Σ (y − a)·z_θ =
    ((y − a)·X)·c_θ / σ_θ`` needs only the 6-vector ``(y − a)·X`` and the features' covariance. Rounds fit
    the ``batch`` rows with the highest bounds (first, the highest score statistic), tighten every bound with
    their duals, and stop when no unfitted row's bound reaches the best fitted value.
    """
    y = np.asarray(y, dtype=float)
    coefficients = coefficient_vectors(thetas)
    centred = features - features.mean(axis=0)
    covariance = centred.T @ centred / len(y)
    sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", coefficients, covariance, coefficients), 0.0))
    scale = np.where(sd > 1e-12 * (1 + np.abs(coefficients) @ np.abs(features).max(axis=0)), 1 / sd, 0.0)
    upper = np.full(len(thetas), np.inf)
    fitted = np.full(len(thetas), -np.inf)
    done = np.zeros(len(thetas), dtype=bool)
    # Σ (y − ȳ)·z_θ: the score statistic of β = 0, which orders the first round.
    score = ((centred.T @ (y - y.mean())) @ coefficients.T * scale) ** 2
    order = score
    with threadpool_limits(limits=1):  # small matrices: BLAS threads only contend (3x slower measured)
        while True:
            open_rows = np.flatnonzero(~done)
            best = fitted.max()
            slack = 1e-7 * (1 + abs(best)) if np.isfinite(best) else 0.0
            open_rows = open_rows[upper[open_rows] >= best - slack]
            if open_rows.size == 0:
                break
            pick = open_rows[np.argsort(-order[open_rows], kind="stable")[:batch]]
            utilities = coefficients[pick] @ features.T
            ll, beta, bias = grid_log_likelihood(utilities, y)
            fitted[pick] = _penalised(ll, beta)
            done[pick] = True
            z = _standardise(utilities)
            a = _sigmoid(beta[:, None] * z + bias[:, None])
            a += ((y.sum() - a.sum(axis=1)) / len(y))[:, None]
            usable = (a.min(axis=1) >= 0) & (a.max(axis=1) <= 1)
            for dual in a[usable]:
                constant = float((_x_log_x(dual) + _x_log_x(1 - dual)).sum())
                correlation = (centred.T @ (y - dual)) @ coefficients.T * scale
                upper = np.minimum(upper, constant + (LOGISTIC_C / 2) * correlation**2)
            order = upper
    tied = np.flatnonzero(fitted >= fitted.max())
    index = int(tied[_simplest(thetas[tied])])
    return thetas[index], float(fitted[index])


def _simplest(thetas: np.ndarray) -> int:
    """Index of the simplest of equally good parameter rows: smallest |w1| + |w2|, then |γ| + |κ|, then |ρ|,
    then the first (ties are exact: e.g. all V1 values zero leave w1 and γ free)."""
    rho, gamma, kappa, w1, w2 = np.abs(thetas).T
    return int(np.lexsort((np.arange(len(thetas)), rho, gamma + kappa, w1 + w2))[0])


def _snap(value: float, values: np.ndarray) -> float:
    return float(values[int(np.argmin(np.abs(values - value)))])


def _unconstrained_start(features: np.ndarray, y: np.ndarray, grid: ParameterGrid) -> np.ndarray | None:
    """The six-feature logistic fit's direction as (ρ, γ, κ, w1, w2), snapped to the grid."""
    sd = features.std(axis=0)
    usable = sd > 0
    if not usable[0]:
        return None
    model = LogisticRegression(C=LOGISTIC_C, solver="lbfgs", max_iter=1000)
    model.fit(features[:, usable] / sd[usable], y)
    direction = np.zeros(len(TERMS))
    direction[usable] = model.coef_[0] / sd[usable]
    if abs(direction[0]) < 1e-12:
        return None
    _, l0, g1, l1, g2, l2 = direction / direction[0]
    raw = {
        "rho": -l0, "w1": g1, "gamma": -l1 / g1 if abs(g1) > 1e-12 else 0.0,
        "w2": g2, "kappa": -l2 / g2 if abs(g2) > 1e-12 else 0.0,
    }  # fmt: skip
    return np.array([_snap(raw[name], grid.values(name)) for name in PARAMETERS])


def _window(values: np.ndarray, current: float, radius: int = 1) -> np.ndarray:
    index = int(np.argmin(np.abs(values - current)))
    return values[max(0, index - radius) : index + radius + 1]


BlockResults = dict[tuple[int, tuple[float, ...]], tuple[np.ndarray, float]]


def _ascend(
    features: np.ndarray,
    y: np.ndarray,
    grid: ParameterGrid,
    start: np.ndarray,
    start_ll: float,
    searched: BlockResults,
) -> tuple[np.ndarray, float]:
    """Block coordinate ascent over the full grid from ``start`` until no block move improves.

    A big block's best point depends only on the parameters it holds fixed, so ``searched`` keeps it by
    (block, held values) across calls (block 0 at κ = w2 = 0 is the exhaustive ``U(0,1)`` search).
    """
    big_blocks = ((("rho", "gamma", "w1"), ("kappa", "w2")), (("rho", "kappa", "w2"), ("gamma", "w1")))
    current, current_ll = start.copy(), start_ll

    def point() -> dict[str, float]:
        return dict(zip(PARAMETERS, (float(v) for v in current), strict=True))

    while True:
        before = current_ll
        for index, (free, held) in enumerate(big_blocks):
            key = (index, tuple(point()[name] for name in held))
            if key not in searched:
                searched[key] = _best(
                    features, y, _theta_grid(grid, {n: grid.values(n) for n in free}, point())
                )
            theta, ll = searched[key]
            if ll > current_ll + 1e-9:
                current, current_ll = theta.copy(), ll
        for names in (("gamma", "kappa", "w1", "w2"), PARAMETERS):
            window = {name: _window(grid.values(name), point()[name]) for name in names}
            theta, ll = _best(features, y, _theta_grid(grid, window, point()))
            if ll > current_ll + 1e-9:
                current, current_ll = theta, ll
        if current_ll <= before + 1e-9:
            return current, current_ll


def search_parameters(
    features: np.ndarray, y: np.ndarray, utility: str, grid: ParameterGrid = GRID
) -> tuple[dict[str, float], float]:
    """The grid point of ``utility`` with the highest penalised log-likelihood on (``features``, ``y``).

    ``features`` has the columns of :data:`TERMS` (those the utility does not use are ignored). Returns the
    parameters (those the utility lacks are 0) and that objective. See the module doc for the search.
    """
    orders = _orders(utility)
    x = np.nan_to_num(np.asarray(features, dtype=float))
    y = np.asarray(y, dtype=float)
    free = {"rho": grid.values("rho")}
    if 1 in orders:
        free |= {"gamma": grid.values("gamma"), "w1": grid.values("w1")}
    theta, ll = _best(x, y, _theta_grid(grid, free, dict.fromkeys(PARAMETERS, 0.0)))
    if 2 in orders:
        searched: BlockResults = {(0, (0.0, 0.0)): (theta, ll)}
        results = [_ascend(x, y, grid, theta, ll, searched)]
        snapped = _unconstrained_start(x, y, grid)
        if snapped is not None:
            snapped_ll = float(_evaluate(x, y, snapped[None, :])[0])
            results.append(_ascend(x, y, grid, snapped, snapped_ll, searched))
        theta, ll = max(results, key=lambda result: result[1])
    return dict(zip(PARAMETERS, (float(v) for v in theta), strict=True)), ll


def exhaustive_search(
    features: np.ndarray, y: np.ndarray, utility: str, grid: ParameterGrid
) -> tuple[dict[str, float], float]:
    """Like :func:`search_parameters` but exact over the whole grid (:func:`_best` over every point, no block
    ascent): for checking the ``U(0,1,2)`` search; slow on the full grid (3.1 M points)."""
    orders = _orders(utility)
    free = {"rho": grid.values("rho")}
    if 1 in orders:
        free |= {"gamma": grid.values("gamma"), "w1": grid.values("w1")}
    if 2 in orders:
        free |= {"kappa": grid.values("kappa"), "w2": grid.values("w2")}
    theta, ll = _best(
        np.nan_to_num(features), np.asarray(y, float), _theta_grid(grid, free, dict.fromkeys(PARAMETERS, 0.0))
    )
    return dict(zip(PARAMETERS, (float(v) for v in theta), strict=True)), ll


# ---------------------------------------------------------------------------------------------------------
# Cross-validated fits


def _orders(utility: str) -> tuple[int, ...]:
    if utility not in UTILITIES:
        raise UtilityFitError(
            "unknown_utility",
            f"Unknown utility {utility!r}; choose one of {list(UTILITIES)}.",
            {"utility": utility, "choices": list(UTILITIES)},
        )
    return UTILITIES[utility]


def _terms(utility: str) -> tuple[str, ...]:
    return tuple(term for term in TERMS if int(term[1]) in _orders(utility))


@dataclass
class UtilityFit:
    """One utility fit on one set of decisions (see the module doc). ``reason`` is None when F1 exists."""

    utility: str
    decisions: int
    games: int
    accept_rate: float
    fold_f1: tuple[float, ...] = ()
    f1_mean: float = math.nan
    f1_sd: float = math.nan
    parameters: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARAMETERS, math.nan))
    beta: float = math.nan
    intercept: float = math.nan
    log_likelihood: float = math.nan
    u_mean: float = math.nan
    u_sd: float = math.nan
    weights_raw: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    reason: str | None = None

    def row(self) -> dict[str, Any]:
        """This fit as the utility-specific columns of a Table 1 row."""
        return {
            "utility": self.utility, "decisions": self.decisions, "games": self.games,
            "accept_rate": self.accept_rate, "folds_scored": len(self.fold_f1), "f1_mean": self.f1_mean,
            "f1_sd": self.f1_sd, **self.parameters, "beta": self.beta, "intercept": self.intercept,
            "log_likelihood": self.log_likelihood, "reason": self.reason or "",
        }  # fmt: skip


def _final_logistic(u_train: np.ndarray, y_train: np.ndarray) -> tuple[LogisticRegression, float, float]:
    mean, sd = float(u_train.mean()), float(u_train.std())
    sd = sd if sd > 0 else 1.0
    model = LogisticRegression(C=LOGISTIC_C, solver="lbfgs")
    model.fit(((u_train - mean) / sd)[:, None], y_train)
    return model, mean, sd


def _reported(parameters: Mapping[str, float], utility: str) -> dict[str, float]:
    orders = _orders(utility)
    out = dict(parameters)
    if 1 not in orders:
        out["gamma"] = out["w1"] = math.nan
    elif out["w1"] == 0:
        out["gamma"] = math.nan
    if 2 not in orders:
        out["kappa"] = out["w2"] = math.nan
    elif out["w2"] == 0:
        out["kappa"] = math.nan
    return out


def fit_utility(
    features: pd.DataFrame, utility: str, *, folds: int = 3, seed: int = 0, grid: ParameterGrid = GRID
) -> UtilityFit:
    """Cross-validated fit of ``utility`` on the decisions of ``features`` (:func:`decision_features` rows
    of one agent and group; rows lacking one of the utility's features are left out)."""
    # One BLAS thread: these are small problems, and threads only contend (sklearn's fit measured 6x slower)
    with threadpool_limits(limits=1):
        return _fit_utility(features, utility, folds, seed, grid)


def _fit_utility(
    features: pd.DataFrame, utility: str, folds: int, seed: int, grid: ParameterGrid
) -> UtilityFit:
    terms = _terms(utility)
    _require(features, "features", ("game_id", "accept", *terms))
    data = features.dropna(subset=list(terms))
    y = data["accept"].to_numpy(dtype=int)
    games = data["game_id"].to_numpy()
    fit = UtilityFit(
        utility=utility,
        decisions=len(data),
        games=int(pd.unique(games).size),
        accept_rate=float(y.mean()) if len(y) else math.nan,
    )
    if len(data) < MIN_DECISIONS:
        fit.reason = "too_few_decisions"
        return fit
    if np.unique(y).size < 2:
        fit.reason = "one_class"
        return fit
    x = np.zeros((len(data), len(TERMS)))
    for j, term in enumerate(TERMS):
        if term in terms:
            x[:, j] = data[term].to_numpy(dtype=float)
    _fit_all(fit, x, y, utility, grid)
    if fit.games < folds:
        fit.reason = "too_few_games"
        return fit
    scores = []
    splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in splitter.split(x, y, groups=games):
        if np.unique(y[train]).size < 2:
            fit.reason = "one_class_training_fold"
            return fit
        parameters, _ = search_parameters(x[train], y[train], utility, grid)
        direction = coefficient_vectors(np.array([[parameters[name] for name in PARAMETERS]]))[0]
        model, mean, sd = _final_logistic(x[train] @ direction, y[train])
        predicted = model.predict(((x[test] @ direction - mean) / sd)[:, None])
        scores.append(float(f1_score(y[test], predicted, average="macro", zero_division=0)))
    fit.fold_f1 = tuple(scores)
    fit.f1_mean, fit.f1_sd = float(np.mean(scores)), float(np.std(scores))
    return fit


def _fit_all(fit: UtilityFit, x: np.ndarray, y: np.ndarray, utility: str, grid: ParameterGrid) -> None:
    """Parameters, β, intercept, log-likelihood and Figure 6 weights from all the decisions."""
    parameters, _ = search_parameters(x, y, utility, grid)
    direction = coefficient_vectors(np.array([[parameters[name] for name in PARAMETERS]]))[0]
    u = x @ direction
    model, mean, sd = _final_logistic(u, y)
    fit.parameters = _reported(parameters, utility)
    fit.beta, fit.intercept = float(model.coef_[0, 0]), float(model.intercept_[0])
    eta = fit.beta * (u - mean) / sd + fit.intercept
    fit.log_likelihood = float(_log_likelihood(eta, y.astype(float)))
    fit.u_mean, fit.u_sd = mean, sd
    terms = _terms(utility)
    raw = {term: float(fit.beta / sd * direction[TERMS.index(term)]) for term in terms}
    total = sum(abs(v) for v in raw.values())
    fit.weights_raw = raw
    fit.weights = {term: (v / total if total > 0 else math.nan) for term, v in raw.items()}


def _available_utilities(features: pd.DataFrame) -> list[str]:
    return [u for u in UTILITIES if all(features[t].notna().any() for t in _terms(u))]


def utility_table(
    features: pd.DataFrame,
    *,
    folds: int = 3,
    seed: int = 0,
    grid: ParameterGrid = GRID,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fit every utility the reports of each (agent, group) allow (Table 1, Figure 6).

    Returns ``table1`` (:data:`TABLE1_COLUMNS`, one row per agent, group and utility) and ``coefficients``
    (:data:`COEFFICIENT_COLUMNS`, one row per agent, group, utility and term of the utility).
    """
    _require(features, "features", FEATURE_COLUMNS)
    jobs = [
        (agent, group, utility, frame)
        for (agent, group), frame in features.groupby(["agent", "group"], sort=True, dropna=False)
        for utility in _available_utilities(frame)
    ]
    table_rows, coefficient_rows = [], []
    for agent, group, utility, frame in tqdm(jobs, desc="utility fits", unit="fit", disable=not progress):
        fit = fit_utility(frame, utility, folds=folds, seed=seed, grid=grid)
        table_rows.append({"agent": agent, "group": group, **fit.row()})
        coefficient_rows.extend(
            {"agent": agent, "group": group, "utility": utility, "term": term,
             "weight": fit.weights.get(term, math.nan), "weight_raw": fit.weights_raw.get(term, math.nan)}
            for term in _terms(utility)
        )  # fmt: skip
    return (
        pd.DataFrame(table_rows, columns=list(TABLE1_COLUMNS)),
        pd.DataFrame(coefficient_rows, columns=list(COEFFICIENT_COLUMNS)),
    )
