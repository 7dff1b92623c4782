"""Exports of stored games: the researcher game log per game, tidy CSV tables, participant-safe JSONL.

Functions the admin area and ``tradecraft export`` call (each reads the store and replays the game with
``server.game``):

- :func:`export_game_jsonl` — everything about one game in the researcher game-log format of
  :mod:`server.game.gamelog` (the same format headless games write): header, events with server times and
  response latencies, the ``trace`` records its bots and LLM agents left (``Store.load_traces``: prompts,
  completions, token counts, beliefs; each with ``seat``, ``event_seq``, ``time``), a summary with the final
  researcher view.
- :func:`export_csv_tables` — the tidy tables of :mod:`analysis.tables` across games, built from those logs
  (traces and ToM reports included, and ``tom_values`` beside their references).
- :func:`export_participant` — one game as one seat saw it: only events visible to that seat, its own target,
  no other seat's model, prompt, user id or latency, no seeds, never a trace record (not even the seat's
  own: a policy's trace may hold what it inferred about the others); ends with that seat's final view.

Exports never carry credentials: keys that look like tokens, passwords, secrets or cookies are dropped from
any stored metadata before it is written.

Participant JSONL: a ``header`` (game, seat, rule set, instance id, public rules, ``your_target``, the seats'
public names and kinds), the ``event`` records visible to the seat (latency only on its own actions) and a
final ``view`` record: exactly ``server.game.views.player_view(game, seat)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from analysis.tables import csv_tables
from craft_rules.model import RuleSet
from craft_rules.provenance import package_versions
from server.game import Game
from server.game.events import viewer_log, visible_to
from server.game.gamelog import (
    GameLog,
    encode_log,
)
from server.game.views import player_view
from server.store import Store, StoreError
from server.table.game_logs import ExportError, load_game_log

#: Version of the participant export format. Bump on any change a reader would notice. (The researcher
#: export is the game log: ``server.game.gamelog.GAME_LOG_SCHEMA_VERSION``.)
PARTICIPANT_SCHEMA_VERSION = 1


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def tradecraft_version() -> str:
    return package_versions().get("tradecraft", "unknown")


# --------------------------------------------------------------------------------------- researcher JSONL
def export_game_jsonl(
    store: Store, game_id: str, *, rules: RuleSet | Callable[[str], RuleSet] | None = None
) -> Iterator[str]:
    """Everything about one game as game-log lines (each ending in a newline): header, events, summary.

    Raises :class:`ExportError` ``unknown_game`` before yielding anything.
    """
    return encode_log(load_game_log(store, game_id, rules=rules).log)


# ------------------------------------------------------------------------------------------ participant
def export_participant(
    store: Store, game_id: str, seat: int, *, rules: RuleSet | Callable[[str], RuleSet] | None = None
) -> Iterator[str]:
    """One game as ``seat`` saw it, as JSON lines: header, the events visible to the seat, its final view.

    Raises :class:`ExportError` ``unknown_game`` / ``unknown_seat`` / ``replay_failed`` before yielding
    anything: a participant export is built from the seat's view, so it needs a game that replays.
    """
    stored = load_game_log(store, game_id, rules=rules, traces=False)  # never in a participant's export
    if stored.game is None:
        raise ExportError(
            "replay_failed",
            f"game {game_id!r} cannot be replayed ({(stored.replay_error or {}).get('message')}), so no "
            "participant view can be built; export it for researchers instead",
            {"game_id": game_id, "error": stored.replay_error},
        )
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < stored.game.players:
        raise ExportError(
            "unknown_seat",
            f"seat {seat!r} is not a player of game {game_id!r}; seats are 0..{stored.game.players - 1}",
            {"game_id": game_id, "seat": seat},
        )
    return _participant_lines(stored.log, stored.game, seat)


def _participant_lines(log: GameLog, game: Game, seat: int) -> Iterator[str]:
    public_seats = [
        {
            "seat": s.get("seat"),
            "kind": s.get("kind"),
            "name": s.get("name"),
            "bot": s.get("bot") or s.get("takeover"),
        }
        for s in log.header.seats
    ]
    view = player_view(game, seat)
    header = {
        "record": "header",
        "export": "participant",
        "schema_version": PARTICIPANT_SCHEMA_VERSION,
        "exported_at": _now_iso(),
        "tradecraft_version": tradecraft_version(),
        "game_id": log.game_id,
        "seat": seat,
        "status": log.header.status,
        "mode": log.header.instance.mode if log.header.instance is not None else None,
        "ruleset": view["ruleset"],
        "instance_id": game.instance.id,  # exports keep it; views do not
        "players": view["players"],
        "max_turns": view["max_turns"],
        "rules": view["rules"],
        "your_target": view["target"],
        "seats": public_seats,
    }
    yield _line(header)
    # exactly the events the seat received while playing (viewer_log): numbered by its own log (``n``)
    # since global seqs would count, by their gaps, other seats' private events; researcher-only keys dropped
    visible = [i for i, event in enumerate(log.events) if visible_to(event, seat)]
    received = viewer_log([log.events[i] for i in visible], seat)
    for index, record in zip(visible, received, strict=True):
        own = log.events[index].actor == seat
        latency = log.latencies[index] if own else None
        yield _line({"record": "event", **record, "time": log.times[index], "latency": latency})
    yield _line({"record": "view", **view})


def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"


# ------------------------------------------------------------------------------------------------- CSV
def export_csv_tables(
    store: Store,
    game_ids: Iterable[str],
    *,
    rules: RuleSet | Callable[[str], RuleSet] | None = None,
    progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
    for_spreadsheets: bool = True,
) -> dict[str, str]:
    """CSV text per table of :mod:`analysis.tables`, rows of every game in ``game_ids`` in that order.

    Researchers' tables: besides the game's own, ``traces`` (one tidy row per trace record: token counts,
    latencies, errors, a prompt's size but never its text), ``tom_reports`` and ``tom_values`` (each
    reported value beside its reference value, for the games that replay with their rule set).
    ``progress`` may wrap the game ids (e.g. ``tqdm``). ``for_spreadsheets``: text cells that start like a
    formula get a leading apostrophe (analysis.tables.spreadsheet_safe); false when a program converts them.
    """
    ids = list(game_ids)
    rule_sets: dict[str, RuleSet] = {}

    def logs() -> Iterator[GameLog]:
        for game_id in progress(ids) if progress else ids:
            stored = load_game_log(store, game_id, rules=rules)
            if stored.game is not None:  # replayed: its rule set loaded and matches the game's
                rule_sets[stored.game_id] = stored.game.rules
            yield stored.log

    return csv_tables(
        logs(), rules_of=lambda log: rule_sets.get(log.game_id), for_spreadsheets=for_spreadsheets
    )


# ------------------------------------------------------------------------------------------------- CLI
def _safe_name(game_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", game_id) or "_"


@click.command("export")
@click.option("--store", "store_url", required=True, help="store URL, e.g. sqlite:///ABS/PATH/tradecraft.db")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="output directory",
)
@click.option("--game", "game_ids", multiple=True, help="game id to export (repeatable; default: every game)")
@click.option("--status", default=None, help="with no --game: only games with this status (e.g. finished)")
@click.option("--participant", "seat", type=int, default=None, help="participant-safe export for this seat")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
def export_command(
    store_url: str, out_dir: Path, game_ids: tuple[str, ...], status: str | None, seat: int | None, fmt: str
) -> None:
    """Export games: researcher JSONL per game, flat CSV tables, or a participant-safe JSONL per game."""
    from tqdm import tqdm

    from server.store import open_store

    if seat is not None and fmt != "jsonl":
        raise click.UsageError("--participant exports are JSON lines: drop --format csv")
    try:
        store = open_store(store_url)
    except StoreError as exc:
        raise click.ClickException(exc.message) from exc
    try:
        ids = list(game_ids) or [g["game_id"] for g in store.list_games(status=status, limit=10**9)]
        out_dir.mkdir(parents=True, exist_ok=True)
        bar: Callable[[Iterable[str]], Iterable[str]] = lambda items: tqdm(  # noqa: E731
            items, desc="games", unit="game", disable=None
        )
        written: list[Path] = []
        if fmt == "csv":
            for name, text in export_csv_tables(store, ids, progress=bar).items():
                path = out_dir / f"{name}.csv"
                path.write_text(text, encoding="utf-8")
                written.append(path)
        else:
            for game_id in bar(ids):
                if seat is None:
                    lines = export_game_jsonl(store, game_id)
                    path = out_dir / f"{_safe_name(game_id)}.jsonl"
                else:
                    lines = export_participant(store, game_id, seat)
                    path = out_dir / f"{_safe_name(game_id)}.seat{seat}.jsonl"
                with path.open("w", encoding="utf-8") as handle:
                    handle.writelines(lines)
                written.append(path)
    except (ExportError, StoreError) as exc:
        raise click.ClickException(exc.message) from exc
    finally:
        store.close()
    click.echo(f"exported {len(ids)} game(s) to {len(written)} file(s) in {out_dir}")
