"""The LLM agent through whole local games, driving the real ChatOpenAI against the project's
OpenAI-compatible test server over HTTP: ToM reports, recovery from malformed, illegal and failed
calls, provider faults, reasoning kept out of the game, strict mode, `tradecraft play --log` traces."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from agents.bots.random_bot import RandomBot
from agents.bots.registry import make_policy
from agents.cli import play_command
from agents.llm.agent import AgentSettings, LLMAgent
from agents.local import LocalResult, play_local
from agents.testing.openai_server import OpenAITestServer, Reply
from agents.testing.scripted_player import ScriptedPlayer
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance
from server.game import Game, GameError, GameSettings
from server.game.gamelog import decode_log, encode_log

RULES = load_rule_set("minecraft")
INSTANCE = TaskInstance(
    id="test/1p_v_1p/llm#0",
    ruleset="minecraft",
    mode="1p_v_1p",
    hands=({"oak_log": 2, "coal": 2, "stick": 3}, {"cobblestone": 5, "raw_iron": 1}),
    targets=({"torch": 4}, {"stone_pickaxe": 1}),
)
SECRET_KEY = "sk-test-do-not-log-0123456789"


def agent_for(server: OpenAITestServer, timeout: float = 5.0, **settings: Any) -> LLMAgent:
    """An agent in native mode (these scripts are native tool calls; tests of the other modes and of the
    probe are in test_llm_modes.py and test_llm_probe.py)."""
    model = ChatOpenAI(
        base_url=server.base_url, api_key=SECRET_KEY, model="test-model", max_retries=0, timeout=timeout
    )
    defaults: dict[str, Any] = {"backoff_base": 0.005, "backoff_cap": 0.05, "tool_mode": "native"}
    return LLMAgent(model, model_name="openai:test-model", settings=AgentSettings(**{**defaults, **settings}))


def play(
    agent: LLMAgent, max_turns: int = 2, tom: list[list[int]] | None = None, seed: int = 0
) -> LocalResult:
    settings = GameSettings(ruleset="minecraft", max_turns=max_turns, tom_orders=tom or [])
    return play_local(INSTANCE, settings, RULES, [agent, RandomBot(seed)], seed, clock=time.time)


def traces(result: LocalResult, kind: str) -> list[dict[str, Any]]:
    return [t.model_dump() for t in result.traces if t.model_extra.get("trace") == kind]


def roundtrip(result: LocalResult) -> str:
    text = "".join(encode_log(result.game_log(seats=[{"seat": 0, "kind": "llm", "model": "test-model"}])))
    decode_log(text.splitlines())  # the log stays valid with its traces
    return text


@pytest.mark.slow
@pytest.mark.parametrize("orders", [[0], [0, 1], [0, 1, 2]])
def test_tom_reports_of_each_order_set_land_in_the_log(orders: list[int]) -> None:
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        result = play(agent_for(server), max_turns=2, tom=[orders, []])
    reports = [e for e in result.events if e.type == "tom_reported" and e.payload["seat"] == 0]
    assert len(reports) == 2
    for report in reports:
        assert (
            set(report.payload["v0"]) == set(INSTANCE.hands[0]) | set(INSTANCE.hands[1])
            or report.payload["turn"] > 1
        )
        assert all(0 <= v <= 10 for v in report.payload["v0"].values())
        assert (report.payload["v1"] is not None) == (1 in orders)
        assert (report.payload["v2"] is not None) == (2 in orders)
    log = roundtrip(result)
    assert '"tom_reported"' in log and '"trace": "llm_call"' in log
    assert not traces(result, "fallback")


@pytest.mark.slow
def test_malformed_json_an_illegal_trade_a_timeout_and_a_429_are_each_recovered_from() -> None:
    script = [
        Reply(tool_calls=[("propose", '{"to": 1, "offer": {"coal": ')]),  # malformed JSON
        Reply(status=429, retry_after=0.01, content="slow down"),
        Reply(delay=2.5, tool_calls=[("pass", {})]),  # longer than the client's timeout
        Reply(tool_calls=[("propose", {"to": 1, "offer": {"coal": 5}, "request": {}})]),  # not held
        Reply(tool_calls=[("propose", {"to": 1, "offer": {}, "request": {}})]),  # an empty trade
        Reply(tool_calls=[("propose", {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 1}})]),
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        agent = agent_for(server, timeout=1.0, max_invalid=4)
        result = play(agent, max_turns=1)
    assert result.end_reason == "max_turns" and agent.fallbacks == 0
    proposals = [e for e in result.events if e.type == "proposed"]
    assert proposals[0].payload["offer"] == {"coal": 1}
    # the malformed call and the illegal trades got their typed errors as tool results, in the engine's words
    answers = [r["answer"] for t in traces(result, "tool_results") for r in t["results"]]
    assert answers[0]["error"]["code"] == "invalid_action"
    assert "not valid JSON" in answers[0]["error"]["message"]
    assert answers[1]["error"]["code"] == "item_not_held" and answers[1]["error"]["details"]["held"] == 2
    empty = Game.new(INSTANCE, GameSettings(ruleset="minecraft", max_turns=1), RULES, 0)
    with pytest.raises(GameError) as engine:
        empty.apply(0, {"type": "propose", "to": 1})
    assert answers[2]["error"] == engine.value.to_dict()
    # the 429 and the timeout were retried with backoff (Retry-After honoured)
    retried = [r for t in traces(result, "llm_call") for r in t["provider_retries"]]
    assert retried[0]["kind"] == "rate_limit" and retried[0]["status"] == 429
    assert retried[0]["wait_s"] >= 0.01
    assert retried[1]["kind"] == "timeout" and retried[1]["status"] is None
    # every refusal came before submitting: the game never had to refuse a move
    assert not traces(result, "refused") and result.refusals == 0


def test_a_move_the_engine_refuses_after_all_is_told_to_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    # a view the tools judged that no longer holds when the move is applied (here: a check that passes all)
    monkeypatch.setattr("agents.llm.decision.check_against_view", lambda view, action, rules: None)
    script = [
        Reply(tool_calls=[("propose", {"to": 1, "offer": {}, "request": {}})]),
        Reply(tool_calls=[("propose", {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 1}})]),
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play(agent_for(server), max_turns=1)
        requests = server.requests
    refused = traces(result, "refused")
    assert refused[0]["error"]["code"] == "empty_trade" and refused[0]["event_seq"] is None
    assert refused[0]["action"] == {"type": "propose", "to": 1, "offer": {}, "request": {}, "message": ""}
    told = [m["content"] for m in requests[1]["messages"] if m["role"] == "user"][-1]
    assert told.startswith("The game refused your propose: [empty_trade]")
    assert result.refusals == 1
    assert [e.payload["offer"] for e in result.events if e.type == "proposed"] == [{"coal": 1}]


def test_a_proposal_from_a_tool_call_is_parsed_once_on_its_way_to_the_game(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import server.game.actions as actions

    parse = actions.parse_tagged
    proposals_parsed: list[Any] = []

    def counting(obj: Any, models: Any, code: str, noun: str) -> Any:
        parsed = parse(obj, models, code, noun)
        if not isinstance(obj, BaseModel) and parsed.type == "propose":  # parsed from JSON
            proposals_parsed.append(obj)
        return parsed

    monkeypatch.setattr(actions, "parse_tagged", counting)
    offer = {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 1}, "message": "a swap?"}
    with OpenAITestServer([Reply(tool_calls=[("propose", offer)])], policy=ScriptedPlayer()) as server:
        result = play(agent_for(server), max_turns=1)
    proposed = [e.payload for e in result.events if e.type == "proposed"]
    assert len(proposed) == 1 and proposed[0]["offer"] == {"coal": 1} and proposed[0]["message"] == "a swap?"
    assert proposals_parsed == [{**offer, "type": "propose"}]


def test_every_bad_answer_gets_a_typed_error_then_the_fallback_is_logged() -> None:
    script = [
        Reply(content="I think I will pass."),  # no tool call
        Reply(tool_calls=[("resign", {})]),  # no such tool
        Reply(tool_calls=[("propose", {"to": "one", "offer": {"coal": 1}})]),  # wrong argument shape
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        agent = agent_for(server, max_invalid=3)
        result = play(agent, max_turns=1)
    errors = [t["error"]["code"] for t in traces(result, "tool_error")]
    errors += [
        r["answer"]["error"]["code"]
        for t in traces(result, "tool_results")
        for r in t["results"]
        if not r["answer"]["ok"]
    ]
    assert errors[:3] == ["not_a_tool_call", "unknown_tool", "invalid_action"]
    fallback = traces(result, "fallback")[0]
    assert fallback["reason"] == "too_many_invalid_calls" and fallback["action"] == {"type": "pass"}
    passed = result.events[fallback["event_seq"]]
    assert passed.type == "passed" and passed.actor == 0


@pytest.mark.slow
def test_with_20_percent_provider_faults_20_of_20_games_complete_and_every_fallback_is_logged() -> None:
    fallbacks = logged = 0
    with OpenAITestServer(policy=ScriptedPlayer(), fault_rate=0.2, seed=11) as server:
        for game in range(20):
            agent = agent_for(server, provider_retries=1)
            result = play(agent, max_turns=2, seed=game)
            assert result.game.finished
            fallbacks += agent.fallbacks
            records = traces(result, "fallback")
            logged += len(records)
            for record in records:
                assert record["reason"] == "provider_failed"
                assert result.events[record["event_seq"]].actor == 0  # linked to the move it made
            assert '"trace": "fallback"' in roundtrip(result) or not records
        faults = server.faults_injected
    assert faults > 20 and fallbacks > 0 and logged == fallbacks


def test_an_outage_ends_in_the_fallback_within_the_games_retry_budget() -> None:
    with OpenAITestServer([Reply(status=503, content="down")] * 200) as server:
        agent = agent_for(server, provider_retries=2, game_retry_budget=4)
        started = time.monotonic()
        result = play(agent, max_turns=2)
    assert result.game.finished and time.monotonic() - started < 10
    reasons = [t["reason"] for t in traces(result, "fallback")]
    assert reasons and set(reasons) <= {"provider_failed", "provider_budget_spent"}
    assert "provider_budget_spent" in reasons and agent.retries_used == 4


def test_a_think_block_stays_in_the_trace_and_never_reaches_the_game() -> None:
    script = [
        Reply(
            content="<think>My plan: hoard the coal and bluff.</think>",
            tool_calls=[
                (
                    "propose",
                    {
                        "to": 1,
                        "offer": {"stick": 1},
                        "request": {"cobblestone": 1},
                        "message": "<think>they will never notice</think>Fair swap?",
                    },
                )
            ],
            usage=(1234, 56),
        )
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play(agent_for(server), max_turns=1)
        later_prompts = json.dumps(server.requests[1:])
    events = json.dumps([e.to_dict() for e in result.events])
    assert "hoard" not in events and "never notice" not in events
    assert [e.payload["message"] for e in result.events if e.type == "proposed"] == ["Fair swap?"]
    first = traces(result, "llm_call")[0]
    assert "My plan: hoard the coal" in first["reasoning"]
    assert first["tokens"] == {"prompt_tokens": 1234, "completion_tokens": 56, "source": "provider"}
    assert "hoard" not in later_prompts  # memory keeps the calls, not the reasoning


def test_strict_mode_round_trips_through_the_test_server() -> None:
    player = ScriptedPlayer(accept_every=1)
    with OpenAITestServer(policy=player) as server:
        result = play(agent_for(server, strict=True), max_turns=2, tom=[[0, 1, 2], [0]])
        tools = server.requests[0]["tools"]
        system = server.requests[0]["messages"][0]["content"]
    assert "lists of pairs" in system
    propose = next(t["function"] for t in tools if t["function"]["name"] == "propose")
    offer_schema = propose["parameters"]["properties"]["offer"]
    pairs = next(option for option in offer_schema["anyOf"] if option["type"] == "array")["items"]
    assert propose["strict"] is True and set(pairs["properties"]) == {"item", "count"}
    assert all(t["function"]["parameters"]["additionalProperties"] is False for t in tools)
    calls = [c for t in traces(result, "llm_call") for c in t["completion"]["tool_calls"]]
    proposed = next(c for c in calls if c["name"] == "propose")
    assert isinstance(proposed["args"]["offer"], list)  # pairs on the wire ...
    event = next(e for e in result.events if e.type == "proposed" and e.actor == 0)
    offer = proposed["args"]["offer"][0]
    assert event.payload["offer"] == {offer["item"]: offer["count"]}  # ... the same action in the game
    report = next(e for e in result.events if e.type == "tom_reported" and e.actor == 0)
    assert set(report.payload["v2"]) == {"1"} and not traces(result, "fallback")


def test_queries_mid_turn_do_not_advance_the_game_and_are_bounded() -> None:
    script = [
        Reply(tool_calls=[("item_info", {"item": "torch"}), ("recipe_search", {"text": "torch"})]),
        Reply(tool_calls=[("craftable", {}), ("history", {"limit": 3})]),
        Reply(tool_calls=[("pass", {})]),
    ]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play(agent_for(server, max_queries=3), max_turns=1)
    results = [r for t in traces(result, "tool_results") for r in t["results"]]
    assert [r["answer"]["ok"] for r in results[:4]] == [True, True, True, False]
    assert results[3]["answer"]["error"]["code"] == "query_limit"
    decision = traces(result, "decision")[0]
    assert decision["action"] == {"type": "pass"} and decision["queries"] == 3
    assert decision["event_seq"] is not None and result.events[decision["event_seq"]].type == "passed"


def test_memory_stays_within_its_token_budget_behind_the_stable_prefix() -> None:
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        agent = agent_for(server, memory_tokens=400)
        result = play(agent, max_turns=3)
        systems = {r["messages"][0]["content"] for r in server.requests}
    assert len(systems) == 1  # the same prefix every call: provider caches hit
    calls = traces(result, "llm_call")
    prefix = traces(result, "llm_prefix")[0]
    assert prefix["tokens"] == calls[0]["prefix_tokens_o200k"] > 1000
    for call in calls:
        # the prompt = the prefix + at most the budget of older moves + the current move
        current = call["prompt_tokens_o200k"] - call["prefix_tokens_o200k"]
        assert current < 400 + 2000
    assert max(len(c["prompt"]) for c in calls) < 20


def test_tradecraft_play_writes_llm_traces_without_the_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
        done = CliRunner().invoke(
            play_command,
            ["--players", "llm:openai:test-model?tom=0,1,random", "--max-turns", "1", "--log", str(out)],
        )
        sent_keys = {r.get("model") for r in server.requests}
        seeds = [r.get("seed") for r in server.requests]
    assert done.exit_code == 0, done.output
    text = out.read_text()
    assert SECRET_KEY not in text and sent_keys == {"test-model"}
    # a sampling seed per attempt, derived from the seat's seed (a retry does not repeat the same draw)
    assert all(isinstance(seed, int) for seed in seeds) and len(set(seeds)) == len(seeds) > 1
    records = [json.loads(line) for line in text.splitlines()]
    header = records[0]
    assert header["seats"][0] == {
        "seat": 0,
        "kind": "llm",
        "name": "llm:openai:test-model?tom=0,1",
        "model": "openai:test-model",
    }
    assert header["settings"]["tom_orders"] == [[0, 1], []]
    kinds = {r.get("trace") for r in records if r["kind"] == "trace"}
    assert {"llm_prefix", "llm_call", "decision"} <= kinds
    assert all(r["seat"] == 0 for r in records if r["kind"] == "trace")


def test_the_llm_spec_refuses_bad_options_and_needs_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    from agents.bots.registry import PolicySpecError

    with pytest.raises(PolicySpecError, match="OPENAI_API_KEY"):
        make_policy("llm:openai:gpt-4o-mini", 0)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    for spec, option, words in [
        ("llm:openai:m?tom=1", "tom", ["tom=1", "one of 0 | 0,1 | 0,1,2"]),
        ("llm:openai:m?persona=sneaky", "persona", ["persona=sneaky", "one of none | greedy | fair"]),
        ("llm:openai:m?cot=maybe", "cot", ["cot=maybe", "0 or 1"]),
        ("llm:openai:m?memory_tokens=10.5", "memory_tokens", ["a whole number from 0 to 200000"]),
        ("llm?tom=0", "model_spec", ["needs the option 'model_spec'", "llm:<provider>:<model>"]),
        ("llm:no-such-provider:m", None, ["provider"]),
    ]:
        with pytest.raises(PolicySpecError) as info:
            make_policy(spec, 0)
        assert info.value.option == option and all(w in info.value.message for w in words), info.value.message
    agent = make_policy("llm:openai:gpt-4o-mini?tom=0,1,2&persona=fair&cot=1", 3)
    assert isinstance(agent, LLMAgent) and agent.settings.strict  # strict on for OpenAI itself
    assert agent.settings.persona == "fair" and agent.settings.reasoning == "cot"
    assert agent.settings.tom_orders == (0, 1, 2)
    assert SECRET_KEY not in repr(agent)


def test_two_llm_agents_play_each_other_through_local_connections_and_the_seat_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The path `tradecraft bot` and remote seats take: each seat's driver sends the agent's moves (the action
    models its tools parsed) through its own connection (here the in-process LocalConnection, one thread per
    seat). The tools' check against the view passes everything here, so the engine has to refuse the bad move
    (as it does when the game moved on between the view and the move)."""
    import threading

    monkeypatch.setattr("agents.llm.decision.check_against_view", lambda view, action, rules: None)
    from agents.driver import run_seat
    from agents.local_connection import LocalTable

    player = ScriptedPlayer()
    illegal_sent: list[bool] = []

    def policy(request: dict[str, Any]) -> Reply:
        last = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
        if "Your move: propose" in last and not illegal_sent:
            illegal_sent.append(True)
            return Reply(tool_calls=[("propose", {"to": 1, "offer": {}, "request": {}})])  # engine refuses
        return player(request)

    with OpenAITestServer(policy=policy) as server:
        table = LocalTable.new(
            INSTANCE, GameSettings(ruleset="minecraft", max_turns=2, tom_orders=[[0, 1], [0]]), RULES, 0
        )
        agents = [agent_for(server), agent_for(server)]
        outcomes: dict[int, Any] = {}

        def play_seat(seat: int) -> None:
            outcomes[seat] = run_seat(agents[seat], table.connection(seat), turn_timeout=30)

        threads = [threading.Thread(target=play_seat, args=(seat,)) for seat in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert table.game.finished and set(outcomes) == {0, 1}
    assert not outcomes[0].fallbacks and not outcomes[1].fallbacks
    # the refused proposal came back as the engine's error; the driver told the agent, which chose again
    assert outcomes[0].refusals[0]["error"]["code"] == "empty_trade"
    notes = [t for t in outcomes[0].traces if t.get("trace") == "refused"]
    assert notes and notes[0]["error"]["code"] == "empty_trade"
    reports = [e for e in table.game.events if e.type == "tom_reported"]
    assert {e.actor for e in reports} == {0, 1} and all(e.payload["v1"] for e in reports if e.actor == 0)
    assert all(t["seat"] in (0, 1) for o in outcomes.values() for t in o.traces)


@pytest.mark.parametrize(("persona", "cot"), [("none", False), ("greedy", True), ("selfless", False)])
def test_persona_and_reasoning_mode_shape_the_stable_prompt_only(persona: str, cot: bool) -> None:
    script = [Reply(content="Step 1: coal is scarce. Step 2: pass for now.", tool_calls=[("pass", {})])]
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        result = play(agent_for(server, persona=persona, reasoning="cot" if cot else "direct"), max_turns=1)
        system = server.requests[0]["messages"][0]["content"]
        later = json.dumps(server.requests[1:])
    assert ("# Your persona" in system) == (persona != "none")
    if persona != "none":
        assert f"You are {persona}" in system and "keep it private" in system
    assert ("think step by step" in system) == cot
    # free reasoning text goes to the trace, not to the game, and not back into the memory
    assert "coal is scarce" in traces(result, "llm_call")[0]["reasoning"]
    assert "coal is scarce" not in later and "coal is scarce" not in json.dumps(
        [e.to_dict() for e in result.events]
    )


def test_an_agent_reused_for_a_new_game_starts_afresh() -> None:
    other = TaskInstance(
        id="test/1p_v_1p/llm#1",
        ruleset="minecraft",
        mode="1p_v_1p",
        hands=({"cobblestone": 3, "stick": 2}, {"oak_log": 2, "coal": 1}),
        targets=({"stone_pickaxe": 1}, {"torch": 4}),
    )
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        agent = agent_for(server)
        play(agent, max_turns=1)
        first_calls = len(server.requests)
        settings = GameSettings(ruleset="minecraft", max_turns=1)
        play_local(other, settings, RULES, [agent, RandomBot(1)], 0)
        second = server.requests[first_calls]["messages"]
    assert "Stone Pickaxe" in second[0]["content"] and "Torch" not in second[0]["content"].split("# You")[1]
    assert len(second) == 2  # the new system prompt and the first observation: no memory of game one


@pytest.mark.slow
def test_a_slow_model_is_cut_off_by_the_moves_time_limit() -> None:
    dawdle = Reply(delay=0.15, tool_calls=[("recipe_search", {"text": "torch"})])
    with OpenAITestServer([dawdle] * 8, policy=ScriptedPlayer()) as server:
        agent = agent_for(server, move_seconds=0.4, max_queries=20, warmup_seconds=0)
        started = time.monotonic()
        result = play(agent, max_turns=1)
    fallback = traces(result, "fallback")[0]
    assert fallback["reason"] == "move_time_limit" and fallback["action"] == {"type": "pass"}
    assert time.monotonic() - started < 5 and result.game.finished


def test_a_refused_key_is_not_retried_and_never_reaches_the_trace() -> None:
    unauthorised = Reply(status=401, content=f"Incorrect API key provided: {SECRET_KEY}.")
    with OpenAITestServer([unauthorised] * 50) as server:
        agent = agent_for(server)
        result = play(agent, max_turns=1)
        sent = len(server.requests)
    calls = traces(result, "llm_call")
    assert sent == len(calls) and all(len(c["provider_retries"]) == 1 for c in calls)  # 401: no retry
    assert calls[0]["provider_retries"][0]["kind"] == "client_error"
    assert "[redacted]" in calls[0]["provider_retries"][0]["message"]
    assert SECRET_KEY not in roundtrip(result) and result.game.finished


def test_asked_again_for_the_same_move_without_a_refusal_the_agent_knows_it_did_not_go_through() -> None:
    from server.game import Game, legal_actions, player_view
    from server.game.actions import Pass

    game = Game.new(INSTANCE, GameSettings(ruleset="minecraft", max_turns=1), RULES, 0)
    script = [Reply(tool_calls=[("pass", {})]), Reply(tool_calls=[("pass", {})])]
    with OpenAITestServer(script) as server:
        agent = agent_for(server)
        view, legal = player_view(game, 0), legal_actions(game, 0)
        assert agent.act(view, legal) == Pass()  # the model its tools parsed
        assert agent.act(view, legal) == Pass()  # a runner without the hook asks again
        told = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "user"][-1]
    assert told.startswith("The game refused your pass: [not_applied]")
    assert [t["error"]["code"] for t in agent.drain_traces() if t["trace"] == "refused"] == ["not_applied"]


def test_another_provider_plays_through_init_chat_model_with_its_own_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A provider outside the OpenAI-compatible list goes through LangChain's ``init_chat_model``; Azure
    OpenAI ships with langchain-openai, so its real client can play against the test server here."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.base_url.removesuffix("/v1"))
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", SECRET_KEY)
        monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
        agent = make_policy("llm:azure_openai:team-deployment?tom=0&timeout=5&backoff=0.01", 0)
        assert isinstance(agent, LLMAgent) and type(agent.model).__name__ == "AzureChatOpenAI"
        assert not agent.settings.strict  # strict mode only by default for OpenAI itself
        result = play(agent, max_turns=1, tom=[[0], []])
        paths = list(server.paths)
    assert paths and all(p.startswith("/openai/deployments/team-deployment/chat/completions") for p in paths)
    assert [e.type for e in result.events if e.actor == 0][:1] == ["tom_reported"]
    assert not traces(result, "fallback") and SECRET_KEY not in roundtrip(result)
    settings = traces(result, "llm_prefix")[0]["settings"]  # a provider's own API: native, not probed
    assert (settings["tool_mode"], settings["probed"]) == ("native", False)
    assert not traces(result, "llm_probe")


def test_bad_value_reports_get_the_typed_errors_a_browser_gets_and_nothing_reaches_the_game() -> None:
    items = sorted(set(INSTANCE.hands[0]) | set(INSTANCE.hands[1]))
    out_of_range = {"v0": {**dict.fromkeys(items, 5), items[0]: 11}}
    not_in_hands = {"v0": {**dict.fromkeys(items, 5), "diamond": 3}}
    not_whole = {"v0": {**dict.fromkeys(items, 5), items[1]: 2.5}}
    script = [Reply(tool_calls=[("report_tom", bad)]) for bad in (out_of_range, not_in_hands, not_whole)]
    game = GameSettings(ruleset="minecraft", max_turns=1, tom_orders=[[0], []])
    with OpenAITestServer(script, policy=ScriptedPlayer()) as server:
        agent = agent_for(server, max_invalid=4)
        result = play_local(INSTANCE, game, RULES, [agent, RandomBot(0)], 0)
    answers = [r["answer"] for t in traces(result, "tool_results") for r in t["results"]]
    codes = [a["error"]["code"] for a in answers[:3]]
    assert codes == ["invalid_action", "invalid_tom_report", "invalid_action"]
    assert answers[1]["error"]["details"]["extra"] == ["diamond"]
    for bad in (out_of_range, not_in_hands, not_whole):  # what the engine (a browser's server) answers
        fresh = Game.new(INSTANCE, game, RULES, 0)
        with pytest.raises(GameError) as engine:
            fresh.apply(0, {"type": "report_tom", **bad})
        assert engine.value.code == codes[(out_of_range, not_in_hands, not_whole).index(bad)]
    reports = [e for e in result.events if e.type == "tom_reported" and e.actor == 0]
    assert len(reports) == 1 and set(reports[0].payload["v0"]) == set(items)
    assert all(isinstance(v, int) and 0 <= v <= 10 for v in reports[0].payload["v0"].values())
    assert not traces(result, "fallback") and result.refusals == 0


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ({"stop": "User:"}, "list of strings"),  # a str would become single characters
        ({"stop": ["a", "b", "c", "d", "e"]}, "at most 4"),
        ({"stop": [""]}, "non-empty"),
        ({"stop": ["x" * 33]}, "at most 32"),
        ({"stop": [7]}, "non-empty strings"),
        ({"move_seconds": 0}, "move_seconds"),
        ({"move_seconds": float("nan")}, "move_seconds"),
        ({"warmup_seconds": -1}, "warmup_seconds"),
    ],
)
def test_agent_settings_refuse_bad_stop_sequences_and_time_budgets(
    setting: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        AgentSettings(**setting)
    assert AgentSettings(stop=["\n\nUser:", "###"]).stop == ("\n\nUser:", "###")
