"""A participant's way through a study: every step's rule, in one place, over the store's atomic records.

Each function takes the store, the study's definition and a participant id, checks the participant is at the
step it acts on (else ``wrong_step`` naming the step they are at, so a page, a second tab or a replayed
request resumes instead of acting twice), and changes the record with one conditional write
(:func:`server.web.study.records.update_participant`). Pages, the matcher, the simulator and the admin's
interventions all go through these functions; none writes a record itself.

Outcomes and codes: ``completed`` (every step), ``screened_out`` (failed the check), ``no_partner`` (the
waiting room's exit rule), ``dropped`` (left mid-study, or booted); a participant who declines consent gets no
code (``declined``: the platform asks them to return the study). Earnings: :func:`earnings`.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from server.store import Store
from server.table.errors import ServerError
from server.web.auth import account_halls_key
from server.web.study.definition import Outcome, StudyDefinition
from server.web.study.records import (
    MAX_MESSAGES,
    STEPS,
    Attempt,
    Earnings,
    GameEntry,
    Message,
    Participant,
    Recruitment,
    Step,
    StudyRecord,
    admitted_key,
    new_participant_id,
    now,
    participant_key,
    recruitment_key,
    update_participant,
    user_key,
)

#: Outcomes (and ``declined``) that give a participant's place back to the study's capacity.
FREES_PLACE = frozenset({"screened_out", "no_partner", "dropped", "declined"})
#: Longest message the researcher may send a participant.
MESSAGE_MAX_CHARS = 500
#: Shortest gap between two writes of a participant's ``last_seen_at``.
SEEN_REFRESH_SECONDS = 10.0
#: Longest any recruitment id may be, whatever the pattern says (checked before the pattern runs).
RECRUITMENT_ID_MAX_CHARS = 128


def applies(definition: StudyDefinition, step: Step) -> bool:
    """Whether the study has this step (a study without instructions, say, skips it)."""
    if step == "instructions":
        return bool(definition.instructions)
    if step == "practice":
        return definition.practice
    if step == "comprehension":
        return bool(definition.comprehension.questions)
    if step == "questionnaire":
        return bool(definition.questionnaire)
    return True


def next_step(definition: StudyDefinition, step: Step) -> Step:
    for later in STEPS[STEPS.index(step) + 1 :]:
        if applies(definition, later):
            return later
    return "done"


def first_step(definition: StudyDefinition) -> Step:
    return "consent"


def require_step(participant: Participant, *steps: Step) -> None:
    if participant.step not in steps:
        raise ServerError(
            "wrong_step",
            f"You are at another step of the study ({participant.step}); this page has moved on.",
            {"step": participant.step},
            status=409,
        )


# ----------------------------------------------------------------------------------------------- arrival
def recruitment_ids(definition: StudyDefinition, query: Mapping[str, str]) -> Recruitment:
    """The recruitment ids of a study link's query string, checked (``invalid_recruitment`` otherwise)."""
    rules = definition.recruitment
    values: dict[str, str | None] = {}
    for field, param in (
        ("participant_id", rules.participant_param),
        ("study_id", rules.study_param),
        ("session_id", rules.session_param),
    ):
        raw = query.get(param) if param else None
        if raw is not None and (
            len(raw) > RECRUITMENT_ID_MAX_CHARS or not re.fullmatch(rules.id_pattern, raw)
        ):
            raise ServerError(
                "invalid_recruitment",
                f"The link's {param} is not a valid id. Open the study from the recruitment site's link.",
                {"param": param},
            )
        values[field] = raw or None
    if values["participant_id"] is None:
        if rules.required:
            raise ServerError(
                "invalid_recruitment",
                f"The link carries no {rules.participant_param}. "
                "Open the study from the recruitment site's link.",
                {"param": rules.participant_param},
            )
        return Recruitment(participant_id="anon-" + secrets.token_urlsafe(12), anonymous=True)
    return Recruitment(
        participant_id=str(values["participant_id"]),
        study_id=values["study_id"],
        session_id=values["session_id"],
    )


def arrive(
    store: Store,
    study: StudyRecord,
    query: Mapping[str, str],
    user_id: str | None = None,
    *,
    other_halls: Sequence[str] = (),
    count_new: Callable[[], None] | None = None,
) -> Participant:
    """A participant opening the study link: their record (a returning link or the same person resumes it), or
    a new one admitted under the cap. ``user_id``: the person the browser is logged in as, if any (a link
    without a participant id in a study that does not require one resumes that person's flow).

    A new participant's account is marked (server/web/auth.py ``account_halls_key``) before anything else is
    written (a returning one's too, if it is not yet): it plays in the study's hall and ``other_halls`` (the
    practice hall) only, and its name is nobody else's. ``count_new`` runs before a new participant's place,
    user or record is made (a return never runs it): the page's per-address limit, which raises
    ``rate_limited`` to refuse.

    One recruitment id gets one participant, in every process: the first writer of its key wins."""
    definition = study.parsed()
    if user_id is not None:
        participant_id = store.get_value(user_key(definition.id, user_id))
        if participant_id is not None and not query.get(definition.recruitment.participant_param):
            return _mark_account(
                store, definition, _resume(store, definition, participant_id, None), other_halls
            )
    ids = recruitment_ids(definition, query)
    key = recruitment_key(definition.id, ids.participant_id)
    held = store.get_value(key)
    if held is not None:
        return _mark_account(store, definition, _resume(store, definition, held, ids), other_halls)
    if study.status != "open":
        code = "study_closed" if study.status == "closed" else "study_paused"
        words = "closed" if study.status == "closed" else "paused for now; please try again later"
        raise ServerError(code, f"This study is {words}.", status=409 if code == "study_closed" else 503)
    if count_new is not None:
        count_new()
    if not _take_place(store, definition):
        held = _claim_of(store, key)  # another tab of this id, first by a moment, may hold the last place
        if held is not None:
            return _resume(store, definition, held, ids)
        raise ServerError(
            "study_full",
            "The study has all the participants it needs. Thank you for your interest.",
            status=409,
        )
    # The record and the person's key are written before the recruitment id is claimed, so a claimed id
    # always names a whole record (a crash in between leaves only an unclaimed record nobody reaches).
    user = store.create_user(f"Participant {secrets.randbelow(9000) + 1000}")
    store.replace_value(account_halls_key(user["id"]), None, _halls(definition, other_halls))
    at = now()
    participant = Participant(
        id=new_participant_id(),
        study_id=definition.id,
        user_id=user["id"],
        name=user["name"],
        recruitment=ids,
        step=first_step(definition),
        arrived_at=at,
        updated_at=at,
        last_seen_at=at,
    )
    participant.log("arrived", anonymous=ids.anonymous)
    record_key = participant_key(definition.id, participant.id)
    written = participant.model_dump_json()
    store.replace_value(record_key, None, written)
    store.replace_value(user_key(definition.id, user["id"]), None, participant.id)
    if store.set_value_if_absent(key, participant.id) != participant.id:  # another tab or device was first
        store.replace_value(record_key, written, None)
        store.replace_value(user_key(definition.id, user["id"]), participant.id, None)
        _give_place_back(store, definition)
        return _resume(store, definition, str(store.get_value(key)), ids)
    return participant


def _claim_of(store: Store, key: str, seconds: float = 1.0) -> str | None:
    """The participant id claimed under ``key``, waiting up to ``seconds`` for a claim being made now (the
    claim is the last write of an arrival, a few milliseconds after it took its place)."""
    deadline = time.monotonic() + seconds
    while True:
        held = store.get_value(key)
        if held is not None or time.monotonic() >= deadline:
            return held
        time.sleep(0.02)


def _halls(definition: StudyDefinition, other_halls: Sequence[str]) -> str:
    return json.dumps([definition.hall_name, *other_halls])


def _mark_account(
    store: Store, definition: StudyDefinition, participant: Participant, other_halls: Sequence[str]
) -> Participant:
    """A returning participant's account marked too (one admitted before accounts were marked)."""
    store.set_value_if_absent(account_halls_key(participant.user_id), _halls(definition, other_halls))
    return participant


def _resume(
    store: Store, definition: StudyDefinition, participant_id: str, ids: Recruitment | None
) -> Participant:
    """The returning participant's record, counting the return; a link of another platform session of the same
    participant id is refused (it took part already)."""

    def returned(participant: Participant) -> Participant:
        if (
            ids is not None
            and participant.recruitment.session_id is not None
            and ids.session_id != participant.recruitment.session_id
        ):
            raise ServerError(
                "already_participated",
                "This participant id has taken part in the study already, in another session.",
                status=409,
            )
        participant.reconnects += 1
        participant.last_seen_at = now()
        participant.log("resumed")
        return participant

    return update_participant(store, definition.id, participant_id, returned)


def _take_place(store: Store, definition: StudyDefinition) -> bool:
    limit = definition.capacity.participants + definition.capacity.overbook
    key = admitted_key(definition.id)
    for _ in range(100):
        raw = store.get_value(key)
        taken = int(raw) if raw else 0
        if taken >= limit:
            return False
        if store.replace_value(key, raw, str(taken + 1)):
            return True
    raise ServerError("conflict", "Many participants are arriving at once; reload the page.", status=409)


def _give_place_back(store: Store, definition: StudyDefinition) -> None:
    key = admitted_key(definition.id)
    for _ in range(100):
        raw = store.get_value(key)
        taken = int(raw) if raw else 0
        if taken <= 0 or store.replace_value(key, raw, str(taken - 1)):
            return


def seen(store: Store, definition: StudyDefinition, participant: Participant) -> Participant:
    """Note that the participant is here (at most one write per SEEN_REFRESH_SECONDS)."""
    if now() - participant.last_seen_at < SEEN_REFRESH_SECONDS:
        return participant

    def touch(record: Participant) -> Participant:
        record.last_seen_at = now()
        return record

    return update_participant(store, definition.id, participant.id, touch)


# ------------------------------------------------------------------------------------------------- steps
def _advance(definition: StudyDefinition, participant: Participant) -> Participant:
    """Move to the next step, doing what entering it means (the waiting room's clock starts)."""
    participant.step = next_step(definition, participant.step)
    participant.log("step")
    if participant.step == "waiting":
        _enter_waiting(definition, participant)
    elif participant.step == "done":
        _finish(definition, participant, "completed")
    return participant


def _enter_waiting(definition: StudyDefinition, participant: Participant) -> None:
    room = definition.waiting_room
    participant.waiting_since = now()
    participant.present_until = (
        participant.waiting_since + room.presence_check_seconds + room.presence_timeout_seconds
    )


def give_consent(store: Store, definition: StudyDefinition, participant_id: str, agree: bool) -> Participant:
    def change(participant: Participant) -> Participant:
        require_step(participant, "consent")
        if agree:
            participant.log("consented")
            return _advance(definition, participant)
        participant.log("declined")
        participant.step = "done"
        participant.outcome = "declined"
        return participant

    participant = update_participant(store, definition.id, participant_id, change)
    if participant.outcome == "declined":
        _give_place_back(store, definition)
    return participant


def finish_instructions(store: Store, definition: StudyDefinition, participant_id: str) -> Participant:
    def change(participant: Participant) -> Participant:
        require_step(participant, "instructions")
        participant.log("instructions_read", pages=len(definition.instructions))
        return _advance(definition, participant)

    return update_participant(store, definition.id, participant_id, change)


def practice_started(
    store: Store, definition: StudyDefinition, participant_id: str, game_id: str
) -> Participant:
    def change(participant: Participant) -> Participant | None:
        require_step(participant, "practice")
        if participant.practice_game_id == game_id:
            return None
        participant.practice_game_id = game_id
        participant.log("practice_started", game_id=game_id)
        return participant

    return update_participant(store, definition.id, participant_id, change)


def finish_practice(
    store: Store, definition: StudyDefinition, participant_id: str, game_id: str
) -> Participant:
    """The practice is done; the caller checked it (server.web.practice.practice_completed)."""

    def change(participant: Participant) -> Participant:
        require_step(participant, "practice")
        participant.log("practice_completed", game_id=game_id)
        return _advance(definition, participant)

    return update_participant(store, definition.id, participant_id, change)


def check_answers(definition: StudyDefinition, answers: Any) -> tuple[dict[str, int], list[str]]:
    """The answers as ``{question id: choice index}`` and the ids answered wrongly; a malformed answer sheet
    (a question missing, an index out of range, an unknown id) is ``invalid_request`` and counts no try."""
    questions = definition.comprehension.questions
    if not isinstance(answers, dict) or set(answers) != {q.id for q in questions}:
        raise ServerError("invalid_request", "Answer every question (one choice each).")
    chosen: dict[str, int] = {}
    for question in questions:
        value = answers[question.id]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < len(question.choices):
            raise ServerError("invalid_request", f"The answer to {question.id} is not one of its choices.")
        chosen[question.id] = value
    return chosen, [q.id for q in questions if chosen[q.id] != q.answer]


def answer_comprehension(
    store: Store, definition: StudyDefinition, participant_id: str, answers: Any
) -> tuple[Participant, list[str]]:
    """Record one try; all right = on to the waiting room; the last try wrong = screened out."""
    chosen, wrong = check_answers(definition, answers)

    def change(participant: Participant) -> Participant:
        require_step(participant, "comprehension")
        participant.comprehension.append(Attempt(at=now(), answers=chosen, wrong=wrong))
        participant.log("comprehension_attempt", attempt=len(participant.comprehension), wrong=wrong)
        if not wrong:
            return _advance(definition, participant)
        if len(participant.comprehension) >= definition.comprehension.attempts:
            _finish(definition, participant, "screened_out")
        return participant

    participant = update_participant(store, definition.id, participant_id, change)
    if participant.outcome == "screened_out":
        _give_place_back(store, definition)
    return participant, wrong


def confirm_presence(store: Store, definition: StudyDefinition, participant_id: str) -> Participant:
    room = definition.waiting_room

    def change(participant: Participant) -> Participant:
        require_step(participant, "waiting")
        participant.present_until = now() + room.presence_check_seconds + room.presence_timeout_seconds
        participant.last_seen_at = now()
        participant.log("presence_confirmed")
        return participant

    return update_participant(store, definition.id, participant_id, change)


def is_present(participant: Participant, at: float | None = None) -> bool:
    return participant.step == "waiting" and (participant.present_until or 0) > (
        at if at is not None else now()
    )


def matched(
    store: Store,
    definition: StudyDefinition,
    participant_id: str,
    game_id: str,
    seat: int,
    filled_seats: list[int],
) -> Participant:
    """The matcher seated the participant (who must still be waiting and present: a conditional write, so no
    participant is ever matched into two games)."""

    def change(participant: Participant) -> Participant:
        require_step(participant, "waiting")
        if not is_present(participant):
            raise ServerError("wrong_step", "The participant has not confirmed their presence.", status=409)
        participant.step = "playing"
        participant.last_seen_at = now()
        participant.games.append(
            GameEntry(game_id=game_id, seat=seat, matched_at=now(), filled_seats=sorted(filled_seats))
        )
        participant.log(
            "matched",
            game_id=game_id,
            seat=seat,
            waited=round(now() - (participant.waiting_since or now()), 3),
        )
        participant.waiting_since = None
        return participant

    return update_participant(store, definition.id, participant_id, change)


def note_connection(
    store: Store,
    definition: StudyDefinition,
    participant_id: str,
    game_id: str,
    connected: bool,
    last_connected_at: float | None = None,
) -> Participant:
    """The matcher saw the connection to the participant's running game ``game_id`` change: logs
    ``game_disconnected`` (``last_connected_at``: when a connection was last seen) or, after a logged
    disconnect only, ``game_reconnected`` (the first connection is no reconnect). A change the trail holds
    already is not logged again, so rounds and processes that see the same change log it once."""

    def change(participant: Participant) -> Participant | None:
        entry = participant.current_game
        if participant.step != "playing" or entry is None or entry.game_id != game_id:
            return None
        last = next(
            (
                event
                for event in reversed(participant.events)
                if event.event in ("game_disconnected", "game_reconnected")
                and event.detail.get("game_id") == game_id
            ),
            None,
        )
        offline = last is not None and last.event == "game_disconnected"
        if connected != offline:  # nothing changed since the trail's last word on it
            return None
        if connected:
            assert last is not None
            went = float(last.detail.get("last_connected_at") or last.at)
            participant.log("game_reconnected", game_id=game_id, offline_seconds=round(now() - went, 1))
        else:
            at = round(last_connected_at, 3) if last_connected_at else None
            participant.log("game_disconnected", game_id=game_id, last_connected_at=at)
        return participant

    return update_participant(store, definition.id, participant_id, change)


def leave_waiting_room(store: Store, definition: StudyDefinition, participant_id: str) -> Participant:
    """The maximum wait passed, nobody came and the study's rule is ``exit``: no_partner code and pay."""

    def change(participant: Participant) -> Participant:
        require_step(participant, "waiting")
        participant.log("no_partner", waited=round(now() - (participant.waiting_since or now()), 3))
        _finish(definition, participant, "no_partner")
        return participant

    participant = update_participant(store, definition.id, participant_id, change)
    _give_place_back(store, definition)
    return participant


def game_over(
    store: Store,
    definition: StudyDefinition,
    participant_id: str,
    game_id: str,
    result: str,
    points: int | None,
) -> Participant:
    """Record the end of the participant's current game (idempotent: a game already recorded changes nothing)
    and move on: back to the waiting room for the next game, or to the questionnaire."""

    def change(participant: Participant) -> Participant | None:
        entry = next((g for g in participant.games if g.game_id == game_id), None)
        if entry is None or entry.finished_at is not None or participant.step != "playing":
            return None
        entry.finished_at = now()
        entry.result = result  # type: ignore[assignment]
        entry.points = points
        participant.log("game_finished", game_id=game_id, result=result, points=points)
        finished = sum(g.finished_at is not None and g.result != "aborted" for g in participant.games)
        participant.last_seen_at = now()  # the game kept them busy: they were there until its end
        if finished < definition.games_per_participant:  # an aborted game does not count as played
            participant.step = "waiting"
            _enter_waiting(definition, participant)
            participant.log("step")
            return participant
        return _advance(definition, participant)

    return update_participant(store, definition.id, participant_id, change)


def submit_questionnaire(
    store: Store, definition: StudyDefinition, participant_id: str, answers: Any
) -> Participant:
    checked = check_questionnaire(definition, answers)

    def change(participant: Participant) -> Participant:
        require_step(participant, "questionnaire")
        participant.questionnaire = checked
        participant.log("questionnaire", answered=len(checked))
        return _advance(definition, participant)

    return update_participant(store, definition.id, participant_id, change)


def check_questionnaire(definition: StudyDefinition, answers: Any) -> dict[str, str | int]:
    if not isinstance(answers, dict) or not set(answers) <= {item.id for item in definition.questionnaire}:
        raise ServerError(
            "invalid_request", "Send the answers as {question id: answer} for this questionnaire."
        )
    checked: dict[str, str | int] = {}
    for item in definition.questionnaire:
        value = answers.get(item.id)
        if value is None or value == "":
            if item.required:
                raise ServerError("invalid_request", f"Please answer: {item.prompt}", {"item": item.id})
            continue
        if item.kind == "text":
            if not isinstance(value, str) or len(value) > item.max_chars:
                raise ServerError(
                    "invalid_request",
                    f"Answer {item.id} in at most {item.max_chars} characters.",
                    {"item": item.id},
                )
            checked[item.id] = value
        else:
            top = len(item.choices) - 1 if item.kind == "choice" else item.scale_points
            low = 0 if item.kind == "choice" else 1
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= top:
                raise ServerError(
                    "invalid_request",
                    f"The answer to {item.id} is not one of its options.",
                    {"item": item.id},
                )
            checked[item.id] = value
    return checked


# ------------------------------------------------------------------------------------ ends and earnings
def _finish(definition: StudyDefinition, participant: Participant, outcome: Outcome) -> None:
    participant.step = "done"
    participant.outcome = outcome
    participant.code = definition.codes.for_outcome(outcome)
    participant.earnings = earnings(definition, participant, outcome)
    participant.waiting_since = None
    participant.log("code_issued", outcome=outcome, code=participant.code, bonus=participant.earnings.bonus)


def earnings(definition: StudyDefinition, participant: Participant, outcome: Outcome) -> Earnings:
    """Base pay (approved with the code) and bonus (paid through the payments CSV) for this outcome."""
    pay = definition.payment
    played = [g for g in participant.games if g.result in ("won", "lost", "no_winner")]
    game_bonus = (
        sum(g.result == "won" for g in played) * pay.bonus_per_win
        + sum(g.points or 0 for g in played) * pay.bonus_per_point
    )
    bonus = {
        "completed": game_bonus,
        "no_partner": pay.no_partner_pay + game_bonus,
        "screened_out": pay.screened_out_pay,
        "dropped": game_bonus if pay.dropped_keeps_bonus else 0.0,
    }[outcome]
    bonus = min(round(bonus + 1e-9, 2), pay.max_bonus)
    base = pay.base if outcome in pay.base_paid_for else 0.0
    return Earnings(currency=pay.currency, base=round(base, 2), bonus=bonus if math.isfinite(bonus) else 0.0)


def drop(
    store: Store, definition: StudyDefinition, participant_id: str, reason: str
) -> tuple[Participant, GameEntry | None]:
    """The participant left (or was booted): dropped code; returns the game whose seat now needs the fill-in
    (None if they were not playing). A participant already done is left as they are."""
    left_game: list[GameEntry] = []

    def change(participant: Participant) -> Participant | None:
        left_game.clear()  # a retried write runs this again
        if participant.step == "done":
            return None
        game = participant.current_game if participant.step == "playing" else None
        if game is not None:
            game.finished_at = now()
            game.result = "dropped"
            left_game.append(game)
        participant.log("dropped", reason=reason[:200])
        _finish(definition, participant, "dropped")
        return participant

    dropped_now: list[bool] = []

    def counted(participant: Participant) -> Participant | None:
        changed = change(participant)
        dropped_now[:] = [changed is not None]
        return changed

    participant = update_participant(store, definition.id, participant_id, counted)
    if dropped_now == [True]:
        _give_place_back(store, definition)
    return participant, (left_game[0] if left_game else None)


def advance(store: Store, definition: StudyDefinition, participant_id: str) -> Participant:
    """The researcher moves a stuck participant on: past consent, instructions, practice, the check (as
    passed) or the questionnaire; a waiting participant's wait is over at once (the waiting room's timeout
    rule applies at the matcher's next round); a playing participant's current game is recorded as ended
    without a result."""

    def change(participant: Participant) -> Participant:
        if participant.step == "done":
            raise ServerError(
                "wrong_step", "The participant has finished the study.", {"step": "done"}, status=409
            )
        participant.log("advanced_by_researcher", step_was=participant.step)
        if participant.step == "waiting":
            participant.waiting_since = now() - definition.waiting_room.max_wait_seconds
            participant.present_until = now() + definition.waiting_room.presence_timeout_seconds
            return participant
        if participant.step == "playing" and participant.current_game is not None:
            game = participant.current_game
            game.finished_at = now()
            game.result = "aborted"
        return _advance(definition, participant)

    return update_participant(store, definition.id, participant_id, change)


def send_message(store: Store, definition: StudyDefinition, participant_id: str, text: Any) -> Participant:
    if not isinstance(text, str) or not text.strip() or len(text) > MESSAGE_MAX_CHARS:
        raise ServerError("invalid_request", f"Write a message of 1 to {MESSAGE_MAX_CHARS} characters.")

    def change(participant: Participant) -> Participant:
        participant.messages.append(Message(at=now(), text=text.strip()))
        del participant.messages[:-MAX_MESSAGES]
        participant.log("message_sent", chars=len(text))
        return participant

    return update_participant(store, definition.id, participant_id, change)


def mark_messages_read(store: Store, definition: StudyDefinition, participant_id: str) -> Participant:
    def change(participant: Participant) -> Participant | None:
        unread = [m for m in participant.messages if m.read_at is None]
        if not unread:
            return None
        for message in unread:
            message.read_at = now()
        return participant

    return update_participant(store, definition.id, participant_id, change)


def participant_view(definition: StudyDefinition, participant: Participant) -> dict[str, Any]:
    """What a participant may read about themselves (their page's data): no recruitment ids of anyone, no
    other participant, no correct answers before they answer."""
    return {
        "study": {"id": definition.id, "title": definition.title},
        "step": participant.step,
        "outcome": participant.outcome,
        "code": participant.code,
        "completion_url": definition.recruitment.completion_url.replace("{code}", participant.code)
        if participant.code and definition.recruitment.completion_url
        else None,
        "earnings": None
        if participant.earnings is None
        else {**participant.earnings.model_dump(), "total": participant.earnings.total},
        "name": participant.name,
        "games": [
            {"game_id": g.game_id, "seat": g.seat, "result": g.result, "points": g.points}
            for g in participant.games
        ],
        "current_game": participant.current_game.game_id if participant.current_game else None,
        "games_per_participant": definition.games_per_participant,
        "practice_game_id": participant.practice_game_id,
        "comprehension": {
            "attempts_used": len(participant.comprehension),
            "attempts_allowed": definition.comprehension.attempts,
            "last_wrong": participant.comprehension[-1].wrong if participant.comprehension else [],
        },
        "waiting": None
        if participant.step != "waiting"
        else {
            "since": participant.waiting_since,
            "present_until": participant.present_until,
            "max_wait_seconds": definition.waiting_room.max_wait_seconds,
            "presence_check_seconds": definition.waiting_room.presence_check_seconds,
            "presence_timeout_seconds": definition.waiting_room.presence_timeout_seconds,
        },
        "messages": [m.model_dump() for m in participant.messages],
        "questionnaire_done": participant.questionnaire is not None,
    }
