"""Local connections and the policy driver: protocol-shaped answers, typed refusals that change nothing,
queries through the server's own query code, several seats of one game played from threads."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any

import pytest

from agents.bots.registry import make_policy
from agents.connection import MAX_ACTION_BYTES, SeatConnection
from agents.driver import SeatOutcome, run_seat, take_turn
from agents.local_connection import LocalConnection, LocalTable
from craft_rules.loader import load_rule_set
from craft_rules.tasks import iter_instances
from server.game import GameSettings, viewer_log
from server.game.legal import fallback_action
from server.game.policy import FALLBACK
from server.game.queries import run_query

ENVELOPE_KEYS = {"game_id", "hall", "status", "seat", "log_size", "deadline", "seats", "view"}


@pytest.fixture(scope="module")
def rules():
    return load_rule_set("minecraft")


@pytest.fixture(scope="module")
def instance():
    return next(iter(iter_instances("minecraft", "1p_v_1p")))


def new_table(instance, rules, seed: int = 1, **settings: Any) -> LocalTable:
    return LocalTable.new(instance, GameSettings(**settings), rules, seed)


def test_is_a_seat_connection(instance, rules) -> None:
    assert isinstance(new_table(instance, rules).connection(0), SeatConnection)


def test_ack_is_the_envelope_plus_the_seats_new_events(instance, rules) -> None:
    table = new_table(instance, rules)
    me, other = table.connections()
    assert [e["n"] for e in me.events()] == [0, 1]
    ack = me.act(
        {"type": "propose", "to": 1, "offer": {"string": 1}, "request": {"coal": 1}, "message": "hi"}
    )
    assert ack["ok"] and set(ack) >= ENVELOPE_KEYS and ack["seat"] == 0 and ack["status"] == "running"
    assert [e["type"] for e in ack["events"]] == ["proposed"]
    assert [e["n"] for e in ack["events"]] == [2] and ack["log_size"] == 3
    # events() hands out the same records (once), numbered exactly as viewer_log numbers the seat's log
    assert me.events() == ack["events"] == viewer_log(table.game.events, 0)[2:]
    assert me.events() == []
    assert ack["view"] == me.view() and not ack["view"]["your_turn"]
    assert other.view()["your_turn"] and other.view()["legal_actions"] == ["decide", "resign"]


@pytest.mark.parametrize(
    ("action", "code"),
    [
        ({"type": "pass"}, "not_your_turn"),  # seat 1 is not the proposer
        ({"type": "decide", "accept": "maybe"}, "invalid_action"),
        ('{"type": "craft"', "invalid_action"),  # not JSON
        ({"type": "timeout", "phase": "trade_propose", "turn": 1}, "not_allowed"),
        ({"type": "propose", "to": 0, "offer": {"x" * 20_000: 1}, "request": {}}, "payload_too_large"),
    ],
)
def test_refused_actions_are_typed_and_change_nothing(instance, rules, action: Any, code: str) -> None:
    table = new_table(instance, rules)
    seat1 = table.connection(1)
    before = table.game.state_digest(), len(table.game.events)
    answer = seat1.act(action)
    assert answer["ok"] is False and answer["error"]["code"] == code
    assert set(answer["error"]) == {"code", "message", "details"} and answer["error"]["message"]
    assert (table.game.state_digest(), len(table.game.events)) == before
    if code == "payload_too_large":
        assert answer["error"]["details"]["limit"] == MAX_ACTION_BYTES


def test_queries_answer_like_the_server_code(instance, rules) -> None:
    table = new_table(instance, rules)
    conn = table.connection(1)
    for query in (
        {"type": "possible_crafts", "limit": 5},
        {"type": "craftable"},
        {"type": "item_info", "item": "torch"},
        {"type": "history", "since_n": 0, "limit": 2},
    ):
        answer = conn.query(query)
        assert answer == {
            "ok": True,
            "game_id": table.game_id,
            "seat": 1,
            "answer": run_query(table.game, 1, query),
        }
    refused = conn.query({"type": "item_info", "item": "no_such_item"})
    assert refused["ok"] is False and refused["error"]["code"] == "unknown_item"
    assert conn.query({"type": "item_info"})["error"]["code"] == "invalid_query"


def test_a_query_reads_only_the_askers_own_crafting_hand(instance, rules) -> None:
    table = new_table(instance, rules)
    me, other = table.connections()
    me.act({"type": "pass"})
    assert table.game.phase == "craft"
    crafted = me.act({"type": "craft", "recipe": "oak_planks", "runs": 1})
    assert crafted["ok"], crafted
    mine = me.query({"type": "possible_crafts"})["answer"]
    theirs = other.query({"type": "possible_crafts"})["answer"]
    assert mine["hand"] == theirs["hand"] == "crafting"
    assert any(c["result"] == "stick" for c in mine["crafts"])  # from the planks only seat 0 holds
    assert not any(c["recipe"] == "oak_planks" for c in theirs["crafts"])


def test_times_are_stamped_with_a_clock(instance, rules) -> None:
    ticks = iter(range(100, 10_000))
    table = LocalTable.new(instance, GameSettings(), rules, 0, clock=lambda: float(next(ticks)))
    conn = table.connection(0)
    assert [e["time"] for e in conn.events()] == [100.0, 100.0]
    ack = conn.act({"type": "pass"})
    assert {e["time"] for e in ack["events"]} == {101.0}
    assert conn.query({"type": "history", "limit": 1})["answer"]["events"][0]["time"] == 100.0


def test_seats_played_from_threads_see_each_event_once(instance, rules) -> None:
    table = new_table(instance, rules, seed=5, max_turns=8)
    seen: dict[int, list[dict[str, Any]]] = {0: [], 1: []}

    class Recorder:
        def __init__(self, seat: int) -> None:
            self.bot = make_policy("random", seat)
            self.seat = seat

        def observe(self, events: list[dict[str, Any]]) -> None:
            seen[self.seat].extend(events)

        def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
            return self.bot.act(view, legal)

    outcomes: dict[int, SeatOutcome] = {}
    threads = [
        threading.Thread(
            target=lambda s=s: outcomes.__setitem__(s, run_seat(Recorder(s), table.connection(s)))
        )
        for s in (0, 1)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert table.game.finished and all(not t.is_alive() for t in threads)
    for seat in (0, 1):
        assert seen[seat] == viewer_log(table.game.events, seat)  # every event once, in order
        assert outcomes[seat].final_view["finished"] and not outcomes[seat].fallbacks
    assert outcomes[0].actions + outcomes[1].actions == sum(
        1 for e in table.game.events if e.actor is not None
    )


class Stubborn:
    """Always sends the same illegal proposal (an item nobody holds), keeps a trace of each try."""

    def __init__(self) -> None:
        self.tries = 0
        self.traces: list[dict[str, Any]] = []

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        self.tries += 1
        self.traces.append({"kind": "decision", "try": self.tries})
        if "report_tom" in legal or "propose" not in legal:
            return fallback_action(view) or {"type": "resign"}
        return {"type": "propose", "to": 1 - view["seat"], "offer": {"diamond_block": 64}, "request": {}}

    def drain_traces(self) -> list[dict[str, Any]]:
        out, self.traces = self.traces, []
        return out


def test_refusals_are_retried_then_a_logged_fallback_goes_out(instance, rules, caplog) -> None:
    table = new_table(instance, rules)
    conn = table.connection(0)
    policy = Stubborn()
    outcome = SeatOutcome(seat=0)
    before = table.game.state_digest()
    assert take_turn(policy, conn, outcome, on_refusal=replace(FALLBACK, retries=2))
    assert policy.tries == 3 and len(outcome.refusals) == 3
    assert {r["error"]["code"] for r in outcome.refusals} == {"item_not_held"}
    assert [f["action"] for f in outcome.fallbacks] == [{"type": "pass"}]
    assert table.game.state_digest() != before and table.game.phase == "craft"  # only the pass applied
    assert "fallback pass after 3 failed attempt(s): item_not_held" in caplog.text
    # traces carry the seat and, for the applied move, the number of the first event it produced
    assert [t["try"] for t in outcome.traces] == [1, 2, 3] and {t["seat"] for t in outcome.traces} == {0}
    assert all(t["event_n"] is None for t in outcome.traces)  # the policy's own tries were all refused


def test_a_policy_that_raises_gets_the_fallback(instance, rules) -> None:
    class Broken:
        def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
            raise RuntimeError("model unavailable")

    table = new_table(instance, rules, max_turns=2)
    results: dict[int, SeatOutcome] = {}
    thread = threading.Thread(
        target=lambda: results.__setitem__(1, run_seat(make_policy("random", 3), table.connection(1)))
    )
    thread.start()
    outcome = run_seat(Broken(), table.connection(0), on_refusal=replace(FALLBACK, retries=1))
    thread.join(timeout=30)
    assert table.game.finished and outcome.final_view["finished"]
    assert outcome.fallbacks and all(len(f["after"]) == 2 for f in outcome.fallbacks)
    assert {f["after"][0]["error"]["code"] for f in outcome.fallbacks} == {"policy_failed"}
    assert outcome.actions == len(outcome.fallbacks)


def test_fallback_actions_are_legal_in_every_phase(instance, rules) -> None:
    tom = LocalTable.new(instance, GameSettings(tom_orders=[[0, 1, 2], [0]]), rules, 0)
    for seat, conn in enumerate(tom.connections()):
        action = fallback_action(conn.view())
        assert action is not None and action["type"] == "report_tom"
        assert conn.act(action)["ok"], (seat, action)
    no_pass = LocalTable.new(instance, GameSettings(allow_pass=False), rules, 0)
    action = fallback_action(no_pass.connection(0).view())
    assert action["type"] == "propose" and no_pass.connection(0).act(action)["ok"]
    assert fallback_action(no_pass.connection(1).view()) == {"type": "decide", "accept": False, "message": ""}
    assert fallback_action(no_pass.connection(0).view()) is None  # not awaited


def test_not_a_seat(instance, rules) -> None:
    table = new_table(instance, rules)
    with pytest.raises(Exception) as err:
        LocalConnection(table, 2)
    assert getattr(err.value, "code", None) == "not_a_player"


def test_wait_for_turn_times_out_and_wakes(instance, rules) -> None:
    table = new_table(instance, rules)
    me, other = table.connections()
    assert other.wait_for_turn(timeout=0.05) is False
    timer = threading.Timer(
        0.1, lambda: me.act({"type": "propose", "to": 1, "offer": {"string": 1}, "request": {}})
    )
    timer.start()
    assert other.wait_for_turn(timeout=10) is True
    timer.join()
    assert json.dumps(other.view()["pending_proposal"]["offer"]) == '{"string": 1}'


def test_a_policy_with_a_refused_hook_hears_the_error_and_corrects_itself(instance, rules) -> None:
    class Learner:
        def __init__(self) -> None:
            self.heard: list[dict[str, Any]] = []

        def refused(self, error: dict[str, Any]) -> None:
            self.heard.append(error)

        def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
            if not self.heard:
                return {"type": "propose", "to": 1, "offer": {"diamond_block": 1}, "request": {}}
            return {"type": "propose", "to": 1, "offer": {"string": 1}, "request": {}}

    table = new_table(instance, rules)
    policy, outcome = Learner(), SeatOutcome(seat=0)
    assert take_turn(policy, table.connection(0), outcome)
    assert [e["code"] for e in policy.heard] == ["item_not_held"] and not outcome.fallbacks
    assert table.game.pending_proposal["offer"] == {"string": 1}
