"""Bounded generation and bad input, the real ChatOpenAI against the project's test server: max_tokens
per phase and stop sequences on the wire, a new seed per attempt, the warm-up allowance on the first
call only, every attempt in the trace; whatever a model writes is bounded and answered with a typed
error; the fallback follows the model's readable intent and never contradicts it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_support import (
    Proposer,
    llm_agent,
    play_llm,
    trace_records,
)

from agents.bots.registry import make_policy
from agents.llm.extract import MAX_TEXT_CHARS
from agents.llm.modes import JSON_MODE_STOP
from agents.llm.probe import clear_probe_cache
from agents.testing.openai_server import OpenAITestServer, Reply
from agents.testing.scripted_player import ScriptedPlayer


def envelope(name: str, args: dict[str, Any]) -> str:
    return json.dumps({"tool": name, "arguments": args})


SCRIPTED = ScriptedPlayer(accept_every=1)


def in_text(request: dict[str, Any]) -> Reply:
    """The scripted player's call as the envelope in the reply text."""
    name, args = SCRIPTED.decide(request)
    return Reply(content=envelope(name, args))


def phase_of(request: dict[str, Any]) -> str:
    last = [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
    for phase in ("report_tom", "decide", "craft", "propose"):
        if f"Your move: {phase}" in last or (phase == "craft" and "craft phase" in last):
            return phase
    return "?"


@pytest.mark.parametrize("cot", [False, True])
def test_max_tokens_per_phase_and_the_modes_stop_sequences_go_on_the_wire(cot: bool) -> None:
    with OpenAITestServer(policy=in_text) as server:
        agent = llm_agent(server, tool_mode="prompted", reasoning="cot" if cot else "direct")
        play_llm(agent, opponent=Proposer(), max_turns=2, tom=[[0, 1], []])
        requests = server.requests
    extra = 600 if cot else 0
    expected = {
        "report_tom": 800 + extra,
        "propose": 400 + extra,
        "decide": 250 + extra,
        "craft": 300 + extra,
    }
    seen = {phase_of(r): r for r in requests}
    assert {"report_tom", "decide", "craft"} <= set(seen)
    for phase, request in seen.items():
        if phase in expected:
            # ChatOpenAI's field, and the one llama.cpp and Ollama read
            assert request["max_completion_tokens"] == request["max_tokens"] == expected[phase], phase
            assert request["stop"] == list(JSON_MODE_STOP)


def test_one_max_tokens_option_bounds_every_answer_and_native_mode_sends_no_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-placeholder-0000")
        agent = make_policy(f"llm:openai:test-model?base_url={server.base_url}&max_tokens=120&cot=1", 0)
        play_llm(agent, max_turns=1, tom=[[0], []])
        requests = server.requests
    game = [r for r in requests if "confirm" not in json.dumps(r.get("tools", []))]
    assert game and {r["max_completion_tokens"] for r in game} == {120}
    assert all("stop" not in r for r in game)


def test_every_attempt_gets_its_own_seed_derived_from_the_agents_seed() -> None:
    def run(seed: int) -> list[int]:
        script = [
            Reply(status=500, content="busy"),
            Reply(content="hmm"),
            Reply(tool_calls=[("pass", {})]),
        ]
        with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
            play_llm(llm_agent(server, seed=seed, tool_mode="native"), max_turns=1)
            return [r["seed"] for r in server.requests[:3]]

    first = run(7)
    assert len(set(first)) == 3  # a provider retry and a re-ask each draw anew
    assert run(7) == first and run(8) != first


@pytest.mark.slow
def test_the_warm_up_allowance_covers_the_first_call_only_and_every_attempt_is_traced() -> None:
    script = [
        Reply(delay=1.4, tool_calls=[("pass", {})], usage=(3600, 5)),  # a cold first call
        Reply(delay=1.4, tool_calls=[("finish_crafting", {})]),  # as slow later: timed out
        Reply(tool_calls=[("finish_crafting", {})]),
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        agent = llm_agent(server, timeout=1.0, warmup_seconds=1.5, tool_mode="native", move_seconds=30)
        result = play_llm(agent, max_turns=1)
    calls = [c for c in trace_records(result, "llm_call")]
    first, second = calls[0]["attempts"], calls[1]["attempts"]
    assert first[0]["timeout_s"] == 2.5 and first[0]["outcome"] == "answered"
    assert first[0]["latency_s"] >= 1.4 and first[0]["prompt_tokens"] == 3600
    assert [a["outcome"] for a in second] == ["timeout", "answered"]
    assert [a["timeout_s"] for a in second] == [1.0, 1.0]
    assert len({a["seed"] for a in [*first, *second]}) == 3
    assert calls[1]["latency_s"] >= second[0]["latency_s"] + second[1]["latency_s"]
    decisions = trace_records(result, "decision")
    assert [d["attempts"] for d in decisions] == [1, 2]
    assert decisions[1]["latency_s"] >= calls[1]["latency_s"] >= 1.0  # the move's total, not the last try
    assert not trace_records(result, "fallback")


def test_no_attempt_starts_after_the_moves_budget() -> None:
    script = [Reply(delay=0.8, tool_calls=[("pass", {})])] * 3
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        agent = llm_agent(server, timeout=0.5, warmup_seconds=0, move_seconds=0.3, tool_mode="native")
        result = play_llm(agent, max_turns=1)
    fallback = trace_records(result, "fallback")[0]  # timed out past the budget: no retry
    assert fallback["reason"] == "provider_failed" and fallback["attempts"] == 1
    assert fallback["basis"] == "no_readable_answer"


def test_bad_input_is_bounded_answered_with_typed_errors_and_never_reaches_the_game() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    script = [
        Reply(content="a" * 1_000_000 + envelope("propose", {"to": 1, "offer": {"coal": 2}})),  # 1 MB
        Reply(tool_calls=[("resign", {})]),  # no such tool
        Reply(tool_calls=[("propose", "[1, 2]")]),  # arguments of the wrong shape
        Reply(tool_calls=[("propose", '{"to": 1, "offer": ' + deep + "}")]),  # nested junk
        Reply(content="{" * 50_000 + deep),
        Reply(tool_calls=[("propose", {"to": 1, "offer": {"coal": {"nested": [[{}]]}}, "request": {}})]),
        Reply(tool_calls=[("pass", {})]),
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        agent = llm_agent(server, tool_mode="native", max_invalid=8, max_steps=10)
        result = play_llm(agent, max_turns=1)
        requests = server.requests
    assert len(requests) >= 7
    codes = [t["error"]["code"] for t in trace_records(result, "tool_error")]
    codes += [
        r["answer"]["error"]["code"]
        for t in trace_records(result, "tool_results")
        for r in t["results"]
        if not r["answer"]["ok"]
    ]
    assert {"not_a_tool_call", "unknown_tool", "invalid_action"} <= set(codes)
    decision = trace_records(result, "decision")[0]
    assert decision["action"] == {"type": "pass"} and decision["invalid"] == 6
    # the game saw only the pass
    assert [e.type for e in result.events if e.actor == 0][:1] == ["passed"]
    assert not any(e.type == "proposed" and e.actor == 0 for e in result.events) and result.refusals == 0
    # the 1 MB answer is cut in the trace and never sent back
    huge = trace_records(result, "llm_call")[0]["completion"]
    assert len(huge["content"]) == MAX_TEXT_CHARS and huge["content_chars"] > 1_000_000
    assert max(len(json.dumps(r)) for r in requests) < 60_000
    unreadable = trace_records(result, "llm_call")[2]["attempts"][0]["outcome"]
    assert unreadable == "unreadable"


def fallback_of(result: Any, decision: str) -> dict[str, Any]:
    """The fallback of the move whose key contains ``decision``."""
    return next(r for r in trace_records(result, "fallback") if decision in r["decision"])


def test_the_fallback_with_no_readable_answer_is_the_safe_move() -> None:
    with OpenAITestServer([Reply(content="I pass, I think.")] * 3, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="prompted"), max_turns=1)
    fallback = fallback_of(result, "propose")
    assert fallback["basis"] == "no_readable_answer" and fallback["action"] == {"type": "pass"}
    assert fallback["errors"] == ["not_a_tool_call"] * 3


def test_a_readable_action_that_never_validates_gets_the_safe_move_when_its_intent_cannot_be_kept() -> None:
    bad = Reply(tool_calls=[("propose", {"to": 1, "offer": {"diamond": 1}, "request": {}})])
    with OpenAITestServer([bad] * 3, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="native"), max_turns=1)
    fallback = fallback_of(result, "propose")
    assert fallback["basis"] == "safe_default" and fallback["action"] == {"type": "pass"}
    assert len(fallback["errors"]) == 3 and "not_a_tool_call" not in fallback["errors"]


@pytest.mark.parametrize("accept", [True, False])
def test_a_decision_written_with_a_bad_message_falls_back_to_the_models_own_accept_or_reject(
    accept: bool,
) -> None:
    decide = envelope("decide", {"accept": accept, "message": {"text": "deal"}})  # message not a string
    first_turn = [Reply(content=envelope("pass", {})), Reply(content=envelope("finish_crafting", {}))]
    script = [*first_turn, *[Reply(content=decide)] * 3]  # turn 2: seat 1 proposes, seat 0 decides
    with OpenAITestServer(script, policy=in_text) as server:
        result = play_llm(llm_agent(server, tool_mode="prompted"), opponent=Proposer(), max_turns=2)
    fallback = fallback_of(result, "decide")
    assert fallback["basis"] == "model_intent"
    assert fallback["action"] == {"type": "decide", "accept": accept, "message": ""}
    decided = [e.payload for e in result.events if e.type == "decided" and e.actor == 0]
    assert [d["accept"] for d in decided] == [accept]
    assert accept == any(e.type == "trade_executed" for e in result.events)


def test_a_tom_report_that_never_validates_keeps_its_valid_entries_and_reports_5_for_the_rest() -> None:
    report = {"v0": {"coal": 7, "stick": 11, "oak_log": "high", "cobblestone": 0}}
    with OpenAITestServer(
        [Reply(tool_calls=[("report_tom", report)])] * 3, policy=ScriptedPlayer()
    ) as server:
        result = play_llm(llm_agent(server, tool_mode="native"), max_turns=1, tom=[[0], []])
    fallback = fallback_of(result, "tom")
    assert fallback["basis"] == "model_intent"
    reported = next(e.payload for e in result.events if e.type == "tom_reported" and e.actor == 0)
    assert reported["v0"] == {"coal": 7, "stick": 5, "oak_log": 5, "cobblestone": 0, "raw_iron": 5}


class SlowFirstAnswer:
    """The scripted player whose first answer (the game's first request: a cold model reading the long
    prompt) takes ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.player = ScriptedPlayer()
        self.seconds = seconds
        self.answered = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        reply = self.player(request)
        self.answered += 1
        if self.answered == 1:
            reply.delay = self.seconds
        return reply


def test_the_probes_short_requests_leave_the_warm_up_allowance_to_the_games_first_request() -> None:
    clear_probe_cache()
    with OpenAITestServer(policy=SlowFirstAnswer(1.3)) as server:  # probes are answered at once
        agent = llm_agent(server, timeout=1.0, warmup_seconds=2.0, provider_retries=0)
        result = play_llm(agent, max_turns=1)
    assert trace_records(result, "llm_probe")[0]["cached"] is False
    game = [c for c in trace_records(result, "llm_call") if not c.get("probe")]
    assert game[0]["attempts"][0]["timeout_s"] == 3.0 and game[0]["attempts"][0]["outcome"] == "answered"
    assert not trace_records(result, "fallback")


def test_during_an_outage_the_warm_up_allowance_goes_to_the_first_request_and_move_only() -> None:
    outage = [Reply(status=500, content="down", delay=0.2)] * 40
    with OpenAITestServer(outage, policy=ScriptedPlayer()) as server:
        agent = llm_agent(
            server,
            timeout=5.0,
            warmup_seconds=2.5,
            move_seconds=0.25,
            provider_retries=20,
            tool_mode="native",
        )
        result = play_llm(agent, max_turns=1)
    calls = trace_records(result, "llm_call")
    timeouts = [a["timeout_s"] for call in calls for a in call["attempts"]]
    assert timeouts[0] == 7.5 and set(timeouts[1:]) == {5.0}
    first, second = (f["attempts"] for f in trace_records(result, "fallback")[:2])
    assert first >= 4 and second <= 2  # the second move has its own 0.25 s, no allowance


def test_a_readable_query_alone_is_no_readable_answer_for_the_fallback() -> None:
    script = [Reply(tool_calls=[("item_info", {"item": "coal"})]), *[Reply(content="Hmm, let me see.")] * 3]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="native"), max_turns=1)
    fallback = fallback_of(result, "propose")
    assert fallback["basis"] == "no_readable_answer" and fallback["action"] == {"type": "pass"}


@pytest.mark.parametrize(
    ("later", "basis", "accept"),
    [
        (
            {"accept": "yes"},
            "model_intent",
            True,
        ),  # unreadable as a bool before: it must not erase the intent
        ({"accept": "maybe"}, "model_intent", True),
        ({"accept": "No"}, "conflicting_intents", False),  # readable and the other way: the safe move
        ({"accept": 0}, "conflicting_intents", False),
    ],
)
def test_the_fallback_keeps_the_newest_readable_accept_and_plays_safe_when_they_disagree(
    later: dict[str, Any], basis: str, accept: bool
) -> None:
    first_turn = [Reply(content=envelope("pass", {})), Reply(content=envelope("finish_crafting", {}))]
    decide = [
        Reply(content=envelope("decide", {"accept": True, "message": 123})),
        *[Reply(content=envelope("decide", later))] * 2,
    ]
    with OpenAITestServer([*first_turn, *decide], policy=in_text) as server:
        result = play_llm(llm_agent(server, tool_mode="prompted"), opponent=Proposer(), max_turns=2)
    fallback = fallback_of(result, "decide")
    assert fallback["basis"] == basis
    assert fallback["action"] == {"type": "decide", "accept": accept, "message": ""}


def test_huge_tool_call_arguments_and_names_are_refused_unread_and_cut_in_the_trace() -> None:
    swap = {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 1}}
    script = [
        Reply(tool_calls=[("propose", {**swap, "message": "y" * 1_100_000})]),  # past what the encoder takes
        Reply(tool_calls=[("propose", {**swap, "message": "y" * 300_000})]),
        Reply(tool_calls=[("zz" * 50_000, {"a": 1})]),  # a 100,000-character tool name
        Reply(tool_calls=[("pass", {})]),
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        agent = llm_agent(server, tool_mode="native", max_invalid=5, timeout=30)
        result = play_llm(agent, max_turns=1)
        requests = server.requests
    results = [r for t in trace_records(result, "tool_results") for r in t["results"]]
    errors = [r["answer"]["error"] for r in results[:3]]
    assert [e["code"] for e in errors] == ["invalid_action", "invalid_action", "unknown_tool"]
    assert all(len(json.dumps(e)) < 1_000 for e in errors)
    assert trace_records(result, "decision")[0]["action"] == {"type": "pass"}
    assert not any(e.type == "proposed" for e in result.events)
    # nothing of the huge calls is sent back or kept whole in the trace
    assert max(len(json.dumps(r["messages"])) for r in requests) < 60_000
    assert max(len(json.dumps(t.model_dump())) for t in result.traces) < 60_000
    first = trace_records(result, "llm_call")[0]["completion"]["tool_calls"][0]
    assert len(first["args"]) == MAX_TEXT_CHARS and first["args_chars"] > 1_100_000
