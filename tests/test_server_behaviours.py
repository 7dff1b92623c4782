"""The test server's behaviours: each writes the scripted brain's call as a kind of real model does, over
real HTTP, within max_tokens and stop, with usage; cold starts, runaways and cancelled requests; the brain
in the JSON modes; the command line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import jsonschema
import openai
import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from agents.llm.tools import tool_specs
from agents.llm.tracing import count_tokens
from agents.testing import openai_server
from agents.testing.openai_server import BEHAVIOURS, OpenAITestServer, Reply
from agents.testing.scripted_player import PROBE_MARKER, ScriptedPlayer

DECIDE_GAME = "Pending proposal: Player 1 offers you 1 Coal for 1 Stick.\nYour move: decide."
CRAFT_GAME = "Phase: crafting.\nYour move: craft or finish_crafting."
CRAFTS_ANSWER = {
    "ok": True,
    "answer": {"type": "possible_crafts", "crafts": [{"recipe": "torch", "max_runs": 2}]},
}
SPECS = {spec.name: spec for spec in tool_specs()}


def tools(*names: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": n, "description": "d", "parameters": SPECS[n].args_schema()},
        }
        for n in names
    ]


def envelope_schema(*names: str) -> dict[str, Any]:
    """The JSON modes' response schema: one envelope per tool (as the agent declares it)."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool": {"const": n}, "arguments": SPECS[n].args_schema()},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
            for n in names
        ]
    }


def schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "tradecraft_call", "schema": schema}}


def game_request(game: str = DECIDE_GAME, **extra: Any) -> dict[str, Any]:
    return {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "You play TradeCraft."},
            {"role": "user", "content": game},
        ],
        **extra,
    }


def post(base_url: str, body: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    request = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())


def answer_of(behaviour: str, body: dict[str, Any], **options: Any) -> dict[str, Any]:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1), behaviour=behaviour, **options) as server:
        return post(server.base_url, body)


def objects_in(text: str) -> list[Any]:
    """Every outermost JSON object in ``text`` (for checking what a reply wrote)."""
    decoder = json.JSONDecoder()
    found, start = [], text.find("{")
    while start >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            end = start + 1
        else:
            found.append(value)
        start = text.find("{", end)
    return found


DECIDE_CALL = {"name": "decide", "arguments": {"accept": True, "message": "ok"}}


def test_every_behaviour_is_described_and_an_unknown_one_is_refused() -> None:
    assert len(BEHAVIOURS) == 12 and all(BEHAVIOURS.values())
    with pytest.raises(ValueError, match="unknown behaviour"):
        OpenAITestServer(behaviour="telepathic")


def test_native_answers_with_tool_calls_and_in_the_json_modes_with_the_envelope() -> None:
    body = answer_of("native", game_request(tools=tools("decide", "pass")))
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]["function"]
    assert call["name"] == "decide" and json.loads(call["arguments"]) == DECIDE_CALL["arguments"]
    # prompted mode (no tools, no schema): a capable model writes the envelope as told
    content = answer_of("native", game_request())["choices"][0]["message"]["content"]
    assert json.loads(content) == {"tool": "decide", "arguments": DECIDE_CALL["arguments"]}
    schema = envelope_schema("decide", "pass")
    content = answer_of("native", game_request(response_format=schema_format(schema)))["choices"][0][
        "message"
    ]
    jsonschema.validate(json.loads(content["content"]), schema)


@pytest.mark.parametrize(
    ("behaviour", "shape"),
    [
        ("bare_json", re.compile(r"^(?:[A-Z][^{]*\n)?\{.*\}$", re.DOTALL)),
        ("fenced_json", re.compile(r"^[A-Z][^{]*\n```json\n\{.*\}\n```$", re.DOTALL)),
        ("doubled_braces", re.compile(r"^\{\{.*\}\}$", re.DOTALL)),
        (
            "imitates_tool_results",
            re.compile(r"^(<tool_response>\n\{.*\}\n</tool_response>\n){1,2}<tool_call>"),
        ),
    ],
)
def test_text_behaviours_write_the_brains_call_in_their_shape(behaviour: str, shape: re.Pattern[str]) -> None:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1), behaviour=behaviour) as server:
        for _ in range(2):  # some shapes alternate per request
            message = post(server.base_url, game_request(tools=tools("decide")))["choices"][0]["message"]
            assert "tool_calls" not in message
            content = message["content"]
            assert shape.match(content), content
            readable = (
                content.replace("{{", "{").replace("}}", "}") if behaviour == "doubled_braces" else content
            )
            assert objects_in(readable)[-1 if behaviour == "imitates_tool_results" else 0] == DECIDE_CALL


def test_imitated_tool_results_copy_the_shape_of_real_answers() -> None:
    content = answer_of("imitates_tool_results", game_request())["choices"][0]["message"]["content"]
    blocks = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", content)
    assert blocks and all("ok" in json.loads(block) for block in blocks)
    assert re.search(r"<tool_call>\n(.*)\n</tool_call>$", content).group(1) == json.dumps(DECIDE_CALL)


def test_wrong_tags_rotate_through_four_variants() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1), behaviour="wrong_tags") as server:
        contents = [
            post(server.base_url, game_request(tools=tools("decide")))["choices"][0]["message"]["content"]
            for _ in range(4)
        ]
    assert contents[0].startswith("<tool_call>") and "</tool_call>" not in contents[0]
    assert contents[1].endswith("</tool_call>") and "<tool_call>" not in contents[1]
    assert contents[2].startswith("<function_call>") and contents[2].endswith("</function_call>")
    assert contents[3].startswith("<|tool_call|>")
    assert all(objects_in(content)[0] == DECIDE_CALL for content in contents)


def test_raw_action_writes_the_narrators_action_json() -> None:
    content = answer_of("raw_action", game_request(tools=tools("decide")))["choices"][0]["message"]["content"]
    assert json.loads(content) == {"type": "decide", "accept": True, "message": "ok"}


def test_needs_tool_choice_drops_the_tools_unless_a_call_is_required() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1), behaviour="needs_tool_choice") as server:
        answers = {
            str(choice): post(
                server.base_url, game_request(tools=tools("decide", "pass"), tool_choice=choice)
            )
            for choice in (
                None,
                "auto",
                "none",
                "required",
                {"type": "function", "function": {"name": "decide"}},
            )
        }
    for choice in ("None", "auto", "none"):
        message = answers[choice]["choices"][0]["message"]
        assert "tool_calls" not in message and json.loads(message["content"])["type"] == "decide"
    for choice in ("required", str({"type": "function", "function": {"name": "decide"}})):
        assert answers[choice]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "decide"
    # as llama-cpp-python's server: the dropped tools are not in the prompt the model read
    dropped, seen = answers["auto"]["usage"]["prompt_tokens"], answers["required"]["usage"]["prompt_tokens"]
    assert seen - dropped == count_tokens(json.dumps(tools("decide", "pass")))
    schema = envelope_schema("decide", "pass")  # a response_format schema it does honour
    constrained = answer_of("needs_tool_choice", game_request(response_format=schema_format(schema)))
    jsonschema.validate(json.loads(constrained["choices"][0]["message"]["content"]), schema)


def test_the_real_client_gets_tool_calls_from_needs_tool_choice_only_when_required() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1), behaviour="needs_tool_choice") as server:
        model = ChatOpenAI(model="test-model", base_url=server.base_url, api_key="x", max_retries=0)
        schemas = [tool["function"] for tool in tools("decide")]
        prompt = [HumanMessage(DECIDE_GAME)]
        free = model.bind_tools(schemas).invoke(prompt)
        forced = model.bind_tools(schemas, tool_choice="required").invoke(prompt)
    assert free.tool_calls == [] and json.loads(str(free.content))["accept"] is True
    assert forced.tool_calls[0]["name"] == "decide" and forced.tool_calls[0]["args"]["accept"] is True
    assert forced.usage_metadata is not None and forced.usage_metadata["input_tokens"] > 0


def test_constrained_output_validates_against_the_schema_or_is_prose() -> None:
    schema = envelope_schema("decide", "pass")
    content = answer_of("constrained", game_request(response_format=schema_format(schema)))["choices"][0]
    assert json.loads(content["message"]["content"]) == {
        "tool": "decide",
        "arguments": DECIDE_CALL["arguments"],
    }
    # the brain wants decide but the grammar only admits finish_crafting or item_info: the first, minimal
    narrow = envelope_schema("item_info", "finish_crafting")
    written = answer_of("constrained", game_request(response_format=schema_format(narrow)))
    value = json.loads(written["choices"][0]["message"]["content"])
    jsonschema.validate(value, narrow)
    assert value["tool"] == "item_info" and set(value["arguments"]) == {"item"}
    for body in (game_request(), game_request(tools=tools("decide"))):  # no schema: prose, no JSON
        message = answer_of("constrained", body)["choices"][0]["message"]
        assert "tool_calls" not in message and "{" not in message["content"] and len(message["content"]) > 20


def test_constrained_output_follows_a_strict_schema_and_refuses_an_unusable_one() -> None:
    arguments = SPECS["propose"].args_schema(strict=True)
    strict_propose = {  # the arguments' $defs go to the root, where their "#/$defs/..." refs point
        "$defs": arguments.pop("$defs"),
        "type": "object",
        "properties": {"tool": {"const": "propose"}, "arguments": arguments},
        "required": ["tool", "arguments"],
    }
    game = (
        "Hands (public):\n- Player 0 (you): 1 Coal [coal]\n- Player 1: 2 Stick [stick]\n"
        "Your move: propose or pass."
    )
    body = answer_of("constrained", game_request(game, response_format=schema_format(strict_propose)))
    value = json.loads(body["choices"][0]["message"]["content"])
    jsonschema.validate(value, strict_propose)
    assert value["arguments"]["offer"] == [{"item": "coal", "count": 1}]  # the brain's own offer, as pairs
    # left nested, the refs point nowhere: refused as a constraining server refuses a schema it cannot compile
    nested = {**strict_propose, "properties": {"arguments": {**arguments, "$defs": strict_propose["$defs"]}}}
    del nested["$defs"]
    with pytest.raises(urllib.error.HTTPError) as error:
        answer_of("constrained", game_request(game, response_format=schema_format(nested)))
    assert error.value.code == 400 and "$defs/ItemCount" in json.loads(error.value.read())["error"]["message"]


def test_unreadable_never_writes_a_call() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour="unreadable") as server:
        for body in (
            game_request(tools=tools("decide")),
            game_request(),
            game_request(tool_choice="required"),
        ):
            message = post(server.base_url, body)["choices"][0]["message"]
            assert "tool_calls" not in message and not re.search(r"[{}<>]", message["content"])


def test_max_tokens_and_stop_cut_every_reply_and_usage_reports_real_figures() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1), behaviour="fenced_json") as server:
        whole = post(server.base_url, game_request())
        content = whole["choices"][0]["message"]["content"]
        assert whole["usage"]["completion_tokens"] == count_tokens(content)
        prompt = sum(count_tokens(m["content"]) + 4 for m in game_request()["messages"])
        assert whole["usage"]["prompt_tokens"] == prompt
        stopped = post(server.base_url, game_request(stop=["```"]))["choices"][0]
        assert re.fullmatch(r"[A-Z][^{`]*\n", stopped["message"]["content"])  # the sentence before the fence
        assert stopped["finish_reason"] == "stop"
        cut = post(server.base_url, game_request(max_completion_tokens=6))
        assert cut["choices"][0]["finish_reason"] == "length" and cut["usage"]["completion_tokens"] <= 6
        assert count_tokens(cut["choices"][0]["message"]["content"]) == cut["usage"]["completion_tokens"]
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1)) as server:
        cut = post(server.base_url, game_request(tools=tools("decide"), max_tokens=3))["choices"][0]
        arguments = cut["message"]["tool_calls"][0]["function"]["arguments"]
        assert cut["finish_reason"] == "length" and json.dumps(DECIDE_CALL["arguments"]).startswith(arguments)
        assert arguments != json.dumps(DECIDE_CALL["arguments"])


def test_runaway_repeats_until_max_tokens_and_an_odd_seed_recovers() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(accept_every=1), behaviour="runaway") as server:
        started = time.monotonic()
        body = post(server.base_url, game_request(tools=tools("decide"), seed=4, max_tokens=300))
        took = time.monotonic() - started
        choice = body["choices"][0]
        assert choice["finish_reason"] == "length" and choice["message"]["content"].count("- Coal\n") > 80
        assert 290 <= body["usage"]["completion_tokens"] <= 300
        assert 0.29 <= took < 2.0  # ~1 ms a token, bounded by max_tokens
        for request in (game_request(tools=tools("decide"), max_tokens=50), game_request(max_tokens=50)):
            assert post(server.base_url, request)["choices"][0]["finish_reason"] == "length"  # no seed
        recovered = post(server.base_url, game_request(tools=tools("decide"), seed=5, max_tokens=300))
        assert recovered["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "decide"


def test_a_runaway_without_max_tokens_stops_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_server, "RUNAWAY_TOKEN_CAP", 200)  # the real 4096 takes ~4 s
    body = answer_of("runaway", game_request(tools=tools("decide")))
    assert body["choices"][0]["finish_reason"] == "length"
    assert 190 <= body["usage"]["completion_tokens"] <= 200


def test_an_unbounded_runaway_is_slow_and_cancelled_when_the_client_gives_up() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour="runaway") as server:
        model = ChatOpenAI(
            model="test-model", base_url=server.base_url, api_key="x", timeout=0.5, max_retries=0
        )
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            model.invoke([HumanMessage(DECIDE_GAME)])
        assert time.monotonic() - started < 1.5
        deadline = time.monotonic() + 1.0
        while server.cancelled < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.cancelled == 1


def test_cold_start_delays_the_first_requests_and_a_cancelled_one_is_counted() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour="cold_start", cold_seconds=0.8) as server:
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            post(server.base_url, game_request(tools=tools("decide")), timeout=0.2)
        started = time.monotonic()
        body = post(server.base_url, game_request(tools=tools("decide")))  # still loading: waits the rest
        assert 0.4 <= time.monotonic() - started < 0.8
        assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "decide"
        started = time.monotonic()
        post(server.base_url, game_request(tools=tools("decide")))
        assert time.monotonic() - started < 0.2  # warm
        assert server.cancelled == 1


def test_probes_are_answered_in_each_behaviours_rendering_without_using_the_script() -> None:
    probe = {
        "messages": [{"role": "user", "content": f"{PROBE_MARKER}: call confirm."}],
        "tools": [{"type": "function", "function": {"name": "confirm", "parameters": {"type": "object"}}}],
    }
    with OpenAITestServer([Reply(content="scripted")]) as server:
        call = post(server.base_url, {**probe, "tool_choice": "auto"})["choices"][0]["message"]["tool_calls"][
            0
        ]
        assert call["function"] == {"name": "confirm", "arguments": '{"ready": true}'}
        assert post(server.base_url, game_request())["choices"][0]["message"]["content"] == "scripted"
        assert server.probes == 1
    needs = answer_of("needs_tool_choice", probe)["choices"][0]["message"]
    assert "tool_calls" not in needs
    forced = answer_of("needs_tool_choice", {**probe, "tool_choice": "required"})["choices"][0]["message"]
    assert forced["tool_calls"][0]["function"]["name"] == "confirm"
    schema = {
        "type": "object",
        "properties": {
            "tool": {"const": "confirm"},
            "arguments": {
                "type": "object",
                "properties": {"ready": {"const": True}},
                "required": ["ready"],
            },
        },
        "required": ["tool", "arguments"],
    }
    json_probe = {"messages": probe["messages"], "response_format": schema_format(schema)}
    constrained = answer_of("constrained", json_probe)["choices"][0]["message"]["content"]
    assert json.loads(constrained) == {"tool": "confirm", "arguments": {"ready": True}}
    assert "{" not in answer_of("unreadable", probe)["choices"][0]["message"]["content"]
    assert ScriptedPlayer().decide(probe) == ("confirm", {"ready": True})  # the brain alone too


def test_the_brain_reads_tool_answers_in_every_mode() -> None:
    player = ScriptedPlayer()
    system = {"role": "system", "content": "You play TradeCraft."}
    game = {"role": "user", "content": CRAFT_GAME}
    assert player.decide({"messages": [system, game]}) == ("possible_recipes_from_hands", {"limit": 5})
    native = [
        system,
        game,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c", "content": json.dumps(CRAFTS_ANSWER)},
    ]
    prompted = [
        system,
        game,
        {
            "role": "assistant",
            "content": '{"tool": "possible_recipes_from_hands", "arguments": {"limit": 5}}',
        },
        {"role": "user", "content": "Result of possible_recipes_from_hands: " + json.dumps(CRAFTS_ANSWER)},
    ]
    retried = [
        *prompted,
        {"role": "assistant", "content": "I will craft a torch."},
        {
            "role": "user",
            "content": 'Your answer was not a call. Answer with {"tool": ..., "arguments": {...}}.',
        },
    ]
    for messages in (native, prompted, retried):
        assert player.decide({"messages": messages}) == ("craft", {"recipe": "torch", "runs": 2})


def test_a_whole_move_over_http_in_prompted_mode_follows_the_results() -> None:
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour="bare_json") as server:
        messages: list[dict[str, Any]] = [{"role": "user", "content": CRAFT_GAME}]
        first = post(server.base_url, {"messages": messages})["choices"][0]["message"]["content"]
        assert objects_in(first)[0]["name"] == "possible_recipes_from_hands"
        messages += [
            {"role": "assistant", "content": first},
            {
                "role": "user",
                "content": "Result of possible_recipes_from_hands: " + json.dumps(CRAFTS_ANSWER),
            },
        ]
        second = post(server.base_url, {"messages": messages})["choices"][0]["message"]["content"]
        assert objects_in(second)[0]["name"] == "craft"


@pytest.mark.slow  # an interpreter importing the agent stack
def test_the_command_line_lists_the_behaviours() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "agents.testing.openai_server", "--list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.returncode == 0 and all(name in listing.stdout for name in BEHAVIOURS)


@pytest.mark.slow  # an interpreter importing the agent stack
@pytest.mark.parametrize("stop_with", [signal.SIGINT, signal.SIGTERM])
def test_the_command_line_serves_until_interrupted(stop_with: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "agents.testing.openai_server", "--behaviour", "fenced_json", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # as a shell starts a background job: SIGINT ignored (the server takes it back)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        url = re.search(r"(http://\S+/v1)", banner).group(1)
        hint = process.stdout.readline() + process.stdout.readline()
        assert f"OPENAI_BASE_URL={url}" in hint and "tradecraft play --players" in hint
        content = post(url, game_request())["choices"][0]["message"]["content"]
        assert "```json" in content
        process.send_signal(stop_with)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Stopped after 1 requests" in out
