"""The analysis report: one self-contained HTML page, and the report-level tables it shows.

:func:`render_report` turns an :class:`AnalysisResults` (every table by name, the PNG of every figure, what
is missing) into HTML that needs nothing beside it: figures are embedded as ``data:image/png;base64`` URIs,
styles are inline, and a table of contents links every section, figure and table. Every number shown sits
beside the file name of the table it comes from (``tables/NAME.csv`` and ``.parquet``), so it can be traced
and recomputed. Sections: overview and data files, belief accuracy (Figure 4), proposal behaviour
(Figure 5), decision utilities (Table 1 beside the paper's, Figure 6), outcomes, the decisions taken where
the paper is silent, and what the source did not allow.

Report-level table (computed here from the analysis's tables):

- :func:`table1_comparison` (``table1_comparison``): the paper's Table 1 and this analysis's macro-F1 in
  one long table: ``source`` (``paper`` | ``replication``), ``agent`` (the paper's model name for the
  paper), ``group, utility, decisions, f1_mean, f1_sd``.
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

#: The group whose reports each utility of the paper's Table 1 was fitted on (its column "order").
UTILITY_GROUP: dict[str, str] = {"U(0)": "V0", "U(0,1)": "V0+V1", "U(0,1,2)": "V0+V1+V2"}
MAX_ROWS_SHOWN = 60
"""Tables longer than this show their first rows in the report; the files hold every row."""


COUNTED_TABLES: tuple[str, ...] = ("turns", "proposals", "decisions", "tom_reports", "traces")
"""Tables whose row counts the overview lists beside the number of games."""


@dataclass(frozen=True)
class FigureResult:
    """One figure of the report: its file stem, title, caption, the tables it is drawn from and its PNG."""

    name: str
    title: str
    caption: str
    sources: tuple[str, ...]
    png: bytes | None
    """None when the source held nothing to draw; ``missing`` then says why."""
    missing: str = ""


@dataclass
class AnalysisResults:
    """Everything the report shows: tables by file stem, figures, settings and what could not be computed."""

    source: str
    tables: dict[str, pd.DataFrame]
    figures: dict[str, FigureResult] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    """``bootstrap``, ``seed``, ``kl_smoothing``, ``belief_level``, ``proposal_level``, ``folds``..."""
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Section id -> sentences saying what the source lacked for that section."""
    files: dict[str, list[str]] = field(default_factory=dict)
    """Table stem -> the files written for it, relative to the report (e.g. ``tables/games.csv``)."""

    def table(self, name: str) -> pd.DataFrame:
        return self.tables.get(name, pd.DataFrame())

    def note_missing(self, section: str, sentence: str) -> None:
        self.missing.setdefault(section, []).append(sentence)


# --- report-level tables ---------------------------------------------------------------------------------


def table1_comparison(table1: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 1 (``model, utility, f1_mean, f1_sd``) and this analysis's ``table1``, one table."""
    columns = ["source", "agent", "group", "utility", "decisions", "f1_mean", "f1_sd"]
    parts = []
    if not paper.empty:
        parts.append(
            paper.rename(columns={"model": "agent"}).assign(
                source="paper", group=lambda f: f["utility"].map(UTILITY_GROUP), decisions=math.nan
            )
        )
    if not table1.empty:
        parts.append(table1.assign(source="replication"))
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat([part.reindex(columns=columns) for part in parts], ignore_index=True)


def f1_cells(comparison: pd.DataFrame, source: str, *, matched: bool) -> pd.DataFrame:
    """A Table-1-shaped view: ``mean ± sd`` per agent (and group) and utility.

    ``matched`` keeps, for each utility, only the group the paper fits it on (the paper's layout: the
    column "first-order" is U(0,1) fitted on the V0+V1 group); otherwise every (agent, group) row shows
    every utility its reports allow.
    """
    rows = comparison[comparison["source"] == source]
    if matched:
        rows = rows[rows["group"] == rows["utility"].map(UTILITY_GROUP)]
    if rows.empty:
        return pd.DataFrame()
    cells = rows.assign(cell=[_mean_sd(m, s) for m, s in zip(rows["f1_mean"], rows["f1_sd"], strict=True)])
    index = ["agent"] if matched else ["agent", "group"]
    wide = cells.pivot_table(index=index, columns="utility", values="cell", aggfunc="first", sort=False)
    wide.columns.name = None
    wide = wide.reindex(columns=[u for u in UTILITY_GROUP if u in wide.columns]).fillna("–")
    if matched:
        wide.columns = [f"{u} on {UTILITY_GROUP[u]}" for u in wide.columns]
    return wide.reset_index()


def _mean_sd(mean: object, sd: object) -> str:
    m, s = _number(mean), _number(sd)
    if m is None:
        return "–"
    return f"{m:.2f} ± {s:.2f}" if s is not None else f"{m:.2f}"


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


# --- HTML --------------------------------------------------------------------------------------------------

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1180px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #444}h2{border-bottom:1px solid #bbb;margin-top:2.2em}
nav.toc{background:#f6f6f6;padding:.6em 1.2em;border-radius:6px}nav.toc ul{margin:.2em 0}
table.data{border-collapse:collapse;font-size:.82em;margin:.4em 0 1em}
table.data th,table.data td{border:1px solid #ccc;padding:2px 6px;text-align:right}
table.data th{background:#eee}table.data td:first-child,table.data th:first-child{text-align:left}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.88em;color:#444}
.source{font-size:.82em;color:#555}.source code{background:#f1f1f1;padding:0 3px}
.missing{background:#fff4e5;border-left:4px solid #f0a020;padding:.4em .8em;margin:.6em 0}
.side{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}
"""

DECISIONS: tuple[str, ...] = (
    "Belief accuracy: KL(target ‖ estimate) = KL(opponent's reported V0 ‖ agent's V1) in nats (natural log), "
    "V2 against the opponent's same-turn V1; both 0–10 reports smoothed by adding {kl_smoothing} to every "
    "item before normalising; only same-turn pairs are compared. Also against the reference values of the "
    "opponent's true target (ground truth the paper did not have).",
    "Belief curves: per-turn mean with a {belief_level:.0%} confidence interval, plus a per-game mean "
    "(mean of each game's mean) per agent and group; Jensen–Shannon divergence, mean absolute error and "
    "Spearman correlation are reported beside KL.",
    "Proposals: the focal agent's proposals only, passes excluded; request and offer valued with the "
    "proposer's own same-turn V0. Slope m of offer on request fitted with an intercept; the through-origin "
    "slope is reported too. Pearson r. {proposal_level:.0%} CIs by episode-level (game) bootstrap, "
    "B = {bootstrap}, seed {seed}.",
    "Decision utilities: U(0) = G0 − ρL0; U(0,1) = U(0) + w1(G1 − γL1); U(0,1,2) = U(0,1) + w2(G2 − κL2), "
    "standardised, then logistic regression (L-BFGS). Grid ρ, γ, κ ∈ [−2, 2] and w1, w2 ∈ [−3, 3] in steps "
    "of 0.25, chosen by training-fold log-likelihood (L2-penalised as scikit-learn's C = 1 fit is, which "
    "keeps β finite on separable decisions); stratified {folds}-fold cross-validation grouped by game; the "
    "focal agent's own decisions only (not those the game made for it on a deadline, nor an LLM agent's "
    "fallbacks); macro-F1 mean ± sd over the folds (Table 1).",
    "Figure 6 weights: (β/σ_U)·[1, −ρ, w1, −w1γ, w2, −w2κ] for G0, L0, G1, L1, G2, L2, normalised by the "
    "sum of absolute values; the raw weights are in the coefficients table (weight_raw).",
    "Groups: a seat's group is the ToM orders it was asked to report (V0, V0+V1, V0+V1+V2); the agent is "
    "the experiment runner's label (the model or bot with its persona and reasoning mode), else the LLM "
    "model name for LLM seats and the bot spec for bots. The outcomes table has every seat; its summary "
    "and figure the focal seats (the paper's V0-only baseline opponent is not focal).",
)


def render_report(results: AnalysisResults) -> str:
    """The whole report as one HTML document (see the module docstring)."""
    page = _Page(results)
    page.overview()
    page.beliefs()
    page.proposals()
    page.utilities()
    page.outcomes()
    page.decisions()
    page.missing_section()
    page.data_files()
    return page.html()


class _Page:
    """Builds the report's sections in order and the table of contents that links them."""

    def __init__(self, results: AnalysisResults) -> None:
        self.results = results
        self.toc: list[tuple[str, str, list[tuple[str, str]]]] = []  # (anchor, title, [(anchor, title)])
        self.body: list[str] = []

    # sections

    def overview(self) -> None:
        r = self.results
        games, seats = r.table("games"), r.table("seats")
        self.section("overview", "Overview")
        facts = [
            ("source", r.source),
            ("games", str(len(games))),
            *((name.replace("_", " "), str(len(r.table(name)))) for name in COUNTED_TABLES),
            (
                "agents",
                ", ".join(sorted(map(str, seats["agent"].dropna().unique()))) if "agent" in seats else "–",
            ),
            (
                "ToM groups",
                ", ".join(sorted(map(str, seats["group"].dropna().unique()))) if "group" in seats else "–",
            ),
            ("bootstrap B", str(r.settings.get("bootstrap", "–"))),
            ("seed", str(r.settings.get("seed", "–"))),
        ]
        rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts)
        self.body.append(f'<table class="data">{rows}</table>')
        if not seats.empty and {"agent", "group", "focal", "seat"} <= set(seats.columns):
            counts = (
                seats.groupby(["agent", "group", "focal"], dropna=False)
                .agg(seats=("seat", "size"), games=("game_id", "nunique"))
                .reset_index()
            )
            self.table_block("seats", counts, anchor="seat-counts", title="Seats per agent and group")
        self.missing_notes("overview")

    def beliefs(self) -> None:
        self.section("beliefs", "Belief accuracy (Figure 4)")
        self.body.append(
            "<p>How close an agent's first-order belief V1 about its opponent is to the opponent's own V0 of "
            "the same turn, and to the reference values of the opponent's true target. Lower is better.</p>"
        )
        self.figure("figure4_beliefs_v1")
        self.figure("figure4b_beliefs_v2")
        self.table_block("belief_summary", title="Belief accuracy per agent, group and comparison")
        self.missing_notes("beliefs")

    def proposals(self) -> None:
        self.section("proposals", "Proposal behaviour (Figure 5)")
        self.body.append(
            "<p>Each proposal's request and offer valued with the proposer's own V0; r is their Pearson "
            "correlation, m the slope of offer on request (m ≈ 1 fair, m &lt; 1 selfish, m &gt; 1 "
            "concessive).</p>"
        )
        self.figure("figure5_mr_map")
        self.table_block("proposal_fits", title="Slope and correlation per agent and group")
        self.missing_notes("proposals")

    def utilities(self) -> None:
        r = self.results
        self.section("utilities", "Decision utilities (Table 1, Figure 6)")
        comparison = r.table("table1_comparison")
        self.subheading("table1", "Table 1: macro-F1, this analysis beside the paper")
        files = self.file_note("table1_comparison")
        if comparison.empty:
            self.body.append('<p class="missing">No Table 1 to show.</p>')
        else:
            blocks = []
            for source, matched, title in (
                ("replication", False, "This analysis: every utility its reports allow"),
                ("replication", True, "This analysis in the paper's layout"),
                ("paper", True, "The paper's Table 1"),
            ):
                cells = f1_cells(comparison, source, matched=matched)
                if not cells.empty:
                    blocks.append(f"<div><h4>{_e(title)}</h4>{_html_table(cells)}</div>")
            self.body.append(f'<div class="side">{"".join(blocks)}</div>{files}')
        self.figure("figure_f1")
        self.figure("figure6_coefficients")
        self.table_block("table1", title="Utility fits (parameters and macro-F1)")
        self.table_block("coefficients", title="Coefficients per term (normalised and raw)")
        self.missing_notes("utilities")

    def outcomes(self) -> None:
        self.section("outcomes", "Outcomes")
        self.figure("figure_outcomes")
        self.table_block("outcome_summary", title="Outcomes per agent and group (focal seats)")
        self.missing_notes("outcomes")

    def decisions(self) -> None:
        settings = {
            "kl_smoothing": "–",
            "belief_level": 0.95,
            "proposal_level": 0.90,
            "bootstrap": "–",
            "seed": "–",
            "folds": 3,
            **self.results.settings,
        }
        self.section("decisions", "Decisions where the paper is silent")
        items = "".join(f"<li>{_e(text.format(**settings))}</li>" for text in DECISIONS)
        self.body.append(f"<ul>{items}</ul>")

    def missing_section(self) -> None:
        missing = [(s, text) for s, texts in self.results.missing.items() for text in texts]
        self.section("missing", "What this source did not allow")
        if not missing:
            self.body.append("<p>Nothing: every table and figure could be computed.</p>")
            return
        items = "".join(f'<li><a href="#{_e(s)}">{_e(s)}</a>: {_e(text)}</li>' for s, text in missing)
        self.body.append(f"<ul>{items}</ul>")

    def data_files(self) -> None:
        self.section("data", "Data files")
        rows = []
        for name in sorted(self.results.files):
            frame = self.results.table(name)
            links = " · ".join(
                f'<a href="{_e(path)}"><code>{_e(path)}</code></a>' for path in self.results.files[name]
            )
            rows.append(
                f"<tr><td>{_e(name)}</td><td>{len(frame)}</td>"
                f"<td style='text-align:left'>{_e(', '.join(map(str, frame.columns)))}</td>"
                f"<td>{links}</td></tr>"
            )
        self.body.append(
            '<table class="data"><tr><th>table</th><th>rows</th><th>columns</th><th>files</th></tr>'
            + "".join(rows)
            + "</table><p>Columns are documented in docs/analysis.md and the modules' docstrings.</p>"
        )

    # building blocks

    def section(self, anchor: str, title: str) -> None:
        self.toc.append((anchor, title, []))
        self.body.append(f'<h2 id="{_e(anchor)}">{_e(title)}</h2>')

    def subheading(self, anchor: str, title: str) -> None:
        self.toc[-1][2].append((anchor, title))
        self.body.append(f'<h3 id="{_e(anchor)}">{_e(title)}</h3>')

    def figure(self, name: str) -> None:
        figure = self.results.figures.get(name)
        if figure is None:
            return
        anchor = f"fig-{name}"
        self.subheading(anchor, figure.title)
        sources = " · ".join(
            f"<code>{_e(p)}</code>" for s in figure.sources for p in self.results.files.get(s, [s])[:1]
        )
        if figure.png is None:
            self.body.append(f'<p class="missing">Not drawn: {_e(figure.missing or "no data")}</p>')
            return
        data = base64.b64encode(figure.png).decode("ascii")
        self.body.append(
            f'<figure><img alt="{_e(figure.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(figure.caption)} <span class='source'>Drawn from {sources}; "
            f"image <code>figures/{_e(name)}.png</code>.</span></figcaption></figure>"
        )

    def table_block(
        self, name: str, frame: pd.DataFrame | None = None, *, anchor: str = "", title: str
    ) -> None:
        data = self.results.table(name) if frame is None else frame
        anchor = anchor or f"table-{name}"
        self.subheading(anchor, title)
        if data.empty:
            self.body.append(f'<p class="missing">No rows in <code>{_e(name)}</code>.</p>')
            return
        shown = data.head(MAX_ROWS_SHOWN)
        note = f" First {MAX_ROWS_SHOWN} of {len(data)} rows." if len(data) > MAX_ROWS_SHOWN else ""
        self.body.append(_html_table(shown) + self.file_note(name, note if frame is None else ""))

    def file_note(self, name: str, extra: str = "") -> str:
        paths = self.results.files.get(name)
        if not paths:
            return ""
        links = " · ".join(f'<a href="{_e(p)}"><code>{_e(p)}</code></a>' for p in paths)
        return f'<p class="source">Table <b>{_e(name)}</b>: {links}.{_e(extra)}</p>'

    def missing_notes(self, section: str) -> None:
        for text in self.results.missing.get(section, []):
            self.body.append(f'<p class="missing">{_e(text)}</p>')

    def html(self) -> str:
        toc = "".join(
            f'<li><a href="#{_e(a)}">{_e(t)}</a>'
            + (
                "<ul>" + "".join(f'<li><a href="#{_e(sa)}">{_e(st)}</a></li>' for sa, st in subs) + "</ul>"
                if subs
                else ""
            )
            + "</li>"
            for a, t, subs in self.toc
        )
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>TradeCraft analysis: {_e(self.results.source)}</title>"
            f"<style>{STYLE}</style></head><body><h1>TradeCraft analysis</h1>"
            f"<p class='source'>Source: <code>{_e(self.results.source)}</code></p>"
            f'<nav class="toc"><h2 id="contents">Contents</h2><ul>{toc}</ul></nav>'
            + "\n".join(self.body)
            + "</body></html>\n"
        )


def _html_table(frame: pd.DataFrame) -> str:
    return frame.map(_cell).to_html(index=False, escape=True, border=0, classes="data", na_rep="–")


def _cell(value: object) -> object:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, (list, tuple, dict)):
        return str(value)
    return value


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
