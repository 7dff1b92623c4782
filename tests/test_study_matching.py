"""The study matcher and game supervisor (server/web/study/matching.py) in real server processes.

Each server is ``run_server.py`` over a real SQLite file; the test process opens the same file to create
studies and walk participants up to the waiting room through the study core's flow (the participant pages
are another part's), and plays their games over real HTTP and Socket.IO as the participants' own logins.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import DUEL_TRADE, Client, ServerProcess, play_duel, write_config
from in_process import InProcessApp, MakeApp
from mongo_server import database_uri, drop_database
from study_support import CODES, arrive_waiting, in_process_login, manual_matcher, reload, study
from table_support import in_parallel

from server.store import Store, open_store
from server.table.config import SeatSpec
from server.table.errors import ServerError
from server.web.sessions import SessionRecord, session_key
from server.web.study import flow, matching
from server.web.study.definition import StudyDefinition
from server.web.study.exports import export_jsonl
from server.web.study.matching import (
    RoundReport,
    arrival_groups,
    connected_key,
    create_game,
    seat_participant,
)
from server.web.study.records import (
    Participant,
    StudyGame,
    game_key,
    iter_study_games,
    load_study,
    load_study_game,
    set_study_status,
    update_participant,
)

MakeServer = Callable[..., ServerProcess]


# ------------------------------------------------------------------------------------------------ helpers
def wait_until(check: Callable[[], Any], timeout: float = 15, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def wait_step(store: Store, participant: Participant, step: str, timeout: float = 15) -> Participant:
    return wait_until(
        lambda: (p := reload(store, participant)).step == step and p,
        timeout,
        f"{participant.id} to reach {step}",
    )


def logged_in(server: ServerProcess, store: Store, participant: Participant) -> Client:
    """A browser logged in as the participant's account (what the study link's page does: Sessions.log_in),
    Socket.IO connected."""
    session_id = secrets.token_urlsafe(32)
    at = time.time()
    record = SessionRecord(user=participant.user_id, admin=None, epoch=0, created=at, seen=at)
    assert store.replace_value(session_key(session_id), None, record.dumps())
    client = Client(server.url)
    client.http.cookies.set("tradecraft_session", session_id)
    return client.connect()


def moved(store: Store, game_id: str, seat: int) -> bool:
    """Whether ``seat`` has made a move of its own in the game (an event it is the actor of)."""
    return any(record.get("actor") == seat for record in store.load_events(game_id))


@contextmanager
def confirming(store: Store, definition: StudyDefinition, *people: Participant) -> Iterator[None]:
    """The waiting page's presence check: each participant confirms every 2 s meanwhile."""
    stop = threading.Event()

    def confirm() -> None:
        while not stop.wait(2):
            for person in people:
                with suppress(ServerError):  # matched meanwhile: the page has moved on
                    flow.confirm_presence(store, definition, person.id)

    thread = threading.Thread(target=confirm, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def study_games(store: Store, study_id: str) -> list[StudyGame]:
    return list(iter_study_games(store, study_id))


def seat_of(participant: Participant) -> tuple[str, int]:
    entry = participant.games[-1]
    return entry.game_id, entry.seat


def last_event(participant: Participant, name: str) -> dict[str, Any]:
    return next(e.detail for e in reversed(participant.events) if e.event == name)


# ----------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("study")
    return folder, f"sqlite:///{folder / 'study.db'}"


@pytest.fixture(scope="module")
def server(make_server: MakeServer, database: tuple[Path, str]) -> ServerProcess:
    folder, uri = database
    return make_server(write_config(folder / "one", database_uri=uri))


@pytest.fixture(scope="module")
def store(database: tuple[Path, str], server: ServerProcess) -> Iterator[Store]:
    opened = open_store(database[1])
    yield opened
    opened.close()


@pytest.fixture
def clients() -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for client in made:
        client.close()


# ------------------------------------------------------------------------------------------------- tests
def test_pairs_are_matched_in_arrival_order_and_seated(server: ServerProcess, store: Store) -> None:
    study(store, "pairs")
    people = [arrive_waiting(store, "pairs") for _ in range(4)]
    matched = [wait_step(store, p, "playing") for p in people]
    for participant in matched:  # the moment a record says playing, its game runs with them seated
        meta = store.get_game(seat_of(participant)[0])
        assert meta is not None and meta["status"] == "running"
        assert meta["seats"][seat_of(participant)[1]]["user_id"] == participant.user_id
    first, second = {seat_of(p)[0] for p in matched[:2]}, {seat_of(p)[0] for p in matched[2:]}
    assert len(first) == 1 and len(second) == 1 and first != second, "pairs in arrival order"
    assert [seat_of(p)[1] for p in matched] == [0, 1, 0, 1]
    games = {g.game_id: g for g in study_games(store, "pairs")}
    for pair in (matched[:2], matched[2:]):
        game_id = seat_of(pair[0])[0]
        assert games[game_id].participants == {0: pair[0].id, 1: pair[1].id}
        assert pair[0].games[-1].filled_seats == []
        meta = store.get_game(game_id)
        assert meta is not None and [s["user_id"] for s in meta["seats"]] == [
            pair[0].user_id,
            pair[1].user_id,
        ]
        assert meta["hall"] == "study-pairs"
        assert meta["held_for"]["user_ids"] == sorted([pair[0].user_id, pair[1].user_id])
    assert all(p.waiting_since is None and p.current_game is not None for p in matched)


def test_odd_one_out_plays_the_fill_in_after_the_maximum_wait(
    server: ServerProcess, store: Store, clients: list[Client]
) -> None:
    study(store, "odd", waiting_room={"max_wait_seconds": 3})
    people = [arrive_waiting(store, "odd") for _ in range(3)]
    wait_step(store, people[0], "playing")
    wait_step(store, people[1], "playing")
    assert reload(store, people[2]).step == "waiting"
    lone = wait_step(store, people[2], "playing", timeout=10)
    waited = last_event(lone, "matched")["waited"]
    assert 3 <= waited < 6, waited
    game_id, seat = seat_of(lone)
    assert seat == 0 and lone.games[-1].filled_seats == [1]
    assert next(g for g in study_games(store, "odd") if g.game_id == game_id).participants == {
        0: lone.id,
        1: None,
    }
    meta = wait_until(lambda: (m := store.get_game(game_id)) and m["status"] == "running" and m)
    fill = meta["seats"][1]
    assert fill["kind"] == "bot" and fill["bot"] == "random" and fill["name"] == "random bot"
    # the fill-in really plays: it answers the participant's proposal
    player = logged_in(server, store, lone)
    clients.append(player)
    player.call("join", {"game_id": game_id})
    player.act(game_id, "propose", **DUEL_TRADE)  # refused if the fill-in proposes first: it moves anyway
    wait_until(lambda: moved(store, game_id, 1), what="a move of the fill-in")


def test_exit_rule_gives_the_no_partner_code(server: ServerProcess, store: Store) -> None:
    study(store, "alone", waiting_room={"max_wait_seconds": 2, "on_timeout": "exit"})
    person = arrive_waiting(store, "alone")
    done = wait_step(store, person, "done", timeout=8)
    assert done.outcome == "no_partner" and done.code == CODES["no_partner"] and done.games == []
    assert study_games(store, "alone") == []


def test_an_absent_participant_is_matched_only_after_confirming(server: ServerProcess, store: Store) -> None:
    definition = study(store, "absent")
    away = arrive_waiting(store, "absent")
    wait_until(lambda: not flow.is_present(reload(store, away)), timeout=12, what="the presence to lapse")
    here = arrive_waiting(store, "absent")
    time.sleep(3)  # three rounds
    assert reload(store, away).step == "waiting" and reload(store, here).step == "waiting"
    flow.confirm_presence(store, definition, away.id)
    matched = [wait_step(store, p, "playing", timeout=5) for p in (away, here)]
    assert seat_of(matched[0]) == (seat_of(matched[1])[0], 0)  # the first to arrive, first seat


def test_a_closed_study_sends_its_waiting_room_home(server: ServerProcess, store: Store) -> None:
    study(store, "closing")
    person = arrive_waiting(store, "closing")
    set_study_status(store, "closing", "closed")
    done = wait_step(store, person, "done", timeout=5)
    assert done.outcome == "no_partner" and done.code == CODES["no_partner"]


def test_a_paused_study_still_matches_those_in_it(server: ServerProcess, store: Store) -> None:
    study(store, "paused")
    people = [arrive_waiting(store, "paused") for _ in range(2)]
    set_study_status(store, "paused", "paused")
    assert all(wait_step(store, p, "playing") for p in people)


def test_game_end_moves_both_to_the_questionnaire_with_result_and_points(
    server: ServerProcess, store: Store, clients: list[Client]
) -> None:
    study(store, "ending")
    people = [arrive_waiting(store, "ending") for _ in range(2)]
    matched = [wait_step(store, p, "playing") for p in people]
    game_id = seat_of(matched[0])[0]
    players = [logged_in(server, store, p) for p in matched]
    clients.extend(players)
    for player in players:
        player.call("join", {"game_id": game_id})
    wait_until(lambda: store.get_game(game_id)["status"] == "running")  # type: ignore[index]
    play_duel(game_id, players[0], players[1])  # both craft their targets in turn 1: a shared win
    ended = [wait_step(store, p, "questionnaire", timeout=5) for p in matched]
    for participant in ended:
        entry = participant.games[-1]
        assert (entry.result, entry.points) == ("won", 1)
        assert entry.finished_at is not None
    finished = [e for e in reload(store, matched[0]).events if e.event == "game_finished"]
    time.sleep(1.5)  # later rounds see the same finished game: nothing is recorded twice
    assert [e for e in reload(store, matched[0]).events if e.event == "game_finished"] == finished


def test_a_disconnected_participant_is_dropped_and_the_fill_in_plays_on(
    server: ServerProcess, store: Store, clients: list[Client]
) -> None:
    study(store, "leaver", dropout={"disconnect_grace_seconds": 5})
    people = [arrive_waiting(store, "leaver") for _ in range(2)]
    stayer, leaver = [wait_step(store, p, "playing") for p in people]
    game_id = seat_of(stayer)[0]
    players = [logged_in(server, store, p) for p in (stayer, leaver)]
    clients.extend(players)
    for player in players:
        player.call("join", {"game_id": game_id})
    time.sleep(4)  # connected past the match's grace: the connection, not the match time, counts
    players[1].drop()
    left_at = time.time()
    dropped = wait_step(store, leaver, "done", timeout=12)
    assert time.time() - left_at >= 4  # the grace, less one round
    assert dropped.outcome == "dropped" and dropped.code == CODES["dropped"]
    assert dropped.games[-1].result == "dropped"
    assert last_event(dropped, "dropped")["reason"] == "disconnected from the game"
    assert reload(store, stayer).step == "playing"
    assert store.get_value(connected_key("leaver", game_id, 0)) is not None
    meta = wait_until(lambda: (m := store.get_game(game_id)) and m["seats"][1]["takeover"] and m)
    assert meta["seats"][1]["takeover"] == "random"
    players[0].act(game_id, "propose", **DUEL_TRADE)  # refused if the fill-in proposes first
    wait_until(lambda: moved(store, game_id, 1), what="a move of the fill-in")


def test_an_idle_participant_whose_seat_a_bot_took_is_dropped(server: ServerProcess, store: Store) -> None:
    study(
        store,
        "idler",
        deadlines={"trade_propose": 1, "trade_decide": 3, "craft": 3},  # the second idles later
        dropout={"idle_timeouts": 1},
        waiting_room={"fill_in": {"kind": "bot", "bot": "always_reject"}},
    )
    people = [arrive_waiting(store, "idler") for _ in range(2)]
    matched = [wait_step(store, p, "playing") for p in people]
    game_id = seat_of(matched[0])[0]
    for participant in matched:  # nobody acts: the first deadline hands the seats to bots
        dropped = wait_step(store, participant, "done", timeout=15)
        assert dropped.outcome == "dropped"
        assert last_event(dropped, "dropped")["reason"] == "idle: a bot took over the seat"
    # the fill-in, not the idle rule's bot, plays on; the bots may finish the game before the last hand-over
    meta = wait_until(lambda: (m := store.get_game(game_id)) and m["status"] == "finished" and m, timeout=30)
    takeovers = [seat["takeover"] for seat in meta["seats"]]
    assert "always_reject" in takeovers and set(takeovers) <= {"always_reject", "random"}, takeovers


def test_the_waiting_room_survives_a_restart(make_server: MakeServer, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'restart.db'}"
    config = write_config(tmp_path / "cfg", database_uri=uri)
    first = make_server(config)
    with open_store(uri) as store:
        definition = study(store, "restart")
        early = arrive_waiting(store, "restart")
        time.sleep(1.5)
        assert reload(store, early).step == "waiting"
        with confirming(store, definition, early):  # the waiting page goes on confirming meanwhile
            first.stop()
            late = arrive_waiting(store, "restart")
            make_server(config)
            a, b = wait_step(store, early, "playing"), wait_step(store, late, "playing")
        assert seat_of(a)[0] == seat_of(b)[0]


def test_two_servers_on_one_file_never_match_anyone_twice(make_server: MakeServer, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'race.db'}"
    servers = [make_server(write_config(tmp_path / f"cfg{i}", database_uri=uri)) for i in range(2)]
    assert servers
    with open_store(uri) as store:
        study(store, "race")
        people = [arrive_waiting(store, "race") for _ in range(10)]
        matched = [wait_step(store, p, "playing") for p in people]
        assert all(len(p.games) == 1 for p in matched)
        games = study_games(store, "race")
        seated = [pid for g in games for pid in g.participants.values()]
        assert sorted(seated) == sorted(p.id for p in people)  # each in exactly one game
        assert len(games) == 5
        for game in games:
            wait_until(lambda gid=game.game_id: store.get_game(gid)["status"] == "running")  # type: ignore[index]


# ------------------------------------------------------------------ rounds driven by hand, in-process apps
def test_a_group_member_gone_between_the_read_and_the_write_leaves_no_empty_seat(
    make_app: MakeApp, tmp_path: Path
) -> None:
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'partial.db'}")
    matcher, store = manual_matcher(app), app.services.store
    definition = study(store, "partial")
    read = [arrive_waiting(store, "partial") for _ in range(2)]  # what the round read
    flow.drop(store, definition, read[1].id, "closed the tab")  # then the second one left
    report = RoundReport()
    matcher.form_game(definition, read, report)
    assert report.matched == [read[0].id] and len(report.games) == 1
    stayer, gone = reload(store, read[0]), reload(store, read[1])
    game_id = seat_of(stayer)[0]
    assert gone.games == [] and gone.outcome == "dropped"
    assert load_study_game(store, "partial", game_id).participants == {0: stayer.id, 1: None}  # type: ignore[union-attr]
    meta = store.get_game(game_id)
    assert meta is not None and meta["status"] == "running"  # the fill-in took the seat nobody will fill
    assert meta["seats"][0]["user_id"] == stayer.user_id and meta["seats"][0]["takeover"] is None
    assert meta["seats"][1]["takeover"] == "random"
    # nobody of the group matched: no game at all, the plan removed
    lonely = [arrive_waiting(store, "partial") for _ in range(2)]
    for person in lonely:
        flow.drop(store, definition, person.id, "left")
    before = len(study_games(store, "partial"))
    matcher.form_game(definition, lonely, report := RoundReport())
    assert report.games == [] and len(study_games(store, "partial")) == before
    aborted = [g for g in store.list_games(status="aborted") if g.get("hall") == "study-partial"]
    assert len(aborted) == 1  # the game made for them ended before anyone played


def test_a_game_left_half_formed_by_a_crash_is_repaired_by_a_later_round(
    make_app: MakeApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'crash.db'}")
    matcher, store, services = manual_matcher(app), app.services.store, app.services
    definition = study(store, "crash")
    people = [arrive_waiting(store, "crash") for _ in range(6)]

    def plan(game_id: str, pair: list[Participant]) -> None:
        record = StudyGame(
            game_id=game_id,
            study_id="crash",
            participants={0: pair[0].id, 1: pair[1].id},
            created_at=time.time(),
        )
        assert store.replace_value(game_key("crash", game_id), None, record.model_dump_json())
        if game_id != "unformed":  # the game made and both seated (it starts)
            create_game(services, definition, game_id, dict(enumerate(pair)))
            for seat, person in enumerate(pair):
                seat_participant(services, game_id, person, seat)

    plan("unformed", people[:2])  # crashed right after writing the plan
    plan("unmatched", people[2:4])  # crashed once the game had started, before matching anyone
    plan("half", people[4:])  # crashed after matching the first of two
    flow.matched(store, definition, people[4].id, "half", 0, [])
    report = matcher.round()
    # the four never matched are still waiting: matched afresh, in arrival order (the sixth waits on)
    assert sorted(report.matched) == sorted(p.id for p in people[:4]) and len(report.games) == 2
    assert reload(store, people[5]).step == "waiting"
    # too soon to tell a crash from a game being formed (by the process that held the lease before)
    assert {"unformed", "unmatched", "half"} <= {g.game_id for g in study_games(store, "crash")}
    assert store.get_game("half")["seats"][1]["takeover"] is None  # type: ignore[index]
    monkeypatch.setattr(matching, "REPAIR_AFTER_SECONDS", 0.0)
    matcher.round()
    games = {g.game_id for g in study_games(store, "crash")}
    assert "unformed" not in games and "unmatched" not in games  # undone
    assert store.get_game("unmatched")["status"] == "aborted"  # type: ignore[index]
    half = store.get_game("half")
    assert half is not None and half["status"] == "running" and "half" in games
    assert half["seats"][1]["takeover"] == "random"  # the seat nobody was matched to plays on
    assert reload(store, people[4]).step == "playing"
    assert all(len(reload(store, p).games) == 1 for p in people[:5])


def test_two_matchers_without_the_lease_still_match_nobody_twice(make_app: MakeApp, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'nolease.db'}"
    apps = [make_app(database_uri=uri) for _ in range(2)]
    matchers = [manual_matcher(app, leased=False) for app in apps]
    store = apps[0].services.store
    study(store, "nolease")
    people = [arrive_waiting(store, "nolease") for _ in range(12)]
    for _ in range(3):
        in_parallel([m.round for m in matchers])
    matched = [reload(store, p) for p in people]
    assert all(p.step == "playing" and len(p.games) == 1 for p in matched)
    games = study_games(store, "nolease")
    seated = [pid for game in games for pid in game.participants.values() if pid]
    assert sorted(seated) == sorted(p.id for p in people)
    for game in games:  # every human seat is its participant's or the fill-in's: no game is stuck
        meta = store.get_game(game.game_id)
        assert meta is not None and meta["status"] == "running", meta
        for seat, participant_id in game.participants.items():
            holder = meta["seats"][seat]
            if participant_id is None:
                assert holder["kind"] == "bot"
            else:
                assert holder["user_id"] == next(p.user_id for p in matched if p.id == participant_id)


def test_only_the_lease_holder_matches(make_app: MakeApp, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'lease.db'}"
    matchers = [manual_matcher(make_app(database_uri=uri)) for _ in range(2)]
    study(matchers[0].store, "lease")  # a server without studies takes no lease at all
    for _ in range(3):
        reports = in_parallel([m.round for m in matchers])
        assert sum(r.led for r in reports) == 1
    leader = next(m for m, r in zip(matchers, reports, strict=True) if r.led)
    leader.stop()  # a closing app hands the lease on at once
    assert next(m for m in matchers if m is not leader).round().led


def test_matching_and_the_game_end_through_mongodb(
    make_server: MakeServer, tmp_path: Path, mongo_uri: str, clients: list[Client]
) -> None:
    """The same rounds over the MongoDB store (its conditional writes are the matcher's guarantees)."""
    uri = database_uri(mongo_uri, f"tc_matching_{secrets.token_hex(5)}")
    server = make_server(write_config(tmp_path / "cfg", database_uri=uri))
    with open_store(uri) as store:
        study(store, "mongo")
        people = [arrive_waiting(store, "mongo") for _ in range(3)]
        matched = [wait_step(store, p, "playing") for p in people[:2]]
        assert reload(store, people[2]).step == "waiting"
        game_id = seat_of(matched[0])[0]
        players = [logged_in(server, store, p) for p in matched]
        clients.extend(players)
        for player in players:
            player.call("join", {"game_id": game_id})
        play_duel(game_id, players[0], players[1])
        ended = [wait_step(store, p, "questionnaire", timeout=5) for p in matched]
        assert [(p.games[-1].result, p.games[-1].points) for p in ended] == [("won", 1), ("won", 1)]
    server.stop()
    drop_database(uri)


def test_a_seat_the_researcher_hands_to_a_bot_is_no_dropout(make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'handed.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(store, "handed", dropout={"idle_timeouts": 1, "disconnect_grace_seconds": 5})
    people = [arrive_waiting(store, "handed") for _ in range(2)]
    game_id = matcher.round().games[0]
    app.services.table.hand_seat_to_bot(game_id, 1, "always_accept")  # the admin's intervention
    time.sleep(5.5)  # past the disconnect grace: a seat a bot plays is not waiting for its person
    matcher.round()
    assert reload(store, people[1]).step == "playing"
    assert reload(store, people[0]).step == "done"  # nobody at seat 0: disconnected past the grace
    assert store.get_game(game_id)["seats"][1]["takeover"] == "always_accept"  # type: ignore[index]


def test_two_matchers_seeing_one_end_record_it_once(make_app: MakeApp, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'end.db'}"
    apps = [make_app(database_uri=uri) for _ in range(2)]
    matchers = [manual_matcher(app, leased=False) for app in apps]
    store = apps[0].services.store
    study(store, "end", games_per_participant=2)
    people = [arrive_waiting(store, "end") for _ in range(2)]
    game_id = matchers[0].round().games[0]
    apps[0].services.table.abort(game_id, "ended by the researcher")
    for _ in range(3):
        in_parallel([m.round for m in matchers])
    for person in people:
        record = reload(store, person)
        ends = [e.detail for e in record.events if e.event == "game_finished"]
        assert ends == [{"game_id": game_id, "result": "aborted", "points": None}]
        assert [g.result for g in record.games][:1] == ["aborted"]  # then matched again: a game not played


def test_look_alike_names_are_never_grouped_together(tmp_path: Path) -> None:
    """The lobby refuses two look-alike names at one table: such a pair would leave a game unseated."""
    with open_store(f"sqlite:///{tmp_path / 'names.db'}") as store:
        study(store, "names")
        people = [arrive_waiting(store, "names") for _ in range(5)]
    named = [p.model_copy(update={"name": name}) for p, name in zip(people, "AABCA", strict=True)]
    groups, rest = arrival_groups(named, 2)
    assert [[p.name for p in group] for group in groups] == [["A", "B"], ["A", "C"]]
    assert [p.name for p in rest] == ["A"]
    assert [p.id for p in groups[0]] == [people[0].id, people[2].id]  # the second A waits for the next


# ------------------------------------------------------- review h22 robustness: findings 1, 4, 6 and 8
def backdate(store: Store, participant: Participant, **fields: float | None) -> Participant:
    """Set the participant's clocks (last_seen_at, waiting_since, present_until) as if time had passed."""

    def change(record: Participant) -> Participant:
        for name, value in fields.items():
            setattr(record, name, value)
        return record

    return update_participant(store, participant.study_id, participant.id, change)


def test_silence_is_counted_from_the_step_the_participant_entered(make_app: MakeApp, tmp_path: Path) -> None:
    """A participant the researcher moved on from a long game (advance: no game_over, no page seen) is at the
    questionnaire since that moment, not silent since before the game; one silent past the grace since the
    step began is dropped."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'clock.db'}")
    matcher, store = manual_matcher(app), app.services.store
    definition = study(store, "clock", dropout={"waiting_grace_seconds": 10})
    people = [arrive_waiting(store, "clock") for _ in range(2)]
    assert matcher.round().games
    long_ago = time.time() - 3600
    for person in people:  # an hour-long game: nothing wrote last_seen_at since the match
        backdate(store, person, last_seen_at=long_ago)
        flow.advance(store, definition, person.id)
    matcher.round()
    after = [reload(store, p) for p in people]
    assert [p.step for p in after] == ["questionnaire", "questionnaire"]
    assert not [e for p in after for e in p.events if e.event == "dropped"]

    def game_ended_long_ago(record: Participant) -> Participant:
        record.games[-1].finished_at = long_ago
        return record

    update_participant(store, "clock", people[0].id, game_ended_long_ago)  # then silent for an hour
    assert matcher.round().dropped == [people[0].id]
    assert last_event(reload(store, people[0]), "dropped") == {"reason": "silent before the game"}
    assert reload(store, people[1]).step == "questionnaire"


def test_silence_allows_for_the_throttled_seen_write(make_app: MakeApp, tmp_path: Path) -> None:
    """last_seen_at is written at most every SEEN_REFRESH_SECONDS, so a page that polls is up to that much
    behind: silence is the grace plus that, not the grace alone."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'seen.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(store, "seen", dropout={"waiting_grace_seconds": 10})
    reader = flow.arrive(store, load_study(store, "seen"), {"PROLIFIC_PID": "reader"})  # on the consent page
    backdate(store, reader, last_seen_at=time.time() - 10 - flow.SEEN_REFRESH_SECONDS + 2)
    assert matcher.round().dropped == []
    backdate(store, reader, last_seen_at=time.time() - 10 - flow.SEEN_REFRESH_SECONDS - 1)
    assert matcher.round().dropped == [reader.id]


@pytest.mark.parametrize("rule", ["fill", "exit"])
def test_an_absent_participant_leaves_with_no_partner_after_the_maximum_wait_and_one_check(
    make_app: MakeApp, tmp_path: Path, rule: str
) -> None:
    """Absent after waiting max_wait + one presence check: no_partner (and its pay), under both rules, and
    the place is given back; before that they still wait (never seated with the fill-in)."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / f'absent-{rule}.db'}")
    matcher, store = manual_matcher(app), app.services.store
    definition = study(
        store,
        f"absent-{rule}",
        waiting_room={"max_wait_seconds": 30, "on_timeout": rule},
        payment={"no_partner_pay": 0.5},
    )
    limit = matching.absent_wait_limit(definition)
    assert limit == 30 + 5 + 3
    away = arrive_waiting(store, definition.id)
    at = time.time()
    backdate(store, away, waiting_since=at - limit + 2, present_until=at - 1)  # lapsed; 2 s to go
    report = matcher.round()
    assert report.no_partner == [] and reload(store, away).step == "waiting"
    backdate(store, away, waiting_since=at - limit - 1)
    report = matcher.round()
    assert report.no_partner == [away.id] and not report.games  # never seated with the fill-in
    record = reload(store, away)
    assert (record.outcome, record.code, record.earnings and record.earnings.bonus) == (
        "no_partner",
        CODES["no_partner"],
        0.5,
    )
    assert store.get_value(f"study:{definition.id}:admitted") == "0"  # the place is given back


def test_an_absent_participant_who_confirms_within_the_grace_is_filled_in(
    make_app: MakeApp, tmp_path: Path
) -> None:
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'back.db'}")
    matcher, store = manual_matcher(app), app.services.store
    definition = study(store, "back", waiting_room={"max_wait_seconds": 30})
    person = arrive_waiting(store, "back")
    at = time.time()
    backdate(store, person, waiting_since=at - 32, present_until=at - 1)
    assert not matcher.round().any()  # past the maximum wait, absent, within the grace: waits
    flow.confirm_presence(store, definition, person.id)
    report = matcher.round()
    assert report.matched == [person.id] and len(report.games) == 1


def test_disconnects_and_reconnects_mid_game_are_logged_once(make_app: MakeApp, tmp_path: Path) -> None:
    """The first connection is no event; a lost connection is game_disconnected (when last connected), its
    return game_reconnected (how long away); each once, however many rounds or matchers see it (a second
    matcher, as a second process holding the lease next, knows nothing of the first's memory)."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'trace.db'}")
    matcher, store = manual_matcher(app), app.services.store
    study(store, "trace")
    people = [arrive_waiting(store, "trace") for _ in range(2)]
    game_id = matcher.round().games[0]
    player = in_process_login(app, people[0]).connect()
    assert player.call("join", {"game_id": game_id}).get("ok") is not False

    def traced() -> list[tuple[str, dict[str, Any]]]:
        return [
            (e.event, e.detail)
            for e in reload(store, people[0]).events
            if e.event in ("game_disconnected", "game_reconnected")
        ]

    matcher.round()
    matcher.round()
    assert traced() == []  # connected for the first time: nothing to report
    player.drop()
    dropped_at = time.time()
    for _ in range(3):
        matcher.round()
    [(event, detail)] = traced()
    assert event == "game_disconnected" and detail["game_id"] == game_id
    assert dropped_at - 3 <= detail["last_connected_at"] <= dropped_at
    successor = manual_matcher(app)  # a fresh process's matcher: no memory of what was logged
    successor.round()
    assert len(traced()) == 1
    time.sleep(1.2)
    player.reconnect().call("join", {"game_id": game_id})
    for _ in range(2):
        successor.round()
        matcher.round()
    events = traced()
    assert [e for e, _ in events] == ["game_disconnected", "game_reconnected"]
    assert events[1][1]["game_id"] == game_id and events[1][1]["offline_seconds"] >= 1.0
    assert [e for e in reload(store, people[1]).events if e.event.startswith("game_")] == []  # never came
    player.close()
    rows = [json.loads(line) for line in export_jsonl(store, "trace")]
    exported = [r["event"] for r in rows if r["table"] == "events" and r["participant_id"] == people[0].id]
    assert exported.count("game_disconnected") == 1 and exported.count("game_reconnected") == 1


def game_orders(app: InProcessApp, game_id: str) -> list[list[int]]:
    live = app.services.table.get(game_id)
    with live.lock:
        assert live.game is not None
        return [list(orders) for orders in live.game.settings.tom_orders]


def test_each_seat_reports_the_tom_orders_of_who_plays_it(make_app: MakeApp, tmp_path: Path) -> None:
    """A pair: both human orders. A lone participant: the fill-in's seat reports tom_orders.bot. A dropout's
    seat handed to the fill-in keeps the orders it had (the game's settings are fixed), as documented."""
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'orders.db'}")
    matcher, store = manual_matcher(app), app.services.store
    definition = study(
        store,
        "orders",
        tom_orders={"human": [0], "bot": [0, 1]},
        waiting_room={"max_wait_seconds": 0.5},
    )
    pair = [arrive_waiting(store, "orders") for _ in range(2)]
    paired = matcher.round().games[0]
    assert game_orders(app, paired) == [[0], [0]]
    lone = arrive_waiting(store, "orders")
    time.sleep(0.6)
    filled = matcher.round().games[0]
    assert store.get_game(filled)["seats"][1]["kind"] == "bot"  # type: ignore[index]
    assert game_orders(app, filled) == [[0], [0, 1]]
    assert store.get_game(filled)["settings"]["tom_orders"] == [[0], [0, 1]]  # type: ignore[index]
    matching.hand_to_fill_in(app.services, definition, paired, 1)  # pair[1] booted: the fill-in plays on
    assert game_orders(app, paired) == [[0], [0]]
    assert reload(store, lone).step == "playing" and reload(store, pair[0]).step == "playing"


def test_create_game_refuses_tom_orders_for_another_number_of_seats(
    make_app: MakeApp, tmp_path: Path
) -> None:
    app = make_app(database_uri=f"sqlite:///{tmp_path / 'seats.db'}")
    definition = study(app.services.store, "seats")
    app.services.studies.install_hall(definition)
    with pytest.raises(ServerError) as refused:
        app.services.lobby.create_game(
            definition.hall_name,
            matching.matcher_principal(definition),
            seat_specs=[SeatSpec(kind="human")] * 2,
            tom_orders=[[0, 1, 2]],
        )
    assert refused.value.code == "invalid_request"
