"""The study matcher: the waiting room's rule, the study games' seating and their supervision.

One :class:`StudyMatcher` per app, a background task (a round every :data:`ROUND_SECONDS`), stopped with the
app. Every decision is a conditional write in the store, so a restart resumes where the last round stopped
and two server processes never act twice on one participant:

- **one matcher at a time**: a round matches and supervises only while its process holds the lease
  (:data:`LEASE_KEY`, a value with an expiry time written with ``Store.replace_value``); a process that dies
  holding it loses it after :data:`LEASE_SECONDS`. Every process notes its own players' connections
  (:func:`connected_key`), so the lease holder sees a participant connected to any process.
- **matching**: a study's waiting participants who are present (``flow.is_present`` with
  :data:`PRESENCE_MARGIN_SECONDS` to spare) are grouped in arrival order into games of ``group_size``
  (:func:`arrival_groups`). For each group (:meth:`StudyMatcher.form_game`): its
  :class:`~server.web.study.records.StudyGame` is written first (the plan); the game is created in the
  study's hall with the fill-in in every human seat left over, its seats held for the group
  (``seat_holds``), and every member is seated (``lobby.join``), which starts it; only then is each member
  ``flow.matched`` (a conditional write: never matched twice), so a page never opens a game that is not
  ready. A member no longer waiting and present by then is not matched: their seat goes to the fill-in at
  once; if nobody was matched, the game is aborted and the plan removed. A crash part-way is repaired by a
  later round (:meth:`StudyMatcher._repair`, after :data:`REPAIR_AFTER_SECONDS`).
- **the maximum wait**: the oldest present participant waited ``max_wait_seconds`` and no group is full:
  ``on_timeout: fill`` seats the present ones with the fill-in; ``exit`` ends their wait with ``no_partner``.
  One who is not present leaves with ``no_partner`` (whatever the rule) once they waited the maximum wait
  and one more presence check (:func:`absent_wait_limit`), so an open page nobody answers frees its place.
- **silence**: anyone silent longer than ``dropout.waiting_grace_seconds`` before the game (or between two
  games, or after the last) is dropped; silent since :func:`last_heard`: their ``last_seen_at`` or the
  moment they entered their current step; a closed study's waiting participants leave with
  ``no_partner``; a paused one still matches those already in it.
- **supervision** of every study game not yet settled: the end of a finished game is recorded for each
  participant (``flow.game_over``: won / lost / no_winner and the points; aborted: ``aborted``), which is
  idempotent; a participant disconnected from their running game for ``dropout.disconnect_grace_seconds``,
  or whose seat a bot took over after idle timeouts, is dropped and their seat handed to the study's fill-in
  (:func:`hand_to_fill_in`, which the admin's "boot" calls too), so the other players are never stuck.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from flask_socketio import SocketIO

from server.store import Store
from server.table.config import SeatSpec, Settings
from server.table.errors import ServerError
from server.table.master import Table
from server.table.names import name_key
from server.table.principal import Principal
from server.web.auth import principal_for_user
from server.web.lobby import Lobby, new_game_id
from server.web.seat_holds import hold_record
from server.web.study import flow
from server.web.study.definition import StudyDefinition
from server.web.study.records import (
    GameEntry,
    Participant,
    StudyGame,
    StudyRecord,
    game_key,
    load_participant,
    now,
    participant_key,
)
from server.web.study.service import Studies

log = logging.getLogger(__name__)

#: Seconds between two rounds of the matcher.
ROUND_SECONDS = 1.0
#: Store key of the matcher's lease: ``{"holder": <process token>, "until": <epoch seconds>}``.
LEASE_KEY = "study:matcher:lease"
#: How long a lease lasts without renewal (each round renews it): a dead holder's lease passes on after this.
LEASE_SECONDS = 5.0
#: A participant is grouped only while their presence holds this much longer, so the ``flow.matched`` write
#: that follows in the same round finds them present.
PRESENCE_MARGIN_SECONDS = 1.0
#: A study game's seats are held for its participants this long (the matcher seats them at once; the hold
#: covers a crash between the game's creation and their seating).
HOLD_SECONDS = 600.0
#: A plan whose game is not running this long after it was written was left by a crash while it was formed
#: (forming takes well under a second): the next round undoes it.
REPAIR_AFTER_SECONDS = 30.0
#: Participant keys listed per store call.
KEYS_PER_PAGE = 500
#: Shortest gap between two notes of one seat's connection in the store (per process).
CONNECTED_REFRESH_SECONDS = 2.0


class StudyServices(Protocol):
    """What the matcher needs of the app's services (server/web/services.py, which imports this package)."""

    settings: Settings
    store: Store
    table: Table
    lobby: Lobby
    studies: Studies
    socketio: SocketIO


def connected_key(study_id: str, game_id: str, seat: int) -> str:
    """Store key of the last time a process saw the seat's holder connected to the game (epoch seconds)."""
    return f"study:{study_id}:connected:{game_id}:{seat}"


def matcher_principal(definition: StudyDefinition) -> Principal:
    """Who creates a study's games (recorded as their creator; it takes no seat)."""
    return Principal(id=f"study:{definition.id}", name=f"Study {definition.id}", kind="agent")


def fill_in_spec(definition: StudyDefinition, settings: Settings) -> SeatSpec:
    """The seat of the study's fill-in. Without a ``fill_in.name`` it is named like every bot seat (the
    lobby's one naming rule): the game room marks bot seats as bots, so a person-like name would only
    contradict its badge."""
    return definition.seat_spec(definition.waiting_room.fill_in, settings)


def hand_to_fill_in(services: StudyServices, definition: StudyDefinition, game_id: str, seat: int) -> None:
    """The study's fill-in plays ``seat`` of the running game ``game_id`` from its next move on (a dropout's
    or a booted participant's seat). The table's typed refusals pass through (``game_over``, ...)."""
    spec = fill_in_spec(definition, services.settings)
    assert spec.bot is not None  # a fill-in is a bot or a listed model, never a person
    services.table.hand_seat_to_bot(game_id, seat, spec.bot)
    log.info("study %s: game %s seat %s handed to the fill-in %s", definition.id, game_id, seat, spec.bot)


# ------------------------------------------------------------------------------------------------- rounds
@dataclass
class RoundReport:
    """What one round did (logged; tests and benchmarks read it)."""

    led: bool = False
    matched: list[str] = field(default_factory=list)
    games: list[str] = field(default_factory=list)
    no_partner: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)

    def any(self) -> bool:
        return bool(self.matched or self.games or self.no_partner or self.dropped or self.settled)


class StudyMatcher:
    """The app's matcher and game supervisor (see the module's docstring)."""

    def __init__(self, services: StudyServices, interval: float = ROUND_SECONDS) -> None:
        self.services = services
        self.store = services.store
        self.interval = interval
        self.token = secrets.token_hex(8)  # this process, in the lease
        self.stopped = threading.Event()
        self._settled: set[str] = set()  # study games whose every participant's end is recorded
        self._finished: set[str] = set()  # store keys of participants who finished (step done)
        self._connected_noted: dict[tuple[str, int], float] = {}  # last note written to the store
        self._connected_seen: dict[tuple[str, int], float] = {}  # last round that saw a connection here
        self._connection_traced: dict[tuple[str, int], bool] = {}  # last state logged on the participant
        self._handed_by_researcher: set[tuple[str, int]] = set()  # (game, seat) taken over, not idle
        self._lock = threading.Lock()  # one round at a time in this process

    # ---------------------------------------------------------------------------------------- running
    def start(self) -> Callable[[], None]:
        """Run rounds in the background until the returned stop function is called (``Services.on_close``)."""
        self.services.socketio.start_background_task(
            _run_until_stopped, weakref.ref(self), self.stopped, self.interval
        )
        return self.stop

    def stop(self) -> None:
        if self.stopped.is_set():  # stopped already (a test, then the app's close): the store may be closed
            return
        self.stopped.set()
        with self._lock:
            raw = self.store.get_value(LEASE_KEY)
            if raw is not None and _lease_holder(raw) == self.token:
                self.store.replace_value(LEASE_KEY, raw, None)  # the next process need not wait it out

    def round(self) -> RoundReport:
        """One pass over every stored study: connections noted; with the lease, matching and supervision."""
        report = RoundReport()
        with self._lock:
            if self.stopped.is_set():
                return report
            records = self.services.studies.all()
            if not records:  # a server without studies writes nothing (no lease renewed every second)
                return report
            studies: list[tuple[StudyRecord, StudyDefinition]] = []
            for record in records:
                try:
                    studies.append((record, self.services.studies.definition(record)))
                except Exception as err:  # one bad study must not stop the others
                    log.warning("study %s cannot be matched: %s", record.definition.get("id"), err)
            games = {d.id: list(self._open_games(d)) for _, d in studies}
            for _, definition in studies:
                self._note_connections(definition, games[definition.id])
            if not self._take_lease():
                return report
            report.led = True
            for record, definition in studies:
                try:
                    self._supervise(definition, games[definition.id], report)
                    self._match(record, definition, report)
                except Exception:
                    log.exception("study %s: the matcher's round failed", definition.id)
        if report.any():
            log.info(
                "study matcher: %d matched into %d games, %d no partner, %d dropped, %d games settled",
                len(report.matched),
                len(report.games),
                len(report.no_partner),
                len(report.dropped),
                len(report.settled),
            )
        return report

    def _take_lease(self) -> bool:
        """Hold (or renew) the lease; False while another live process holds it."""
        at = time.time()
        value = json.dumps({"holder": self.token, "until": round(at + LEASE_SECONDS, 3)})
        raw = self.store.get_value(LEASE_KEY)
        if raw is not None and _lease_holder(raw) != self.token and _lease_until(raw) > at:
            return False
        return self.store.replace_value(LEASE_KEY, raw, value)

    # --------------------------------------------------------------------------------------- matching
    def _match(self, record: StudyRecord, definition: StudyDefinition, report: RoundReport) -> None:
        at = now()
        grace = definition.dropout.waiting_grace_seconds
        room = definition.waiting_room
        queue: list[Participant] = []
        for participant in self._unfinished(definition):
            if participant.step == "playing":
                continue
            if at - last_heard(participant) > grace + flow.SEEN_REFRESH_SECONDS and not self._practising(
                participant, at, grace
            ):
                self._drop(definition, participant.id, "silent before the game", report)
                continue
            if participant.step != "waiting":
                continue
            if record.status == "closed":
                self._no_partner(definition, participant.id, report)
            elif flow.is_present(participant, at + PRESENCE_MARGIN_SECONDS):
                queue.append(participant)
            elif at - (participant.waiting_since or at) >= absent_wait_limit(definition):
                self._no_partner(definition, participant.id, report)  # the page is open, nobody confirms
        queue.sort(key=lambda p: (p.waiting_since or p.updated_at, p.id))
        groups, queue = arrival_groups(queue, definition.group_size)
        for group in groups:
            self.form_game(definition, group, report)
        if not queue or at - (queue[0].waiting_since or at) < room.max_wait_seconds:
            return
        if room.on_timeout == "fill":
            group: list[Participant] = []
            for participant in queue:  # the look-alike of one already in it waits for the next game
                if name_key(participant.name) not in {name_key(member.name) for member in group}:
                    group.append(participant)
            self.form_game(definition, group, report)
            return
        for participant in queue:
            if at - (participant.waiting_since or at) >= room.max_wait_seconds:
                self._no_partner(definition, participant.id, report)

    def _unfinished(self, definition: StudyDefinition) -> Iterator[Participant]:
        """The study's participants who have not finished, in key order. A finished one never changes step
        again, so it is read once per process, then skipped by its key (a round's cost grows with those
        still in the flow, plus one key listing)."""
        for key in self._keys(participant_key(definition.id, "")):
            raw = None if key in self._finished else self.store.get_value(key)
            if raw is None:
                continue
            participant = Participant.model_validate_json(raw)
            if participant.finished:
                self._finished.add(key)
            else:
                yield participant

    def _practising(self, participant: Participant, at: float, grace: float) -> bool:
        """A participant in the practice game is not silent while that game moves (its room does not touch
        the study's record)."""
        if participant.step != "practice" or participant.practice_game_id is None:
            return False
        meta = self.store.get_game(participant.practice_game_id)
        return meta is not None and at - float(meta.get("updated_at") or 0) <= grace

    def form_game(self, definition: StudyDefinition, group: list[Participant], report: RoundReport) -> None:
        """A game for ``group`` (in arrival order, one per human seat; the fill-in in the other human seats).

        Order, so that no page ever sees a game that is not ready and nobody is matched twice: the plan (the
        StudyGame record) is written; the game is created and every member seated in their seat, which
        starts it; only then is each member ``flow.matched`` (a conditional write). A member no longer
        waiting and present by then is not matched and their seat goes to the fill-in at once; if nobody
        was matched, the game is aborted and the plan removed."""
        humans = [i for i, seat in enumerate(definition.seats) if seat.kind == "human"]
        planned = dict(zip(humans, group, strict=False))
        fill_seats = [seat for seat in humans if seat not in planned]
        plan = StudyGame(
            game_id=new_game_id(),
            study_id=definition.id,
            participants={seat: planned[seat].id if seat in planned else None for seat in humans},
            created_at=now(),
        )
        # the plan first: whatever happens next, a later round finds the game and finishes or undoes it
        if not self.store.replace_value(game_key(definition.id, plan.game_id), None, plan.model_dump_json()):
            return
        try:
            create_game(self.services, definition, plan.game_id, planned)
            for seat, participant in planned.items():
                seat_participant(self.services, plan.game_id, participant, seat)
        except UnseatableParticipant as err:  # their account cannot sit (e.g. its name was kept since)
            log.error("study %s: %s cannot be seated: %s", definition.id, err.participant.id, err.reason)
            undo_plan(self.services, plan)
            self._no_partner(definition, err.participant.id, report)
            return
        except Exception:
            log.exception("study %s: game %s could not be created or seated", definition.id, plan.game_id)
            undo_plan(self.services, plan)  # the group waits on: the next round tries again
            return
        gone: list[int] = []
        for seat, participant in planned.items():
            try:
                flow.matched(self.store, definition, participant.id, plan.game_id, seat, fill_seats)
                report.matched.append(participant.id)
            except ServerError as err:  # not present any more, dropped, booted: their seat is the fill-in's
                log.info("study %s: %s not matched: %s", definition.id, participant.id, err.code)
                gone.append(seat)
        if len(gone) == len(planned):
            undo_plan(self.services, plan)
            return
        if gone:
            actual = plan.model_copy(
                update={"participants": {s: None if s in gone else p for s, p in plan.participants.items()}}
            )
            self.store.replace_value(
                game_key(definition.id, plan.game_id), plan.model_dump_json(), actual.model_dump_json()
            )
            for seat in gone:
                self._hand_over(definition, plan.game_id, seat)
        report.games.append(plan.game_id)

    def _no_partner(self, definition: StudyDefinition, participant_id: str, report: RoundReport) -> None:
        try:
            flow.leave_waiting_room(self.store, definition, participant_id)
            report.no_partner.append(participant_id)
        except ServerError as err:
            log.info(
                "study %s: %s did not leave the waiting room: %s", definition.id, participant_id, err.code
            )

    def _drop(
        self, definition: StudyDefinition, participant_id: str, reason: str, report: RoundReport
    ) -> None:
        participant, left = flow.drop(self.store, definition, participant_id, reason)
        if participant.outcome == "dropped":
            report.dropped.append(participant_id)
        if left is not None:
            self._hand_over(definition, left.game_id, left.seat)

    # ------------------------------------------------------------------------------------ supervision
    def _open_games(self, definition: StudyDefinition) -> Iterable[tuple[StudyGame, dict[str, Any] | None]]:
        """The study's games not yet settled, each with its stored record (None: not created yet)."""
        prefix = game_key(definition.id, "")
        for key in self._keys(prefix):
            if key[len(prefix) :] in self._settled:
                continue
            raw = self.store.get_value(key)
            if raw is not None:
                game = StudyGame.model_validate_json(raw)
                yield game, self.store.get_game(game.game_id)

    def _keys(self, prefix: str) -> Iterator[str]:
        after = ""
        while True:
            keys = self.store.list_keys(prefix, after=after, limit=KEYS_PER_PAGE)
            yield from keys
            if len(keys) < KEYS_PER_PAGE:
                return
            after = keys[-1]

    def _note_connections(
        self, definition: StudyDefinition, games: list[tuple[StudyGame, dict[str, Any] | None]]
    ) -> None:
        """Note in the store which participants' seats have a connection to this process (the lease holder
        reads them: a participant connected to another process is connected all the same)."""
        at = time.time()
        for game, meta in games:
            if meta is None or meta.get("status") != "running":
                continue
            online = self._online_seats(game.game_id)
            for seat, participant_id in game.participants.items():
                if participant_id is None or seat not in online:
                    continue
                self._connected_seen[(game.game_id, seat)] = at
                noted = self._connected_noted.get((game.game_id, seat), 0.0)
                if at - noted >= CONNECTED_REFRESH_SECONDS:
                    key = connected_key(definition.id, game.game_id, seat)
                    # a lost race means another process noted a connection just now: as good
                    self.store.replace_value(key, self.store.get_value(key), str(round(at, 3)))
                    self._connected_noted[(game.game_id, seat)] = at

    def _online_seats(self, game_id: str) -> set[int]:
        live = self.services.table.get(game_id)
        with live.lock:
            return {seat for seat, count in live.online.items() if count > 0}

    def _supervise(
        self,
        definition: StudyDefinition,
        games: list[tuple[StudyGame, dict[str, Any] | None]],
        report: RoundReport,
    ) -> None:
        for game, meta in games:
            try:
                status = None if meta is None else meta.get("status")
                if status in (None, "waiting"):
                    if self._repair(definition, game):
                        self._settled.add(game.game_id)
                elif status == "running":
                    assert meta is not None
                    if self._watch_running(definition, game, meta, report):
                        self._settled.add(game.game_id)
                elif status in ("finished", "aborted") and self._record_end(definition, game, meta, report):
                    self._settled.add(game.game_id)
                    report.settled.append(game.game_id)
            except Exception:
                log.exception("study %s: supervising game %s failed", definition.id, game.game_id)

    def _repair(self, definition: StudyDefinition, game: StudyGame) -> bool:
        """A plan whose game is missing or still waiting REPAIR_AFTER_SECONDS after it was written: its
        forming stopped (a crash). Whoever was matched to it (nobody, normally: members are matched once the
        game has started) has it end ``aborted``; the plan is undone. True when nothing is left to watch."""
        if time.time() - game.created_at < REPAIR_AFTER_SECONDS:
            return False  # still being formed, maybe by the process that held the lease before
        for participant_id in game.participants.values():
            participant = (
                load_participant(self.store, definition.id, participant_id) if participant_id else None
            )
            entry = _entry(participant, game.game_id)
            if participant is not None and entry is not None and entry.finished_at is None:
                flow.game_over(self.store, definition, participant.id, game.game_id, "aborted", None)
        log.warning("study %s: game %s was left unformed; undone", definition.id, game.game_id)
        undo_plan(self.services, game)
        return True

    def _watch_running(
        self, definition: StudyDefinition, game: StudyGame, meta: dict[str, Any], report: RoundReport
    ) -> bool:
        """Drop a participant who left the running game (disconnected past the grace, or idle until a bot
        took over) and hand their seat to the fill-in; hand over a seat nobody plays (its participant left,
        or was never matched: a crash while the game was formed). True when the game was undone."""
        at = time.time()
        seats = {int(s["seat"]): s for s in meta.get("seats", [])}
        online = self._online_seats(game.game_id)
        formed = at - game.created_at >= REPAIR_AFTER_SECONDS
        people = {
            seat: load_participant(self.store, definition.id, pid) if pid else None
            for seat, pid in game.participants.items()
        }
        entries = {seat: _entry(p, game.game_id) for seat, p in people.items()}
        if formed and not any(entries.values()):  # started, then nobody was matched (a crash)
            undo_plan(self.services, game)
            return True
        for seat, participant in people.items():
            entry = entries[seat]
            takeover = seats.get(seat, {}).get("takeover")
            if participant is None or entry is None:  # the fill-in's, or nobody's after a crash
                unplayed = seats.get(seat, {}).get("kind") != "bot" and takeover is None
                if unplayed and (participant is None or formed):
                    self._hand_over(definition, game.game_id, seat)
                continue
            participant_id = participant.id
            if entry.finished_at is not None:  # dropped, booted, or moved on by the researcher mid-game
                if takeover is None:  # nobody plays the seat (a bot the researcher chose is left alone)
                    self._hand_over(definition, game.game_id, seat)
                continue
            noted = self.store.get_value(connected_key(definition.id, game.game_id, seat))
            connected = seat in online or self._connected_elsewhere(game.game_id, seat, noted, at)
            self._trace_connection(definition, participant_id, game.game_id, seat, connected, noted)
            if takeover is not None:  # the idle rule's bot, or the researcher's hand-over (they play on)
                if self._went_idle(definition, game.game_id, seat):
                    self._drop(definition, participant_id, "idle: a bot took over the seat", report)
                continue
            if connected:
                continue
            started = float(meta.get("started_at") or entry.matched_at)
            seen_here = self._connected_seen.get((game.game_id, seat), 0.0)
            last = max(entry.matched_at, started, float(noted) if noted else 0.0, seen_here)
            if at - last > definition.dropout.disconnect_grace_seconds:
                self._drop(definition, participant_id, "disconnected from the game", report)
        return False

    def _connected_elsewhere(self, game_id: str, seat: int, noted: str | None, at: float) -> bool:
        """Whether another process noted the seat's holder connected lately (its rounds renew the note every
        CONNECTED_REFRESH_SECONDS while they are); a note this process wrote says nothing more than
        ``online`` here does."""
        if noted is None:
            return False
        ours = self._connected_noted.get((game_id, seat))
        if ours is not None and noted == str(round(ours, 3)):
            return False
        return at - float(noted) <= CONNECTED_REFRESH_SECONDS + 3 * self.interval

    def _trace_connection(
        self,
        definition: StudyDefinition,
        participant_id: str,
        game_id: str,
        seat: int,
        connected: bool,
        noted: str | None,
    ) -> None:
        """Log a change of the seat's connection on its participant (flow.note_connection: a disconnect once
        they had been connected, a reconnect after it), so the study's export holds them. The record is
        written only when this process sees a change (or first looks at the seat)."""
        key = (game_id, seat)
        if self._connection_traced.get(key) == connected:
            return
        seen_here = self._connected_seen.get(key, 0.0)
        if connected or noted is not None or seen_here:  # a seat never connected has nothing to lose
            last = max(float(noted) if noted else 0.0, seen_here) or None
            flow.note_connection(self.store, definition, participant_id, game_id, connected, last)
        self._connection_traced[key] = connected

    def _went_idle(self, definition: StudyDefinition, game_id: str, seat: int) -> bool:
        """Whether the seat missed ``dropout.idle_timeouts`` deadlines in a row at some point of the game (the
        table's idle rule handed it to a bot then); else the researcher handed it over, which is no dropout.
        A seat found not idle is not looked at again."""
        limit = definition.dropout.idle_timeouts
        if limit is None or (game_id, seat) in self._handed_by_researcher:
            return False
        streak = longest = 0
        for record in self.store.load_events(game_id):
            payload = record.get("payload") or {}
            if record.get("type") == "timeout" and seat in (payload.get("seats") or ()):
                streak += 1
                longest = max(longest, streak)
            elif record.get("actor") == seat:
                streak = 0
        if longest < limit:
            self._handed_by_researcher.add((game_id, seat))
        return longest >= limit

    def _hand_over(self, definition: StudyDefinition, game_id: str, seat: int) -> None:
        try:
            hand_to_fill_in(self.services, definition, game_id, seat)
        except ServerError as err:  # the game ended, or was never started: nobody is left waiting for it
            log.info("study %s: game %s seat %s not handed over: %s", definition.id, game_id, seat, err.code)

    def _record_end(
        self, definition: StudyDefinition, game: StudyGame, meta: dict[str, Any] | None, report: RoundReport
    ) -> bool:
        """Record the game's end for each participant (flow.game_over is idempotent, so a second process or
        round changes nothing); one whose seat the idle rule gave to a bot before the end (which may come
        within a round: bots play fast) is dropped instead. True once every participant's entry is closed."""
        assert meta is not None
        people = {
            seat: load_participant(self.store, definition.id, participant_id)
            for seat, participant_id in game.participants.items()
            if participant_id is not None
        }
        if all((entry := _entry(p, game.game_id)) is None or entry.finished_at for p in people.values()):
            return True  # recorded already (by an earlier round, or another process): nothing to load
        finished = meta.get("status") == "finished"
        results = self._results(game.game_id) if finished else {}
        seats = {int(s["seat"]): s for s in meta.get("seats", [])}
        settled = True
        for seat, participant in people.items():
            entry = _entry(participant, game.game_id)
            if participant is None or entry is None or entry.finished_at is not None:
                continue
            if seats.get(seat, {}).get("takeover") and self._went_idle(definition, game.game_id, seat):
                self._drop(definition, participant.id, "idle: a bot took over the seat", report)
                continue
            result, points = results.get(seat, ("aborted", None))
            participant = flow.game_over(self.store, definition, participant.id, game.game_id, result, points)
            entry = _entry(participant, game.game_id)
            settled = settled and (entry is None or entry.finished_at is not None)
        return settled

    def _results(self, game_id: str) -> dict[int, tuple[str, int | None]]:
        """Each seat's result (won / lost / no_winner) and points of a finished game."""
        live = self.services.table.get(game_id)
        with live.lock:
            self.services.table.catch_up(live)
            played = live.game
            if played is None:
                return {}
            winners = set(played.winners)
            scores = played.scores
            seats = range(len(live.seats))
        return {
            seat: (
                "no_winner" if not winners else "won" if seat in winners else "lost",
                scores[seat] if scores is not None else None,
            )
            for seat in seats
        }


def last_heard(participant: Participant) -> float:
    """When the participant was last known to be there, for the silence rule: their ``last_seen_at`` (the
    pages and presence confirmations write it), or the moment they entered their current step if that is
    later (the waiting room, or the step after a game: a game is watched by the disconnect rule, and its
    room never writes ``last_seen_at``, so a long game must not count as silence)."""
    entered = max((game.finished_at or 0.0 for game in participant.games), default=0.0)
    return max(participant.last_seen_at, participant.waiting_since or 0.0, entered)


def absent_wait_limit(definition: StudyDefinition) -> float:
    """How long a participant who is not present may wait before leaving with ``no_partner``: the maximum
    wait, plus one whole presence check (the ask and the time to answer it), so that someone who stepped
    away just before the maximum wait can still come back and be matched or filled in."""
    room = definition.waiting_room
    return room.max_wait_seconds + room.presence_check_seconds + room.presence_timeout_seconds


def arrival_groups(queue: list[Participant], size: int) -> tuple[list[list[Participant]], list[Participant]]:
    """Full groups of ``size`` in arrival order, and those left over (in arrival order). Two participants
    whose names could be mistaken for each other (the lobby refuses them at one table) go to different
    groups: the later one waits for the next."""
    groups: list[list[Participant]] = []
    rest = queue
    while len(rest) >= size:
        group: list[Participant] = []
        left: list[Participant] = []
        for participant in rest:
            names = {name_key(member.name) for member in group}
            if len(group) < size and name_key(participant.name) not in names:
                group.append(participant)
            else:
                left.append(participant)
        if len(group) < size:
            break
        groups.append(group)
        rest = left
    return groups, rest


# ---------------------------------------------------------------------------------------------- seating
class UnseatableParticipant(Exception):
    """A participant whose account cannot take a seat (unknown, or refused by the login checks)."""

    def __init__(self, participant: Participant, reason: str) -> None:
        super().__init__(reason)
        self.participant = participant
        self.reason = reason


def create_game(
    services: StudyServices, definition: StudyDefinition, game_id: str, people: dict[int, Participant]
) -> None:
    """The study game in the study's hall: a person's seat for each of ``people`` (seat -> participant), the
    fill-in in the other human seats, the study's bots in theirs; its seats held for exactly those people.
    Each seat reports the ToM orders of who plays it (``tom_orders.bot`` or ``.llm`` for the fill-in); a
    seat handed to the fill-in later keeps the orders it started with (the game's settings are fixed)."""
    services.studies.install_hall(definition)  # installed at the first read; a caller may bring its own
    fill = fill_in_spec(definition, services.settings)
    specs = [
        SeatSpec(kind="human")
        if seat in people
        else fill
        if study_seat.kind == "human"
        else definition.seat_spec(study_seat, services.settings)
        for seat, study_seat in enumerate(definition.seats)
    ]
    fill_kind = definition.waiting_room.fill_in.kind
    kinds = [
        fill_kind if study_seat.kind == "human" and seat not in people else study_seat.kind
        for seat, study_seat in enumerate(definition.seats)
    ]
    services.lobby.create_game(
        definition.hall_name,
        matcher_principal(definition),
        hold=hold_record((p.user_id for p in people.values()), HOLD_SECONDS),
        seat_specs=specs,
        game_id=game_id,
        tom_orders=[definition.tom_orders.for_kind(kind) for kind in kinds],  # the fill-in's: its kind's
    )


def seat_participant(services: StudyServices, game_id: str, participant: Participant, seat: int) -> None:
    """Seat the participant's account in ``seat`` (the game starts once every seat is taken)."""
    try:
        principal = principal_for_user(services.store, participant.user_id)
    except ServerError as err:
        raise UnseatableParticipant(participant, err.code) from None
    if principal is None:
        raise UnseatableParticipant(participant, "no account")
    services.lobby.join(game_id, principal, seat)


def undo_plan(services: StudyServices, plan: StudyGame) -> None:
    """Remove a plan nobody was matched to, and close or end its game if it was created."""
    meta = services.store.get_game(plan.game_id)
    try:
        if meta is not None and meta.get("status") == "waiting":
            services.table.close_waiting(plan.game_id, "cancelled")
        elif meta is not None and meta.get("status") == "running":
            services.table.abort(plan.game_id, "study: nobody was matched to it")
    except ServerError as err:  # it ended meanwhile
        log.info("game %s not closed: %s", plan.game_id, err.code)
    key = game_key(plan.study_id, plan.game_id)
    services.store.replace_value(key, services.store.get_value(key), None)


def _entry(participant: Participant | None, game_id: str) -> GameEntry | None:
    if participant is None:
        return None
    return next((g for g in participant.games if g.game_id == game_id), None)


def _lease_holder(raw: str) -> str | None:
    try:
        return str(json.loads(raw)["holder"])
    except (ValueError, TypeError, KeyError):
        return None


def _lease_until(raw: str) -> float:
    try:
        return float(json.loads(raw)["until"])
    except (ValueError, TypeError, KeyError):
        return 0.0


def _run_until_stopped(matcher: weakref.ref[StudyMatcher], stopped: threading.Event, interval: float) -> None:
    """Rounds every ``interval`` seconds until the app closes; holds the matcher only weakly (as the session
    sweep does), so a dropped app is not kept alive by its task."""
    while not stopped.wait(interval):
        alive = matcher()
        if alive is None:
            return
        try:
            alive.round()
        except Exception:  # a store that does not answer now may answer at the next round
            log.warning("the study matcher's round failed", exc_info=True)
        del alive
