"""One logging rule: text that came from a client reaches the log escaped and bounded, and repeated
refusals from one caller are summarised instead of logged one line each.

- :func:`log_text` makes one value safe for a log line: every character ``str.isprintable`` refuses (newline,
  CR, ESC and other controls, format characters such as bidi overrides, U+2028/U+2029 line separators) is
  written the way ``repr`` writes it (``\\n``, ``\\x1b``, ``\\u2028``), a backslash is doubled (so an escape
  seen in the log was never sent as text), and the result is cut to a bound with a ``…(+N chars)`` tail.
- :func:`install_log_escaping` is the class-wide net: every log record of the process (ours, werkzeug's
  request lines, engine.io's, gunicorn's) has its formatted message escaped and bounded the same way, also
  when the caller formatted user text into the message before logging. Tracebacks are not messages: they
  keep their lines. werkzeug's lines about requests it cannot parse (a client's fault) become WARNING.
- :class:`RefusalLog` logs the first refusal of a caller, counts the next ones, and writes "N more refusals
  from X in the last 60 s" once per interval (bounded memory).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

#: Longest piece of client text (a path, a name, an event name) one log line carries.
LOG_TEXT_MAX_CHARS = 200
#: Longest message one log record carries once formatted (ours are far shorter; werkzeug's request line
#: carries the whole URL).
LOG_MESSAGE_MAX_CHARS = 500
#: Callers whose refusals are being counted at once; more are summarised early (oldest first).
REFUSAL_KEYS_KEPT = 10_000


def _escape(text: str, escape_backslash: bool) -> str:
    if text.isprintable() and not (escape_backslash and "\\" in text):
        return text  # the common case, checked at C speed
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\" if escape_backslash else char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])  # "\n", "\x1b", "\u2028", ...
    return "".join(out)


def log_text(value: Any, limit: int = LOG_TEXT_MAX_CHARS) -> str:
    """``value`` (client text, or anything whose ``str`` may hold some) escaped and bounded for a log line;
    the bound applies before escaping, so a huge input is never copied whole."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        return f"{_escape(text[:limit], True)}…(+{len(text) - limit} chars)"
    return _escape(text, True)


def safe_message(message: str, limit: int = LOG_MESSAGE_MAX_CHARS) -> str:
    """A whole formatted log message escaped (its backslashes kept: the message's own text may hold them)
    and bounded."""
    if len(message) > limit:
        return f"{_escape(message[:limit], False)}…(+{len(message) - limit} chars)"
    return _escape(message, False)


#: werkzeug colours its request lines with ANSI codes even into files, after escaping the request's own
#: control characters: an escape sequence in its record is its own styling, dropped rather than escaped.
_ANSI_STYLE = re.compile(r"\x1b\[[0-9;]*m")


class _EscapedLogRecord(logging.LogRecord):
    def getMessage(self) -> str:
        message = super().getMessage()
        if self.name == "werkzeug":
            message = _ANSI_STYLE.sub("", message)
        return safe_message(message)


#: werkzeug's development server logs a request it cannot parse (a bad request line, too many or too long
#: headers, an HTTP version it does not speak: "code 4xx/505, message ...") at ERROR; the fault is the
#: client's, so any client could write ERROR lines.
_WERKZEUG_CLIENT_FAULT = re.compile(r"\] code (4\d\d|505), message ")


def _demote_client_faults(record: logging.LogRecord) -> None:
    if (
        record.name == "werkzeug"
        and record.levelno == logging.ERROR
        and _WERKZEUG_CLIENT_FAULT.search(record.getMessage())
    ):
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)


_escaped_classes: dict[type[logging.LogRecord], type[logging.LogRecord]] = {
    logging.LogRecord: _EscapedLogRecord
}


def _escaped_class(cls: type[logging.LogRecord]) -> type[logging.LogRecord]:
    if cls not in _escaped_classes:
        _escaped_classes[cls] = type(f"Escaped{cls.__name__}", (_EscapedLogRecord, cls), {})
    return _escaped_classes[cls]


def install_log_escaping() -> None:
    """Make every log record of this process escape and bound its formatted message (idempotent; wraps
    a record factory installed before). The record's class changes, not its fields, so handlers that
    pickle records (queues, sockets) still can."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "escapes_log_text", False):
        return

    def escaped_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if not isinstance(record, _EscapedLogRecord):
            record.__class__ = _escaped_class(type(record))
        _demote_client_faults(record)
        return record

    escaped_record.escapes_log_text = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(escaped_record)


class RefusalLog:
    """Refusals counted per caller key (a connection id or a network address): the first in an interval is
    logged, the others are counted and summarised once the interval is over (at the caller's next refusal,
    when the caller goes away, or when more than :data:`REFUSAL_KEYS_KEPT` callers are being counted)."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = REFUSAL_KEYS_KEPT,
    ) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self.max_keys = max_keys
        self._lock = threading.Lock()
        # key -> [interval start, refusals counted but not logged, label of the caller]
        self._open: dict[str, list[Any]] = {}

    def should_log(self, key: str, label: Callable[[], str]) -> str | None:
        """Count one refusal by ``key``: the caller's name (``label()``, called only then) when this one is
        to be logged in full, else None (counted for the interval's summary)."""
        now = self.clock()
        due: list[tuple[str, int]] = []
        with self._lock:
            held = self._open.get(key)
            if held is not None and now - held[0] < self.interval:
                held[1] += 1
                return None
            if held is not None:
                del self._open[key]
                if held[1]:
                    due.append((held[2], held[1]))
            while len(self._open) >= self.max_keys:
                oldest = next(iter(self._open))
                _, count, who = self._open.pop(oldest)
                if count:
                    due.append((who, count))
            caller = label()
            self._open[key] = [now, 0, caller]
        for who, count in due:
            self._summarise(who, count)
        return caller

    def forget(self, key: str) -> None:
        """The caller went away: write its pending summary now."""
        with self._lock:
            held = self._open.pop(key, None)
        if held is not None and held[1]:
            self._summarise(held[2], held[1])

    def _summarise(self, who: str, count: int) -> None:
        self.logger.info("%d more refusals from %s in the last %g s", count, who, self.interval)
