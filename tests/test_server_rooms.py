"""Table, lobby, timers and auth in-process (no sockets): several "workers" (Table objects) share one SQLite
file exactly as several server processes do, so races and catch-up are tested deterministically and fast."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import DUEL, DUEL_CRAFTS, DUEL_TRADE, write_config
from table_support import ADA, BOB, CY, Worker

from agents.bots import RandomBot
from server.game.errors import GameError
from server.store import open_store
from server.table.config import Settings, load_settings
from server.table.errors import ServerError
from server.table.live import seat_claim_key
from server.table.policies import BotRegistry, bot_seed
from server.table.principal import Principal
from server.table.timers import DeadlineScheduler
from server.web.auth import (
    basic_password,
    bearer_token,
    check_admin_password,
    clean_display_name,
    principal_for_token,
    secret_key,
)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    config = write_config(tmp_path / "cfg", database_uri=f"sqlite:///{tmp_path / 'shared.db'}")
    return load_settings(config, environ={})


@pytest.fixture
def workers(settings: Settings) -> Iterator[list[Worker]]:
    made = [Worker(settings), Worker(settings)]
    yield made
    for worker in made:
        worker.close()


def duel_on_two_workers(a: Worker, b: Worker) -> str:
    game_id = a.lobby.create_game("duel", ADA, join=True)["game_id"]
    assert b.lobby.join(game_id, BOB) == 1
    return game_id


def test_two_workers_play_one_game_without_forking(workers: list[Worker], settings: Settings) -> None:
    a, b = workers
    game_id = duel_on_two_workers(a, b)
    assert a.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE})["ok"]  # A catches up on B's start
    assert b.table.act(game_id, BOB, {"type": "decide", "accept": True})["ok"]

    # concurrent crafting through both workers: every action lands, on one contiguous log
    errors: list[BaseException] = []

    def crafts(worker: Worker, who: Principal, actions: list[dict[str, Any]]) -> None:
        for action in actions:
            try:
                worker.table.act(game_id, who, {"type": "craft", **action})
            except BaseException as exc:
                errors.append(exc)

    seat0 = [{"recipe": "stick", "runs": "1/40"}] * 20 + [DUEL_CRAFTS[0][1]]
    seat1 = [{"recipe": "shears", "runs": "1/4"}] * 4
    threads = [
        threading.Thread(target=crafts, args=(a, ADA, seat0)),
        threading.Thread(target=crafts, args=(b, BOB, seat1)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert b.table.act(game_id, BOB, {"type": "finish_crafting"})["ok"]
    final = a.table.act(game_id, ADA, {"type": "finish_crafting"})
    assert final["status"] == "finished" and final["view"]["winners"] == [0, 1]

    records = a.store.load_events(game_id)
    assert [r["seq"] for r in records] == list(range(len(records)))
    assert sum(r["type"] == "crafted" for r in records) == len(seat0) + len(seat1)
    fresh = Worker(settings)
    try:
        digests = {w.table.researcher(game_id)["view"]["log_digest"] for w in (a, b, fresh)}
    finally:
        fresh.close()
    assert len(digests) == 1


def _rival_appends_first(a: Worker, b: Worker, game_id: str, races: int | None) -> list[int]:
    """Make worker A win worker B's next ``races`` append races (every one when None): just before each of
    B's appends, Ada crafts a sliver through A, so B's batch finds its sequence number taken. Deterministic,
    where two threads racing win or lose by the scheduler's whims. Returns the count of races A won."""
    real_append = b.store.append_events
    won = [0]

    def append_after_a_rival(game: str, events: Any) -> list[Any]:
        if races is None or won[0] < races:
            won[0] += 1
            assert a.table.act(game_id, ADA, {"type": "craft", "recipe": "stick", "runs": "1/1000"})["ok"]
        return real_append(game, events)

    b.store.append_events = append_after_a_rival  # type: ignore[method-assign]
    return won


def test_an_action_losing_a_burst_of_append_races_still_lands(workers: list[Worker]) -> None:
    """Another worker writing a burst (Ada's crafts through A) wins every race it runs while the burst
    lasts: Bob's craft through B lands once the burst is over, however many races that takes within
    APPLY_RETRY_SECONDS (8 tries, the old bound, ran out within 12 lost races)."""
    a, b = workers
    game_id = duel_on_two_workers(a, b)
    assert a.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE})["ok"]
    assert b.table.act(game_id, BOB, {"type": "decide", "accept": True})["ok"]
    won = _rival_appends_first(a, b, game_id, races=12)
    ack = b.table.act(game_id, BOB, {"type": "craft", "recipe": "shears", "runs": "1/4"})
    assert ack["ok"] and won[0] == 12
    records = a.store.load_events(game_id)
    assert [r["seq"] for r in records] == list(range(len(records)))
    crafted = [r["actor"] for r in records if r["type"] == "crafted"]
    assert crafted == [0] * 12 + [1]  # Bob's craft once, after the burst


def test_an_action_that_never_wins_a_race_is_refused_typed_and_changes_nothing(
    workers: list[Worker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("server.table.actions.APPLY_RETRY_SECONDS", 0.3)
    a, b = workers
    game_id = duel_on_two_workers(a, b)
    assert a.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE})["ok"]
    assert b.table.act(game_id, BOB, {"type": "decide", "accept": True})["ok"]
    won = _rival_appends_first(a, b, game_id, races=None)
    started = time.monotonic()
    with pytest.raises(ServerError) as refused:
        b.table.act(game_id, BOB, {"type": "craft", "recipe": "shears", "runs": "1/4"})
    assert refused.value.code == "conflict" and 0.3 <= time.monotonic() - started < 2
    assert won[0] >= 2
    records = a.store.load_events(game_id)
    assert not any(r["type"] == "crafted" and r["actor"] == 1 for r in records)
    assert (
        b.table.view(game_id, BOB)["view"]["crafting_hand"]
        == a.table.view(game_id, BOB)["view"]["crafting_hand"]
    )


def test_retried_client_action_gets_the_same_answer_once(workers: list[Worker]) -> None:
    a, b = workers
    game_id = duel_on_two_workers(a, b)
    first = a.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE}, client_action_id="c-1")
    again = b.table.act(
        game_id, ADA, {"type": "propose", **DUEL_TRADE}, client_action_id="c-1"
    )  # other worker
    assert json.loads(json.dumps(first)) == again
    assert sum(r["type"] == "proposed" for r in a.store.load_events(game_id)) == 1
    # ids are per caller: Bob's "c-1" is his own (and his propose is refused: not his turn)
    with pytest.raises(GameError) as refused:
        a.table.act(game_id, BOB, {"type": "propose", **DUEL_TRADE, "to": 0}, client_action_id="c-1")
    assert refused.value.code == "wrong_phase"
    with pytest.raises(ServerError, match="client_action_id"):
        a.table.act(game_id, ADA, {"type": "pass"}, client_action_id="x" * 200)


def test_stale_deadline_is_ignored_and_a_current_one_applies_the_policy(workers: list[Worker]) -> None:
    a, b = workers
    game_id = duel_on_two_workers(a, b)
    before = len(a.store.load_events(game_id))
    a.table._deadline_expired(game_id, "craft", 1)  # a timer of another phase fires late: nothing happens
    b.table._deadline_expired(game_id, "trade_propose", 7)  # ... or of another turn
    assert len(a.store.load_events(game_id)) == before
    a.table._deadline_expired(game_id, "trade_propose", 1)
    b.table._deadline_expired(game_id, "trade_propose", 1)  # the same timer in the second worker: refused
    timeouts = [r for r in a.store.load_events(game_id) if r["type"] == "timeout"]
    assert len(timeouts) == 1 and timeouts[0]["payload"]["policy"] == "pass"
    assert a.table.view(game_id, ADA)["view"]["phase"] == "craft"


def test_the_last_seat_goes_to_exactly_one_of_two_racing_workers(workers: list[Worker]) -> None:
    a, b = workers
    game_id = a.lobby.create_game("duel", ADA, join=True)["game_id"]
    results: dict[str, Any] = {}
    barrier = threading.Barrier(2)

    def join(worker: Worker, who: Principal) -> None:
        barrier.wait()
        try:
            results[who.id] = worker.lobby.join(game_id, who)
        except ServerError as err:
            results[who.id] = err.code

    threads = [threading.Thread(target=join, args=(a, BOB)), threading.Thread(target=join, args=(b, CY))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(map(str, results.values())) == ["1", "game_full"], results
    winner = BOB if results[BOB.id] == 1 else CY
    assert json.loads(a.store.get_value(seat_claim_key(game_id, 1)) or "{}")["user_id"] == winner.id
    assert a.table.view(game_id, winner)["status"] == "running"


def test_recovery_starts_a_game_whose_seats_were_all_claimed_before_a_crash(settings: Settings) -> None:
    first = Worker(settings)
    game_id = first.lobby.create_game("duel", ADA, join=True)["game_id"]
    # the claim of the last seat was written, then the process died before starting the game
    first.store.set_value_if_absent(
        seat_claim_key(game_id, 1), json.dumps({"user_id": BOB.id, "name": BOB.name, "kind": "human"})
    )
    first.close()
    restarted = Worker(settings)
    try:
        assert restarted.table.recover() == 0  # no running game yet ...
        view = restarted.table.view(game_id, BOB)  # ... but the waiting one was started
        assert (
            view["status"] == "running" and view["seat"] == 1 and view["view"]["target"] == DUEL["targets"][1]
        )
    finally:
        restarted.close()


def test_instances_sequential_across_workers_and_random_reproducible(tmp_path: Path) -> None:
    root = tmp_path / "instances" / "minecraft" / "1p_v_1p"
    root.mkdir(parents=True)
    (root / "three.json").write_text(json.dumps([DUEL, DUEL, DUEL]), encoding="utf-8")
    halls = {
        "seq": {"players": 2, "instances": {"choice": "sequential", "root": str(tmp_path / "instances")}},
        "rnd": {
            "players": 2,
            "instances": {"choice": "random", "seed": 11, "root": str(tmp_path / "instances")},
        },
        "free": {"players": 2, "instances": {"choice": "random", "root": str(tmp_path / "instances")}},
    }

    def run(db: str) -> tuple[list[str], list[str], list[Any]]:
        settings = load_settings(
            write_config(tmp_path / db),
            environ={},
            overrides={"database": {"uri": f"sqlite:///{tmp_path / db}.db"}},
        )
        settings = settings.model_copy(update={"halls": Settings.model_validate({"halls": halls}).halls})
        pair = [Worker(settings), Worker(settings)]
        try:

            def drawn(hall: str, i: int) -> str:
                created = pair[i % 2].lobby.create_game(hall, ADA)
                assert created["instance_id"] is None  # players learn it only when the game is over
                return str(pair[0].store.get_game(created["game_id"])["instance_id"])

            seq = [drawn("seq", i) for i in range(5)]
            rnd = [drawn("rnd", i) for i in range(6)]
            game = pair[0].lobby.create_game("free", ADA)
            choice = pair[0].store.get_game(game["game_id"])["instance_choice"]
        finally:
            for worker in pair:
                worker.close()
        return seq, rnd, choice

    seq, rnd, choice = run("one")
    stems = [i.rsplit("#", 1)[1] for i in seq]
    assert stems == ["0", "1", "2", "0", "1"]
    assert run("two")[1] == rnd  # the hall seed makes the k-th game's instance reproducible
    assert choice["choice"] == "random" and isinstance(choice["seed"], int)  # a fresh seed is recorded


def test_abort_stops_a_game(workers: list[Worker]) -> None:
    a, b = workers
    game_id = duel_on_two_workers(a, b)
    a.table.abort(game_id, "test")
    for worker in (a, b):  # b learns it from the store (multi-worker check runs with a message queue only)
        worker.table.settings.socketio.message_queue = "redis://unused"
        with pytest.raises(ServerError) as refused:
            worker.table.act(game_id, ADA, {"type": "pass"})
        assert refused.value.code == "game_over"
    assert a.store.get_game(game_id)["status"] == "aborted"
    with pytest.raises(ServerError, match="already aborted"):
        a.table.abort(game_id, "again")


def test_refusals_are_typed(workers: list[Worker]) -> None:
    a, _ = workers
    with pytest.raises(ServerError) as err:
        a.table.get("nope")
    assert err.value.code == "unknown_game" and err.value.status == 404
    with pytest.raises(ServerError) as err:
        a.lobby.create_game("duel", ADA, seats=["open", {"kind": "wizard"}])
    assert err.value.code == "invalid_seats"
    with pytest.raises(ServerError) as err:  # an exact instance would tell ADA every target
        a.lobby.create_game("duel", ADA, instance_id="minecraft/1p_v_1p/servertest#0")
    assert err.value.code == "instance_choice_forbidden" and err.value.status == 403
    admin = Principal(id="token:admin", name="admin", kind="agent", scopes=frozenset({"play", "admin"}))
    with pytest.raises(ServerError) as err:
        a.lobby.create_game("duel", admin, instance_id="minecraft/1p_v_1p/elsewhere#3")
    assert err.value.code == "unknown_instance"
    game_id = a.lobby.create_game("duel", ADA, seats=["open", "agent"])["game_id"]
    with pytest.raises(ServerError) as err:
        a.lobby.join(game_id, BOB, seat=1)
    assert err.value.code == "seat_kind"
    agent = Principal(id="token:t1", name="bot", kind="agent")
    assert a.lobby.join(game_id, agent) == 1
    with pytest.raises(ServerError) as err:
        a.table.act(game_id, agent, {"type": "propose", **DUEL_TRADE}, seat=0)
    assert err.value.code == "not_your_seat"


# ------------------------------------------------------------------------------------------ timers
def test_scheduler_runs_replaces_and_cancels() -> None:
    scheduler = DeadlineScheduler(workers=2)
    fired: list[str] = []
    done = threading.Event()
    try:
        now = time.time()
        scheduler.schedule("a", now + 0.05, lambda: fired.append("a-old"))
        scheduler.schedule("a", now + 0.10, lambda: fired.append("a"))  # replaces the first
        scheduler.schedule("b", now + 0.02, lambda: fired.append("b"))
        scheduler.schedule("c", now + 0.03, lambda: fired.append("c"))
        scheduler.cancel("c")
        scheduler.schedule("boom", now, lambda: 1 / 0)  # a failing callback is logged, nothing else
        scheduler.schedule("d", now + 0.15, done.set)
        assert scheduler.when("a") == pytest.approx(now + 0.10)
        assert done.wait(2)
        time.sleep(0.05)
        assert fired == ["b", "a"]
        assert scheduler.pending() == {}
    finally:
        scheduler.close()


# -------------------------------------------------------------------------------------------- auth
def test_auth_helpers(tmp_path: Path, settings: Settings) -> None:
    assert clean_display_name("  <b>Ada</b> ") == "<b>Ada</b>"  # kept as text; pages escape it
    for bad in ("", " ", "x" * 41, "tab\there", 42):
        with pytest.raises(ServerError) as err:
            clean_display_name(bad)
        assert err.value.code == "invalid_name"
    assert bearer_token({"Authorization": "Bearer tc_abc"}) == "tc_abc"
    assert bearer_token({"Authorization": "Basic Zm9vOmJhcg=="}) is None
    assert basic_password({"Authorization": "Basic YWRtaW46czNjcmV0"}) == "s3cret"
    assert check_admin_password(settings, "test-admin-password")
    assert not check_admin_password(settings, "wrong") and not check_admin_password(Settings(), "")
    store = open_store(f"sqlite:///{tmp_path / 'auth.db'}")
    other = open_store(f"sqlite:///{tmp_path / 'auth.db'}")
    try:
        key = secret_key(Settings(), store)
        assert len(key) > 40 and secret_key(Settings(), other) == key  # generated once, shared by workers
        plaintext, record = store.create_token("bot", ["play"])
        principal = principal_for_token(store, plaintext)
        assert (
            principal.id == f"token:{record['id']}" and principal.kind == "agent" and not principal.is_admin
        )
        store.revoke_token(record["id"])
        with pytest.raises(ServerError) as err:
            principal_for_token(store, plaintext)
        assert err.value.code == "invalid_token" and plaintext not in err.value.message
    finally:
        store.close()
        other.close()


def test_bot_seeds_and_registry() -> None:
    assert bot_seed(1, 0, 5) == bot_seed(1, 0, 5) != bot_seed(1, 1, 5)
    registry = BotRegistry()
    assert "random" in registry.names()
    with pytest.raises(ServerError) as err:
        registry.require("nobody")
    assert err.value.code == "unknown_bot" and "random" in err.value.message
    assert isinstance(registry.make("random", 3), RandomBot)


def test_outsiders_get_no_trade_deadline_and_no_gaps(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg", database_uri=f"sqlite:///{tmp_path / 'd.db'}", deadline=60)
    worker = Worker(load_settings(config, environ={}))
    try:
        game_id = worker.lobby.create_game("slow", ADA, join=True)["game_id"]
        worker.lobby.join(game_id, BOB)
        proposer = worker.table.view(game_id, ADA)
        spectator = worker.table.view(game_id, None)
        assert proposer["deadline"] is not None and proposer["view"]["phase"] == "trade_propose"
        assert spectator["deadline"] is None and spectator["view"]["phase"] == "trade"
        worker.table.act(game_id, ADA, {"type": "propose", **DUEL_TRADE})
        addressee = worker.table.view(game_id, BOB)
        assert addressee["deadline"] is not None and addressee["view"]["phase"] == "trade_decide"
        after = worker.table.view(game_id, None)
        assert after["deadline"] is None and after["log_size"] == spectator["log_size"]  # nothing to see
        log = worker.table.events_since(game_id, BOB, -1)
        assert [e["n"] for e in log["events"]] == list(range(log["log_size"]))
        assert all("seq" not in e for e in log["events"])
        with pytest.raises(ServerError):
            worker.table.events_since(game_id, BOB, -5)
    finally:
        worker.close()


def test_the_live_game_path_imports_neither_click_nor_analysis() -> None:
    """The table loads instances from craft_rules, not through the export module (click, analysis)."""
    probe = (
        "import sys, server.table.master, server.web.lobby; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'analysis')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
