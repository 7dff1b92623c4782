"""Local connections: seats of a :class:`server.game.Game` played in-process, answering like a server.

A :class:`LocalTable` holds one game (and the lock, clock and event times every seat shares);
:meth:`LocalTable.connection` gives a :class:`LocalConnection` per seat. Each answers with exactly the
protocol's shapes (``docs/protocol.md`` §1): an action's ack is the seat's envelope plus the events the
action produced that the seat may see; a refused action is ``{"ok": false, "error": GameError.to_dict()}``
and changes nothing; queries go through :func:`server.game.queries.query_context` /
:func:`~server.game.queries.answer_query`, the code the server runs, so local and remote answers agree.

Several connections of one table may be driven from several threads (one per seat): every read and
write of the game holds the table's lock, and :meth:`LocalConnection.wait_for_turn` sleeps on the
table's condition until another seat's action wakes it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from agents.connection import oversized
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance
from server.game import Game, GameError, GameSettings, viewer_log, visible_to
from server.game.actions import parse_action
from server.game.queries import answer_query, parse_query, query_context
from server.game.views import player_view

# id(game) -> its table, for as long as some connection keeps the table (which keeps the game, so the id
# cannot be reused meanwhile); a weak key would not do: the table refers to its game
_TABLES: weakref.WeakValueDictionary[int, LocalTable] = weakref.WeakValueDictionary()
_TABLES_LOCK = threading.Lock()


class LocalTable:
    """One in-process game shared by the local connections of its seats.

    ``clock`` (``() -> float``, seconds since the epoch) stamps each event's ``time`` as a server
    would; without one events carry no time (deterministic logs for tests and self-play).
    """

    def __init__(
        self,
        game: Game,
        *,
        game_id: str | None = None,
        clock: Callable[[], float] | None = None,
        seat_names: list[str] | None = None,
    ) -> None:
        self.game = game
        self.game_id = game_id or f"local-{game.seed}"
        self.clock = clock
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.times: list[float | None] = []
        self._views: dict[int, tuple[int, dict[str, Any]]] = {}  # seat -> (events when built, view)
        self.seat_names = seat_names or [f"Player {s}" for s in range(game.players)]
        self._stamp()

    @classmethod
    def of(cls, game: Game) -> LocalTable:
        """The table of ``game``: the same one for every caller, so connections made from the bare game
        share its lock and its waiters."""
        with _TABLES_LOCK:
            table = _TABLES.get(id(game))
            if table is None or table.game is not game:
                table = cls(game)
                _TABLES[id(game)] = table
            return table

    @classmethod
    def new(
        cls,
        instance: TaskInstance,
        settings: GameSettings,
        rules: RuleSet,
        seed: int = 0,
        **kwargs: Any,
    ) -> LocalTable:
        """A table around a fresh game of ``instance``."""
        return cls(Game.new(instance, settings, rules, seed), **kwargs)

    def connection(self, seat: int, *, ack_views: bool = True, ack_events: bool = True) -> LocalConnection:
        """A connection playing ``seat`` (any number of them may exist, e.g. one per thread)."""
        return LocalConnection(self, seat, ack_views=ack_views, ack_events=ack_events)

    def connections(self, *, ack_views: bool = True) -> list[LocalConnection]:
        """One connection per seat, in seat order."""
        return [self.connection(seat, ack_views=ack_views) for seat in range(self.game.players)]

    def _stamp(self) -> None:
        # the events since the last stamp happened now (one action's events share its time)
        now = self.clock() if self.clock is not None else None
        self.times.extend([now] * (len(self.game.events) - len(self.times)))

    def apply(self, seat: int | None, action: Any) -> list[Any]:
        """Apply an action (or a system action with ``seat=None``) under the lock; wakes every waiter.
        Raises :class:`GameError` and changes nothing when it is refused."""
        with self.changed:
            events = self.game.apply(seat, action)
            self._stamp()
            self.changed.notify_all()
            return events

    def seats(self) -> list[dict[str, Any]]:
        """The envelope's ``seats``: every seat is taken and online in a local game."""
        return [
            {
                "seat": seat,
                "accepts": "agent",
                "kind": "agent",
                "name": self.seat_names[seat],
                "bot": None,
                "taken": True,
                "online": True,
            }
            for seat in range(self.game.players)
        ]

    def view(self, seat: int) -> dict[str, Any]:
        """``seat``'s player view now. Views change only with events, so each is built once per change
        and shared by every caller until the next event (as the server shares them): read, don't modify."""
        with self.lock:
            size = len(self.game.events)
            cached = self._views.get(seat)
            if cached is not None and cached[0] == size:
                return cached[1]
            view = player_view(self.game, seat)
            self._views[seat] = (size, view)
            return view

    def release_view(self, seat: int) -> None:
        """Forget ``seat``'s shared view: a caller that hands it to someone who may change it releases it
        first, so the next :meth:`view` is built afresh."""
        with self.lock:
            self._views.pop(seat, None)

    def seq_of(self, seat: int, n: int) -> int | None:
        """The game's sequence number of event ``n`` of ``seat``'s log (None if there is no such event)."""
        with self.lock:
            count = -1
            for event in self.game.events:
                if visible_to(event, seat):
                    count += 1
                    if count == n:
                        return event.seq
            return None

    def envelope(self, seat: int, with_view: bool = True) -> dict[str, Any]:
        """What a server would tell ``seat`` about the game now (``docs/protocol.md`` §1); ``with_view=False``
        leaves ``view`` null (for callers that read the view when they next need it)."""
        with self.lock:
            view = self.view(seat) if with_view else None
            return {
                "game_id": self.game_id,
                "hall": None,
                "status": "finished" if self.game.finished else "running",
                "seat": seat,
                "log_size": self.game.log_size(seat),
                "deadline": None,
                "seats": self.seats(),
                "view": view,
            }


def _add_times(
    records: list[dict[str, Any]], events: list[Any], times: list[float | None], seat: int
) -> None:
    """Stamp each viewer record with the time of the event it was made from (as the store does)."""
    stamps = [t for e, t in zip(events, times, strict=True) if visible_to(e, seat)]
    for record, stamp in zip(records, stamps, strict=True):
        record["time"] = stamp


class LocalConnection:
    """One seat of a :class:`LocalTable`: a :class:`~agents.connection.SeatConnection` in-process.

    ``ack_views=False`` leaves the view out of action acks (``"view": null``; the rest of the envelope
    and the events are there): for players that read :meth:`view` before each move anyway, such as the
    seats an environment drives, it saves building a view nobody reads when the turn passes on.
    ``ack_events=False`` leaves the events out of action acks too (``"events": []``): for a driver whose
    policy neither observes events nor keeps traces linked to them, so nobody would read them.
    """

    def __init__(
        self, table: LocalTable | Game, seat: int, *, ack_views: bool = True, ack_events: bool = True
    ) -> None:
        self.table = table if isinstance(table, LocalTable) else LocalTable.of(table)
        game = self.table.game
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < game.players:
            raise GameError(
                "not_a_player",
                f"Seat {seat!r} is not a player of this game; seats are 0..{game.players - 1}.",
                {"seat": seat if isinstance(seat, int) else str(seat)},
            )
        self._seat = seat
        self._ack_views = ack_views
        self._ack_events = ack_events
        self._scanned = 0  # events of the game's log already handed out by events()
        self._numbered = 0  # how many of them this seat may see (its own log's length so far)

    @property
    def seat(self) -> int:
        return self._seat

    @property
    def game(self) -> Game:
        return self.table.game

    @property
    def finished(self) -> bool:
        return self.table.game.finished

    def view(self) -> dict[str, Any]:
        return self.table.view(self._seat)

    def envelope(self) -> dict[str, Any]:
        """The seat's envelope now (the ack of the protocol's ``view`` request)."""
        return self.table.envelope(self._seat)

    def events(self) -> list[dict[str, Any]]:
        with self.table.lock:
            events = self.table.game.events
            new = viewer_log(events[self._scanned :], self._seat, start=self._numbered)
            if self.table.clock is not None:
                _add_times(new, events[self._scanned :], self.table.times[self._scanned :], self._seat)
            self._scanned = len(events)
            self._numbered += len(new)
            return new

    def act(self, action: dict[str, Any] | str) -> dict[str, Any]:
        too_large = oversized(action, "action")
        if too_large is not None:
            return too_large
        table = self.table
        with table.changed:
            try:
                parsed = parse_action(action)
                if parsed.type == "timeout":
                    raise GameError(
                        "not_allowed",
                        "Timeouts are submitted by the server when a deadline expires, not by players.",
                    )
                before = len(table.game.events)
                table.apply(self._seat, parsed)
            except GameError as err:
                return {"ok": False, "error": err.to_dict()}
            envelope = table.envelope(self._seat, with_view=self._ack_views)
            if not self._ack_events:
                return {"ok": True, **envelope, "events": []}
            produced = table.game.events[before:]
            visible = viewer_log(produced, self._seat, start=0)
            start = envelope["log_size"] - len(visible)
            for offset, record in enumerate(visible):
                record["n"] = start + offset
            if table.clock is not None:
                _add_times(visible, produced, table.times[before:], self._seat)
            return {"ok": True, **envelope, "events": visible}

    def query(self, query: dict[str, Any] | str) -> dict[str, Any]:
        too_large = oversized(query, "query")
        if too_large is not None:
            return too_large
        table = self.table
        try:
            parsed = parse_query(query)
            with table.lock:  # copy under the lock, answer outside it (as the server does)
                times = list(table.times)
                context = query_context(
                    table.game, self._seat, parsed, (lambda seq: times[seq]) if table.clock else None
                )
            answer = answer_query(context, parsed)
        except GameError as err:
            return {"ok": False, "error": err.to_dict()}
        return {"ok": True, "game_id": table.game_id, "seat": self._seat, "answer": answer}

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.table.changed:
            while True:
                game = self.table.game
                if game.finished or self._seat in game.waiting_for():
                    return True
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self.table.changed.wait(remaining)
