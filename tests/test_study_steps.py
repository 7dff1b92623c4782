"""The study core's step rules (server/web/study/flow.py) over real stores: SQLite file and the MongoDB path.

Every rule a page, the matcher or an admin relies on: one participant per recruitment id (also under a race),
the capacity with overbooking, each step refusing the wrong moment and changing nothing, the check's tries,
codes and earnings per outcome, dropping, the researcher's advance and messages.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mongo_server import database_uri, drop_database

from server.store import Store, open_store
from server.table.errors import ServerError
from server.web.study import flow
from server.web.study.definition import StudyDefinition, load_definition, parse_definition
from server.web.study.records import (
    StudyRecord,
    iter_participants,
    load_participant,
    save_study,
    set_study_status,
)

ROOT = Path(__file__).resolve().parents[1]
PILOT = ROOT / "studies" / "duel_pilot.yaml"


@pytest.fixture(params=["sqlite-file", "mongodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite-file":
        url = f"sqlite:///{tmp_path}/study.db"
    else:
        url = database_uri(request.getfixturevalue("mongo_uri"), f"tc_study_{uuid.uuid4().hex[:10]}")
    opened = open_store(url)
    yield opened
    opened.close()
    if request.param == "mongodb":
        drop_database(url)


def pilot(**changes: Any) -> StudyDefinition:
    data = load_definition(PILOT).model_dump(mode="json")
    data.update(changes)
    return parse_definition(data)


def link(n: int, session: str | None = None) -> dict[str, str]:
    return {"PROLIFIC_PID": f"{n:024x}", "STUDY_ID": "b" * 24, "SESSION_ID": session or f"{n + 7:024x}"}


def to_waiting(store: Store, study: StudyRecord, n: int) -> str:
    definition = study.parsed()
    participant = flow.arrive(store, study, link(n))
    flow.give_consent(store, definition, participant.id, True)
    flow.finish_instructions(store, definition, participant.id)
    flow.finish_practice(store, definition, participant.id, "practice-game")
    flow.answer_comprehension(store, definition, participant.id, {"target_private": 1, "trade_answer": 1})
    return participant.id


def test_a_whole_flow_issues_the_completed_code_and_pays_base_and_bonus(store: Store) -> None:
    study = save_study(store, pilot())
    definition = study.parsed()
    participant_id = to_waiting(store, study, 1)
    participant = flow.matched(store, definition, participant_id, "game-1", 0, [])
    assert participant.step == "playing" and participant.current_game is not None
    participant = flow.game_over(store, definition, participant_id, "game-1", "won", 3)
    assert participant.step == "questionnaire"
    again = flow.game_over(store, definition, participant_id, "game-1", "lost", 0)  # recorded once
    assert again.games[0].result == "won"
    participant = flow.submit_questionnaire(
        store, definition, participant_id, {"partner_human": 2, "difficulty": 5, "strategy": "<b>x</b>"}
    )
    assert (participant.step, participant.outcome, participant.code) == ("done", "completed", "C1TRADE7")
    assert participant.earnings is not None
    assert (participant.earnings.base, participant.earnings.bonus, participant.earnings.total) == (
        2.5,
        1.0,
        3.5,
    )
    events = [e.event for e in participant.events]
    assert events[0] == "arrived" and events[-1] == "code_issued"
    assert participant.questionnaire == {"partner_human": 2, "difficulty": 5, "strategy": "<b>x</b>"}


def test_one_recruitment_id_is_one_participant_even_when_tabs_race(store: Store) -> None:
    study = save_study(store, pilot())
    results: list[str] = []
    errors: list[Exception] = []

    def open_link() -> None:
        try:
            results.append(flow.arrive(store, study, link(5)).id)
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=open_link) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(results)) == 1
    participants = list(iter_participants(store, "duel-pilot"))
    assert len(participants) == 1 and participants[0].reconnects == 7


def test_another_platform_session_of_the_same_id_is_refused(store: Store) -> None:
    study = save_study(store, pilot())
    flow.arrive(store, study, link(2, session="c" * 24))
    with pytest.raises(ServerError) as refused:
        flow.arrive(store, study, link(2, session="d" * 24))
    assert refused.value.code == "already_participated"


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"STUDY_ID": "b" * 24}, "PROLIFIC_PID"),
        ({"PROLIFIC_PID": "not-hex", "STUDY_ID": "b" * 24}, "PROLIFIC_PID"),
        ({"PROLIFIC_PID": "a" * 24, "STUDY_ID": "<script>"}, "STUDY_ID"),
        ({"PROLIFIC_PID": "a" * 5000}, "PROLIFIC_PID"),
    ],
)
def test_forged_or_missing_ids_are_refused_and_store_nothing(
    store: Store, query: dict[str, str], param: str
) -> None:
    study = save_study(store, pilot())
    with pytest.raises(ServerError) as refused:
        flow.arrive(store, study, query)
    assert refused.value.code == "invalid_recruitment" and refused.value.details == {"param": param}
    assert list(iter_participants(store, "duel-pilot")) == []


def test_capacity_with_overbooking_and_places_given_back(store: Store) -> None:
    definition = pilot(capacity={"participants": 2, "overbook": 1})
    study = save_study(store, definition)
    first = flow.arrive(store, study, link(1))
    flow.arrive(store, study, link(2))
    flow.arrive(store, study, link(3))
    with pytest.raises(ServerError) as full:
        flow.arrive(store, study, link(4))
    assert full.value.code == "study_full"
    flow.give_consent(store, definition, first.id, False)  # declining gives the place back
    assert flow.arrive(store, study, link(4)).step == "consent"
    assert (
        flow.arrive(store, study, link(1)).outcome == "declined"
    )  # the returning decliner is not re-admitted


def test_paused_and_closed_studies_admit_nobody_new_but_resume_those_inside(store: Store) -> None:
    study = save_study(store, pilot())
    inside = flow.arrive(store, study, link(1))
    paused = set_study_status(store, "duel-pilot", "paused")
    with pytest.raises(ServerError) as refused:
        flow.arrive(store, paused, link(2))
    assert refused.value.code == "study_paused"
    assert flow.arrive(store, paused, link(1)).id == inside.id
    closed = set_study_status(store, "duel-pilot", "closed")
    with pytest.raises(ServerError) as refused:
        flow.arrive(store, closed, link(3))
    assert refused.value.code == "study_closed"
    with pytest.raises(ServerError):
        set_study_status(store, "duel-pilot", "open")


def test_each_step_refuses_the_wrong_moment_and_changes_nothing(store: Store) -> None:
    study = save_study(store, pilot())
    definition = study.parsed()
    participant = flow.arrive(store, study, link(1))
    before = load_participant(store, "duel-pilot", participant.id)
    for act in (
        lambda: flow.finish_instructions(store, definition, participant.id),
        lambda: flow.finish_practice(store, definition, participant.id, "g"),
        lambda: flow.confirm_presence(store, definition, participant.id),
        lambda: flow.matched(store, definition, participant.id, "g", 0, []),
        lambda: flow.submit_questionnaire(store, definition, participant.id, {"partner_human": 0}),
        lambda: flow.answer_comprehension(
            store, definition, participant.id, {"target_private": 1, "trade_answer": 1}
        ),
    ):
        with pytest.raises(ServerError) as refused:
            act()
        assert refused.value.code == "wrong_step" and refused.value.details == {"step": "consent"}
    assert load_participant(store, "duel-pilot", participant.id) == before
    flow.give_consent(store, definition, participant.id, True)
    with pytest.raises(ServerError):  # a second tab's consent
        flow.give_consent(store, definition, participant.id, True)
    consented = load_participant(store, "duel-pilot", participant.id)
    assert consented is not None and [e.event for e in consented.events].count("consented") == 1


def test_comprehension_malformed_answers_count_no_try_and_the_last_wrong_try_screens_out(
    store: Store,
) -> None:
    study = save_study(store, pilot())
    definition = study.parsed()
    participant = flow.arrive(store, study, link(1))
    for step in (
        lambda: flow.give_consent(store, definition, participant.id, True),
        lambda: flow.finish_instructions(store, definition, participant.id),
        lambda: flow.finish_practice(store, definition, participant.id, "g"),
    ):
        step()
    for malformed in (
        {},
        {"target_private": 1},
        {"target_private": 9, "trade_answer": 1},
        [1, 1],
        {"target_private": True, "trade_answer": 1},
    ):
        with pytest.raises(ServerError) as refused:
            flow.answer_comprehension(store, definition, participant.id, malformed)
        assert refused.value.code == "invalid_request"
    after, wrong = flow.answer_comprehension(
        store, definition, participant.id, {"target_private": 0, "trade_answer": 1}
    )
    assert wrong == ["target_private"] and after.step == "comprehension" and len(after.comprehension) == 1
    after, wrong = flow.answer_comprehension(
        store, definition, participant.id, {"target_private": 2, "trade_answer": 0}
    )
    assert sorted(wrong) == ["target_private", "trade_answer"]
    assert (after.step, after.outcome, after.code) == ("done", "screened_out", "C2SCREEN")
    assert after.earnings is not None and after.earnings.base == 0


def test_presence_decides_who_may_be_matched(store: Store) -> None:
    study = save_study(
        store, pilot(waiting_room={"presence_check_seconds": 5, "presence_timeout_seconds": 3})
    )
    definition = study.parsed()
    participant_id = to_waiting(store, study, 1)
    waiting = load_participant(store, "duel-pilot", participant_id)
    assert waiting is not None and flow.is_present(waiting)
    assert not flow.is_present(waiting, at=(waiting.present_until or 0) + 0.001)
    confirmed = flow.confirm_presence(store, definition, participant_id)
    assert (confirmed.present_until or 0) >= (waiting.present_until or 0)


def test_several_games_go_back_to_the_waiting_room_and_exit_pays_no_partner(store: Store) -> None:
    study = save_study(store, pilot(games_per_participant=2))
    definition = study.parsed()
    participant_id = to_waiting(store, study, 1)
    flow.matched(store, definition, participant_id, "g1", 1, [0])
    back = flow.game_over(store, definition, participant_id, "g1", "won", 3)
    assert back.step == "waiting" and back.waiting_since is not None
    left = flow.leave_waiting_room(store, definition, participant_id)
    assert (left.outcome, left.code) == ("no_partner", "C3ALONE")
    assert left.earnings is not None and (left.earnings.base, left.earnings.bonus) == (
        2.5,
        1.5,
    )  # 0.5 + 1 win


def test_drop_and_boot_end_with_the_dropped_code_and_return_the_game_to_fill(store: Store) -> None:
    study = save_study(store, pilot())
    definition = study.parsed()
    participant_id = to_waiting(store, study, 1)
    flow.matched(store, definition, participant_id, "g1", 1, [])
    dropped, game = flow.drop(store, definition, participant_id, "disconnected")
    assert (dropped.outcome, dropped.code) == ("dropped", "C4LEFT")
    assert game is not None and (game.game_id, game.seat, game.result) == ("g1", 1, "dropped")
    twice, none = flow.drop(store, definition, participant_id, "booted")
    assert none is None and twice.events[-1].event == "code_issued"


def test_the_researchers_advance_and_messages(store: Store) -> None:
    study = save_study(store, pilot())
    definition = study.parsed()
    participant = flow.arrive(store, study, link(1))
    assert flow.advance(store, definition, participant.id).step == "instructions"
    with pytest.raises(ServerError):
        flow.send_message(store, definition, participant.id, "x" * (flow.MESSAGE_MAX_CHARS + 1))
    with pytest.raises(ServerError):
        flow.send_message(store, definition, participant.id, 12)
    sent = flow.send_message(store, definition, participant.id, "  Please continue  ")
    assert [m.text for m in sent.messages] == ["Please continue"] and sent.messages[0].read_at is None
    read = flow.mark_messages_read(store, definition, participant.id)
    assert read.messages[0].read_at is not None


def test_the_participant_view_names_no_recruitment_id(store: Store) -> None:
    study = save_study(store, pilot())
    participant = flow.arrive(store, study, link(77))
    view = flow.participant_view(study.parsed(), participant)
    text = repr(view)
    assert f"{77:024x}" not in text and "b" * 24 not in text and participant.user_id not in text


def test_two_tabs_of_one_new_id_at_the_last_place_both_resume_one_participant(store: Store) -> None:
    study = save_study(store, pilot(capacity={"participants": 1, "overbook": 0}))
    results: list[str] = []
    errors: list[str] = []

    def open_link() -> None:
        try:
            results.append(flow.arrive(store, study, link(9)).id)
        except ServerError as err:
            errors.append(err.code)

    threads = [threading.Thread(target=open_link) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(results)) == 1, (errors, results)
    with pytest.raises(ServerError) as full:
        flow.arrive(store, study, link(10))
    assert full.value.code == "study_full"
