"""Games as tidy pandas tables: ``load(SOURCE) -> Dataset``, whatever the games were stored in.

SOURCE is one of

- a game-log file (``*.jsonl``, :mod:`server.game.gamelog`; ``tradecraft play --log``, ``tradecraft export``);
- a directory of them (every ``*.jsonl`` directly in it, in name order);
- a store URL (``sqlite:///ABS/PATH.db``, ``mongodb://HOST/DB``): the store's finished games;
- an experiment directory: one holding ``manifest.json`` with at least ``{"experiment": NAME, "store":
  STORE_URL}``: the games of that store whose metadata has ``experiment == NAME`` and ``source ==
  "experiment"``; the runner stores one game per job attempt, and only the finished attempt of each job
  (metadata ``job_key``, ``attempt``; the last finished one should there be two) counts;
- a list of :class:`~server.game.gamelog.GameLog` objects.

Anything else raises :class:`AnalysisError` (``code`` in :data:`ANALYSIS_ERROR_CODES`).

Reading is bounded: a log file is decoded line by line (no line may pass :data:`MAX_LINE_CHARS`; a longer
one, e.g. a file that is not a game log, raises ``unreadable_log`` rather than filling the memory), and only
one game's log is held at a time while its rows are made. A huge log of one game is read whole into its
:class:`GameLog` (a game is bounded by its turn limit, its traces by the store's per-game cap).

Tables (:class:`Dataset`; columns declared once, in :func:`columns`):

- ``games``, ``turns``, ``proposals``, ``decisions``, ``crafts``, ``tom_reports``, ``traces``: the columns
  of :data:`analysis.tables.COLUMNS` (JSON cells parsed into dicts and lists, numbers numeric, booleans
  bool); ``games`` adds ``experiment``, ``job_key``, ``attempt`` and ``condition`` from the runner's
  metadata (missing for other games).
- ``seats``: :data:`analysis.tables.COLUMNS` ``["seats"]`` plus ``agent`` (who played the seat as the
  analysis groups it: the runner's ``agent`` label, else the seat's ``model``, else its bot spec, else its
  name; :func:`agent_of`), ``tom_orders`` (tuple of the
  orders the settings ask the seat to report), ``group`` (``"V0"``, ``"V0+V1"``, ``"V0+V1+V2"``; ``"none"``
  for no reports) and ``focal`` (the seat's stored ``focal``; True where the seat record has none, as for
  every game not made by the runner).
- ``tom_values``: :data:`analysis.tom_scores.COLUMNS` (each reported value beside its reference value),
  for the games whose rule set could be found and matches the one they were played with.
- ``outcomes``: one row per (game, seat), :data:`analysis.outcomes.OUTCOME_COLUMNS`.

:meth:`Dataset.write` writes every table as CSV and/or Parquet (JSON-valued cells as compact JSON text).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

import pandas as pd

from analysis.outcomes import OUTCOME_COLUMNS, seat_outcomes
from analysis.tables import COLUMNS, JSON_COLUMNS, game_rows, spreadsheet_safe
from analysis.tom_scores import COLUMNS as TOM_VALUE_COLUMNS
from analysis.tom_scores import tom_score_rows
from craft_rules.errors import TradeCraftError
from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.model import RuleSet
from server.game.gamelog import GameLog, GameLogError, decode_log
from server.store import Store, StoreError, open_store
from server.table.config import ModelPrice, load_settings
from server.table.game_logs import ExportError, load_game_log

log = logging.getLogger(__name__)

#: The longest line a game-log file may have (characters); a longer one is not read into memory.
MAX_LINE_CHARS = 64 * 1024 * 1024

#: What each :class:`AnalysisError` code means.
ANALYSIS_ERROR_CODES: dict[str, str] = {
    "unknown_source": "the source is no game log, directory of logs, store URL or experiment directory",
    "no_games": "the source holds no (finished) game",
    "unreadable_log": "a game-log file cannot be read or decoded",
    "invalid_manifest": "an experiment directory's manifest.json lacks its experiment name or store URL",
    "store_failed": "the store could not be opened or read",
    "unknown_table": "a table name the dataset does not have",
    "unknown_format": "a file format Dataset.write does not write (it writes csv and parquet)",
    "invalid_input": "a table an analysis reads lacks a column or holds a value out of range",
}

#: Columns ``games`` takes from the experiment runner's metadata.
EXPERIMENT_COLUMNS = ("experiment", "job_key", "attempt", "condition")
#: Columns ``seats`` adds to :data:`analysis.tables.COLUMNS`.
SEAT_COLUMNS = ("agent", "tom_orders", "group", "focal")

#: Every table of a dataset, in the order they are written.
TABLES = (
    "games", "seats", "turns", "proposals", "decisions", "crafts", "tom_reports", "tom_values", "traces",
    "outcomes",
)  # fmt: skip

_INTEGER = (
    "seat", "turn", "seq", "players", "events", "proposer", "partner", "to", "offer_units", "request_units",
    "order", "opponent_seat", "value", "event_seq", "step", "prompt_messages", "prompt_chars",
    "completion_chars", "reasoning_chars", "prompt_tokens", "cached_prompt_tokens", "completion_tokens",
    "prefix_tokens", "retries", "invalid", "responses", "turns", "won_turn", "seed", "reference",
    "opponent_report", "attempt",
)  # fmt: skip
_FLOAT = (
    "time", "latency_s", "created_at", "finished_at", "started_at", "ended_at", "duration_s", "response_s",
    "runs",
)  # fmt: skip
_BOOLEAN = ("accept", "won", "replay_ok", "focal")
#: The pandas dtype of a column wherever it appears (nullable where a log may not know the value).
DTYPES: dict[str, str] = {
    **dict.fromkeys(_INTEGER, "Int64"),
    **dict.fromkeys(_FLOAT, "float64"),
    **dict.fromkeys(_BOOLEAN, "boolean"),
}


class AnalysisError(TradeCraftError):
    """The analysis cannot read its source. ``code`` (:data:`ANALYSIS_ERROR_CODES`) is machine-readable."""


def columns(table: str) -> tuple[str, ...]:
    """The columns of ``table`` (one of :data:`TABLES`)."""
    if table == "games":
        return (*COLUMNS["games"], *EXPERIMENT_COLUMNS)
    if table == "seats":
        return (*COLUMNS["seats"], *SEAT_COLUMNS)
    if table == "tom_values":
        return TOM_VALUE_COLUMNS
    if table == "outcomes":
        return OUTCOME_COLUMNS
    if table in COLUMNS:
        return COLUMNS[table]
    raise AnalysisError(
        "unknown_table", f"there is no table {table!r}; the tables are {', '.join(TABLES)}", {"table": table}
    )


@dataclass
class Dataset:
    """Tidy tables of a set of games, one :class:`pandas.DataFrame` per table (see the module docstring)."""

    games: pd.DataFrame
    seats: pd.DataFrame
    turns: pd.DataFrame
    proposals: pd.DataFrame
    decisions: pd.DataFrame
    crafts: pd.DataFrame
    tom_reports: pd.DataFrame
    tom_values: pd.DataFrame
    traces: pd.DataFrame
    outcomes: pd.DataFrame

    def table(self, name: str) -> pd.DataFrame:
        """The table called ``name`` (AnalysisError ``unknown_table`` for any other name)."""
        if name not in TABLES:
            columns(name)  # raises the typed error
        frame: pd.DataFrame = getattr(self, name)
        return frame

    def write(self, out: Path, formats: Sequence[str] = ("csv", "parquet")) -> list[Path]:
        """Write every table as ``out/NAME.csv`` and/or ``out/NAME.parquet``; returns the paths written.

        JSON-valued cells (hands, offers, ``tom_orders``) are written as compact JSON text in both formats.
        """
        unknown = set(formats) - {"csv", "parquet"}
        if unknown:
            raise AnalysisError(
                "unknown_format", f"unknown format(s) {sorted(unknown)}: write csv and/or parquet", {}
            )
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        for name in TABLES:
            flat = _flatten(self.table(name))
            if "csv" in formats:
                written.append(out / f"{name}.csv")
                flat.map(spreadsheet_safe).to_csv(written[-1], index=False)
            if "parquet" in formats:
                written.append(out / f"{name}.parquet")
                flat.to_parquet(written[-1], index=False)
        return written


# ---------------------------------------------------------------------------------------------- loading
RulesArg = RuleSet | Callable[[str], RuleSet] | None


def load(
    source: str | Path | Sequence[GameLog],
    *,
    rules: RulesArg = None,
    progress: bool = False,
    prices: Mapping[str, ModelPrice] | None = None,
) -> Dataset:
    """Every game of ``source`` (see the module docstring) as a :class:`Dataset`.

    ``rules`` is the rule set to score ToM reports with (a RuleSet, or a function of the log's rule-set
    name; default :func:`craft_rules.loader.load_rule_set`); a game whose rule set cannot be found or does
    not match the one it was played with has no ``tom_values`` rows (a warning says so). ``progress`` shows
    a tqdm bar over the games. ``prices`` prices LLM calls for ``outcomes`` (default: the price table of
    :func:`server.table.config.load_settings`).
    """
    rules_of = _RuleFinder(rules)
    logs, total = _game_logs(source, rules if isinstance(rules, RuleSet) else rules_of.named)
    if progress:
        from tqdm import tqdm

        logs = tqdm(logs, total=total, desc="games", unit="game")
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES if name != "outcomes"}
    games = 0
    for game_log in logs:
        games += 1
        tables = game_rows(game_log)
        _add_experiment(tables["games"][0], game_log)
        _add_seat_groups(tables["seats"], game_log)
        for name, table in tables.items():
            rows[name].extend(table)
        # without its rule set a game's reports still pair up with the opponent's; only references are missing
        rows["tom_values"].extend(tom_score_rows(game_log, rules_of(game_log)))
    if games == 0:
        raise AnalysisError("no_games", f"{_describe(source)} holds no game to analyse", {})
    frames = {name: _frame(name, table) for name, table in rows.items()}
    if prices is None:
        prices = load_settings().prices.models
    outcomes = seat_outcomes(
        frames["games"], frames["seats"], frames["proposals"], frames["decisions"], frames["crafts"],
        frames["traces"], prices=prices,
    )  # fmt: skip
    return Dataset(**frames, outcomes=outcomes)


def _describe(source: object) -> str:
    return f"{len(source)} game log(s)" if isinstance(source, list | tuple) else repr(str(source))


def _game_logs(
    source: str | Path | Sequence[GameLog], rules: RulesArg
) -> tuple[Iterator[GameLog], int | None]:
    """The game logs of ``source``, read one at a time, and how many there will be (None: unknown)."""
    if isinstance(source, list | tuple):
        if not all(isinstance(item, GameLog) for item in source):
            raise AnalysisError(
                "unknown_source", "a list source must hold GameLog objects only (or give a path or URL)", {}
            )
        return iter(source), len(source)
    if not isinstance(source, str | Path):
        raise AnalysisError(
            "unknown_source",
            f"cannot analyse a {type(source).__name__}: give a game-log file, a directory of them, a store "
            "URL (sqlite:///ABS/PATH.db, mongodb://...), an experiment directory or a list of GameLog",
            {"type": type(source).__name__},
        )
    text = str(source)
    if isinstance(source, str) and "://" in text:
        if text.startswith("memory:"):
            raise AnalysisError(
                "unknown_source",
                "a memory:// store is empty in a new process; analyse a SQLite or MongoDB store, or the "
                "game logs exported from it",
                {"source": text},
            )
        return _store_logs(text, rules, experiment=None)
    path = Path(source)
    if path.is_dir() and (path / "manifest.json").is_file():
        name, url = _manifest(path / "manifest.json")
        return _store_logs(url, rules, experiment=name)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        if not files:
            raise AnalysisError(
                "no_games",
                f"directory {text!r} holds no *.jsonl game log and no manifest.json; export games with "
                "`tradecraft export` or point at an experiment directory",
                {"source": text},
            )
        return (read_log(file) for file in files), len(files)
    if path.is_file() and path.suffix == ".jsonl":
        return iter([read_log(path)]), 1
    raise AnalysisError(
        "unknown_source",
        f"{text!r} is no game-log file (*.jsonl), directory of them, experiment directory (with "
        "manifest.json) or store URL (sqlite:///ABS/PATH.db, mongodb://HOST/DB); check the path",
        {"source": text, "exists": path.exists()},
    )


def read_log(path: Path) -> GameLog:
    """Decode one game-log file line by line (AnalysisError ``unreadable_log`` saying where and why)."""
    try:
        with path.open(encoding="utf-8") as handle:
            return decode_log(_bounded_lines(handle, path))
    except GameLogError as exc:
        where = f" line {exc.line}" if getattr(exc, "line", None) else ""
        raise AnalysisError(
            "unreadable_log",
            f"{path}{where}: {exc.message} ({exc.code}); fix or remove the file (a participant export "
            "cannot be analysed: export the game for researchers)",
            {"path": str(path), "code": exc.code},
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise AnalysisError(
            "unreadable_log", f"{path} cannot be read ({exc}); check the file", {"path": str(path)}
        ) from exc


def _bounded_lines(handle: IO[str], path: Path) -> Iterator[str]:
    number = 0
    while line := handle.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise AnalysisError(
                "unreadable_log",
                f"{path} line {number} is longer than {MAX_LINE_CHARS} characters: not a game log this "
                "reader holds in memory",
                {"path": str(path), "line": number},
            )
        yield line


def _manifest(path: Path) -> tuple[str, str]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise AnalysisError(
            "invalid_manifest", f"{path} is not readable JSON ({exc})", {"path": str(path)}
        ) from exc
    name = manifest.get("experiment") if isinstance(manifest, dict) else None
    url = manifest.get("store") if isinstance(manifest, dict) else None
    if not isinstance(name, str) or not name or not isinstance(url, str) or not url:
        raise AnalysisError(
            "invalid_manifest",
            f'{path} must hold at least {{"experiment": NAME, "store": STORE_URL}}; it is the runner\'s '
            "manifest of an experiment directory",
            {"path": str(path)},
        )
    return name, url


def _store_logs(url: str, rules: RulesArg, *, experiment: str | None) -> tuple[Iterator[GameLog], int]:
    where = url.split("@")[-1]  # never a password of the URL in a message
    try:
        store = open_store(url)
    except StoreError as exc:
        raise AnalysisError("store_failed", f"store {where!r}: {exc.message}", {"code": exc.code}) from exc
    try:
        records = store.list_games(status="finished", limit=10**9)
    except StoreError as exc:
        store.close()
        raise AnalysisError("store_failed", f"store {where!r}: {exc.message}", {"code": exc.code}) from exc
    records.sort(key=lambda r: (r.get("created_at") or 0, r["game_id"]))
    if experiment is not None:
        records = finished_attempts(records, experiment)
    if not records:
        store.close()
        what = f"no finished game of experiment {experiment!r}" if experiment else "no finished game"
        raise AnalysisError(
            "no_games",
            f"store {where!r} holds {what}; run (or resume) the experiment, or check the URL",
            {"experiment": experiment},
        )
    return _read_store(store, [r["game_id"] for r in records], rules), len(records)


def finished_attempts(records: Iterable[Mapping[str, Any]], experiment: str) -> list[Mapping[str, Any]]:
    """The finished games of ``experiment``, one per job: its last finished attempt (in the given order)."""
    by_job: dict[str, Mapping[str, Any]] = {}
    for record in records:
        if (
            record.get("experiment") != experiment
            or record.get("source") != "experiment"
            or record.get("status") != "finished"
        ):
            continue
        job = str(record.get("job_key") or record["game_id"])
        kept = by_job.get(job)
        if kept is None or _attempt(record) >= _attempt(kept):
            by_job[job] = record
    chosen = {id(r) for r in by_job.values()}
    return [r for r in records if id(r) in chosen]


def _attempt(record: Mapping[str, Any]) -> int:
    attempt = record.get("attempt")
    return attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 0


def _read_store(store: Store, game_ids: list[str], rules: RulesArg) -> Iterator[GameLog]:
    try:
        for game_id in game_ids:
            try:
                yield load_game_log(store, game_id, rules=rules).log
            except (ExportError, StoreError) as exc:
                raise AnalysisError(
                    "store_failed", f"game {game_id!r}: {exc.message}", {"game_id": game_id}
                ) from exc
    finally:
        store.close()


class _RuleFinder:
    """Each game's rule set for scoring its reports, found once per name; None (and a warning) if missing
    or not the one the game was played with."""

    def __init__(self, rules: RulesArg) -> None:
        self._rules = rules
        self._found: dict[str, RuleSet | None] = {}
        self._loaded: dict[str, RuleSet] = {}

    def named(self, name: str) -> RuleSet:
        """The rule set called ``name``, loaded once (a store's games replay with it)."""
        if name not in self._loaded:
            loader = self._rules if callable(self._rules) else load_rule_set
            self._loaded[name] = loader(name)
        return self._loaded[name]

    def __call__(self, game_log: GameLog) -> RuleSet | None:
        name = game_log.header.ruleset.name
        if isinstance(self._rules, RuleSet):
            rule_set: RuleSet | None = self._rules
        else:
            if name not in self._found:
                try:
                    self._found[name] = self.named(name)
                except (RuleSetError, KeyError, OSError) as exc:
                    log.warning("rule set %r not found (%s): its games get no tom_values", name, exc)
                    self._found[name] = None
            rule_set = self._found[name]
        if rule_set is None:
            return None
        expected = game_log.header.ruleset.content_hash
        if expected and expected != rule_set.content_hash:
            log.warning("game %s was played with another %r: no tom_values", game_log.game_id, name)
            return None
        return rule_set


# ------------------------------------------------------------------------------------------- the columns
def _add_experiment(row: dict[str, Any], game_log: GameLog) -> None:
    meta = game_log.header.meta
    for key in EXPERIMENT_COLUMNS:
        value = meta.get(key)
        row[key] = value if value is None or isinstance(value, int | str) else json.dumps(value)


def group_of(orders: Iterable[int]) -> str:
    """The analysis group of a seat reporting ``orders``: ``"V0+V1"`` for (0, 1), ``"none"`` for ()."""
    return "+".join(f"V{order}" for order in sorted(orders)) or "none"


def agent_of(record: Mapping[str, Any]) -> str | None:
    """Who played a seat as the analysis groups it: the ``agent`` label the experiment runner stores (the
    model or bot with its persona and reasoning mode, without the ToM orders: ``gpt-4o fair cot``), else its
    model, else its bot spec, else its name."""
    for key in ("agent", "model", "bot", "name"):
        if record.get(key):
            return str(record[key])
    return None


def _add_seat_groups(seat_rows: list[dict[str, Any]], game_log: GameLog) -> None:
    """Add :data:`SEAT_COLUMNS` to the seat rows of ``game_log``."""
    records = {s.get("seat"): s for s in game_log.header.seats if isinstance(s, Mapping)}
    raw_orders = game_log.header.settings.get("tom_orders") or []
    for row in seat_rows:
        seat = row["seat"]
        record = records.get(seat) or {}
        orders = tuple(int(o) for o in raw_orders[seat]) if seat < len(raw_orders) else ()
        row.update(
            agent=agent_of(record),
            tom_orders=orders,
            group=group_of(orders),
            focal=record.get("focal") is not False,  # only a seat stored as not focal is left out
        )


def _parse_json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value else None


def _frame(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with the table's columns in order, JSON cells parsed and the declared dtypes."""
    frame = pd.DataFrame.from_records(rows, columns=list(columns(name)))
    for column in JSON_COLUMNS.get(name, ()):
        frame[column] = frame[column].map(_parse_json).astype(object)
    return typed(frame)


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the dtypes of :data:`DTYPES` on the columns it has; other text columns as strings."""
    for column in frame.columns:
        dtype = DTYPES.get(column)
        if dtype is not None:
            values = frame[column]
            if dtype == "Int64":
                values = pd.to_numeric(values, errors="coerce")
            elif column == "runs":  # exact quantities as the log writes them: 2, "1/4"
                values = values.map(lambda v: None if v is None else float(Fraction(str(v))))
            frame[column] = values.astype(dtype)
        elif frame[column].map(_is_text_or_missing).all():
            frame[column] = frame[column].astype("string")
    return frame


def _is_text_or_missing(value: Any) -> bool:
    return (
        isinstance(value, str)
        or value is None
        or value is pd.NA
        or (isinstance(value, float) and value != value)
    )


def _flatten(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose dict, list and tuple cells are compact JSON text (what CSV and Parquet can hold)."""
    flat = frame.copy()
    for column in flat.columns:
        if flat[column].dtype == object:
            flat[column] = flat[column].map(
                lambda v: (
                    json.dumps(list(v) if isinstance(v, tuple) else v, sort_keys=True, separators=(",", ":"))
                    if isinstance(v, dict | list | tuple)
                    else v
                )
            )
    return flat
