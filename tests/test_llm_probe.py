"""The probe (agents/llm/probe.py) against the project's test server: scripted answers to the probe's
requests choose each mode, an explicit option skips it, the result is cached per endpoint and model for
the process (one probe however many agents start at once), and the mode chosen is in the traces and in an
experiment's manifest."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_support import llm_agent, play_llm, trace_records

from agents.llm.probe import PROBE_MARKER, cached_probe, clear_probe_cache
from agents.testing.openai_server import OpenAITestServer, Reply
from agents.testing.scripted_player import ScriptedPlayer

CONFIRM = Reply(tool_calls=[("confirm", {"ready": True})])
CONFIRM_JSON = Reply(content='{"tool": "confirm", "arguments": {"ready": true}}')
PROSE = Reply(content="Ready when you are!")


@pytest.fixture(autouse=True)
def _fresh_probe_cache() -> None:
    clear_probe_cache()


def probe_requests(server: OpenAITestServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if PROBE_MARKER in str(r["messages"][-1]["content"])]


@pytest.mark.parametrize(
    ("answers", "mode", "tool_choice"),
    [
        ([CONFIRM], "native", "auto"),
        ([PROSE, CONFIRM], "native", "required"),
        ([PROSE, PROSE, CONFIRM_JSON], "json_schema", None),
        ([PROSE, PROSE, Reply(content="```json\n{}\n```")], "prompted", None),
    ],
)
def test_the_probe_picks_the_first_mode_that_works(
    answers: list[Reply], mode: str, tool_choice: str | None
) -> None:
    pass_now = (
        Reply(tool_calls=[("pass", {})])
        if mode == "native"
        else Reply(content='{"tool": "pass", "arguments": {}}')
    )
    with OpenAITestServer([*answers, pass_now], policy=ScriptedPlayer(), answer_probes=False) as server:
        agent = llm_agent(server)
        result = play_llm(agent, max_turns=1)
        probes = probe_requests(server)
        game_request = server.requests[len(answers)]
    assert len(probes) == len(answers)
    first = probes[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["confirm"] and first["tool_choice"] == "auto"
    if len(probes) > 1:
        assert probes[1]["tool_choice"] == "required"
    if len(probes) > 2:
        schema = probes[2]["response_format"]["json_schema"]["schema"]
        assert "tools" not in probes[2] and schema["properties"]["tool"] == {"const": "confirm"}
    record = trace_records(result, "llm_probe")[0]
    assert (record["mode"], record["tool_choice"], record["cached"]) == (mode, tool_choice, False)
    assert [t["outcome"] for t in record["tries"]][-1] == ("ok" if mode != "prompted" else "no")
    # the game's requests are made in that mode
    assert ("tools" in game_request) == (mode == "native")
    assert ("response_format" in game_request) == (mode == "json_schema")
    if mode == "native":
        assert game_request["tool_choice"] == tool_choice
    settings = trace_records(result, "llm_prefix")[0]["settings"]
    assert (settings["tool_mode"], settings["tool_choice"], settings["probed"]) == (mode, tool_choice, True)
    assert trace_records(result, "decision")[0]["tool_mode"] == mode
    # every probe request is an llm_call too (tokens and cost counted), marked as the probe
    probe_calls = [c for c in trace_records(result, "llm_call") if c.get("probe")]
    assert len(probe_calls) == len(answers) and all(c["decision"] is None for c in probe_calls)


def test_an_explicit_tool_mode_or_tool_choice_overrides_the_probe() -> None:
    with OpenAITestServer(
        [Reply(content='{"tool": "pass", "arguments": {}}')], policy=ScriptedPlayer()
    ) as server:
        result = play_llm(llm_agent(server, tool_mode="prompted"), max_turns=1)
        assert not probe_requests(server)
    assert not trace_records(result, "llm_probe")
    assert trace_records(result, "llm_prefix")[0]["settings"]["probed"] is False
    with OpenAITestServer([CONFIRM], policy=ScriptedPlayer(), answer_probes=False) as server:
        result = play_llm(llm_agent(server, tool_choice="required"), max_turns=1)
        assert server.requests[1]["tool_choice"] == "required"  # the probe found auto; the option wins
    assert trace_records(result, "llm_prefix")[0]["settings"]["tool_choice"] == "required"


def test_one_probe_per_endpoint_and_model_however_many_agents_start_at_once() -> None:
    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        agents = [llm_agent(server, seed=seat) for seat in range(4)]
        results: list[Any] = []
        threads = [threading.Thread(target=lambda a=a: results.append(play_llm(a))) for a in agents]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(probe_requests(server)) == 1
        cached = [trace_records(r, "llm_probe")[0]["cached"] for r in results]
        assert sorted(cached) == [False, True, True, True]
        assert cached_probe(agents[0].model) is not None
        play_llm(llm_agent(server), max_turns=1)  # a later game in the process: no new probe
        assert len(probe_requests(server)) == 1
    assert all(not trace_records(r, "fallback") for r in results)


def test_a_probe_that_never_reached_the_model_is_not_cached() -> None:
    down = [Reply(status=503, content="loading")] * 3
    with OpenAITestServer(down, policy=ScriptedPlayer(), answer_probes=False) as server:
        result = play_llm(llm_agent(server, provider_retries=0), max_turns=1)
        record = trace_records(result, "llm_probe")[0]
        assert record["mode"] == "prompted" and {t["outcome"] for t in record["tries"]} == {"provider_failed"}
        assert cached_probe(llm_agent(server).model) is None
        again = play_llm(llm_agent(server), max_turns=1)  # the server is up now: probed again
    assert trace_records(again, "llm_probe")[0]["mode"] == "native"
    assert not trace_records(again, "fallback")


@pytest.mark.slow
def test_the_mode_chosen_lands_in_the_experiment_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from experiment_support import bots_config, scripted_provider, validated

    from agents.experiments.executors import LocalExecutor
    from agents.experiments.manifest import MANIFEST_FILE
    from agents.experiments.runner import run_experiment

    raw = bots_config(
        name="llm-modes",
        focal={"agents": ["llm:openai:mini", "llm:openai:mini?tool_mode=prompted"], "tom_orders": [[0]]},
        swap_seats=False,
        game={"max_turns": 1},
    )
    out = tmp_path / "out"
    with scripted_provider(monkeypatch, ScriptedPlayer()):
        run_experiment(
            validated(raw),
            raw,
            store_url=f"sqlite:///{out / 'store.db'}",
            out=out,
            executor=LocalExecutor(1),
            progress=False,
        )
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    settings = [p["settings"] for p in manifest["prompts"]["system_prompts"]]
    modes = {(s["tool_mode"], s["probed"]) for s in settings}
    assert ("native", True) in modes and ("prompted", False) in modes


def moves_of(result: Any) -> list[tuple[str, Any, str]]:
    return [
        (r["decision"], r.get("action"), r["trace"])
        for r in (t.model_dump() for t in result.traces)
        if r.get("trace") in ("decision", "fallback")
    ]


@pytest.mark.slow
def test_the_probe_has_its_own_fixed_seeds_and_the_game_is_the_same_whether_it_probed_or_not() -> None:
    probe_seeds = []
    for seed in (0, 1):
        # runaway: a request with an even seed runs on until max_tokens, one with an odd seed calls the tool
        with OpenAITestServer(policy=ScriptedPlayer(), behaviour="runaway") as server:
            probing = play_llm(llm_agent(server, seed=seed), max_turns=1, seed=seed)
            probe_seeds.append([r["seed"] for r in probe_requests(server)])
            cached = play_llm(llm_agent(server, seed=seed), max_turns=1, seed=seed)
        assert [p["cached"] for p in trace_records(cached, "llm_probe")] == [True]
        assert moves_of(probing) == moves_of(cached)
        # the probe's requests are not the first move's
        game_calls = [c for c in trace_records(probing, "llm_call") if not c.get("probe")]
        assert game_calls[0]["attempts"][0]["attempt"] == 0
        first_move = next(
            r for r in (t.model_dump() for t in probing.traces) if r.get("trace") in ("decision", "fallback")
        )
        first_calls = [c for c in game_calls if c["decision"] == first_move["decision"]]
        assert first_move["attempts"] == sum(len(c["attempts"]) for c in first_calls)
    assert probe_seeds[0] == probe_seeds[1]  # whatever the agent's seed


def test_a_client_pointed_at_a_local_server_by_openai_base_url_is_probed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langchain_openai import ChatOpenAI

    from agents.llm.agent import LLMAgent

    with OpenAITestServer(policy=ScriptedPlayer()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_BASE", raising=False)
        model = ChatOpenAI(model="test-model", api_key="sk-test-placeholder-0000", max_retries=0, timeout=5)
        result = play_llm(LLMAgent(model, model_name="openai:test-model"), max_turns=1)
        probes = server.probes
    assert probes > 0 and [p["mode"] for p in trace_records(result, "llm_probe")] == ["native"]
    assert cached_probe(model) is not None
