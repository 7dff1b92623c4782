"""How each seat fared and what it cost: one row per (game, seat), and a summary per (agent, group).

:func:`seat_outcomes` (``Dataset.outcomes``, :data:`OUTCOME_COLUMNS`) counts from the tidy tables of
:mod:`analysis.dataset`:

- ``won`` (the log's winners), ``sole_win`` (won alone), ``turns`` (turns the game played),
  ``turns_to_win`` (the turn the seat won, from its ``player_won`` event, else ``turns``; missing when it did
  not win);
- ``proposals`` it made, ``proposals_accepted`` of them; ``decisions`` it took on proposals to it,
  ``accepts`` among them; ``crafts`` it made;
- ``invalid_actions``: actions of the seat that did not go through. For an LLM seat, the agent's own count
  per move (``invalid`` on its ``decision`` and ``fallback`` trace records, a running count within the move:
  tool calls that failed validation, non-tool answers and moves the engine refused), its largest value per
  move summed over moves. For any other policy, its action records (``propose``, ``decide``, ``report``,
  ``craft``, ``decision``) that lead to no event (``event_seq`` null: the engine refused the move). A policy
  that leaves no trace shows 0.
- ``retries``: provider retries of the LLM seat's calls (HTTP 429 / 5xx, timeouts), from its ``llm_call``
  records; engine refusals are in ``invalid_actions``, not here.
- ``fallbacks``: the LLM agent's ``fallback`` records (the safe move it played when no valid action came).
  A fallback a runner plays for a silent policy leaves no trace and is not counted.
- ``llm_calls``, ``input_tokens``, ``cached_tokens`` (input served from the provider's cache, part of
  ``input_tokens``), ``output_tokens``: sums over the seat's ``llm_call`` records; ``cost_usd``: their cost
  under the price table (:func:`server.table.costs.cost_usd`, each call priced by the model it ran on,
  ``traces.model``: the provider's name for it, else the configured one): 0 for a seat with no LLM call,
  missing when a call's model is not in the table;
- ``latency_s``: the sum of the seat's response latencies (``seats.response_s``), ``seconds_per_move``: that
  sum over the number of responses.

:func:`outcome_summary` condenses them per (agent, group), focal seats only by default
(:data:`SUMMARY_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from server.table.config import ModelPrice
from server.table.costs import Tokens, cost_usd

OUTCOME_COLUMNS: tuple[str, ...] = (
    "game_id", "seat", "agent", "group", "focal", "won", "sole_win", "turns", "turns_to_win", "proposals",
    "proposals_accepted", "decisions", "accepts", "crafts", "invalid_actions", "retries", "fallbacks",
    "llm_calls", "input_tokens", "cached_tokens", "output_tokens", "cost_usd", "latency_s",
    "seconds_per_move",
)  # fmt: skip

SUMMARY_COLUMNS: tuple[str, ...] = (
    "agent", "group", "games", "seats", "wins", "win_rate", "sole_wins", "sole_win_rate", "turns_to_win",
    "proposals_per_game", "proposals_accepted_per_game", "acceptance_rate", "decisions_per_game",
    "accepts_per_game", "invalid_actions_per_game", "retries_per_game", "fallbacks_per_game",
    "llm_calls_per_game", "input_tokens_per_game", "cached_tokens_per_game", "output_tokens_per_game",
    "cost_usd_per_game", "latency_s_per_game", "seconds_per_move",
)  # fmt: skip

#: A non-LLM policy's trace kinds that stand for one chosen action (a refused one has no ``event_seq``).
ACTION_TRACE_KINDS = ("propose", "decide", "report", "craft", "decision")

_KEY = ["game_id", "seat"]
_COUNTS = (
    "proposals", "proposals_accepted", "decisions", "accepts", "crafts", "invalid_actions", "retries",
    "fallbacks", "llm_calls", "input_tokens", "cached_tokens", "output_tokens",
)  # fmt: skip


def _count_by(frame: pd.DataFrame, seat_column: str, name: str) -> pd.Series:
    counts = frame.groupby(["game_id", seat_column], observed=True).size()
    counts.index = counts.index.set_names(_KEY)
    return counts.rename(name)


def seat_outcomes(
    games: pd.DataFrame,
    seats: pd.DataFrame,
    proposals: pd.DataFrame,
    decisions: pd.DataFrame,
    crafts: pd.DataFrame,
    traces: pd.DataFrame,
    *,
    prices: Mapping[str, ModelPrice],
) -> pd.DataFrame:
    """One row per (game, seat) of ``seats`` with :data:`OUTCOME_COLUMNS` (see the module docstring)."""
    out = seats[[*_KEY, "agent", "group", "focal", "won", "won_turn", "responses", "response_s"]].copy()
    winners = games.set_index("game_id")["winners"].map(
        lambda text: len(str(text).split(";")) if isinstance(text, str) and text else 0
    )
    turns = games.set_index("game_id")["turns"]
    out["won"] = out["won"].fillna(False).astype(bool)
    out["sole_win"] = out["won"] & out["game_id"].map(winners).eq(1).to_numpy()
    out["turns"] = out["game_id"].map(turns).astype("Int64")
    # the turn of the seat's own player_won event (an all_win game goes on after it), else the game's length
    won_turn = pd.to_numeric(out["won_turn"], errors="coerce").astype("float64")
    out["turns_to_win"] = won_turn.fillna(out["turns"].astype("float64")).where(out["won"])

    llm = traces[traces["source"] == "llm"]
    calls = llm[llm["kind"] == "llm_call"].copy()
    calls["cost_usd"] = [
        cost_usd(prices, model, Tokens(int(i), int(c), int(o)))
        for model, i, c, o in zip(
            calls["model"],
            calls["prompt_tokens"].fillna(0),
            calls["cached_prompt_tokens"].fillna(0),
            calls["completion_tokens"].fillna(0),
            strict=True,
        )
    ]
    calls["cost_usd"] = calls["cost_usd"].astype("float64")  # None (unpriced model) becomes NaN
    per_call = calls.groupby(_KEY, observed=True)
    moves = llm[llm["kind"].isin(["decision", "fallback"])]
    llm_invalid = moves.groupby([*_KEY, "decision"], observed=True, dropna=False)["invalid"].max()
    others = traces[(traces["source"] != "llm") | traces["source"].isna()]
    refused = others[others["event_seq"].isna() & others["kind"].isin(ACTION_TRACE_KINDS)]
    parts = [
        _count_by(proposals, "proposer", "proposals"),
        _count_by(proposals[proposals["status"] == "accepted"], "proposer", "proposals_accepted"),
        _count_by(decisions, "seat", "decisions"),
        _count_by(decisions[decisions["accept"].fillna(False).astype(bool)], "seat", "accepts"),
        _count_by(crafts, "seat", "crafts"),
        llm_invalid.fillna(0).groupby(level=_KEY).sum().rename("llm_invalid"),
        _count_by(refused, "seat", "refused"),
        per_call["retries"].sum().rename("retries"),
        _count_by(llm[llm["kind"] == "fallback"], "seat", "fallbacks"),
        per_call.size().rename("llm_calls"),
        per_call["prompt_tokens"].sum().rename("input_tokens"),
        per_call["cached_prompt_tokens"].sum().rename("cached_tokens"),
        per_call["completion_tokens"].sum().rename("output_tokens"),
        per_call["cost_usd"].sum(min_count=1).rename("cost_calls"),
        per_call["cost_usd"].apply(lambda costs: bool(costs.isna().any())).rename("unpriced"),
    ]
    counted = pd.concat(parts, axis=1)
    counted.index = counted.index.set_names(_KEY)
    out = out.merge(counted, left_on=_KEY, right_index=True, how="left")
    out["invalid_actions"] = out["llm_invalid"].fillna(0) + out["refused"].fillna(0)
    for column in _COUNTS:
        out[column] = out[column].fillna(0).astype("Int64")
    unpriced = out["unpriced"].astype("boolean").fillna(False).astype(bool)
    out["cost_usd"] = out["cost_calls"].fillna(0.0).astype("float64").mask(unpriced)
    out["latency_s"] = out["response_s"].astype("float64")
    out["seconds_per_move"] = out["latency_s"] / out["responses"].astype("float64").replace(0, float("nan"))
    return out[list(OUTCOME_COLUMNS)].reset_index(drop=True)


def outcome_summary(outcomes: pd.DataFrame, *, focal_only: bool = True) -> pd.DataFrame:
    """Per (agent, group): how often its seats won, traded, erred, and what a game cost them.

    Rates are over seats (one seat per game and agent in the paper's set-up); ``*_per_game`` columns are
    means per seat-game; ``turns_to_win`` is the mean over won games; ``acceptance_rate`` the share of its
    proposals accepted; ``seconds_per_move`` the mean of the seats' own (NaN without times).
    ``focal_only`` leaves out the seats the runner marked ``focal: false`` (the paper's V0 baseline
    opponents). Columns: :data:`SUMMARY_COLUMNS`.
    """
    data = outcomes[outcomes["focal"].astype(bool)] if focal_only else outcomes
    data = data.assign(won_f=data["won"].astype(float), sole_f=data["sole_win"].astype(float))
    rows = []
    for (agent, group), part in data.groupby(["agent", "group"], sort=True, dropna=False):
        numeric = {c: part[c].astype("float64") for c in (*_COUNTS, "cost_usd", "latency_s", "turns_to_win")}
        proposals = numeric["proposals"].sum()
        rows.append(
            {
                "agent": agent,
                "group": group,
                "games": part["game_id"].nunique(),
                "seats": len(part),
                "wins": int(part["won"].sum()),
                "win_rate": part["won_f"].mean(),
                "sole_wins": int(part["sole_win"].sum()),
                "sole_win_rate": part["sole_f"].mean(),
                "turns_to_win": numeric["turns_to_win"].mean(),
                **{f"{c}_per_game": numeric[c].mean() for c in _COUNTS if c not in ("crafts",)},
                "acceptance_rate": numeric["proposals_accepted"].sum() / proposals
                if proposals
                else float("nan"),
                "cost_usd_per_game": numeric["cost_usd"].mean(skipna=False),
                "latency_s_per_game": numeric["latency_s"].mean(),
                "seconds_per_move": part["seconds_per_move"].astype("float64").mean(),
            }
        )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
