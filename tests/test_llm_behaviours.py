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

from agents.llm.agent import DEFAULT_MAX_TOKENS
from agents.llm.probe import PROBE_MARKER, clear_probe_cache
from agents.local import LocalResult
from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer

TURNS = 3  # a paper-protocol game in miniature: proposals, decisions, crafts, ToM reports


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


def game_requests(server: OpenAITestServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if PROBE_MARKER not in json.dumps(r["messages"][-1])]


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
    # the replies open with a fake <tool_response>, a JSON mode's stop sequence: the answer comes back empty
    result, server = play_behaviour("imitates_tool_results", tool_mode="prompted")
    share, moves = own_share(result)
    assert moves >= 6 and share >= 0.95
    dropped = trace_records(result, "stop_dropped")
    assert len(dropped) == 1 and "<tool_response>" in dropped[0]["stop"]
    requests = game_requests(server)
    assert requests[0]["stop"] and all("stop" not in r for r in requests[2:])
    for request in requests:  # the fake results never reach the memory sent back to the model
        assert "<tool_response>" not in json.dumps(request["messages"])
