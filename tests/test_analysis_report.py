"""The analysis's figures, HTML report and ``tradecraft analyze``.

Figures and the report are checked on DataFrames built here with the contract's columns (what each
figure draws, what the page links); the command end to end on real bot games (tom0/tom1/tom2 bots
reporting V0, V1 and V2, played with :func:`agents.local.play_local`).
"""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from analysis import figures
from analysis.outcomes import outcome_summary
from analysis.report import (
    AnalysisResults,
    FigureResult,
    f1_cells,
    render_report,
    table1_comparison,
)

GROUPS = ("V0", "V0+V1", "V0+V1+V2")


def belief_curves_frame() -> pd.DataFrame:
    rows = []
    for agent in ("gpt-4o", "o3"):
        for group in ("V0+V1", "V0+V1+V2"):
            for comparison in ("v1_vs_opponent_v0", "v1_vs_reference", "v2_vs_opponent_v1"):
                if comparison.startswith("v2") and group != "V0+V1+V2":
                    continue
                for turn in range(1, 6):
                    mean = 1.0 / turn
                    rows.append(
                        {"agent": agent, "group": group, "comparison": comparison, "turn": turn, "n": 10,
                         "kl_mean": mean, "kl_ci_low": mean * 0.8, "kl_ci_high": mean * 1.2}
                    )  # fmt: skip
    return pd.DataFrame(rows)


def proposal_fits_frame() -> pd.DataFrame:
    rows = []
    for agent, shift in (("gpt-4o", 0.0), ("o3", 0.2)):
        for index, group in enumerate(GROUPS):
            r, m = 0.3 + 0.1 * index + shift, 0.6 + 0.1 * index
            rows.append(
                {"agent": agent, "group": group, "proposals": 40, "games": 20, "r": r, "r_ci_low": r - 0.1,
                 "r_ci_high": r + 0.1, "m": m, "m_ci_low": m - 0.2, "m_ci_high": m + 0.2, "intercept": 0.1,
                 "m_origin": m, "m_origin_ci_low": m - 0.2, "m_origin_ci_high": m + 0.2}
            )  # fmt: skip
    # too few proposals to fit: no point, no arrow
    rows.append({"agent": "gpt-5", "group": "V0", "proposals": 1, "games": 1, "r": math.nan, "m": math.nan})
    return pd.DataFrame(rows)


def coefficients_frame() -> pd.DataFrame:
    terms = {"U(0)": ("G0", "L0"), "U(0,1)": ("G0", "L0", "G1", "L1"), "U(0,1,2)": figures.TERMS}
    rows = []
    for agent in ("tom0", "tom1"):
        for utility, names in terms.items():
            weights = np.linspace(1, -1, len(names))
            weights = weights / np.abs(weights).sum()
            for term, weight in zip(names, weights, strict=True):
                rows.append({"agent": agent, "group": "V0+V1+V2", "utility": utility, "term": term,
                             "weight": weight, "weight_raw": 3 * weight})  # fmt: skip
    return pd.DataFrame(rows)


def outcomes_frame() -> pd.DataFrame:
    rows = []
    for game in range(10):
        for seat, (agent, group, focal) in enumerate((("tom1", "V0+V1", True), ("tom0", "V0", False))):
            won = (seat == 0) == (game < 7)
            rows.append(
                {"game_id": f"g{game}", "seat": seat, "agent": agent, "group": group, "focal": focal,
                 "won": won, "sole_win": won, "turns": 8, "turns_to_win": 8 if won else math.nan,
                 "proposals": 4, "proposals_accepted": 1, "decisions": 4, "accepts": 1, "crafts": 2,
                 "invalid_actions": 0, "retries": 0, "fallbacks": 0, "llm_calls": 0, "input_tokens": 0,
                 "cached_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.1,
                 "seconds_per_move": 0.01}
            )  # fmt: skip
    return pd.DataFrame(rows)


def table1_frame() -> pd.DataFrame:
    rows = []
    for agent, f1s in (("tom0", (0.8, 0.8, 0.79)), ("tom1", (0.7, 0.9, 0.92))):
        for utility, f1 in zip(("U(0)", "U(0,1)", "U(0,1,2)"), f1s, strict=True):
            rows.append({"agent": agent, "group": "V0+V1+V2", "utility": utility, "decisions": 60,
                         "games": 20, "f1_mean": f1, "f1_sd": 0.05})  # fmt: skip
    return pd.DataFrame(rows)


PAPER = pd.DataFrame(
    [
        {"model": "GPT-4o", "utility": "U(0)", "f1_mean": 0.77, "f1_sd": 0.28},
        {"model": "GPT-4o", "utility": "U(0,1)", "f1_mean": 0.94, "f1_sd": 0.09},
        {"model": "GPT-4o", "utility": "U(0,1,2)", "f1_mean": 1.00, "f1_sd": 0.00},
    ]
)


def test_png_bytes_render_a_png() -> None:
    figure = figures.belief_figure(belief_curves_frame())
    assert figure is not None
    assert figures.png_bytes(figure).startswith(b"\x89PNG\r\n\x1a\n")


def test_belief_figure_has_a_panel_per_agent_and_comparison_and_a_band_per_group() -> None:
    figure = figures.belief_figure(belief_curves_frame())
    assert isinstance(figure, Figure)
    axes = figure.get_axes()
    assert len(axes) == 2 * 2  # comparisons (rows) x agents (columns)
    first = axes[0]
    assert first.get_title() == "gpt-4o"
    assert [line.get_label() for line in first.get_lines()] == ["V0+V1", "V0+V1+V2"]  # V0 before V0+V1+V2
    assert len(first.collections) == 2  # one CI band per group
    assert list(first.get_lines()[0].get_ydata()) == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2])
    assert "opponent's V0" in first.get_ylabel()
    v2 = figures.belief_figure(belief_curves_frame(), figures.V2_COMPARISONS)
    assert v2 is not None and len(v2.get_axes()) == 2  # one comparison present, two agents
    assert figures.belief_figure(pd.DataFrame()) is None
    no_v2 = belief_curves_frame().query("comparison != 'v2_vs_opponent_v1'")
    assert figures.belief_figure(no_v2, figures.V2_COMPARISONS) is None


def test_mr_map_draws_a_point_per_fit_and_arrows_between_orders() -> None:
    figure = figures.mr_map_figure(proposal_fits_frame())
    assert figure is not None
    ax = figure.get_axes()[0]
    arrows = [child for child in ax.texts if getattr(child, "arrow_patch", None) is not None]
    assert len(arrows) == 2 * 2  # two agents with three groups each; gpt-5 has no fit
    # arrows go from the lower order to the higher one
    gpt = sorted(
        a.xy for a in arrows if a.arrow_patch.get_edgecolor()[:3] == arrows[0].arrow_patch.get_edgecolor()[:3]
    )
    assert gpt[0][0] < gpt[1][0]
    points = [c for c in ax.containers]  # errorbar containers
    assert len(points) == 6
    assert "Pearson r" in ax.get_xlabel() and "slope m" in ax.get_ylabel()
    assert any("m = 1" in t.get_text() for t in ax.texts)  # the fair line, near these slopes
    stingy = proposal_fits_frame().assign(m=0.01, m_ci_low=0.0, m_ci_high=0.02)
    far = figures.mr_map_figure(stingy)
    assert far is not None and not any("m = 1" in t.get_text() for t in far.get_axes()[0].texts)
    assert far.get_axes()[0].get_ylim()[1] < 0.1  # the points are not flattened against m = 1
    assert figures.mr_map_figure(proposal_fits_frame().iloc[[-1]]) is None


def test_coefficients_figure_has_a_panel_per_utility_and_a_bar_per_term_and_series() -> None:
    figure = figures.coefficients_figure(coefficients_frame())
    assert figure is not None
    axes = figure.get_axes()
    assert [ax.get_title() for ax in axes] == ["U(0)", "U(0,1)", "U(0,1,2)"]
    assert [len(ax.patches) for ax in axes] == [2 * 2, 4 * 2, 6 * 2]  # terms x (agent, group) series
    assert [t.get_text() for t in axes[2].get_xticklabels()] == list(figures.TERMS)
    heights = sorted(p.get_height() for p in axes[0].patches)
    assert heights == pytest.approx([-0.5, -0.5, 0.5, 0.5])


def test_outcomes_figure_draws_win_rates_with_wilson_bars_and_says_when_no_tokens_were_spent() -> None:
    figure = figures.outcomes_figure(outcome_summary(outcomes_frame()))
    assert figure is not None
    axes = figure.get_axes()
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["tom1"]  # the baseline is not focal
    assert axes[0].patches[0].get_height() == pytest.approx(0.7)
    (bars,) = [c for c in axes[0].containers if isinstance(c, ErrorbarContainer)]
    bar = bars.lines[2][0].get_segments()[0]  # the win rate's error bar: the Wilson interval of 7 of 10
    assert bar[0][1] == pytest.approx(0.3968, abs=1e-3) and bar[1][1] == pytest.approx(0.8922, abs=1e-3)
    assert axes[1].patches[0].get_height() == 8  # turns to win
    texts = [t.get_text() for ax in axes for t in ax.texts]
    assert "no LLM tokens in this source" in texts and "no cost in this source" in texts


def test_table1_comparison_and_the_paper_layout() -> None:
    comparison = table1_comparison(table1_frame(), PAPER)
    assert set(comparison["source"]) == {"paper", "replication"}
    paper_cells = f1_cells(comparison, "paper", matched=True)
    assert paper_cells.iloc[0].tolist() == ["GPT-4o", "0.77 ± 0.28", "0.94 ± 0.09", "1.00 ± 0.00"]
    mine = f1_cells(comparison, "replication", matched=False).set_index("agent")
    assert mine.loc["tom1", "U(0,1)"] == "0.90 ± 0.05"
    # every bot reported V0+V1+V2: only U(0,1,2) is fitted on the group the paper fits it on
    matched = f1_cells(comparison, "replication", matched=True)
    assert list(matched.columns) == ["agent", "U(0,1,2) on V0+V1+V2"]
    figure = figures.f1_figure(table1_frame(), PAPER)
    assert figure is not None and [ax.get_title() for ax in figure.get_axes()] == [
        "this analysis",
        "the paper's Table 1",
    ]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.hrefs.append(str(values["href"]))
        if tag == "img":
            self.images.append(str(values.get("src")))


def parse_page(page: str) -> _Links:
    parser = _Links()
    parser.feed(page)
    return parser


def test_report_embeds_figures_links_its_contents_and_names_each_tables_files() -> None:
    summary = outcome_summary(outcomes_frame())
    results = AnalysisResults(
        source="runs/demo",
        tables={
            "outcome_summary": summary,
            "table1": table1_frame(),
            "paper_table1": PAPER,
            "table1_comparison": table1_comparison(table1_frame(), PAPER),
        },
        settings={"bootstrap": 2000, "seed": 0, "kl_smoothing": 1.0},
        files={
            "outcome_summary": ["tables/outcome_summary.csv", "tables/outcome_summary.parquet"],
            "table1_comparison": ["tables/table1_comparison.csv"],
        },
    )
    figure = figures.outcomes_figure(summary)
    assert figure is not None
    results.figures["figure_outcomes"] = FigureResult(
        "figure_outcomes", "Outcomes", "caption", ("outcome_summary",), figures.png_bytes(figure)
    )
    results.figures["figure5_mr_map"] = FigureResult(
        "figure5_mr_map", "Figure 5", "caption", ("proposal_fits",), None, "no valued proposals"
    )
    results.note_missing("beliefs", "No ToM reports in the source.")
    page = render_report(results)
    links = parse_page(page)
    assert len(links.images) == 1 and links.images[0].startswith("data:image/png;base64,iVBORw0KGgo")
    anchors = [href[1:] for href in links.hrefs if href.startswith("#")]
    assert {"overview", "beliefs", "proposals", "utilities", "outcomes", "decisions", "missing"} <= set(
        anchors
    )
    assert set(anchors) <= links.ids
    assert "tables/outcome_summary.csv" in page and "tables/outcome_summary.parquet" in page
    assert "No ToM reports in the source." in page
    assert "Not drawn: no valued proposals" in page
    assert "adding 1.0 to every item" in page and "B = 2000" in page
    assert "0.77 ± 0.28" in page and "0.90 ± 0.05" in page  # the paper's Table 1 beside this one
    assert not re.search(r"<img[^>]+src=\"(?!data:)", page)  # nothing outside the page


def test_an_empty_result_still_renders_and_says_what_is_missing() -> None:
    results = AnalysisResults(source="empty", tables={})
    results.note_missing("overview", "The source holds no finished games.")
    page = render_report(results)
    links = parse_page(page)
    assert {href[1:] for href in links.hrefs if href.startswith("#")} <= links.ids
    assert "The source holds no finished games." in page
    assert "No Table 1 to show." in page


# --- tradecraft analyze, end to end on real bot games ------------------------------------------------------

# each against a tom0 baseline asked for V0 only; a random bot's V0 gives its offers a value (a ToM bot offers
# only items worth 0 to itself, so its m-r point is undefined)
FOCAL_GAMES = (("tom1", [0, 1]), ("random", [0, 1, 2]))


def play_bot_games(directory: Path, *, instances: int, tom_orders: bool = True) -> list[Path]:
    """Real headless bot games as JSONL logs: for each focal bot, ``instances`` games of the paper set.

    The focal seat alternates; its seat record says ``focal: true``, the baseline's ``false``. Games end when
    both seats have won or at turn 8, so each has a few proposals and decisions. ``tom_orders=False`` asks
    no seat for any report.
    """
    from agents.bots.registry import make_policy
    from agents.local import derive_seed, play_local
    from agents.tournament import settings_for
    from craft_rules.loader import load_rule_set
    from craft_rules.tasks import get_instance, instance_set_ids
    from server.game.gamelog import encode_log

    rules = load_rule_set("minecraft")
    instance_ids = instance_set_ids("paper", ruleset="minecraft", mode="1p_v_1p")[1 : 1 + instances]
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for bot, orders in FOCAL_GAMES:
        for index, instance_id in enumerate(instance_ids):
            instance = get_instance(instance_id)
            focal = index % 2
            names = ["tom0", "tom0"]
            names[focal] = bot
            reports = [[0], [0]] if tom_orders else [[], []]
            if tom_orders:
                reports[focal] = orders
            settings = settings_for(instance, index).model_copy(
                update={"tom_orders": reports, "end_condition": "all_win", "max_turns": 8}
            )
            seed = derive_seed(7, bot, instance_id)
            policies = [make_policy(name, derive_seed(seed, seat)) for seat, name in enumerate(names)]
            result = play_local(instance, settings, rules, policies, seed)
            seats = [
                {"seat": seat, "kind": "bot", "name": name, "bot": name, "focal": seat == focal}
                for seat, name in enumerate(names)
            ]
            path = directory / f"{bot}-{index}.jsonl"
            path.write_text("".join(encode_log(result.game_log(game_id=path.stem, seats=seats))))
            paths.append(path)
    return paths


@pytest.fixture(scope="module")
def bot_games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bot-games")
    play_bot_games(directory, instances=4)
    return directory


def run_cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner

    from tradecraft.cli import main

    result = CliRunner().invoke(main, ["analyze", *args, "--no-progress"], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_analyze_writes_every_table_figure_and_a_self_contained_report(
    bot_games: Path, tmp_path: Path
) -> None:
    import base64

    from analysis.cli import DATASET_TABLES, DERIVED_TABLES, FIGURES

    out = tmp_path / "out"
    code, stdout, _ = run_cli(str(bot_games), "--out", str(out), "--bootstrap", "200", "--seed", "3")
    assert code == 0
    report = out / "report.html"
    assert f"report: {report.resolve()}" in stdout and stdout.startswith("8 games")
    for name in (*DATASET_TABLES, *DERIVED_TABLES):
        assert (out / "tables" / f"{name}.csv").is_file(), name
        parquet = pd.read_parquet(out / "tables" / f"{name}.parquet")
        csv = pd.read_csv(out / "tables" / f"{name}.csv")
        assert len(parquet) == len(csv), name
    for name in ("belief_pairs", "belief_summary", "proposal_values", "decision_features", "table1"):
        assert len(pd.read_parquet(out / "tables" / f"{name}.parquet")) > 0, name
    agents = set(pd.read_csv(out / "tables" / "belief_summary.csv")["agent"])
    assert {"tom1", "random"} <= agents
    page = report.read_text(encoding="utf-8")
    links = parse_page(page)
    pngs = {spec.name: out / "figures" / f"{spec.name}.png" for spec in FIGURES}
    assert all(path.is_file() for path in pngs.values()), [n for n, p in pngs.items() if not p.is_file()]
    embedded = {base64.b64decode(src.partition(",")[2]) for src in links.images}
    assert embedded == {path.read_bytes() for path in pngs.values()}
    assert {href[1:] for href in links.hrefs if href.startswith("#")} <= links.ids
    for href in (h for h in links.hrefs if not h.startswith("#")):
        assert (out / href).is_file(), href  # the table files the report names are there
    assert "Not drawn" not in page


@pytest.mark.slow
def test_a_source_without_reports_gives_a_report_saying_what_is_missing(tmp_path: Path) -> None:
    games = tmp_path / "games"
    play_bot_games(games, instances=1, tom_orders=False)
    out = tmp_path / "out"
    code, _stdout, stderr = run_cli(str(games), "--out", str(out), "--formats", "csv")
    assert code == 0
    assert "No ToM reports in the source" in stderr
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "No ToM reports in the source" in page and "Not drawn" in page
    assert (out / "tables" / "games.csv").is_file() and not list(out.glob("tables/*.parquet"))
    assert (out / "figures" / "figure_outcomes.png").is_file()


def test_analyze_refuses_an_unknown_format(tmp_path: Path) -> None:
    code, _, stderr = run_cli(str(tmp_path), "--out", str(tmp_path / "out"), "--formats", "csv,xlsx")
    assert code != 0 and "unknown_format" in stderr


def test_an_empty_directory_gives_empty_tables_and_a_report_that_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(str(tmp_path), "--out", str(out))
    assert code == 0 and stdout.startswith("0 games")
    assert "holds no finished games" in stderr
    games = pd.read_parquet(out / "tables" / "games.parquet")
    assert games.empty and "game_id" in games.columns  # the columns are there, documented, without rows
    assert {"kl", "kl_ci_low"} <= set(pd.read_csv(out / "tables" / "belief_summary.csv").columns)
    assert "f1_mean" in pd.read_parquet(out / "tables" / "table1.parquet").columns
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "holds no finished games" in page and "No ToM reports in the source" in page
    assert not list((out / "figures").iterdir())
