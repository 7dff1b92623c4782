"""Proposal behaviour (the paper's §4.1 and Figure 5): what a proposer asks for against what it gives, both
valued under its own V0.

:func:`proposal_values` reads ``ds.proposals`` (``game_id, turn, proposer, to, offer, request, status``; offer
and request are ``{item: count}`` dicts), ``ds.tom_reports`` (the proposer's V0: rows with ``order`` 0) and
``ds.seats`` (``agent, group, focal``). One row per proposal of a focal seat (:data:`VALUE_COLUMNS`):

- ``request_value`` = Σ count × V0(item) over the items requested, ``offer_value`` the same over the items
  offered, V0 being the proposer's own report of the same turn. A value is NaN when the proposer reported
  no V0 that turn or its V0 lacks an item of the proposal (the fits skip such proposals).
- The focal agent's proposals only (the runner marks the baseline opponent ``focal: false``); passes are not
  proposals and never appear; every status (pending, accepted, rejected, cancelled) is kept.

:func:`proposal_fits` gives per (agent, group) (:data:`FIT_COLUMNS`): Pearson ``r`` of offer and request,
the least-squares slope ``m`` of offer on request with an ``intercept``, the slope through the origin
``m_origin`` (offer ≈ m_origin · request), each of r, m and m_origin with a percentile confidence interval
(90% by default) from an episode-level bootstrap: B resamples (2000 by default) of the group's *games* with
replacement, never of single proposals (:func:`analysis.stats.bootstrap_game_fits`). The bootstrap is seeded
from ``seed`` and the group's name, so a group's intervals do not depend on which other groups are present.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.dataset import Dataset
from analysis.stats import bootstrap_game_fits, fits_from_sums, game_fit_sums, require_columns

#: Columns of :func:`proposal_values`.
VALUE_COLUMNS: tuple[str, ...] = (
    "game_id", "turn", "proposer", "to", "agent", "group", "request_value", "offer_value", "status",
)  # fmt: skip
#: Columns of :func:`proposal_fits`.
FIT_COLUMNS: tuple[str, ...] = (
    "agent", "group", "proposals", "games", "r", "r_ci_low", "r_ci_high", "m", "m_ci_low", "m_ci_high",
    "intercept", "m_origin", "m_origin_ci_low", "m_origin_ci_high",
)  # fmt: skip
_PROPOSAL_COLUMNS = ("game_id", "turn", "proposer", "to", "offer", "request", "status")
_REPORT_COLUMNS = ("game_id", "turn", "seat", "order", "item", "value")
_SEAT_COLUMNS = ("game_id", "seat", "agent", "group", "focal")


def proposal_values(ds: Dataset) -> pd.DataFrame:
    """One row per proposal of a focal seat with :data:`VALUE_COLUMNS` (see the module doc)."""
    proposals, reports, seats = ds.proposals, ds.tom_reports, ds.seats
    require_columns(proposals, _PROPOSAL_COLUMNS, "proposals")
    require_columns(reports, _REPORT_COLUMNS, "tom_reports")
    require_columns(seats, _SEAT_COLUMNS, "seats")
    seat_info = seats.loc[:, list(_SEAT_COLUMNS)].drop_duplicates(["game_id", "seat"])
    rows = proposals.loc[:, list(_PROPOSAL_COLUMNS)].merge(
        seat_info.rename(columns={"seat": "proposer"}), on=["game_id", "proposer"], how="left"
    )
    rows = rows.loc[rows["focal"].fillna(True).astype(bool)].reset_index(drop=True)
    v0 = reports.loc[pd.to_numeric(reports["order"]) == 0, ["game_id", "turn", "seat", "item", "value"]]
    v0 = v0.drop_duplicates(["game_id", "turn", "seat", "item"], keep="last")
    v0 = v0.rename(columns={"seat": "proposer"})
    rows["request_value"] = _valued(rows, "request", v0)
    rows["offer_value"] = _valued(rows, "offer", v0)
    return rows.loc[:, list(VALUE_COLUMNS)]


def _valued(rows: pd.DataFrame, side: str, v0: pd.DataFrame) -> np.ndarray:
    """Σ count × V0(item) of each row's ``side`` dict; NaN when the proposer's same-turn V0 lacks an item."""
    counts = pd.DataFrame(
        [
            (index, game, turn, proposer, item, float(count))
            for index, game, turn, proposer, cell in zip(
                rows.index, rows["game_id"], rows["turn"], rows["proposer"], rows[side], strict=True
            )
            for item, count in _counts(cell).items()
            if count
        ],
        columns=["row", "game_id", "turn", "proposer", "item", "count"],
    )
    valued = counts.merge(v0, on=["game_id", "turn", "proposer", "item"], how="left")
    per_row = (
        (valued["count"] * valued["value"].astype(np.float64))
        .groupby(valued["row"])
        .agg(["sum", "count", "size"])
    )
    totals = np.zeros(len(rows))
    totals[per_row.index.to_numpy(dtype=np.int64)] = np.where(
        per_row["count"] == per_row["size"], per_row["sum"], np.nan
    )
    # A proposal giving or asking nothing is worth 0 when the proposer reported a V0 that turn, else unknown.
    reported = rows.merge(
        v0.loc[:, ["game_id", "turn", "proposer"]].drop_duplicates(),
        on=["game_id", "turn", "proposer"],
        how="left",
        indicator=True,
    )["_merge"].eq("both")
    return np.where(reported.to_numpy(), totals, np.nan)


def _counts(cell: Any) -> Mapping[str, Any]:
    if isinstance(cell, str):  # a table read back from CSV keeps the JSON text
        return json.loads(cell) if cell else {}
    return cell if isinstance(cell, Mapping) else {}


def proposal_fits(values: pd.DataFrame, *, b: int = 2000, level: float = 0.90, seed: int = 0) -> pd.DataFrame:
    """Per (agent, group) the fit of offer value on request value, with :data:`FIT_COLUMNS` (module doc)."""
    require_columns(values, ("game_id", "agent", "group", "request_value", "offer_value"), "proposal values")
    rows = values.dropna(subset=["request_value", "offer_value"])
    out = []
    for (agent, group), group_rows in rows.groupby(["agent", "group"], sort=True):
        x = group_rows["request_value"].astype(np.float64)
        y = group_rows["offer_value"].astype(np.float64)
        per_game = game_fit_sums(group_rows["game_id"], x, y).to_numpy()
        point = {name: float(value) for name, value in fits_from_sums(per_game.sum(axis=0)).items()}
        group_seed = [seed, zlib.crc32(f"{agent}\x00{group}".encode())]
        intervals = bootstrap_game_fits(per_game, b=b, level=level, seed=group_seed)
        out.append(
            {
                "agent": agent, "group": group, "proposals": len(group_rows), "games": per_game.shape[0],
                "r": point["r"], "r_ci_low": intervals["r"][0], "r_ci_high": intervals["r"][1],
                "m": point["m"], "m_ci_low": intervals["m"][0], "m_ci_high": intervals["m"][1],
                "intercept": point["intercept"], "m_origin": point["m_origin"],
                "m_origin_ci_low": intervals["m_origin"][0], "m_origin_ci_high": intervals["m_origin"][1],
            }
        )  # fmt: skip
    return pd.DataFrame(out, columns=list(FIT_COLUMNS))
