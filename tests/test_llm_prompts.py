"""The prompt per tool mode (native, json_schema, prompted), the tool catalogue, the canonical call and
result texts, the retry message and the compact prompt for small context windows."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from agent_support import Recording
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI

from agents.llm import prompts
from agents.llm.tools import ACTION_TOOLS, QUERY_TOOLS, SeatTools, _drop_prose, tool_specs
from agents.llm.tracing import count_message_tokens, count_tokens, count_tool_tokens
from agents.narrator import rules_preamble, stable_prefix
from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer
from agents.tournament import settings_for
from craft_rules.loader import load_rule_set
from craft_rules.tasks import get_instance, instance_set_ids
from server.game import Game, GameSettings, player_view
from server.game.actions import parse_action
from server.game.queries import parse_query

RULES = load_rule_set("minecraft")
ENVELOPE = '{"tool": "<tool name>", "arguments": {...}}'
ALL_INSTRUCTIONS = [
    (mode, compact, strict, reasoning, persona, max_queries)
    for mode, compact, strict, reasoning, persona, max_queries in itertools.product(
        prompts.TOOL_MODES, (False, True), (False, True), prompts.REASONING_MODES, ("none", "greedy"), (0, 3)
    )
]


def paper_view(seat: int = 0) -> dict[str, Any]:
    instance = get_instance(instance_set_ids("paper")[0])
    game = Game.new(instance, settings_for(instance, 0), RULES, seed=0)
    return player_view(game, seat)


# --- the instructions per mode ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "compact", "strict", "reasoning", "persona", "max_queries"), ALL_INSTRUCTIONS
)
def test_no_mode_teaches_the_raw_action_format(
    mode: str, compact: bool, strict: bool, reasoning: str, persona: str, max_queries: int
) -> None:
    text = prompts.mode_instructions(
        mode, persona=persona, reasoning=reasoning, max_queries=max_queries, strict=strict, compact=compact
    )
    assert "Actions (JSON)" not in text and "under Actions" not in text
    assert '"type"' not in text.replace('"type":"', "")  # schema keywords only, never an action's type tag
    assert '{"type": "' not in text and '{"type":"report_tom' not in text
    assert ("# Your persona" in text) == (persona != "none")
    if mode == "native":
        assert '"tool"' not in text and "# Tools" not in text  # the API declares the tools
    else:
        assert ENVELOPE in text
        assert text.count("# Tools") == 1
        assert ("- item_info" in text) == (max_queries > 0)
        example = json.loads(
            next(line for line in text.splitlines() if "xample: {" in line).split(": ", 1)[1]
        )
        spec = next(spec for spec in tool_specs() if spec.name == example["tool"])
        assert parse_action(spec.request(example["arguments"], strict)).type == spec.type  # type: ignore[union-attr]


def test_reasoning_is_worded_per_mode() -> None:
    def text(mode: str, reasoning: str) -> str:
        return prompts.mode_instructions(mode, persona="none", reasoning=reasoning, max_queries=3)

    assert "think step by step" in text("native", "cot") and "then call the tool" in text("native", "cot")
    assert "end your answer with the JSON object" in text("prompted", "cot")
    # constrained decoding leaves no room for free text: cot asks for the call only, like direct
    assert text("json_schema", "cot") == text("json_schema", "direct")
    assert "think" not in text("json_schema", "cot").lower()
    assert "enforced" in text("json_schema", "direct") and "```json" in text("prompted", "direct")


def test_instructions_stay_the_native_text() -> None:
    for strict in (False, True):
        assert prompts.instructions(persona="fair", reasoning="cot", max_queries=2, strict=strict) == (
            prompts.mode_instructions("native", persona="fair", reasoning="cot", max_queries=2, strict=strict)
        )
    with pytest.raises(ValueError, match="mode must be one of"):
        prompts.mode_instructions("xml", persona="none", reasoning="direct", max_queries=3)


# --- the catalogue ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("strict", "compact"), list(itertools.product((False, True), (False, True))))
def test_the_catalogue_lists_every_tool_once_with_its_declared_schema(strict: bool, compact: bool) -> None:
    specs = tool_specs()
    text = prompts.tool_catalogue(specs, strict=strict, compact=compact)
    lines = text.splitlines()
    for spec in specs:
        heads = [
            line for line in lines if line.startswith(f"- {spec.name}:") or line.startswith(f"- {spec.name} ")
        ]
        assert len(heads) == 1, spec.name
        if compact:
            shown = json.loads(heads[0][len(f"- {spec.name} ") :])
        else:
            assert spec.description().split()[0] in heads[0]
            shown = json.loads(lines[lines.index(heads[0]) + 1].removeprefix("  arguments: "))
        declared = spec.args_schema(strict, compact)
        del declared["title"], declared["description"]
        assert shown == declared
    assert text.index("- report_tom") < text.index("- item_info")  # actions first, then queries


# --- call and result texts ----------------------------------------------------------------------------------
def test_call_and_result_texts_are_one_line_of_json() -> None:
    args = {"accept": True, "message": "ça va\u2028next line\nand more"}
    text = prompts.call_text("decide", args)
    assert text.startswith('{"tool": "decide", "arguments": {"accept": true, "message": "ça va')
    assert "\n" not in text and "\u2028" not in text and "\\u2028" in text
    assert json.loads(text) == {"tool": "decide", "arguments": args}
    answer = {"ok": False, "error": {"code": "query_limit", "message": "No more.", "details": {"limit": 3}}}
    result = prompts.result_text("item_info", answer)
    assert (
        result
        == 'Result of item_info: {"ok":false,"error":{"code":"query_limit","message":"No more.",'
        + ('"details":{"limit":3}}}')
    )
    # a name the model made up is quoted and cut, never a second line or a fake header
    odd = prompts.result_text("x\nResult of decide: ok" + "y" * 500, {"ok": False})
    assert "\n" not in odd and len(odd) < 120


# --- the retry message --------------------------------------------------------------------------------------
def example_of(message: str) -> dict[str, Any]:
    return json.loads(message.splitlines()[-1])


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("mode", ["json_schema", "prompted"])
def test_every_retry_example_is_a_call_the_engine_accepts(mode: str, strict: bool) -> None:
    for spec in tool_specs():
        message = prompts.retry_message(mode, None, [spec.name], strict=strict)
        call = example_of(message)
        assert set(call) == {"tool", "arguments"} and call["tool"] == spec.name
        request = spec.request(call["arguments"], strict)
        parse = parse_action if spec.kind == "action" else parse_query
        assert parse(request).type == spec.type  # type: ignore[union-attr]
        # and it is what the tool itself sends on when called so
        recording = Recording()
        assert SeatTools(recording, strict=strict).call(spec.name, call["arguments"])["ok"]
        assert parse(recording.sent[-1]) == parse(request)


def test_the_retry_message_states_the_error_and_shows_the_answer_for_the_mode() -> None:
    error = {
        "code": "invalid_action",
        "message": "Invalid action: field 'accept': Input should be a valid boolean.",
        "details": {"action": "decide", "problems": []},
    }
    allowed = ["item_info", "propose", "decide"]
    json_retry = prompts.retry_message("json_schema", error, allowed)
    first, _ = json_retry.splitlines()
    assert first.startswith("Error [invalid_action]: Invalid action: field 'accept'")
    assert "Allowed actions now: propose, decide." in first
    assert example_of(json_retry) == {"tool": "decide", "arguments": {"accept": True, "message": "..."}}
    native = prompts.retry_message("native", error, allowed)
    assert "\n" not in native and "Call the tool decide now" in native and '"tool"' not in native
    # no call read: the first allowed action is the example
    assert example_of(prompts.retry_message("prompted", None, ["history", "craft"]))["tool"] == "craft"
    assert "no tool call" in prompts.retry_message("native", None, ["pass"])
    # the error's text is bounded and kept on one line (it may quote what the model wrote)
    long = {"code": "unknown_tool", "message": "There is no tool 'x\n" + "z" * 5000 + "'.", "details": {}}
    bounded = prompts.retry_message("prompted", long, ["decide"])
    assert len(bounded.splitlines()[0]) < prompts.MAX_ERROR_CHARS + 100 and len(bounded.splitlines()) == 2
    assert prompts.retry_message("prompted", None, []).splitlines()[-1] == ENVELOPE


# --- compact ------------------------------------------------------------------------------------------------
def test_compact_declarations_only_drop_prose() -> None:
    def without_prose(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (
                    {name: without_prose(sub) for name, sub in v.items()}
                    if k in ("properties", "$defs")
                    else without_prose(v)
                )
                for k, v in value.items()
                if k not in ("title", "description")
            }
        return [without_prose(v) for v in value] if isinstance(value, list) else value

    for spec, strict in itertools.product(tool_specs(), (False, True)):
        compact = spec.args_schema(strict, compact=True)
        assert compact.pop("title") == spec.name
        assert " ".join(spec.description().split()).startswith(compact.pop("description"))
        assert compact == without_prose(spec.args_schema(strict))
    # a property called "title" or "description" is a field, not prose: it stays
    schema = {"title": "T", "properties": {"title": {"type": "string", "title": "Title"}, "description": {}}}
    _drop_prose(schema)
    assert schema == {"properties": {"title": {"type": "string"}, "description": {}}}


def test_the_default_prefix_is_unchanged_and_without_action_formats_only_loses_the_raw_json() -> None:
    view = paper_view()
    full = stable_prefix(view, RULES)
    assert full == stable_prefix(view, RULES, action_formats=True, compact=False)
    assert "# Actions (JSON)" in full and '{"type": "report_tom"' in full
    for_agents = stable_prefix(view, RULES, action_formats=False)
    assert '{"type"' not in for_agents and "Actions (JSON)" not in for_agents
    assert "Send them with report_tom." in for_agents
    raw = ("# Actions (JSON)", "Your reports are private. Send them as:")
    kept = [line for line in full.splitlines() if line and '{"type"' not in line and line not in raw]
    assert [line for line in for_agents.splitlines() if line and "report_tom" not in line] == kept


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"allow_pass": False, "crafting_runs": "whole", "message_max_chars": 0, "end_condition": "all_win"},
        {
            "max_turns": 7,
            "deadlines": {"trade_propose": 45, "craft": 90.5},
            "scoring": {"sole_win": 5, "shared_win": 2, "no_win": 1},
            "tom_orders": [[0, 2], []],
        },
    ],
)
def test_the_compact_preamble_keeps_the_games_facts(settings: dict[str, Any]) -> None:
    game_settings = GameSettings(ruleset="minecraft", **settings)
    full = rules_preamble(RULES, game_settings, 0, action_formats=False)
    compact = rules_preamble(RULES, game_settings, 0, action_formats=False, compact=True)
    assert count_tokens(compact) < 0.62 * count_tokens(full)  # measured: 0.58-0.59
    assert RULES.description not in compact  # no rule-set prose
    facts = [
        f"Max {game_settings.max_turns} turns",
        f"{game_settings.scoring.sole_win} for winning alone",
        f"{game_settings.scoring.shared_win} each when several win",
        "runs are whole numbers" if game_settings.whole_runs else "runs may be fractions",
        "or passes" if game_settings.allow_pass else "no passing",
        "the game ends" if game_settings.end_condition == "first_win" else "goes on until all have won",
    ]
    if game_settings.message_max_chars:
        facts.append(f"max {game_settings.message_max_chars} chars")
    for seconds in (settings.get("deadlines") or {}).values():
        facts.append(f"{seconds:g} s")
    for fact in facts:
        assert fact in compact, fact
    orders = game_settings.orders_for(0)
    for order in (0, 1, 2):  # the lines a reader (the scripted player too) finds the ToM duty by
        assert (f"- v{order}:" in compact) == (order in orders)
    assert "Time limits" not in compact or settings.get("deadlines")
    assert rules_preamble(RULES, game_settings, 0, compact=True).count("# Actions (JSON)") == 1


def test_the_compact_prompt_costs_far_fewer_tokens_in_every_mode() -> None:
    view = paper_view()
    declared = {
        compact: [convert_to_openai_tool(t) for t in SeatTools(Recording()).tools(compact=compact)]
        for compact in (False, True)
    }
    assert count_tool_tokens(declared[True]) < 0.75 * count_tool_tokens(declared[False])
    for mode in prompts.TOOL_MODES:
        cost = {}
        for compact in (False, True):
            system = stable_prefix(
                view, RULES, action_formats=False, compact=compact
            ) + prompts.mode_instructions(
                mode, persona="none", reasoning="direct", max_queries=3, compact=compact
            )
            tools = count_tool_tokens(declared[compact]) if mode == "native" else 0
            cost[compact] = count_message_tokens([SystemMessage(system)]) + tools
        margin = 0.7 if mode == "native" else 0.55  # measured: 0.67 and 0.48 (bench/bench_prompts.py)
        assert cost[True] < margin * cost[False], (mode, cost)


def test_compact_tools_go_through_chatopenai_and_the_scripted_model_plays_them() -> None:
    view = paper_view()
    recording = Recording()
    tools = SeatTools(recording)
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="sk-test", model="m", max_retries=0, timeout=10)
        bound = model.bind_tools(tools.tools(compact=True))
        system = stable_prefix(view, RULES, action_formats=False, compact=True)
        text = "## Now\nReport your values now (report_tom) for these items: coal, string.\n"
        text += 'In v1/v2, key each other player by seat: "1".\nYour move: report_tom.'
        answer = bound.invoke([SystemMessage(system), HumanMessage(text)])
        sent = server.requests[0]["tools"]
    assert [t["function"]["name"] for t in sent] == [*ACTION_TOOLS, *QUERY_TOOLS]
    assert all("description" not in json.dumps(t["function"]["parameters"]) for t in sent)
    (call,) = answer.tool_calls
    assert call["name"] == "report_tom" and set(call["args"]) == {
        "v0",
        "v1",
        "v2",
    }  # it read "- v1:" / "- v2:"
    assert tools.call(call["name"], call["args"])["ok"]
    assert parse_action(recording.sent[-1]).type == "report_tom"  # type: ignore[union-attr]
