"""The study matcher: the waiting room's rule, the study games' seating and their supervision.

One :class:`StudyMatcher` per app, a background task (a round every :data:`ROUND_SECONDS`), stopped with the
app. Every decision is a conditional write in the store, so a restart resumes where the last round stopped
and two server processes never act twice on one participant:

- **one matcher at a time**: a round matches and supervises only while its process holds the lease
  (:data:`LEASE_KEY`, a value with an expiry time written with ``Store.replace_value``); a process that dies
  holding it loses it after :data:`LEASE_SECONDS`. Every process notes its own players' connections
  (:func:`connected_key`), so the lease holder sees a participant connected to any process.
- **matching**: a study's waiting participants who are present (``flow.is_present`` with
  :data:`PRESENCE_MARGIN_SECONDS` to spare) are grouped in arrival order into games of ``group_size``. For
  each group: its :class:`~server.web.study.records.StudyGame` is written first (the plan), each participant
  is ``flow.matched`` (a conditional write: never matched twice), then the game is created in the study's
  hall with the fill-in in every human seat nobody was matched to, its seats held for the matched people
  (``seat_holds``), and each matched participant is seated (``lobby.join``) — see :func:`seat_game`.
  A participant who stopped being present between the read and the write is not matched; their seat goes
  to the fill-in, and if nobody of the group was matched, no game is made. A crash anywhere in between is
  repaired by the next round's :func:`seat_game` (it only ever seats participants whose record names the
  game).
- **the maximum wait**: the oldest present participant waited ``max_wait_seconds`` and no group is full:
  ``on_timeout: fill`` seats the present ones with the fill-in; ``exit`` ends their wait with ``no_partner``.
- **silence**: anyone silent (``last_seen_at``) longer than ``dropout.waiting_grace_seconds`` before the
  game is dropped; a closed study's waiting participants leave with ``no_partner``; a paused one still
  matches those already in it.
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
from server.store.base import StoreError
from server.table.config import SeatSpec, Settings
from server.table.errors import ServerError
from server.table.master import Table
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
#: A study game still waiting for its participants this long after it was planned is closed (its seats could
#: not be filled: a participant's account refused, the hall has no instance); its participants' game ends
#: ``aborted``.
SEATING_GIVE_UP_SECONDS = 120.0
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
    """The seat of the study's fill-in; a fill-in without a name gets a participant-like one, so it does not
    tell the other players it is not a person (the study's design decides that, through ``fill_in.name``)."""
    spec = definition.seat_spec(definition.waiting_room.fill_in, settings)
    if spec.name is None:
        spec = spec.model_copy(update={"name": f"Participant {secrets.randbelow(9000) + 1000}"})
    return spec


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
        self._lock = threading.Lock()  # one round at a time in this process

    # ---------------------------------------------------------------------------------------- running
    def start(self) -> Callable[[], None]:
        """Run rounds in the background until the returned stop function is called (``Services.on_close``)."""
        self.services.socketio.start_background_task(
            _run_until_stopped, weakref.ref(self), self.stopped, self.interval
        )
        return self.stop

    def stop(self) -> None:
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
            if at - participant.last_seen_at > grace and not self._practising(participant, at, grace):
                self._drop(definition, participant.id, "silent before the game", report)
                continue
            if participant.step != "waiting":
                continue
            if record.status == "closed":
                self._no_partner(definition, participant.id, report)
            elif flow.is_present(participant, at + PRESENCE_MARGIN_SECONDS):
                queue.append(participant)
        queue.sort(key=lambda p: (p.waiting_since or p.updated_at, p.id))
        size = definition.group_size
        while len(queue) >= size:
            group, queue = queue[:size], queue[size:]
            self.form_game(definition, group, report)
        if not queue or at - (queue[0].waiting_since or at) < room.max_wait_seconds:
            return
        if room.on_timeout == "fill":
            self.form_game(definition, queue, report)
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
        """Plan a game for ``group`` (in arrival order, one per human seat; the other human seats go to the
        fill-in), match each participant with a conditional write, then create and seat it."""
        humans = [i for i, seat in enumerate(definition.seats) if seat.kind == "human"]
        planned = dict(zip(humans, (p.id for p in group), strict=False))
        fill_seats = [seat for seat in humans if seat not in planned]
        game_id = new_game_id()
        plan = StudyGame(
            game_id=game_id,
            study_id=definition.id,
            participants={seat: planned.get(seat) for seat in humans},
            created_at=now(),
        )
        # the plan first: whatever happens next, the next round finds the game and finishes or undoes it
        if not self.store.replace_value(game_key(definition.id, game_id), None, plan.model_dump_json()):
            return
        for seat, participant_id in planned.items():
            try:
                flow.matched(self.store, definition, participant_id, game_id, seat, fill_seats)
                report.matched.append(participant_id)
            except ServerError as err:  # not present any more, dropped, booted: their seat is the fill-in's
                log.info("study %s: %s not matched: %s", definition.id, participant_id, err.code)
        try:
            if seat_game(self.services, definition, plan) is not None:
                report.games.append(game_id)
        except Exception as err:  # the next rounds' supervision retries it (seat_game is idempotent)
            log.warning("study %s: game %s not seated yet: %r", definition.id, game_id, err)

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
                    if seat_game(self.services, definition, game) is None:
                        self._settled.add(game.game_id)  # undone: nobody was matched to it
                elif status == "running":
                    assert meta is not None
                    self._watch_running(definition, game, meta, report)
                elif status in ("finished", "aborted") and self._record_end(definition, game, status):
                    self._settled.add(game.game_id)
                    report.settled.append(game.game_id)
            except Exception:
                log.exception("study %s: supervising game %s failed", definition.id, game.game_id)

    def _watch_running(
        self, definition: StudyDefinition, game: StudyGame, meta: dict[str, Any], report: RoundReport
    ) -> None:
        """Drop a participant who left the running game (disconnected past the grace, or idle until a bot
        took over) and hand their seat to the fill-in; hand over a dropped one's seat not handed yet."""
        at = time.time()
        seats = {int(s["seat"]): s for s in meta.get("seats", [])}
        fill = fill_in_spec(definition, self.services.settings).bot
        online = self._online_seats(game.game_id)
        for seat, participant_id in game.participants.items():
            if participant_id is None:
                continue
            participant = load_participant(self.store, definition.id, participant_id)
            entry = _entry(participant, game.game_id)
            if participant is None or entry is None:
                continue
            takeover = seats.get(seat, {}).get("takeover")
            if entry.finished_at is not None:  # dropped, booted, or moved on by the researcher mid-game
                if takeover != fill:
                    self._hand_over(definition, game.game_id, seat)
                continue
            if takeover is not None:
                self._drop(definition, participant_id, "idle: a bot took over the seat", report)
                continue
            if seat in online:
                continue
            noted = self.store.get_value(connected_key(definition.id, game.game_id, seat))
            started = float(meta.get("started_at") or entry.matched_at)
            seen_here = self._connected_seen.get((game.game_id, seat), 0.0)
            last = max(entry.matched_at, started, float(noted) if noted else 0.0, seen_here)
            if at - last > definition.dropout.disconnect_grace_seconds:
                self._drop(definition, participant_id, "disconnected from the game", report)

    def _hand_over(self, definition: StudyDefinition, game_id: str, seat: int) -> None:
        try:
            hand_to_fill_in(self.services, definition, game_id, seat)
        except ServerError as err:  # the game ended, or was never started: nobody is left waiting for it
            log.info("study %s: game %s seat %s not handed over: %s", definition.id, game_id, seat, err.code)

    def _record_end(self, definition: StudyDefinition, game: StudyGame, status: str) -> bool:
        """Record the game's end for each participant (flow.game_over is idempotent, so a second process or
        round changes nothing); True once every participant's entry is closed."""
        people = {
            seat: load_participant(self.store, definition.id, participant_id)
            for seat, participant_id in game.participants.items()
            if participant_id is not None
        }
        if all((entry := _entry(p, game.game_id)) is None or entry.finished_at for p in people.values()):
            return True  # recorded already (by an earlier round, or another process): nothing to load
        results = self._results(game.game_id) if status == "finished" else {}
        settled = True
        for seat, participant_id in game.participants.items():
            if participant_id is None:
                continue
            result, points = results.get(seat, ("aborted", None))
            participant = flow.game_over(self.store, definition, participant_id, game.game_id, result, points)
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


# ---------------------------------------------------------------------------------------------- seating
def seat_game(services: StudyServices, definition: StudyDefinition, plan: StudyGame) -> str | None:
    """Make the planned game real, idempotently (the round that planned it, or a later one after a crash).

    Only participants whose own record names the game count (``flow.matched`` wrote it): the game is created
    with a human seat for each of them still playing it and the fill-in in every other human seat; while it
    waits, each of them is seated (one dropped meanwhile too: the game starts, then the supervisor hands
    their seat to the fill-in). Returns the game id, or None when there is nothing to create (nobody was
    matched: the plan is removed). A game that cannot be seated within SEATING_GIVE_UP_SECONDS is given up:
    closed, its participants' game ended ``aborted``."""
    store = services.store
    entries: dict[int, tuple[Participant, GameEntry]] = {}
    for seat, participant_id in plan.participants.items():
        participant = load_participant(store, definition.id, participant_id) if participant_id else None
        entry = _entry(participant, plan.game_id)
        if participant is not None and entry is not None:
            entries[seat] = (participant, entry)
    key = game_key(definition.id, plan.game_id)
    actual = plan.model_copy(
        update={"participants": {s: entries[s][0].id if s in entries else None for s in plan.participants}}
    )
    if actual != plan:  # the record names only who really holds each seat
        store.replace_value(key, plan.model_dump_json(), actual.model_dump_json() if entries else None)
    playing = {seat: p for seat, (p, entry) in entries.items() if entry.finished_at is None}
    meta = store.get_game(plan.game_id)
    if meta is None and not playing:
        return None
    try:
        if meta is None:
            _create(services, definition, plan.game_id, playing)
            meta = store.get_game(plan.game_id)
        if meta is not None and meta.get("status") == "waiting":
            for seat, (participant, _) in entries.items():
                principal = principal_for_user(store, participant.user_id)
                if principal is None:
                    raise ServerError("unknown_user", f"participant {participant.id} has no account")
                services.lobby.join(plan.game_id, principal, seat)
    except Exception:
        if time.time() - plan.created_at > SEATING_GIVE_UP_SECONDS:
            _give_up(services, definition, plan.game_id, playing)
        raise
    return plan.game_id


def _create(
    services: StudyServices, definition: StudyDefinition, game_id: str, playing: dict[int, Participant]
) -> None:
    """The study game in the study's hall: a person's seat for each participant, the fill-in in the other
    human seats, the study's bots in theirs; its seats held for exactly the participants."""
    services.studies.install_hall(definition)  # installed at the first read; a caller may bring its own
    fill = fill_in_spec(definition, services.settings)
    taken = {p.name for p in playing.values()}
    while fill.name in taken:  # two look-alike names at one table are refused (lobby.check_name_clash)
        fill = fill_in_spec(definition, services.settings)
    specs = [
        SeatSpec(kind="human")
        if seat in playing
        else fill
        if study_seat.kind == "human"
        else definition.seat_spec(study_seat, services.settings)
        for seat, study_seat in enumerate(definition.seats)
    ]
    try:
        services.lobby.create_game(
            definition.hall_name,
            matcher_principal(definition),
            hold=hold_record((p.user_id for p in playing.values()), HOLD_SECONDS),
            seat_specs=specs,
            game_id=game_id,
        )
    except StoreError as err:  # another process created it first: seating goes on
        if err.code != "game_exists":
            raise


def _give_up(
    services: StudyServices, definition: StudyDefinition, game_id: str, playing: dict[int, Participant]
) -> None:
    log.error(
        "study %s: game %s could not be seated in %s s; given up",
        definition.id,
        game_id,
        SEATING_GIVE_UP_SECONDS,
    )
    if services.store.get_game(game_id) is not None:
        try:
            services.table.close_waiting(game_id, "cancelled")  # the supervisor then records "aborted"
        except ServerError as err:
            log.info("study %s: game %s not closed: %s", definition.id, game_id, err.code)
        return
    for participant in playing.values():
        flow.game_over(services.store, definition, participant.id, game_id, "aborted", None)


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


def start_matcher(services: StudyServices) -> Callable[[], None]:
    """Start the app's matcher; returns its stop function (for ``Services.on_close``)."""
    return StudyMatcher(services).start()
