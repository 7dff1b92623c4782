"""Whole games for every behaviour of the project's OpenAI-compatible test server
(agents/testing/openai_server.py BEHAVIOURS), the real ChatOpenAI over HTTP: with no tool-mode option the
probe picks a mode, the traces name it, and the model plays its own moves (>= 95%) whenever its answers are
readable at all; runaway output is cut at max_tokens and the game goes on; a cold first call within the
warm-up allowance plays, one beyond it is cancelled and falls back; imitated tool results never reach the
memory; every explicit tool mode a behaviour supports plays as well."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_support import llm_agent, play_llm, trace_records

from agents.bots.registry import make_policy
from agents.llm.agent import DEFAULT_MAX_TOKENS
from agents.llm.probe import PROBE_MARKER, clear_probe_cache
from agents.local import LocalResult
from agents.testing.openai_server import BEHAVIOURS, OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer

TURNS = 3  # a paper-protocol game in miniature: proposals, decisions, crafts, ToM reports (V0 + V1)

PROBED: dict[str, tuple[str, str | None]] = {
    "native": ("native", "auto"),
    "needs_tool_choice": ("native", "required"),  # the tools are seen only when a call is required
    "constrained": ("json_schema", None),
    # the call comes back as text, never as an API tool call nor as the bare envelope the json_schema
    # check asks for: prompted, where the lenient reading makes the moves count
    "bare_json": ("prompted", None),
    "fenced_json": ("prompted", None),
    "doubled_braces": ("prompted", None),
    "wrong_tags": ("prompted", None),
    "raw_action": ("prompted", None),
    "imitates_tool_results": ("prompted", None),
}
"""What the probe picks (mode, tool_choice) for each behaviour whose answers are readable."""

SUPPORTED_MODES: dict[str, tuple[str, ...]] = {
    "native": ("native", "json_schema", "prompted"),
    "needs_tool_choice": ("native", "json_schema", "prompted"),
    "constrained": ("json_schema",),  # prose unless a response_format schema constrains it
    **{
        name: ("native", "json_schema", "prompted")
        for name in ("bare_json", "fenced_json", "doubled_braces", "wrong_tags", "raw_action")
    },
    "imitates_tool_results": ("native", "json_schema", "prompted"),
}
"""The explicit tool modes each readable behaviour can be played in."""


@pytest.fixture(autouse=True)
def _fresh_probe_cache() -> None:
    clear_probe_cache()


def own_share(result: LocalResult) -> tuple[float, int]:
    """The share of the LLM seat's moves that are the model's own, and how many moves it made."""
    own = [d for d in trace_records(result, "decision") if d["fallback"] is False]
    fallbacks = trace_records(result, "fallback")
    moves = len(own) + len(fallbacks)
    return (len(own) / moves if moves else 0.0), moves


def play_behaviour(
    behaviour: str, *, tom: bool = True, turns: int = TURNS, **settings: Any
) -> tuple[LocalResult, OpenAITestServer]:
    """A short game of the LLM seat (no tool-mode option unless ``settings`` set one) against a random bot."""
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour=behaviour) as server:
        agent = llm_agent(server, **settings)
        result = play_llm(agent, max_turns=turns, tom=[[0, 1], []] if tom else None)
    return result, server


def spec_game(
    behaviour: str, options: str = "", *, tom: bool = True, turns: int = TURNS
) -> tuple[LocalResult, OpenAITestServer]:
    """A short game through the ``llm`` policy spec, as a user writes it: no tool-mode option."""
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour=behaviour) as server:
        agent = make_policy(f"llm:openai:test-model?base_url={server.base_url}{options}", 0)
        result = play_llm(agent, max_turns=turns, tom=[[0, 1], []] if tom else None)
    return result, server


def game_requests(server: OpenAITestServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if PROBE_MARKER not in json.dumps(r["messages"][-1])]


def test_every_behaviour_is_named_here() -> None:
    assert set(BEHAVIOURS) == {*PROBED, "runaway", "cold_start", "unreadable"}
    assert set(SUPPORTED_MODES) == set(PROBED)


@pytest.mark.parametrize("behaviour", list(PROBED))
def test_with_no_option_the_probe_picks_a_mode_and_the_model_plays_its_own_moves(behaviour: str) -> None:
    result, server = spec_game(behaviour)
    mode, tool_choice = PROBED[behaviour]
    probe = trace_records(result, "llm_probe")
    assert [(p["mode"], p["tool_choice"], p["cached"]) for p in probe] == [(mode, tool_choice, False)]
    settings = trace_records(result, "llm_prefix")[0]["settings"]
    assert (settings["tool_mode"], settings["tool_choice"], settings["probed"]) == (mode, tool_choice, True)
    decisions = trace_records(result, "decision")
    assert {(d["tool_mode"], d["tool_choice"]) for d in decisions} == {(mode, tool_choice)}
    share, moves = own_share(result)
    assert moves >= 8 and share >= 0.95, (behaviour, share, moves)
    reports = [d["action"] for d in decisions if d["action"]["type"] == "report_tom"]
    assert reports and all("v1" in r for r in reports)  # the ToM reports (V0 and V1) are the model's
    # the game's requests are made in the mode chosen
    for request in game_requests(server):
        assert ("tools" in request) == (mode == "native")
        assert ("response_format" in request) == (mode == "json_schema")
        if mode == "native":
            assert request["tool_choice"] == tool_choice
        assert "<tool_response>" not in json.dumps(request["messages"])  # imitated results stay out


@pytest.mark.slow
def test_an_answer_cut_at_max_tokens_under_a_json_schema_is_truncated_not_a_provider_failure() -> None:
    # ChatOpenAI parses every response_format answer; the OpenAI client raises on finish_reason "length"
    cap = dict.fromkeys(DEFAULT_MAX_TOKENS, 120)
    result, _ = play_behaviour("runaway", tom=False, turns=2, tool_mode="json_schema", max_tokens=cap)
    attempts = [a for call in trace_records(result, "llm_call") for a in call["attempts"]]
    outcomes = {a["outcome"] for a in attempts}
    assert "truncated" in outcomes and "client_error" not in outcomes
    assert not [f for f in trace_records(result, "fallback") if f["reason"] == "provider_failed"]
    truncated = [e for e in trace_records(result, "tool_error") if e["error"]["code"] == "truncated"]
    assert truncated  # the model was told its answer was cut off, and tried again
    share, moves = own_share(result)
    assert moves >= 4 and share >= 0.5


def test_imitated_tool_results_cut_by_a_stop_sequence_do_not_silence_the_model() -> None:
    # the replies open with a fake <tool_response>; with it among the (configured) stop sequences the answer
    # comes back empty, so the agent drops its stops for the rest of the game
    stops = ("<tool_response>", "\n\nUser:")
    result, server = play_behaviour("imitates_tool_results", tool_mode="prompted", stop=stops)
    share, moves = own_share(result)
    assert moves >= 6 and share >= 0.95
    dropped = trace_records(result, "stop_dropped")
    assert len(dropped) == 1 and "<tool_response>" in dropped[0]["stop"]
    requests = game_requests(server)
    assert requests[0]["stop"] and all("stop" not in r for r in requests[2:])
    for request in requests:  # the fake results never reach the memory sent back to the model
        assert "<tool_response>" not in json.dumps(request["messages"])


def test_runaway_output_is_cut_at_the_configured_max_tokens_and_the_game_goes_on() -> None:
    result, server = spec_game("runaway", "&max_tokens=100", tom=False)
    requests = game_requests(server)
    assert requests and {r["max_tokens"] for r in requests} == {100}  # the server saw the bound
    calls = [c for c in trace_records(result, "llm_call") if not c.get("probe")]
    truncated = [c for c in calls if c["finish_reason"] == "length"]
    assert truncated and all(c["attempts"][-1]["outcome"] == "truncated" for c in truncated)
    assert all(c["tokens"]["completion_tokens"] <= 100 for c in truncated)
    assert all("- Coal" in c["completion"]["content"] for c in truncated)
    # every move is decided, by the model (an answer that was not a runaway) or the logged fallback
    share, moves = own_share(result)
    assert result.turns == TURNS and moves >= 6 and share >= 0.5
    assert {f["reason"] for f in trace_records(result, "fallback")} <= {"too_many_invalid_calls"}


@pytest.mark.slow
def test_a_cold_first_call_within_the_warm_up_allowance_does_not_fall_back() -> None:
    for tool_mode in ("auto", "native"):  # auto: the probe's first request is the cold one
        clear_probe_cache()
        with OpenAITestServer(policy=ScriptedPlayer(), behaviour="cold_start", cold_seconds=1.5) as server:
            agent = llm_agent(server, timeout=1.0, warmup_seconds=1.5, tool_mode=tool_mode)
            result = play_llm(agent, max_turns=2)
        first = trace_records(result, "llm_call")[0]["attempts"][0]
        assert first["timeout_s"] == 2.5 and first["outcome"] == "answered" and first["latency_s"] >= 1.4
        assert not trace_records(result, "fallback") and server.cancelled == 0
        share, moves = own_share(result)
        assert share == 1.0 and moves >= 4


@pytest.mark.slow
def test_a_cold_first_call_beyond_the_allowance_is_cancelled_and_the_move_falls_back() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour="cold_start", cold_seconds=2.5) as server:
        agent = llm_agent(server, timeout=0.5, warmup_seconds=0.5, move_seconds=0.5, tool_mode="native")
        result = play_llm(agent, max_turns=2)
        cancelled = server.cancelled
    first = trace_records(result, "llm_call")[0]["attempts"][0]
    assert first["timeout_s"] == 1.0 and first["outcome"] == "timeout"
    assert cancelled >= 1  # the abandoned request did not keep the server busy
    fallback = trace_records(result, "fallback")[0]
    assert (fallback["reason"], fallback["basis"]) == ("provider_failed", "no_readable_answer")
    decisions = trace_records(result, "decision")
    assert decisions and all(d["fallback"] is False for d in decisions)  # once warm, the model plays


def test_unreadable_answers_make_every_move_a_logged_fallback_and_nothing_crashes() -> None:
    result, server = spec_game("unreadable", "&max_invalid=2", turns=2)
    assert trace_records(result, "llm_probe")[0]["mode"] == "prompted"
    assert not trace_records(result, "decision")
    fallbacks = trace_records(result, "fallback")
    assert result.turns == 2 and len(fallbacks) >= 6
    reasons = {(f["reason"], f["basis"]) for f in fallbacks}
    assert reasons == {("too_many_invalid_calls", "no_readable_answer")}
    assert {tuple(f["errors"]) for f in fallbacks} == {("not_a_tool_call", "not_a_tool_call")}
    for request in game_requests(server):  # the prose of failed attempts stays out of later moves
        assert sum("No call could be read" in json.dumps(m) for m in request["messages"]) <= 1


@pytest.mark.parametrize(
    ("behaviour", "tool_mode"),
    [
        # the test server validates every response_format schema: json_schema games are the slow ones
        pytest.param(behaviour, mode, marks=[pytest.mark.slow] if mode == "json_schema" != behaviour else [])
        for behaviour, modes in SUPPORTED_MODES.items()
        for mode in modes
    ],
)
def test_each_explicit_tool_mode_a_behaviour_supports_plays_its_own_moves(
    behaviour: str, tool_mode: str
) -> None:
    result, server = play_behaviour(behaviour, tom=False, turns=2, tool_mode=tool_mode)
    assert not trace_records(result, "llm_probe")
    assert not [r for r in server.requests if PROBE_MARKER in json.dumps(r["messages"])]
    decisions = trace_records(result, "decision")
    assert {d["tool_mode"] for d in decisions} == {tool_mode}
    share, moves = own_share(result)
    assert moves >= 5 and share >= 0.95, (share, moves)
    if behaviour == "imitates_tool_results":  # a fake result never reaches the memory, in any mode
        assert not [r for r in server.requests if "<tool_response>" in json.dumps(r["messages"])]
