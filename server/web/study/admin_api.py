"""The researcher's study tools over REST, under ``/api/admin/studies`` (nested in the admin blueprint, so
the admin area's guard and error answers apply: server/web/admin.py). The admin pages call them.

- ``GET /api/admin/studies``: every study with its status and funnel;
- ``GET /api/admin/studies/<id>``: one study: funnel, participants (recruitment ids included: admins only),
  its live games;
- ``POST /api/admin/studies/<id>/status {"status": "open" | "paused" | "closed"}``: pause, resume, close;
- ``POST /api/admin/studies/<id>/participants/<pid>/advance``: move a stuck participant on (flow.advance);
- ``POST .../boot``: end their study with the dropped code; their seat in a running game goes to the study's
  fill-in bot (:meth:`Table.hand_seat_to_bot`), so the others are never stuck;
- ``POST .../message {"text": ...}``: a message shown on the participant's page;
- ``GET /api/admin/studies/<id>/errors``: what the server logged about the study's games.

Every rule is the study core's (server/web/study/flow.py, records.py); these routes only read, call and
answer. A request's cost is bounded by the study's capacity (participants + overbooking).
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request

from server.table.errors import ServerError
from server.web.error_log import read_errors
from server.web.study import flow
from server.web.study.definition import StudyDefinition
from server.web.study.matching import hand_to_fill_in
from server.web.study.records import (
    STEPS,
    Participant,
    StudyRecord,
    StudyStatus,
    iter_participants,
    iter_study_games,
    load_participant,
    set_study_status,
)

log = logging.getLogger(__name__)

study_admin = Blueprint("study_admin", __name__, url_prefix="/studies")

#: The funnel's stages in order, each with what the chart calls it.
FUNNEL: tuple[tuple[str, str], ...] = (
    ("arrived", "arrived"),
    ("consented", "consented"),
    ("passed_check", "passed the check"),
    ("waiting", "waiting"),
    ("playing", "playing"),
    ("finished", "finished"),
    ("dropped", "dropped"),
    ("screened_out", "screened out"),
)
#: Steps a participant reaches only after passing the comprehension check (or a study without one).
_PAST_CHECK = frozenset(STEPS[STEPS.index("waiting") : STEPS.index("done")])
#: Participants one study's page lists at most (the most recently seen first); the funnel counts them all.
PARTICIPANTS_LISTED = 500
STATUSES: tuple[StudyStatus, ...] = ("open", "paused", "closed")
#: Logged problems of a study's games one answer lists at most (the newest).
ERRORS_LISTED = 200


#: What the admin pages show of a stored seat (server.store.SeatRecord): never its user id.
ADMIN_SEAT_FIELDS = ("seat", "kind", "name", "bot", "takeover")


def admin_seat(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record.get(key) for key in ADMIN_SEAT_FIELDS}


def funnel(participants: list[Participant]) -> dict[str, int]:
    """How many participants reached each stage of :data:`FUNNEL` (waiting and playing: are there now)."""
    counts = dict.fromkeys((key for key, _ in FUNNEL), 0)
    counts.update(no_partner=0, declined=0)
    for participant in participants:
        counts["arrived"] += 1
        if any(event.event == "consented" for event in participant.events):
            counts["consented"] += 1
        if participant.outcome in ("completed", "no_partner") or any(
            event.step in _PAST_CHECK for event in participant.events
        ):
            counts["passed_check"] += 1
        if participant.step in ("waiting", "playing"):
            counts[participant.step] += 1
        outcome = {"completed": "finished"}.get(str(participant.outcome), str(participant.outcome))
        if outcome in counts and outcome not in ("waiting", "playing", "arrived"):
            counts[outcome] += 1
    return counts


def _study(study_id: str) -> tuple[StudyRecord, StudyDefinition]:
    studies = current_services().studies
    record = studies.record(study_id)
    return record, studies.definition(record)


def _summary(record: StudyRecord, participants: list[Participant]) -> dict[str, Any]:
    definition = record.definition
    return {
        "id": definition.get("id"),
        "title": definition.get("title"),
        "status": record.status,
        "created_at": record.created_at,
        "capacity": definition.get("capacity"),
        "funnel": funnel(participants),
    }


def _participant_row(participant: Participant) -> dict[str, Any]:
    return {
        "id": participant.id,
        "name": participant.name,
        "recruitment": participant.recruitment.model_dump(),
        "step": participant.step,
        "outcome": participant.outcome,
        "code": participant.code,
        "games": [game.model_dump() for game in participant.games],
        "current_game": participant.current_game.game_id if participant.current_game else None,
        "arrived_at": participant.arrived_at,
        "last_seen_at": participant.last_seen_at,
        "waiting_since": participant.waiting_since,
        "earnings": None
        if participant.earnings is None
        else {**participant.earnings.model_dump(), "total": participant.earnings.total},
        "messages": len(participant.messages),
        "unread_messages": sum(message.read_at is None for message in participant.messages),
        "reconnects": participant.reconnects,
    }


def _live_games(study_id: str) -> list[dict[str, Any]]:
    store = current_services().store
    live = []
    for game in iter_study_games(store, study_id):
        meta = store.get_game(game.game_id)
        if meta is None or meta.get("status") not in ("waiting", "running"):
            continue
        live.append(
            {
                "game_id": game.game_id,
                "status": meta.get("status"),
                "participants": {str(seat): pid for seat, pid in game.participants.items()},
                "seats": [admin_seat(seat) for seat in meta.get("seats", [])],
                "created_at": game.created_at,
            }
        )
    return live


@study_admin.get("")
def list_all() -> tuple[Response, int]:
    store = current_services().store
    studies = [
        _summary(record, list(iter_participants(store, str(record.definition.get("id")))))
        for record in current_services().studies.all()
    ]
    return jsonify({"ok": True, "studies": studies}), 200


@study_admin.get("/<study_id>")
def one(study_id: str) -> tuple[Response, int]:
    record, _ = _study(study_id)
    participants = list(iter_participants(current_services().store, study_id))
    shown = sorted(participants, key=lambda p: p.last_seen_at, reverse=True)[:PARTICIPANTS_LISTED]
    return jsonify(
        {
            "ok": True,
            "study": _summary(record, participants),
            "participants": [_participant_row(p) for p in shown],
            "participants_total": len(participants),
            "live_games": _live_games(study_id),
        }
    ), 200


@study_admin.get("/<study_id>/errors")
def errors(study_id: str) -> tuple[Response, int]:
    """What the server logged at WARNING or worse about the study's games (server/web/error_log.py), newest
    first, at most :data:`ERRORS_LISTED`, each with its game id."""
    _study(study_id)
    store = current_services().store
    found = [
        {**error, "game_id": game.game_id}
        for game in iter_study_games(store, study_id)
        for error in read_errors(store, game.game_id)
    ]
    found.sort(key=lambda error: error.get("time") or 0, reverse=True)
    return jsonify({"ok": True, "errors": found[:ERRORS_LISTED], "total": len(found)}), 200


@study_admin.post("/<study_id>/status")
def change_status(study_id: str) -> tuple[Response, int]:
    status = _body().get("status")
    if status not in STATUSES:
        raise ServerError("invalid_request", 'Send {"status": "open" | "paused" | "closed"}.')
    _study(study_id)
    record = set_study_status(current_services().store, study_id, status)
    log.info("admin set study %s to %s", study_id, status)
    return jsonify({"ok": True, "status": record.status}), 200


def _participant(study_id: str, participant_id: str) -> StudyDefinition:
    _, definition = _study(study_id)
    if load_participant(current_services().store, study_id, participant_id[:64]) is None:
        raise ServerError(
            "unknown_participant",
            "No such participant in this study.",
            {"participant": participant_id[:64]},
            404,
        )
    return definition


@study_admin.post("/<study_id>/participants/<participant_id>/advance")
def advance(study_id: str, participant_id: str) -> tuple[Response, int]:
    definition = _participant(study_id, participant_id)
    participant = flow.advance(current_services().store, definition, participant_id)
    log.info("admin advanced participant %s of study %s to %s", participant_id, study_id, participant.step)
    return jsonify({"ok": True, "participant": _participant_row(participant)}), 200


@study_admin.post("/<study_id>/participants/<participant_id>/boot")
def boot(study_id: str, participant_id: str) -> tuple[Response, int]:
    """Dropped code now; a seat in a running game goes to the study's fill-in bot."""
    definition = _participant(study_id, participant_id)
    services = current_services()
    reason = str(_body().get("reason") or "booted by the researcher")[:200]
    participant, game = flow.drop(services.store, definition, participant_id, reason)
    handed_to = None
    if game is not None:
        try:
            hand_to_fill_in(services, definition, game.game_id, game.seat)  # as for a dropout
            handed_to = definition.seat_spec(definition.waiting_room.fill_in, services.settings).bot
        except ServerError as err:  # the game ended meanwhile: nobody is left waiting for the seat
            log.info("game %s: a booted participant's seat stays (%s)", game.game_id, err.code)
    log.info("admin booted participant %s of study %s", participant_id, study_id)
    return jsonify(
        {"ok": True, "participant": _participant_row(participant), "seat_handed_to": handed_to}
    ), 200


@study_admin.post("/<study_id>/participants/<participant_id>/message")
def message(study_id: str, participant_id: str) -> tuple[Response, int]:
    definition = _participant(study_id, participant_id)
    participant = flow.send_message(current_services().store, definition, participant_id, _body().get("text"))
    return jsonify({"ok": True, "participant": _participant_row(participant)}), 200


def current_services() -> Any:
    """The app's ``Services`` (server/web/services.py), reached through Flask: importing that module here
    would make ``server.web.services`` (which holds the app's Studies) and this package import each other."""
    return current_app.extensions["tradecraft"]


def _body() -> dict[str, Any]:
    """The request's JSON object (csrf.py already required a JSON body and the app caps its size)."""
    data = request.get_json(silent=True) if request.get_data(cache=True) else {}
    if not isinstance(data, dict):
        raise ServerError("invalid_request", "Send a JSON object.")
    return data
