"""MongoDB backend through pymongo (also runs over mongomock, which CI uses).

Collections: ``games`` (_id = game id), ``events`` (unique index on ``(game_id, seq)``), ``users``, ``tokens``
(unique ``token_hash``), ``participants``, ``actions`` (unique ``(game_id, client_action_id)``), ``traces``
(unique ``(game_id, n)``; each record kept as its JSON text, so a policy's free keys never meet MongoDB's
field-name rules), ``kv`` and ``schema_version``. Indexes are created on open (idempotent, so every worker
may do it).

Appending a batch:
- when the deployment supports multi-document transactions (replica set or mongos), the next-sequence check
  and ``insert_many(ordered=True)`` run in one transaction: all or nothing, and a concurrent writer's
  ``DuplicateKeyError`` or write conflict becomes :class:`SequenceConflict`;
- otherwise (standalone server, mongomock) it checks the next sequence number, inserts relying on the unique
  index, and if the index refuses an event part-way it deletes the events this call did insert (tagged with a
  per-call batch id) before raising :class:`SequenceConflict`. Appends to one game are also serialised within
  the process, so only writers in other processes can ever observe that brief partial batch; one that appends
  right after it would leave a gap when the batch is taken back, so several server processes on one
  MongoDB need a replica set (a single-node one will do), where the transaction path is taken.

Writes use write concern ``majority`` with journaling (unless the URL sets its own ``w``), so an acknowledged
append is on disk. A MongoClient must be created after a fork: open the store in each gunicorn worker.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import pymongo
from bson.errors import InvalidDocument
from pymongo import ASCENDING, DESCENDING, IndexModel, WriteConcern
from pymongo.errors import (
    BulkWriteError,
    ConnectionFailure,
    DuplicateKeyError,
    OperationFailure,
    PyMongoError,
)

from server.store.base import (
    MAX_TRACES_PER_GAME,
    SCHEMA_VERSION,
    EventRecord,
    GameRecord,
    ParticipantRecord,
    RecalledAction,
    SequenceConflict,
    Store,
    StoreError,
    TokenRecord,
    UserRecord,
    check_next_seq,
    check_trace_limit,
    hash_token,
    json_normalise,
    new_id,
    new_token,
    now,
    prepare_events,
    prepare_game,
    prepare_game_update,
    prepare_traces,
    stamp_times,
    unknown_game,
)

DEFAULT_DATABASE = "tradecraft"
DUPLICATE_KEY = 11000
#: Tries of a conditional write that keeps losing to writers that delete what it found (then ``store_busy``).
CONDITIONAL_WRITE_ATTEMPTS = 5
#: Tries of a trace append that keeps losing the race for the next numbers (one writer wins each round; eight
#: writers with their own clients appending at once took up to 18 on the test server, 5 were too few).
TRACE_APPEND_ATTEMPTS = 60
#: Number of per-game lock stripes serialising appends within one process.
LOCK_STRIPES = 64
#: mongomock "servers" by host, so two stores opened on the same mongomock URL share data like a real server.
_MOCK_SERVERS: dict[str, Any] = {}
_MOCK_SERVERS_LOCK = threading.Lock()


class MongoStore(Store):
    """The :class:`Store` contract over one MongoDB database."""

    backend = "mongodb"

    def __init__(self, client: Any, database: str = DEFAULT_DATABASE, *, description: str | None = None):
        self.client = client
        self.database_name = database
        self._description = description or f"mongodb://…/{database}"
        self._is_mock = type(client).__module__.startswith("mongomock")
        write_concern = getattr(client, "write_concern", None)
        if not (isinstance(write_concern, WriteConcern) and write_concern.document):
            # unless the URL chose its own: acknowledged by a majority and journaled, i.e. on disk
            write_concern = WriteConcern(w="majority", j=True)
        self._write_concern: WriteConcern = write_concern
        self.db = client.get_database(database, write_concern=write_concern)
        self.games = self.db["games"]
        self.events = self.db["events"]
        self.users = self.db["users"]
        self.tokens = self.db["tokens"]
        self.participants = self.db["participants"]
        self.actions = self.db["actions"]
        self.kv = self.db["kv"]
        self.traces = self.db["traces"]
        self._append_locks = [threading.Lock() for _ in range(LOCK_STRIPES)]
        # mongomock checks unique indexes non-atomically (insert, then count), so two threads could both lose;
        # serialising its writes in-process gives it the atomicity a real server has.
        self._mock_lock = threading.RLock()
        with self._errors("open"):
            self._create_indexes()
            self.supports_transactions = self._detect_transactions()
            self._check_schema()

    @classmethod
    def from_url(cls, url: str) -> MongoStore:
        """``mongodb://[user:pass@]host:port/dbname[?options]``, ``mongodb+srv://...`` or ``mongomock://host/db``."""
        if url.lower().startswith("mongomock://"):
            import mongomock  # dev dependency: only the tests' in-process MongoDB

            rest = url.split("://", 1)[1]
            host, _, database = rest.partition("/")
            database = database.split("?", 1)[0] or DEFAULT_DATABASE
            with _MOCK_SERVERS_LOCK:
                server = _MOCK_SERVERS.setdefault(host or "localhost", mongomock.store.ServerStore())
            return cls(
                mongomock.MongoClient(_store=server), database, description=f"mongomock://{host}/{database}"
            )
        try:
            parsed = pymongo.uri_parser.parse_uri(url)
            client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(url)
        except (PyMongoError, ValueError) as exc:
            raise StoreError(
                "invalid_store_url",
                f"MongoDB URL is not valid ({exc}); use mongodb://HOST:PORT/DBNAME",
            ) from exc
        database = parsed.get("database") or DEFAULT_DATABASE
        hosts = ",".join(f"{host}:{port}" for host, port in parsed.get("nodelist", []))
        return cls(client, database, description=f"mongodb://{hosts}/{database}")

    def describe(self) -> str:
        return self._description

    # ------------------------------------------------------------------------------------------- plumbing
    @contextlib.contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        """Turn driver failures into StoreError with a sentence saying what to do."""
        try:
            yield
        except (StoreError, SequenceConflict):
            raise
        except ConnectionFailure as exc:
            raise StoreError(
                "store_unavailable",
                f"cannot reach MongoDB at {self._description} during {operation} ({exc}); "
                "check that the server is running and the URL is right",
            ) from exc
        except PyMongoError as exc:
            raise StoreError("store_failure", f"MongoDB error during {operation}: {exc}") from exc
        except (OverflowError, InvalidDocument) as exc:  # a value BSON cannot hold (an int beyond 64 bits)
            raise StoreError("invalid_value", f"MongoDB cannot store a value of {operation}: {exc}") from exc

    @contextlib.contextmanager
    def _write_guard(self) -> Iterator[None]:
        if self._is_mock:
            with self._mock_lock:
                yield
        else:
            yield

    def _create_indexes(self) -> None:
        self.games.create_indexes(
            [
                IndexModel([("status", ASCENDING), ("created_at", DESCENDING)], name="by_status"),
                IndexModel([("created_at", DESCENDING)], name="by_created"),
            ]
        )
        self.events.create_indexes(
            [IndexModel([("game_id", ASCENDING), ("seq", ASCENDING)], unique=True, name="game_seq")]
        )
        self.traces.create_indexes(
            [IndexModel([("game_id", ASCENDING), ("n", ASCENDING)], unique=True, name="game_trace")]
        )
        self.tokens.create_indexes([IndexModel([("token_hash", ASCENDING)], unique=True, name="token_hash")])
        self.participants.create_indexes(
            [IndexModel([("study_id", ASCENDING), ("created_at", ASCENDING)], name="by_study")]
        )
        self.actions.create_indexes(
            [
                IndexModel(
                    [("game_id", ASCENDING), ("client_action_id", ASCENDING)], unique=True, name="game_action"
                )
            ]
        )

    def _detect_transactions(self) -> bool:
        """Transactions need a replica set (MongoDB >= 4.0) or mongos (>= 4.2); mongomock has none."""
        if self._is_mock:
            return False
        hello = self.client.admin.command("hello")
        wire = int(hello.get("maxWireVersion", 0))
        if hello.get("msg") == "isdbgrid":
            return wire >= 8
        return bool(hello.get("setName")) and wire >= 7

    def _check_schema(self) -> None:
        collection = self.db["schema_version"]
        with contextlib.suppress(DuplicateKeyError):
            collection.insert_one({"_id": "schema", "version": SCHEMA_VERSION, "applied_at": now()})
        doc = collection.find_one({"_id": "schema"}) or {}
        version = int(doc.get("version", SCHEMA_VERSION))
        if version > SCHEMA_VERSION:
            raise StoreError(
                "schema_too_new",
                f"the MongoDB database {self.database_name!r} has schema version {version} but this "
                f"TradeCraft knows only up to {SCHEMA_VERSION}; upgrade TradeCraft",
                {"found": version, "supported": SCHEMA_VERSION},
            )
        if version < SCHEMA_VERSION:
            # 1 -> 2: remembered actions gain action_digest; older documents read as "" (no digest kept)
            # 2 -> 3: the traces collection (created with its index on open)
            collection.update_one(
                {"_id": "schema", "version": {"$lt": SCHEMA_VERSION}},
                {"$set": {"version": SCHEMA_VERSION, "applied_at": now()}},
            )

    def close(self) -> None:
        self.client.close()

    # ------------------------------------------------------------------------------------------------ games
    def create_game(self, game_id: str, meta: Mapping[str, Any]) -> None:
        record = prepare_game(game_id, meta)
        with self._errors("create_game"), self._write_guard():
            try:
                self.games.insert_one({**record, "_id": game_id})
            except DuplicateKeyError as exc:
                raise StoreError(
                    "game_exists",
                    f"a game with id {game_id!r} already exists; choose a new id",
                    {"game_id": game_id},
                ) from exc

    def update_game(self, game_id: str, **fields: Any) -> None:
        update = prepare_game_update(fields)
        with self._errors("update_game"), self._write_guard():
            result = self.games.update_one({"_id": game_id}, {"$set": update})
            if result.matched_count == 0:
                raise unknown_game(game_id)

    def get_game(self, game_id: str) -> GameRecord | None:
        with self._errors("get_game"):
            doc = self.games.find_one({"_id": game_id})
        return cast(GameRecord, _without_id(doc)) if doc else None

    def list_games(self, status: str | None = None, limit: int = 100) -> list[GameRecord]:
        if limit <= 0:
            return []
        query = {} if status is None else {"status": status}
        with self._errors("list_games"):
            docs = self.games.find(query).sort([("created_at", DESCENDING), ("_id", DESCENDING)]).limit(limit)
            return [cast(GameRecord, _without_id(doc)) for doc in docs]

    # ----------------------------------------------------------------------------------------------- events
    def append_events(self, game_id: str, events: Sequence[Mapping[str, Any]]) -> list[EventRecord]:
        prepared = prepare_events(game_id, events)
        if not prepared:
            return []
        batch = new_id()
        docs = [
            {"game_id": game_id, "seq": e["seq"], "time": e["time"], "batch": batch, "event": e}
            for e in prepared
        ]
        lock = self._append_locks[zlib.crc32(game_id.encode("utf-8")) % LOCK_STRIPES]
        with self._errors("append_events"), lock, self._write_guard():
            if self.supports_transactions:
                self._append_in_transaction(game_id, docs)
            else:
                self._append_check_then_insert(game_id, docs, batch)
        stamp_times(events, prepared)
        return cast(list[EventRecord], prepared)

    def _check_append(self, game_id: str, first_seq: int, session: Any = None) -> None:
        if self.games.find_one({"_id": game_id}, {"_id": 1}, session=session) is None:
            raise unknown_game(game_id)
        check_next_seq(game_id, first_seq, self._last_seq(game_id, session) + 1)

    def _append_in_transaction(self, game_id: str, docs: list[dict[str, Any]]) -> None:
        def write(session: Any) -> None:
            self._check_append(game_id, docs[0]["seq"], session)
            self.events.insert_many([dict(doc) for doc in docs], ordered=True, session=session)

        try:
            with self.client.start_session() as session:
                # with_transaction retries transient write conflicts; a retry then sees the winner's events.
                session.with_transaction(write, write_concern=self._write_concern)
        except (DuplicateKeyError, BulkWriteError) as exc:
            if not _is_duplicate(exc):
                raise
            raise SequenceConflict(game_id, docs[0]["seq"], self._last_seq(game_id) + 1) from exc
        except OperationFailure as exc:
            if exc.has_error_label("TransientTransactionError"):
                raise SequenceConflict(game_id, docs[0]["seq"], self._last_seq(game_id) + 1) from exc
            raise

    def _append_check_then_insert(self, game_id: str, docs: list[dict[str, Any]], batch: str) -> None:
        self._check_append(game_id, docs[0]["seq"])
        try:
            self.events.insert_many([dict(doc) for doc in docs], ordered=True)
        except (DuplicateKeyError, BulkWriteError) as exc:
            if not _is_duplicate(exc):
                raise
            # Another process got there first: take back the part of this batch that did go in.
            self.events.delete_many({"game_id": game_id, "batch": batch})
            raise SequenceConflict(game_id, docs[0]["seq"], self._last_seq(game_id) + 1) from exc

    def _last_seq(self, game_id: str, session: Any = None) -> int:
        kwargs = {"session": session} if session is not None else {}
        doc = self.events.find_one({"game_id": game_id}, {"seq": 1}, sort=[("seq", DESCENDING)], **kwargs)
        return -1 if doc is None else int(doc["seq"])

    def load_events(self, game_id: str, after_seq: int = -1) -> list[EventRecord]:
        with self._errors("load_events"):
            docs = self.events.find({"game_id": game_id, "seq": {"$gt": after_seq}}, {"event": 1}).sort(
                "seq", ASCENDING
            )
            return [cast(EventRecord, doc["event"]) for doc in docs]

    def last_seq(self, game_id: str) -> int:
        with self._errors("last_seq"):
            return self._last_seq(game_id)

    # ----------------------------------------------------------------------------------------------- traces
    def append_traces(
        self, game_id: str, traces: Sequence[Mapping[str, Any]], *, max_per_game: int = MAX_TRACES_PER_GAME
    ) -> int:
        """Records are numbered ``n`` per game; the unique ``(game_id, n)`` index makes two processes that
        append at once collide instead of interleaving, and the loser renumbers and retries."""
        prepared = prepare_traces(game_id, traces)
        lock = self._append_locks[zlib.crc32(game_id.encode("utf-8")) % LOCK_STRIPES]
        with self._errors("append_traces"), lock, self._write_guard():
            if self.games.find_one({"_id": game_id}, {"_id": 1}) is None:
                raise unknown_game(game_id)
            for attempt in range(TRACE_APPEND_ATTEMPTS):
                if attempt:  # lost to another writer: back off a little, at random, so the losers spread out
                    time.sleep(random.uniform(0, 0.001 * min(attempt, 20)))
                last = self.traces.find_one({"game_id": game_id}, {"n": 1}, sort=[("n", DESCENDING)])
                stored = 0 if last is None else int(last["n"]) + 1
                if not prepared:
                    return stored
                check_trace_limit(game_id, stored, len(prepared), max_per_game)
                batch = new_id()
                docs = [
                    {"game_id": game_id, "n": stored + i, "batch": batch, "data": text}
                    for i, (_, text) in enumerate(prepared)
                ]
                try:
                    self.traces.insert_many(docs, ordered=True)
                except (DuplicateKeyError, BulkWriteError) as exc:
                    if not _is_duplicate(exc):
                        raise
                    self.traces.delete_many({"game_id": game_id, "batch": batch})  # another process won
                    continue
                return stored + len(prepared)
            raise StoreError("store_busy", f"could not append traces to game {game_id!r}; retry")

    def load_traces(self, game_id: str) -> list[dict[str, Any]]:
        with self._errors("load_traces"):
            docs = self.traces.find({"game_id": game_id}, {"data": 1}).sort("n", ASCENDING)
            return [cast(dict[str, Any], json.loads(doc["data"])) for doc in docs]

    # ------------------------------------------------------------------------------------------------ users
    def create_user(self, name: str) -> UserRecord:
        user: UserRecord = {"id": new_id(), "name": str(name), "created_at": now()}
        with self._errors("create_user"), self._write_guard():
            self.users.insert_one({"_id": user["id"], "name": user["name"], "created_at": user["created_at"]})
        return user

    def get_user(self, user_id: str) -> UserRecord | None:
        with self._errors("get_user"):
            doc = self.users.find_one({"_id": user_id})
        return {"id": doc["_id"], "name": doc["name"], "created_at": doc["created_at"]} if doc else None

    # ----------------------------------------------------------------------------------------------- tokens
    def create_token(self, name: str, scopes: Sequence[str]) -> tuple[str, TokenRecord]:
        plaintext = new_token()
        record: TokenRecord = {
            "id": new_id(),
            "name": str(name),
            "scopes": [str(scope) for scope in scopes],
            "created_at": now(),
            "revoked_at": None,
        }
        with self._errors("create_token"), self._write_guard():
            self.tokens.insert_one(
                {
                    "_id": record["id"],
                    "token_hash": hash_token(plaintext),
                    **{key: value for key, value in record.items() if key != "id"},
                }
            )
        return plaintext, record

    def verify_token(self, plaintext: str) -> TokenRecord | None:
        if not isinstance(plaintext, str) or not plaintext:
            return None
        with self._errors("verify_token"):
            doc = self.tokens.find_one({"token_hash": hash_token(plaintext), "revoked_at": None})
        return _token_record(doc) if doc else None

    def revoke_token(self, token_id: str) -> bool:
        with self._errors("revoke_token"), self._write_guard():
            result = self.tokens.update_one(
                {"_id": token_id, "revoked_at": None}, {"$set": {"revoked_at": now()}}
            )
            return result.modified_count == 1

    def list_tokens(self) -> list[TokenRecord]:
        with self._errors("list_tokens"):
            docs = self.tokens.find({}).sort([("created_at", ASCENDING), ("_id", ASCENDING)])
            return [_token_record(doc) for doc in docs]

    # ----------------------------------------------------------------------------------------- participants
    def add_participant(self, study_id: str, record: Mapping[str, Any]) -> ParticipantRecord:
        stored = json_normalise(dict(record), "participant record")
        stored.update({"id": new_id(), "study_id": str(study_id), "created_at": now()})
        with self._errors("add_participant"), self._write_guard():
            self.participants.insert_one(
                {
                    "_id": stored["id"],
                    "study_id": stored["study_id"],
                    "created_at": stored["created_at"],
                    "data": stored,
                }
            )
        return cast(ParticipantRecord, stored)

    def list_participants(self, study_id: str) -> list[ParticipantRecord]:
        with self._errors("list_participants"):
            docs = self.participants.find({"study_id": str(study_id)}).sort("created_at", ASCENDING)
            return [cast(ParticipantRecord, doc["data"]) for doc in docs]

    # ------------------------------------------------------------------------------------------ idempotency
    def remember_action(
        self, game_id: str, client_action_id: str, response: Mapping[str, Any], action_digest: str = ""
    ) -> bool:
        stored = json_normalise(dict(response), "action response")
        doc = {
            "game_id": game_id,
            "client_action_id": str(client_action_id),
            "created_at": now(),
            "response": stored,
            "action_digest": str(action_digest),
        }
        with self._errors("remember_action"), self._write_guard():
            try:
                self.actions.insert_one(doc)
            except DuplicateKeyError:
                return False
        return True

    def recall_action(self, game_id: str, client_action_id: str) -> RecalledAction | None:
        with self._errors("recall_action"):
            doc = self.actions.find_one({"game_id": game_id, "client_action_id": str(client_action_id)})
        if doc is None:
            return None
        response = cast(dict[str, Any], doc["response"])
        return RecalledAction(response=response, action_digest=str(doc.get("action_digest", "")))

    # --------------------------------------------------------------------------------------------------- kv
    def get_value(self, key: str) -> str | None:
        with self._errors("get_value"):
            doc = self.kv.find_one({"_id": key})
        return str(doc["value"]) if doc else None

    def set_value_if_absent(self, key: str, value: str) -> str:
        """A conditional insert, then a read of whoever won. Not an upsert: two racing upserts of a new key
        make MongoDB raise DuplicateKeyError to the loser but may make other servers of its wire protocol
        (SecantusDB) answer ``None``; an insert that the unique ``_id`` refuses means the same everywhere."""
        with self._errors("set_value_if_absent"), self._write_guard():
            for _attempt in range(CONDITIONAL_WRITE_ATTEMPTS):
                try:
                    self.kv.insert_one({"_id": key, "value": str(value)})
                    return str(value)
                except DuplicateKeyError:
                    pass
                doc = self.kv.find_one({"_id": key})
                if doc is not None:
                    return str(doc["value"])
                # deleted (replace_value(key, old, None)) between our insert and read: try again
            raise StoreError("store_busy", f"could not store the value of {key!r}; retry")

    def list_keys(self, prefix: str, after: str = "", limit: int = 1000) -> list[str]:
        # a range on _id (the keys with the prefix come first among those >= it); no regex over user text
        with self._errors("list_keys"):
            found = self.kv.find({"_id": {"$gte": prefix, "$gt": after}}, {"_id": 1})
            docs = found.sort("_id", 1).limit(limit)
            keys = [str(doc["_id"]) for doc in docs]
        return [key for key in keys if key.startswith(prefix)]

    def replace_value(self, key: str, expected: str | None, value: str | None) -> bool:
        with self._errors("replace_value"), self._write_guard():
            if expected is None and value is None:
                return self.kv.find_one({"_id": key}) is None
            if expected is None:
                try:
                    self.kv.insert_one({"_id": key, "value": str(value)})
                except DuplicateKeyError:
                    return False
                return True
            if value is None:
                return self.kv.delete_one({"_id": key, "value": expected}).deleted_count == 1
            result = self.kv.update_one({"_id": key, "value": expected}, {"$set": {"value": str(value)}})
            return result.matched_count == 1


# --------------------------------------------------------------------------------------------------- helpers
def _without_id(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in doc.items() if key != "_id"}


def _token_record(doc: Mapping[str, Any]) -> TokenRecord:
    return {
        "id": doc["_id"],
        "name": doc["name"],
        "scopes": list(doc["scopes"]),
        "created_at": doc["created_at"],
        "revoked_at": doc.get("revoked_at"),
    }


def _is_duplicate(exc: PyMongoError) -> bool:
    if isinstance(exc, DuplicateKeyError):
        return True
    if isinstance(exc, BulkWriteError):
        return any(error.get("code") == DUPLICATE_KEY for error in exc.details.get("writeErrors", []))
    return False
