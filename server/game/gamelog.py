"""The researcher game log: one JSON-lines format for a game wherever it was played.

The server's export, headless games (:func:`agents.local.play_local`, ``tradecraft play --log``), the
experiment runner and :mod:`analysis` all write and read games through this module. It is pure: it turns a
:class:`GameLog` into lines of text and lines of text back into a :class:`GameLog`; callers open the files,
read the clock and the store.

Records (one JSON object per line; ``kind`` says which)
======================================================
- ``header`` (the first line): ``schema_version``, ``game_id``, ``source`` (``server`` | ``local`` | ...),
  ``status``, ``created_at`` / ``finished_at`` (seconds since the epoch, as the store keeps them),
  ``exported_at`` (ISO 8601 UTC), ``settings`` (the :class:`GameSettings` snapshot), ``ruleset``
  (``name`` + ``content_hash`` = :attr:`RuleSet.content_hash`), ``instance`` (``id``, ``ruleset``,
  ``mode``, ``hands``, ``targets``), ``seeds`` (``game``: the engine's seed, plus e.g. the bots' seeds),
  ``versions`` (package -> version), ``seats`` (kind, name, bot or model per seat; never credentials),
  ``models`` (the seats' model and prompt versions) and ``meta`` (anything else the producer kept).
- ``event``: an engine :class:`Event` (``seq``, ``type``, ``actor``, ``payload``, ``visibility``) plus its
  ``time`` (seconds since the epoch; the server's clock or an injected one; null when unknown) and
  ``latency`` (see :func:`replay_with_latencies`). Events come in ``seq`` order from 0 without gaps.
- ``trace`` (optional, any number, after the header): what an LLM agent or a bot did on the way to a
  move: ``seat``, ``event_seq`` (the event it led to or is about, null for none), ``time`` and any other
  JSON fields (prompt, completion, token counts, beliefs, ...).
- ``summary`` (optional, at most one): ``events``, ``replay`` (``ok``, ``error``) and, when the game could
  be replayed, ``phase``, ``turn``, ``finished``, ``winners``, ``end_reason``, ``log_digest``,
  ``state_digest`` and ``final_state`` (the engine's researcher view).

A log carries the whole game, targets included: it is for researchers. One seat's participant-safe
export is built from a replayed game elsewhere (``server.web.export.export_participant``).

Old exports (schema version 1, records keyed by ``record``, written by ``server/web/export.py`` before this
module) are read too: :func:`decode_log` converts them into the same :class:`GameLog`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from craft_rules.errors import TradeCraftError
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance
from server.game.errors import GameError
from server.game.events import Event
from server.game.settings import GameSettings
from server.game.state import Game
from server.game.views import researcher_view

#: Version of the log format. Bump on any change a reader would notice; keep reading the old ones.
GAME_LOG_SCHEMA_VERSION = 2

#: The export format before this module (``record`` keys; header, event, summary).
LEGACY_SCHEMA_VERSION = 1

#: What each :class:`GameLogError` code means.
GAME_LOG_ERROR_CODES: dict[str, str] = {
    "invalid_json": "a line is not one JSON object",
    "missing_header": "the log does not start with a header record",
    "unsupported_schema": "the log's schema version is newer than this reader (or not a game log)",
    "invalid_record": "a record does not match its schema",
    "invalid_events": "events are missing, out of order or duplicated",
    "no_instance": "the log does not carry its task instance, so it cannot be replayed",
    "ruleset_mismatch": "the rule set given for a replay is not the one the game was played with",
}


class GameLogError(TradeCraftError):
    """A log that cannot be read or replayed. ``code`` is one of :data:`GAME_LOG_ERROR_CODES`;
    ``line`` is the 1-based line number of the offending record when there is one (the message starts
    with it, and ``to_dict`` reports it)."""

    extra_fields = ("line",)

    def __init__(
        self, code: str, message: str, *, line: int | None = None, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(code, message if line is None else f"line {line}: {message}", details)
        self.line = line


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RuleSetRef(_Record):
    """Which rule set a game used: its name and the hash of its content when it was played."""

    name: str
    content_hash: str | None = Field(None, description="RuleSet.content_hash; null in old exports")


class InstanceRecord(_Record):
    """The task instance inline, so a log replays without the instance files of the machine that wrote it."""

    id: str
    ruleset: str
    mode: str
    hands: list[dict[str, int]]
    targets: list[dict[str, int]]
    difficulty: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, instance: TaskInstance) -> InstanceRecord:
        return cls(
            id=instance.id,
            ruleset=instance.ruleset,
            mode=instance.mode,
            hands=[dict(sorted(h.items())) for h in instance.hands],
            targets=[dict(sorted(t.items())) for t in instance.targets],
            difficulty=dict(instance.difficulty),
        )

    def to_instance(self) -> TaskInstance:
        return TaskInstance(
            self.id,
            self.ruleset,
            self.mode,
            tuple(dict(h) for h in self.hands),
            tuple(dict(t) for t in self.targets),
            dict(self.difficulty),
        )


class LogHeader(_Record):
    """The first record: everything needed to replay the game and to say where it came from."""

    kind: Literal["header"] = "header"
    schema_version: int = GAME_LOG_SCHEMA_VERSION
    game_id: str
    source: str = Field(description="who wrote the log: server, local (a headless game), runner, ...")
    status: str | None = None
    created_at: float | None = None
    finished_at: float | None = None
    exported_at: str | None = None
    settings: dict[str, Any]
    ruleset: RuleSetRef
    instance: InstanceRecord | None
    seeds: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    seats: list[dict[str, Any]] = Field(default_factory=list)
    models: list[dict[str, Any]] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class TraceRecord(BaseModel):
    """What a player program did on the way to a move; fields beyond these three are free JSON."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["trace"] = "trace"
    seat: int | None
    event_seq: int | None = Field(None, description="the event this trace led to or is about")
    time: float | None = None


def trace_fields(
    record: Mapping[str, Any], seat: int | None, event_seq: int | None, time: float | None
) -> dict[str, Any]:
    """A policy's trace record as the log keeps it: ``seat``, ``event_seq`` and ``time`` set by whoever ran
    the policy; a ``kind`` of the policy's own (``kind`` is the log's record type) kept as ``trace_kind``."""
    fields = dict(record)
    if fields.get("kind") not in (None, "trace"):
        fields["trace_kind"] = fields.pop("kind")
    fields.update(seat=seat, event_seq=event_seq, time=time)
    return fields


class LogSummary(_Record):
    """The last record: how the replayed game ended (only the counts when it could not be replayed)."""

    kind: Literal["summary"] = "summary"
    events: int
    replay: dict[str, Any] = Field(default_factory=lambda: {"ok": True, "error": None})
    phase: str | None = None
    turn: int | None = None
    finished: bool | None = None
    winners: list[int] | None = None
    end_reason: str | None = None
    log_digest: str | None = None
    state_digest: str | None = None
    final_state: dict[str, Any] | None = None

    @classmethod
    def of(cls, game: Game) -> LogSummary:
        return cls(
            events=len(game.events),
            phase=game.phase,
            turn=game.turn,
            finished=game.finished,
            winners=list(game.winners),
            end_reason=game.end_reason,
            log_digest=game.log_digest(),
            state_digest=game.state_digest(),
            final_state=researcher_view(game),
        )

    @classmethod
    def unreplayable(cls, events: int, error: Mapping[str, Any]) -> LogSummary:
        return cls(events=events, replay={"ok": False, "error": dict(error)})


@dataclass
class GameLog:
    """One game's log: the header, its events with their times and latencies, traces and a summary.

    ``times`` and ``latencies`` run parallel to ``events`` (None where unknown).
    """

    header: LogHeader
    events: list[Event]
    times: list[float | None]
    latencies: list[float | None]
    traces: list[TraceRecord] = field(default_factory=list)
    summary: LogSummary | None = None

    @property
    def game_id(self) -> str:
        return self.header.game_id

    @property
    def seed(self) -> int:
        seed = self.header.seeds.get("game")
        return int(seed) if isinstance(seed, int) else 0

    def settings(self) -> GameSettings:
        """The game's settings (GameError ``invalid_settings`` if the snapshot no longer validates)."""
        try:
            return GameSettings.model_validate(self.header.settings)
        except ValidationError as exc:
            raise GameError(
                "invalid_settings", f"The log's settings snapshot does not validate: {exc}", {}
            ) from exc

    def instance(self) -> TaskInstance:
        if self.header.instance is None:
            raise GameLogError(
                "no_instance",
                f"game {self.game_id!r} was logged without its task instance; it cannot be replayed",
            )
        return self.header.instance.to_instance()

    def check_rules(self, rules: RuleSet) -> None:
        """Raise ``ruleset_mismatch`` unless ``rules`` is the rule set (name and content) of the game."""
        wanted = self.header.ruleset
        if rules.name != wanted.name:
            raise GameLogError(
                "ruleset_mismatch",
                f"game {self.game_id!r} was played with rule set {wanted.name!r}, not {rules.name!r}",
            )
        if wanted.content_hash is not None and rules.content_hash != wanted.content_hash:
            raise GameLogError(
                "ruleset_mismatch",
                f"rule set {rules.name!r} has changed since game {self.game_id!r} was played (content hash "
                f"{rules.content_hash[:12]}... instead of {wanted.content_hash[:12]}...); load the version "
                "the game used, or replay with verify_ruleset=False at your own risk",
                details={"expected": wanted.content_hash, "got": rules.content_hash},
            )

    def replay(self, rules: RuleSet, *, verify_ruleset: bool = True) -> Game:
        """Rebuild the game from the log (``Game.replay``); GameError ``invalid_log`` if it does not fit."""
        if verify_ruleset:
            self.check_rules(rules)
        return Game.replay(self.instance(), self.settings(), rules, self.seed, self.events)


# ------------------------------------------------------------------------------------------- latencies
def replay_with_latencies(
    instance: TaskInstance,
    settings: GameSettings,
    rules: RuleSet,
    seed: int,
    events: Sequence[Event | Mapping[str, Any]],
    times: Sequence[float | None],
) -> tuple[Game, list[float | None]]:
    """Replay event by event and measure each seat's response latency (seconds).

    A seat starts waiting when it enters ``Game.waiting_for()`` (or right after its own previous action
    while it stays awaited, e.g. between crafts); the first event of its next action gets ``latency =
    time(event) - time(start of waiting)``. Follow-up events of the same action (same actor, same time),
    system events and events a seat causes while not awaited (e.g. resigning) get None.
    """
    game = Game(instance, settings, rules, seed)
    waiting_since: dict[int, float] = {}
    latencies: list[float | None] = []
    previous: tuple[int | None, float | None] | None = None
    for record, stamp in zip(events, times, strict=True):
        event = record if isinstance(record, Event) else Event.from_dict(dict(record))
        actor = event.actor
        waiting_before = game.waiting_for()
        same_action = previous == (actor, stamp)
        latency = None
        responding = actor is not None and actor in waiting_before and actor in waiting_since
        if responding and not same_action and stamp is not None:
            latency = round(max(0.0, stamp - waiting_since[actor]), 6)
        latencies.append(latency)
        game.apply_events([event])
        if stamp is not None:
            for seat in game.waiting_for():
                if seat not in waiting_before or seat == actor:
                    waiting_since[seat] = float(stamp)
        previous = (actor, stamp)
    return game, latencies


# ---------------------------------------------------------------------------------------------- encoding
def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"


def encode_event(event: Event, time: float | None, latency: float | None = None) -> str:
    """One ``event`` line."""
    return _line({"kind": "event", **event.to_dict(), "time": time, "latency": latency})


def encode_trace(seat: int | None, event_seq: int | None, *, time: float | None = None, **fields: Any) -> str:
    """One ``trace`` line, e.g. ``encode_trace(0, 17, time=t, source="llm", prompt=..., completion=...)``."""
    return _line(TraceRecord(seat=seat, event_seq=event_seq, time=time, **fields).model_dump(mode="json"))


def encode_log(log: GameLog) -> Iterator[str]:
    """The log as lines of text, each ending in a newline: header, events, traces, summary."""
    if not len(log.events) == len(log.times) == len(log.latencies):
        raise ValueError("GameLog.times and GameLog.latencies must run parallel to its events")
    yield _line(log.header.model_dump(mode="json"))
    for event, time, latency in zip(log.events, log.times, log.latencies, strict=True):
        yield encode_event(event, time, latency)
    for trace in log.traces:
        yield _line(trace.model_dump(mode="json"))
    if log.summary is not None:
        yield _line(log.summary.model_dump(mode="json"))


# ---------------------------------------------------------------------------------------------- decoding
def decode_log(lines: Iterable[str]) -> GameLog:
    """Read a log (any iterable of lines: a list, ``text.splitlines()``, an open text file).

    Reads this format and the old exports (schema version 1). Blank lines are skipped. Raises
    :class:`GameLogError` with the offending line number on anything else.
    """
    records = _records(lines)
    first = next(records, None)
    if first is None:
        raise GameLogError("missing_header", "the log is empty; a game log starts with a header record")
    number, record = first
    if record.get("kind") == "header":
        version = record.get("schema_version")
        if not isinstance(version, int) or version > GAME_LOG_SCHEMA_VERSION:
            raise GameLogError(
                "unsupported_schema",
                f"schema_version {version!r} is not one this reader knows (up to {GAME_LOG_SCHEMA_VERSION}); "
                "update TradeCraft to read it",
                line=number,
            )
        header = _validate(LogHeader, record, number)
        return _read_body(header, records, _current_record)
    if record.get("record") == "header":
        if record.get("export") == "participant":
            raise GameLogError(
                "unsupported_schema",
                "this is a participant export (one seat's view), not a game log; export the game for "
                "researchers to get its log",
                line=number,
            )
        if record.get("schema_version") != LEGACY_SCHEMA_VERSION:
            raise GameLogError(
                "unsupported_schema",
                f"an old export with schema_version {record.get('schema_version')!r}; only "
                f"{LEGACY_SCHEMA_VERSION} is known",
                line=number,
            )
        header, summary_replay = _legacy_header(record, number)
        log = _read_body(header, records, _legacy_record)
        if log.summary is not None:
            log.summary.replay = summary_replay
        return log
    raise GameLogError(
        "missing_header", "the first record is not a header; is this a TradeCraft game log?", line=number
    )


def _records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GameLogError("invalid_json", f"not JSON ({exc.msg})", line=number) from None
        if not isinstance(record, dict):
            raise GameLogError("invalid_json", "a record must be a JSON object", line=number)
        yield number, record


_Model = TypeVar("_Model", bound=BaseModel)


def _validate(model: type[_Model], record: Mapping[str, Any], number: int) -> _Model:
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'record'}: {error['msg']}" for error in exc.errors()
        )
        raise GameLogError(
            "invalid_record", f"{model.__name__} does not validate: {problems}", line=number
        ) from None


def _current_record(record: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    return record.get("kind"), record


def _legacy_record(record: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    kind = record.get("record")
    body = {k: v for k, v in record.items() if k != "record"}
    if kind == "summary":
        body.pop("game_id", None)
    return kind, {"kind": kind, **body}


def _read_body(
    header: LogHeader,
    records: Iterator[tuple[int, dict[str, Any]]],
    normalise: Callable[[dict[str, Any]], tuple[str | None, dict[str, Any]]],
) -> GameLog:
    log = GameLog(header, [], [], [])
    trace_lines: list[int] = []
    for number, raw in records:
        kind, record = normalise(raw)
        if log.summary is not None and kind == "event":
            raise GameLogError("invalid_events", "an event after the summary record", line=number)
        if kind == "event":
            event, time, latency = _event(record, number)
            if event.seq != len(log.events):
                raise GameLogError(
                    "invalid_events",
                    f"expected event seq {len(log.events)}, got {event.seq}: events must be complete and "
                    "in order",
                    line=number,
                )
            log.events.append(event)
            log.times.append(time)
            log.latencies.append(latency)
        elif kind == "trace":
            log.traces.append(_validate(TraceRecord, record, number))
            trace_lines.append(number)
        elif kind == "summary":
            if log.summary is not None:
                raise GameLogError("invalid_record", "a second summary record", line=number)
            log.summary = _validate(LogSummary, record, number)
        else:
            raise GameLogError("invalid_record", f"unknown record kind {kind!r}", line=number)
    for trace, number in zip(log.traces, trace_lines, strict=True):
        if trace.event_seq is not None and not 0 <= trace.event_seq < len(log.events):
            raise GameLogError(
                "invalid_record",
                f"trace refers to event {trace.event_seq}, but the log has events 0..{len(log.events) - 1}",
                line=number,
            )
    return log


def _event(record: Mapping[str, Any], number: int) -> tuple[Event, float | None, float | None]:
    try:
        if not isinstance(record.get("payload", {}), dict):
            raise TypeError("payload must be an object")
        event = Event.from_dict(dict(record))
        time, latency = record.get("time"), record.get("latency")
        for name, value in (("time", time), ("latency", latency)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise TypeError(f"{name} must be a number or null")
    except (KeyError, TypeError, ValueError) as exc:
        raise GameLogError("invalid_record", f"event does not validate: {exc}", line=number) from None
    return event, None if time is None else float(time), None if latency is None else float(latency)


def _legacy_header(record: Mapping[str, Any], number: int) -> tuple[LogHeader, dict[str, Any]]:
    """An old export's header as a LogHeader, and its replay status (which moved to the summary)."""
    settings = record.get("settings") or {}
    ruleset = str(record.get("ruleset") or settings.get("ruleset") or "")
    instance = None
    inline = record.get("instance")
    if isinstance(inline, Mapping) and "hands" in inline and "targets" in inline:
        players = len(inline["hands"])
        instance = {
            "id": str(record.get("instance_id") or ""),
            "ruleset": ruleset,
            "mode": str(record.get("mode") or "_v_".join(["1p"] * players)),
            "hands": inline["hands"],
            "targets": inline["targets"],
            "difficulty": inline.get("difficulty") or {},
        }
    meta = dict(record.get("meta") or {})
    for key in ("mode", "hall", "started_at", "updated_at"):
        if record.get(key) is not None:
            meta[key] = record[key]
    version = record.get("tradecraft_version")
    header = _validate(
        LogHeader,
        {
            "schema_version": LEGACY_SCHEMA_VERSION,
            "game_id": record.get("game_id"),
            "source": "server",
            "status": record.get("status"),
            "created_at": record.get("created_at"),
            "finished_at": record.get("finished_at"),
            "exported_at": record.get("exported_at"),
            "settings": settings,
            "ruleset": {"name": ruleset, "content_hash": None},
            "instance": instance,
            "seeds": record.get("seeds") or {},
            "versions": {"tradecraft": version} if version else {},
            "seats": record.get("seats") or [],
            "models": record.get("models") or [],
            "meta": meta,
        },
        number,
    )
    replay = record.get("replay")
    return header, dict(replay) if isinstance(replay, Mapping) else {"ok": True, "error": None}
