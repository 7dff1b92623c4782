"""Tidy tables from game logs: one row per observation, one CSV per table, columns declared once.

Built from :class:`server.game.gamelog.GameLog` alone (no store, no replay), so a game exported by the
server and one played headless give the same rows. Tables (:data:`COLUMNS`):

- ``games``: one row per game (instance, seed, seats, outcome, size of the log).
- ``seats``: one row per seat of a game (who played it, its target and hands, whether it won).
- ``turns``: one row per turn (proposer, outcome, partner, timing, hands after the reveal).
- ``proposals``: one row per proposal, with how it was decided.
- ``decisions``: one row per decision on a proposal.
- ``crafts``: one row per craft.
- ``tom_reports``: one row per reported value (seat, order, opponent, item).

JSON-valued cells (offers, hands, choices) hold compact JSON; booleans are ``true``/``false``; missing values
are empty. ``latency_s`` is the seat's response latency as the log records it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from server.game.gamelog import GameLog

#: Columns of every table, declared once.
COLUMNS: dict[str, tuple[str, ...]] = {
    "games": (
        "game_id", "source", "status", "mode", "hall", "ruleset", "ruleset_hash", "instance_id", "seed",
        "players", "seat_kinds", "seat_names", "seat_models", "created_at", "finished_at", "turns",
        "winners", "end_reason", "events", "replay_ok",
    ),
    "seats": (
        "game_id", "seat", "kind", "name", "bot", "model", "prompt_version", "target", "initial_hand",
        "final_hand", "won",
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


def _units(counts: Mapping[str, Any]) -> int:
    return sum(int(v) for v in counts.values())


def _json_cell(value: Any) -> str:
    return (
        "" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    )


def game_rows(log: GameLog) -> dict[str, list[dict[str, Any]]]:
    """One game's rows for every table of :data:`COLUMNS` (values not yet turned into CSV text)."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in COLUMNS}
    gid = log.game_id
    turn = 0
    turn_rows: dict[int, dict[str, Any]] = {}
    proposal_rows: dict[int, dict[str, Any]] = {}  # by turn (one proposal per turn at most)
    last_time: float | None = None
    final_hands: list[Any] | None = None
    ended: Mapping[str, Any] | None = None
    for event, stamp, latency in zip(log.events, log.times, log.latencies, strict=True):
        kind, payload, seq = event.type, event.payload, event.seq
        common = {"game_id": gid, "seq": seq, "time": stamp}
        if isinstance(payload.get("turn"), int):
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
        elif kind == "hands_revealed":
            final_hands = payload.get("hands")
            if current_turn is not None:
                current_turn["hands_after"] = _json_cell(final_hands)
        elif kind == "trade_executed":
            final_hands = None  # hands changed since the last reveal: read them from the summary if any
        if kind == "game_ended":
            ended = payload
        if (
            kind in ("turn_ended", "game_ended")
            and current_turn is not None
            and current_turn["ended_at"] is None
        ):
            current_turn["ended_at"] = stamp
            if isinstance(stamp, int | float) and isinstance(current_turn["started_at"], int | float):
                current_turn["duration_s"] = round(stamp - current_turn["started_at"], 6)
        if stamp is not None:
            last_time = stamp
    winners = _winners(log, ended)
    rows["games"].append(_game_row(log, len(turn_rows), last_time, winners, ended))
    rows["seats"].extend(_seat_rows(log, winners, _final_hands(log, final_hands)))
    return rows


def _winners(log: GameLog, ended: Mapping[str, Any] | None) -> list[int] | None:
    if ended is not None:
        return [int(s) for s in ended.get("winners") or []]
    if log.summary is not None and log.summary.winners is not None:
        return list(log.summary.winners)
    return None


def _final_hands(log: GameLog, revealed: list[Any] | None) -> list[Any] | None:
    final_state = log.summary.final_state if log.summary is not None else None
    if isinstance(final_state, Mapping) and isinstance(final_state.get("hands"), list):
        return list(final_state["hands"])
    return revealed


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


def _seat_records(log: GameLog) -> list[Mapping[str, Any]]:
    return [s for s in log.header.seats if isinstance(s, Mapping)]


def _game_row(
    log: GameLog,
    turns: int,
    last_time: float | None,
    winners: list[int] | None,
    ended: Mapping[str, Any] | None,
) -> dict[str, Any]:
    header = log.header
    seats = _seat_records(log)
    instance = header.instance
    players = len(instance.hands) if instance is not None else len(seats)
    replay = log.summary.replay if log.summary is not None else {}
    return {
        "game_id": log.game_id,
        "source": header.source,
        "status": header.status,
        "mode": instance.mode if instance is not None else header.meta.get("mode"),
        "hall": header.meta.get("hall"),
        "ruleset": header.ruleset.name,
        "ruleset_hash": header.ruleset.content_hash,
        "instance_id": instance.id if instance is not None else None,
        "seed": header.seeds.get("game"),
        "players": players,
        "seat_kinds": ";".join(str(s.get("kind") or "") for s in seats),
        "seat_names": ";".join(str(s.get("name") or "") for s in seats),
        "seat_models": ";".join(str(s.get("model") or s.get("bot") or "") for s in seats),
        "created_at": header.created_at,
        "finished_at": header.finished_at or (last_time if ended is not None else None),
        "turns": turns,
        "winners": ";".join(str(s) for s in winners) if winners is not None else None,
        "end_reason": ended.get("reason") if ended is not None else None,
        "events": len(log.events),
        "replay_ok": replay.get("ok") if replay else None,
    }


def _seat_rows(
    log: GameLog, winners: list[int] | None, final_hands: list[Any] | None
) -> Iterator[dict[str, Any]]:
    instance = log.header.instance
    by_seat = {s.get("seat"): s for s in _seat_records(log)}
    players = len(instance.hands) if instance is not None else len(by_seat)
    for seat in range(players):
        record = by_seat.get(seat) or {}
        yield {
            "game_id": log.game_id,
            "seat": seat,
            "kind": record.get("kind"),
            "name": record.get("name"),
            "bot": record.get("bot"),
            "model": record.get("model"),
            "prompt_version": record.get("prompt_version"),
            "target": _json_cell(instance.targets[seat]) if instance is not None else None,
            "initial_hand": _json_cell(instance.hands[seat]) if instance is not None else None,
            "final_hand": _json_cell(final_hands[seat]) if final_hands and seat < len(final_hands) else None,
            "won": (seat in winners) if winners is not None else None,
        }


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return _json_cell(value)
    return value


def table_rows(logs: Iterable[GameLog]) -> dict[str, list[dict[str, Any]]]:
    """Rows of every table over ``logs``, game after game."""
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in COLUMNS}
    for log in logs:
        for name, rows in game_rows(log).items():
            tables[name].extend(rows)
    return tables


def csv_tables(logs: Iterable[GameLog]) -> dict[str, str]:
    """CSV text per table name (see :data:`COLUMNS`), rows of every game in ``logs`` in that order."""
    out: dict[str, str] = {}
    for name, rows in table_rows(logs).items():
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=COLUMNS[name], lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({column: _cell(row.get(column)) for column in COLUMNS[name]})
        out[name] = buffer.getvalue()
    return out
