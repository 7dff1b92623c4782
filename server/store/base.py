"""The store interface: the one contract every persistence backend implements.

The server codes against :class:`Store` only. Backends (``sqlite.py``, ``mongo.py``) subclass it and
inherit the shared validation below, so both behave identically; ``tests/test_store_contract.py`` runs one
suite over all of them.

Concurrency model: one ``Store`` object is shared by every thread of a process, and several processes
(gunicorn workers, hosts) may open the same SQLite file or Mongo database at once. A game's event log never
forks because the backend enforces one event per ``(game_id, seq)``: the loser of a race gets
:class:`SequenceConflict` and must reload the log and re-apply (or reject) its action.

Every value that goes in is normalised through JSON (``int`` dict keys become strings, tuples become lists),
so what comes back out is exactly ``json.loads(json.dumps(value))`` whatever the backend.
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

from craft_rules.errors import TradeCraftError

#: Version of the on-disk layout; backends record it and migrate forward on open.
SCHEMA_VERSION = 3

GameStatus = Literal["waiting", "running", "finished", "aborted"]
GAME_STATUSES: frozenset[str] = frozenset({"waiting", "running", "finished", "aborted"})
SeatKind = Literal["human", "bot", "agent"]

#: Hard bounds on a game's trace records (what bots and LLM agents did on the way to their moves), so a
#: chatty agent cannot fill the disk: one record's JSON (bytes, UTF-8) and the records one game may hold.
#: The server truncates records to its own, smaller setting before they get here
#: (server.table.bot_seats.bound_trace).
MAX_TRACE_BYTES = 1_000_000
MAX_TRACES_PER_GAME = 100_000

#: Plaintext API tokens start with this, so a leaked token is recognisable by secret scanners.
TOKEN_PREFIX = "tc_"


# --------------------------------------------------------------------------------------------- record shapes
class RecalledAction(TypedDict):
    """What :meth:`Store.recall_action` returns: the recorded answer and the digest of its request
    (``""`` for answers recorded before digests were kept)."""

    response: dict[str, Any]
    action_digest: str


class SeatRecord(TypedDict, total=False):
    """One seat of a game as stored in the game's ``seats`` list."""

    seat: int
    kind: SeatKind
    name: str
    user_id: str | None
    bot: str | None  # built-in bot name, or None
    model: str | None  # LLM model id for agent seats (exported in the header)
    prompt_version: str | None


class GameRecord(TypedDict, total=False):
    """A game's metadata. Only ``game_id``, ``status``, ``created_at`` and ``updated_at`` are guaranteed;
    the server decides the rest (keys listed here are the ones it is expected to use)."""

    game_id: str
    mode: str
    hall: str
    ruleset: str
    instance_id: str
    settings: dict[str, Any]  # GameSettings.model_dump() snapshot
    seed: int
    seats: list[SeatRecord]
    status: GameStatus
    created_at: float
    updated_at: float


class EventRecord(TypedDict):
    """One event of a game's log (``server.game.events.Event.to_dict()`` plus the server ``time``)."""

    seq: int
    type: str
    actor: int | None
    payload: dict[str, Any]
    visibility: str | list[int]
    time: NotRequired[float]  # unix seconds, set by the store on append when absent


class TraceRecordDict(TypedDict):
    """One trace record (server.game.gamelog.TraceRecord without ``kind``): ``seat``, ``event_seq`` (the
    event the move produced, None if none), ``time`` and any other JSON fields the policy recorded."""

    seat: int | None
    event_seq: int | None
    time: float | None


class UserRecord(TypedDict):
    id: str
    name: str
    created_at: float


class TokenRecord(TypedDict):
    """An API token's public record: never the plaintext nor its hash."""

    id: str
    name: str
    scopes: list[str]
    created_at: float
    revoked_at: float | None


class ParticipantRecord(TypedDict, total=False):
    """A study participant: the caller's fields plus ``id``, ``study_id`` and ``created_at``."""

    id: str
    study_id: str
    created_at: float


# -------------------------------------------------------------------------------------------------- errors
class StoreError(TradeCraftError):
    """A store operation that cannot be done as asked (bad input, unknown game, unreachable backend)."""


class SequenceConflict(TradeCraftError):
    """Another writer already appended an event with one of these sequence numbers; nothing was written.

    Not a :class:`StoreError` on purpose: it is the expected outcome of a lost race, and the caller's remedy
    (reload the log, re-validate the action) differs from a failure. ``expected`` is the sequence number the
    batch had to start at according to the store when the conflict was seen (-1 when unknown).
    """

    code = "sequence_conflict"

    def __init__(self, game_id: str, first_seq: int, expected: int = -1) -> None:
        super().__init__(
            self.code,
            f"game {game_id!r} already has an event with sequence number {first_seq} or later "
            f"(next free is {expected if expected >= 0 else 'unknown'}): reload the events and retry",
            {"game_id": game_id, "first_seq": first_seq, "expected": expected},
        )
        self.game_id = game_id
        self.first_seq = first_seq
        self.expected = expected


# -------------------------------------------------------------------------------------------------- helpers
def json_normalise(value: Any, what: str = "value") -> Any:
    """Return ``value`` as any backend gives it back (a JSON round trip); reject what JSON can't hold."""
    try:
        return json.loads(json_dumps(value))
    except (TypeError, ValueError) as exc:
        raise StoreError(
            "not_json_safe",
            f"the {what} cannot be stored because it is not JSON-safe ({exc}); "
            "convert Fractions, sets and objects to strings, lists or dicts first",
        ) from exc


def json_dumps(value: Any) -> str:
    """Compact, deterministic JSON; NaN/Infinity are refused because other JSON readers reject them."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)


def now() -> float:
    return time.time()


def new_id() -> str:
    return secrets.token_hex(16)


def new_token() -> str:
    """A high-entropy (256-bit) plaintext API token."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(plaintext: str) -> str:
    """The stored form of a token. A fast hash suffices: tokens are random, not guessable passwords."""
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def prepare_events(
    game_id: str, events: Sequence[Mapping[str, Any]], next_seq: int | None = None, *, stamp: bool = True
) -> list[dict[str, Any]]:
    """Validate one append batch and return normalised copies with ``time`` filled in (``stamp=False``: left
    as given, for an untimed in-process game whose log must not depend on when it was played).

    The batch must be consecutive; when ``next_seq`` (the store's next free number) is given it must start
    there: starting below it means someone else wrote those numbers (:class:`SequenceConflict`), above it is a
    gap (:class:`StoreError` ``sequence_gap``, a caller bug).
    """
    prepared: list[dict[str, Any]] = []
    now_time = now()
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise StoreError(
                "invalid_event", f"event #{index} of the batch is a {type(event).__name__}, not a dict"
            )
        seq = event.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise StoreError(
                "invalid_event",
                f"event #{index} of the batch has seq={seq!r}; every event needs an integer seq >= 0",
                {"game_id": game_id, "index": index},
            )
        if prepared and seq != prepared[-1]["seq"] + 1:
            raise StoreError(
                "invalid_batch",
                "the batch's sequence numbers must be consecutive but "
                f"{prepared[-1]['seq']} is followed by {seq}",
                {"game_id": game_id, "index": index},
            )
        record = json_normalise(dict(event), f"event seq {seq}")
        if stamp and not finite_float(record.get("time")):
            record["time"] = now_time
        prepared.append(record)
    if prepared and next_seq is not None:
        check_next_seq(game_id, prepared[0]["seq"], next_seq)
    return prepared


def stamp_times(originals: Sequence[Mapping[str, Any]], stored: Sequence[Mapping[str, Any]]) -> None:
    """After a successful append, give the caller's event dicts the server time they were stored with."""
    for original, record in zip(originals, stored, strict=True):
        if isinstance(original, dict):
            original["time"] = record["time"]


def check_next_seq(game_id: str, first_seq: int, next_seq: int) -> None:
    """Raise unless a batch starting at ``first_seq`` is exactly the next one."""
    if first_seq < next_seq:
        raise SequenceConflict(game_id, first_seq, next_seq)
    if first_seq > next_seq:
        raise StoreError(
            "sequence_gap",
            f"game {game_id!r} continues at sequence number {next_seq}, not {first_seq}: "
            "reload the events and number the new ones from there",
            {"game_id": game_id, "first_seq": first_seq, "expected": next_seq},
        )


def prepare_traces(
    game_id: str, traces: Sequence[Mapping[str, Any]], max_bytes: int = MAX_TRACE_BYTES
) -> list[tuple[dict[str, Any], str]]:
    """Validate one batch of trace records: ``(normalised record, its JSON)`` each, or StoreError
    ``invalid_trace`` (not a dict; ``seat``/``event_seq`` not an integer or null; ``kind`` other than
    "trace") or ``trace_too_large`` (one record's JSON over ``max_bytes``). Nothing is written then."""
    prepared: list[tuple[dict[str, Any], str]] = []
    for index, trace in enumerate(traces):
        if not isinstance(trace, Mapping):
            raise StoreError(
                "invalid_trace",
                f"trace #{index} of the batch is a {type(trace).__name__}, not a dict",
                {"game_id": game_id, "index": index},
            )
        record = json_normalise(dict(trace), f"trace #{index}")
        if record.get("kind") == "trace":
            del record["kind"]
        if "kind" in record:
            raise StoreError(
                "invalid_trace",
                f"trace #{index} has kind={record['kind']!r}: the key 'kind' is the log's record type; "
                "name the policy's own kind of record differently (e.g. 'step')",
                {"game_id": game_id, "index": index},
            )
        for key in ("seat", "event_seq"):
            value = record.setdefault(key, None)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise StoreError(
                    "invalid_trace",
                    f"trace #{index} has {key}={value!r}; it must be an integer >= 0 or null",
                    {"game_id": game_id, "index": index},
                )
        if not finite_float(record.get("time")):
            record["time"] = now()
        text = json_dumps(record)
        size = len(text.encode("utf-8"))
        if size > max_bytes:
            raise StoreError(
                "trace_too_large",
                f"trace #{index} is {size} bytes of JSON, over the limit of {max_bytes}; shorten it "
                "(the server truncates long fields before storing)",
                {"game_id": game_id, "index": index, "bytes": size, "limit": max_bytes},
            )
        prepared.append((record, text))
    return prepared


def check_trace_limit(game_id: str, stored: int, adding: int, limit: int) -> None:
    """Raise ``trace_limit_reached`` if ``adding`` records to ``stored`` would pass ``limit`` (itself capped
    at :data:`MAX_TRACES_PER_GAME`)."""
    limit = min(int(limit), MAX_TRACES_PER_GAME)
    if stored + adding <= limit:
        return
    raise StoreError(
        "trace_limit_reached",
        f"game {game_id!r} already holds {stored} trace records; {adding} more would pass the limit of "
        f"{limit} per game, so none of them was stored",
        {"game_id": game_id, "stored": stored, "adding": adding, "limit": limit},
    )


def prepare_game(game_id: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise a new game's metadata: JSON-safe, with ``game_id``, ``status`` and timestamps set."""
    if not isinstance(game_id, str) or not game_id:
        raise StoreError("invalid_game_id", f"game id {game_id!r} must be a non-empty string")
    record = json_normalise(dict(meta), "game metadata")
    record["game_id"] = game_id
    record.setdefault("status", "waiting")
    check_status(record["status"])
    record.setdefault("created_at", now())
    record["updated_at"] = record["created_at"]
    return record


def check_status(status: Any) -> None:
    if status not in GAME_STATUSES:
        raise StoreError(
            "invalid_status",
            f"game status {status!r} is not one of {sorted(GAME_STATUSES)}",
            {"status": status},
        )


def prepare_game_update(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise the fields of an ``update_game`` call (a shallow merge into the stored metadata)."""
    update = json_normalise(dict(fields), "game update")
    if "game_id" in update:
        raise StoreError("invalid_update", "a game's game_id cannot be changed; create a new game instead")
    if "status" in update:
        check_status(update["status"])
    update["updated_at"] = now()
    return update


def unknown_game(game_id: str) -> StoreError:
    return StoreError(
        "unknown_game", f"there is no game {game_id!r} in the store; create it first", {"game_id": game_id}
    )


# ---------------------------------------------------------------------------------------------- the contract
class Store(ABC):
    """Persistence for games, their event logs, users, API tokens, study participants, idempotency records and
    a few settings. All methods are thread-safe; see the module docstring for the concurrency model.

    ``backend`` names the implementation ("sqlite" or "mongodb"); :meth:`describe` is a credential-free
    description for health checks and logs.
    """

    backend: str = "abstract"

    # ---- games
    @abstractmethod
    def create_game(self, game_id: str, meta: Mapping[str, Any]) -> None:
        """Store a new game. ``meta`` is JSON-safe (see :class:`GameRecord`); ``status`` defaults to "waiting"
        and ``created_at`` to now. Raises StoreError ``game_exists`` if the id is taken."""

    @abstractmethod
    def update_game(self, game_id: str, **fields: Any) -> None:
        """Shallow-merge ``fields`` into the game's metadata (and bump ``updated_at``).
        Raises StoreError ``unknown_game``."""

    @abstractmethod
    def get_game(self, game_id: str) -> GameRecord | None:
        """The game's metadata including ``game_id``, or None."""

    @abstractmethod
    def list_games(self, status: str | None = None, limit: int = 100) -> list[GameRecord]:
        """Games, newest first (by ``created_at``), optionally only those with ``status``."""

    # ---- events
    @abstractmethod
    def append_events(self, game_id: str, events: Sequence[Mapping[str, Any]]) -> list[EventRecord]:
        """Append a batch atomically and durably; return the records as stored (normalised, timed): what
        :meth:`load_events` will give back, so a caller need not copy or reload them.

        The batch must start at ``last_seq(game_id) + 1`` and be consecutive. If any of its sequence
        numbers already exists, raises :class:`SequenceConflict` and writes nothing; a gap raises StoreError
        ``sequence_gap``; an unknown game StoreError ``unknown_game``. Events lacking a numeric ``time`` get
        the server's current unix time; on success that time is also written into the caller's dicts. An
        empty batch is a no-op. The returned records are the caller's to keep, not to change.
        """

    @abstractmethod
    def load_events(self, game_id: str, after_seq: int = -1) -> list[EventRecord]:
        """The game's events with ``seq > after_seq``, in sequence order (empty for an unknown game)."""

    @abstractmethod
    def last_seq(self, game_id: str) -> int:
        """The highest sequence number stored for the game, -1 when it has none."""

    # ---- traces
    @abstractmethod
    def append_traces(
        self, game_id: str, traces: Sequence[Mapping[str, Any]], *, max_per_game: int = MAX_TRACES_PER_GAME
    ) -> int:
        """Store a batch of trace records with the game (all or nothing); return how many it now holds.

        Each record is a JSON-safe dict with ``seat`` and ``event_seq`` (int or null; missing = null) and
        ``time`` (unix seconds; missing = now) plus free fields; ``kind`` is reserved. Raises StoreError
        ``unknown_game``, ``invalid_trace``, ``trace_too_large`` (a record's JSON over
        :data:`MAX_TRACE_BYTES`) or ``trace_limit_reached`` (the game would hold more than
        ``max_per_game``, at most :data:`MAX_TRACES_PER_GAME`). An empty batch is a no-op."""

    @abstractmethod
    def load_traces(self, game_id: str) -> list[dict[str, Any]]:
        """The game's trace records in the order they were appended (empty for an unknown game)."""

    # ---- users
    @abstractmethod
    def create_user(self, name: str) -> UserRecord:
        """Create a user with a fresh random id."""

    @abstractmethod
    def get_user(self, user_id: str) -> UserRecord | None: ...

    # ---- API tokens
    @abstractmethod
    def create_token(self, name: str, scopes: Sequence[str]) -> tuple[str, TokenRecord]:
        """Create an API token. Returns ``(plaintext, record)``: the plaintext exists only in this return
        value; the store keeps its sha256."""

    @abstractmethod
    def verify_token(self, plaintext: str) -> TokenRecord | None:
        """The token's record if ``plaintext`` is a known, unrevoked token, else None."""

    @abstractmethod
    def revoke_token(self, token_id: str) -> bool:
        """Revoke a token; True if it existed and was active until now."""

    @abstractmethod
    def list_tokens(self) -> list[TokenRecord]:
        """Every token's public record (revoked ones too, with ``revoked_at``), oldest first."""

    # ---- study participants
    @abstractmethod
    def add_participant(self, study_id: str, record: Mapping[str, Any]) -> ParticipantRecord:
        """Store a participant record (JSON-safe) and return it with ``id``, ``study_id``, ``created_at``."""

    @abstractmethod
    def list_participants(self, study_id: str) -> list[ParticipantRecord]:
        """A study's participants in the order they were added."""

    # ---- idempotency of client actions
    @abstractmethod
    def remember_action(
        self, game_id: str, client_action_id: str, response: Mapping[str, Any], action_digest: str = ""
    ) -> bool:
        """Record the response given to a client action id, with a digest of the request it answered (so a
        reused id with another request can be told from a retry); False (nothing changes) if already known."""

    @abstractmethod
    def recall_action(self, game_id: str, client_action_id: str) -> RecalledAction | None:
        """The response and request digest recorded for a client action id, or None."""

    # ---- small settings
    @abstractmethod
    def get_value(self, key: str) -> str | None: ...

    @abstractmethod
    def set_value_if_absent(self, key: str, value: str) -> str:
        """Atomically store ``value`` unless ``key`` has one; return the value now stored (first writer
        wins)."""

    @abstractmethod
    def list_keys(self, prefix: str, after: str = "", limit: int = 1000) -> list[str]:
        """Keys that start with ``prefix`` and sort after ``after``, in order, at most ``limit`` (a page:
        pass the last key as ``after`` for the next). For sweeping records kept as values."""

    @abstractmethod
    def replace_value(self, key: str, expected: str | None, value: str | None) -> bool:
        """Atomically: if ``key`` now holds ``expected`` (None: no value), make it hold ``value`` (None:
        remove it) and answer True; else change nothing and answer False. The one conditional write behind
        every "check, then act" invariant (a seat per person, open games per user, session versions)."""

    # ---- lifecycle
    @abstractmethod
    def close(self) -> None:
        """Release connections. The store must not be used afterwards."""

    def describe(self) -> str:
        """A credential-free description (for ``/healthz`` and logs)."""
        return self.backend

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def finite_float(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
