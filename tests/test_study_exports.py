"""A study's exports and payments (server/web/study/exports.py) over a study driven through its flow.

The module drives one study through :mod:`server.web.study.flow` in the real app (in-process), on a real
SQLite file and on the project's MongoDB wire server: two participants play a real duel in the study's hall
(logged in as their participant users), others are screened out, leave with no partner, drop, decline, or
are still in the flow. Then: the tables' ids join across files and to the games' logs; JSONL, CSV and Parquet
hold the same rows; payment batches pay only bonuses above 0, in two decimals, never anyone twice (two
batches in a row, and many made at once by threads); the REST routes refuse non-admins and type bad input;
the command line writes the same files from the settings' store.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import threading
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from e2e_helpers import ADMIN_PASSWORD, write_config
from flask import session as flask_session
from in_process import InProcessApp, InProcessClient, MakeApp, play_duel_game
from mongo_server import database_uri

from analysis.tables import FORMULA_PREFIXES
from server.store import Store
from server.table.errors import ServerError
from server.web.auth import principal_for_user
from server.web.sessions import current_sessions
from server.web.study import exports, flow
from server.web.study.definition import parse_definition
from server.web.study.exports import (
    TABLES,
    create_payment_batch,
    export_study,
    list_payment_batches,
    load_payment_batch,
)
from server.web.study.records import (
    Participant,
    StudyGame,
    iter_participants,
    load_study,
    now,
    save_study,
    save_study_game,
)
from tradecraft.cli import main as tradecraft_main

ROOT = Path(__file__).resolve().parents[1]
AMOUNT_LINE = re.compile(r"[0-9a-f]{24},\d+\.\d\d")


def study_data(study_id: str) -> dict[str, Any]:
    """The shipped pilot study in the test settings' duel hall, no practice game, a bonus per win."""
    data = yaml.safe_load((ROOT / "studies" / "duel_pilot.yaml").read_text(encoding="utf-8"))
    data.update(id=study_id, practice=False)
    data["payment"] = {"currency": "GBP", "base": 2.5, "bonus_per_win": 1.25, "no_partner_pay": 0.5}
    return data


def recruitment_id() -> str:
    return uuid.uuid4().hex[:24]


def arrive(store: Store, study_id: str, pid: str | None = None) -> Participant:
    query = {"PROLIFIC_PID": pid or recruitment_id(), "STUDY_ID": "a" * 24, "SESSION_ID": "b" * 24}
    return flow.arrive(store, load_study(store, study_id), query)


def to_waiting(store: Store, study_id: str) -> Participant:
    definition = load_study(store, study_id).parsed()
    participant = arrive(store, study_id)
    flow.give_consent(store, definition, participant.id, True)
    flow.finish_instructions(store, definition, participant.id)
    right = {q.id: q.answer for q in definition.comprehension.questions}
    participant, wrong = flow.answer_comprehension(store, definition, participant.id, right)
    assert not wrong and participant.step == "waiting"
    return flow.confirm_presence(store, definition, participant.id)


def logged_in_as(app: InProcessApp, user_id: str) -> InProcessClient:
    """A test client whose browser session is the participant's own user (as the study pages log them in)."""
    client = app.client()
    with app.flask.test_request_context("/"):
        current_sessions().log_in(user_id)
        cookie = flask_session.cookie_change  # type: ignore[attr-defined]
    client.http.set_cookie(app.services.settings.security.session_cookie_name, cookie)
    return client


def result_of(app: InProcessApp, game_id: str, seat: int) -> str:
    view = app.services.table.researcher(game_id)["view"]
    assert view["finished"], f"game {game_id} did not finish"
    return "won" if seat in view["winners"] else "lost" if view["winners"] else "no_winner"


class Driven:
    def __init__(self, app: InProcessApp, study_id: str, config: Path) -> None:
        self.app = app
        self.store = app.services.store
        self.study_id = study_id
        self.config = config
        self.by_name: dict[str, Participant] = {}
        self.game_id = ""

    def reload(self) -> dict[str, Participant]:
        fresh = {p.id: p for p in iter_participants(self.store, self.study_id)}
        return {name: fresh[p.id] for name, p in self.by_name.items()}


def drive(app: InProcessApp, config: Path, clients: list[InProcessClient]) -> Driven:
    store = app.services.store
    study_id = f"exp-{uuid.uuid4().hex[:8]}"
    record = save_study(store, parse_definition(study_data(study_id)))
    definition = app.services.studies.definition(record)  # installs the study's hall in the lobby
    driven = Driven(app, study_id, config)
    names = driven.by_name

    # two participants play a real duel in the study's hall, each logged in as their own participant user
    names["ada"], names["bob"] = to_waiting(store, study_id), to_waiting(store, study_id)
    players = [logged_in_as(app, names[n].user_id) for n in ("ada", "bob")]
    clients.extend(players)
    # a study's hall takes no game from players: the server makes it (as the matcher does), Ada sits
    made = app.services.lobby.create_game(
        definition.hall_name, principal_for_user(store, names["ada"].user_id), join=True
    )
    game_id = play_duel_game(players[0], players[1], game_id=str(made["game_id"]))
    driven.game_id = game_id
    save_study_game(
        store,
        StudyGame(
            game_id=game_id,
            study_id=study_id,
            participants={0: names["ada"].id, 1: names["bob"].id},
            created_at=now(),
        ),
    )
    for seat, name in enumerate(("ada", "bob")):
        flow.matched(store, definition, names[name].id, game_id, seat, [])
        flow.game_over(store, definition, names[name].id, game_id, result_of(app, game_id, seat), None)
        answers = {
            # a formula-like answer: its CSV cell must not run in a spreadsheet (see the test below)
            "strategy": f'=HYPERLINK("http://x") offer what {name} did not need',
            "partner_human": seat,
            "difficulty": 3 + seat,
        }
        flow.submit_questionnaire(store, definition, names[name].id, answers)

    # screened out: both tries wrong
    names["cat"] = arrive(store, study_id)
    flow.give_consent(store, definition, names["cat"].id, True)
    flow.finish_instructions(store, definition, names["cat"].id)
    wrong = {q.id: (q.answer + 1) % len(q.choices) for q in definition.comprehension.questions}
    for _ in range(definition.comprehension.attempts):
        flow.answer_comprehension(store, definition, names["cat"].id, wrong)

    # no partner came: the exit rule, with its pay
    names["dan"] = to_waiting(store, study_id)
    flow.leave_waiting_room(store, definition, names["dan"].id)

    # dropped from a game that was still waiting for its second seat (a bot or agent would fill it)
    names["eve"] = to_waiting(store, study_id)
    eve = logged_in_as(app, names["eve"].user_id)
    clients.append(eve)
    left_game = str(
        app.services.lobby.create_game(
            definition.hall_name, principal_for_user(store, names["eve"].user_id), join=True
        )["game_id"]
    )
    save_study_game(
        store,
        StudyGame(
            game_id=left_game, study_id=study_id, participants={0: names["eve"].id, 1: None}, created_at=now()
        ),
    )
    flow.matched(store, definition, names["eve"].id, left_game, 0, [1])
    flow.send_message(store, definition, names["eve"].id, "Are you still there?")
    flow.drop(store, definition, names["eve"].id, "booted by the researcher")

    # declined consent; and one still in the flow after one wrong try, with a message read
    names["fay"] = arrive(store, study_id)
    flow.give_consent(store, definition, names["fay"].id, False)
    names["gus"] = arrive(store, study_id)
    flow.give_consent(store, definition, names["gus"].id, True)
    flow.finish_instructions(store, definition, names["gus"].id)
    flow.answer_comprehension(store, definition, names["gus"].id, wrong)
    flow.send_message(store, definition, names["gus"].id, "Take your time.")
    flow.mark_messages_read(store, definition, names["gus"].id)
    driven.by_name = {name: p for name, p in names.items()}
    return driven


@pytest.fixture(scope="module", params=["sqlite", "mongo"])
def driven(
    request: pytest.FixtureRequest, make_app: MakeApp, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Driven]:
    options: dict[str, Any] = {}
    if request.param == "mongo":
        base = request.getfixturevalue("mongo_uri")
        options["database_uri"] = database_uri(base, f"tc_study_{uuid.uuid4().hex[:10]}")
    config = write_config(tmp_path_factory.mktemp(f"study-{request.param}"), **options)
    app = make_app(config)
    # this test seats and ends its participants' games itself, each outcome on purpose: no matcher competes
    assert app.services.study_matcher is not None
    app.services.study_matcher.stop()
    clients: list[InProcessClient] = []
    yield drive(app, config, clients)
    for client in clients:
        client.close()


# ------------------------------------------------------------------------------------------------- reading
def jsonl_tables(data: bytes) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    logs: list[dict[str, Any]] = []
    for line in data.decode().splitlines():
        record = json.loads(line)
        name = record.pop("table")
        (logs if name == "game_log" else tables[name]).append(record)
    return tables, logs


def typed(kind: str, cell: str) -> Any:
    if cell == "":
        return None
    if kind == "str" and cell.startswith("'") and cell[1:].startswith(FORMULA_PREFIXES):
        return cell[1:]  # what a spreadsheet shows of a spreadsheet-safe cell
    return {"str": str, "float": float, "int": int, "bool": lambda text: text == "true"}[kind](cell)


def csv_zip_tables(data: bytes) -> tuple[dict[str, list[dict[str, Any]]], zipfile.ZipFile]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    tables = {}
    for name, columns in TABLES.items():
        reader = csv.DictReader(io.StringIO(archive.read(f"{name}.csv").decode()))
        assert reader.fieldnames == [column for column, _ in columns]
        tables[name] = [{column: typed(kind, row[column]) for column, kind in columns} for row in reader]
    return tables, archive


def parquet_zip_tables(data: bytes) -> tuple[dict[str, list[dict[str, Any]]], zipfile.ZipFile]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    tables = {name: pq.read_table(io.BytesIO(archive.read(f"{name}.parquet"))).to_pylist() for name in TABLES}
    return tables, archive


def exported(driven: Driven, fmt: str) -> bytes:
    chunks, _, _ = export_study(driven.store, driven.study_id, fmt)
    return b"".join(chunks)


def without_export_time(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [{k: v for k, v in row.items() if k != "exported_at"} for row in rows]
        for name, rows in tables.items()
    }


# ------------------------------------------------------------------------------------------------- exports
def test_every_outcome_is_in_the_participants_table(driven: Driven) -> None:
    tables, _ = jsonl_tables(exported(driven, "jsonl"))
    by_id = {row["participant_id"]: row for row in tables["participants"]}
    people = driven.reload()
    assert set(by_id) == {p.id for p in people.values()}
    outcome = {name: by_id[p.id]["outcome"] for name, p in people.items()}
    winner = "ada" if outcome["ada"] == "completed" and people["ada"].games[0].result == "won" else "bob"
    assert outcome == {
        "ada": "completed",
        "bob": "completed",
        "cat": "screened_out",
        "dan": "no_partner",
        "eve": "dropped",
        "fay": "declined",
        "gus": None,
    }
    codes = load_study(driven.store, driven.study_id).parsed().codes
    for name, row in ((n, by_id[p.id]) for n, p in people.items()):
        assert row["code"] == (
            codes.for_outcome(row["outcome"]) if row["outcome"] not in (None, "declined") else None
        )
        assert (row["finished_at"] is None) == (name == "gus"), name
        assert row["recruitment_participant_id"] == people[name].recruitment.participant_id
    assert by_id[people[winner].id]["bonus"] == 1.25 and by_id[people[winner].id]["games_played"] == 1
    assert by_id[people["dan"].id]["bonus"] == 0.5 and by_id[people["dan"].id]["base"] == 2.5
    assert by_id[people["cat"].id]["bonus"] == 0 and by_id[people["cat"].id]["base"] == 0
    assert by_id[people["eve"].id]["games_played"] == 0
    assert by_id[people["ada"].id]["reconnects"] == 0


def test_ids_join_across_tables_and_to_the_games_logs(driven: Driven) -> None:
    tables, logs = jsonl_tables(exported(driven, "jsonl"))
    participants = {row["participant_id"]: row for row in tables["participants"]}
    for name in ("events", "comprehension", "games", "questionnaire", "messages"):
        assert tables[name], f"{name} is empty"
        assert {row["participant_id"] for row in tables[name]} <= set(participants), name
    assert {row["participant_id"] for row in tables["events"]} == set(participants)  # everyone arrived
    seats = {(row["game_id"], row["seat"]): row["participant_id"] for row in tables["study_games"]}
    for row in tables["games"]:
        assert seats[(row["game_id"], row["seat"])] == row["participant_id"]
    assert seats[next((g, s) for g, s in seats if seats[(g, s)] is None)] is None  # the seat nobody held
    # each study game's log is in the export, and its seats are held by the participants' own users
    headers = {line["game_id"]: line["log"] for line in logs if line["log"].get("kind") == "header"}
    assert set(headers) == {row["game_id"] for row in tables["study_games"]}
    played = headers[driven.game_id]
    for seat in played["seats"]:
        holder = seats[(driven.game_id, seat["seat"])]
        assert seat["user_id"] == participants[holder]["user_id"]
    events_of_game = [
        line for line in logs if line["game_id"] == driven.game_id and line["log"].get("kind") == "event"
    ]
    assert len(events_of_game) > 5
    # comprehension rows: one per question and attempt, right ones marked
    cat = driven.by_name["cat"].id
    cat_rows = [row for row in tables["comprehension"] if row["participant_id"] == cat]
    assert len(cat_rows) == 2 * 2 and not any(row["correct"] for row in cat_rows)
    answers = {
        row["item_id"]: row
        for row in tables["questionnaire"]
        if row["participant_id"] == driven.by_name["bob"].id
    }
    assert answers["difficulty"]["answer"] == "4" and answers["difficulty"]["kind"] == "scale"
    assert all(isinstance(json.loads(row["detail"]), dict) for row in tables["events"])


def test_csv_parquet_and_jsonl_hold_the_same_rows(driven: Driven) -> None:
    from_jsonl, _ = jsonl_tables(exported(driven, "jsonl"))
    from_csv, csv_archive = csv_zip_tables(exported(driven, "csv"))
    from_parquet, parquet_archive = parquet_zip_tables(exported(driven, "parquet"))
    expected = without_export_time(from_jsonl)
    assert without_export_time(from_csv) == expected
    assert without_export_time(from_parquet) == expected
    assert sum(len(rows) for rows in expected.values()) > 40
    for archive, suffix in ((csv_archive, ".csv"), (parquet_archive, ".parquet")):
        names = set(archive.namelist())
        assert {f"games/{row['game_id']}.jsonl" for row in expected["study_games"]} <= names
        assert f"game_tables/games{suffix}" in names and f"game_tables/proposals{suffix}" in names
        log_lines = archive.read(f"games/{driven.game_id}.jsonl").decode().splitlines()
        assert json.loads(log_lines[0])["kind"] == "header" and len(log_lines) > 5
    games_table = csv.DictReader(io.StringIO(csv_archive.read("game_tables/games.csv").decode()))
    assert driven.game_id in {row["game_id"] for row in games_table}


def test_formula_like_answers_are_text_in_the_csv_and_unchanged_elsewhere(driven: Driven) -> None:
    archive = zipfile.ZipFile(io.BytesIO(exported(driven, "csv")))
    answers = list(csv.DictReader(io.StringIO(archive.read("questionnaire.csv").decode())))
    strategies = [row["answer"] for row in answers if row["item_id"] == "strategy"]
    assert strategies and all(answer.startswith("'=HYPERLINK(") for answer in strategies)
    from_jsonl, _ = jsonl_tables(exported(driven, "jsonl"))
    assert all(
        row["answer"].startswith("=HYPERLINK(")
        for row in from_jsonl["questionnaire"]
        if row["item_id"] == "strategy"
    )


def test_a_game_that_cannot_be_exported_is_one_error_record(driven: Driven) -> None:
    store = driven.store
    study_id = f"lost-{uuid.uuid4().hex[:8]}"
    save_study(store, parse_definition(study_data(study_id)))
    save_study_game(
        store, StudyGame(game_id="gone", study_id=study_id, participants={0: None}, created_at=now())
    )
    chunks, _, _ = export_study(store, study_id, "jsonl")
    _, logs = jsonl_tables(b"".join(chunks))
    assert [(line["game_id"], line["log"]["kind"], line["log"]["code"]) for line in logs] == [
        ("gone", "export_error", "unknown_game")
    ]
    chunks, _, _ = export_study(store, study_id, "csv")
    tables, archive = csv_zip_tables(b"".join(chunks))
    assert json.loads(archive.read("games/gone.jsonl"))["code"] == "unknown_game"
    assert tables["study_games"] == [
        {"game_id": "gone", "seat": 0, "participant_id": None, "created_at": ANY}
    ]


# ------------------------------------------------------------------------------------------------ payments
def batch_lines(text: str) -> list[str]:
    lines = text.splitlines()
    assert all(AMOUNT_LINE.fullmatch(line) for line in lines), lines
    return lines


def test_payment_batches_pay_each_bonus_once(driven: Driven) -> None:
    store, study_id = driven.store, driven.study_id
    definition = load_study(store, study_id).parsed()
    people = driven.reload()
    first = create_payment_batch(store, study_id)
    lines = batch_lines(first.csv())
    paid = {p.recruitment.participant_id: p for p in people.values() if p.earnings and p.earnings.bonus > 0}
    assert sorted(line.split(",")[0] for line in lines) == sorted(paid)  # only bonuses above 0
    assert {line.split(",")[1] for line in lines} == {"1.25", "0.50"}
    assert first.total == f"{sum(p.earnings.bonus for p in paid.values() if p.earnings):.2f}"
    unpaid = {people[name].recruitment.participant_id for name in ("cat", "eve", "fay", "gus")}
    assert people["cat"].step == "done" and not unpaid & {line.split(",")[0] for line in lines}
    with pytest.raises(ServerError) as nothing:
        create_payment_batch(store, study_id)
    assert nothing.value.code == "nothing_to_pay"
    assert [b.batch_id for b in list_payment_batches(store, study_id)] == [first.batch_id]
    # gus finishes later with a bonus: the next batch pays him alone
    gus = people["gus"].id
    right = {q.id: q.answer for q in definition.comprehension.questions}
    flow.answer_comprehension(store, definition, gus, right)
    flow.confirm_presence(store, definition, gus)
    flow.leave_waiting_room(store, definition, gus)
    second = create_payment_batch(store, study_id)
    assert batch_lines(second.csv()) == [f"{people['gus'].recruitment.participant_id},0.50"]
    again = load_payment_batch(store, study_id, first.batch_id)
    assert again.csv() == first.csv()  # the same file again
    assert [b.batch_id for b in list_payment_batches(store, study_id)] == [first.batch_id, second.batch_id]
    with pytest.raises(ServerError) as unknown:
        load_payment_batch(store, study_id, "20990101T000000000Z-abcdef")
    assert unknown.value.code == "unknown_batch" and unknown.value.status == 404


def test_batches_made_at_once_never_pay_twice(driven: Driven) -> None:
    store = driven.store
    study_id = f"pay-{uuid.uuid4().hex[:8]}"
    save_study(store, parse_definition(study_data(study_id)))
    definition = load_study(store, study_id).parsed()
    leaving = [to_waiting(store, study_id) for _ in range(16)]
    batches: list[Any] = []
    refused: list[str] = []
    start = threading.Barrier(6)

    def make_batch() -> None:
        start.wait()
        for participant in leaving[: len(leaving) // 2]:  # some finish while batches are being made
            with contextlib.suppress(ServerError):  # another thread finished them
                flow.leave_waiting_room(store, definition, participant.id)
        try:
            batches.append(create_payment_batch(store, study_id))
        except ServerError as err:
            refused.append(err.code)

    threads = [threading.Thread(target=make_batch) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for participant in leaving[len(leaving) // 2 :]:
        flow.leave_waiting_room(store, definition, participant.id)
    batches.append(create_payment_batch(store, study_id))
    paid = [line.split(",")[0] for batch in batches for line in batch_lines(batch.csv())]
    assert sorted(paid) == sorted(p.recruitment.participant_id for p in leaving)  # everyone, once
    assert set(refused) <= {"nothing_to_pay"}
    stored = list_payment_batches(store, study_id)
    assert sorted(b.batch_id for b in stored) == sorted(b.batch_id for b in batches)


def test_a_batch_left_building_by_a_crash_is_completed_from_its_claims(
    driven: Driven, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = driven.store
    study_id = f"crash-{uuid.uuid4().hex[:8]}"
    save_study(store, parse_definition(study_data(study_id)))
    definition = load_study(store, study_id).parsed()
    leaving = [to_waiting(store, study_id) for _ in range(4)]
    for participant in leaving:
        flow.leave_waiting_room(store, definition, participant.id)

    def crash_after_two(items: Any, unit: str) -> Iterator[Any]:
        for number, item in enumerate(items):
            if number == 2:
                raise RuntimeError("the process died")
            yield item

    with pytest.raises(RuntimeError):
        create_payment_batch(store, study_id, crash_after_two)
    (left,) = list_payment_batches(store, study_id)
    assert left.status == "building" and not left.rows
    with pytest.raises(ServerError) as busy:  # it may still be running: not completed yet
        load_payment_batch(store, study_id, left.batch_id)
    assert busy.value.code == "batch_in_progress"
    monkeypatch.setattr(exports, "STALE_BATCH_SECONDS", 0.0)
    completed = load_payment_batch(store, study_id, left.batch_id)
    claimed = {line.split(",")[0] for line in batch_lines(completed.csv())}
    assert completed.status == "ready" and len(claimed) == 2  # the two it claimed before dying
    later = create_payment_batch(store, study_id)
    rest = {line.split(",")[0] for line in batch_lines(later.csv())}
    assert not claimed & rest and claimed | rest == {p.recruitment.participant_id for p in leaving}
    assert load_payment_batch(store, study_id, left.batch_id).csv() == completed.csv()


def test_a_slow_builder_completed_as_stale_loses_nobody(
    driven: Driven, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader completes a batch whose builder is alive but slow; the builder claims two more afterwards:
    its final write fails, and the next batch pays those two (each participant in exactly one batch)."""
    store = driven.store
    study_id = f"slow-{uuid.uuid4().hex[:8]}"
    save_study(store, parse_definition(study_data(study_id)))
    definition = load_study(store, study_id).parsed()
    leaving = [to_waiting(store, study_id) for _ in range(4)]
    for participant in leaving:
        flow.leave_waiting_room(store, definition, participant.id)
    monkeypatch.setattr(exports, "STALE_BATCH_SECONDS", 0.0)
    completed_early: list[Any] = []

    def slow(items: Any, unit: str) -> Iterator[Any]:
        for number, item in enumerate(items):
            if number == 2:  # meanwhile a reader takes the batch for a crashed one and completes it
                (building,) = list_payment_batches(store, study_id)
                completed_early.append(load_payment_batch(store, study_id, building.batch_id))
            yield item

    first = create_payment_batch(store, study_id, slow)
    assert first.csv() == completed_early[0].csv() and len(first.rows) == 2
    second = create_payment_batch(store, study_id)
    paid = [line.split(",")[0] for batch in (first, second) for line in batch_lines(batch.csv())]
    assert sorted(paid) == sorted(p.recruitment.participant_id for p in leaving)
    with pytest.raises(ServerError):
        create_payment_batch(store, study_id)


def test_anonymous_participants_are_not_in_a_batch(driven: Driven) -> None:
    store = driven.store
    study_id = f"anon-{uuid.uuid4().hex[:8]}"
    data = study_data(study_id)
    data["recruitment"] = {"required": False}
    save_study(store, parse_definition(data))
    definition = load_study(store, study_id).parsed()
    pilot = flow.arrive(store, load_study(store, study_id), {})
    assert pilot.recruitment.anonymous
    flow.give_consent(store, definition, pilot.id, True)
    flow.finish_instructions(store, definition, pilot.id)
    right = {q.id: q.answer for q in definition.comprehension.questions}
    flow.answer_comprehension(store, definition, pilot.id, right)
    flow.confirm_presence(store, definition, pilot.id)
    assert flow.leave_waiting_room(store, definition, pilot.id).earnings.bonus == 0.5  # type: ignore[union-attr]
    with pytest.raises(ServerError) as nothing:
        create_payment_batch(store, study_id)
    assert nothing.value.code == "nothing_to_pay" and list_payment_batches(store, study_id) == []


# ---------------------------------------------------------------------------------------------------- REST
def create_payment_batch_or_none(driven: Driven) -> None:
    with contextlib.suppress(ServerError):
        create_payment_batch(driven.store, driven.study_id)


def test_rest_routes_need_the_admin_and_type_bad_input(driven: Driven) -> None:
    http = driven.app.http()
    base = f"/api/admin/studies/{driven.study_id}"
    for method, path in (
        ("GET", "/export"),
        ("GET", "/payments"),
        ("POST", "/payments"),
        ("GET", "/payments/x"),
    ):
        response = http.open(base + path, method=method, json={} if method == "POST" else None)
        assert response.status_code == 403 and response.get_json()["error"]["code"] == "forbidden", path
    auth = {
        "Authorization": "Basic "
        + __import__("base64").b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    }
    response = http.get(f"{base}/export?format=jsonl", headers=auth)
    assert response.status_code == 200 and response.mimetype == "application/x-ndjson"
    assert response.headers["Content-Disposition"] == f'attachment; filename="study-{driven.study_id}.jsonl"'
    assert response.data == response.data and json.loads(response.data.splitlines()[0])["table"] == "study"
    zipped = http.get(f"{base}/export?format=parquet", headers=auth)
    assert zipped.status_code == 200 and zipfile.ZipFile(io.BytesIO(zipped.data)).testzip() is None
    assert (
        zipped.headers["Content-Disposition"] == f'attachment; filename="study-{driven.study_id}-parquet.zip"'
    )
    bad = http.get(f"{base}/export?format=xlsx", headers=auth)
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "invalid_request"
    missing = http.get("/api/admin/studies/no-such-study/export", headers=auth)
    assert missing.status_code == 404 and missing.get_json()["error"]["code"] == "unknown_study"
    create_payment_batch_or_none(driven)  # whatever earlier tests left unpaid
    definition = load_study(driven.store, driven.study_id).parsed()
    late = to_waiting(driven.store, driven.study_id)
    flow.leave_waiting_room(driven.store, definition, late.id)
    made = http.post(f"{base}/payments", json={}, headers=auth)
    assert made.status_code == 201 and made.mimetype == "text/csv"
    assert made.data.decode() == f"{late.recruitment.participant_id},0.50\n"
    batch_id = made.headers["X-Payment-Batch"]
    assert (
        made.headers["Content-Disposition"]
        == f'attachment; filename="payments-{driven.study_id}-{batch_id}.csv"'
    )
    again = http.get(f"{base}/payments/{batch_id}", headers=auth)
    assert again.status_code == 200 and again.data == made.data
    nothing = http.post(f"{base}/payments", json={}, headers=auth)
    assert nothing.status_code == 409 and nothing.get_json()["error"]["code"] == "nothing_to_pay"
    listed = http.get(f"{base}/payments", headers=auth).get_json()
    assert listed["ok"] and all(re.fullmatch(r"\d+\.\d\d", b["total"]) for b in listed["batches"])
    unknown = http.get(f"{base}/payments/not-a-batch", headers=auth)
    assert unknown.status_code == 404 and unknown.get_json()["error"]["code"] == "unknown_batch"


# ------------------------------------------------------------------------------------------------------ CLI
def test_the_command_line_exports_and_pays_from_the_settings_store(driven: Driven, tmp_path: Path) -> None:
    runner = CliRunner()
    config = str(driven.config)
    for fmt in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"study.{fmt}"
        result = runner.invoke(
            tradecraft_main,
            ["study", "export", driven.study_id, "--format", fmt, "--out", str(out), "--config", config],
        )
        assert result.exit_code == 0, result.output
        if fmt == "jsonl":
            tables, _ = jsonl_tables(out.read_bytes())
        elif fmt == "csv":
            tables, _ = csv_zip_tables(out.read_bytes())
        else:
            tables, _ = parquet_zip_tables(out.read_bytes())
        assert without_export_time(tables) == without_export_time(jsonl_tables(exported(driven, "jsonl"))[0])
    # a participant finishing now with a bonus is paid by the next batch, the earlier ones stay as they were
    try:  # whatever the module's other tests left unpaid (they may not have run first) goes in a batch now
        create_payment_batch(driven.store, driven.study_id)
    except ServerError as err:
        assert err.code == "nothing_to_pay"
    before = {b.batch_id: b.csv() for b in list_payment_batches(driven.store, driven.study_id)}
    definition = load_study(driven.store, driven.study_id).parsed()
    late = to_waiting(driven.store, driven.study_id)
    flow.leave_waiting_room(driven.store, definition, late.id)
    out = tmp_path / "pay.csv"
    result = runner.invoke(
        tradecraft_main, ["study", "payments", driven.study_id, "--out", str(out), "--config", config]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text() == f"{late.recruitment.participant_id},0.50\n"
    for batch_id, text in before.items():
        again = tmp_path / f"{batch_id}.csv"
        result = runner.invoke(
            tradecraft_main,
            [
                "study",
                "payments",
                driven.study_id,
                "--batch",
                batch_id,
                "--out",
                str(again),
                "--config",
                config,
            ],
        )
        assert result.exit_code == 0 and again.read_text() == text
    result = runner.invoke(
        tradecraft_main, ["study", "payments", driven.study_id, "--out", str(out), "--config", config]
    )
    assert result.exit_code != 0 and "nothing to pay" in result.output
    listed = runner.invoke(
        tradecraft_main, ["study", "payments", driven.study_id, "--list", "--config", config]
    )
    assert listed.exit_code == 0 and len(listed.output.splitlines()) == len(before) + 1
    result = runner.invoke(
        tradecraft_main, ["study", "export", "nope", "--out", str(out), "--config", config]
    )
    assert result.exit_code != 0 and "no such study" in result.output
