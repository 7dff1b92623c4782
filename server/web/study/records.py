"""Studies and participants in the store: the one schema of a participant record and its atomic updates.

Store keys (values are JSON; every change is a conditional write, ``Store.replace_value``, so two tabs, two
devices or two server processes never both act on one version of a record):

- ``study:def:<study id>``: a :class:`StudyRecord` (the definition, its status open / paused / closed);
- ``study:<study id>:p:<participant id>``: a :class:`Participant`;
- ``study:<study id>:rid:<sha256 of the recruitment id>``: the participant id it was given (first writer
  wins: one recruitment id, one participant, in every process);
- ``study:<study id>:user:<user id>``: the participant id of that logged-in person;
- ``study:<study id>:admitted``: the places taken (:mod:`server.web.study.flow` admits under the cap);
- ``study:<study id>:game:<game id>``: a :class:`StudyGame` (which participant holds which seat).

Participant ids are random (``p_`` + 12 URL-safe characters), never derived from recruitment ids, so an id
seen in a game or an export names nobody's platform account.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from server.store import Store
from server.table.errors import ServerError
from server.web.study.definition import Outcome, StudyDefinition, parse_definition

StudyStatus = Literal["open", "paused", "closed"]
#: The steps of the flow in order (``done`` = a code was issued); a definition may skip some
#: (no instructions, no practice, no questions, no questionnaire): see flow.next_step.
Step = Literal[
    "consent", "instructions", "practice", "comprehension", "waiting", "playing", "questionnaire", "done"
]
STEPS: tuple[Step, ...] = (
    "consent",
    "instructions",
    "practice",
    "comprehension",
    "waiting",
    "playing",
    "questionnaire",
    "done",
)
#: Bounds on what one record holds, so a record's size (and a page that reads it) is bounded.
MAX_EVENTS = 400
MAX_MESSAGES = 50
MAX_CONFLICT_RETRIES = 50
#: Events that may happen any number of times; the audit trail counts repeats instead of listing each.
REPEATED = frozenset({"resumed", "presence_confirmed", "game_disconnected", "game_reconnected"})


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudyRecord(_Record):
    definition: dict[str, Any]
    status: StudyStatus = "open"
    created_at: float
    updated_at: float

    def parsed(self) -> StudyDefinition:
        return parse_definition(self.definition, f"study {self.definition.get('id')!r}")


class Recruitment(_Record):
    """The ids the recruitment platform put in the link (only admins and exports see them)."""

    participant_id: str
    study_id: str | None = None
    session_id: str | None = None
    anonymous: bool = False


class StepEvent(_Record):
    """One thing that happened to a participant: the flow's audit trail, exported row by row."""

    at: float
    event: str
    step: str
    detail: dict[str, Any] = Field(default_factory=dict)


class Attempt(_Record):
    at: float
    answers: dict[str, int]
    wrong: list[str]


class GameEntry(_Record):
    game_id: str
    seat: int
    matched_at: float
    finished_at: float | None = None
    result: Literal["won", "lost", "no_winner", "aborted", "dropped"] | None = None
    points: int | None = None
    filled_seats: list[int] = Field(default_factory=list)


class Message(_Record):
    at: float
    text: str
    read_at: float | None = None


class Earnings(_Record):
    currency: str
    base: float
    bonus: float

    @property
    def total(self) -> float:
        return round(self.base + self.bonus, 2)


class Participant(_Record):
    """Everything about one participant; see the module's docstring for where it is kept."""

    id: str
    study_id: str
    user_id: str
    name: str
    recruitment: Recruitment
    step: Step = "consent"
    outcome: Outcome | Literal["declined"] | None = None
    code: str | None = None
    arrived_at: float
    updated_at: float
    last_seen_at: float
    practice_game_id: str | None = None
    comprehension: list[Attempt] = Field(default_factory=list)
    waiting_since: float | None = None
    present_until: float | None = None
    games: list[GameEntry] = Field(default_factory=list)
    questionnaire: dict[str, str | int] | None = None
    earnings: Earnings | None = None
    reconnects: int = 0
    events: list[StepEvent] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.step == "done"

    @property
    def current_game(self) -> GameEntry | None:
        return self.games[-1] if self.games and self.games[-1].finished_at is None else None

    def log(self, event: str, **detail: Any) -> None:
        """Append to the audit trail. A repeat of the last event of a REPEATED kind (a reload, a presence
        confirmation) is counted on it rather than appended; past MAX_EVENTS the oldest repeated-kind entry is
        dropped, so milestones (consent, attempts, matches, codes) are never pushed out."""
        last = self.events[-1] if self.events else None
        if event in REPEATED and last is not None and last.event == event and last.step == self.step:
            last.detail = {**detail, "times": int(last.detail.get("times", 1)) + 1, "last_at": now()}
            return
        self.events.append(StepEvent(at=now(), event=event, step=self.step, detail=detail))
        if len(self.events) > MAX_EVENTS:
            oldest = next((i for i, e in enumerate(self.events) if e.event in REPEATED), None)
            del self.events[oldest if oldest is not None else 1]


class StudyGame(_Record):
    """A study's game: who holds which seat (the seats nobody came for hold ``None``)."""

    game_id: str
    study_id: str
    participants: dict[int, str | None]
    created_at: float


def now() -> float:
    return round(time.time(), 3)


def new_participant_id() -> str:
    return "p_" + secrets.token_urlsafe(9)


def definition_key(study_id: str) -> str:
    return f"study:def:{study_id}"


def participant_key(study_id: str, participant_id: str) -> str:
    return f"study:{study_id}:p:{participant_id}"


def recruitment_key(study_id: str, recruitment_id: str) -> str:
    return f"study:{study_id}:rid:{hashlib.sha256(recruitment_id.encode()).hexdigest()}"


def user_key(study_id: str, user_id: str) -> str:
    return f"study:{study_id}:user:{user_id}"


def admitted_key(study_id: str) -> str:
    return f"study:{study_id}:admitted"


def game_key(study_id: str, game_id: str) -> str:
    return f"study:{study_id}:game:{game_id}"


def unknown_study(study_id: str) -> ServerError:
    return ServerError("unknown_study", "There is no such study.", {"study_id": study_id[:48]}, status=404)


# ------------------------------------------------------------------------------------------------ studies
def save_study(store: Store, definition: StudyDefinition) -> StudyRecord:
    """Store a new study (open). A study id is used once: a second create is refused (``study_exists``)."""
    record = StudyRecord(
        definition=definition.model_dump(mode="json"), status="open", created_at=now(), updated_at=now()
    )
    if not store.replace_value(definition_key(definition.id), None, record.model_dump_json()):
        raise ServerError(
            "study_exists",
            f"A study with id {definition.id!r} exists: give the new one another id (ids appear in links).",
            {"study_id": definition.id},
            status=409,
        )
    return record


def load_study(store: Store, study_id: str) -> StudyRecord:
    raw = store.get_value(definition_key(study_id)) if isinstance(study_id, str) else None
    if raw is None:
        raise unknown_study(str(study_id))
    return StudyRecord.model_validate_json(raw)


def set_study_status(store: Store, study_id: str, status: StudyStatus) -> StudyRecord:
    """Pause, resume or close a study. Closing is final (a closed study is never reopened)."""

    def change(record: StudyRecord) -> StudyRecord:
        if record.status == "closed" and status != "closed":
            raise ServerError("study_closed", "A closed study stays closed; create a new one.", status=409)
        record.status = status
        record.updated_at = now()
        return record

    return _update(store, definition_key(study_id), StudyRecord, change, lambda: unknown_study(study_id))


def list_studies(store: Store) -> list[StudyRecord]:
    return [StudyRecord.model_validate_json(raw) for _, raw in _values(store, "study:def:")]


# ------------------------------------------------------------------------------------------- participants
def load_participant(store: Store, study_id: str, participant_id: str) -> Participant | None:
    raw = store.get_value(participant_key(study_id, participant_id))
    return Participant.model_validate_json(raw) if raw is not None else None


def participant_of_user(store: Store, study_id: str, user_id: str) -> Participant | None:
    participant_id = store.get_value(user_key(study_id, user_id))
    return load_participant(store, study_id, participant_id) if participant_id else None


def update_participant(
    store: Store, study_id: str, participant_id: str, change: Callable[[Participant], Participant | None]
) -> Participant:
    """Apply ``change`` to the stored record atomically (retried on a concurrent write). ``change`` returns
    the new record, or None to leave it as it is; it may raise a ServerError to refuse (nothing changes)."""

    def stamped(record: Participant) -> Participant | None:
        changed = change(record)
        if changed is not None:
            changed.updated_at = now()
        return changed

    return _update(
        store,
        participant_key(study_id, participant_id),
        Participant,
        stamped,
        lambda: ServerError("unknown_participant", "No such participant.", status=404),
    )


def iter_participants(store: Store, study_id: str) -> Iterator[Participant]:
    """Every participant of a study, in key order (paged through the store)."""
    for _, raw in _values(store, f"study:{study_id}:p:"):
        yield Participant.model_validate_json(raw)


def save_study_game(store: Store, game: StudyGame) -> None:
    store.replace_value(game_key(game.study_id, game.game_id), None, game.model_dump_json())


def load_study_game(store: Store, study_id: str, game_id: str) -> StudyGame | None:
    raw = store.get_value(game_key(study_id, game_id))
    return StudyGame.model_validate_json(raw) if raw is not None else None


def iter_study_games(store: Store, study_id: str) -> Iterator[StudyGame]:
    for _, raw in _values(store, f"study:{study_id}:game:"):
        yield StudyGame.model_validate_json(raw)


# ---------------------------------------------------------------------------------------------- helpers
def _values(store: Store, prefix: str, page: int = 500) -> Iterator[tuple[str, str]]:
    after = ""
    while True:
        keys = store.list_keys(prefix, after=after, limit=page)
        for key in keys:
            raw = store.get_value(key)
            if raw is not None:
                yield key, raw
        if len(keys) < page:
            return
        after = keys[-1]


def _update(
    store: Store, key: str, model: Any, change: Callable[[Any], Any], missing: Callable[[], Exception]
) -> Any:
    for _ in range(MAX_CONFLICT_RETRIES):
        raw = store.get_value(key)
        if raw is None:
            raise missing()
        changed = change(model.model_validate_json(raw))
        if changed is None:
            return model.model_validate_json(raw)
        if store.replace_value(key, raw, changed.model_dump_json()):
            return changed
    raise ServerError(
        "conflict", "The record is being changed by many requests at once; try again.", status=409
    )


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
