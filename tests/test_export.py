"""Exports: researcher JSONL, CSV tables, participant-safe JSONL and the `tradecraft export` command.

Games are played with the real engine (the small rule set of tests/engine_support.py), stored with a fake
clock so latencies are exact, then exported.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from analysis_support import Played, play, store_game
from click.testing import CliRunner
from engine_support import THREE_PLAYER, TWO_PLAYER, play_random, small_rules

from analysis.tables import COLUMNS as CSV_COLUMNS
from analysis.tables import table_columns
from craft_rules.tasks import TaskInstance
from server.game import Game, GameSettings
from server.game.events import PUBLIC
from server.game.gamelog import GAME_LOG_SCHEMA_VERSION, decode_log
from server.game.views import player_view
from server.store import Store, open_store
from server.web.export import (
    PARTICIPANT_SCHEMA_VERSION,
    ExportError,
    export_csv_tables,
    export_game_jsonl,
    export_participant,
    load_game_log,
)
from tradecraft.cli import main as cli

RULES = small_rules()
SECRET = "tc_THIS-IS-A-SECRET-TOKEN-VALUE"


class Recorder:
    """Plays a game and stores each action's events as one batch, stamped by a fake clock."""

    def __init__(self, store: Store, game_id: str, instance: TaskInstance, seed: int = 1, **settings: Any):
        settings.setdefault("ruleset", "small")
        self.store, self.game_id, self.clock = store, game_id, 1000.0
        self.settings = GameSettings(**settings)
        seats = [
            {"seat": 0, "kind": "agent", "name": "gpt", "user_id": "u0", "bot": None, "model": "gpt-x-2025",
             "prompt_version": "p3", "api_token": SECRET},
            {"seat": 1, "kind": "human", "name": "Ada", "user_id": "u1", "bot": None,
             "session_cookie": SECRET},
            {"seat": 2, "kind": "bot", "name": "tom1", "user_id": None, "bot": "tom1"},
        ][: instance.players]  # fmt: skip
        store.create_game(
            game_id,
            {
                "mode": instance.mode,
                "hall": "lab",
                "ruleset": "small",
                "instance_id": instance.id,
                "instance": instance.to_json(),
                "settings": self.settings.model_dump(),
                "seed": seed,
                "bot_seed": 99,
                "seats": seats,
                "status": "running",
                "admin_password": SECRET,
            },
        )
        self.game = Game.new(instance, self.settings, RULES, seed)
        self._store(self.game.events)

    def _store(self, events: Iterable[Any]) -> None:
        self.store.append_events(self.game_id, [e.to_dict() | {"time": self.clock} for e in events])

    def act(self, seat: int | None, action: dict[str, Any], after: float = 1.0) -> None:
        self.clock += after
        self._store(self.game.apply(seat, action))

    def finish(self) -> None:
        self.store.update_game(self.game_id, status="finished" if self.game.finished else "running")


@pytest.fixture
def store() -> Iterable[Store]:
    opened = open_store("sqlite:///:memory:")
    yield opened
    opened.close()


def lines(iterator: Iterable[str]) -> list[dict[str, Any]]:
    text = "".join(iterator)
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def scripted_two_player(store: Store, game_id: str = "two") -> Recorder:
    """Turn 1: 0 proposes (3 s), 1 rejects (7 s); crafting: 0 crafts twice (2 s, 5 s), 1 finishes (10 s),
    0 finishes (4 s after its last craft)."""
    rec = Recorder(store, game_id, TWO_PLAYER, max_turns=2)
    rec.act(
        0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {"stick": 1}, "message": "hi"}, 3
    )
    rec.act(1, {"type": "decide", "accept": False, "message": "no"}, 7)
    rec.act(0, {"type": "craft", "recipe": "oak_planks", "runs": 1}, 2)
    rec.act(0, {"type": "craft", "recipe": "stick", "runs": "1/2"}, 5)
    rec.act(1, {"type": "finish_crafting"}, 3)  # 1 was awaited since the craft phase began 10 s ago
    rec.act(0, {"type": "finish_crafting"}, 1)
    rec.finish()
    return rec


def random_game(store: Store, game_id: str, instance: TaskInstance, seed: int, **settings: Any) -> Recorder:
    rec = Recorder(store, game_id, instance, seed=seed, **settings)
    rng = random.Random(seed)
    for _step in play_random(rec.game, rng):
        # play_random applies each action itself: store what it produced as one batch
        stored = rec.store.last_seq(game_id)
        rec.clock += rng.choice([0.5, 1.0, 2.5])
        rec._store(rec.game.events[stored + 1 :])
    rec.finish()
    return rec


# ------------------------------------------------------------------------------------------- researcher
def test_researcher_export_header_events_and_summary(store: Store) -> None:
    rec = scripted_two_player(store)
    records = lines(export_game_jsonl(store, "two", rules=RULES))
    header, events, summary = records[0], records[1:-1], records[-1]

    assert header["kind"] == "header" and header["source"] == "server"
    assert header["schema_version"] == GAME_LOG_SCHEMA_VERSION
    assert header["game_id"] == "two" and header["status"] == "running"
    assert header["settings"] == rec.settings.model_dump()
    assert header["instance"]["id"] == TWO_PLAYER.id
    assert header["instance"]["targets"] == [{"torch": 4}, {"shears": 1}]
    assert header["ruleset"] == {"name": "small", "content_hash": RULES.content_hash}
    assert header["seeds"] == {"game": 1, "bot": 99}
    # everything else has its own key; the password is gone
    assert header["meta"] == {"bot_seed": 99, "hall": "lab", "mode": TWO_PLAYER.mode, "updated_at": ANY}
    assert header["models"] == [{"seat": 0, "model": "gpt-x-2025", "prompt_version": "p3"}]
    assert header["versions"]["tradecraft"] and header["versions"]["python"] and header["exported_at"]

    assert [e["seq"] for e in events] == list(range(len(rec.game.events)))
    assert all(e["kind"] == "event" and isinstance(e["time"], float) for e in events)
    assert [e["type"] for e in events] == [e.type for e in rec.game.events]

    assert summary["kind"] == "summary" and summary["replay"] == {"ok": True, "error": None}
    assert summary["log_digest"] == rec.game.log_digest()
    assert summary["state_digest"] == rec.game.state_digest()
    assert summary["final_state"]["targets"] == [{"torch": 4}, {"shears": 1}]


def test_exports_never_carry_credentials(store: Store) -> None:
    scripted_two_player(store)
    store.create_token("bot", ["play"])
    everything = "".join(export_game_jsonl(store, "two", rules=RULES))
    everything += "".join(export_csv_tables(store, ["two"], rules=RULES).values())
    everything += "".join(export_participant(store, "two", 0, rules=RULES))
    assert SECRET not in everything
    assert "api_token" not in everything and "admin_password" not in everything
    assert "session_cookie" not in everything


def test_response_latencies(store: Store) -> None:
    scripted_two_player(store)
    events = lines(export_game_jsonl(store, "two", rules=RULES))[1:-1]
    acted = [(e["type"], e["actor"], e["latency"]) for e in events if e["latency"] is not None]
    assert acted == [
        ("proposed", 0, 3.0),
        ("decided", 1, 7.0),
        ("crafted", 0, 2.0),
        ("crafted", 0, 5.0),
        ("craft_finished", 1, 10.0),
        ("craft_finished", 0, 4.0),
    ]
    # system events and follow-ups of an action carry no latency
    assert all(e["latency"] is None for e in events if e["actor"] is None)


def test_unreplayable_game_still_exports_its_events(store: Store) -> None:
    scripted_two_player(store)
    records = lines(export_game_jsonl(store, "two"))  # the "small" rule set is not installed
    summary = records[-1]
    assert summary["replay"]["ok"] is False and summary["replay"]["error"]["message"]
    assert len(records) == 2 + store.last_seq("two") + 1
    assert all(r["latency"] is None for r in records[1:-1])
    assert summary["log_digest"] is None and summary["events"] == store.last_seq("two") + 1
    # and it still reads back as a game log
    assert len(decode_log(export_game_jsonl(store, "two")).events) == store.last_seq("two") + 1
    with pytest.raises(ExportError) as error:
        export_participant(store, "two", 0)
    assert error.value.code == "replay_failed"


def test_unknown_game_and_seat(store: Store) -> None:
    with pytest.raises(ExportError) as error:
        export_game_jsonl(store, "nope")
    assert error.value.code == "unknown_game"
    scripted_two_player(store)
    for seat in (2, -1):
        with pytest.raises(ExportError) as bad_seat:
            export_participant(store, "two", seat, rules=RULES)
        assert bad_seat.value.code == "unknown_seat"


# -------------------------------------------------------------------------------------------------- CSV
def read_tables(tables: dict[str, str]) -> dict[str, list[dict[str, str]]]:
    assert set(tables) == {*CSV_COLUMNS, "tom_values"}
    parsed = {}
    for name, text in tables.items():
        reader = csv.DictReader(io.StringIO(text))
        assert tuple(reader.fieldnames or ()) == table_columns(name)
        parsed[name] = list(reader)
    return parsed


def test_csv_tables_of_the_scripted_game(store: Store) -> None:
    scripted_two_player(store)
    tables = read_tables(export_csv_tables(store, ["two"], rules=RULES))
    (proposal,) = tables["proposals"]
    assert proposal["proposer"] == "0" and proposal["to"] == "1" and proposal["status"] == "rejected"
    assert json.loads(proposal["offer"]) == {"coal": 1} and proposal["offer_units"] == "1"
    assert proposal["reply"] == "no" and float(proposal["latency_s"]) == 3.0
    (decision,) = tables["decisions"]
    assert (decision["seat"], decision["accept"], decision["latency_s"]) == ("1", "false", "7.0")
    crafts = tables["crafts"]
    assert [(c["seat"], c["recipe"], c["runs"]) for c in crafts] == [
        ("0", "oak_planks", "1"),
        ("0", "stick", "1/2"),
    ]
    assert json.loads(crafts[1]["consumed"]) and json.loads(crafts[1]["produced"])
    turn = tables["turns"][0]
    assert (turn["turn"], turn["proposer"], turn["outcome"], turn["partner"]) == ("1", "0", "rejected", "1")
    assert float(turn["duration_s"]) == 21.0 and json.loads(turn["hands_after"])
    (game,) = tables["games"]
    assert game["seat_kinds"] == "agent;human" and game["seat_models"] == "gpt-x-2025;"
    assert game["replay_ok"] == "true" and game["turns"] == "2"


def test_csv_tables_across_random_games_match_the_engine(store: Store) -> None:
    recs = [
        random_game(store, f"g{seed}", THREE_PLAYER if seed % 2 else TWO_PLAYER, seed, tom_orders=tom)
        for seed, tom in ((1, [[0, 1, 2], [0, 1], [0]]), (2, [[0, 1], [0, 1, 2]]), (3, []))
    ]
    tables = read_tables(export_csv_tables(store, [r.game_id for r in recs], rules=RULES))
    assert [g["game_id"] for g in tables["games"]] == ["g1", "g2", "g3"]
    for rec in recs:
        gid, game = rec.game_id, rec.game
        mine = {name: [r for r in rows if r["game_id"] == gid] for name, rows in tables.items()}
        assert [p["status"] for p in mine["proposals"]] == [p["status"] for p in game.proposals]
        assert len(mine["decisions"]) == sum(e.type == "decided" for e in game.events)
        assert len(mine["crafts"]) == sum(e.type == "crafted" for e in game.events)
        assert len(mine["turns"]) == len(game.turn_records)
        expected_values = 0
        for report in game.tom_reports:
            expected_values += len(report["v0"])
            for key in ("v1", "v2"):
                expected_values += sum(len(values) for values in (report.get(key) or {}).values())
        assert len(mine["tom_reports"]) == expected_values
        for row in mine["tom_reports"]:
            assert row["order"] in ("0", "1", "2")
            assert (row["opponent_seat"] == "") == (row["order"] == "0")
            assert row["opponent_seat"] != row["seat"]
            assert 0 <= int(row["value"]) <= 10


# ------------------------------------------------------------------------------------------- participant
def test_participant_export_is_filtered_like_the_seat_view(store: Store) -> None:
    """Three players: 0 proposes to 1, 1 rejects; everyone reports ToM and crafts. Seat 2 must learn nothing
    of the rejected proposal, nor anyone's target, ToM report or crafting."""
    rec = Recorder(store, "three", THREE_PLAYER, tom_orders=[[0, 1], [0], [0, 1, 2]], max_turns=1)
    game = rec.game
    for seat in sorted(game.tom_awaiting()):
        items = game.tom_items
        opponents = [str(s) for s in range(3) if s != seat]
        orders = game.tom_orders(seat)
        report: dict[str, Any] = {"type": "report_tom", "v0": dict.fromkeys(items, 5)}
        if 1 in orders:
            report["v1"] = {o: dict.fromkeys(items, 3) for o in opponents}
        if 2 in orders:
            report["v2"] = {o: dict.fromkeys(items, 7) for o in opponents}
        rec.act(seat, report)
    rec.act(0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {"stick": 1}, "message": "psst"})
    rec.act(1, {"type": "decide", "accept": False, "message": "nope"})
    rec.act(0, {"type": "craft", "recipe": "oak_planks", "runs": 1})
    rec.act(2, {"type": "finish_crafting"})
    rec.act(1, {"type": "craft", "recipe": "furnace", "runs": "1/2"})
    rec.act(1, {"type": "finish_crafting"})
    rec.act(0, {"type": "finish_crafting"})
    rec.finish()
    assert game.finished

    for seat in range(3):
        records = lines(export_participant(store, "three", seat, rules=RULES))
        header, events, view = records[0], records[1:-1], records[-1]
        text = json.dumps(records)
        assert header["export"] == "participant" and header["seat"] == seat
        assert header["schema_version"] == PARTICIPANT_SCHEMA_VERSION
        assert header["your_target"] == THREE_PLAYER.targets[seat]
        assert "seed" not in header and "seeds" not in header and "models" not in header
        assert "gpt-x-2025" not in text and "user_id" not in text and "u0" not in json.dumps(header)
        assert view["record"] == "view" and view["target"] == THREE_PLAYER.targets[seat]
        assert {k: v for k, v in view.items() if k != "record"} == player_view(game, seat)
        for event in events:
            assert event["visibility"] == "public" or seat in event["visibility"]
            if event["actor"] not in (None, seat):
                assert event["latency"] is None
            if event["type"] in ("tom_reported", "crafted"):
                assert event["payload"]["seat"] == seat
        types = [e["type"] for e in events]
        if seat == 2:
            assert "proposed" not in types and "decided" not in types
            assert "psst" not in text and "nope" not in text
            assert view["proposals"] == []
        else:
            assert "proposed" in types and "decided" in types
        other_targets = [t for s, t in enumerate(THREE_PLAYER.targets) if s != seat]
        for target in other_targets:
            assert json.dumps({"target": target})[1:-1] not in text
        # every event the seat may see is there, in order, numbered by the seat's own log: global seqs
        # would count other seats' private events by their gaps
        expected = [e.type for e in game.events if e.visibility == "public" or seat in e.visibility]
        assert [e["type"] for e in events] == expected
        assert [e["n"] for e in events] == list(range(len(events)))
        assert all("seq" not in e for e in events)


# --------------------------------------------------------------------------------------------------- CLI
def test_cli_writes_jsonl_csv_and_participant_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/store/tradecraft.db"
    store = open_store(url)
    scripted_two_player(store, "game/one")  # an id that is not a safe file name
    random_game(store, "g2", TWO_PLAYER, 5)
    store.close()
    monkeypatch.setattr("server.table.game_logs.load_rule_set", lambda name: RULES)
    runner = CliRunner()

    result = runner.invoke(cli, ["export", "--store", url, "--out", str(tmp_path / "jsonl")])
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in (tmp_path / "jsonl").iterdir())
    assert files == ["g2.jsonl", "game_one.jsonl"]
    assert json.loads((tmp_path / "jsonl" / "g2.jsonl").read_text().splitlines()[0])["game_id"] == "g2"

    result = runner.invoke(cli, ["export", "--store", url, "--out", str(tmp_path / "csv"), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert sorted(p.stem for p in (tmp_path / "csv").iterdir()) == sorted([*CSV_COLUMNS, "tom_values"])
    games_csv = (tmp_path / "csv" / "games.csv").read_text()
    assert "game/one" in games_csv and "g2" in games_csv

    args = ["export", "--store", url, "--out", str(tmp_path / "p"), "--game", "g2", "--participant", "1"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    first = json.loads((tmp_path / "p" / "g2.seat1.jsonl").read_text().splitlines()[0])
    assert first["export"] == "participant" and first["seat"] == 1

    result = runner.invoke(cli, [*args, "--format", "csv"])
    assert result.exit_code == 2 and "--participant" in result.output
    result = runner.invoke(cli, ["export", "--store", url, "--out", str(tmp_path / "x"), "--game", "missing"])
    assert result.exit_code == 1 and "no game 'missing'" in result.output
    result = runner.invoke(cli, ["export", "--store", "redis://x", "--out", str(tmp_path / "x")])
    assert result.exit_code == 1 and "not understood" in result.output


def test_an_export_taken_while_a_bot_moves_links_every_trace_to_an_event_it_holds() -> None:
    """The table stores a move's events, then its traces. An export that read the events first and the
    traces after could hold a trace of a move whose events it never read (seen once: a trace of event 7
    in a log of events 0-6); it reads the traces first, so every trace it holds links to an event it has."""
    store = open_store("memory://")
    rec = scripted_two_player(store, "racing")
    rec.store.append_traces("racing", [{"seat": 0, "event_seq": 2, "step": "act"}])
    real_traces, real_events = store.load_traces, store.load_events
    move_after: list[str] = []

    def a_bot_moves() -> None:  # another thread's move between the export's two reads
        seq = store.last_seq("racing") + 1
        store.append_events(
            "racing", [{"seq": seq, "type": "passed", "actor": 0, "payload": {}, "visibility": PUBLIC}]
        )
        store.append_traces("racing", [{"seat": 0, "event_seq": seq, "step": "act"}])

    def traces_then_move(game_id: str) -> list[dict[str, Any]]:
        read = real_traces(game_id)
        if not move_after:
            move_after.append("traces")
            a_bot_moves()
        return read

    def events_then_move(game_id: str, after_seq: int = -1) -> list[Any]:
        read = real_events(game_id, after_seq)
        if not move_after:
            move_after.append("events")
            a_bot_moves()
        return read

    store.load_traces, store.load_events = traces_then_move, events_then_move  # type: ignore[method-assign]
    exported = load_game_log(store, "racing")
    held = len(exported.log.events)
    assert move_after, "the move happened during the export"
    assert all(t.event_seq is None or t.event_seq < held for t in exported.log.traces)


# ------------------------------------------------------------------ LLM traces and ToM reports, both exports
@pytest.fixture(scope="module")
def llm_game() -> Played:
    """Both seats LLM-like (each its own model), leaving traces and reporting ToM every turn."""
    return play(
        "minecraft/1p_v_1p/paper#2",
        ["tom2", "tom1"],
        seed=5,
        llm_seats=[0, 1],
        game_id="llm-duel",
        models={0: "gpt-4o-2024-08-06", 1: "claude-3-5-haiku-20241022"},
        settings=GameSettings(ruleset="minecraft", max_turns=2, allow_pass=False, tom_orders=[[0, 1, 2]] * 2),
    )


def test_researcher_csv_carries_traces_reports_and_reference_values(llm_game: Played) -> None:
    store = open_store("sqlite:///:memory:")
    store_game(store, llm_game)
    tables = read_tables(export_csv_tables(store, ["llm-duel"]))
    store.close()
    traces = tables["traces"]
    assert len(traces) == len(llm_game.log.traces)
    calls = [row for row in traces if row["kind"] == "llm_call"]
    assert {row["model"] for row in calls} == {"gpt-4o-2024-08-06", "claude-3-5-haiku-20241022"}
    assert all(row["prompt_tokens"] == "120" and int(row["prompt_chars"]) > 0 for row in calls)
    assert any(row["kind"] == "refused" and row["event_seq"] == "" for row in traces)
    text = json.dumps(traces)
    assert "your hand is secret" not in text and "Your target" not in text  # sizes, never the prompt
    reported = [e for e in llm_game.log.events if e.type == "tom_reported"]
    assert {int(row["seat"]) for row in tables["tom_reports"]} == {0, 1} and len(reported) >= 4
    values = tables["tom_values"]
    assert len(values) == len(tables["tom_reports"]) and all(row["reference"] != "" for row in values)
    assert {row["reference_kind"] for row in values} >= {"own_target", "opponent_target"}


def test_a_participant_export_holds_nothing_private_of_another_seat(llm_game: Played) -> None:
    store = open_store("sqlite:///:memory:")
    store_game(store, llm_game)
    records = lines(export_participant(store, "llm-duel", 1))
    store.close()
    # the rules reveal every target to everyone once the game is over (a public event, the last but the
    # end): before it, and in the header and the final view, seat 0's target appears nowhere
    reveal = [r for r in records if r.get("type") == "targets_revealed"]
    assert [r["visibility"] for r in reveal] == ["public"] and records.index(reveal[0]) >= len(records) - 4
    text = json.dumps([r for r in records if r.get("type") != "targets_revealed"])
    target0 = llm_game.result.game.instance.targets[0]
    assert target0 != llm_game.result.game.instance.targets[1]
    assert json.dumps(target0) not in text and json.dumps(target0, separators=(",", ":")) not in text
    assert all(item not in text for item in target0)  # not even its item's name
    assert "gpt-4o" not in text  # seat 0's model
    for private in ("your hand is secret", "Your target", "I think", "llm_call", "belief"):
        assert private not in text  # no trace record of anyone
    events = [r for r in records if r["record"] == "event"]
    own_reports = [e for e in events if e["type"] == "tom_reported"]
    assert own_reports and all(e["payload"]["seat"] == 1 for e in own_reports)
    # seat 0 did report (privately): its reports are in the researcher log only
    assert any(e.type == "tom_reported" and e.payload["seat"] == 0 for e in llm_game.log.events)


FORMULAS = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "\tTAB"]


@pytest.mark.parametrize("formula", FORMULAS)
def test_text_that_starts_like_a_formula_is_never_a_formula_in_a_csv(store: Store, formula: str) -> None:
    """CSV injection: a player's message (any text a user sets) must not run in the researcher's spreadsheet.
    The CSV cell carries a leading apostrophe; the JSON lines keep the text as it was."""
    rec = Recorder(store, "inject", TWO_PLAYER, max_turns=1)
    rec.act(
        0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {"stick": 1}, "message": formula}, 1
    )
    rec.act(1, {"type": "decide", "accept": False, "message": "ok"}, 1)
    (proposal,) = read_tables(export_csv_tables(store, ["inject"]))["proposals"]
    assert proposal["message"] == "'" + formula
    assert proposal["reply"] == "ok" and proposal["offer_units"] == "1"  # numbers and plain text unchanged
    raw = read_tables(export_csv_tables(store, ["inject"], for_spreadsheets=False))["proposals"][0]
    assert raw["message"] == formula
    assert json.dumps(formula)[1:-1] in "".join(export_game_jsonl(store, "inject"))
