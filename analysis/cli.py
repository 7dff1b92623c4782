"""``tradecraft analyze SOURCE --out DIR``: load games, compute every measurement, write tables and report.

SOURCE is anything :func:`analysis.dataset.load` reads: a game-log ``.jsonl`` file, a directory of them, a
store URL (``sqlite:///ABS.db``, ``mongodb://...``) or an experiment directory (with ``manifest.json``).
Options:

- ``--out DIR`` (required): created if needed; receives ``tables/NAME.csv`` and ``tables/NAME.parquet``
  for every table (``--formats``), ``figures/NAME.png`` for every figure and ``report.html``;
- ``--bootstrap B`` (2000): bootstrap resamples for the proposal fits' 90% CIs (episode level);
- ``--seed S`` (0): seeds the bootstrap and the cross-validation folds (same seed, same numbers);
- ``--formats csv,parquet``: which table formats to write (either or both);
- ``--no-progress``: no progress bars (they go to stderr).

The stages (:data:`STAGES`) run in order with a progress bar each: load, beliefs (Figure 4's tables),
proposals (Figure 5's), utility (Table 1, Figure 6), outcomes, tables (writing), figures, report. A source
without what a stage needs (no ToM reports, no proposals, no decisions, a single agent) gives empty tables
and a report that says what is missing; the command ends with the report's path. :func:`run_analysis` is
the same pipeline for Python callers (and ``bench/bench_analysis.py``), with each stage's wall time.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pandas as pd
from tqdm import tqdm

from analysis import beliefs, figures, proposals, utility
from analysis.dataset import TABLES as DATASET_TABLES
from analysis.dataset import AnalysisError, Dataset, RulesArg, columns, load
from analysis.outcomes import SUMMARY_COLUMNS, outcome_summary
from analysis.report import (
    AnalysisResults,
    FigureResult,
    render_report,
    table1_comparison,
)
from analysis.tables import spreadsheet_safe
from craft_rules.errors import TradeCraftError

STAGES: tuple[str, ...] = (
    "load", "beliefs", "proposals", "utility", "outcomes", "tables", "figures", "report",
)  # fmt: skip
FORMATS: tuple[str, ...] = ("csv", "parquet")
BELIEF_LEVEL = 0.95
PROPOSAL_LEVEL = 0.90
FOLDS = 3

#: Tables this pipeline derives (beyond the dataset's own), in the order they are written.
DERIVED_TABLES: tuple[str, ...] = (
    "belief_pairs", "belief_curves", "belief_summary", "proposal_values", "proposal_fits",
    "decision_features", "table1", "coefficients", "paper_table1", "table1_comparison", "outcome_summary",
)  # fmt: skip


@dataclass
class AnalysisRun:
    """What :func:`run_analysis` produced: the results, the files written and each stage's wall time."""

    out: Path
    report: Path
    results: AnalysisResults
    dataset: Dataset
    files: list[Path] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Stage -> seconds (the keys of :data:`STAGES`)."""


def parse_formats(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"csv,parquet"`` -> ``("csv", "parquet")``; refuses an unknown or empty list."""
    names = [p.strip().lower() for p in (text.split(",") if isinstance(text, str) else text) if p.strip()]
    unknown = sorted(set(names) - set(FORMATS))
    if unknown or not names:
        raise AnalysisError(
            "unknown_format",
            f"--formats takes csv, parquet or both (comma-separated); got {text!r}.",
            {"unknown": unknown},
        )
    return tuple(dict.fromkeys(names))


def run_analysis(
    source: Any,
    out: Path,
    *,
    bootstrap: int = 2000,
    seed: int = 0,
    formats: Sequence[str] = FORMATS,
    progress: bool = False,
    rules: RulesArg = None,
) -> AnalysisRun:
    """Load ``source``, compute every table, write tables, figures and ``report.html`` under ``out``.

    ``source`` is what :func:`analysis.dataset.load` takes (``rules`` too); ``formats`` those of
    :func:`parse_formats`; ``progress`` shows the progress bars (stderr).
    """
    formats = parse_formats(formats)
    out = Path(out)
    timings: dict[str, float] = {}
    bar = tqdm(total=len(STAGES), desc="analysis", unit="stage", disable=not progress, leave=True)

    @contextmanager
    def stage(name: str) -> Iterator[None]:
        bar.set_postfix_str(name)
        started = time.perf_counter()
        yield
        timings[name] = time.perf_counter() - started
        bar.update(1)

    with stage("load"):
        dataset = _load_or_empty(source, rules, progress)
    results = AnalysisResults(
        source=_describe(source),
        tables={name: dataset.table(name) for name in DATASET_TABLES},
        settings={
            "bootstrap": bootstrap,
            "seed": seed,
            "kl_smoothing": beliefs.KL_SMOOTHING,
            "belief_level": BELIEF_LEVEL,
            "proposal_level": PROPOSAL_LEVEL,
            "folds": FOLDS,
        },
    )
    if dataset.games.empty:
        results.note_missing("overview", "The source holds no finished games: every table below is empty.")
    with stage("beliefs"):
        _belief_tables(dataset, results)
    with stage("proposals"):
        _proposal_tables(dataset, results, bootstrap=bootstrap, seed=seed)
    with stage("utility"):
        _utility_tables(dataset, results, seed=seed, progress=progress)
    with stage("outcomes"):
        results.tables["outcome_summary"] = (
            outcome_summary(dataset.outcomes) if not dataset.outcomes.empty else _empty(SUMMARY_COLUMNS)
        )
        if dataset.outcomes.empty:
            results.note_missing("outcomes", "No seats to summarise.")
    written: list[Path] = []
    with stage("tables"):
        written += _write_tables(dataset, results, out, formats, progress)
    with stage("figures"):
        written += _draw_figures(results, out, progress)
    with stage("report"):
        report = out / "report.html"
        report.write_text(render_report(results), encoding="utf-8")
        written.append(report)
    bar.close()
    return AnalysisRun(out, report, results, dataset, written, timings)


def _load_or_empty(source: Any, rules: RulesArg, progress: bool) -> Dataset:
    """The source's dataset; an empty one (every table with its columns) when it holds no game."""
    try:
        return load(source, rules=rules, progress=progress)
    except AnalysisError as err:
        if err.code != "no_games":
            raise
    return Dataset(**{name: pd.DataFrame(columns=list(columns(name))) for name in DATASET_TABLES})


def _empty(names: Sequence[str]) -> pd.DataFrame:
    """A table with its documented columns and no rows (what a source without the data gives)."""
    return pd.DataFrame(columns=list(names))


def _belief_tables(dataset: Dataset, results: AnalysisResults) -> None:
    no_pairs = _empty(beliefs.PAIR_COLUMNS)
    results.tables.update(
        belief_pairs=no_pairs,
        belief_curves=beliefs.belief_curves(no_pairs, level=BELIEF_LEVEL),
        belief_summary=beliefs.belief_summary(no_pairs, level=BELIEF_LEVEL),
    )
    if dataset.tom_reports.empty:
        results.note_missing(
            "beliefs", "No ToM reports in the source: belief accuracy needs V0 and V1 reports."
        )
        return
    if dataset.tom_values["reference"].isna().all():
        results.note_missing(
            "beliefs",
            "No reference values: the games' rule set could not be found or has changed since they were "
            "played, so only the comparisons with the opponents' own reports are given.",
        )
    try:
        pairs = beliefs.belief_pairs(dataset)
        if pairs.empty:
            results.note_missing(
                "beliefs",
                "No same-turn pairs of a V1 (or V2) report and the opponent's V0 (or V1): "
                "no seat reported a first-order belief.",
            )
            return
        results.tables["belief_pairs"] = pairs
        results.tables["belief_curves"] = beliefs.belief_curves(pairs, level=BELIEF_LEVEL)
        results.tables["belief_summary"] = beliefs.belief_summary(pairs, level=BELIEF_LEVEL)
    except TradeCraftError as err:
        results.note_missing("beliefs", err.message)


def _proposal_tables(dataset: Dataset, results: AnalysisResults, *, bootstrap: int, seed: int) -> None:
    results.tables.update(
        proposal_values=_empty(proposals.VALUE_COLUMNS), proposal_fits=_empty(proposals.FIT_COLUMNS)
    )
    if dataset.proposals.empty:
        results.note_missing("proposals", "No proposals in the source.")
        return
    try:
        values = proposals.proposal_values(dataset)
        results.tables["proposal_values"] = values
        if values[["request_value", "offer_value"]].isna().any(axis=1).all():
            results.note_missing(
                "proposals",
                "No proposal of a focal seat could be valued: "
                "it needs the proposer's own V0 of the same turn.",
            )
            return
        fits = proposals.proposal_fits(values, b=bootstrap, level=PROPOSAL_LEVEL, seed=seed)
        results.tables["proposal_fits"] = fits
        fitted = set(zip(fits["agent"], fits["group"], strict=True))
        for agent, group in sorted(set(zip(values["agent"], values["group"], strict=True)) - fitted):
            results.note_missing("proposals", f"{agent} · {group}: no proposal could be valued with its V0.")
        for row in fits[fits["r"].isna()].itertuples():
            results.note_missing(
                "proposals",
                f"{row.agent} · {row.group}: r is undefined (its requests or offers are worth the same under "
                "its own V0 every time, e.g. 0), so it is not on the m–r map; its slope is in the table.",
            )
    except TradeCraftError as err:
        results.note_missing("proposals", err.message)


def _utility_tables(dataset: Dataset, results: AnalysisResults, *, seed: int, progress: bool) -> None:
    paper = utility.PAPER_TABLE1
    results.tables.update(
        decision_features=_empty(utility.FEATURE_COLUMNS),
        table1=_empty(utility.TABLE1_COLUMNS),
        coefficients=_empty(utility.COEFFICIENT_COLUMNS),
    )
    results.tables["paper_table1"] = paper
    try:
        if dataset.decisions.empty:
            results.note_missing("utilities", "No decisions on proposals in the source: no utility to fit.")
            return
        features = utility.decision_features(dataset)
        results.tables["decision_features"] = features
        if features[["G0", "L0"]].isna().any(axis=1).all():
            results.note_missing(
                "utilities", "No decision of a focal seat came with its V0 report: no utility to fit."
            )
            return
        table1, coefficients = utility.utility_table(features, folds=FOLDS, seed=seed, progress=progress)
        results.tables["table1"], results.tables["coefficients"] = table1, coefficients
        for row in table1[table1["f1_mean"].isna()].itertuples():
            why = utility.REASONS.get(row.reason, row.reason)
            results.note_missing(
                "utilities", f"{row.agent} · {row.group} · {row.utility}: no macro-F1 ({why})."
            )
    except TradeCraftError as err:
        results.note_missing("utilities", err.message)
    finally:
        results.tables["table1_comparison"] = table1_comparison(results.table("table1"), paper)


def write_table(frame: pd.DataFrame, directory: Path, name: str, formats: Sequence[str]) -> list[Path]:
    """``frame`` as ``directory/name.csv`` and/or ``.parquet``; nested cells (dicts, lists) as JSON text."""
    directory.mkdir(parents=True, exist_ok=True)
    flat = frame.copy()
    for column in flat.columns:
        if flat[column].dtype == object:
            flat[column] = flat[column].map(_flat_cell)
    paths = []
    for fmt in formats:
        path = directory / f"{name}.{fmt}"
        if fmt == "csv":
            flat.map(spreadsheet_safe).to_csv(path, index=False)
        else:
            flat.to_parquet(path, index=False)
        paths.append(path)
    return paths


def _flat_cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return value


def _write_tables(
    dataset: Dataset, results: AnalysisResults, out: Path, formats: Sequence[str], progress: bool
) -> list[Path]:
    directory = out / "tables"
    paths = list(dataset.write(directory, formats=tuple(formats)))
    for path in paths:
        results.files.setdefault(path.stem, []).append(path.relative_to(out).as_posix())
    for name in tqdm(DERIVED_TABLES, desc="tables", unit="table", disable=not progress, leave=False):
        for path in write_table(results.table(name), directory, name, formats):
            results.files.setdefault(name, []).append(path.relative_to(out).as_posix())
            paths.append(path)
    return paths


@dataclass(frozen=True)
class FigureSpec:
    name: str
    title: str
    caption: str
    sources: tuple[str, ...]
    draw: Callable[[AnalysisResults], Any]
    missing: str
    """Why nothing was drawn although the source tables have rows."""


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "figure4_beliefs_v1",
        "Figure 4: KL of V1 against the opponent's V0 and against the reference, over turns",
        "Mean KL per turn with its 95% confidence band, one line per ToM group; top row against the "
        "opponent's same-turn V0 (the paper's Figure 4), bottom row against the reference values of the "
        "opponent's true target.",
        ("belief_curves",),
        lambda r: figures.belief_figure(r.table("belief_curves"), figures.V1_COMPARISONS),
        "no V1 report had a same-turn opponent report to compare with",
    ),
    FigureSpec(
        "figure4b_beliefs_v2",
        "Figure 4b: KL of V2 against the opponent's V1 and against the reference, over turns",
        "As Figure 4, for second-order beliefs (V0+V1+V2 group only).",
        ("belief_curves",),
        lambda r: figures.belief_figure(r.table("belief_curves"), figures.V2_COMPARISONS),
        "no seat reported V2",
    ),
    FigureSpec(
        "figure5_mr_map",
        "Figure 5: strategic consistency map (m–r)",
        "Pearson r and slope m of offer value on request value per agent and group, 90% episode-bootstrap "
        "error bars; arrows go V0 → V0+V1 → V0+V1+V2.",
        ("proposal_fits",),
        lambda r: figures.mr_map_figure(r.table("proposal_fits")),
        "r or m is undefined for every agent and group: the offer (or request) values never vary, "
        "e.g. a proposer that only offers items worth 0 under its own V0",
    ),
    FigureSpec(
        "figure_f1",
        "Macro-F1 per utility, beside the paper's Table 1",
        "Mean ± sd of macro-F1 over the cross-validation folds.",
        ("table1", "paper_table1"),
        lambda r: figures.f1_figure(r.table("table1"), r.table("paper_table1")),
        "no utility fit has a macro-F1",
    ),
    FigureSpec(
        "figure6_coefficients",
        "Figure 6: normalised utility coefficients",
        "Normalised weights of G0, L0, G1, L1, G2, L2 per agent and group; positive = preferred, "
        "negative = averse.",
        ("coefficients",),
        lambda r: figures.coefficients_figure(r.table("coefficients")),
        "no utility fit has coefficients",
    ),
    FigureSpec(
        "figure_outcomes",
        "Outcomes: win rate, turns to win, tokens and cost per game",
        "Per agent and ToM group, focal seats; win rate with its Wilson 95% interval.",
        ("outcome_summary",),
        lambda r: figures.outcomes_figure(r.table("outcome_summary")),
        "no seats",
    ),
)


def _draw_figures(results: AnalysisResults, out: Path, progress: bool) -> list[Path]:
    directory = out / "figures"
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in tqdm(FIGURES, desc="figures", unit="figure", disable=not progress, leave=False):
        drawn = spec.draw(results)
        png = figures.png_bytes(drawn) if drawn is not None else None
        if png is not None:
            path = directory / f"{spec.name}.png"
            path.write_bytes(png)
            paths.append(path)
        results.figures[spec.name] = FigureResult(
            spec.name, spec.title, spec.caption, spec.sources, png, "" if png else _why_not(spec, results)
        )
    return paths


def _why_not(spec: FigureSpec, results: AnalysisResults) -> str:
    empty = [name for name in spec.sources if results.table(name).empty and name != "paper_table1"]
    if empty:
        return f"the table {' and '.join(empty)} has no rows (see the notes of this section)"
    return spec.missing


def _describe(source: Any) -> str:
    if isinstance(source, (list, tuple)):
        return f"{len(source)} game logs given in memory"
    return str(source)


@click.command("analyze")
@click.argument("source")
@click.option(
    "--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output directory."
)
@click.option(
    "--bootstrap",
    default=2000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Bootstrap resamples (B).",
)
@click.option(
    "--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap and the CV folds."
)
@click.option(
    "--formats", default="csv,parquet", show_default=True, help="Table formats: csv, parquet or both."
)
@click.option("--no-progress", is_flag=True, help="No progress bars.")
def analyze_command(
    source: str, out: Path, bootstrap: int, seed: int, formats: str, no_progress: bool
) -> None:
    """Analyse SOURCE (game-log .jsonl files or a directory of them, a store URL or an experiment
    directory): tables (CSV, Parquet), figures (PNG) and one self-contained report.html in --out."""
    try:
        with warnings.catch_warnings():
            # scikit-learn warns for every group whose rarer answer has fewer decisions than folds; the
            # report says which fits that leaves without a score, and the warnings garble the bars
            warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
            run = run_analysis(
                source, out, bootstrap=bootstrap, seed=seed, formats=parse_formats(formats),
                progress=not no_progress,
            )  # fmt: skip
    except TradeCraftError as err:
        raise click.ClickException(f"{err.message} [{err.code}]") from None
    results = run.results
    for section, texts in results.missing.items():
        for text in texts:
            click.echo(f"note ({section}): {text}", err=True)
    total = sum(run.timings.values())
    drawn = sum(f.png is not None for f in results.figures.values())
    click.echo(
        f"{len(run.dataset.games)} games, {len(results.files)} tables, {drawn} figures in {_seconds(total)}; "
        f"report: {run.report.resolve()}"
    )


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if math.isfinite(value) else "?"
