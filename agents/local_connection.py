"""Local connections: seats of a game played in-process, through the same game master as the server.

A :class:`LocalTable` is a thin adapter over :class:`server.table.master.Table`, as the Flask-SocketIO
server is (boardgame.io's Master serves both its socket and its local transport): the same action
pipeline, envelopes, view cache, event numbering and query path, over an in-process store
(:class:`~server.store.memory.MemoryStore`), timers that fire only when asked
(:class:`~server.table.timers.ManualScheduler`) and no transport (the seats read their logs).
:meth:`LocalTable.connection` gives a :class:`LocalConnection` per seat; each answers with exactly the
protocol's shapes (``docs/protocol.md`` §1): an action's ack is the seat's envelope plus the events the
action produced that the seat may see; a refused action is ``{"ok": false, "error": {...}}`` and changes
nothing.

Several connections of one table may be driven from several threads (one per seat): every read and write
of the game holds the game's lock, and :meth:`LocalConnection.wait_for_turn` sleeps on its condition until
another seat's action wakes it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agents.connection import oversized
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance
from server.game import Game, GameError, GameSettings, visible_to
from server.store.memory import MemoryStore
from server.table.config import Settings
from server.table.envelope import number_events
from server.table.errors import ServerError
from server.table.live import LiveGame, SeatState
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.table.timers import ManualScheduler

# id(game) -> its table, for as long as some connection keeps the table (which keeps the game, so the id
# cannot be reused meanwhile); a weak key would not do: the table refers to its game
_TABLES: weakref.WeakValueDictionary[int, LocalTable] = weakref.WeakValueDictionary()
_TABLES_LOCK = threading.Lock()
_SETTINGS = Settings()


def _untimed() -> Any:
    return None


def seat_principal(seat: int, name: str) -> Principal:
    """Who acts for ``seat`` of a local table (each seat is held by its own local agent)."""
    return Principal(id=f"local:{seat}", name=name, kind="agent")


class LocalTable:
    """One in-process game at a :class:`~server.table.master.Table` of its own.

    ``clock`` (``() -> float``, seconds since the epoch) stamps each event's ``time`` as a server would, and
    runs the game's deadlines (:meth:`run_due_timers`); without one events carry no time (deterministic logs
    for tests and self-play) and the game may have no deadlines. ``hall`` names the game mode it is played
    in, as a server's envelopes do.
    """

    def __init__(
        self,
        game: Game,
        *,
        game_id: str | None = None,
        clock: Callable[[], float] | None = None,
        seat_names: list[str] | None = None,
        hall: str | None = None,
    ) -> None:
        self.game = game
        self.game_id = game_id or f"local-{game.seed}"
        self.clock = clock
        self.seat_names = seat_names or [f"Player {s}" for s in range(game.players)]
        self.scheduler = ManualScheduler()
        self.master = Table(
            _SETTINGS,
            MemoryStore(timed=clock is not None),
            self.scheduler,
            BotRegistry(lambda spec, seed: _no_bots(spec), lambda: []),
            clock=clock or _untimed,
        )
        self.principals = [seat_principal(s, name) for s, name in enumerate(self.seat_names)]
        seats = [
            SeatState(seat=s, accepts="agent", kind="agent", name=name, user_id=self.principals[s].id)
            for s, name in enumerate(self.seat_names)
        ]
        self.live: LiveGame = self.master.host(self.game_id, game, seats, hall)

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

    @property
    def lock(self) -> threading.RLock:
        return self.live.lock

    @property
    def changed(self) -> threading.Condition:
        return self.live.changed

    @property
    def times(self) -> list[float | None]:
        """When each event of the game's log happened, by the clock (None without one)."""
        with self.lock:
            return [record.get("time") for record in self.live.records]

    def apply(self, seat: int | None, action: Any) -> list[Any]:
        """A system action (``seat=None``, e.g. a timeout the runner decided on) through the table, or a
        seat's action; raises the engine's or the table's refusal and changes nothing then."""
        if seat is None:
            return self.master.apply_system(self.game_id, action)
        before = len(self.game.events)
        self.master.act(self.game_id, self.principals[seat], action, ack_view=False, ack_events=False)
        return self.game.events[before:]

    def run_due_timers(self) -> int:
        """Fire the deadlines due by the clock (a timed table's); how many fired."""
        if self.clock is None:
            return 0
        return self.scheduler.run_due(self.clock())

    def seats(self) -> list[dict[str, Any]]:
        """The envelope's ``seats``: every seat is taken and online in a local game."""
        return self.live.public_seats()

    def view(self, seat: int) -> dict[str, Any]:
        """``seat``'s player view now, from the table's view cache: built once per change and shared by
        every caller until the next event (read, don't modify)."""
        with self.lock:
            view = self.master.view_of(self.live, seat)
            assert view is not None  # a hosted game has started
            return view

    def release_view(self, seat: int) -> None:
        """Forget ``seat``'s shared view: a caller that hands it to someone who may change it releases it
        first, so the next :meth:`view` is built afresh."""
        with self.lock:
            self.live.views.pop(seat, None)

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
            return self.master.envelope(self.live, seat, with_view=with_view)


def _no_bots(spec: str) -> Any:
    raise ValueError(f"A local table seats no bots ({spec!r}): drive every seat through its connection.")


def _refusal(err: GameError | ServerError) -> dict[str, Any]:
    return {"ok": False, "error": err.to_dict()}


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
        self._principal = self.table.principals[seat]
        self._ack_views = ack_views
        self._ack_events = ack_events
        self._scanned = 0  # events of the game's log already looked at by events()
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
        """The seat's events it has not been handed yet, numbered ``n`` in its own log."""
        live = self.table.live
        with self.table.lock:
            events, records = live.game.events, live.records  # parallel: one stored record per event
            visible = [
                record
                for event, record in zip(events[self._scanned :], records[self._scanned :], strict=True)
                if visible_to(event, self._seat)
            ]
            self._scanned = len(events)
            self._numbered += len(visible)
            return number_events(visible, self._numbered)

    def act(self, action: dict[str, Any] | str | BaseModel) -> dict[str, Any]:
        too_large = oversized(action, "action")
        if too_large is not None:
            return too_large
        try:
            return self.table.master.act(
                self.table.game_id,
                self._principal,
                action,
                ack_view=self._ack_views,
                ack_events=self._ack_events,
            )
        except (GameError, ServerError) as err:
            return _refusal(err)

    def query(self, query: dict[str, Any] | str) -> dict[str, Any]:
        too_large = oversized(query, "query")
        if too_large is not None:
            return too_large
        try:
            answer = self.table.master.query(self.table.game_id, self._principal, query)
        except (GameError, ServerError) as err:
            return _refusal(err)
        return {"ok": True, **answer}

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
