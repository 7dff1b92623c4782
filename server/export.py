"""Exports of stored games: researcher JSONL per game, flat CSV tables across games, participant-safe JSONL.

Functions the admin area calls (each reads the store and replays the log with ``server.game``):

- :func:`export_game_jsonl` — everything about one game: a header record, one record per event (with the
  server time and the actor's response latency), and a summary record with the final researcher view.
- :func:`export_csv_tables` — flat tables across games: games, turns, proposals, decisions, crafts,
  tom_reports (one row per item value per order).
- :func:`export_participant` — one game as one seat saw it: only events visible to that seat, its own target,
  no other seat's model, prompt, user id or latency, no seeds; ends with that seat's final view.

The ``tradecraft export`` command writes them to a directory. Exports never carry credentials: keys that look
like tokens, passwords, secrets or cookies are dropped from any stored metadata before it is written.

Response latency (``latency``, seconds) is defined on the replayed game: a seat starts waiting when it enters
``Game.waiting_for()`` (or right after its own previous action while it stays awaited, e.g. between crafts);
the first event of the seat's next action gets ``latency = time(event) - time(start of waiting)``. Follow-up
events of the same action (same actor, same stored time), system events and events a seat causes while not
awaited (e.g. resigning) have ``latency: null``.

Researcher JSONL records (one JSON object per line, ``record`` says which):

- ``header``: export ("researcher"), schema_version, exported_at (ISO 8601 UTC), tradecraft_version, game_id,
  status, mode, hall, ruleset, instance_id, created_at/started_at/finished_at/updated_at, settings (the
  GameSettings snapshot), seeds ({"game": seed, plus any ``<name>_seed`` metadata}), seats (as stored, minus
  credentials), models ([{seat, model, prompt_version, ...}] for seats that carry them), instance ({hands,
  targets}), events (count), replay ({ok, error}), meta (any other stored metadata).
- ``event``: the stored event (seq, type, actor, payload, visibility, time) plus ``latency``.
- ``summary``: phase, turn, finished, winners, end_reason, log_digest, state_digest and final_state (the
  engine's researcher view) — only the counts when the game could not be replayed.

Participant JSONL: a ``header`` (game, seat, rule set, instance id, public rules, ``your_target``, the seats'
public names and kinds), the ``event`` records visible to the seat (latency only on its own actions) and a
final ``view`` record: exactly ``server.game.views.player_view(game, seat)``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.model import RuleSet
from craft_rules.tasks import TC_GAMES_DIR, TaskInstance, get_instance
from server.game import Game, GameError, GameSettings
from server.game.views import player_view, researcher_view
from server.store import Store, StoreError

#: Version of the export format. Bump on any change a reader would notice.
EXPORT_SCHEMA_VERSION = 1

#: Metadata keys whose values are never exported (matched anywhere in the key, case-insensitively).
CREDENTIAL_KEY = re.compile(r"token|passw|secret|api_?key|auth|cookie|session|credential|hash", re.IGNORECASE)

#: Seat metadata describing an agent's model and prompts, gathered into the header's ``models`` list.
MODEL_KEYS = (
    "model",
    "model_version",
    "provider",
    "prompt_version",
    "prompt_id",
    "persona",
    "reasoning",
    "agent",
)

#: Columns of every CSV table, declared once.
CSV_COLUMNS: dict[str, tuple[str, ...]] = {
    "games": (
        "game_id", "status", "mode", "hall", "ruleset", "instance_id", "seed", "players", "seat_kinds",
        "seat_names", "seat_models", "created_at", "finished_at", "turns", "winners", "end_reason", "events",
        "replay_ok",
    ),
    "turns": (
        "game_id", "turn", "proposer", "outcome", "partner", "started_at", "ended_at", "duration_s",
        "hands_after",
    ),
    "proposals": (
        "game_id", "turn", "seq", "time", "proposer", "to", "offer", "request", "offer_units",
        "request_units", "message", "status", "reply", "decision_reason", "latency_s",
    ),
    "decisions": (
        "game_id", "turn", "seq", "time", "proposer", "seat", "accept", "message", "reason", "latency_s",
    ),
    "crafts": (
        "game_id", "turn", "seq", "time", "seat", "recipe", "runs", "choices", "fuel", "consumed", "produced",
        "latency_s",
    ),
    "tom_reports": (
        "game_id", "turn", "seq", "time", "seat", "order", "opponent_seat", "item", "value", "latency_s",
    ),
}  # fmt: skip


class ExportError(Exception):
    """An export that cannot be made (unknown game or seat). ``code`` is machine-readable."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


# ------------------------------------------------------------------------------------------ loading a game
@dataclass
class GameLog:
    """One stored game, replayed: metadata, event records, the replayed Game (None if replay failed)."""

    game_id: str
    meta: dict[str, Any]
    events: list[dict[str, Any]]
    game: Game | None = None
    instance: TaskInstance | None = None
    replay_error: dict[str, Any] | None = None
    latencies: dict[int, float | None] = field(default_factory=dict)

    @property
    def players(self) -> int:
        if self.instance is not None:
            return self.instance.players
        return len(self.meta.get("seats") or [])


def _instance_for(meta: Mapping[str, Any], ruleset: str) -> TaskInstance:
    """The game's task instance: inline in the metadata (``instance``: {hands, targets}) or by its id."""
    instance_id = str(meta.get("instance_id") or "")
    inline = meta.get("instance")
    if isinstance(inline, Mapping) and "hands" in inline and "targets" in inline:
        hands = tuple({str(k): int(v) for k, v in hand.items()} for hand in inline["hands"])
        targets = tuple({str(k): int(v) for k, v in target.items()} for target in inline["targets"])
        mode = str(meta.get("mode") or "_v_".join(["1p"] * len(hands)))
        max_turn = inline.get("max_turn")
        return TaskInstance(
            instance_id,
            ruleset,
            mode,
            hands,
            targets,
            dict(inline.get("difficulty") or {}),
            max_turn=int(max_turn) if max_turn is not None else None,
        )
    root = meta.get("instance_root")
    return get_instance(instance_id, Path(root) if root else TC_GAMES_DIR)


def load_game_log(
    store: Store, game_id: str, *, rules: RuleSet | Callable[[str], RuleSet] | None = None
) -> GameLog:
    """Read a game and its events and replay them, computing response latencies.

    ``rules`` overrides how the rule set is found (a RuleSet, or a function of its name); by default it is
    ``craft_rules.loader.load_rule_set``. A game that cannot be replayed (missing instance or rule set, a log
    from another version) still exports its events; ``replay_error`` then says why.
    """
    meta = store.get_game(game_id)
    if meta is None:
        raise ExportError(
            "unknown_game",
            f"there is no game {game_id!r} in the store; list them with --status",
            {"game_id": game_id},
        )
    log = GameLog(game_id, dict(meta), list(store.load_events(game_id)))
    try:
        settings = GameSettings.model_validate(meta.get("settings") or {})
        ruleset = settings.ruleset or str(meta.get("ruleset") or "")
        rule_set = rules if isinstance(rules, RuleSet) else (rules or load_rule_set)(ruleset)
        log.instance = _instance_for(meta, ruleset)
        log.game, log.latencies = _replay_with_latencies(
            log.instance, settings, rule_set, int(meta.get("seed") or 0), log.events
        )
    except (GameError, RuleSetError, ValidationError, KeyError, ValueError, TypeError, OSError) as exc:
        code = exc.code if isinstance(exc, GameError) else type(exc).__name__
        log.replay_error = {"code": code, "message": str(exc)}
    return log


def _replay_with_latencies(
    instance: TaskInstance,
    settings: GameSettings,
    rules: RuleSet,
    seed: int,
    events: Sequence[Mapping[str, Any]],
) -> tuple[Game, dict[int, float | None]]:
    """Replay event by event, noting when each seat started waiting (see the module docstring)."""
    game = Game(instance, settings, rules, seed)
    waiting_since: dict[int, float] = {}
    latencies: dict[int, float | None] = {}
    previous: Mapping[str, Any] | None = None
    for record in events:
        waiting_before = game.waiting_for()
        actor, stamp = record.get("actor"), record.get("time")
        same_action = (
            previous is not None and previous.get("actor") == actor and previous.get("time") == stamp
        )
        latency = None
        responding = actor is not None and actor in waiting_before and actor in waiting_since
        if responding and not same_action and isinstance(stamp, int | float):
            latency = round(max(0.0, stamp - waiting_since[actor]), 6)
        latencies[int(record["seq"])] = latency
        game.apply_events([record])
        waiting_after = game.waiting_for()
        if isinstance(stamp, int | float):
            for seat in waiting_after:
                if seat not in waiting_before or seat == actor:
                    waiting_since[seat] = float(stamp)
        previous = record
    return game, latencies


# -------------------------------------------------------------------------------------------------- helpers
def _scrub(value: Any) -> Any:
    """Drop credential-like keys at any depth."""
    if isinstance(value, Mapping):
        return {k: _scrub(v) for k, v in value.items() if not CREDENTIAL_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def tradecraft_version() -> str:
    try:
        return metadata.version("tradecraft")
    except metadata.PackageNotFoundError:
        return "unknown"


def _seeds(meta: Mapping[str, Any]) -> dict[str, Any]:
    seeds: dict[str, Any] = {"game": meta.get("seed")}
    for key, value in meta.items():
        if key.endswith("_seed"):
            seeds[key[: -len("_seed")]] = value
    if isinstance(meta.get("seeds"), Mapping):
        seeds.update(meta["seeds"])
    return seeds


def _models(seats: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    models = []
    for seat in seats:
        found = {key: seat[key] for key in MODEL_KEYS if seat.get(key) is not None}
        if found:
            models.append({"seat": seat.get("seat"), **found})
    return models


_HEADER_META_KEYS = (
    "status", "mode", "hall", "ruleset", "instance_id", "created_at", "started_at", "finished_at",
    "updated_at",
)  # fmt: skip


#: Metadata already in the header under its own key (the rest is carried under "meta").
_HEADER_EXCLUDED_META = frozenset((*_HEADER_META_KEYS, "game_id", "seed", "settings", "seats", "instance"))


# --------------------------------------------------------------------------------------- researcher JSONL
def export_game_jsonl(
    store: Store, game_id: str, *, rules: RuleSet | Callable[[str], RuleSet] | None = None
) -> Iterator[str]:
    """Everything about one game as JSON lines (each ending in a newline): header, events, summary.

    Raises :class:`ExportError` ``unknown_game`` before yielding anything.
    """
    log = load_game_log(store, game_id, rules=rules)
    return _researcher_lines(log)


def _researcher_lines(log: GameLog) -> Iterator[str]:
    meta = _scrub(log.meta)
    seats = meta.get("seats") or []
    header: dict[str, Any] = {
        "record": "header",
        "export": "researcher",
        "schema_version": EXPORT_SCHEMA_VERSION,
        "exported_at": _now_iso(),
        "tradecraft_version": tradecraft_version(),
        "game_id": log.game_id,
        **{key: meta.get(key) for key in _HEADER_META_KEYS},
        "settings": meta.get("settings"),
        "seeds": _seeds(meta),
        "seats": seats,
        "models": _models(seats),
        "instance": log.instance.to_json() if log.instance is not None else meta.get("instance"),
        "events": len(log.events),
        "replay": {"ok": log.replay_error is None, "error": log.replay_error},
        "meta": {k: v for k, v in meta.items() if k not in _HEADER_EXCLUDED_META},
    }
    yield _line(header)
    for record in log.events:
        yield _line({"record": "event", **record, "latency": log.latencies.get(int(record["seq"]))})
    summary: dict[str, Any] = {"record": "summary", "game_id": log.game_id, "events": len(log.events)}
    if log.game is not None:
        game = log.game
        summary.update(
            {
                "phase": game.phase,
                "turn": game.turn,
                "finished": game.finished,
                "winners": game.winners,
                "end_reason": game.end_reason,
                "log_digest": game.log_digest(),
                "state_digest": game.state_digest(),
                "final_state": researcher_view(game),
            }
        )
    yield _line(summary)


# ------------------------------------------------------------------------------------------ participant
def export_participant(
    store: Store, game_id: str, seat: int, *, rules: RuleSet | Callable[[str], RuleSet] | None = None
) -> Iterator[str]:
    """One game as ``seat`` saw it, as JSON lines: header, the events visible to the seat, its final view.

    Raises :class:`ExportError` ``unknown_game`` / ``unknown_seat`` / ``replay_failed`` before yielding
    anything: a participant export is built from the seat's view, so it needs a game that replays.
    """
    log = load_game_log(store, game_id, rules=rules)
    if log.game is None:
        raise ExportError(
            "replay_failed",
            f"game {game_id!r} cannot be replayed ({(log.replay_error or {}).get('message')}), so no "
            "participant view can be built; export it for researchers instead",
            {"game_id": game_id, "error": log.replay_error},
        )
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < log.game.players:
        raise ExportError(
            "unknown_seat",
            f"seat {seat!r} is not a player of game {game_id!r}; seats are 0..{log.game.players - 1}",
            {"game_id": game_id, "seat": seat},
        )
    return _participant_lines(log, log.game, seat)


def _visible(record: Mapping[str, Any], seat: int) -> bool:
    visibility = record.get("visibility", "public")
    return visibility == "public" or (isinstance(visibility, list) and seat in visibility)


def _participant_lines(log: GameLog, game: Game, seat: int) -> Iterator[str]:
    seats = log.meta.get("seats") or []
    public_seats = [
        {
            "seat": s.get("seat"),
            "kind": s.get("kind"),
            "name": s.get("name"),
            "bot": s.get("bot") or s.get("takeover"),
        }
        for s in seats
        if isinstance(s, Mapping)
    ]
    view = player_view(game, seat)
    header = {
        "record": "header",
        "export": "participant",
        "schema_version": EXPORT_SCHEMA_VERSION,
        "exported_at": _now_iso(),
        "tradecraft_version": tradecraft_version(),
        "game_id": log.game_id,
        "seat": seat,
        "status": log.meta.get("status"),
        "mode": log.meta.get("mode"),
        "ruleset": view["ruleset"],
        "instance_id": game.instance.id,  # exports keep it; views do not
        "players": view["players"],
        "max_turns": view["max_turns"],
        "rules": view["rules"],
        "your_target": view["target"],
        "seats": public_seats,
    }
    yield _line(header)
    for record in log.events:
        if _visible(record, seat):
            own = record.get("actor") == seat
            yield _line(
                {
                    "record": "event",
                    **{
                        k: record[k]
                        for k in ("seq", "type", "actor", "payload", "visibility", "time")
                        if k in record
                    },
                    "latency": log.latencies.get(int(record["seq"])) if own else None,
                }
            )
    yield _line({"record": "view", **view})


# ------------------------------------------------------------------------------------------------- CSV
def _units(counts: Mapping[str, Any]) -> int:
    return sum(int(v) for v in counts.values())


def _json_cell(value: Any) -> str:
    return (
        "" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    )


def csv_rows(log: GameLog) -> dict[str, list[dict[str, Any]]]:
    """One game's rows for every table of :data:`CSV_COLUMNS` (values not yet stringified)."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in CSV_COLUMNS}
    gid = log.game_id
    turn = 0
    turn_rows: dict[int, dict[str, Any]] = {}
    proposal_rows: dict[int, dict[str, Any]] = {}  # by turn (one proposal per turn at most)
    last_time: float | None = None
    for record in log.events:
        kind, payload = record["type"], record.get("payload") or {}
        seq, stamp = record["seq"], record.get("time")
        latency = log.latencies.get(int(seq))
        common = {"game_id": gid, "seq": seq, "time": stamp}
        if "turn" in payload and isinstance(payload["turn"], int):
            turn = payload["turn"]
        if kind == "phase_started" and turn not in turn_rows:
            turn_rows[turn] = {
                "game_id": gid,
                "turn": turn,
                "proposer": payload.get("proposer"),
                "outcome": "in_progress",
                "partner": None,
                "started_at": stamp,
                "ended_at": None,
                "duration_s": None,
                "hands_after": None,
            }
            rows["turns"].append(turn_rows[turn])
        current_turn = turn_rows.get(turn)
        if kind == "passed" and current_turn is not None:
            current_turn["outcome"] = "passed"
        elif kind == "proposed":
            row = {
                **common,
                "turn": turn,
                "proposer": payload.get("proposer"),
                "to": payload.get("to"),
                "offer": _json_cell(payload.get("offer")),
                "request": _json_cell(payload.get("request")),
                "offer_units": _units(payload.get("offer") or {}),
                "request_units": _units(payload.get("request") or {}),
                "message": payload.get("message", ""),
                "status": "pending",
                "reply": None,
                "decision_reason": None,
                "latency_s": latency,
            }
            proposal_rows[turn] = row
            rows["proposals"].append(row)
            if current_turn is not None:
                current_turn.update(outcome="proposed", partner=payload.get("to"))
        elif kind == "decided":
            accept = bool(payload.get("accept"))
            rows["decisions"].append(
                {
                    **common,
                    "turn": turn,
                    "proposer": payload.get("proposer"),
                    "seat": payload.get("seat"),
                    "accept": accept,
                    "message": payload.get("message", ""),
                    "reason": payload.get("reason"),
                    "latency_s": latency,
                }
            )
            if turn in proposal_rows:
                proposal_rows[turn].update(
                    status="accepted" if accept else "rejected",
                    reply=payload.get("message", ""),
                    decision_reason=payload.get("reason"),
                )
            if current_turn is not None:
                current_turn["outcome"] = "traded" if accept else "rejected"
        elif kind == "proposal_cancelled":
            if turn in proposal_rows:
                proposal_rows[turn].update(status="cancelled", decision_reason=payload.get("reason"))
            if current_turn is not None:
                current_turn["outcome"] = "cancelled"
        elif kind == "crafted":
            rows["crafts"].append(
                {
                    **common,
                    "turn": turn,
                    "seat": payload.get("seat"),
                    "recipe": payload.get("recipe"),
                    "runs": payload.get("runs"),
                    "choices": _json_cell(payload.get("choices")),
                    "fuel": payload.get("fuel"),
                    "consumed": _json_cell(payload.get("consumed")),
                    "produced": _json_cell(payload.get("produced")),
                    "latency_s": latency,
                }
            )
        elif kind == "tom_reported":
            rows["tom_reports"].extend(_tom_rows(common, turn, payload, latency))
        elif kind == "hands_revealed" and current_turn is not None:
            current_turn["hands_after"] = _json_cell(payload.get("hands"))
        elif (
            kind in ("turn_ended", "game_ended")
            and current_turn is not None
            and current_turn["ended_at"] is None
        ):
            current_turn["ended_at"] = stamp
            if isinstance(stamp, int | float) and isinstance(current_turn["started_at"], int | float):
                current_turn["duration_s"] = round(stamp - current_turn["started_at"], 6)
        if isinstance(stamp, int | float):
            last_time = stamp
    rows["games"].append(_game_row(log, len(turn_rows), last_time))
    return rows


def _tom_rows(
    common: Mapping[str, Any], turn: int, payload: Mapping[str, Any], latency: float | None
) -> Iterator[dict[str, Any]]:
    seat = payload.get("seat")
    base = {**common, "turn": turn, "seat": seat, "latency_s": latency}
    for item, value in sorted((payload.get("v0") or {}).items()):
        yield {**base, "order": 0, "opponent_seat": None, "item": item, "value": value}
    for order, key in ((1, "v1"), (2, "v2")):
        for opponent, values in sorted((payload.get(key) or {}).items(), key=lambda kv: int(kv[0])):
            for item, value in sorted(values.items()):
                yield {**base, "order": order, "opponent_seat": int(opponent), "item": item, "value": value}


def _game_row(log: GameLog, turns: int, last_time: float | None) -> dict[str, Any]:
    meta = log.meta
    seats = [s for s in meta.get("seats") or [] if isinstance(s, Mapping)]
    game = log.game
    settings = meta.get("settings") or {}
    return {
        "game_id": log.game_id,
        "status": meta.get("status"),
        "mode": meta.get("mode"),
        "hall": meta.get("hall"),
        "ruleset": meta.get("ruleset") or settings.get("ruleset"),
        "instance_id": meta.get("instance_id"),
        "seed": meta.get("seed"),
        "players": log.players,
        "seat_kinds": ";".join(str(s.get("kind") or "") for s in seats),
        "seat_names": ";".join(str(s.get("name") or "") for s in seats),
        "seat_models": ";".join(str(s.get("model") or s.get("bot") or "") for s in seats),
        "created_at": meta.get("created_at"),
        "finished_at": meta.get("finished_at") or (last_time if game is not None and game.finished else None),
        "turns": turns,
        "winners": ";".join(str(s) for s in game.winners) if game is not None else None,
        "end_reason": game.end_reason if game is not None else None,
        "events": len(log.events),
        "replay_ok": log.replay_error is None,
    }


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return _json_cell(value)
    return value


def export_csv_tables(
    store: Store,
    game_ids: Iterable[str],
    *,
    rules: RuleSet | Callable[[str], RuleSet] | None = None,
    progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
) -> dict[str, str]:
    """CSV text per table name (see :data:`CSV_COLUMNS`), rows of every game in ``game_ids`` in that order.

    JSON-valued cells (offers, hands, choices) hold compact JSON; booleans are ``true``/``false``; missing
    values are empty. ``progress`` may wrap the game ids (e.g. ``tqdm``).
    """
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in CSV_COLUMNS}
    ids = list(game_ids)
    for game_id in progress(ids) if progress else ids:
        for name, rows in csv_rows(load_game_log(store, game_id, rules=rules)).items():
            tables[name].extend(rows)
    out: dict[str, str] = {}
    for name, columns in CSV_COLUMNS.items():
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in tables[name]:
            writer.writerow({column: _cell(row.get(column)) for column in columns})
        out[name] = buffer.getvalue()
    return out


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
