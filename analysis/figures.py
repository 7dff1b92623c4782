"""The analysis's figures, drawn with matplotlib (Agg, no display) from the analysis's tidy tables.

Each function takes the DataFrame named in its docstring (columns as the module that makes it documents)
and returns a :class:`matplotlib.figure.Figure`, or ``None`` when the table holds nothing to draw (the
report then says what is missing). Figures are built without ``pyplot``: no display and no global backend
switch (a notebook's backend stays as it is); :func:`png_bytes` renders one with the Agg canvas.

- :func:`belief_figure` (the paper's Figure 4): mean KL divergence per turn with its confidence band, one
  panel per agent and comparison, one line per ToM group (from :func:`analysis.beliefs.belief_curves`).
- :func:`mr_map_figure` (Figure 5): the m-r map, Pearson r against slope m per agent and group with 90%
  bootstrap error bars and arrows V0 -> V0+V1 -> V0+V1+V2 (from :func:`analysis.proposals.proposal_fits`).
- :func:`coefficients_figure` (Figure 6): normalised utility coefficients as grouped bars, one panel per
  utility (the ``coefficients`` table of :func:`analysis.utility.utility_table`).
- :func:`f1_figure`: macro-F1 per agent, group and utility beside the paper's Table 1.
- :func:`outcomes_figure`: win rate, turns to win, tokens and cost per game per agent and group (from
  :func:`analysis.outcomes.outcome_summary`).
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from scipy.stats import binomtest

GROUP_ORDER: tuple[str, ...] = ("V0", "V0+V1", "V0+V1+V2")
"""The ToM groups in the order the figures draw them (arrows of Figure 5 follow it)."""
UTILITY_ORDER: tuple[str, ...] = ("U(0)", "U(0,1)", "U(0,1,2)")
TERMS: tuple[str, ...] = ("G0", "L0", "G1", "L1", "G2", "L2")
GROUP_MARKERS: dict[str, str] = {"V0": "o", "V0+V1": "s", "V0+V1+V2": "^", "none": "x"}
GROUP_STYLES: dict[str, str] = {"V0": ":", "V0+V1": "--", "V0+V1+V2": "-", "none": "-."}
COMPARISON_LABELS: dict[str, str] = {
    "v1_vs_opponent_v0": "KL(opponent's V0 ‖ V1)",
    "v1_vs_reference": "KL(reference of opponent's target ‖ V1)",
    "v2_vs_opponent_v1": "KL(opponent's V1 ‖ V2)",
    "v2_vs_reference": "KL(reference of own target ‖ V2)",
}
V1_COMPARISONS: tuple[str, ...] = ("v1_vs_opponent_v0", "v1_vs_reference")
V2_COMPARISONS: tuple[str, ...] = ("v2_vs_opponent_v1", "v2_vs_reference")
DPI = 110


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG bytes (tight bounding box, :data:`DPI`)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def ordered(values: Sequence[str] | pd.Series, order: Sequence[str]) -> list[str]:
    """Distinct ``values`` in ``order`` first, then any others sorted (a group no one foresaw)."""
    present = list(dict.fromkeys(str(v) for v in values))
    return [v for v in order if v in present] + sorted(v for v in present if v not in order)


def agent_colours(agents: Sequence[str]) -> dict[str, tuple[float, float, float, float]]:
    """One colour per agent, stable for a given sorted list (tab10, then tab20 past ten agents)."""
    palette = matplotlib.colormaps["tab10" if len(agents) <= 10 else "tab20"]
    return {agent: palette(index % palette.N) for index, agent in enumerate(sorted(agents))}


def belief_figure(curves: pd.DataFrame, comparisons: Sequence[str] = V1_COMPARISONS) -> Figure | None:
    """Figure 4: KL per turn (mean and CI band) per agent (columns) and comparison (rows), a line per group.

    ``curves``: ``agent, group, comparison, turn, n, kl_mean, kl_ci_low, kl_ci_high``. Rows are the
    ``comparisons`` present in the table; ``None`` when none is.
    """
    if curves.empty:
        return None
    data = curves[curves["comparison"].isin(comparisons)]
    rows = [c for c in comparisons if c in set(data["comparison"])]
    if not rows:
        return None
    agents = sorted(data["agent"].astype(str).unique())
    groups = ordered(data["group"], GROUP_ORDER)
    figure = Figure(figsize=(max(4.8, 3.6 * len(agents)), 3.0 * len(rows) + 0.8), layout="constrained")
    axes = figure.subplots(len(rows), len(agents), squeeze=False, sharex=True, sharey="row")
    palette = matplotlib.colormaps["viridis"]
    colours = {g: palette(i / max(1, len(groups) - 1) * 0.85) for i, g in enumerate(groups)}
    for r, comparison in enumerate(rows):
        for c, agent in enumerate(agents):
            ax: Axes = axes[r][c]
            panel = data[(data["comparison"] == comparison) & (data["agent"].astype(str) == agent)]
            for group in groups:
                line = panel[panel["group"] == group].sort_values("turn")
                if line.empty:
                    continue
                ax.plot(
                    line["turn"],
                    line["kl_mean"],
                    GROUP_STYLES.get(group, "-"),
                    marker=GROUP_MARKERS.get(group, "o"),
                    markersize=3,
                    color=colours[group],
                    label=group,
                )
                ax.fill_between(
                    line["turn"], line["kl_ci_low"], line["kl_ci_high"], color=colours[group], alpha=0.18
                )
            if panel.empty:
                ax.text(0.5, 0.5, "no pairs", ha="center", va="center", transform=ax.transAxes, color="grey")
            if r == 0:
                ax.set_title(agent)
            if c == 0:
                ax.set_ylabel(f"{COMPARISON_LABELS.get(comparison, comparison)}\n[nats]", fontsize=9)
            if r == len(rows) - 1:
                ax.set_xlabel("turn")
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        row = data[data["comparison"] == comparison]
        # a band of a turn with two pairs can be huge: keep the means readable, let such bands run off
        top = max(row["kl_mean"].max() * 1.5, row["kl_ci_high"].median())
        axes[r][0].set_ylim(0, top if np.isfinite(top) and top > 0 else None)
    handles, labels = _legend_entries(axes)
    if handles:
        figure.legend(handles, labels, loc="outside lower center", ncols=len(labels), title="ToM group")
    figure.suptitle("Belief accuracy over turns (mean with confidence band)")
    return figure


def mr_map_figure(fits: pd.DataFrame) -> Figure | None:
    """Figure 5: Pearson r (x) against slope m (y) per agent and group, CI error bars, arrows between orders.

    ``fits``: ``agent, group, r, r_ci_low, r_ci_high, m, m_ci_low, m_ci_high`` (one row per agent and
    group); rows with no r or m (too few proposals) are left out. ``None`` when nothing remains.
    """
    if fits.empty:
        return None
    data = fits.dropna(subset=["r", "m"])
    if data.empty:
        return None
    agents = sorted(data["agent"].astype(str).unique())
    colours = agent_colours(agents)
    figure = Figure(figsize=(7.2, 5.4), layout="constrained")
    ax = figure.subplots()
    ax.axvline(0.0, color="grey", lw=0.8, ls=":")
    for agent in agents:
        rows = data[data["agent"].astype(str) == agent]
        points: list[tuple[float, float]] = []
        for group in ordered(rows["group"], GROUP_ORDER):
            row = rows[rows["group"] == group].iloc[0]
            x, y = float(row["r"]), float(row["m"])
            ax.errorbar(
                x,
                y,
                xerr=_error(x, row.get("r_ci_low"), row.get("r_ci_high")),
                yerr=_error(y, row.get("m_ci_low"), row.get("m_ci_high")),
                fmt=GROUP_MARKERS.get(group, "o"),
                color=colours[agent],
                ecolor=colours[agent],
                elinewidth=0.9,
                capsize=3,
                markersize=7,
                alpha=0.9,
            )
            points.append((x, y))
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={
                    "arrowstyle": "->",
                    "color": colours[agent],
                    "lw": 1.4,
                    "shrinkA": 5,
                    "shrinkB": 5,
                },
            )
    _fair_line(ax, data)
    ax.set_xlabel("Pearson r between request value and offer value (proposer's V0)")
    ax.set_ylabel("slope m of offer value on request value")
    ax.set_title("Strategic consistency map (90% episode-bootstrap CIs)")
    ax.grid(alpha=0.3)
    agent_handles = [Line2D([], [], color=colours[a], marker="o", ls="", label=a) for a in agents]
    group_handles = [
        Line2D([], [], color="black", marker=GROUP_MARKERS.get(g, "o"), ls="", label=g)
        for g in ordered(data["group"], GROUP_ORDER)
    ]
    legend = ax.legend(handles=agent_handles, title="agent", loc="upper left", fontsize=8)
    ax.add_artist(legend)
    ax.legend(handles=group_handles, title="ToM group (arrows in this order)", loc="lower right", fontsize=8)
    return figure


def coefficients_figure(coefficients: pd.DataFrame) -> Figure | None:
    """Figure 6: normalised weights per term as grouped bars; a panel per utility, a bar per agent and group.

    ``coefficients``: ``agent, group, utility, term, weight`` (``weight`` normalised so a utility's absolute
    weights sum to 1). ``None`` when empty.
    """
    if coefficients.empty:
        return None
    data = coefficients.dropna(subset=["weight"])
    if data.empty:
        return None
    utilities = ordered(data["utility"], UTILITY_ORDER)
    series = (
        data[["agent", "group"]]
        .astype(str)
        .drop_duplicates()
        .assign(
            order=lambda f: f["group"].map({g: i for i, g in enumerate(GROUP_ORDER)}).fillna(len(GROUP_ORDER))
        )
        .sort_values(["agent", "order", "group"])
    )
    labels = [f"{a} · {g}" for a, g in zip(series["agent"], series["group"], strict=True)]
    agents = sorted(series["agent"].unique())
    colours = agent_colours(agents)
    several_groups = series["group"].nunique() > 1  # hatching tells groups apart; one group needs none
    hatches = dict(zip(GROUP_ORDER, ("", "//", "xx"), strict=True)) if several_groups else {}
    widths = [len([t for t in TERMS if t in set(data[data["utility"] == u]["term"])]) + 1 for u in utilities]
    figure = Figure(figsize=(max(6.0, 1.1 * sum(widths) + 1.5), 4.4), layout="constrained")
    axes = figure.subplots(1, len(utilities), squeeze=False, sharey=True, width_ratios=widths)[0]
    bar_width = 0.8 / max(1, len(labels))
    for ax, utility in zip(axes, utilities, strict=True):
        panel = data[data["utility"] == utility]
        terms = [t for t in TERMS if t in set(panel["term"])]
        for index, (agent, group, label) in enumerate(
            zip(series["agent"], series["group"], labels, strict=True)
        ):
            rows = panel[(panel["agent"].astype(str) == agent) & (panel["group"].astype(str) == group)]
            if rows.empty:
                continue
            weights = rows.set_index("term")["weight"].reindex(terms)
            positions = np.arange(len(terms)) + (index - (len(labels) - 1) / 2) * bar_width
            ax.bar(
                positions,
                weights.to_numpy(dtype=float),
                width=bar_width,
                color=colours[agent],
                hatch=hatches.get(group, ".." if several_groups else ""),
                edgecolor="white",
                label=label,
            )
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(np.arange(len(terms)), terms)
        ax.set_title(utility)
        ax.set_xlabel("term")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("normalised coefficient c (sum of |c| = 1)")
    handles, names = _legend_entries([axes])
    figure.legend(handles, names, loc="outside lower center", ncols=min(4, len(names)), fontsize=8)
    figure.suptitle("Utility coefficients (β/σ_U)·[1, −ρ, w1, −w1γ, w2, −w2κ], normalised")
    return figure


def f1_figure(table1: pd.DataFrame, paper: pd.DataFrame | None = None) -> Figure | None:
    """Macro-F1 (mean ± sd over CV folds) per agent and group, a bar per utility; the paper's beside it.

    ``table1``: ``agent, group, utility, f1_mean, f1_sd``; ``paper``: ``model, utility, f1_mean, f1_sd``.
    """
    if table1.empty:
        return None
    panels: list[tuple[str, pd.DataFrame]] = [
        (
            "this analysis",
            table1.assign(label=table1["agent"].astype(str) + "\n" + table1["group"].astype(str)),
        )
    ]
    if paper is not None and not paper.empty:
        panels.append(("the paper's Table 1", paper.assign(label=paper["model"].astype(str))))
    sizes = [panel["label"].nunique() for _, panel in panels]
    figure = Figure(figsize=(max(6.0, 1.3 * sum(sizes) + 2), 4.2), layout="constrained")
    axes = figure.subplots(1, len(panels), squeeze=False, sharey=True, width_ratios=sizes)[0]
    palette = matplotlib.colormaps["viridis"]
    colours = {u: palette(i / (len(UTILITY_ORDER) - 1) * 0.85) for i, u in enumerate(UTILITY_ORDER)}
    for ax, (title, panel) in zip(axes, panels, strict=True):
        labels = list(dict.fromkeys(panel["label"]))
        utilities = ordered(panel["utility"], UTILITY_ORDER)
        width = 0.8 / len(utilities)
        for index, utility in enumerate(utilities):
            rows = panel[panel["utility"] == utility].set_index("label").reindex(labels)
            ax.bar(
                np.arange(len(labels)) + (index - (len(utilities) - 1) / 2) * width,
                rows["f1_mean"].to_numpy(dtype=float),
                yerr=rows["f1_sd"].to_numpy(dtype=float),
                width=width,
                color=colours.get(utility, "grey"),
                capsize=2,
                label=utility,
            )
        ax.set_xticks(np.arange(len(labels)), labels, fontsize=8)
        ax.set_title(title)
        ax.set_ylim(0, 1.08)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("macro-F1 (mean ± sd over 3 folds)")
    handles, names = _legend_entries([axes])
    figure.legend(handles, names, loc="outside lower center", ncols=len(names), title="utility")
    return figure


OUTCOME_PANELS: tuple[tuple[str, str, str], ...] = (
    ("win_rate", "win rate", "no seat won"),
    ("turns_to_win", "turns to win (mean over won games)", "no seat won"),
    ("tokens_per_game", "LLM tokens per game (input + output)", "no LLM tokens in this source"),
    ("cost_usd_per_game", "cost per game [USD]", "no cost in this source"),
)


def outcomes_figure(summary: pd.DataFrame, level: float = 0.95) -> Figure | None:
    """Outcomes per agent (x) and group (bars): win rate with its Wilson interval, turns to win, tokens, cost.

    ``summary``: :func:`analysis.outcomes.outcome_summary` rows (``agent, group, seats, wins, win_rate,
    turns_to_win, input_tokens_per_game, output_tokens_per_game, cost_usd_per_game``). A panel whose
    numbers are all zero or missing (bots spend no tokens) says so instead of drawing empty bars.
    """
    if summary.empty:
        return None
    data = summary.assign(
        agent=summary["agent"].astype(str),
        tokens_per_game=summary["input_tokens_per_game"].fillna(0)
        + summary["output_tokens_per_game"].fillna(0),
    )
    agents = sorted(data["agent"].unique())
    groups = ordered(data["group"], GROUP_ORDER)
    palette = matplotlib.colormaps["viridis"]
    colours = {g: palette(i / max(1, len(groups) - 1) * 0.85) for i, g in enumerate(groups)}
    figure = Figure(figsize=(max(8.0, 1.6 * len(agents) * 2), 6.4), layout="constrained")
    axes = figure.subplots(2, 2).ravel()
    width = 0.8 / max(1, len(groups))
    for ax, (column, title, nothing) in zip(axes, OUTCOME_PANELS, strict=True):
        values = pd.to_numeric(data[column], errors="coerce")
        if not values.fillna(0).abs().gt(0).any():
            ax.text(0.5, 0.5, nothing, ha="center", va="center", transform=ax.transAxes, color="grey")
            ax.set_yticks([])
        for index, group in enumerate(groups):
            rows = data[data["group"] == group].groupby("agent").first().reindex(agents)
            heights = pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float)
            error = _win_errors(rows, level) if column == "win_rate" else None
            ax.bar(
                np.arange(len(agents)) + (index - (len(groups) - 1) / 2) * width,
                np.nan_to_num(heights),
                width=width,
                yerr=error,
                capsize=3,
                color=colours[group],
                label=group,
            )
        ax.set_xticks(np.arange(len(agents)), agents, fontsize=8)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
        if column == "win_rate":
            ax.set_ylim(0, 1.05)
    handles, names = _legend_entries([axes])
    figure.legend(handles, names, loc="outside lower center", ncols=max(1, len(names)), title="ToM group")
    figure.suptitle("Outcomes per agent and ToM group")
    return figure


def _win_errors(rows: pd.DataFrame, level: float) -> np.ndarray:
    """Wilson-interval error bars (below, above) of each row's ``wins`` out of ``seats`` (0 if none)."""
    errors = np.zeros((2, len(rows)))
    for index, (wins, seats) in enumerate(zip(rows["wins"], rows["seats"], strict=True)):
        if pd.isna(seats) or int(seats) == 0:
            continue
        interval = binomtest(int(wins), int(seats)).proportion_ci(level, method="wilson")
        rate = int(wins) / int(seats)
        errors[:, index] = (max(0.0, rate - interval.low), max(0.0, interval.high - rate))
    return errors


def _fair_line(ax: Axes, fits: pd.DataFrame) -> None:
    """The m = 1 (fair trade) line, labelled, when it lies near the points; the y range fits the points.

    Forcing m = 1 into view would flatten points that all sit near 0 (proposers whose offers are worth
    little to them), so the line is drawn only when it is within the points' range or close to it.
    """
    ys = pd.concat([fits[c] for c in ("m", "m_ci_low", "m_ci_high") if c in fits]).astype(float)
    ys = ys[np.isfinite(ys)]
    low, high = float(ys.min()), float(ys.max())
    span = max(high - low, 0.1)
    if low - span / 2 <= 1.0 <= high + span / 2:
        low, high = min(low, 1.0), max(high, 1.0)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.text(1.0, 1.0, " m = 1 (fair) ", transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                fontsize=8)  # fmt: skip
    pad = 0.08 * (high - low) if high > low else 0.05
    ax.set_ylim(low - pad, high + pad)


def _error(centre: float, low: object, high: object) -> list[list[float]] | None:
    """matplotlib's asymmetric error ``[[below], [above]]`` from a CI, or None when the CI is missing."""
    try:
        lo, hi = float(low), float(high)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if math.isnan(lo) or math.isnan(hi):
        return None
    return [[max(0.0, centre - lo)], [max(0.0, hi - centre)]]


def _legend_entries(axes: Sequence[Sequence[Axes]] | np.ndarray) -> tuple[list[object], list[str]]:
    """Distinct (handle, label) pairs over every axis, in first-seen order (one legend per figure)."""
    seen: dict[str, object] = {}
    for row in axes:
        for ax in row:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(label, handle)
    return list(seen.values()), list(seen)
