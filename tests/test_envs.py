"""The Gymnasium and PettingZoo environments: the libraries' own checkers, whole games with random
policies, seeded resets, queries and illegal calls that leave the game alone, rewards and episode ends."""

from __future__ import annotations

import json
import warnings
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test

import agents.envs  # noqa: F401 - registers TradeCraft-v0
from agents.bots.registry import make_policy
from agents.envs import tradecraft_v0
from agents.envs.core import TOOLS, fit_text, observation_space, tool_call
from agents.envs.gym_env import TradeCraftEnv


def policy_call(policy: Any, info: dict[str, Any]) -> dict[str, Any]:
    view = info["view"]
    return tool_call(policy.act(view, view["legal_actions"]))


# ------------------------------------------------------------------------------------- checkers
def test_gymnasium_check_env_passes_without_warnings() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make("TradeCraft-v0")  # no arguments: minecraft 1p_v_1p #0 vs the random bot
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught if "gymnasium" in (w.filename or "")] == []
    assert env.unwrapped.instance.id.startswith("minecraft/1p_v_1p/")


@pytest.mark.slow
def test_pettingzoo_api_test_passes() -> None:
    api_test(tradecraft_v0.env(), num_cycles=300)
    api_test(tradecraft_v0.env(players=3), num_cycles=100)


def test_raw_env_and_spaces_are_stable() -> None:
    raw = tradecraft_v0.raw_env()
    assert raw.observation_space("player_0") is raw.observation_space("player_0")
    assert raw.action_space("player_1") is raw.action_space("player_1")
    assert raw.metadata["name"] == "tradecraft_v0"


# --------------------------------------------------------------------------------- whole games
def test_a_whole_game_through_the_gym_env_with_a_random_policy() -> None:
    env = gymnasium.make("TradeCraft-v0", max_turns=12)
    obs, info = env.reset(seed=11)
    me = make_policy("random", 99)
    steps, total = 0, 0.0
    terminated = truncated = False
    while not (terminated or truncated):
        assert env.observation_space.contains(obs) and obs["your_turn"] == 1
        obs, reward, terminated, truncated, info = env.step(policy_call(me, info))
        assert info["error"] is None, info["error"]  # a random bot plays only legal moves
        total += reward
        steps += 1
    game = env.unwrapped.match.game
    assert game.finished and info["end_reason"] == game.end_reason
    assert truncated == (game.end_reason == "max_turns") and terminated != truncated
    expected = 0.0 if not game.winners or len(game.winners) > 1 else (1.0 if 0 in game.winners else -1.0)
    assert total == expected and steps > 3
    assert "## Now" in obs["text"] and "The game is over" in obs["text"]


def test_whole_games_through_the_aec_env_with_random_policies() -> None:
    outcomes = []
    for seed in range(4):
        env = tradecraft_v0.env(max_turns=10)
        env.reset(seed=seed)
        bots = {agent: make_policy("random", seed * 10 + i) for i, agent in enumerate(env.possible_agents)}
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter(max_iter=5_000):
            obs, reward, terminated, truncated, info = env.last()
            totals[agent] += reward
            if terminated or truncated:
                env.step(None)
                continue
            assert obs["your_turn"] == 1 and info["view"]["your_turn"]
            env.step(policy_call(bots[agent], info))
        game = env.unwrapped.match.game
        assert game.finished and env.agents == []
        outcomes.append((game.end_reason, game.winners, totals))
        if game.winners and len(game.winners) == 1:
            winner = f"player_{game.winners[0]}"
            assert totals[winner] == 1.0 and sum(totals.values()) == 0.0
        else:
            assert set(totals.values()) == {0.0}
    assert len(outcomes) == 4


def test_points_reward_pays_the_games_scoring() -> None:
    env = TradeCraftEnv(max_turns=4, reward="points")
    _obs, info = env.reset(seed=2)
    bot, total, done = make_policy("random", 1), 0.0, False
    while not done:
        _obs, reward, terminated, truncated, info = env.step(policy_call(bot, info))
        total, done = total + reward, terminated or truncated
    assert total == float(info["scores"][0])


# -------------------------------------------------------------------------------------- seeding
def play_script(env: TradeCraftEnv, seed: int, steps: int) -> list[Any]:
    obs, info = env.reset(seed=seed)
    trail = [obs["text"], obs["view"]]
    bot = make_policy("random", 5)
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(policy_call(bot, info))
        trail += [obs["text"], obs["view"], reward]
        if terminated or truncated:
            break
    return trail


def test_reset_with_a_seed_replays_the_same_game() -> None:
    env = TradeCraftEnv(max_turns=6)
    first = play_script(env, 21, 30)
    again = play_script(env, 21, 30)
    assert first == again
    other = TradeCraftEnv(max_turns=6)
    assert play_script(other, 21, 30) == first  # another env object, same seed
    assert play_script(other, 22, 30) != first  # the opponent's seed follows the game seed


def test_a_seat_other_than_zero_starts_after_the_opponents_moves() -> None:
    env = TradeCraftEnv(seat=1, opponents=["random?pass_probability=0"])
    _obs, info = env.reset(seed=4)
    view = info["view"]
    assert view["seat"] == 1 and view["your_turn"] and "decide" in view["legal_actions"]
    assert view["pending_proposal"]["proposer"] == 0


# ------------------------------------------------------------------- queries and illegal calls
def test_a_query_is_answered_into_the_next_observation_and_the_game_stays() -> None:
    env = TradeCraftEnv()
    obs, info = env.reset(seed=3)
    game = env.match.game
    before = game.state_digest(), len(game.events)
    obs, reward, terminated, truncated, info = env.step(
        json.dumps({"tool": "item_info", "args": {"item": "lead"}})
    )
    assert (game.state_digest(), len(game.events)) == before and reward == 0.0
    assert not (terminated or truncated) and info["error"] is None
    assert info["result"]["answer"]["type"] == "item_info" and info["result"]["answer"]["item"] == "lead"
    assert "## Answer to your item_info query" in obs["text"] and '"item": "lead"' in obs["text"]


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ("not json at all", "invalid_action"),
        ({"tool": "teleport", "args": {}}, "invalid_action"),
        ({"tool": "decide", "args": {"accept": True}}, "wrong_phase"),
        ({"tool": "propose", "args": {"to": 1, "offer": {"diamond": 1}, "request": {}}}, "item_not_held"),
        ({"tool": "propose", "args": {"to": 0, "offer": {"string": 1}, "request": {}}}, "proposal_to_self"),
        ({"tool": "item_info", "args": {"item": "unobtainium"}}, "unknown_item"),
        ({"tool": "pass", "args": {"type": "resign"}}, "invalid_action"),
        ({"tool": "pass", "args": {}, "extra": 1}, "invalid_action"),
    ],
)
def test_an_illegal_call_returns_the_typed_error_and_changes_nothing(call: Any, code: str) -> None:
    env = TradeCraftEnv()
    obs, info = env.reset(seed=3)
    game = env.match.game
    before = game.state_digest(), len(game.events), obs["view"]
    obs, reward, terminated, truncated, info = env.step(call)
    assert (game.state_digest(), len(game.events), obs["view"]) == before
    assert info["error"]["code"] == code and reward == 0.0 and not (terminated or truncated)
    assert f"## Your last request was refused\n{code}:" in obs["text"]
    assert env.observation_space.contains(obs)
    # and the game goes on normally afterwards
    obs, *_rest, info = env.step({"type": "pass"})  # the engine's own object is accepted too
    assert info["error"] is None and len(game.events) > before[1]


def test_illegal_calls_cost_steps_up_to_the_truncation_bound() -> None:
    env = TradeCraftEnv(max_steps=3)
    env.reset(seed=1)
    flags = [env.step("{}")[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    assert not env.match.game.finished


def test_aec_refused_call_keeps_the_selection() -> None:
    env = tradecraft_v0.raw_env()
    env.reset(seed=0)
    agent = env.agent_selection
    env.step({"tool": "decide", "args": {"accept": False}})
    assert env.agent_selection == agent and env.infos[agent]["error"]["code"] == "wrong_phase"
    env.step({"tool": "pass", "args": {}})
    assert env.agent_selection != agent


# ------------------------------------------------------------------------------ observations
def test_observation_text_is_the_narrators_and_fits_the_space() -> None:
    env = TradeCraftEnv()
    obs, info = env.reset(seed=0)
    assert obs["text"].startswith("You are a player in a game of TradeCraft")
    assert "## Now" in obs["text"] and "## New since your last observation" in obs["text"]
    assert json.loads(obs["view"]) == info["view"]
    mask = dict(zip(TOOLS, obs["tool_mask"].tolist(), strict=True))
    assert mask["pass"] == 1 and mask["decide"] == 0 and mask["item_info"] == 1
    assert fit_text("smile \U0001f600 ok") == "smile \\U0001f600 ok"
    assert observation_space()["text"].contains(fit_text("x\U0001f600\x00y"))
    assert isinstance(obs["turn"], np.ndarray) and obs["turn"].tolist() == [1]


def test_bad_constructor_arguments_say_what_to_do() -> None:
    with pytest.raises(ValueError, match="no policy 'nobody'"):
        TradeCraftEnv(opponents="nobody")
    with pytest.raises(ValueError, match="no task instance"):
        TradeCraftEnv(instance="minecraft/1p_v_1p/none#0")
    with pytest.raises(ValueError, match="out of range"):
        TradeCraftEnv(instance=10_000)
    with pytest.raises(ValueError, match="reward"):
        tradecraft_v0.raw_env(reward="money")


def test_the_text_is_exactly_the_narrators_observation() -> None:
    from agents.narrator import observation

    env = TradeCraftEnv(max_turns=4)
    obs, info = env.reset(seed=8)
    bot, shown = make_policy("random", 2), env.match.conns[0]
    news = list(env.match.news[0])
    assert obs["text"] == observation(info["view"], news, env.match.game.rules)
    obs, *_rest, info = env.step(policy_call(bot, info))
    news = env.match.news[0]
    expected = observation(info["view"], news, env.match.game.rules) + "\n\n## Your last action was accepted"
    assert obs["text"] == expected and shown.seat == 0


def test_narrate_false_keeps_the_structured_parts_and_the_answers() -> None:
    env = TradeCraftEnv(narrate=False)
    obs, info = env.reset(seed=1)
    assert obs["text"] == "" and json.loads(obs["view"]) == info["view"]
    obs, *_rest, info = env.step({"tool": "teleport"})
    assert obs["text"].startswith("## Your last request was refused\ninvalid_action:")


def test_reset_options_choose_the_instance_for_one_episode() -> None:
    env = TradeCraftEnv()
    _obs, first = env.reset(seed=0)
    _obs, other = env.reset(seed=0, options={"instance": 5})
    assert other["view"]["hands"] != first["view"]["hands"]
    _obs, again = env.reset(seed=0)
    assert again["view"]["hands"] == first["view"]["hands"]


def test_game_log_keeps_the_opponents_traces_linked_to_their_moves() -> None:
    from server.game.gamelog import decode_log, encode_log

    class TracingBot:
        name = "tracing-random"

        def __init__(self) -> None:
            self.bot, self.pending = make_policy("random", 4), []

        def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
            action = self.bot.act(view, legal)
            self.pending.append({"trace": "decision", "chose": action["type"]})
            return action

        def drain_traces(self) -> list[dict[str, Any]]:
            out, self.pending = self.pending, []
            return out

    env = TradeCraftEnv(opponents=[TracingBot()], max_turns=4)
    _obs, info = env.reset(seed=6)
    me, done = make_policy("random", 1), False
    while not done:
        _obs, _r, terminated, truncated, info = env.step(policy_call(me, info))
        done = terminated or truncated
    log = decode_log(encode_log(env.game_log()))  # survives the JSONL round trip
    game = env.match.game
    assert log.summary.log_digest == game.log_digest() and len(log.events) == len(game.events)
    assert log.traces and all(t.seat == 1 for t in log.traces)
    for trace in log.traces:
        event = game.events[trace.event_seq]
        assert event.actor == 1  # the move the trace led to
        produced = {"pass": "passed", "propose": "proposed", "decide": "decided", "craft": "crafted"}
        assert event.type == produced.get(trace.model_extra["chose"], "craft_finished")
