"""Trace records: what led to a policy's moves (prompts, completions, token counts, beliefs), kept with
the game for researchers, bounded and stripped of credentials before they are stored."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from server.game.events import visible_to
from server.game.gamelog import trace_fields
from server.store import Store, StoreError
from server.table.config import Settings
from server.table.errors import ServerError
from server.table.live import LiveGame
from server.table.principal import Principal

log = logging.getLogger(__name__)

MAX_TRACES_PER_REQUEST = 50
"""Trace records an agent may send in one request (each is bounded by ``bots.trace_max_bytes``)."""
TRACE_BATCHES_REMEMBERED = 10_000
"""Answers to trace batches kept (by batch id) so a batch resent after a dropped connection counts once."""


#: Environment variables whose values are credentials: their values are cut out of any trace text.
_SECRET_ENV = re.compile(r"(_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_TRUNCATION_MARK = "…[truncated]"


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the credential-like environment variables (8+ characters), longest first."""
    environ = os.environ if environ is None else environ
    found = {v for k, v in environ.items() if _SECRET_ENV.search(k) and len(v) >= 8}
    return sorted(found, key=len, reverse=True)


def bound_trace(
    record: Mapping[str, Any], max_bytes: int, secrets: list[str] | tuple[str, ...] = ()
) -> dict[str, Any]:
    """``record`` made safe to store: JSON-safe (``repr`` for what JSON cannot hold), no provider key in any
    string (a credential the server's environment holds becomes ``[redacted]``), and at most ``max_bytes``
    of JSON: long strings are cut (``…[truncated]``) and the record gets ``"truncated": true`` and its
    original size ``"original_bytes"``; a record still too big keeps only its scalar fields."""
    text = json.dumps(_finite(record), default=repr, ensure_ascii=False, separators=(",", ":"))
    for secret in secrets:
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]  # as the secret appears inside JSON text
        if escaped in text:
            text = text.replace(escaped, "[redacted]")
    bounded: dict[str, Any] = json.loads(text)
    size = len(text.encode("utf-8"))
    if size <= max_bytes:
        return bounded
    limit = max(64, max_bytes // 8)
    while True:
        cut = _cut_strings(bounded, limit)
        cut.update(truncated=True, original_bytes=size)
        if len(json.dumps(cut, ensure_ascii=False).encode("utf-8")) <= max_bytes or limit <= 16:
            break
        limit //= 2
    if len(json.dumps(cut, ensure_ascii=False).encode("utf-8")) > max_bytes:
        cut = {k: v for k, v in cut.items() if isinstance(v, int | float | bool) or v is None}
        cut.update(truncated=True, original_bytes=size)
    if len(json.dumps(cut, ensure_ascii=False).encode("utf-8")) > max_bytes:
        # thousands of scalar fields: only the log's own keys and the note of what was dropped are kept
        cut = {k: cut[k] for k in ("seat", "event_seq", "time") if k in cut}
        cut.update(truncated=True, original_bytes=size)
    return cut


def _finite(value: Any) -> Any:
    """NaN and infinities (which JSON cannot hold) become None; containers are copied, dict keys as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + _TRUNCATION_MARK
    if isinstance(value, list):
        kept = [_cut_strings(v, limit) for v in value[: max(1, limit // 4)]]
        return kept + ([_TRUNCATION_MARK] if len(value) > len(kept) else [])
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    return value


class TraceRecords:
    """The table's keeping of trace records (a part of :class:`server.table.master.Table`): those its bot
    seats' policies make and those agents send for their own seats."""

    settings: Settings
    store: Store
    clock: Callable[[], float]
    _registry_lock: threading.Lock
    _secrets: list[str]
    _traces_full: set[str]
    _client_traces: dict[tuple[str, int], int]
    _trace_batches: OrderedDict[tuple[str, int, str], dict[str, Any]]
    get: Callable[[Any], LiveGame]
    catch_up: Callable[[LiveGame], bool]
    acting_seat: Callable[..., int]

    def record_traces(
        self,
        game_id: Any,
        principal: Principal,
        traces: Any,
        seat: Any = None,
        event_n: Any = None,
        batch_id: Any = None,
    ) -> dict[str, Any]:
        """An agent's trace records for its own seat (what led to its moves: prompts, completions, token
        counts), kept with the game for researchers exactly like those of the bots the server plays.

        Only API-token agents send them (a person's browser has none, and the per-game quota must not be
        filled by a player to crowd out an agent's records); at most :data:`MAX_TRACES_PER_REQUEST` records
        per request, each bounded by ``bots.trace_max_bytes``. ``event_n`` is the number, in the seat's own
        log, of the first event the move produced; it links the records to that event. A ``batch_id`` (any
        text up to 64 characters) makes a resent batch (after a dropped connection) count once."""
        if principal.kind != "agent":
            raise ServerError(
                "not_an_agent",
                "Only agents connected with an API token send trace records; a person's moves need none.",
                status=403,
            )
        if (
            not isinstance(traces, list)
            or not 1 <= len(traces) <= MAX_TRACES_PER_REQUEST
            or not all(isinstance(t, dict) for t in traces)
        ):
            raise ServerError(
                "invalid_request",
                f"traces must be a list of 1 to {MAX_TRACES_PER_REQUEST} JSON objects; send more in several "
                "requests.",
            )
        if batch_id is not None and (not isinstance(batch_id, str) or not 1 <= len(batch_id) <= 64):
            raise ServerError("invalid_request", "batch_id must be a text of 1 to 64 characters, or null.")
        if event_n is not None and (not isinstance(event_n, int) or isinstance(event_n, bool) or event_n < 0):
            raise ServerError("invalid_request", "event_n must be an event number n of your log, or null.")
        live = self.get(game_id)
        with live.lock:
            self.catch_up(live)
            chosen = self.acting_seat(live, principal, seat)
            event_seq = None
            if event_n is not None:
                events = live.game.events if live.game is not None else []
                visible = [e.seq for e in events if visible_to(e, chosen)]
                if event_n >= len(visible):
                    raise ServerError(
                        "invalid_request",
                        f"Your log has {len(visible)} events, so event_n {event_n} names none of them.",
                        {"log_size": len(visible)},
                    )
                event_seq = visible[event_n]
        # each seat's own quota of the game's records, so one agent cannot crowd out the others' (and the
        # server's bots') records; counted per process, the store's per-game bound holds across processes
        quota = self.settings.bots.traces_per_game // max(1, len(live.seats))
        with self._registry_lock:
            if batch_id is not None:
                key = (live.game_id, chosen, batch_id)
                if key in self._trace_batches:
                    return {**self._trace_batches[key], "duplicate": True}
            sent = self._client_traces.get((live.game_id, chosen), 0)
            allowed = max(0, min(len(traces), quota - sent))
            self._client_traces[(live.game_id, chosen)] = sent + allowed
        stored = self._store_traces(live.game_id, chosen, event_seq, traces[:allowed]) if allowed else 0
        answer = {"game_id": live.game_id, "seat": chosen, "stored": stored, "dropped": len(traces) - stored}
        if batch_id is not None:
            with self._registry_lock:
                self._trace_batches[(live.game_id, chosen, batch_id)] = answer
                while len(self._trace_batches) > TRACE_BATCHES_REMEMBERED:
                    self._trace_batches.popitem(last=False)
        return answer

    def _store_traces(self, game_id: str, seat: int, event_seq: int | None, traces: list[Any]) -> int:
        """Keep a policy's trace records with the game (bounded: bots.trace_max_bytes per record, truncated;
        bots.traces_per_game per game, the rest dropped and logged once); how many were kept. Never raises."""
        if not traces or game_id in self._traces_full:
            return 0
        limit = self.settings.bots.trace_max_bytes
        stamp = self.clock()
        try:
            records = []
            for trace in traces:
                fields = dict(trace) if isinstance(trace, Mapping) else {"value": trace}
                records.append(
                    bound_trace(trace_fields(fields, seat, event_seq, stamp), limit, self._secrets)
                )
            self.store.append_traces(game_id, records, max_per_game=self.settings.bots.traces_per_game)
            return len(records)
        except StoreError as err:
            if err.code == "trace_limit_reached":
                self._traces_full.add(game_id)
                log.warning("game %s: %s later trace records are dropped", game_id, err.message)
            else:
                log.error("game %s: trace records of seat %s not stored: %s", game_id, seat, err.message)
            return 0
        except Exception:
            log.exception("game %s: trace records of seat %s not stored", game_id, seat)
            return 0
