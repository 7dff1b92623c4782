"""Review of issue 22 (studies): robustness of the matcher, the supervisor and the flow's accounting.

Each test reproduces a confirmed defect; each was marked ``xfail(strict=True)`` until its fix, and now
stays as its regression test (findings 1-8 are fixed). Real in-process apps
(tests/in_process.py) over real SQLite files; the matcher's rounds are run by hand (the app's own background
matcher stopped) so each test decides when a round happens.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from in_process import MakeApp
from study_support import arrive_waiting, in_process_login, manual_matcher, reload, study

from server.store import open_store
from server.web.study import flow
from server.web.study.definition import StudyDefinitionError, parse_definition
from server.web.study.exports import export_jsonl, participant_rows
from server.web.study.records import MAX_EVENTS


def test_a_game_longer_than_the_waiting_grace_does_not_drop_its_players(
    make_app: MakeApp, tmp_path: Path
) -> None:
    """last_seen_at is not refreshed while a participant plays (the game room never writes it), nor by
    flow.matched / flow.game_over; the round that records the game's end then runs the silence rule on the
    participant now at the questionnaire, whose last_seen_at is from before the game, and drops them: a
    participant who played the whole game gets the dropped code (and, by default, no base pay)."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'long.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(store, "long", dropout={"waiting_grace_seconds": 10})
    people = [arrive_waiting(store, "long") for _ in range(2)]
    game_id = matcher.round().games[0]
    assert all(reload(store, p).step == "playing" for p in people)
    time.sleep(10.5)  # the game runs a little longer than the waiting room's grace (default: 300 s)
    app.services.table.abort(game_id, "ended")  # the game ends (any end: a result or an abort)
    matcher.round()
    after = [reload(store, p) for p in people]
    # the end is recorded, and nobody is dropped (an aborted game is no game played: they are matched again)
    assert [p.games[0].result for p in after] == ["aborted", "aborted"]
    assert [(p.outcome, [e.detail for e in p.events if e.event == "dropped"]) for p in after] == [
        (None, []),
        (None, []),
    ], [p.step for p in after]


def test_a_fill_in_bot_that_does_not_exist_is_refused_when_the_study_is_created(
    make_app: MakeApp, tmp_path: Path
) -> None:
    """check_against_settings checks the hall and an llm fill-in's model, never a bot spec (the fill-in's or a
    bot seat's). A typo there is found only when the matcher creates a game: form_game logs, undoes the plan
    and the group 'waits on' every round, forever (each confirms presence, so no silence rule ends it)."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'typo.db'}")
    matcher, store, services = manual_matcher(app), app.services.store, app.services
    definition = study(
        store,
        "typo",
        waiting_room={"max_wait_seconds": 1, "fill_in": {"kind": "bot", "bot": "tom_one_typo"}},
    )
    refused = False
    try:
        services.studies.check(definition)  # what `tradecraft study create` and the admin's create run
    except Exception:
        refused = True
    lone = arrive_waiting(store, "typo")
    time.sleep(1.2)
    for _ in range(3):
        matcher.round()
        flow.confirm_presence(store, definition, lone.id)
    stuck = reload(store, lone).step == "waiting"
    assert refused or not stuck, "neither refused at creation nor ever matched or sent home"


def test_an_aborted_first_game_of_two_sends_the_players_back_to_the_waiting_room(
    make_app: MakeApp, tmp_path: Path
) -> None:
    """flow.game_over counts only games that did not end aborted (so an aborted one is not a game played),
    yet with ``result == "aborted"`` it skips to the questionnaire: a game the researcher ended (or the
    crash repair aborted) ends the participant's games, and they complete (base paid) having played none.
    docs/studies.md: 'the participant then goes on to the next game's waiting room or to the
    questionnaire'."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'two.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(store, "two", games_per_participant=2)
    people = [arrive_waiting(store, "two") for _ in range(2)]
    game_id = matcher.round().games[0]
    app.services.table.abort(game_id, "ended by the researcher")  # not the participants' doing
    matcher.round()
    after = [reload(store, p) for p in people]
    assert [g.result for g in after[0].games][:1] == ["aborted"]
    # back in the waiting room: present, so the same round may already have matched them into game 2
    steps = [p.step for p in after]
    assert steps in (["waiting", "waiting"], ["playing", "playing"]), steps
    assert all(p.outcome is None for p in after)


def test_a_waiting_participant_who_stops_confirming_is_not_left_waiting_forever(
    make_app: MakeApp, tmp_path: Path
) -> None:
    """The maximum-wait rule looks only at the present (StudyMatcher._match: ``queue``), and the silence rule
    at last_seen_at, which the waiting page's /me poll keeps fresh. A participant who walked away from an
    open waiting page is neither matched, nor sent home with no_partner, nor dropped: no code, ever, and their
    place in the study's capacity is never given back."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'away.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(
        store,
        "away",
        waiting_room={"max_wait_seconds": 10, "on_timeout": "exit"},
        dropout={"waiting_grace_seconds": 10},
    )
    person = arrive_waiting(store, "away")
    page = in_process_login(app, person)
    deadline = time.monotonic() + 22  # presence lapses at 8 s, the maximum wait at 10 s, the grace is 10 s
    while time.monotonic() < deadline:
        status, body = page.rest("GET", "/api/study/away/me")  # the waiting page's poll
        assert status == 200, body
        matcher.round()
        time.sleep(1)
    assert reload(store, person).step != "waiting", "still waiting, with no code, 12 s after the maximum wait"


def test_a_long_wait_keeps_the_participants_earlier_steps_in_the_export(tmp_path: Path) -> None:
    """Participant.log keeps the newest MAX_EVENTS (400) events and the first; every presence confirmation
    and every return by the link is one event. A participant who waits long (several games, a long
    max_wait with a short presence check: 3600 s / 5 s = 720 confirmations in one wait) loses their
    consent, practice, comprehension and earlier games' events from the store and from the export's events
    table, which docs/studies.md says holds every step."""
    with open_store(f"sqlite:///{tmp_path / 'trail.db'}") as store:
        definition = study(
            store, "trail", waiting_room={"max_wait_seconds": 3600, "presence_check_seconds": 5}
        )
        person = arrive_waiting(store, "trail")
        for _ in range(MAX_EVENTS):  # 400 clicks of "I'm here" = 33 minutes of one wait
            flow.confirm_presence(store, definition, person.id)
        rows = participant_rows(definition, reload(store, person))["events"]
        assert "consented" in [row["event"] for row in rows]


def test_a_disconnect_and_reconnect_mid_game_is_in_the_study_export(
    make_app: MakeApp, tmp_path: Path
) -> None:
    """The issue's records: 'every step of every participant (times, attempts, answers, presence, dropouts,
    reconnects, ...) in the store and in the exports'. Table.presence only pushes the change to the room;
    the matcher keeps one 'last seen connected' time per seat (connected_key, overwritten); the
    participant's ``reconnects`` counts returns by the study link only. A participant who lost their
    connection mid-game for a while and came back (short of the grace) leaves no trace in the export."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'trace.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(store, "trace")
    people = [arrive_waiting(store, "trace") for _ in range(2)]
    game_id = matcher.round().games[0]
    player = in_process_login(app, people[0]).connect()
    assert player.call("join", {"game_id": game_id}).get("ok") is not False
    matcher.round()  # connected, noted
    player.drop()  # the connection is lost ...
    matcher.round()
    time.sleep(2.5)
    matcher.round()
    player.reconnect().call("join", {"game_id": game_id})  # ... and comes back
    matcher.round()
    player.close()
    record = reload(store, people[0])
    assert record.step == "playing"
    rows = [json.loads(line) for line in export_jsonl(store, "trace")]
    traced = [  # the participant's events, and the game's own log
        row
        for row in rows
        if (row["table"] == "events" and row["participant_id"] == record.id)
        or (row["table"] == "game_log" and row["game_id"] == game_id)
    ]
    assert any(row["table"] == "game_log" for row in traced)  # the game's log is exported
    words = ("disconnect", "reconnect", "online", "offline", "connection")
    assert record.reconnects > 0 or any(word in json.dumps(traced) for word in words), (
        "no trace of the lost connection in the export"
    )


def test_tom_orders_the_definition_accepts_are_accepted_by_the_game(
    make_app: MakeApp, tmp_path: Path
) -> None:
    """TomOrders allows any distinct values among 0, 1, 2; the game's HallSettings requires a reporting seat
    to report order 0 too. ``tradecraft study create`` then dies with a pydantic traceback (it catches only
    StudyDefinitionError), and a study stored otherwise is skipped by every matcher round ('cannot be
    matched'): its waiting room never matches anyone."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'orders.db'}")
    try:
        definition = parse_definition(
            {
                "id": "orders",
                "title": "Orders",
                "consent": "Test consent.",
                "codes": {"completed": "A1", "screened_out": "B2", "no_partner": "C3", "dropped": "D4"},
                "tom_orders": {"human": [1, 2]},  # distinct values among 0, 1, 2 but no V0
            }
        )
        app.services.studies.check(definition)
    except StudyDefinitionError:
        return  # refused with the definition's own typed error: the fix that keeps the two rules apart
    definition.hall_settings(app.services.settings)  # what the matcher's every round builds


def test_the_fill_in_reports_the_tom_orders_of_its_kind(make_app: MakeApp, tmp_path: Path) -> None:
    """hall_settings sets each seat's orders from the definition's seat kinds; a human seat the fill-in plays
    (a lone participant's partner, a dropout's seat) keeps the human orders (default []: no reports), so a
    study's bot-opponent value reports (tom_orders.bot, default [0, 1, 2]) are missing from exactly the
    games where the partner was a bot."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'fillorders.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(store, "fillorders", waiting_room={"max_wait_seconds": 0.5})  # tom_orders: human [], bot [0, 1, 2]
    arrive_waiting(store, "fillorders")
    time.sleep(0.6)
    game_id = matcher.round().games[0]
    meta = store.get_game(game_id)
    assert meta is not None and meta["seats"][1]["kind"] == "bot"  # the fill-in
    live = app.services.table.get(game_id)
    with live.lock:
        assert live.game is not None
        orders = live.game.settings.tom_orders
    assert orders[1] == [0, 1, 2], orders
