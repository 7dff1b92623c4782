"""Bot and LLM seats on a live server (tests/policy_server.py: run_server.py with the test-only policies of
tests/bot_policies.py injected through create_app(policy_factory=...)), over real sockets and real SQLite.

Needs a real server process: kill -9 and restart of bot seats, hung policies, policies plugged in.

- a bot that sleeps 2 s per move delays no other game's actions nor any deadline, nor reads of its own game;
- a bot's move is validated like a client's: an illegal one is refused, counted, retried with other seeds,
  and the seat finally resigns;
- an observing policy is shown each of its seat's events exactly once, in order, numbered as a remote
  client's log, and is rebuilt with the same seed and the whole log after a kill -9 and restart;
- trace records land in the store (bounded, credentials cut out) and in the researcher export, never in a
  participant export;
- a policy that hangs past the move time limit does not hang its game, and its thread is replaced;
- LLM seats: only listed specs may be seated by a game's creator, never with a key in the spec.
"""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from bot_policies import SECRET_ENV, factory, read_records
from e2e_helpers import ADMIN, DUEL_CRAFTS, DUEL_TRADE, Client, MakeServer, ServerProcess, write_config

from agents.bots.registry import make_policy
from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer
from server.game.events import viewer_log
from server.game.gamelog import GameLog, decode_log
from server.store import open_store
from server.table.config import SettingsError, load_settings
from server.table.errors import ServerError
from server.table.master import Table
from server.table.policies import BotRegistry, bot_action_id, bot_seed, policy_seed
from server.table.principal import Principal
from server.table.timers import DeadlineScheduler
from server.table.traces import bound_trace
from server.web.lobby import Lobby

POLICY_SERVER = Path(__file__).parent / "policy_server.py"
SECRET = "sk-test-SECRET-0123456789abcdef"


def policy_config(folder: Path, **bots: Any) -> Path:
    """write_config's halls, no bot pause, the given ``bots`` settings and a hall that seats an LLM."""
    path = write_config(folder)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["bots"] = {"move_delay_seconds": 0.0, **bots}
    duel = config["halls"]["duel"]
    config["halls"]["llm_hall"] = {
        **duel,
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "llm:test:hall-model?tom=0", "name": "Model"}],
        "allow_custom_seats": False,
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def start_server(make_server: MakeServer, folder: Path, **bots: Any) -> tuple[ServerProcess, Path]:
    """tests/policy_server.py (the server with the test policies installed) over ``policy_config``."""
    records = folder / "records"
    env = {"TC_TEST_POLICY_RECORDS": str(records), SECRET_ENV: SECRET}
    return make_server(policy_config(folder, **bots), env=env, script=POLICY_SERVER), records


@pytest.fixture(scope="module")
def live(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[ServerProcess, Path]:
    return start_server(
        make_server,
        tmp_path_factory.mktemp("bots"),
        workers=8,
        move_time_limit_seconds=20,
        allowed_specs=["llm:test:allowed"],
        traces_per_game=40,
        trace_max_bytes=4096,
    )


def export(server: ServerProcess, game_id: str, seat: int | None = None) -> str:
    query = f"?seat={seat}" if seat is not None else ""
    response = requests.get(f"{server.url}/api/admin/games/{game_id}/export{query}", auth=ADMIN, timeout=30)
    assert response.status_code == 200, response.text
    return response.text


def game_log(server: ServerProcess, game_id: str) -> GameLog:
    return decode_log(export(server, game_id).splitlines())


def wait_until(check: Any, timeout: float, what: str, pause: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(pause)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def create(client: Client, hall: str, seats: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"hall": hall, **fields}
    if seats is not None:
        payload["seats"] = seats
    return client.call("create_game", payload)


def bot(spec: str) -> dict[str, str]:
    return {"kind": "bot", "bot": spec}


def acted(records: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The policy objects that were asked to act (the lobby builds one per bot seat to check its spec)."""
    return [r for r in records if any("act" in line for line in r)]


# ------------------------------------------------------------------------------------------ slow bots
@pytest.mark.slow
def test_a_bot_sleeping_2_s_per_move_delays_no_other_game_nor_any_deadline(
    live: tuple[ServerProcess, Path],
) -> None:
    server, records = live
    people: list[Client] = []

    def person(name: str) -> Client:
        people.append(Client(server.url, name).connect())
        return people[-1]

    try:
        host = person("sleep-host")
        # ten games of two bots that sleep 2 s per move: more sleepers than the deadline timers' threads
        for _ in range(10):
            assert create(host, "duel", [bot("sleepy?seconds=2")] * 2)["ok"]
        wait_until(
            lambda: sum(1 for r in read_records(records, "sleepy") for line in r if "act" in line) >= 8,
            15,
            "the sleepy bots to be deciding",
        )

        # a game of two people: every acknowledgement comes at the usual pace
        p0, p1 = person("quick-0"), person("quick-1")
        created = create(p0, "duel", join=True)
        game_id = created["game"]["game_id"]
        assert p0.call("join", {"game_id": game_id})["seat"] == 0
        assert p1.call("join", {"game_id": game_id})["seat"] == 1
        p0.wait_log(game_id, 2)
        script = [(p0, "propose", DUEL_TRADE), (p1, "decide", {"accept": True, "message": "ok"})]
        script += [(p0, "craft", craft) for craft in DUEL_CRAFTS[0]]
        script += [(p1, "craft", craft) for craft in DUEL_CRAFTS[1]]
        script += [(p0, "finish_crafting", {}), (p1, "finish_crafting", {})]
        latencies = []
        for client, kind, fields in script:
            started = time.perf_counter()
            ack = client.act(game_id, kind, **fields)
            latencies.append(time.perf_counter() - started)
            assert ack["ok"], ack
        assert ack["status"] == "finished"
        assert max(latencies) < 0.5, latencies
        assert statistics.median(latencies) < 0.2, latencies

        # a game with 0.6 s deadlines and two idle people: its timeout comes on time
        t0, t1 = person("idle-0"), person("idle-1")
        timed = create(t0, "timed", join=True)["game"]["game_id"]
        assert t0.call("join", {"game_id": timed})["seat"] == 0
        assert t1.call("join", {"game_id": timed})["seat"] == 1
        t0.wait_log(timed, 2)
        started_at = t0.call("events", {"game_id": timed})["events"][-1]["time"]
        t0.wait_for(
            lambda: any(e["type"] == "timeout" for e in t0.pushed_events(timed)), timeout=5, what="timeout"
        )
        timeout_event = next(e for e in t0.pushed_events(timed) if e["type"] == "timeout")
        assert 0.6 <= timeout_event["time"] - started_at < 0.6 + 0.4

        # in a game against a sleepy bot, the person reads the game while the bot decides
        human = person("vs-sleepy")
        versus = create(human, "duel", ["open", bot("sleepy?seconds=2")], join=True)["game"]["game_id"]
        assert human.call("join", {"game_id": versus})["status"] == "running"
        assert human.act(versus, "propose", **DUEL_TRADE)["ok"]
        time.sleep(0.3)  # the bot has started thinking
        started = time.perf_counter()
        view = human.call("view", {"game_id": versus})
        assert time.perf_counter() - started < 0.5
        assert view["view"]["phase"] == "trade_decide"  # ... and it is still thinking
        wait_until(
            lambda: human.call("view", {"game_id": versus})["view"]["phase"] != "trade_decide",
            10,
            "the sleepy bot's decision",
        )
    finally:
        for client in people:
            client.close()


# ------------------------------------------------------------------------------------------ illegal bots
@pytest.mark.slow
def test_an_illegal_bot_move_is_refused_like_a_clients_retried_with_other_seeds_then_resigns(
    live: tuple[ServerProcess, Path],
) -> None:
    server, records = live
    human = Client(server.url, "vs-cheat").as_researcher().connect()  # it sets the seed
    try:
        created = create(human, "duel", ["open", bot("illegal")], join=True, seed=4711)
        game_id = created["game"]["game_id"]
        assert human.call("join", {"game_id": game_id})["status"] == "running"
        assert human.act(game_id, "propose", **DUEL_TRADE)["ok"]
        # what a client gets for the bot's answer at this point
        refused = human.act(game_id, "craft", recipe="torch", runs=1)
        assert refused["ok"] is False
        human.wait_status(game_id, "finished", timeout=15)  # the seat resigned: too few players
    finally:
        human.close()

    log = game_log(server, game_id)
    assert [e.payload["seat"] for e in log.events if e.type == "resigned"] == [1]
    assert not any(e.actor == 1 and e.type != "resigned" for e in log.events)
    # three attempts at the same move, each by a policy with its own seed, then the seat resigned
    move_key = "1:trade_decide:0"
    seeds = [r[0]["seed"] for r in acted(read_records(records, "illegal"))]
    expected = [policy_seed(4711, 1), policy_seed(4711, 1, move_key, 1), policy_seed(4711, 1, move_key, 2)]
    assert seeds == expected and len(set(seeds)) == 3
    assert expected[0] == bot_seed(4711, 1)
    researcher = requests.get(f"{server.url}/api/admin/games/{game_id}", auth=ADMIN, timeout=30).json()
    assert researcher["bots"] == {"1": {"failed": 3, "overdue": 0}}
    counted = re.findall(r"bot illegal at seat 1 failed \((\d)/3\): \{'code': '(\w+)'", server.log())
    assert [n for n, _ in counted] == ["1", "2", "3"]
    assert {code for _, code in counted} == {refused["error"]["code"]}


@pytest.mark.slow
def test_a_refusal_aware_policy_is_told_why_and_asked_again(live: tuple[ServerProcess, Path]) -> None:
    """A policy with a refused(error) hook (an LLM agent) keeps its seat's policy: it is told the engine's
    typed error (the one a client gets) and asked again, instead of being replaced by another seed."""
    server, records = live
    human = Client(server.url, "vs-stubborn").as_researcher().connect()  # it sets the seed
    try:
        created = create(human, "duel", ["open", bot("stubborn")], join=True, seed=4712)
        game_id = created["game"]["game_id"]
        assert human.call("join", {"game_id": game_id})["status"] == "running"
        assert human.act(game_id, "propose", **DUEL_TRADE)["ok"]
        refused = human.act(game_id, "craft", recipe="torch", runs=1)  # a client's answer to the same move
        human.wait_for(
            lambda: any(e["type"] == "decided" for e in human.pushed_events(game_id)), 10, what="the decision"
        )
        researcher = requests.get(f"{server.url}/api/admin/games/{game_id}", auth=ADMIN, timeout=30).json()
    finally:
        human.close()
    runs = [r for r in acted(read_records(records, "stubborn")) if r[0]["seed"] == bot_seed(4712, 1)]
    assert len(runs) == 1  # one policy for the seat, no other seed tried
    told = [line["refused"] for line in runs[0] if "refused" in line]
    assert told[0] == refused["error"]
    assert researcher["bots"]["1"]["failed"] >= 1
    assert not any(r[0]["seed"] == policy_seed(4712, 1, "1:trade_decide:0", 1) for r in read_records(records))


# ------------------------------------------------------------------------------------------------ traces
@pytest.mark.slow
def test_traces_land_in_the_store_and_the_researcher_export_never_in_a_participant_export(
    live: tuple[ServerProcess, Path],
) -> None:
    server, _ = live
    host = Client(server.url, "tracing").as_researcher().connect()  # it sets the seed
    try:
        created = create(host, "duel", [bot("tracer?size=200000&count=10"), bot("random")], seed=31)
        game_id = created["game"]["game_id"]
        wait_until(lambda: game_log(server, game_id).header.status == "finished", 30, "the game to end")
    finally:
        host.close()
    log = game_log(server, game_id)
    moves = [e for e in log.events if e.actor == 0]
    assert len(moves) >= 4  # 4 moves x 10 records reach the bound of 40

    store = open_store(f"sqlite:///{server.config.parent / 'data' / 'tradecraft.db'}")
    try:
        stored = store.load_traces(game_id)
    finally:
        store.close()
    assert len(stored) == 40  # traces_per_game: whole batches until the bound, then none
    assert "trace records are dropped" in server.log()
    by_seq = {e.seq: e for e in log.events}
    for record in stored:
        assert record["seat"] == 0 and isinstance(record["time"], float)
        assert by_seq[record["event_seq"]].actor == 0  # the first event of the move it led to
        assert len(json.dumps(record, ensure_ascii=False).encode()) <= 4096
    prompts = [r for r in stored if r.get("trace_kind") == "llm_call"]  # "kind" belongs to the log format
    assert prompts and all(r["truncated"] is True and r["original_bytes"] > 200_000 for r in prompts)
    assert all(r["usage"] == {"prompt_tokens": 200_000} for r in prompts)  # token counts are not credentials
    echoes = [r for r in stored if r.get("step") == "oops"]
    assert echoes and all(r["echo"] == "key=[redacted]" for r in echoes)
    database = (server.config.parent / "data").glob("tradecraft.db*")
    assert not any(SECRET.encode() in path.read_bytes() for path in database)

    # the researcher export carries them, in order, each after the header
    assert [t.model_dump(exclude={"kind"}) for t in log.traces] == stored
    researcher = export(server, game_id)
    assert researcher.count('"kind": "trace"') == 40 and SECRET not in researcher
    for seat in (0, 1):
        participant = export(server, game_id, seat)
        lines = [json.loads(line) for line in participant.splitlines()]
        assert [line["record"] for line in lines][:1] == ["header"]
        assert {line["record"] for line in lines} == {"header", "event", "view"}
        assert "llm_call" not in participant and "ppppp" not in participant and "event_seq" not in participant


def test_bound_trace_holds_its_bound_for_a_record_of_many_scalars() -> None:
    """A flat record of 60,000 numbers passed the cut untouched (nearly 1 MB against a 64 KB bound)."""
    record = {"seat": 0, "event_seq": 3, "time": 1.0, **{f"k{i}": i for i in range(60_000)}}
    bounded = bound_trace(record, 65_536, [])
    assert len(json.dumps(bounded, ensure_ascii=False).encode()) <= 65_536
    assert bounded["truncated"] is True and bounded["seat"] == 0 and bounded["event_seq"] == 3


def test_bound_trace_cuts_long_strings_and_secrets() -> None:
    record = {"seat": 0, "prompt": "x" * 10_000, "items": list(range(5_000)), "key": f"Bearer {SECRET}"}
    bounded = bound_trace(record, 2048, [SECRET])
    assert len(json.dumps(bounded, ensure_ascii=False).encode()) <= 2048
    assert bounded["truncated"] is True and bounded["original_bytes"] > 10_000
    assert bounded["prompt"].endswith("…[truncated]") and bounded["key"] == "Bearer [redacted]"
    small = {"seat": 1, "note": "fine", "n": 3}
    assert bound_trace(small, 2048, [SECRET]) == small


# ------------------------------------------------------------------------------------------- LLM seats
def test_llm_seats_only_from_listed_specs_and_never_with_a_key(live: tuple[ServerProcess, Path]) -> None:
    server, _ = live
    host = Client(server.url, "model-host").connect()
    try:
        refused = create(host, "duel", ["open", bot("llm:test:other")])
        assert refused["ok"] is False and refused["error"]["code"] == "bot_not_allowed"
        assert "llm:test:allowed" in refused["error"]["message"]
        keyed = create(host, "duel", ["open", bot("llm:test:allowed?api_key=sk-live-123")])
        assert keyed["ok"] is False and keyed["error"]["code"] == "credentials_in_spec"
        assert "sk-live-123" not in json.dumps(keyed)
        assert create(host, "duel", ["open", bot("llm:test:allowed")])["ok"]
        # another hall's own LLM seat cannot be borrowed for a game in this hall
        borrowed = create(host, "duel", ["open", bot("llm:test:hall-model?tom=0")])
        assert borrowed["ok"] is False and borrowed["error"]["code"] == "bot_not_allowed"
        # a hall's own LLM seat: the operator chose it; its model is recorded with the seat
        hall_game = create(host, "llm_hall", join=True)
        assert hall_game["ok"], hall_game
        game_id = hall_game["game"]["game_id"]
        assert host.call("join", {"game_id": game_id})["status"] == "running"
        assert host.act(game_id, "propose", **DUEL_TRADE)["ok"]
        host.wait_for(
            lambda: any(e["type"] == "decided" for e in host.pushed_events(game_id)), 10, what="the decision"
        )
    finally:
        host.close()
    # the traces are stored right after the move's events (the push may come first)
    log = wait_until(lambda: (found := game_log(server, game_id)).traces and found, 10, "the seat's traces")
    assert log.header.models == [{"seat": 1, "model": "test:hall-model"}]
    assert all(t.seat == 1 for t in log.traces)
    assert SECRET not in server.log() and "sk-live-123" not in server.log()


def test_settings_refuse_keys_in_specs_and_a_paid_fallback(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    for bots, hall_seat in (
        ({"allowed_specs": ["llm:openai:gpt-4o?api_key=sk-1"]}, None),
        ({"fallback": "llm:openai:gpt-4o"}, None),
        ({}, {"kind": "bot", "bot": "llm:openai:gpt-4o?base_url=https://user:pw@host/v1"}),
    ):
        changed = json.loads(json.dumps(config))
        changed["bots"].update(bots)
        if hall_seat is not None:
            changed["halls"]["duel"]["seats"] = [{"kind": "open"}, hall_seat]
        path.write_text(yaml.safe_dump(changed), encoding="utf-8")
        with pytest.raises(SettingsError) as error:
            load_settings(path, environ={})
        assert "sk-1" not in str(error.value) and "pw@" not in str(error.value)


# ----------------------------------------------------------------------------------- observing policies
def observed_runs(records: Path, seed: int) -> list[list[dict[str, Any]]]:
    return [r for r in acted(read_records(records, "observer")) if r[0]["seed"] == seed]


@pytest.mark.slow
def test_an_observing_policy_sees_each_event_once_in_order_across_a_restart(
    tmp_path: Path, make_server: MakeServer
) -> None:
    server, records = start_server(make_server, tmp_path)
    game_seed = 77
    try:
        host = Client(server.url, "observer-host").as_researcher().connect()  # it sets the seed
        created = create(host, "duel", [bot("observer?seconds=0.25")] * 2, seed=game_seed)
        game_id = created["game"]["game_id"]
        host.close()
        wait_until(lambda: len(game_log(server, game_id).events) >= 8, 20, "some moves")
        server.kill()
        server.start()
        wait_until(lambda: game_log(server, game_id).header.status == "finished", 60, "the game to end")
        log = game_log(server, game_id)
    finally:
        server.stop()

    for seat in (0, 1):
        whole = viewer_log(log.events, seat)  # what a remote client of the seat receives, numbered n
        runs = observed_runs(records, bot_seed(game_seed, seat))
        assert len(runs) >= 2, f"seat {seat}: one policy before the restart, a rebuilt one after"
        for run in runs:
            seen = [event for line in run if "observe" in line for event in line["observe"]]
            assert all(isinstance(event.pop("time"), float) for event in seen)  # the server's times
            assert seen == whole[: len(seen)]  # each event once, in order, from n = 0
            for line in run:
                if "act" in line:  # before each move it had been shown exactly the seat's log so far
                    assert line["observed"] == line["log_size"]
        # the rebuilt policy was shown the whole log first: its first lesson reaches past the old one's
        first_lesson = next(line["observe"] for line in runs[-1] if "observe" in line)
        before = sum(len(line["observe"]) for line in runs[0] if "observe" in line)
        assert len(first_lesson) >= before
    assert "resumed" in server.log()


# ---------------------------------------------------------------------------------------- hung policies
@pytest.mark.slow
def test_a_policy_that_hangs_past_the_move_time_limit_does_not_hang_the_game(
    tmp_path: Path, make_server: MakeServer
) -> None:
    server, records = start_server(
        make_server, tmp_path, workers=2, move_time_limit_seconds=1, fallback="random"
    )
    try:
        host = Client(server.url, "hang-host").as_researcher().connect()  # it sets the seed
        hung = create(host, "duel", [bot("hang"), bot("random")], seed=3)["game"]["game_id"]
        time.sleep(0.2)
        quick = create(host, "duel", [bot("sleepy?seconds=0.05")] * 2, seed=4)["game"]["game_id"]
        host.close()
        # the hung seat's moves are played by the fallback, one per time limit
        wait_until(
            lambda: sum(e.actor == 0 for e in game_log(server, hung).events) >= 3, 15, "fallback moves"
        )
        # both decision threads hang by now, yet the other game's policy still gets threads to play on
        finished = wait_until(
            lambda: (log := game_log(server, quick)).header.status == "finished" and log, 30, "quick game"
        )
        overdue = requests.get(f"{server.url}/api/admin/games/{hung}", auth=ADMIN, timeout=30).json()
    finally:
        server.stop()
    assert server.log().count("abandoned, random plays it") >= 3
    assert overdue["bots"]["0"]["overdue"] >= 3 and "1" not in overdue["bots"]
    quick_moves = sum(1 for e in finished.events if e.actor is not None)
    sleepy_acts = [line for run in acted(read_records(records, "sleepy")) for line in run if "act" in line]
    assert len(sleepy_acts) >= quick_moves  # every move of the quick game was its own policy's
    hang_calls = [line for run in acted(read_records(records, "hang")) for line in run if "act" in line]
    seeds = {run[0]["seed"] for run in acted(read_records(records, "hang"))}
    assert len(hang_calls) >= 3 and seeds == {bot_seed(3, 0)}  # rebuilt with the same seed each move


def test_bound_trace_keeps_what_json_cannot_hold_storable() -> None:
    bounded = bound_trace({"seat": 0, "score": float("nan"), "when": float("inf"), 3: {1, 2}}, 4096)
    assert bounded == {"seat": 0, "score": None, "when": None, "3": "{1, 2}"}


def test_who_may_seat_a_restricted_policy(tmp_path: Path) -> None:
    """The rule of BotRegistry.require, with and without the hall the lobby creates the game in."""
    settings = load_settings(policy_config(tmp_path, allowed_specs=["llm:test:allowed"]), environ={})
    registry = BotRegistry(factory, settings=settings)
    assert (
        registry.require("random") == "random" and registry.require("llm:test:allowed") == "llm:test:allowed"
    )
    hall_spec = "llm:test:hall-model?tom=0"
    assert registry.require(hall_spec, hall="llm_hall") == hall_spec  # the hall's own seat
    with pytest.raises(ServerError) as error:
        registry.require(hall_spec, hall="duel")  # another hall's LLM, when the lobby says which hall
    assert error.value.code == "bot_not_allowed" and error.value.status == 403
    assert registry.require(hall_spec) == hall_spec  # no hall named: any hall's seat counts
    for spec, code in (
        ("llm:test:other", "bot_not_allowed"),
        ("LLM:test:other", "bot_not_allowed"),
        ("llm:test:allowed?token=abc", "credentials_in_spec"),
        ("random?base_url=https://me:pw@example.org", "credentials_in_spec"),
    ):
        with pytest.raises(ServerError) as error:
            registry.require(spec)
        assert error.value.code == code, spec
    with pytest.raises(ServerError) as error:  # no settings: restricted policies are never seated
        BotRegistry(factory).require("llm:test:allowed")
    assert error.value.code == "bot_not_allowed"


# ------------------------------------------------------------------------------------ several processes
def test_two_server_processes_sharing_a_store_ask_one_policy_per_move(tmp_path: Path) -> None:
    """Two Table over one SQLite file and a (nominal) message queue, as two server processes: both resume
    the same bot game, yet each move is decided by one of them only (an LLM seat is paid for once)."""
    config = write_config(tmp_path / "cfg", database_uri=f"sqlite:///{tmp_path / 'shared.db'}")
    settings = load_settings(config, environ={"TRADECRAFT__SOCKETIO__MESSAGE_QUEUE": "redis://unused"})
    asked: list[tuple[int, str]] = []
    lock = threading.Lock()

    class Counting:
        def __init__(self, seed: int) -> None:
            self.inner = make_policy("random", seed)

        def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
            key = f"{view['turn']}:{view['phase']}:{len(view.get('crafts_this_phase') or [])}"
            with lock:
                asked.append((view["seat"], key))
            time.sleep(0.02)  # long enough for the other process to try the same move
            return self.inner.act(view, legal)

    def counting_factory(spec: str, seed: int) -> Any:
        return Counting(seed)

    processes = []
    for _ in range(2):
        store = open_store(settings.database_uri)
        scheduler = DeadlineScheduler(workers=2)
        registry = BotRegistry(counting_factory, settings=settings)
        table = Table(settings, store, scheduler, registry)
        processes.append((store, table, Lobby(settings, store, table, registry)))
    try:
        first, second = processes
        creator = Principal(id="user-host", name="Host", kind="human")
        game_id = first[2].create_game("duel", creator, seats=[bot("random"), bot("random")], seed=9)[
            "game_id"
        ]
        assert second[1].recover() == 1  # the other process resumes it too (as after its restart)
        wait_until(lambda: first[0].get_game(game_id)["status"] == "finished", 30, "the bot game to end")
    finally:
        for store, table, _ in processes:
            table.close()
            store.close()
    records = open_store(settings.database_uri)
    try:
        moves = [r for r in records.load_events(game_id) if r["actor"] is not None]
    finally:
        records.close()
    assert len(asked) == len(set(asked)), "a move was decided twice"
    assert len(asked) == len(moves)  # random bots are always legal: one decision per stored move


def test_a_learning_bot_keeps_one_policy_for_the_whole_game(tmp_path: Path) -> None:
    """A ToM-1 bot learns from what it sees: the server builds its policy once per seat (seeded
    bot_seed(game seed, seat)) and keeps it, instead of a fresh one per move."""
    config = write_config(tmp_path / "cfg", database_uri=f"sqlite:///{tmp_path / 'tom.db'}")
    settings = load_settings(config, environ={})
    built: list[tuple[str, int]] = []
    seen: dict[int, list[int]] = {}

    class Watched:
        def __init__(self, spec: str, seed: int) -> None:
            self.inner, self.seed = make_policy(spec, seed), seed

        def observe(self, events: list[dict[str, Any]]) -> None:
            seen.setdefault(self.seed, []).extend(event["n"] for event in events)
            self.inner.observe(events)

        def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
            return self.inner.act(view, legal)

    def watched_factory(spec: str, seed: int) -> Any:
        built.append((spec, seed))
        return Watched(spec, seed)

    store = open_store(settings.database_uri)
    registry = BotRegistry(watched_factory, settings=settings)
    table = Table(settings, store, DeadlineScheduler(workers=2), registry)
    try:
        creator = Principal(id="user-tom", name="Tom", kind="human")
        lobby = Lobby(settings, store, table, registry)
        game_id = lobby.create_game("duel", creator, seats=[bot("tom1"), bot("tom1")], seed=21)["game_id"]
        wait_until(lambda: store.get_game(game_id)["status"] == "finished", 60, "the ToM game to end")
        moves = [r for r in store.load_events(game_id) if r["actor"] is not None]
        # each move went in under a client action id named after it: a second answer would be recognised
        first_move = store.recall_action(game_id, bot_action_id(0, "1:trade_propose:0"))
        assert first_move is not None and first_move["response"] == {"ok": True, "bot": "tom1", "seat": 0}
    finally:
        table.close()
        store.close()
    played = [entry for entry in built if entry[1] != 0]  # seed 0: the lobby checking the spec
    assert sorted(played) == sorted([("tom1", bot_seed(21, 0)), ("tom1", bot_seed(21, 1))])
    assert len(moves) > len(played)  # many moves, one policy per seat
    for seat in (0, 1):
        numbers = seen[bot_seed(21, seat)]
        assert numbers == list(range(len(numbers)))  # each of its events once, in order


# ----------------------------------------------------------------------------------- a real LLM agent
@pytest.mark.slow
def test_a_hall_seats_real_llm_agents_whose_traces_reach_only_the_researcher(
    tmp_path: Path, make_server: MakeServer
) -> None:
    """The installed `llm` policy (LangChain ChatOpenAI) against the project's OpenAI-compatible test
    server, seated by a hall of a live run_server.py; the key comes from the environment only."""
    with OpenAITestServer(policy=ScriptedPlayer()) as model_server:
        path = write_config(tmp_path)
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = "llm:openai:test-model?timeout=10&backoff=0.01"
        config["halls"]["llm_duel"] = {
            **config["halls"]["duel"],
            "seats": [bot(spec), bot(spec)],
            "allow_custom_seats": False,
            "game": {"max_turns": 2},
        }
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": model_server.base_url}
        server = make_server(path, env=env)
        try:
            host = Client(server.url, "model-watcher").connect()
            created = create(host, "llm_duel")
            assert created["ok"], created
            game_id = created["game"]["game_id"]
            host.close()
            log = wait_until(
                lambda: (found := game_log(server, game_id)).header.status == "finished" and found,
                60,
                "the LLM game to end",
                pause=0.3,
            )
            log = wait_until(  # the last move's traces are stored right after its events
                lambda: (
                    (found := game_log(server, game_id)).traces
                    and max(t.event_seq or -1 for t in found.traces)
                    >= max(e.seq for e in found.events if e.actor is not None)
                    and found
                ),
                10,
                "the last move's traces",
            )
            researcher = export(server, game_id)
            participants = [export(server, game_id, seat) for seat in (0, 1)]
            server_log = server.log()
        finally:
            server.stop()
    assert model_server.requests, "the agents asked the model"
    calls = [t for t in log.traces if (t.model_extra or {}).get("trace") == "llm_call"]
    assert calls and {t.seat for t in calls} == {0, 1}
    by_seq = {e.seq: e for e in log.events}
    linked = [t for t in log.traces if t.event_seq is not None]
    assert linked and all(by_seq[t.event_seq].actor == t.seat for t in linked)
    assert log.header.models == [
        {"seat": 0, "model": "openai:test-model"},
        {"seat": 1, "model": "openai:test-model"},
    ]
    for text in (researcher, server_log, *participants):
        assert SECRET not in text
    database = b"".join(p.read_bytes() for p in (tmp_path / "data").glob("tradecraft.db*"))
    assert SECRET.encode() not in database
    for participant in participants:
        assert {json.loads(line)["record"] for line in participant.splitlines()} == {
            "header",
            "event",
            "view",
        }
        assert "llm_call" not in participant
