"""Every problem the server logged about a game, kept with the game for its admin page.

:class:`GameErrorLog` is a :class:`logging.Handler` the app factory installs on the ``server`` logger (the
table's, the web layer's and the study code's loggers are below it; library loggers such as the database
driver's are not, so the handler never calls the store from inside the driver's own logging): each
WARNING-or-worse record whose message names a game of this app's store ("game %s: ..." as the table and the
bot seats log, or a game id among its string arguments) is appended to the store value
``game_errors:<game id>`` — in the store, not in memory, so every worker process adds to the same list and
the admin sees them whichever worker serves the page. A game keeps its last :data:`ERRORS_KEPT` records, each
message at most :data:`MESSAGE_MAX_CHARS` characters, with the credential-like values of the server's
environment cut out (``[redacted]``, as in traces). ``GET /api/admin/games/<id>/errors`` reads them.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from server.store import Store
from server.table.actions import race_attempts
from server.table.traces import environment_secrets

#: Records kept per game (the oldest are dropped first) and the longest message kept.
ERRORS_KEPT = 200
MESSAGE_MAX_CHARS = 1000
#: Game ids a record may name that are looked up in the store (each a read): the first few only.
CANDIDATES_CHECKED = 3

ERRORS_KEY_PREFIX = "game_errors:"
#: The logger whose records (and its children's) are kept.
LOGGER = "server"
#: What a game id looks like (the lobby's ids are ``secrets.token_urlsafe``), and where a message names one.
GAME_ID = re.compile(r"[A-Za-z0-9_-]{4,64}")
NAMED_GAME = re.compile(r"\bgames? ([A-Za-z0-9_-]{4,64})\b")


def errors_key(game_id: str) -> str:
    return ERRORS_KEY_PREFIX + game_id


def read_errors(store: Store, game_id: str) -> list[dict[str, Any]]:
    """The game's kept records, oldest first (empty when it has none)."""
    return _parsed(store.get_value(errors_key(game_id)))


def _parsed(raw: str | None) -> list[dict[str, Any]]:
    if raw is None:
        return []
    try:
        records = json.loads(raw)
    except ValueError:
        return []
    return records if isinstance(records, list) else []


class GameErrorLog(logging.Handler):
    """The handler of the module's docstring, writing into ``store``."""

    def __init__(self, store: Store) -> None:
        super().__init__(level=logging.WARNING)
        self.store = store
        self.secrets = environment_secrets()
        self._busy = threading.local()  # a store write that logs a warning must not recurse
        #: records not kept: every conditional write lost (for race_attempts' time), or the store failed
        self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._busy, "on", False):
            return
        self._busy.on = True
        try:
            message = record.getMessage()
            game_ids = self._games_named(message, record.args)
            if not game_ids:
                return
            entry = self._entry(record, message)
            for game_id in game_ids:
                self._append(game_id, entry)
        except (
            Exception
        ):  # a log handler never breaks the code that logged (nor logs: it would come back here)
            self.dropped += 1
        finally:
            self._busy.on = False

    def _games_named(self, message: str, args: Any) -> list[str]:
        candidates = NAMED_GAME.findall(message)
        values = args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else ()
        candidates += [a for a in values if isinstance(a, str) and GAME_ID.fullmatch(a)]
        found: list[str] = []
        for candidate in list(dict.fromkeys(candidates))[:CANDIDATES_CHECKED]:
            if self.store.get_game(candidate) is not None:
                found.append(candidate)
        return found

    def _entry(self, record: logging.LogRecord, message: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "time": record.created,
            "level": record.levelname,
            "logger": record.name,
            "message": self._safe(message),
        }
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            entry["exception"] = self._safe(f"{type(error).__name__}: {error}")
        return entry

    def _safe(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        return text if len(text) <= MESSAGE_MAX_CHARS else text[: MESSAGE_MAX_CHARS - 1] + "…"

    def _append(self, game_id: str, entry: dict[str, Any]) -> None:
        key = errors_key(game_id)
        for _ in race_attempts():  # jittered, doubling waits: writers in other processes stop colliding
            raw = self.store.get_value(key)
            updated = json.dumps(
                [*_parsed(raw), entry][-ERRORS_KEPT:], separators=(",", ":"), ensure_ascii=False
            )
            if self.store.replace_value(key, raw, updated):
                return
        self.dropped += 1  # counted, never logged: a log line here would come back to this handler


def install(store: Store, on_close: list[Callable[[], None]]) -> GameErrorLog:
    """Attach a :class:`GameErrorLog` of ``store`` to the ``server`` logger, detached by ``on_close`` (the
    app's ``Services.on_close``: tests build many apps in one process)."""
    handler = GameErrorLog(store)
    root = logging.getLogger(LOGGER)
    root.addHandler(handler)
    on_close.append(lambda: root.removeHandler(handler))
    return handler
