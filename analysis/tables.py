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
- ``traces``: one row per trace record a policy left (see below).
- ``tom_values`` (only with a rule set, :func:`csv_tables` ``rules_of``): every reported value beside its
  reference value, :data:`analysis.tom_scores.COLUMNS`.

JSON-valued cells (:data:`JSON_COLUMNS`: offers, hands, choices) hold compact JSON; booleans are
``true``/``false``; missing values are empty. ``latency_s`` is the seat's response latency as the log
records it; on ``seats``, ``responses`` counts the seat's events that have one and ``response_s`` sums them
(empty when the log has no times).

``traces`` columns, tidy and small (a prompt's size, never the prompt):

- ``game_id``, ``seat``, ``event_seq`` (the event the move led to; empty for a move the engine refused),
  ``time``;
- ``source`` (``llm`` for the LLM agent, ``bot`` for a bot's record), ``kind`` (the LLM agent's record
  type: ``llm_prefix``, ``llm_call``, ``tool_results``, ``tool_error``, ``decision``, ``refused``,
  ``fallback``; a bot's ``event``: ``belief_update``, ``propose``, ``decide``, ``report``), ``policy`` (a
  bot's name), ``model`` (as the agent named it), ``decision`` (the move key an LLM record belongs to),
  ``step`` (the model call's number within the move), ``turn`` (a bot's record);
- ``prompt_messages`` / ``prompt_chars`` (the messages an ``llm_call`` sent after the stable prefix, and
  their JSON length; for ``llm_prefix`` the system prompt's length), ``completion_chars``,
  ``reasoning_chars``;
- ``prompt_tokens``, ``cached_prompt_tokens``, ``completion_tokens``, ``tokens_source`` (``provider`` or
  ``o200k``): an ``llm_call``'s own counts only (a ``decision`` record's running totals are left out, so
  summing the column never counts a call twice); ``prefix_tokens`` (the ``llm_prefix``'s o200k count);
- ``latency_s`` (an ``llm_call``'s wall time), ``retries`` (its provider retries), ``invalid`` (invalid
  actions so far in the move, on ``decision`` and ``fallback`` records), ``error`` (the code of a refusal,
  tool error or failed call), ``reason`` (why a fallback was played), ``finish_reason``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from analysis.tom_scores import COLUMNS as TOM_VALUE_COLUMNS
from analysis.tom_scores import tom_score_rows
from craft_rules.model import RuleSet
from server.game.gamelog import GameLog, TraceRecord
from server.table.costs import call_model

#: Columns of every table, declared once.
COLUMNS: dict[str, tuple[str, ...]] = {
    "games": (
        "game_id", "source", "status", "mode", "hall", "ruleset", "ruleset_hash", "instance_id", "seed",
        "players", "seat_kinds", "seat_names", "seat_models", "created_at", "finished_at", "turns",
        "winners", "end_reason", "events", "replay_ok",
    ),
    "seats": (
        "game_id", "seat", "kind", "name", "bot", "model", "prompt_version", "target", "initial_hand",
        "final_hand", "won", "won_turn", "responses", "response_s",
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
    "traces": (
        "game_id", "seat", "event_seq", "time", "source", "kind", "policy", "model", "decision", "step",
        "turn", "prompt_messages", "prompt_chars", "completion_chars", "reasoning_chars", "prompt_tokens",
        "cached_prompt_tokens", "completion_tokens", "tokens_source", "prefix_tokens", "latency_s", "retries",
        "invalid", "error", "reason", "finish_reason",
    ),
}  # fmt: skip

#: Cells holding compact JSON (objects or lists) in the CSV text, per table.
JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "seats": ("target", "initial_hand", "final_hand"),
    "turns": ("hands_after",),
    "proposals": ("offer", "request"),
    "crafts": ("choices", "consumed", "produced"),
}


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
    won_turns = {int(e.payload["seat"]): int(e.payload["turn"]) for e in log.events if e.type == "player_won"}
    rows["seats"].extend(_seat_rows(log, winners, _final_hands(log, final_hands), won_turns))
    rows["traces"].extend(trace_row(gid, trace) for trace in log.traces)
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
    log: GameLog, winners: list[int] | None, final_hands: list[Any] | None, won_turns: Mapping[int, int]
) -> Iterator[dict[str, Any]]:
    instance = log.header.instance
    by_seat = {s.get("seat"): s for s in _seat_records(log)}
    players = len(instance.hands) if instance is not None else len(by_seat)
    responses: dict[int, list[float]] = {}
    for event, latency in zip(log.events, log.latencies, strict=True):
        if event.actor is not None and latency is not None:
            responses.setdefault(event.actor, []).append(latency)
    for seat in range(players):
        record = by_seat.get(seat) or {}
        latencies = responses.get(seat, [])
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
            "won_turn": won_turns.get(seat),  # in an all_win game a seat may win before the game ends
            "responses": len(latencies),
            "response_s": round(sum(latencies), 6) if latencies else None,
        }


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text_length(value: Any) -> int | None:
    """Characters of a message's content (text as it is, anything else as JSON); None for no content."""
    if value is None:
        return None
    if isinstance(value, Mapping) and "content" in value:
        value = value["content"]
    return len(value) if isinstance(value, str) else len(_json_cell(value))


def trace_row(game_id: str, trace: TraceRecord) -> dict[str, Any]:
    """One trace record as a row of the ``traces`` table (sizes and counts, never the prompt itself)."""
    record = trace.model_dump(mode="json")
    kind = record.get("trace") or record.get("event") or record.get("trace_kind")
    source = record.get("source") or ("bot" if "policy" in record else None)
    tokens = record.get("tokens")
    call_tokens = tokens if kind == "llm_call" and isinstance(tokens, Mapping) else {}
    prompt = record.get("prompt")
    error = record.get("error")
    if kind == "llm_call" and "completion" in record and record["completion"] is None:
        error = {"code": "no_completion"}  # the call failed after its retries
    retries = record.get("provider_retries")
    invalid = record.get("invalid") if kind == "decision" else None
    if kind == "fallback" and isinstance(record.get("errors"), list):
        invalid = len(record["errors"])
    return {
        "game_id": game_id,
        "seat": trace.seat,
        "event_seq": trace.event_seq,
        "time": trace.time,
        "source": source,
        "kind": kind,
        "policy": record.get("policy"),
        "model": call_model(record) if kind == "llm_call" else record.get("model"),
        "decision": record.get("decision") if isinstance(record.get("decision"), str) else None,
        "step": _count(record.get("step")),
        "turn": _count(record.get("turn")),
        "prompt_messages": len(prompt) if isinstance(prompt, list) else None,
        "prompt_chars": len(_json_cell(prompt)) if prompt is not None else _text_length(record.get("system")),
        "completion_chars": _text_length(record.get("completion")),
        "reasoning_chars": _text_length(record.get("reasoning")),
        "prompt_tokens": _count(call_tokens.get("prompt_tokens")),
        "cached_prompt_tokens": _count(call_tokens.get("cached_prompt_tokens")),
        "completion_tokens": _count(call_tokens.get("completion_tokens")),
        "tokens_source": call_tokens.get("source"),
        "prefix_tokens": _count(tokens) if kind == "llm_prefix" else None,
        "latency_s": record.get("latency_s") if isinstance(record.get("latency_s"), int | float) else None,
        "retries": len(retries) if kind == "llm_call" and isinstance(retries, list) else None,
        "invalid": _count(invalid),
        "error": str(error.get("code")) if isinstance(error, Mapping) else (str(error) if error else None),
        "reason": record.get("reason") if kind == "fallback" else None,
        "finish_reason": record.get("finish_reason"),
    }


#: Text a spreadsheet reads as a formula when a cell starts with it (CSV injection: "=HYPERLINK(...)" in a
#: chat message or a questionnaire answer would run in the researcher's Excel, LibreOffice or Sheets).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet runs: text starting like a formula gets a leading apostrophe
    (OWASP's advice; spreadsheets hide it, pandas keeps it). Numbers and other values pass unchanged. Every
    CSV the project writes goes through this; Parquet files and JSON lines hold the text as it was."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return _json_cell(value)
    return value


#: What finds a game's rule set for its ``tom_values`` (None: that game has none).
RulesOf = Callable[[GameLog], RuleSet | None]


def table_rows(
    logs: Iterable[GameLog], *, rules_of: RulesOf | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Rows of every table over ``logs``, game after game; with ``rules_of``, a ``tom_values`` table too."""
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in COLUMNS}
    if rules_of is not None:
        tables["tom_values"] = []
    for log in logs:
        for name, rows in game_rows(log).items():
            tables[name].extend(rows)
        rules = rules_of(log) if rules_of is not None else None
        if rules is not None:
            tables["tom_values"].extend(tom_score_rows(log, rules))
    return tables


def table_columns(name: str) -> tuple[str, ...]:
    """The columns of table ``name``: :data:`COLUMNS`, or ``tom_values``'s from :mod:`analysis.tom_scores`."""
    return TOM_VALUE_COLUMNS if name == "tom_values" else COLUMNS[name]


def csv_tables(
    logs: Iterable[GameLog], *, rules_of: RulesOf | None = None, for_spreadsheets: bool = True
) -> dict[str, str]:
    """CSV text per table name (see :data:`COLUMNS`), rows of every game in ``logs`` in that order; text
    cells made :func:`spreadsheet_safe` unless ``for_spreadsheets`` is false (a program reads it back).

    ``rules_of`` gives each game's rule set: with it there is a ``tom_values`` table too (reported ToM
    values beside their references), with rows for the games it finds a rule set for.
    """
    out: dict[str, str] = {}
    for name, rows in table_rows(logs, rules_of=rules_of).items():
        columns = table_columns(name)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            cells = {column: _cell(row.get(column)) for column in columns}
            writer.writerow({k: spreadsheet_safe(v) for k, v in cells.items()} if for_spreadsheets else cells)
        out[name] = buffer.getvalue()
    return out
