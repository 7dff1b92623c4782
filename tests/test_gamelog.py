"""The researcher game log (server/game/gamelog.py): one format for server exports and headless games.

- A headless game and the same game played on the server (the app in-process; same instance, seed and
  actions) give logs that the same reader loads into the same events, which replay to the same digests
  and the same tables.
- An export made before this format (tests/fixtures/researcher_export_v1.jsonl) still reads and replays.
- `tradecraft play --log` writes the format; traces round-trip; bad logs get typed errors with line numbers.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from e2e_helpers import ADMIN, DUEL_ID
from engine_support import TWO_PLAYER, small_rules
from in_process import InProcessApp

from agents.bots import RandomBot, make_policy
from agents.local import play_local
from analysis.tables import COLUMNS, table_rows
from craft_rules.loader import load_rule_set
from server.game import Game, GameSettings
from server.game.gamelog import (
    GAME_LOG_SCHEMA_VERSION,
    LEGACY_SCHEMA_VERSION,
    GameLog,
    GameLogError,
    decode_log,
    encode_log,
    encode_trace,
)
from tradecraft.cli import main as cli

FIXTURES = Path(__file__).parent / "fixtures"
#: log_digest of the game in the old-format fixture, as its own summary recorded it when it was made
OLD_EXPORT_DIGEST = "5bba88a4b510762f576ab5a0d70d2f5da2f69b1e9d2bb41e6b6a9ac03f17a869"


class FakeClock:
    """Seconds since the epoch that advance 0.25 s per reading."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 0.25
        return self.now


class Recording:
    """A policy wrapper that notes every action it sends, in the order the game took them."""

    def __init__(self, seat: int, policy: Any, actions: list[tuple[int, dict[str, Any]]]) -> None:
        self.seat, self.policy, self.actions = seat, policy, actions

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        action = self.policy.act(view, legal)
        self.actions.append((self.seat, dict(action)))
        return action


def round_trip(log: GameLog) -> GameLog:
    return decode_log(io.StringIO("".join(encode_log(log))))


# ------------------------------------------------------------------------------------ server vs headless
def server_export(app: InProcessApp, game_id: str) -> GameLog:
    response = app.http().get(f"/api/admin/games/{game_id}/export", auth=ADMIN)
    assert response.status_code == 200, response.text
    return decode_log(response.text.splitlines())


def test_headless_log_and_server_export_read_back_the_same(app_client: InProcessApp) -> None:
    seated = [app_client.client("log-0").as_researcher().connect(), app_client.client("log-1").connect()]
    try:
        created = seated[0].call("create_game", {"hall": "duel", "seed": 4242})  # a researcher's seed
        assert created["ok"], created
        game_id = created["game"]["game_id"]
        for seat, client in enumerate(seated):
            assert client.call("join", {"game_id": game_id})["seat"] == seat
        seated[1].wait_log(game_id, 2)
        started = server_export(app_client, game_id)  # the server's own settings, instance and seed

        rules = load_rule_set("minecraft")
        actions: list[tuple[int, dict[str, Any]]] = []
        policies = [Recording(seat, make_policy("random", 7 + seat), actions) for seat in range(2)]
        settings, instance = started.settings(), started.instance()
        result = play_local(instance, settings, rules, policies, started.seed, clock=FakeClock())
        headless = round_trip(result.game_log(game_id="headless", seats=[{"seat": 0}, {"seat": 1}]))

        # the same actions, sent by the two players over Socket.IO
        for seat, action in actions:
            fields = {k: v for k, v in action.items() if k != "type"}
            ack = seated[seat].act(game_id, action["type"], **fields)
            assert ack["ok"], (action, ack)
        exported = server_export(app_client, game_id)
    finally:
        for client in seated:
            client.close()

    assert exported.header.source == "server" and headless.header.source == "local"
    assert exported.header.schema_version == headless.header.schema_version == GAME_LOG_SCHEMA_VERSION
    assert exported.header.instance == headless.header.instance and exported.header.instance.id == DUEL_ID
    assert exported.header.settings == headless.header.settings
    assert exported.header.ruleset == headless.header.ruleset
    assert exported.header.ruleset.content_hash == rules.content_hash
    assert [e.to_dict() for e in exported.events] == [e.to_dict() for e in headless.events]
    assert all(t is not None for t in exported.times + headless.times)

    replayed = [log.replay(rules) for log in (exported, headless)]
    assert replayed[0].log_digest() == replayed[1].log_digest() == result.log_sha256
    assert replayed[0].state_digest() == replayed[1].state_digest() == result.game.state_digest()
    assert exported.summary is not None and headless.summary is not None
    assert exported.summary.log_digest == headless.summary.log_digest == result.log_sha256

    # and the analysis tables agree row for row, but for the ids and the clocks
    clocked = {"game_id", "time", "latency_s", "started_at", "ended_at", "duration_s", "created_at"}
    clocked |= {"response_s"}
    clocked |= {"finished_at", "source", "status", "hall", "seat_kinds", "seat_names", "seat_models"}
    clocked |= {"kind", "name", "bot", "model", "prompt_version"}
    tables = [table_rows([log]) for log in (exported, headless)]
    for name in COLUMNS:
        strip = [[{k: v for k, v in row.items() if k not in clocked} for row in t[name]] for t in tables]
        assert strip[0] == strip[1], name
    assert tables[0]["proposals"] or tables[0]["crafts"]


def test_same_game_seed_gives_the_same_bot_moves_on_the_server(app_client: InProcessApp) -> None:
    """The server seeds each bot move from the game seed and where the seat is in its own play: two all-bot
    games with one seed play the same moves; another seed plays others."""
    creator = app_client.client("seeder").as_researcher().connect()  # it sets the seeds
    bots = [{"kind": "bot", "bot": "random"}, {"kind": "bot", "bot": "random"}]
    try:
        game_ids = []
        for seed in (99, 99, 100):
            created = creator.call("create_game", {"hall": "duel", "seats": bots, "seed": seed})
            assert created["ok"], created
            game_ids.append(created["game"]["game_id"])
        logs = []
        for game_id in game_ids:
            for _ in range(400):
                log = server_export(app_client, game_id)
                if log.header.status == "finished":
                    break
                time.sleep(0.05)
            assert log.header.status == "finished", f"bot game {game_id} did not finish"
            logs.append(log)
    finally:
        creator.close()

    def moves(log: GameLog, seat: int) -> list[tuple[str, dict[str, Any]]]:
        return [(e.type, e.payload) for e in log.events if e.actor == seat]

    def outcome(log: GameLog) -> list[Any]:
        # every reveal of the hands, and how the game ended
        return [e.payload for e in log.events if e.type in ("hands_revealed", "game_ended")]

    assert moves(logs[0], 0) and moves(logs[0], 1)
    # in the craft phase both bots move at once, so the log may interleave their moves either way; what each
    # seat did, and so the game's course and outcome, is the same
    for seat in (0, 1):
        assert moves(logs[0], seat) == moves(logs[1], seat), f"seat {seat} played differently"
    assert outcome(logs[0]) == outcome(logs[1])
    assert [moves(logs[2], seat) for seat in (0, 1)] != [moves(logs[0], seat) for seat in (0, 1)]


# ------------------------------------------------------------------------------------------- old exports
def test_an_export_made_before_the_log_format_still_reads_and_replays() -> None:
    """The fixture is a researcher export written by server/web/export.py before gamelog.py (schema 1)."""
    with (FIXTURES / "researcher_export_v1.jsonl").open(encoding="utf-8") as handle:
        log = decode_log(handle)
    assert log.header.schema_version == LEGACY_SCHEMA_VERSION
    assert log.game_id == "old-export-v1" and log.header.status == "finished"
    assert log.header.ruleset.name == "small" and log.header.ruleset.content_hash is None
    assert log.header.instance is not None and log.header.instance.id == "small/1p_v_1p/two#0"
    assert log.header.seeds == {"game": 1, "bot": 99}
    assert log.header.meta["hall"] == "lab" and log.header.models[0]["model"] == "gpt-x-2025"
    assert len(log.events) == 20 and all(isinstance(t, float) for t in log.times)
    assert [lat for lat in log.latencies if lat is not None][:2] == [3.0, 7.0]
    assert log.summary is not None and log.summary.replay == {"ok": True, "error": None}

    game = log.replay(small_rules())
    assert game.finished and game.log_digest() == OLD_EXPORT_DIGEST == log.summary.log_digest
    # it converts into the current format without loss of the events
    again = round_trip(log)
    assert [e.to_dict() for e in again.events] == [e.to_dict() for e in log.events]
    assert again.times == log.times and again.latencies == log.latencies
    # and makes the same tables as any other log
    rows = table_rows([log])
    assert rows["games"][0]["ruleset"] == "small" and rows["games"][0]["winners"] is not None
    assert [s["target"] for s in rows["seats"]] == ['{"torch":4}', '{"shears":1}']


# ----------------------------------------------------------------------------------- tradecraft play --log
def test_play_log_writes_the_format_and_replays_to_the_printed_digest(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["play", "--seed", "5", "--log", str(path), "--json"])
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.output)
    assert outcome["log"] == str(path)
    with path.open(encoding="utf-8") as handle:
        log = decode_log(handle)
    assert log.header.source == "local" and log.header.status == "finished"
    assert log.header.seats == [
        {"seat": 0, "kind": "bot", "name": "random", "bot": "random"},
        {"seat": 1, "kind": "bot", "name": "random", "bot": "random"},
    ]
    assert log.header.seeds["game"] == 5 and set(log.header.seeds) == {"game", "seat0", "seat1"}
    assert log.header.versions["tradecraft"] and log.header.created_at is not None
    times = [t for t in log.times if t is not None]
    assert len(times) == len(log.events) and times == sorted(times)
    rules = load_rule_set(log.header.ruleset.name)
    assert log.replay(rules).log_digest() == outcome["log_sha256"]

    missing = CliRunner().invoke(
        cli, ["play", "--log", str(tmp_path / "no" / "such" / "dir.jsonl"), "--json"]
    )
    assert missing.exit_code == 1 and json.loads(missing.output)["error"]["code"] == "invalid_log_path"


def test_headless_latencies_follow_the_injected_clock() -> None:
    rules = small_rules()
    settings = GameSettings(ruleset="small", max_turns=2)
    policies = [RandomBot(1, rules=rules), RandomBot(2, rules=rules)]
    result = play_local(TWO_PLAYER, settings, rules, policies, 3, clock=FakeClock())
    log = result.game_log()
    assert len(log.times) == len(log.events) and log.header.created_at is not None
    # every player action is one clock reading after the previous one, so waits are multiples of 0.25 s
    measured = [lat for lat in log.latencies if lat is not None]
    assert measured and all(lat > 0 and (lat * 4).is_integer() for lat in measured)
    system = [lat for event, lat in zip(log.events, log.latencies, strict=True) if event.actor is None]
    assert all(lat is None for lat in system)
    no_clock = play_local(
        TWO_PLAYER,
        settings,
        rules,
        [RandomBot(1, rules=rules), RandomBot(2, rules=rules)],
        3,
    )
    assert no_clock.log_sha256 == result.log_sha256  # the clock changes the times, never the game
    assert set(no_clock.game_log().times) == {None}


# ----------------------------------------------------------------------------------------------- traces
def test_traces_round_trip_and_must_point_at_an_event() -> None:
    rules = small_rules()
    game = Game.new(TWO_PLAYER, GameSettings(ruleset="small", max_turns=1), rules, 0)
    game.apply(0, {"type": "pass"})
    result_log = GameLog(
        header=_header_for(game),
        events=list(game.events),
        times=[10.0] * len(game.events),
        latencies=[None] * len(game.events),
    )
    text = "".join(encode_log(result_log))
    text += encode_trace(0, 2, time=11.5, source="llm", prompt="You hold...", completion="pass", tokens=42)
    text += encode_trace(None, None, note="run started")
    log = decode_log(text.splitlines())
    first, second = log.traces
    assert (first.seat, first.event_seq, first.time) == (0, 2, 11.5)
    assert first.model_extra == {"source": "llm", "prompt": "You hold...", "completion": "pass", "tokens": 42}
    assert second.seat is None and second.model_extra == {"note": "run started"}
    assert "".join(encode_log(log)).count('"kind": "trace"') == 2

    dangling = text + encode_trace(1, len(game.events), note="too far")
    with pytest.raises(GameLogError) as error:
        decode_log(dangling.splitlines())
    assert error.value.code == "invalid_record" and error.value.line == len(dangling.splitlines())


def _header_for(game: Game) -> Any:
    from server.game.gamelog import InstanceRecord, LogHeader, RuleSetRef

    return LogHeader(
        game_id="t",
        source="test",
        settings=game.settings.model_dump(mode="json"),
        ruleset=RuleSetRef(name=game.rules.name, content_hash=game.rules.content_hash),
        instance=InstanceRecord.of(game.instance),
        seeds={"game": game.seed},
    )


# ------------------------------------------------------------------------------------------- bad logs
def _good_lines() -> list[str]:
    rules = small_rules()
    result = play_local(
        TWO_PLAYER,
        GameSettings(ruleset="small", max_turns=1),
        rules,
        [RandomBot(1, rules=rules), RandomBot(2, rules=rules)],
        0,
        clock=FakeClock(),
    )
    return list(encode_log(result.game_log()))


def _edit(lines: list[str], index: int, **changes: Any) -> list[str]:
    record = json.loads(lines[index])
    record.update(changes)
    return [*lines[:index], json.dumps(record) + "\n", *lines[index + 1 :]]


@pytest.mark.parametrize(
    ("mangle", "code", "line"),
    [
        (lambda lines: [], "missing_header", None),
        (lambda lines: lines[1:], "missing_header", 1),
        (lambda lines: [lines[0], "{not json\n", *lines[1:]], "invalid_json", 2),
        (lambda lines: [lines[0], "[1, 2]\n", *lines[1:]], "invalid_json", 2),
        (lambda lines: _edit(lines, 0, schema_version=GAME_LOG_SCHEMA_VERSION + 1), "unsupported_schema", 1),
        (lambda lines: _edit(lines, 0, settings="fast"), "invalid_record", 1),
        (lambda lines: _edit(lines, 0, surprise=1), "invalid_record", 1),
        (lambda lines: [lines[0], *lines[2:]], "invalid_events", 2),
        (lambda lines: [*lines[:2], lines[1], *lines[2:]], "invalid_events", 3),
        (lambda lines: _edit(lines, 1, payload=[1]), "invalid_record", 2),
        (lambda lines: _edit(lines, 1, time="noon"), "invalid_record", 2),
        (lambda lines: _edit(lines, 1, kind="gossip"), "invalid_record", 2),
        (lambda lines: [*lines, lines[-1]], "invalid_record", None),
        (lambda lines: [*lines[:-1], lines[-1], lines[1]], "invalid_events", None),
    ],
)
def test_bad_logs_get_typed_errors_with_the_line(mangle: Any, code: str, line: int | None) -> None:
    lines = mangle(_good_lines())
    with pytest.raises(GameLogError) as error:
        decode_log(lines)
    assert error.value.code == code, error.value.message
    if line is not None:
        assert error.value.line == line and f"line {line}" in error.value.message
    else:
        assert error.value.line is None or error.value.line >= 1


def test_participant_exports_are_not_game_logs() -> None:
    header = {"record": "header", "export": "participant", "schema_version": 1, "seat": 0}
    with pytest.raises(GameLogError) as error:
        decode_log([json.dumps(header)])
    assert error.value.code == "unsupported_schema" and "participant" in error.value.message


def test_replay_refuses_another_or_a_changed_rule_set() -> None:
    log = decode_log(_good_lines())
    rules = small_rules()
    assert log.replay(rules).finished
    with pytest.raises(GameLogError) as other:
        log.replay(load_rule_set("minecraft"))
    assert other.value.code == "ruleset_mismatch"
    changed = small_rules()
    changed_recipes = dict(changed.recipes)
    changed_recipes.pop("furnace")
    from dataclasses import replace

    edited = replace(changed, recipes=changed_recipes)
    assert edited.content_hash != rules.content_hash
    with pytest.raises(GameLogError) as drifted:
        log.replay(edited)
    assert drifted.value.code == "ruleset_mismatch" and "changed" in drifted.value.message
    assert log.replay(edited, verify_ruleset=False).log_digest() == log.summary.log_digest  # type: ignore[union-attr]
