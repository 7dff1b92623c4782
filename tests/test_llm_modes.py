"""The three tool modes end to end: the real ChatOpenAI against the project's test server over HTTP, one
scripted reply list per mode. What goes on the wire (tools, response_format, the catalogue), how an answer
is read, and what memory keeps after a move (the calls that counted, never a failed attempt)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from agent_support import llm_agent, play_llm, trace_records

from agents.llm import prompts
from agents.llm.modes import envelope_schema
from agents.llm.tools import tool_call_args, tool_specs
from agents.testing.openai_server import OpenAITestServer, Reply
from agents.testing.scripted_player import ScriptedPlayer


def envelope(name: str, args: dict[str, Any]) -> str:
    return json.dumps({"tool": name, "arguments": args})


SWAP = {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 1}, "message": "swap?"}


def in_text(player: ScriptedPlayer) -> Any:
    """The scripted player answering with its call as a fenced envelope in the reply text."""

    def answer(request: dict[str, Any]) -> Reply:
        name, args = player.decide(request)
        return Reply(content=f"My move:\n```json\n{envelope(name, args)}\n```")

    return answer


def user_texts(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "user"]


def test_native_mode_binds_the_tools_and_reads_a_call_written_in_the_text_as_a_tool_call() -> None:
    script = [Reply(content="Sure!\n```json\n" + envelope("propose", SWAP) + "\n```")]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="native", tool_choice="required"), max_turns=2)
        first, later = server.requests[0], server.requests[1:]
    assert first["tool_choice"] == "required" and {t["function"]["name"] for t in first["tools"]} >= {
        "propose",
        "pass",
        "item_info",
    }
    assert "response_format" not in first
    proposed = [e.payload for e in result.events if e.type == "proposed" and e.actor == 0]
    assert proposed[0]["offer"] == {"coal": 1} and proposed[0]["message"] == "swap?"
    # memory holds the move as a native call and its tool result, not the text it came in
    assistant = [m for m in later[0]["messages"] if m["role"] == "assistant"]
    assert assistant[0]["tool_calls"][0]["function"]["name"] == "propose" and not assistant[0]["content"]
    assert any(m["role"] == "tool" for m in later[0]["messages"])
    assert "Sure!" not in json.dumps(later)
    assert not trace_records(result, "fallback")


def test_json_schema_mode_sends_the_envelope_of_the_tools_allowed_now_and_reads_the_content() -> None:
    script = [
        Reply(content=envelope("item_info", {"item": "torch"})),
        Reply(content=envelope("propose", SWAP)),
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="json_schema", max_queries=1), max_turns=2)
        requests = server.requests
    first, second = requests[0], requests[1]
    assert "tools" not in first and "tool_choice" not in first
    response_format = first["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "tradecraft_call"
    schema = response_format["json_schema"]["schema"]
    allowed = {option["properties"]["tool"]["const"] for option in schema["anyOf"]}
    assert {"propose", "pass", "item_info", "history"} <= allowed
    assert not allowed & {"decide", "craft", "report_tom", "finish_crafting"}  # not this move's
    # the one query allowed was asked: the second call of the move offers only the move's actions
    assert {
        o["properties"]["tool"]["const"] for o in second["response_format"]["json_schema"]["schema"]["anyOf"]
    } == {
        "propose",
        "pass",
    }
    # the query's answer came back as a user message in the canonical form
    assert user_texts(second)[-1].startswith("Result of item_info: ")
    proposed = [e.payload for e in result.events if e.type == "proposed" and e.actor == 0]
    assert proposed[0]["offer"] == {"coal": 1}
    assert trace_records(result, "llm_prefix")[0]["settings"]["tool_mode"] == "json_schema"
    assert {d["tool_mode"] for d in trace_records(result, "decision")} == {"json_schema"}


def test_the_envelope_admits_exactly_the_canonical_calls_of_its_tools_in_strict_rendering_too() -> None:
    specs = [s for s in tool_specs() if s.name in ("propose", "report_tom", "craft", "pass")]
    for strict in (False, True):
        schema = envelope_schema(specs, strict=strict)
        validator = jsonschema.Draft202012Validator(schema)
        name, args = tool_call_args({"type": "propose", **SWAP}, strict)
        validator.validate({"tool": name, "arguments": args})  # $refs resolve against the root
        name, args = tool_call_args({"type": "report_tom", "v0": {"coal": 3}}, strict)
        validator.validate({"tool": name, "arguments": args})
        for bad in (
            {"tool": "decide", "arguments": {"accept": True}},  # not among the tools allowed
            {"tool": "pass"},  # no arguments
            {"tool": "pass", "arguments": {}, "extra": 1},
            {"name": "pass", "arguments": {}},
        ):
            assert not validator.is_valid(bad), bad
        if strict:
            assert "$defs" in schema and all("." in name for name in schema["$defs"])


def test_prompted_mode_puts_the_catalogue_in_the_system_prompt_and_reads_the_text() -> None:
    script = [Reply(content="I will offer a swap.\n" + envelope("propose", SWAP))]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="prompted"), max_turns=2)
        first, later = server.requests[0], server.requests[1:]
    assert "tools" not in first and "response_format" not in first
    system = first["messages"][0]["content"]
    assert "propose" in system and "recipe_search" in system and '"offer"' in system
    proposed = [e.payload for e in result.events if e.type == "proposed" and e.actor == 0]
    assert proposed[0]["offer"] == {"coal": 1}
    # the next move's memory: the call in its canonical text, its result, no free text
    assistant = [m["content"] for m in later[0]["messages"] if m["role"] == "assistant"]
    assert assistant == [envelope("propose", {**SWAP})]
    assert any(t.startswith("Result of propose: ") for t in user_texts(later[0]))
    assert "I will offer" not in json.dumps(later)


@pytest.mark.parametrize("mode", ["native", "json_schema", "prompted"])
def test_memory_after_a_move_keeps_the_calls_that_counted_and_no_failed_attempt(mode: str) -> None:
    bad_text = "Let me think about this trade " * 30  # no call, 900 characters
    wrong = envelope("propose", {"to": "one", "offer": {"coal": 1}})  # readable, invalid
    if mode == "native":
        script = [
            Reply(content=bad_text),
            Reply(tool_calls=[("propose", {"to": "one", "offer": {"coal": 1}})]),
            Reply(tool_calls=[("item_info", {"item": "torch"}), ("pass", {})]),
        ]
    else:
        script = [
            Reply(content=bad_text),
            Reply(content=wrong),
            Reply(content=envelope("item_info", {"item": "torch"}) + "\n" + envelope("pass", {})),
        ]
    brain = ScriptedPlayer() if mode == "native" else in_text(ScriptedPlayer())
    with OpenAITestServer(script, policy=brain) as server:
        result = play_llm(llm_agent(server, tool_mode=mode, max_invalid=3), max_turns=2)
        requests = server.requests
    # within the move: the bad answer cut short, then the retry message saying what to fix
    second = requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and len(second[-2]["content"]) <= 300
    allowed = ["propose", "pass"]
    assert second[-1] == {"role": "user", "content": prompts.retry_message(mode, None, allowed)}
    third = json.dumps(requests[2]["messages"])
    if mode != "native":
        assert "[invalid_action]" in third  # the typed error, in the retry message
    # the next move: the observation, the query with its answer, the pass; nothing of the failures
    later = json.dumps(requests[3]["messages"])
    retry_opening = prompts.retry_message(mode, None, allowed).split(".")[0]
    assert "Let me think" not in later and retry_opening not in later and '"one"' not in later
    assert "item_info" in later
    assert [e.type for e in result.events if e.actor == 0][:1] == ["passed"]
    assert not trace_records(result, "fallback")
    assert trace_records(result, "decision")[0]["invalid"] == 2


def test_a_game_played_in_each_json_mode_makes_every_move_the_models_own() -> None:
    for mode in ("json_schema", "prompted"):
        with OpenAITestServer(policy=in_text(ScriptedPlayer(accept_every=1))) as server:
            result = play_llm(llm_agent(server, tool_mode=mode), max_turns=3, tom=[[0, 1], [0]])
        decisions = trace_records(result, "decision")
        assert decisions and not trace_records(result, "fallback"), mode
        assert {e.type for e in result.events if e.actor == 0} >= {"tom_reported"}


@pytest.mark.parametrize("mode", ["json_schema", "prompted"])
def test_a_model_that_writes_fake_results_before_its_call_still_plays_its_own_moves(mode: str) -> None:
    # the imitated results come first: a stop sequence on them would cut every answer at its start
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour="imitates_tool_results") as server:
        result = play_llm(llm_agent(server, tool_mode=mode), max_turns=2)
        stops = {tuple(r.get("stop") or ()) for r in server.requests}
    assert all("<tool_response>" not in stop and "Result of" not in stop for stop in stops)
    assert trace_records(result, "decision") and not trace_records(result, "fallback")


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("mode", ["native", "json_schema", "prompted"])
def test_the_tool_catalogue_is_in_the_system_prompt_once_in_the_json_modes(mode: str, compact: bool) -> None:
    with OpenAITestServer([Reply(content=envelope("pass", {}))], policy=ScriptedPlayer()) as server:
        play_llm(llm_agent(server, tool_mode=mode, compact=compact), max_turns=1)
        system = server.requests[0]["messages"][0]["content"]
    # native declares the tools through the API; the JSON modes only in the prompt, once
    assert system.count("# Tools") == (0 if mode == "native" else 1)
    assert system.count("- propose") == (0 if mode == "native" else 1)


def test_in_strict_mode_the_retry_message_shows_the_strict_rendering() -> None:
    script = [Reply(content="I would rather think."), Reply(content=envelope("pass", {}))]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        play_llm(llm_agent(server, tool_mode="prompted", strict=True), max_turns=1)
        retry = user_texts(server.requests[1])[-1]
    assert retry == prompts.retry_message("prompted", None, ["propose", "pass"], strict=True)
    assert '"offer": [{"item": ' in retry


def test_native_mode_with_tool_choice_none_tells_the_model_to_answer_in_text() -> None:
    script = [Reply(content="I would rather think.")]  # then the server writes the call as text
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="native", tool_choice="none"), max_turns=1)
        first, second = server.requests[:2]
    assert first["tool_choice"] == "none"
    system = first["messages"][0]["content"]
    assert (
        '{"tool": "<tool name>", "arguments": {...}}' in system
        and "You act only by calling tools" not in system
    )
    allowed = ["propose", "pass", *[s.name for s in tool_specs(actions=False)]]
    assert user_texts(second)[-1] == prompts.retry_message("prompted", None, allowed)
    assert "tool call, not text" not in json.dumps(second["messages"])
    assert trace_records(result, "decision")


def test_the_trace_says_how_a_call_read_from_text_was_written() -> None:
    script = [Reply(content="My move:\n```json\n" + envelope("pass", {}) + "\n```")]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play_llm(llm_agent(server, tool_mode="prompted"), max_turns=1)
    first = trace_records(result, "tool_results")[0]["results"][0]
    assert first["source"] == "text" and first["written"] == "fenced"
