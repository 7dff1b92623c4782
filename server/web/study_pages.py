"""The participant's pages and their JSON API (docs/studies.md "The participant's pages").

- ``GET /study/<sid>?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..``: the study link. :func:`flow.arrive` records
  (or resumes) the participant, the browser is logged in as the participant's user and redirected to
  ``/study/<sid>`` without the query, so the ids stay neither in the address bar nor in a Referer. A NEW
  participant counts against ``limits.logins_per_address`` (``rate_limited``, 429). A browser logged in as
  someone else (an admin, another user, another participant) is not switched by this GET, which any site
  can make it send: it gets a confirmation page whose button POSTs the link's query to
  ``/api/study/<sid>/arrive`` (same-origin JSON, server/web/csrf.py), which then does the same.
- ``GET /study/<sid>``: the page of the participant's CURRENT step (one URL: no step is reachable by typing
  another). A browser that is nobody's participant is asked to open the recruitment link (a study whose
  link needs no recruitment id admits it anonymously instead).
- ``/api/study/<sid>/...``: the JSON API of the pages (``me``, ``consent``, ``instructions``, ``practice``,
  ``practice/done``, ``comprehension``, ``presence``, ``questionnaire``, ``messages/read``, ``me/data``).
  Every answer carries the participant's own view (:func:`flow.participant_view`); a POST at another step
  is ``wrong_step`` (409) and changes nothing.

Every rule lives in :mod:`server.web.study.flow`; this module only reads requests, checks who is asking and
renders. It sits beside the study package, not in it: it needs the app's services and the practice game,
and the services hold the studies (a module of the package importing them back would be an import cycle).
Bodies are read under ``server.max_action_bytes`` and the link's query under :data:`LINK_QUERY_MAX_BYTES`
before any store access.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, Response, jsonify, redirect, render_template, request, session
from werkzeug.exceptions import HTTPException

from server.table.errors import ServerError
from server.table.principal import Principal
from server.web.auth import resolve_principal
from server.web.errors import request_object, rest_error
from server.web.practice import (
    PRACTICE_HALL_NAME,
    practice_completed,
    practice_status,
    record_practice_completed,
    start_practice,
)
from server.web.services import current_services
from server.web.sessions import current_sessions
from server.web.study import flow
from server.web.study.definition import STUDY_ID, StudyDefinition
from server.web.study.records import Participant, StudyRecord, participant_of_user, unknown_study

log = logging.getLogger(__name__)

#: Longest query string a study link may carry (three ids of at most 128 characters and their names).
LINK_QUERY_MAX_BYTES = 1024
#: What the page polls and the waiting room's clock are told (seconds).
POLL_SECONDS = 2

study_pages = Blueprint("study_pages", __name__)


# ------------------------------------------------------------------------------------------------ helpers
def _study(study_id: str) -> tuple[StudyRecord, StudyDefinition]:
    """The stored study and its parsed definition (its hall installed); ``unknown_study`` for an id that
    cannot be one (checked before the store is read)."""
    if not STUDY_ID.fullmatch(study_id):
        raise unknown_study(study_id)
    studies = current_services().studies
    record = studies.record(study_id)
    return record, studies.definition(record)


def _caller() -> Principal | None:
    try:
        return resolve_principal(current_services().store, request.headers, session)
    except ServerError:  # a revoked API token: as anyone
        return None


def _participant_of_caller(definition: StudyDefinition) -> tuple[Principal, Participant]:
    principal = _caller()
    participant = (
        participant_of_user(current_services().store, definition.id, principal.id) if principal else None
    )
    if principal is None or participant is None:
        raise ServerError(
            "unknown_participant",
            "You are not a participant of this study in this browser: open the study from the recruitment "
            "site's link.",
            status=404,
        )
    return principal, participant


def paragraphs(text: str) -> list[str]:
    """A study text's paragraphs (blank lines separate them); rendered as text, never as markup."""
    return [part.strip() for part in re.split(r"\n\s*\n", text) if part.strip()]


def explanations(definition: StudyDefinition, wrong: Iterable[str]) -> dict[str, str]:
    """The explanations of the questions answered wrongly (never those of the right ones)."""
    missed = set(wrong)
    return {q.id: q.explanation for q in definition.comprehension.questions if q.id in missed}


def _answer(definition: StudyDefinition, participant: Participant, **extra: Any) -> tuple[Response, int]:
    view = flow.participant_view(definition, participant)
    return jsonify({"ok": True, "participant": view, **extra}), 200


def _api(
    action: Callable[[StudyDefinition, Principal, Participant, dict[str, Any]], tuple[Response, int]],
) -> Callable[[str], tuple[Response, int]]:
    """A POST of the API: the body bounded and parsed first, then the study and the caller's participant."""

    def handler(sid: str) -> tuple[Response, int]:
        body = request_object(current_services().settings.server.max_action_bytes)
        _, definition = _study(sid)
        principal, participant = _participant_of_caller(definition)
        return action(definition, principal, participant, body)

    handler.__name__ = action.__name__
    return handler


@study_pages.after_request
def _not_cached(response: Response) -> Response:
    """A study page shows the participant's step now: a back button or a proxy must not show an old one."""
    response.headers["Cache-Control"] = "no-store"
    return response


@study_pages.errorhandler(Exception)
def _error(err: Exception) -> Any:
    if request.path.startswith("/api/"):
        return rest_error(err, current_services().settings.server.max_payload_bytes)
    if isinstance(err, HTTPException):
        err = ServerError("invalid_request", err.description or err.name, status=err.code or 400)
    elif not isinstance(err, ServerError):
        log.exception("study page %s failed", request.path[:200])
        err = ServerError("internal_error", "Something went wrong on our side; reload the page.", status=500)
    return render_template("study/error.html", error=err, title=None), err.status


# -------------------------------------------------------------------------------------------------- pages
@study_pages.get("/study/<sid>")
def study_page(sid: str) -> Any:
    if len(request.query_string) > LINK_QUERY_MAX_BYTES:
        raise ServerError(
            "invalid_recruitment", "The link is too long. Open the study from the recruitment site's link."
        )
    record, definition = _study(sid)
    store = current_services().store
    principal = _caller()
    participant = participant_of_user(store, sid, principal.id) if principal else None
    if request.args or (participant is None and not definition.recruitment.required):
        query = {name: value for name, value in request.args.items()}
        if _replaces_session(definition, principal, participant, query):
            # any site can send a browser here with a plain GET: who is logged in changes on a POST only
            return render_template(
                "study/switch.html",
                title=definition.title,
                study_id=sid,
                query=query,
                name=principal.name if principal is not None else None,
            )
        try:
            _arrive(record, principal, query)
        except ServerError as err:  # full, paused, a forged id, too many arrivals, ...: under the title
            return render_template("study/error.html", error=err, title=definition.title), err.status
        return redirect(f"/study/{sid}", code=302)
    if participant is None:
        error = ServerError(
            "unknown_participant",
            "Open this study from the link on the recruitment site: it tells us who you are.",
            status=404,
        )
        return render_template("study/error.html", error=error, title=definition.title), 404
    participant = flow.seen(store, definition, participant)
    return _render_step(definition, participant)


def _replaces_session(
    definition: StudyDefinition,
    principal: Principal | None,
    participant: Participant | None,
    query: dict[str, str],
) -> bool:
    """Whether following the link would log this browser out of someone else: an admin session, another
    user, or this study's participant opening another participant's link. Nobody logged in, or the
    participant's own link again, is not."""
    if participant is not None:
        named = query.get(definition.recruitment.participant_param)
        return named is not None and named != participant.recruitment.participant_id
    return principal is not None or session.get("admin") is True


def _arrive(record: StudyRecord, principal: Principal | None, query: dict[str, str]) -> Participant:
    """:func:`flow.arrive` for this browser, which is then logged in as the participant. A NEW participant
    (a user and a record) counts against ``limits.logins_per_address`` like a display-name login; a return
    with the same link does not."""
    services = current_services()
    address = request.remote_addr or "unknown"
    arrived = flow.arrive(
        services.store,
        record,
        query,
        user_id=principal.id if principal else None,
        other_halls=(PRACTICE_HALL_NAME,),
        count_new=lambda: services.lobby.limiter.hit("logins_per_address", address),
    )
    if principal is None or principal.id != arrived.user_id:
        current_sessions().log_in(arrived.user_id)
    return arrived


def _render_step(definition: StudyDefinition, participant: Participant) -> str:
    view = flow.participant_view(definition, participant)
    context: dict[str, Any] = {
        "title": definition.title,
        "study_id": definition.id,
        "view": view,
        "unread": [m for m in participant.messages if m.read_at is None],
        "poll_seconds": POLL_SECONDS,
    }
    step = participant.step
    if step == "consent":
        context.update(consent=paragraphs(definition.consent), researcher=definition.researcher)
    elif step == "instructions":
        context.update(pages=[paragraphs(page) for page in definition.instructions])
    elif step == "comprehension":
        context.update(
            questions=definition.comprehension.questions,
            explanations=explanations(definition, view["comprehension"]["last_wrong"]),
            tries_left=definition.comprehension.attempts - len(participant.comprehension),
        )
    elif step == "waiting":
        context.update(server_time=flow.now())
    elif step == "playing":
        game_id = view["current_game"]
        meta = current_services().store.get_game(game_id) if game_id else None
        context.update(
            game_id=game_id, game_over=bool(meta and meta.get("status") in ("finished", "aborted"))
        )
    elif step == "questionnaire":
        context.update(items=definition.questionnaire)
    return render_template(f"study/{step}.html", **context)


# ---------------------------------------------------------------------------------------------------- API
@study_pages.post("/api/study/<sid>/arrive")
def arrive(sid: str) -> tuple[Response, int]:
    """The confirmation page's "Continue as the participant" (``study/switch.html``): the link's query, sent
    as ``{"query": {name: value}}`` by a same-origin POST (server/web/csrf.py), followed like the link."""
    body = request_object(current_services().settings.server.max_action_bytes)
    query = body.get("query")
    if (
        not isinstance(query, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in query.items())
        or len(urlencode(query)) > LINK_QUERY_MAX_BYTES
    ):
        raise ServerError(
            "invalid_recruitment", 'Send {"query": {...}}: the study link\'s query, its names and values.'
        )
    record, _ = _study(sid)
    _arrive(record, _caller(), query)
    return jsonify({"ok": True, "url": f"/study/{sid}"}), 200


@study_pages.get("/api/study/<sid>/me")
def me(sid: str) -> tuple[Response, int]:
    _, definition = _study(sid)
    _, participant = _participant_of_caller(definition)
    return _answer(definition, flow.seen(current_services().store, definition, participant))


@study_pages.get("/api/study/<sid>/me/data")
def my_data(sid: str) -> tuple[Response, int]:
    """The participant's own record, without what identifies them on the platform (their recruitment ids),
    the user account behind the browser, or which seats of their games the study's fill-in played."""
    _, definition = _study(sid)
    _, participant = _participant_of_caller(definition)
    # which seats the fill-in took is the study design's to reveal (a fill-in may pass for a participant)
    data = participant.model_dump(
        mode="json", exclude={"recruitment": True, "user_id": True, "games": {"__all__": {"filled_seats"}}}
    )
    response = jsonify({"ok": True, "data": data})
    if request.args.get("download") == "1":
        response.headers["Content-Disposition"] = f'attachment; filename="{sid}-my-data.json"'
    return response, 200


def consent(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    agree = body.get("agree")
    if not isinstance(agree, bool):
        raise ServerError("invalid_request", 'Send {"agree": true} or {"agree": false}.')
    return _answer(definition, flow.give_consent(current_services().store, definition, participant.id, agree))


def instructions(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    store = current_services().store
    return _answer(definition, flow.finish_instructions(store, definition, participant.id))


def practice(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    services = current_services()
    flow.require_step(participant, "practice")  # before a game is made
    game_id = start_practice(services, principal, request.remote_addr or "unknown")
    updated = flow.practice_started(services.store, definition, participant.id, game_id)
    return _answer(definition, updated, game_id=game_id)


def practice_done(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    services = current_services()
    flow.require_step(participant, "practice")
    if not practice_completed(services.store, principal) and participant.practice_game_id:
        # the guide records the win as the game ends; a participant quicker than that request is not refused
        try:
            record_practice_completed(services, principal, participant.practice_game_id)
        except ServerError as err:
            if err.code not in ("game_not_over", "unknown_game"):
                raise
    completed = practice_status(services.store, principal)
    if not completed["completed"]:
        game = services.store.get_game(participant.practice_game_id) if participant.practice_game_id else None
        ended = bool(game and game.get("status") in ("finished", "aborted"))  # lost: start another
        raise ServerError(
            "game_not_over",
            "The practice game ended before you crafted your target: start it again."
            if ended
            else "Finish the practice game first: craft your target in it.",
            {"game_id": participant.practice_game_id, "ended": ended},
            status=409,
        )
    game_id = str(completed["completed_game_id"])
    return _answer(definition, flow.finish_practice(services.store, definition, participant.id, game_id))


def comprehension(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    flow.require_step(participant, "comprehension")  # a wrong step before a malformed sheet
    store = current_services().store
    updated, wrong = flow.answer_comprehension(store, definition, participant.id, body.get("answers"))
    return _answer(definition, updated, wrong=wrong, explanations=explanations(definition, wrong))


def presence(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    return _answer(definition, flow.confirm_presence(current_services().store, definition, participant.id))


def questionnaire(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    flow.require_step(participant, "questionnaire")
    store = current_services().store
    return _answer(
        definition, flow.submit_questionnaire(store, definition, participant.id, body.get("answers"))
    )


def messages_read(
    definition: StudyDefinition, principal: Principal, participant: Participant, body: dict[str, Any]
) -> tuple[Response, int]:
    return _answer(definition, flow.mark_messages_read(current_services().store, definition, participant.id))


for _path, _action in (
    ("consent", consent),
    ("instructions", instructions),
    ("practice", practice),
    ("practice/done", practice_done),
    ("comprehension", comprehension),
    ("presence", presence),
    ("questionnaire", questionnaire),
    ("messages/read", messages_read),
):
    study_pages.add_url_rule(f"/api/study/<sid>/{_path}", methods=["POST"], view_func=_api(_action))
