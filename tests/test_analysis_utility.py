"""Decision utility fitting (analysis.utility): features from the tidy tables, the grid search, recovery of
simulated decision makers, and clear results where no fit is possible."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from analysis_support import paper_settings, play
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score

from analysis import load, utility
from analysis.utility import (
    GRID,
    PAPER_TABLE1,
    PARAMETERS,
    TERMS,
    ParameterGrid,
    UtilityFitError,
    decision_features,
    exhaustive_search,
    fit_utility,
    grid_log_likelihood,
    search_parameters,
    utility_table,
)
from server.game.gamelog import GameLog

# A coarse grid (steps of 1) on which an exhaustive U(0,1,2) scan takes well under a second.
COARSE = ParameterGrid(loss=(-2.0, -1.0, 0.0, 1.0, 2.0), order=(-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0))


# --- simulated decision makers ---------------------------------------------------------------------


@dataclass
class Simulated:
    features: pd.DataFrame
    bayes_f1: float  # macro-F1 of the true model's own decisions (predict accept iff P(accept) ≥ ½)


def simulate(
    n: int,
    theta: dict[str, float],
    *,
    beta: float = 3.0,
    seed: int = 0,
    games: int = 30,
    agent: str = "sim",
    group: str = "V0+V1+V2",
) -> Simulated:
    """Decisions drawn from the logistic utility model on G/L features valued as in the game: item counts
    received and given, each valued 0-10 at every order (orders differently)."""
    rng = np.random.default_rng(seed)
    items = 6
    received = rng.poisson(0.7, (n, items))
    given = rng.poisson(0.7, (n, items))
    columns = {}
    for order in range(3):
        values = rng.integers(0, 11, (n, items))
        columns[f"G{order}"] = (received * values).sum(axis=1).astype(float)
        columns[f"L{order}"] = (given * values).sum(axis=1).astype(float)
    x = np.column_stack([columns[term] for term in TERMS])
    direction = utility.coefficient_vectors(np.array([[theta[name] for name in PARAMETERS]]))[0]
    u = x @ direction
    probability = 1 / (1 + np.exp(-beta * (u - u.mean()) / u.std()))
    accept = (rng.random(n) < probability).astype(int)
    frame = pd.DataFrame(
        {
            "game_id": [f"game-{i % games}" for i in range(n)],
            "turn": np.arange(n) // games,
            "seat": 0,
            "proposer": 1,
            "agent": agent,
            "group": group,
            "accept": accept,
            **columns,
        }
    )
    bayes = f1_score(accept, (probability >= 0.5).astype(int), average="macro")
    return Simulated(frame, float(bayes))


def theta_of(**values: float) -> dict[str, float]:
    return {name: float(values.get(name, 0.0)) for name in PARAMETERS}


def design(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return frame[list(TERMS)].to_numpy(float), frame["accept"].to_numpy(int)


# --- the vectorised logistic fit -------------------------------------------------------------------


def test_grid_log_likelihood_matches_scikit_learn_including_near_separable_rows() -> None:
    rng = np.random.default_rng(1)
    n = 150
    base = rng.normal(size=n)
    y = (base + rng.normal(scale=0.5, size=n) > 0).astype(int)
    rows = [base, rng.normal(size=n), base * 40 + 3, np.sign(base) + 0.01 * rng.normal(size=n), base**3]
    y_separable = (base > 0).astype(int)
    for labels in (y, y_separable):
        ll, beta, bias = grid_log_likelihood(np.array(rows), labels)
        for row, got_ll, got_beta, got_bias in zip(rows, ll, beta, bias, strict=True):
            z = ((row - row.mean()) / row.std())[:, None]
            model = LogisticRegression(C=1.0, solver="lbfgs", tol=1e-10, max_iter=10_000).fit(z, labels)
            eta = model.decision_function(z)
            want_ll = float(np.sum(labels * eta - np.logaddexp(0, eta)))
            assert got_beta == pytest.approx(model.coef_[0, 0], abs=1e-4)
            assert got_bias == pytest.approx(model.intercept_[0], abs=1e-4)
            assert got_ll == pytest.approx(want_ll, abs=1e-6)


def test_a_constant_utility_gets_the_intercept_only_fit() -> None:
    y = np.array([1, 0, 1, 1])
    ll, beta, bias = grid_log_likelihood(np.full((1, 4), 7.0), y)
    assert beta[0] == 0.0
    assert bias[0] == pytest.approx(math.log(3))
    assert ll[0] == pytest.approx(3 * math.log(0.75) + math.log(0.25))


def test_the_pruned_argmax_equals_converging_every_grid_point() -> None:
    for seed, beta in ((0, 0.5), (1, 3.0), (2, 12.0)):
        data = simulate(200, theta_of(rho=1.0, gamma=0.5, w1=1.5), beta=beta, seed=seed)
        x, y = design(data.features)
        thetas = utility._theta_grid(GRID, {n: GRID.values(n) for n in ("rho", "gamma", "w1")}, theta_of())
        every = utility._evaluate(x, y, thetas)
        best, value = utility._best(x, y, thetas)
        assert value == pytest.approx(every.max(), abs=1e-9)
        np.testing.assert_array_equal(best, thetas[int(np.argmax(every))])


def test_exact_ties_go_to_the_simplest_grid_point() -> None:
    data = simulate(200, theta_of(rho=1.0), seed=6)
    x, y = design(data.features.assign(G1=0.0, L1=0.0))
    assert not x[:, 2:4].any()  # V1 values all zero: every (γ, w1) gives the same utility as U(0)
    thetas = utility._theta_grid(GRID, {n: GRID.values(n) for n in ("rho", "gamma", "w1")}, theta_of())
    best, _ = utility._best(x, y, thetas)
    every = utility._evaluate(x, y, thetas)
    assert best[0] == thetas[int(np.argmax(every)), 0]
    assert (best[1], best[3]) == (0.0, 0.0)  # w1 = 0 and γ = 0, not an arbitrary pair


# --- the grid search -------------------------------------------------------------------------------


def test_u0_and_u01_searches_agree_with_a_scikit_learn_scan_of_the_grid() -> None:
    data = simulate(240, theta_of(rho=1.0, gamma=-1.0, w1=2.0), beta=2.0, seed=3)
    x, y = design(data.features)
    small = ParameterGrid(loss=(-2.0, -1.0, 1.0), order=(-2.0, 0.0, 1.0, 2.0, 3.0))
    for name, free in (("U(0)", ("rho",)), ("U(0,1)", ("rho", "gamma", "w1"))):
        best_ll, best = -math.inf, None
        for values in np.array(utility._theta_grid(small, {n: small.values(n) for n in free}, theta_of())):
            u = x @ utility.coefficient_vectors(values[None, :])[0]
            z = ((u - u.mean()) / u.std())[:, None]
            model = LogisticRegression(C=1.0, solver="lbfgs", tol=1e-10).fit(z, y)
            eta = model.decision_function(z)
            objective = float(np.sum(y * eta - np.logaddexp(0, eta)) - model.coef_[0, 0] ** 2 / 2)
            if objective > best_ll + 1e-7:
                best_ll, best = objective, values
        assert best is not None
        parameters, ll = search_parameters(x, y, name, small)
        assert ll == pytest.approx(best_ll, abs=1e-5)
        assert [parameters[n] for n in PARAMETERS] == pytest.approx(list(best))


@pytest.mark.parametrize("seed", range(6))
def test_the_u012_search_finds_the_exhaustive_optimum_of_a_coarse_grid(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    theta = theta_of(
        rho=rng.uniform(-2, 2), gamma=rng.uniform(-2, 2), kappa=rng.uniform(-2, 2),
        w1=rng.uniform(-3, 3), w2=rng.uniform(-3, 3),
    )  # fmt: skip
    data = simulate(150, theta, beta=float(rng.uniform(0.5, 6)), seed=seed)
    x, y = design(data.features)
    found, found_ll = search_parameters(x, y, "U(0,1,2)", COARSE)
    best, best_ll = exhaustive_search(x, y, "U(0,1,2)", COARSE)
    assert found_ll == pytest.approx(best_ll, abs=1e-7), (found, best)


def test_the_u012_search_finds_the_exhaustive_optimum_of_a_half_step_grid() -> None:
    half = ParameterGrid(loss=utility._steps(-2, 2, 0.5), order=utility._steps(-3, 3, 0.5))
    for seed in range(3):
        data = simulate(120, theta_of(rho=0.5, gamma=1.5, kappa=-1.0, w1=-1.0, w2=2.0), beta=2.5, seed=seed)
        x, y = design(data.features)
        assert search_parameters(x, y, "U(0,1,2)", half)[1] == pytest.approx(
            exhaustive_search(x, y, "U(0,1,2)", half)[1], abs=1e-7
        )


@pytest.mark.slow
def test_the_u012_search_finds_the_exhaustive_optimum_of_the_full_grid() -> None:
    """The whole 3.1 M-point grid, exactly (branch and bound): ~20 s per case on the shared machine."""
    for seed in range(2):
        rng = np.random.default_rng(900 + seed)
        theta = theta_of(
            rho=rng.uniform(-2, 2), gamma=rng.uniform(-2, 2), kappa=rng.uniform(-2, 2),
            w1=rng.uniform(-3, 3), w2=rng.uniform(-3, 3),
        )  # fmt: skip
        data = simulate(int(rng.integers(100, 400)), theta, beta=float(rng.uniform(0.5, 8)), seed=seed)
        x, y = design(data.features)
        assert search_parameters(x, y, "U(0,1,2)")[1] == pytest.approx(
            exhaustive_search(x, y, "U(0,1,2)", GRID)[1], abs=1e-7
        )


def test_the_default_grid_is_the_issue_s() -> None:
    assert GRID.loss[0] == -2.0 and GRID.loss[-1] == 2.0 and len(GRID.loss) == 17
    assert GRID.order[0] == -3.0 and GRID.order[-1] == 3.0 and len(GRID.order) == 25
    assert GRID.size == 17**3 * 25**2


# --- recovery of simulated decision makers ---------------------------------------------------------


def test_recovers_the_parameters_of_a_second_order_decision_maker_on_the_full_grid() -> None:
    truth = theta_of(rho=1.0, gamma=0.5, kappa=-0.5, w1=1.5, w2=-1.0)
    data = simulate(1500, truth, beta=4.0, seed=11)
    fit = fit_utility(data.features, "U(0,1,2)")
    assert fit.reason is None
    for name in ("rho", "w1", "w2"):
        assert fit.parameters[name] == pytest.approx(truth[name], abs=0.5), name
    for name in ("gamma", "kappa"):
        assert fit.parameters[name] == pytest.approx(truth[name], abs=0.75), name
    assert fit.f1_mean == pytest.approx(data.bayes_f1, abs=0.04)


def test_recovers_a_first_order_decision_maker_on_a_coarse_grid() -> None:
    truth = theta_of(rho=1.0, gamma=-1.0, w1=2.0)
    data = simulate(1500, truth, beta=4.0, seed=5, group="V0+V1")
    fit = fit_utility(data.features, "U(0,1)", grid=COARSE)
    assert fit.reason is None
    assert fit.parameters["rho"] == truth["rho"]
    assert fit.parameters["w1"] == truth["w1"]
    assert fit.parameters["gamma"] == truth["gamma"]
    assert math.isnan(fit.parameters["kappa"]) and math.isnan(fit.parameters["w2"])
    assert fit.f1_mean == pytest.approx(data.bayes_f1, abs=0.03)
    assert len(fit.fold_f1) == 3 and fit.f1_sd == pytest.approx(np.std(fit.fold_f1))


def test_v1_helps_a_decision_maker_that_uses_it_and_not_one_that_ignores_it() -> None:
    ignores = simulate(1200, theta_of(rho=1.0), beta=4.0, seed=21)
    uses = simulate(1200, theta_of(rho=1.0, gamma=1.0, w1=2.0), beta=4.0, seed=21)
    grid = ParameterGrid(loss=utility._steps(-2, 2, 0.5), order=utility._steps(-3, 3, 0.5))
    gain = {}
    for label, data in (("ignores", ignores), ("uses", uses)):
        f1 = {name: fit_utility(data.features, name, grid=grid).f1_mean for name in ("U(0)", "U(0,1)")}
        gain[label] = f1["U(0,1)"] - f1["U(0)"]
        assert f1["U(0,1)"] == pytest.approx(data.bayes_f1, abs=0.02), label  # as good as the truth
    assert abs(gain["ignores"]) < 0.02  # noise: the extra parameters fit nothing real
    assert gain["uses"] > 0.05  # here U(0) misses the V1 terms: about 0.06-0.09 over seeds


# --- coefficients (Figure 6) and the table ---------------------------------------------------------


def test_figure6_weights_are_the_logistic_coefficients_on_the_raw_features() -> None:
    data = simulate(400, theta_of(rho=1.0, gamma=-1.0, w1=2.0), beta=3.0, seed=8)
    fit = fit_utility(data.features, "U(0,1)", grid=COARSE)
    x, y = design(data.features)
    raw = np.array([fit.weights_raw[t] for t in ("G0", "L0", "G1", "L1")])
    # The same predictions as the fitted model: β·(U − μ)/σ + b with U = x·direction.
    direction = utility.coefficient_vectors(
        np.array([[fit.parameters[n] if not math.isnan(fit.parameters[n]) else 0.0 for n in PARAMETERS]])
    )[0][:4]
    np.testing.assert_allclose(raw, fit.beta / fit.u_sd * direction)
    assert sum(abs(v) for v in fit.weights.values()) == pytest.approx(1.0)
    assert set(fit.weights) == {"G0", "L0", "G1", "L1"}
    eta = x[:, :4] @ raw + fit.intercept - fit.beta * fit.u_mean / fit.u_sd
    assert float(np.sum(y * eta - np.logaddexp(0, eta))) == pytest.approx(fit.log_likelihood)


def test_utility_table_fits_what_each_group_reports() -> None:
    v0 = simulate(300, theta_of(rho=1.0), seed=1, agent="bot", group="V0").features
    v0[["G1", "L1", "G2", "L2"]] = np.nan
    v01 = simulate(300, theta_of(rho=1.0, w1=1.0), seed=2, agent="bot", group="V0+V1").features
    v01[["G2", "L2"]] = np.nan
    silent = simulate(40, theta_of(), seed=3, agent="bot", group="none").features
    silent[list(TERMS)] = np.nan
    table1, coefficients = utility_table(pd.concat([v0, v01, silent]), grid=COARSE)
    assert list(table1.columns) == list(utility.TABLE1_COLUMNS)
    assert list(zip(table1["group"], table1["utility"], strict=True)) == [
        ("V0", "U(0)"), ("V0+V1", "U(0)"), ("V0+V1", "U(0,1)"),
    ]  # fmt: skip
    assert (table1["decisions"] == 300).all() and (table1["reason"] == "").all()
    assert table1["f1_mean"].between(0.5, 1.0).all()
    assert list(coefficients.columns) == list(utility.COEFFICIENT_COLUMNS)
    assert len(coefficients) == 2 + 2 + 4
    per_fit = coefficients.groupby(["group", "utility"])["weight"].apply(lambda w: w.abs().sum())
    np.testing.assert_allclose(per_fit.to_numpy(), 1.0)


# --- where no fit is possible ----------------------------------------------------------------------


def test_no_fit_gives_nan_f1_and_a_reason_never_an_exception() -> None:
    data = simulate(200, theta_of(rho=1.0), seed=4).features
    few = fit_utility(data.head(6), "U(0)")
    assert few.reason == "too_few_decisions" and math.isnan(few.f1_mean)
    rejects = data.assign(accept=0)
    assert fit_utility(rejects, "U(0)").reason == "one_class"
    two_games = data.assign(game_id=np.where(np.arange(len(data)) % 2, "a", "b"))
    fit = fit_utility(two_games, "U(0)", grid=COARSE)
    assert fit.reason == "too_few_games" and math.isnan(fit.f1_mean)
    assert not math.isnan(fit.parameters["rho"])  # the all-decisions fit is still made
    # accepts only in one game: a training fold without it holds rejects only
    lonely = data.assign(accept=(data["game_id"] == "game-0").astype(int))
    assert fit_utility(lonely, "U(0)").reason == "one_class_training_fold"
    missing = data.assign(G1=np.nan, L1=np.nan)
    assert fit_utility(missing, "U(0,1)").reason == "too_few_decisions"
    empty = fit_utility(data.iloc[:0], "U(0)")
    assert empty.decisions == 0 and empty.reason == "too_few_decisions"
    table1, _ = utility_table(data.head(6))
    assert table1["reason"].tolist() == ["too_few_decisions"] * 3 and table1["f1_mean"].isna().all()


def test_an_unknown_utility_is_a_typed_error() -> None:
    with pytest.raises(UtilityFitError) as caught:
        fit_utility(simulate(20, theta_of()).features, "U(1)")
    assert caught.value.code == "unknown_utility"


# --- features from the tidy tables -----------------------------------------------------------------


@dataclass
class Tables:
    seats: pd.DataFrame
    decisions: pd.DataFrame
    proposals: pd.DataFrame
    tom_reports: pd.DataFrame


def tom_rows(game: str, turn: int, seq: int, seat: int, reports: dict) -> list[dict]:
    rows = []
    for (order, opponent), values in reports.items():
        for item, value in values.items():
            rows.append(
                {"game_id": game, "turn": turn, "seq": seq, "time": 0.0, "seat": seat, "order": order,
                 "opponent_seat": opponent, "item": item, "value": value, "latency_s": None}
            )  # fmt: skip
    return rows


def three_seat_game() -> Tables:
    seats = pd.DataFrame(
        {
            "game_id": ["g"] * 3,
            "seat": [0, 1, 2],
            "agent": ["gpt-x", "gpt-x", "tom1"],
            "group": ["V0+V1+V2", "V0+V1", "V0"],
            "focal": [True, True, False],
        }
    )
    proposals = pd.DataFrame(
        [
            {"game_id": "g", "turn": 1, "seq": 10, "proposer": 1, "to": 0,
             "offer": {"coal": 2}, "request": '{"stick": 1, "log": 3}', "status": "accepted"},
            {"game_id": "g", "turn": 2, "seq": 20, "proposer": 0, "to": 1,
             "offer": {"log": 1}, "request": {"coal": 1}, "status": "rejected"},
            {"game_id": "g", "turn": 3, "seq": 30, "proposer": 0, "to": 2,
             "offer": {"log": 1}, "request": {"coal": 1}, "status": "rejected"},
        ]
    )  # fmt: skip
    decisions = pd.DataFrame(
        [
            {"game_id": "g", "turn": 1, "seq": 11, "proposer": 1, "seat": 0, "accept": True},
            {"game_id": "g", "turn": 2, "seq": 21, "proposer": 0, "seat": 1, "accept": False},
            {"game_id": "g", "turn": 3, "seq": 31, "proposer": 0, "seat": 2, "accept": False},
        ]
    )
    tom = [
        *tom_rows("g", 1, 5, 0, {
            (0, None): {"coal": 8, "stick": 2, "log": 1},
            (1, 1): {"coal": 3, "stick": 6, "log": 5},
            (1, 2): {"coal": 10, "stick": 10, "log": 10},  # about another seat: not the proposer
            (2, 1): {"coal": 7, "stick": 0, "log": 4},
        }),
        *tom_rows("g", 1, 12, 0, {(0, None): {"coal": 0, "stick": 0, "log": 0}}),  # after the decision
        *tom_rows("g", 2, 15, 1, {(0, None): {"coal": 9, "log": 2}, (1, 0): {"coal": 4}}),  # V1 lacks log
        *tom_rows("g", 3, 25, 2, {(0, None): {"coal": 1, "log": 1}}),
    ]  # fmt: skip
    return Tables(seats, decisions, proposals, pd.DataFrame(tom))


def test_decision_features_value_the_items_with_the_decider_s_same_turn_reports() -> None:
    features = decision_features(three_seat_game())
    assert list(features.columns) == list(utility.FEATURE_COLUMNS)
    assert features["seat"].tolist() == [0, 1]  # seat 2 is not focal
    first = features.iloc[0]
    # seat 0 receives 2 coal and gives 1 stick + 3 logs
    assert (first["G0"], first["L0"]) == (16.0, 2.0 + 3.0)
    assert (first["G1"], first["L1"]) == (6.0, 6.0 + 15.0)  # V1 about seat 1, the proposer
    assert (first["G2"], first["L2"]) == (14.0, 0.0 + 12.0)
    assert first["accept"] == 1 and first["agent"] == "gpt-x" and first["group"] == "V0+V1+V2"
    second = features.iloc[1]
    # seat 1 receives a log and gives a coal; its V1 omits the log and it reported no V2
    assert (second["G0"], second["L0"]) == (2.0, 9.0)
    assert math.isnan(second["G1"]) and second["L1"] == 4.0
    assert math.isnan(second["G2"]) and math.isnan(second["L2"])
    assert second["accept"] == 0


def test_decision_features_name_missing_columns() -> None:
    tables = three_seat_game()
    tables.seats = tables.seats.drop(columns=["focal"])
    with pytest.raises(UtilityFitError) as caught:
        decision_features(tables)
    assert caught.value.code == "missing_columns" and caught.value.details["missing"] == ["focal"]


def test_paper_table1_holds_the_paper_s_numbers() -> None:
    assert len(PAPER_TABLE1) == 12
    row = PAPER_TABLE1.set_index(["model", "utility"]).loc[("o4-mini", "U(0,1,2)")]
    assert (row["group"], row["f1_mean"], row["f1_sd"]) == ("V0+V1+V2", 0.83, 0.04)
    assert PAPER_TABLE1.groupby("model")["utility"].apply(list).map(len).eq(3).all()


# --- real games ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def played_games() -> list[GameLog]:
    """Paper-configuration games: seat 0 (tom2, focal) reports V0+V1+V2, seat 1 (tom0) V0 only."""
    instances = ("minecraft/1p_v_1p/paper#2", "minecraft/1p_v_1p/paper#5", "minecraft/1p_v_1p/paper#9")
    return [
        play(instance, ["tom2", "tom0"], seed=seed, game_id=f"g{seed}", settings=paper_settings(10)).log
        for seed, instance in enumerate(instances)
    ]


def test_features_of_real_games_value_every_focal_decision_from_the_log(played_games: list[GameLog]) -> None:
    features = decision_features(load(played_games))
    expected = []
    for log in played_games:
        turn, offers, reports = 0, {}, {}
        for event in log.events:
            payload = event.payload
            turn = payload.get("turn", turn) if isinstance(payload.get("turn"), int) else turn
            if event.type == "proposed":
                offers[turn] = payload
            elif event.type == "tom_reported":
                reports[(turn, payload["seat"])] = payload
            elif event.type == "decided" and payload["seat"] == 0:
                proposal, report = offers[turn], reports[(turn, 0)]
                mine = {"G": proposal["offer"], "L": proposal["request"]}
                row = {"game_id": log.game_id, "turn": turn, "accept": int(payload["accept"])}
                for order, values in enumerate(
                    (
                        report["v0"],
                        report["v1"][str(payload["proposer"])],
                        report["v2"][str(payload["proposer"])],
                    )
                ):
                    for side, counts in mine.items():
                        row[f"{side}{order}"] = float(sum(n * values[item] for item, n in counts.items()))
                expected.append(row)
    assert expected, "the games should hold decisions of the focal seat"
    got = features[["game_id", "turn", "accept", *TERMS]].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, pd.DataFrame(expected)[got.columns], check_dtype=False)
    assert set(features["seat"]) == {0} and set(features["group"]) == {"V0+V1+V2"}
    assert set(features["agent"]) == {"tom2"}


def test_utility_table_of_a_few_real_decisions_is_a_clear_result(played_games: list[GameLog]) -> None:
    table1, coefficients = utility_table(decision_features(load(played_games)), grid=COARSE)
    assert table1["utility"].tolist() == ["U(0)", "U(0,1)", "U(0,1,2)"]
    assert coefficients["term"].tolist() == [*TERMS[:2], *TERMS[:4], *TERMS]
    for row in table1.itertuples():
        assert (row.reason == "" and 0 <= row.f1_mean <= 1) or (
            row.reason in utility.REASONS and math.isnan(row.f1_mean)
        )
