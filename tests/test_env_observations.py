"""The envs build observations step by step from what changed; the result must be exactly what building
them from scratch gives: the narrator's whole observation, ``json.dumps`` of the view, the mask. Checked
at every step of whole games (both envs, two and three players, messages with characters outside the
text space, queries and refused calls in between)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.bots.registry import make_policy
from agents.envs import tradecraft_v0
from agents.envs.core import QUERY_TOOLS, TOOLS, Match, describe_result, fit_text, tool_call
from agents.envs.gym_env import TradeCraftEnv
from agents.narrator import NarrationMemo, bundle, describe_view, observation


def expected_observation(match: Match, seat: int, news: list[dict[str, Any]]) -> dict[str, Any]:
    """The observation built from scratch, the way the envs built it before they kept anything."""
    view = match.conns[seat].view()
    result = match.last[seat]
    parts = [observation(view, news, match.game.rules)] if match.narrate else []
    if result is not None:
        parts.append(describe_result(result))
    legal = set(view["legal_actions"])
    return {
        "text": fit_text("\n\n".join(parts)),
        "view": fit_text(json.dumps(view)),
        "tool_mask": [1 if t in legal or (t in QUERY_TOOLS and not view["finished"]) else 0 for t in TOOLS],
        "your_turn": int(view["your_turn"]),
        "turn": [view["turn"]],
    }


def assert_same(obs: dict[str, Any], expected: dict[str, Any]) -> None:
    assert obs["text"] == expected["text"]
    assert obs["view"] == expected["view"]
    assert obs["tool_mask"].tolist() == expected["tool_mask"]
    assert obs["your_turn"] == expected["your_turn"] and obs["turn"].tolist() == expected["turn"]


class Chatty:
    """A random bot whose proposals carry messages with an emoji and a line separator."""

    def __init__(self, seed: int) -> None:
        self.bot = make_policy("random", seed)

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        action = self.bot.act(view, legal)
        if action["type"] in ("propose", "decide"):
            action["message"] = f"deal? \U0001f600\u2028turn {view['turn']}"
        return action


@pytest.mark.parametrize(("seed", "narrate"), [(1, True), (2, True), (3, False)])
def test_gym_observations_equal_the_ones_built_from_scratch(seed: int, narrate: bool) -> None:
    env = TradeCraftEnv(instance=seed, opponents=[Chatty(seed + 50)], max_turns=8, narrate=narrate)
    obs, info = env.reset(seed=seed)
    me, steps, done = Chatty(seed), 0, False
    while not done:
        match = env.match
        assert_same(obs, expected_observation(match, 0, match.news[0]))
        assert json.loads(obs["view"]) == info["view"]
        call: Any = tool_call(me.act(info["view"], info["view"]["legal_actions"]))
        if steps % 7 == 3:
            call = {"tool": "item_info", "args": {"item": "stick"}}  # answered; the game stays
        elif steps % 11 == 5:
            call = {"tool": "decide", "args": {"accept": True}}  # refused unless a proposal awaits
        obs, _reward, terminated, truncated, info = env.step(call)
        steps, done = steps + 1, terminated or truncated
    assert_same(obs, expected_observation(env.match, 0, env.match.news[0]))
    assert steps > 10


@pytest.mark.parametrize("players", [2, 3])
def test_aec_observations_equal_the_ones_built_from_scratch(players: int) -> None:
    env = tradecraft_v0.raw_env(players=players, max_turns=6)
    env.reset(seed=players)
    bots = {agent: Chatty(i) for i, agent in enumerate(env.possible_agents)}
    for count, agent in enumerate(env.agent_iter(max_iter=3_000)):
        match = env.match
        for other in env.agents:  # every agent, also the ones not selected, whose news pile up
            seat = int(other.rsplit("_", 1)[1])
            match.collect(seat)
            assert_same(env.observe(other), expected_observation(match, seat, match.news[seat]))
        _obs, _reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        view = info["view"]
        env.step(tool_call(bots[agent].act(view, view["legal_actions"])) if count % 9 else "{}")
    assert env.match.game.finished


def test_infos_share_nothing_between_calls_or_with_the_engine() -> None:
    env = TradeCraftEnv()
    _obs, first = env.reset(seed=5)
    query = {"tool": "item_info", "args": {"item": "stick"}}
    second = env.step(query)[4]
    third = env.step(query)[4]  # the same state three times: equal infos, no object in common
    assert first["view"] == second["view"] == third["view"]
    assert len({id(first["view"]), id(second["view"]), id(third["view"])}) == 3
    assert second["result"] is not third["result"] and second["result"] == third["result"]
    first["view"]["hands"][0]["stick"] = 999  # the caller's copy: the engine and later infos are untouched
    fourth = env.step({"tool": "possible_crafts", "args": {}})[4]
    assert fourth["view"] == third["view"] and fourth["view"]["hands"][0].get("stick") != 999
    assert env.match.conns[0].view()["hands"][0].get("stick") != 999


def test_describe_view_with_a_memo_tells_the_same_as_without() -> None:
    env = TradeCraftEnv(max_turns=10, opponents=[Chatty(7)])
    _obs, info = env.reset(seed=9)
    memo, bot, done = NarrationMemo(), Chatty(8), False
    rules = env.match.game.rules
    while not done:
        view = info["view"]
        assert describe_view(view, rules, memo) == describe_view(view, rules)
        _obs, _r, terminated, truncated, info = env.step(tool_call(bot.act(view, view["legal_actions"])))
        done = terminated or truncated
    # the bundle memo: equal quantities read the same whatever their type or order; zero is nothing
    assert bundle(rules, {"stick": 1, "coal": "1/4"}) == "1/4 Coal, 1 Stick"
    assert bundle(rules, {"coal": "1/4", "stick": True}) == "1/4 Coal, 1 Stick"
    assert bundle(rules, {"stick": 0}) == bundle(rules, {}) == "nothing"


def test_acks_carry_the_view_only_when_asked() -> None:
    for ack_views in (False, True):
        env = TradeCraftEnv(ack_views=ack_views)
        _obs, info = env.reset(seed=3)
        info = env.step({"tool": "pass", "args": {}})[4]
        result = info["result"]
        assert result["ok"] and result["events"] and result["events"][0]["type"] == "passed"
        if ack_views:
            assert result["view"]["seat"] == 0 and result["view"] is not info["view"]
        else:
            assert result["view"] is None


def test_aec_reset_options_choose_the_instance() -> None:
    env = tradecraft_v0.raw_env()
    env.reset(seed=0)
    first = env.infos[env.agent_selection]["view"]["hands"]
    env.reset(seed=0, options={"instance": 5})
    assert env.match.game.instance.id != tradecraft_v0.raw_env().instance.id
    assert env.infos[env.agent_selection]["view"]["hands"] != first
