"""Helpers of the study matcher's tests (tests/test_study_matching.py, tests/test_review_h22_robustness.py):
a stored duel study, a consented participant in its waiting room, a matcher whose rounds a test runs."""

from __future__ import annotations

import secrets
import time
from typing import Any

from in_process import InProcessApp, InProcessClient

from server.store import Store
from server.web.sessions import SessionRecord, session_key
from server.web.study import flow
from server.web.study.definition import StudyDefinition, parse_definition
from server.web.study.matching import StudyMatcher
from server.web.study.records import Participant, load_participant, load_study, save_study

CODES = {"completed": "C-DONE", "screened_out": "C-SCREEN", "no_partner": "C-ALONE", "dropped": "C-LEFT"}


def study(store: Store, study_id: str, **sections: Any) -> StudyDefinition:
    """A two-person duel study straight to the waiting room (no instructions, practice or check), with one
    questionnaire item; ``sections`` replace keys of the waiting_room / dropout sections or top-level keys."""
    data: dict[str, Any] = {
        "id": study_id,
        "title": "Matching test",
        "hall": "duel",
        "consent": "Test consent.",
        "practice": False,
        "questionnaire": [{"id": "fun", "prompt": "Was it fun?", "kind": "text"}],
        "codes": CODES,
        "recruitment": {"session_param": None},
        "deadlines": {},
        "waiting_room": {
            "max_wait_seconds": 60,
            "presence_check_seconds": 5,
            "presence_timeout_seconds": 3,
            "on_timeout": "fill",
            "fill_in": {"kind": "bot", "bot": "random"},
        },
        "dropout": {"disconnect_grace_seconds": 600, "idle_timeouts": None, "waiting_grace_seconds": 600},
    }
    for key, value in sections.items():
        data[key] = {**data[key], **value} if isinstance(data.get(key), dict) else value
    definition = parse_definition(data)
    save_study(store, definition)
    return definition


def arrive_waiting(store: Store, study_id: str) -> Participant:
    """A new participant from a recruitment link, consented: in the waiting room, present."""
    record = load_study(store, study_id)
    participant = flow.arrive(store, record, {"PROLIFIC_PID": "pid" + secrets.token_hex(8)})
    return flow.give_consent(store, record.parsed(), participant.id, True)


def reload(store: Store, participant: Participant) -> Participant:
    found = load_participant(store, participant.study_id, participant.id)
    assert found is not None
    return found


def manual_matcher(app: InProcessApp, leased: bool = True) -> StudyMatcher:
    """The app's own background matcher stopped, and one whose rounds the test runs (``leased=False``:
    without the lease, as two processes would be if the lease failed, to test the conditional writes
    alone)."""
    assert app.services.study_matcher is not None
    app.services.study_matcher.stop()
    matcher = StudyMatcher(app.services)
    if not leased:
        matcher._take_lease = lambda: True  # type: ignore[method-assign]
    return matcher


def in_process_login(app: InProcessApp, participant: Participant) -> InProcessClient:
    """A browser of the in-process app logged in as the participant (what the study link does)."""
    session_id = secrets.token_urlsafe(32)
    at = time.time()
    record = SessionRecord(user=participant.user_id, admin=None, epoch=0, created=at, seen=at)
    assert app.services.store.replace_value(session_key(session_id), None, record.dumps())
    client = InProcessClient(app)
    client.http.set_cookie("tradecraft_session", session_id)
    return client
