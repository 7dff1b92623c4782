"""The LangChain tools: generated from the action and query declarations, typed errors, strict round trip,
and LangChain's own agent constructor driving them through the real ChatOpenAI over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_support import Recording
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from agents.connection import SeatConnection
from agents.llm.decision import DecisionConnection
from agents.llm.tools import ACTION_TOOLS, QUERY_TOOLS, SeatTools, make_tools, tool_call_args, tool_specs
from agents.local_connection import LocalConnection
from agents.testing.openai_server import OpenAITestServer, Reply
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance
from server.game import Game, GameError, GameSettings, player_view, viewer_log
from server.game.actions import ACTION_MODELS, Pass, parse_action
from server.game.queries import QUERY_MODELS, parse_query, run_query
from server.game.schemas import strict_args_schema

RULES = load_rule_set("minecraft")


def small_game(**settings: Any) -> Game:
    instance = TaskInstance(
        id="test/1p_v_1p/tools#0",
        ruleset="minecraft",
        mode="1p_v_1p",
        hands=({"oak_log": 2, "coal": 2, "stick": 3}, {"cobblestone": 5, "raw_iron": 1}),
        targets=({"torch": 4}, {"stone_pickaxe": 1}),
    )
    return Game.new(instance, GameSettings(ruleset="minecraft", **settings), RULES, seed=0)


def test_one_tool_per_action_and_query_with_the_papers_names_and_the_models_schemas() -> None:
    specs = {spec.name: spec for spec in tool_specs()}
    assert list(ACTION_TOOLS) == ["report_tom", "propose", "pass", "decide", "craft", "finish_crafting"]
    assert "item_info" in specs and "possible_recipes_from_hands" in specs
    assert specs["possible_recipes_from_hands"].model is QUERY_MODELS["possible_crafts"]
    assert "resign" not in specs and "timeout" not in specs
    for spec in specs.values():
        models = ACTION_MODELS if spec.kind == "action" else QUERY_MODELS
        assert spec.model is models[spec.type]
        schema = spec.args_schema()
        # the model's own fields, the type tag left to the tool name; descriptions from the model
        assert set(schema["properties"]) == set(spec.model.model_fields) - {"type"}
        assert spec.description().split()[0] in (spec.model.__doc__ or "")
    offer = specs["propose"].args_schema()["properties"]["offer"]
    assert offer["description"] == ACTION_MODELS["propose"].model_fields["offer"].description
    tools = make_tools(LocalConnection(small_game(), 0))
    assert [t.name for t in tools] == list(ACTION_TOOLS) + list(QUERY_TOOLS)
    assert all(t.description for t in tools)


def test_tools_act_and_query_through_the_connection_with_the_engines_typed_errors() -> None:
    game = small_game(tom_orders=[[0], []])
    tools = {t.name: t for t in make_tools(LocalConnection(game, 0), max_queries=2)}
    items = sorted(game.tom_items)
    before = len(game.events)
    # a value outside 0-10: the parser's typed error; nothing reaches the game
    answer = json.loads(tools["report_tom"].invoke({"v0": dict.fromkeys(items, 11)}))
    assert answer["error"]["code"] == "invalid_action" and "v0" in answer["error"]["message"]
    # an item that is in no hand: the engine's typed error
    answer = json.loads(tools["report_tom"].invoke({"v0": {**dict.fromkeys(items, 3), "diamond": 2}}))
    assert answer["error"]["code"] == "invalid_tom_report"
    # not this seat's phase
    assert json.loads(tools["pass"].invoke({}))["error"]["code"] == "wrong_phase"
    assert len(game.events) == before
    # queries answer without advancing the game, within the per-decision bound
    crafts = json.loads(tools["possible_recipes_from_hands"].invoke({"limit": 3}))
    assert crafts["ok"] and crafts["answer"]["type"] == "possible_crafts" and crafts["answer"]["crafts"]
    info = json.loads(tools["item_info"].invoke({"item": "no_such_thing"}))
    assert info["error"]["code"] == "unknown_item"
    assert json.loads(tools["recipe_search"].invoke({"text": "torch"}))["error"]["code"] == "query_limit"
    assert len(game.events) == before
    assert json.loads(tools["report_tom"].invoke({"v0": dict.fromkeys(items, 4)}))["ok"]
    assert game.events[before].type == "tom_reported"


def test_a_query_the_parser_refuses_spends_none_of_the_budget() -> None:
    tools = SeatTools(LocalConnection(small_game(), 0), max_queries=1)
    refused = tools.call("item_info", {"item": "torch", "colour": "red"})  # parsed by the connection's side
    assert refused["error"]["code"] == "invalid_query" and refused["error"]["details"]["problems"]
    assert tools.queries_asked == 0
    assert tools.call("item_info", {"item": "torch"})["ok"] and tools.queries_asked == 1
    assert tools.call("item_info", {"item": "coal"})["error"]["code"] == "query_limit"


@pytest.mark.parametrize(
    "obj",
    [
        {"type": "propose", "to": 1, "offer": {"coal": 1, "stick": 2}, "request": {"cobblestone": 3}},
        {"type": "report_tom", "v0": {"coal": 3, "stick": 0}, "v1": {"1": {"coal": 10, "stick": 1}}},
        {"type": "craft", "recipe": "torch", "runs": "1/4", "choices": {0: "coal"}, "fuel": None},
        {"type": "decide", "accept": True, "message": "deal"},
        {"type": "finish_crafting"},
        {"type": "craftable", "item": "torch", "count": 2},
        {"type": "history", "since_n": 3, "limit": 5},
    ],
)
def test_strict_rendering_round_trips_to_the_same_action_or_query(obj: dict[str, Any]) -> None:
    recording = Recording()
    tools = SeatTools(recording, strict=True)
    name, args = tool_call_args(obj, strict=True)
    spec = tools.specs[name]
    schema = spec.args_schema(strict=True)
    assert set(schema["required"]) == set(schema["properties"]) and schema["additionalProperties"] is False
    assert schema["properties"].keys() == strict_args_schema(spec.model)["properties"].keys() - {"type"}
    # the strict tool's result is JSON text of the connection's answer; what reached it parses the same
    result = json.loads(tools.tools([name])[0].invoke(args))
    assert result["ok"]
    parse = parse_action if spec.kind == "action" else parse_query
    assert parse(recording.sent[-1]) == parse(obj)


def test_reasoning_in_a_message_never_reaches_the_game() -> None:
    recording = Recording()
    tools = SeatTools(recording)
    tools.call("decide", {"accept": False, "message": "<think>they need coal badly</think>No, thanks."})
    assert recording.sent[-1]["message"] == "No, thanks."


def test_a_decision_connection_answers_queries_from_the_view_and_holds_the_action() -> None:
    game = small_game()
    view = player_view(game, 0)
    seat_log = viewer_log(game.events, 0)
    conn: SeatConnection = DecisionConnection(view, RULES, seat_log)
    assert isinstance(conn, SeatConnection)
    same = run_query(game, 0, {"type": "possible_crafts"})
    assert conn.query({"type": "possible_crafts"}) == {"ok": True, "answer": same}
    assert conn.query({"type": "history", "limit": 2})["answer"] == run_query(
        game, 0, {"type": "history", "limit": 2}
    )
    assert conn.act({"type": "decide", "accept": True})["error"]["code"] == "wrong_phase"
    assert conn.act({"type": "pass", "extra": 1})["error"]["code"] == "invalid_action"
    proposal = {"type": "propose", "to": 1, "offer": {"coal": 3}, "request": {}}
    refused = conn.act(proposal)["error"]
    assert refused["code"] == "item_not_held" and refused["details"]["held"] == 2
    with pytest.raises(GameError) as engine:  # the engine's own judgement of the same move
        game.apply(0, proposal)
    assert engine.value.to_dict() == refused
    assert conn.act({"type": "pass"}) == {"ok": True, "submitted": "pass"}
    assert conn.submitted == Pass() and game.phase == "trade_propose"  # the parsed model, held, not applied


def test_langchains_create_agent_plays_through_the_tools_over_http() -> None:
    game = small_game()
    script = [
        Reply(tool_calls=[("possible_recipes_from_hands", {"limit": 5})], usage=(300, 12)),
        Reply(tool_calls=[("propose", {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 2}})]),
        Reply(content="I proposed coal for cobblestone."),
    ]
    with OpenAITestServer(script) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="sk-test", model="m", max_retries=0, timeout=5)
        agent = create_agent(
            model, make_tools(LocalConnection(game, 0)), system_prompt="You play TradeCraft."
        )
        result = agent.invoke({"messages": [{"role": "user", "content": "Your move: propose or pass."}]})
        sent_tools = {t["function"]["name"] for t in server.requests[0]["tools"]}
        tool_answers = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert sent_tools == set(ACTION_TOOLS) | set(QUERY_TOOLS)
    assert json.loads(tool_answers[0]["content"])["answer"]["type"] == "possible_crafts"
    proposed = [e for e in game.events if e.type == "proposed"]
    assert proposed and proposed[0].payload["offer"] == {"coal": 1} and game.phase == "trade_decide"
    assert result["messages"][-1].content == "I proposed coal for cobblestone."


def test_a_decision_connection_checks_a_tom_report_against_the_duty_like_the_engine() -> None:
    game = small_game(tom_orders=[[0, 1], []])
    view = player_view(game, 0)
    conn = DecisionConnection(view, RULES)
    items = sorted(view["tom"]["items"])
    for report in (
        {"type": "report_tom", "v0": dict.fromkeys(items[1:], 3), "v1": {"1": dict.fromkeys(items, 3)}},
        {"type": "report_tom", "v0": dict.fromkeys(items, 3), "v1": {"2": dict.fromkeys(items, 3)}},
        {
            "type": "report_tom",
            "v0": dict.fromkeys(items, 3),
            "v1": {"1": {**dict.fromkeys(items, 3), "egg": 1}},
        },
    ):
        mine = conn.act(report)["error"]
        with pytest.raises(GameError) as engine:
            game.apply(0, report)
        assert mine == engine.value.to_dict() and mine["code"] == "invalid_tom_report"
    good = {"type": "report_tom", "v0": dict.fromkeys(items, 3), "v1": {"1": dict.fromkeys(items, 7)}}
    assert conn.act(good)["ok"] and game.apply(0, good)


@pytest.mark.parametrize(
    "message",
    [
        "squeeze them later</think>Deal!",  # the template wrote the opening tag
        "<thinking>they need coal</thinking>Deal!",
        "<THINK>a</think>Deal!<think>b",
    ],
)
def test_every_form_of_reasoning_is_cut_from_a_message(message: str) -> None:
    recording = Recording()
    SeatTools(recording).call("decide", {"accept": True, "message": message})
    assert recording.sent[-1]["message"] == "Deal!"
