"""analysis.outcomes: per (game, seat) figures checked against counts made by hand from real game logs,
costs from the price table, and the summary per (agent, group)."""

from __future__ import annotations

import math
import time
from collections import Counter

import pandas as pd
import pytest
from analysis_support import FALLBACK_MOVE, LLM_MODEL, Played, minecraft, play
from langchain_openai import ChatOpenAI

from agents.bots.registry import make_policy
from agents.llm.agent import AgentSettings, LLMAgent
from agents.local import play_local
from agents.testing.openai_server import OpenAITestServer, Reply
from agents.testing.scripted_player import ScriptedPlayer
from analysis import load
from analysis.outcomes import OUTCOME_COLUMNS, SUMMARY_COLUMNS, outcome_summary, seat_outcomes
from craft_rules.tasks import get_instance
from server.game import GameSettings
from server.table.config import ModelPrice, load_settings
from server.table.costs import price_of

GAMES = (("minecraft/1p_v_1p/paper#2", 0), ("minecraft/1p_v_1p/paper#9", 2), ("minecraft/1p_v_1p/paper#5", 1))


@pytest.fixture(scope="module")
def played() -> list[Played]:
    return [play(instance_id, ["tom2", "tom0"], seed=seed, llm_seats=[0]) for instance_id, seed in GAMES]


def by_hand(game: Played, seat: int) -> dict[str, float]:
    """The figures of one seat, counted from the log's events and the LLM-like policy's own counters."""
    events = game.log.events
    proposed = [e for e in events if e.type == "proposed" and e.payload["proposer"] == seat]
    decided = [e for e in events if e.type == "decided"]
    accepted_turns = {e.payload["turn"] for e in decided if e.payload["accept"]}
    winners = game.result.winners or []
    counts = {
        "won": seat in winners,
        "sole_win": winners == [seat],
        "turns": game.result.turns,
        "proposals": len(proposed),
        "proposals_accepted": sum(1 for e in proposed if e.payload["turn"] in accepted_turns),
        "decisions": sum(1 for e in decided if e.payload["seat"] == seat),
        "accepts": sum(1 for e in decided if e.payload["seat"] == seat and e.payload["accept"]),
        "crafts": sum(1 for e in events if e.type == "crafted" and e.payload["seat"] == seat),
        "invalid_actions": 0, "retries": 0, "fallbacks": 0, "llm_calls": 0,
    }  # fmt: skip
    return counts


def llm_counts(moves: int, refusals: int) -> dict[str, int]:
    """What LLMLike leaves over ``moves`` moves: a call per answer (refused ones too), plus one failed call
    (with a provider retry) every third move, and a fallback (one invalid call) on move FALLBACK_MOVE."""
    extra, fallbacks = moves // 3, int(moves >= FALLBACK_MOVE)
    return {
        "llm_calls": moves + refusals + extra,
        "retries": extra,
        "fallbacks": fallbacks,
        "invalid_actions": extra + refusals + fallbacks,
    }


def test_outcomes_match_counts_made_by_hand(played: list[Played]) -> None:
    ds = load([game.log for game in played])
    outcomes = ds.outcomes
    assert tuple(outcomes.columns) == OUTCOME_COLUMNS and len(outcomes) == 2 * len(played)
    gpt4o = price_of(load_settings().prices.models, LLM_MODEL)
    assert gpt4o is not None
    for game in played:
        # seat 0 is the LLM-like one: a decision or fallback record per answer, refused answers included
        kinds = Counter(t.model_dump().get("trace") for t in game.log.traces if t.seat == 0)
        answers, refused = kinds["decision"] + kinds["fallback"], kinds["refused"]
        for seat in (0, 1):
            row = outcomes[(outcomes["game_id"] == game.log.game_id) & (outcomes["seat"] == seat)].iloc[0]
            expected = by_hand(game, seat)
            if seat == 0:
                expected.update(llm_counts(answers - refused, refused))
            for column, value in expected.items():
                assert row[column] == value, (game.log.game_id, seat, column)
            if expected["won"]:
                assert row["turns_to_win"] == expected["turns"]
            else:
                assert math.isnan(row["turns_to_win"])
        llm = outcomes[(outcomes["game_id"] == game.log.game_id) & (outcomes["seat"] == 0)].iloc[0]
        calls = int(llm["llm_calls"])
        assert (llm["input_tokens"], llm["cached_tokens"], llm["output_tokens"]) == (
            120 * calls,
            40 * calls,
            15 * calls,
        )
        cached_price = gpt4o.cached_input if gpt4o.cached_input is not None else gpt4o.input
        per_call = (80 * gpt4o.input + 40 * cached_price + 15 * gpt4o.output) / 1_000_000
        assert llm["cost_usd"] == pytest.approx(calls * per_call)
        bot = outcomes[(outcomes["game_id"] == game.log.game_id) & (outcomes["seat"] == 1)].iloc[0]
        assert (
            bot["cost_usd"] == 0.0 and bot["llm_calls"] == 0 and bot["agent"] == "tom0" and not bot["focal"]
        )
    # every refused answer left its LLM records unlinked to any event
    assert sum(game.result.refusals for game in played) == sum(
        1 for game in played for t in game.log.traces if t.model_dump().get("trace") == "refused"
    )


def test_response_latencies_are_summed_per_seat(played: list[Played]) -> None:
    game = played[0]
    ds = load([game.log])
    mine = [lat for e, lat in zip(game.log.events, game.log.latencies, strict=True) if e.actor == 0 and lat]
    row = ds.outcomes.iloc[0]
    assert row["latency_s"] == pytest.approx(sum(mine))
    assert row["seconds_per_move"] == pytest.approx(sum(mine) / len(mine))


def test_costs_follow_the_price_table_given(played: list[Played]) -> None:
    logs = [game.log for game in played]
    prices = {"gpt-4o": ModelPrice(input=1.0, output=2.0, cached_input=0.5)}
    outcomes = load(logs, prices=prices).outcomes
    llm = outcomes[outcomes["seat"] == 0]
    expected = llm["llm_calls"].astype(float) * (80 * 1.0 + 40 * 0.5 + 15 * 2.0) / 1_000_000
    assert llm["cost_usd"].tolist() == pytest.approx(expected.tolist())
    unpriced = load(logs, prices={"claude": ModelPrice(input=1.0, output=1.0)}).outcomes
    assert unpriced[unpriced["seat"] == 0]["cost_usd"].isna().all()  # never a guessed cost
    assert (unpriced[unpriced["seat"] == 1]["cost_usd"] == 0.0).all()


def test_summary_per_agent_and_group(played: list[Played]) -> None:
    outcomes = load([game.log for game in played]).outcomes
    summary = outcome_summary(outcomes)
    assert tuple(summary.columns) == SUMMARY_COLUMNS
    assert summary[["agent", "group"]].values.tolist() == [[LLM_MODEL, "V0+V1+V2"]]  # focal seats only
    row = summary.iloc[0]
    focal = outcomes[outcomes["seat"] == 0]
    assert row["games"] == len(played) and row["wins"] == int(focal["won"].sum())
    assert row["win_rate"] == pytest.approx(focal["won"].mean())
    won = focal[focal["won"]]
    if len(won):
        assert row["turns_to_win"] == pytest.approx(won["turns"].astype(float).mean())
    assert row["llm_calls_per_game"] == pytest.approx(focal["llm_calls"].astype(float).mean())
    assert row["cost_usd_per_game"] == pytest.approx(focal["cost_usd"].mean())
    proposals = focal["proposals"].sum()
    if proposals:
        assert row["acceptance_rate"] == pytest.approx(focal["proposals_accepted"].sum() / proposals)
    both = outcome_summary(outcomes, focal_only=False)
    assert Counter(both["agent"]) == Counter({LLM_MODEL: 1, "tom0": 1})
    assert both.set_index("agent").loc["tom0", "group"] == "V0"
    assert isinstance(both, pd.DataFrame)


def test_invalid_actions_of_a_bot_are_its_refused_moves() -> None:
    """A non-LLM policy's action records that lead to no event count as invalid actions."""
    game = play("minecraft/1p_v_1p/paper#5", ["tom1", "tom0"], seed=4)
    ds = load([game.log])
    assert (ds.outcomes["invalid_actions"] == 0).all()  # the bots never erred
    traces = ds.traces.copy()
    unlinked = traces.index[(traces["seat"] == 1) & (traces["kind"] == "report")][:2]
    traces.loc[unlinked, "event_seq"] = pd.NA
    recounted = seat_outcomes(
        ds.games,
        ds.seats,
        ds.proposals,
        ds.decisions,
        ds.crafts,
        traces,
        prices=load_settings().prices.models,
    )
    assert recounted["invalid_actions"].tolist() == [0, 2]


def test_the_real_llm_agents_traces_are_counted() -> None:
    """The LLM agent (ChatOpenAI against the project's OpenAI-compatible test server) answers with no tool
    call, a 429, an unknown tool, a bad argument (its fallback follows), then plays: its trace records give
    the outcome figures the agent itself counted."""
    script = [
        Reply(content="I think I will pass.", usage=(900, 12)),  # not a tool call
        Reply(status=429, retry_after=0.01, content="slow down"),  # a provider retry
        Reply(tool_calls=[("resign", {})], usage=(950, 5)),  # no such tool
        Reply(tool_calls=[("propose", {"to": "one", "offer": {"coal": 1}})], usage=(990, 9)),  # bad shape
    ]
    # the server names the model as OpenAI does, with its snapshot date: the call ran on that one
    with OpenAITestServer(script, policy=ScriptedPlayer(), model="gpt-4o-mini-2024-07-18") as server:
        chat = ChatOpenAI(base_url=server.base_url, api_key="sk-test-0123456789", model="gpt-4o-mini",
                          max_retries=0, timeout=5.0)  # fmt: skip
        settings = AgentSettings(max_invalid=3, backoff_base=0.005, backoff_cap=0.05)
        agent = LLMAgent(chat, model_name="openai:gpt-4o-mini", settings=settings)
        instance = get_instance("minecraft/1p_v_1p/paper#5")
        game = GameSettings(ruleset="minecraft", max_turns=2, tom_orders=[[0, 1], [0]])
        result = play_local(instance, game, minecraft(), [agent, make_policy("tom0", 1)], 0, clock=time.time)
    seats = [{"seat": 0, "kind": "agent", "model": "openai:gpt-4o-mini"}, {"seat": 1, "bot": "tom0"}]
    ds = load([result.game_log(game_id="real-llm", seats=seats)])
    row = ds.outcomes.iloc[0]
    raw = [t.model_dump() for t in result.traces if t.seat == 0]
    calls = [t for t in raw if t.get("trace") == "llm_call"]
    assert row["agent"] == "openai:gpt-4o-mini" and row["group"] == "V0+V1"
    assert row["fallbacks"] == agent.fallbacks == 1
    assert row["retries"] == agent.retries_used >= 1
    assert row["llm_calls"] == len(calls) > 4
    assert row["invalid_actions"] == 3  # the three bad answers of the first move, then its fallback
    assert row["input_tokens"] == sum(t["tokens"]["prompt_tokens"] for t in calls)
    assert row["output_tokens"] == sum(t["tokens"]["completion_tokens"] for t in calls)
    price = load_settings().prices.models["gpt-4o-mini"]
    assert row["cost_usd"] == pytest.approx(
        (row["input_tokens"] * price.input + row["output_tokens"] * price.output) / 1_000_000
    )  # priced as gpt-4o-mini, the stem of the model the provider reported
    assert set(ds.traces.loc[ds.traces["kind"] == "llm_call", "model"]) == {"gpt-4o-mini-2024-07-18"}
    traces = ds.traces[ds.traces["seat"] == 0]
    assert set(traces["kind"]) >= {
        "llm_prefix",
        "llm_call",
        "tool_error",
        "tool_results",
        "fallback",
        "decision",
    }
    assert traces[traces["kind"] == "llm_call"]["prompt_chars"].gt(0).all()
    assert traces.loc[traces["kind"] == "tool_error", "error"].tolist() == ["not_a_tool_call"]
    assert traces.loc[traces["kind"] == "fallback", "reason"].tolist() == ["too_many_invalid_calls"]
