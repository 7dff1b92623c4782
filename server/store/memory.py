"""The in-process store: every record in Python dicts, gone with the process.

What in-process local play (:mod:`agents.local_connection`) and the environments run the game master over:
the same :class:`~server.store.base.Store` contract as SQLite and MongoDB (``tests/test_store_contract.py``
runs its suite over all three), without a database. Values are normalised through JSON on the way in, as
the other backends do, so what comes back is what a server would give back.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import Any, cast

from server.store.base import (
    MAX_TRACES_PER_GAME,
    EventRecord,
    GameRecord,
    ParticipantRecord,
    RecalledAction,
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


class MemoryStore(Store):
    """A :class:`Store` in this process's memory (``open_store("memory://")``); one lock guards it all.

    ``timed=False`` keeps events without a time as they are instead of stamping them with the current time
    (an untimed in-process game, whose log must be the same whenever it is played)."""

    backend = "memory"

    def __init__(self, *, timed: bool = True) -> None:
        self.timed = timed
        self._lock = threading.Lock()
        self._games: dict[str, dict[str, Any]] = {}
        self._events: dict[str, list[dict[str, Any]]] = {}
        self._traces: dict[str, list[dict[str, Any]]] = {}
        self._users: dict[str, UserRecord] = {}
        self._tokens: dict[str, tuple[str, TokenRecord]] = {}  # id -> (hash, record)
        self._participants: list[ParticipantRecord] = []
        self._actions: dict[tuple[str, str], RecalledAction] = {}
        self._values: dict[str, str] = {}

    # ---- games
    def create_game(self, game_id: str, meta: Mapping[str, Any]) -> None:
        record = prepare_game(game_id, meta)
        with self._lock:
            if game_id in self._games:
                raise StoreError(
                    "game_exists",
                    f"a game with id {game_id!r} already exists; choose a new id",
                    {"game_id": game_id},
                )
            self._games[game_id] = record
            self._events[game_id] = []
            self._traces[game_id] = []

    def update_game(self, game_id: str, **fields: Any) -> None:
        update = prepare_game_update(fields)
        with self._lock:
            if game_id not in self._games:
                raise unknown_game(game_id)
            self._games[game_id].update(update)

    def get_game(self, game_id: str) -> GameRecord | None:
        with self._lock:
            record = self._games.get(game_id)
            return cast(GameRecord, copy.deepcopy(record)) if record is not None else None

    def list_games(self, status: str | None = None, limit: int = 100) -> list[GameRecord]:
        with self._lock:
            games = [g for g in self._games.values() if status is None or g["status"] == status]
            games.sort(key=lambda g: (g["created_at"], g["game_id"]), reverse=True)
            return [cast(GameRecord, copy.deepcopy(g)) for g in games[: max(0, int(limit))]]

    # ---- events
    def append_events(self, game_id: str, events: Sequence[Mapping[str, Any]]) -> list[EventRecord]:
        prepared = prepare_events(game_id, events, stamp=self.timed)
        if not prepared:
            return []
        with self._lock:
            log = self._events.get(game_id)
            if log is None:
                raise unknown_game(game_id)
            check_next_seq(game_id, prepared[0]["seq"], len(log))
            log.extend(prepared)  # nobody else holds these copies; readers get copies of them
        stamp_times(events, prepared)
        return cast(list[EventRecord], prepared)

    def load_events(self, game_id: str, after_seq: int = -1) -> list[EventRecord]:
        with self._lock:
            log = self._events.get(game_id, [])
            return cast(list[EventRecord], copy.deepcopy(log[max(after_seq + 1, 0) :]))

    def last_seq(self, game_id: str) -> int:
        with self._lock:
            return len(self._events.get(game_id, ())) - 1

    # ---- traces
    def append_traces(
        self, game_id: str, traces: Sequence[Mapping[str, Any]], *, max_per_game: int = MAX_TRACES_PER_GAME
    ) -> int:
        prepared = prepare_traces(game_id, traces)
        with self._lock:
            stored = self._traces.get(game_id)
            if stored is None:
                raise unknown_game(game_id)
            if prepared:
                check_trace_limit(game_id, len(stored), len(prepared), max_per_game)
                stored.extend(record for record, _ in prepared)
            return len(stored)

    def load_traces(self, game_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._traces.get(game_id, []))

    # ---- users
    def create_user(self, name: str) -> UserRecord:
        user: UserRecord = {"id": new_id(), "name": str(name), "created_at": now()}
        with self._lock:
            self._users[user["id"]] = user
        return dict(user)  # type: ignore[return-value]

    def get_user(self, user_id: str) -> UserRecord | None:
        with self._lock:
            user = self._users.get(user_id)
            return dict(user) if user is not None else None  # type: ignore[return-value]

    # ---- API tokens
    def create_token(self, name: str, scopes: Sequence[str]) -> tuple[str, TokenRecord]:
        plaintext = new_token()
        record: TokenRecord = {
            "id": new_id(),
            "name": str(name),
            "scopes": [str(scope) for scope in scopes],
            "created_at": now(),
            "revoked_at": None,
        }
        with self._lock:
            self._tokens[record["id"]] = (hash_token(plaintext), record)
        return plaintext, copy.deepcopy(record)

    def verify_token(self, plaintext: str) -> TokenRecord | None:
        if not isinstance(plaintext, str) or not plaintext:
            return None
        digest = hash_token(plaintext)
        with self._lock:
            for stored_hash, record in self._tokens.values():
                if stored_hash == digest and record["revoked_at"] is None:
                    return copy.deepcopy(record)
        return None

    def revoke_token(self, token_id: str) -> bool:
        with self._lock:
            found = self._tokens.get(token_id)
            if found is None or found[1]["revoked_at"] is not None:
                return False
            found[1]["revoked_at"] = now()
            return True

    def list_tokens(self) -> list[TokenRecord]:
        with self._lock:
            records = [copy.deepcopy(record) for _, record in self._tokens.values()]
        return sorted(records, key=lambda r: (r["created_at"], r["id"]))

    # ---- study participants
    def add_participant(self, study_id: str, record: Mapping[str, Any]) -> ParticipantRecord:
        stored = json_normalise(dict(record), "participant record")
        stored.update({"id": new_id(), "study_id": str(study_id), "created_at": now()})
        with self._lock:
            self._participants.append(cast(ParticipantRecord, stored))
        return cast(ParticipantRecord, copy.deepcopy(stored))

    def list_participants(self, study_id: str) -> list[ParticipantRecord]:
        with self._lock:
            return [copy.deepcopy(p) for p in self._participants if p["study_id"] == study_id]

    # ---- idempotency of client actions
    def remember_action(
        self, game_id: str, client_action_id: str, response: Mapping[str, Any], action_digest: str = ""
    ) -> bool:
        recalled = RecalledAction(
            response=json_normalise(dict(response), "action response"), action_digest=str(action_digest)
        )
        with self._lock:
            key = (game_id, str(client_action_id))
            if key in self._actions:
                return False
            self._actions[key] = recalled
            return True

    def recall_action(self, game_id: str, client_action_id: str) -> RecalledAction | None:
        with self._lock:
            recalled = self._actions.get((game_id, str(client_action_id)))
            return copy.deepcopy(recalled) if recalled is not None else None

    # ---- small settings
    def get_value(self, key: str) -> str | None:
        with self._lock:
            return self._values.get(key)

    def set_value_if_absent(self, key: str, value: str) -> str:
        with self._lock:
            return self._values.setdefault(key, str(value))

    def list_keys(self, prefix: str, after: str = "", limit: int = 1000) -> list[str]:
        with self._lock:
            keys = sorted(k for k in self._values if k.startswith(prefix) and k > after)
        return keys[:limit]

    def replace_value(self, key: str, expected: str | None, value: str | None) -> bool:
        with self._lock:
            if self._values.get(key) != expected:
                return False
            if value is None:
                self._values.pop(key, None)
            else:
                self._values[key] = str(value)
            return True

    def close(self) -> None:
        """Nothing to release: the records go with the object."""
