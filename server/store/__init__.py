"""Persistence behind one small interface (:class:`Store`); SQLite (embedded default) and MongoDB backends.

``open_store(url)`` picks the backend from the URL:

- ``sqlite:///abs/path/tradecraft.db`` — a file (its directory is created), WAL mode, safe across threads and
  processes; query options ``?synchronous=FULL|NORMAL`` (default FULL: each append is fsynced) and
  ``&busy_timeout_ms=N``. ``sqlite:///:memory:`` is a private in-memory database (tests).
- ``mongodb://[user:pass@]host:port/dbname[?options]`` (or ``mongodb+srv://``) — pymongo; indexes are
  created on open; the database name defaults to ``tradecraft``.
- ``memory://`` — this process's memory, nothing persisted (in-process local play and the environments).
- ``mongomock://localhost/dbname`` — the MongoDB backend over an in-process mongomock client (tests only).
"""

from __future__ import annotations

from server.store.base import (
    SCHEMA_VERSION,
    EventRecord,
    GameRecord,
    ParticipantRecord,
    RecalledAction,
    SeatRecord,
    SequenceConflict,
    Store,
    StoreError,
    TokenRecord,
    UserRecord,
)

__all__ = [
    "SCHEMA_VERSION",
    "EventRecord",
    "GameRecord",
    "ParticipantRecord",
    "RecalledAction",
    "SeatRecord",
    "SequenceConflict",
    "Store",
    "StoreError",
    "TokenRecord",
    "UserRecord",
    "open_store",
]


def open_store(url: str) -> Store:
    """Open the store named by ``url`` (see the module docstring). Raises StoreError ``invalid_store_url``."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "memory":
        from server.store.memory import MemoryStore

        return MemoryStore()
    if scheme == "sqlite":
        from server.store.sqlite import SQLiteStore

        return SQLiteStore.from_url(url)
    if scheme in ("mongodb", "mongodb+srv", "mongomock"):
        from server.store.mongo import MongoStore

        return MongoStore.from_url(url)
    raise StoreError(
        "invalid_store_url",
        f"store URL {url.split('@')[-1]!r} is not understood: use sqlite:///ABS/PATH/tradecraft.db, "
        "sqlite:///:memory: or mongodb://HOST:PORT/DBNAME",
        {"scheme": scheme},
    )
