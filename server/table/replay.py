"""Replays of games that are over: what a seat (or a spectator, or a researcher) saw after each event.

``GET /api/games/<id>/replay?view=spectator|<seat>|researcher&step=K`` (or ``&turn=T``) answers
:class:`ReplayStep`: the viewer's event number ``K`` (numbered as the viewer's own log numbers it, the way
the live game numbered it: ``n`` = 0, 1, 2, ...) and the viewer's view right after it, rebuilt by replaying
the engine (:mod:`server.game`) over the stored log. ``turn=T`` goes to the start of turn T in that log.

Who may see what:

- ``spectator`` (the default): anyone, the same public information a live spectator had;
- a seat: the person or token that held it, and admins. A seat's view holds its private information
  (its crafting, its rejected proposals, its ToM reports), which stays private after the game too;
- ``researcher``: admins only (everything, numbered by the global sequence).

A game that is not over is refused with ``game_not_over`` (its log would show what players have not yet
seen); watch it live instead. Cost is bounded: a game's replay is cached (:class:`ReplayCache`, a few
games, a few hundred answers each); an answer costs at most one replay of the stored log, whose length is
that of the finished game, and stepping forward reuses the previous position (one event's work).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from craft_rules.model import RuleSet
from craft_rules.number_text import whole_number
from craft_rules.tasks import TaskInstance
from server.game.events import Event, as_events, visible_to
from server.game.settings import GameSettings
from server.game.state import Game
from server.game.views import player_view, researcher_view, spectator_view
from server.table.envelope import number_events
from server.table.errors import ServerError
from server.table.live import LiveGame
from server.table.master import Table
from server.table.principal import Principal

#: Games whose replays are kept in memory, and answers kept per game.
CACHED_GAMES = 8
CACHED_ANSWERS_PER_GAME = 256
#: Events before the current one that an answer carries, for the viewer's timeline.
RECENT_EVENTS = 12

OVER = ("finished", "aborted")

Viewer = Literal["spectator", "seat", "researcher"]


class TurnStart(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn: Annotated[int, Field(ge=1)]
    step: Annotated[int, Field(ge=0, description="the first step of the turn in this viewer's log")]


class ReplayStep(BaseModel):
    """One step of a replay: a viewer's event ``step`` and its view right after it."""

    model_config = ConfigDict(extra="forbid")

    ok: Literal[True] = True
    game_id: str
    status: Literal["finished", "aborted"]
    viewer: Viewer
    seat: Annotated[int, Field(ge=0)] | None = Field(description="the seat whose view this is (seat viewer)")
    step: Annotated[int, Field(ge=0)] = Field(description="the event's number n in this viewer's log")
    steps: Annotated[int, Field(ge=1)] = Field(description="how many events this viewer's log holds")
    turn: int = Field(description="the turn in play after the event")
    event: dict[str, Any] = Field(description="the event, as this viewer received it (n, type, actor, ...)")
    view: dict[str, Any] = Field(
        description="the viewer's view after the event: PlayerView, SpectatorView or the researcher view"
    )
    recent: list[dict[str, Any]] = Field(
        description=f"the viewer's events before this one (at most {RECENT_EVENTS}, oldest first)"
    )
    revealed: dict[str, Any] | None = Field(
        description="the targets_revealed payload (targets, winners, scores) once the log reached it"
    )
    turns: list[TurnStart] = Field(description="where each turn starts in this viewer's log")
    seats: list[dict[str, Any]] = Field(description="the seats as everyone may see them (names, kinds)")
    viewers: list[str] = Field(
        description="the views this caller may replay: 'spectator', seat numbers as text, 'researcher'"
    )


@dataclass
class _GameReplay:
    """One game's log and an engine positioned somewhere in it (guarded by ``lock``)."""

    game_id: str
    status: str
    instance: TaskInstance
    settings: GameSettings
    rules: RuleSet
    seed: int
    records: list[dict[str, Any]]
    events: list[Event]
    lock: threading.Lock = field(default_factory=threading.Lock)
    cursor: Game | None = None
    logs: dict[int | None, list[int]] = field(default_factory=dict)  # viewer -> global index of step k
    answers: OrderedDict[tuple[str, int], dict[str, Any]] = field(default_factory=OrderedDict)

    def log_of(self, seat: int | None, researcher: bool) -> list[int]:
        """Global indices of the events the viewer saw, in order (the researcher saw them all)."""
        key = -1 if researcher else seat
        if key not in self.logs:
            self.logs[key] = (
                list(range(len(self.events)))
                if researcher
                else [i for i, e in enumerate(self.events) if visible_to(e, seat)]
            )
        return self.logs[key]

    def game_after(self, index: int) -> Game:
        """The engine right after global event ``index``: forward from the cursor, else from the start."""
        wanted = index + 1
        cursor = self.cursor
        if cursor is None or len(cursor.events) > wanted:
            cursor = Game.replay(self.instance, self.settings, self.rules, self.seed, self.records[:wanted])
        elif len(cursor.events) < wanted:
            cursor.apply_events(self.records[len(cursor.events) : wanted])
        self.cursor = cursor
        return cursor


class ReplayCache:
    """The replays of the last few games asked for (LRU)."""

    def __init__(self, size: int = CACHED_GAMES) -> None:
        self._size = size
        self._games: OrderedDict[str, _GameReplay] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, live: LiveGame) -> _GameReplay:
        with self._lock:
            replay = self._games.get(live.game_id)
            if replay is not None:
                self._games.move_to_end(live.game_id)
                return replay
        with live.lock:
            records = list(live.records)
            status = live.status
        replay = _GameReplay(
            game_id=live.game_id,
            status=status,
            instance=live.instance,
            settings=live.settings,
            rules=live.rules,
            seed=live.seed,
            records=records,
            events=as_events(records),
        )
        with self._lock:
            self._games[live.game_id] = replay
            self._games.move_to_end(live.game_id)
            while len(self._games) > self._size:
                self._games.popitem(last=False)
        return replay


def _turns(replay: _GameReplay, log: list[int]) -> list[TurnStart]:
    starts: dict[int, int] = {}
    for step, index in enumerate(log):
        event = replay.events[index]
        if event.type == "phase_started":
            starts.setdefault(int(event.payload["turn"]), step)
    return [TurnStart(turn=t, step=s) for t, s in sorted(starts.items())]


def parse_viewer(raw: str | None, players: int) -> tuple[Viewer, int | None]:
    """``view=spectator|researcher|<seat>`` (default spectator)."""
    if raw is None or raw in ("", "spectator"):
        return "spectator", None
    if raw == "researcher":
        return "researcher", None
    seat = whole_number(raw)  # the one number grammar: ASCII digits, bounded
    if seat is None or not 0 <= seat < players:
        raise ServerError(
            "invalid_request",
            f"view must be 'spectator', 'researcher' or a seat number from 0 to {players - 1}.",
            {"view": raw[:18]},
        )
    return "seat", seat


class Replays:
    """Answers replay steps for the web layer; see the module's docstring for who may see what."""

    def __init__(self, table: Table, cache: ReplayCache | None = None) -> None:
        self.table = table
        self.cache = cache or ReplayCache()

    def allowed_viewers(self, live: LiveGame, principal: Principal | None, admin: bool) -> list[str]:
        seats = range(len(live.seats)) if admin else (live.seats_of(principal) if principal else [])
        return ["spectator", *(str(s) for s in seats), *(["researcher"] if admin else [])]

    def step(
        self,
        game_id: str,
        principal: Principal | None,
        admin: bool,
        view: str | None,
        step: int | None,
        turn: int | None,
    ) -> dict[str, Any]:
        live = self.table.get(game_id)
        with live.lock:
            self.table.catch_up(live)
            status = live.status
            viewers = self.allowed_viewers(live, principal, admin)
            seats = live.public_seats()
            players = len(live.seats)
        if status not in OVER:
            raise ServerError(
                "game_not_over",
                f"Game {game_id} is {status}: its replay opens when it is over. Watch it live meanwhile "
                f"(/games/{game_id}/watch).",
                {"status": status},
                status=409,
            )
        viewer, seat = parse_viewer(view, players)
        asked = "researcher" if viewer == "researcher" else ("spectator" if seat is None else str(seat))
        if asked not in viewers:
            raise ServerError(
                "forbidden",
                "Only the player who held a seat (or an admin) may replay that seat's view, and only admins "
                "the researcher view; everyone may replay the spectator's view.",
                {"view": asked, "allowed": viewers},
                status=403,
            )
        replay = self.cache.get(live)
        with replay.lock:
            log = replay.log_of(seat, viewer == "researcher")
            if not log:
                raise ServerError(
                    "not_started", "The game ended before it started: there is nothing to replay."
                )
            turns = _turns(replay, log)
            if turn is not None:
                start = next((t.step for t in turns if t.turn == turn), None)
                if start is None:
                    raise ServerError(
                        "invalid_request",
                        f"This game has no turn {turn}: its turns run from {turns[0].turn if turns else 1} "
                        f"to {turns[-1].turn if turns else 1}.",
                        {"turn": turn},
                    )
                step = start
            if step is None:
                step = len(log) - 1
            if not 0 <= step < len(log):
                raise ServerError(
                    "invalid_request",
                    f"step must be an event number from 0 to {len(log) - 1} of this viewer's log.",
                    {"step": step, "steps": len(log)},
                )
            key = (asked, step)
            cached = replay.answers.get(key)
            if cached is None:
                cached = self._answer(replay, viewer, seat, step, log)
                replay.answers[key] = cached
                while len(replay.answers) > CACHED_ANSWERS_PER_GAME:
                    replay.answers.popitem(last=False)
            else:
                replay.answers.move_to_end(key)
        return {
            **cached,
            "turns": [t.model_dump() for t in turns],
            "seats": seats,
            "viewers": viewers,
        }

    @staticmethod
    def _answer(
        replay: _GameReplay, viewer: Viewer, seat: int | None, step: int, log: list[int]
    ) -> dict[str, Any]:
        index = log[step]
        # game_started and the first phase_started are one transition (no one ever saw the state between)
        game = replay.game_after(max(index, min(1, len(replay.events) - 1)))
        researcher = viewer == "researcher"

        def numbered(first: int, end: int) -> list[dict[str, Any]]:
            """Steps ``first`` .. ``end - 1`` of the viewer's log, numbered as the live game numbered them
            (:func:`~server.table.envelope.number_events`); a researcher's keep ``seq`` and every field."""
            records = [replay.records[log[k]] for k in range(first, end)]
            if researcher:
                return [
                    {"n": k, **{key: v for key, v in record.items() if key != "game_id"}}
                    for k, record in zip(range(first, end), records, strict=True)
                ]
            return number_events(records, end)

        if researcher:
            view = researcher_view(game)
            view.pop("events", None)  # the whole log: the replay steps through it instead
        else:
            view = player_view(game, seat) if seat is not None else spectator_view(game)
        revealed = (
            next(
                (
                    dict(replay.events[log[k]].payload)
                    for k in range(step, -1, -1)
                    if replay.events[log[k]].type == "targets_revealed"
                ),
                None,
            )
            if game.finished
            else None
        )
        return {
            "ok": True,
            "game_id": replay.game_id,
            "status": replay.status,
            "viewer": viewer,
            "seat": seat,
            "step": step,
            "steps": len(log),
            "turn": game.turn,
            "event": numbered(step, step + 1)[0],
            "view": view,
            "recent": numbered(max(0, step - RECENT_EVENTS), step),
            "revealed": revealed,
        }
