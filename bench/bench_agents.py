"""LLM agents on the 40 minecraft 1-vs-1 instances of the ``paper`` set: prompt size, prefix, tool calls.

Two LLM agents play each other (the paper protocol of :func:`agents.tournament.settings_for`: 15 turns,
whole runs, no passing, V0+V1+V2 reports) through the real ``ChatOpenAI`` against the project's
OpenAI-compatible test server in policy mode (:class:`agents.testing.scripted_player.ScriptedPlayer`
reads the game text and answers with tool calls, including a query before each craft). Printed, from
the agents' own traces:

- prompt tokens per model call, counted offline with o200k (median, p95), in all and without the stable
  prefix (system prompt + tool declarations, identical on every call of a seat, so provider caches hit);
  target: median <= 1,500 without the prefix;
- the share of the prompt that is the stable prefix (median over calls, and token-weighted); target >= 60%;
- tool calls per turn and per move (a move = one action sent to the game);
- games/s of bot-vs-bot self-play through the Gymnasium env vs bare engine self-play (random bots, the
  same games both ways), when the env (``agents.envs``) is installed; target: overhead <= 10%.

Usage: ``python bench/bench_agents.py [instances] [memory_tokens]``.
"""

from __future__ import annotations

import statistics
import sys
import time

from agents.bots.random_bot import RandomBot
from agents.llm.agent import AgentSettings, LLMAgent
from agents.local import play_local
from agents.testing.openai_server import OpenAITestServer
from agents.testing.scripted_player import ScriptedPlayer
from agents.tournament import settings_for
from craft_rules.loader import load_rule_set
from craft_rules.tasks import get_instance, instance_set_ids


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def llm_figures(ids: list[str], memory_tokens: int) -> None:
    from langchain_openai import ChatOpenAI

    rules = load_rule_set("minecraft")
    player = ScriptedPlayer()
    totals: list[int] = []
    beyond: list[int] = []
    shares: list[float] = []
    prefix_sum = prompt_sum = 0
    tool_calls = moves = turns = fallbacks = games = 0
    reasons: dict[str, int] = {}
    per_move: list[int] = []
    started = time.perf_counter()
    with OpenAITestServer(policy=player) as server:
        for index, instance_id in enumerate(ids):
            instance = get_instance(instance_id)
            agents = []
            for seat in range(2):
                model = ChatOpenAI(
                    base_url=server.base_url, api_key="sk-bench", model="scripted", max_retries=0, timeout=10
                )
                settings = AgentSettings(memory_tokens=memory_tokens)
                agents.append(LLMAgent(model, model_name="scripted", settings=settings, seed=seat))
            result = play_local(instance, settings_for(instance, index), rules, agents, index)
            games += 1
            turns += result.turns
            prefix_of: dict[int | None, int] = {}
            for trace in result.traces:
                record = trace.model_extra
                if record.get("trace") == "llm_call" and record.get("completion"):
                    prompt, prefix = record["prompt_tokens_o200k"], record["prefix_tokens_o200k"]
                    totals.append(prompt)
                    beyond.append(prompt - prefix)
                    shares.append(prefix / prompt)
                    prefix_sum += prefix
                    prompt_sum += prompt
                    tool_calls += len(record["completion"].get("tool_calls") or [])
                elif record.get("trace") == "decision":
                    moves += 1
                    per_move.append(record["prompt_tokens"] - record["steps"] * prefix_of[trace.seat])
                elif record.get("trace") == "llm_prefix":
                    prefix_of[trace.seat] = record["tokens"]
                elif record.get("trace") == "fallback":
                    fallbacks += 1
                    moves += 1
                    reasons[record["reason"]] = reasons.get(record["reason"], 0) + 1
    spent = time.perf_counter() - started
    print(f"LLM agents (scripted test-server model), {games} games of minecraft 1p_v_1p paper, self-play")
    print(f"  model calls                       {len(totals)}  ({len(totals) / spent:.0f}/s, {spent:.0f} s)")
    print(
        f"  prompt tokens per call (o200k)    median {statistics.median(totals):.0f}   "
        f"p95 {percentile(totals, 0.95):.0f}"
    )
    print(
        f"  ... without the cached prefix     median {statistics.median(beyond):.0f}   "
        f"p95 {percentile(beyond, 0.95):.0f}   (target: median <= 1500)"
    )
    print(
        f"  ... per move (all its calls)      median {statistics.median(per_move):.0f}   "
        f"p95 {percentile(per_move, 0.95):.0f}   (without the prefix)"
    )
    print(
        f"  stable prefix share of the prompt median {100 * statistics.median(shares):.1f}%   "
        f"token-weighted {100 * prefix_sum / prompt_sum:.1f}%   (target >= 60%)"
    )
    print(
        f"  tool calls per turn (both seats)  {tool_calls / turns:.2f}   per move {tool_calls / moves:.2f}   "
        f"({tool_calls} calls, {moves} moves, {turns} turns)"
    )
    print(f"  fallbacks                         {fallbacks} {reasons or ''}")


def env_figures(ids: list[str], rounds: int = 5) -> None:
    """Random bot vs random bot on the same games, bare (``play_local``) and with seat 0 played through
    ``TradeCraft-v0`` (default observation: narrated text and the structured parts): the same instances,
    settings, game seeds and bot objects (the opponent is handed to the env as a policy object), checked
    to play the same moves. ``rounds`` interleaved rounds, a garbage collection before each run, CPU
    and wall time; the overhead is paired per round, its median printed with the lowest and highest."""
    import gc

    from bench_envs import game_digest

    rules = load_rule_set("minecraft")
    instances = [get_instance(i) for i in ids]
    settings = [settings_for(instance, index) for index, instance in enumerate(instances)]
    try:
        import gymnasium

        import agents.envs  # noqa: F401  (registers TradeCraft-v0)
    except ImportError as err:
        print(f"Gymnasium env self-play: n/a ({err}; the env is not on this branch yet)")
        return

    def bare() -> list:
        return [
            play_local(
                instance, settings[index], rules, [RandomBot(2 * index), RandomBot(2 * index + 1)], index
            ).game
            for index, instance in enumerate(instances)
        ]

    started = time.perf_counter()
    envs = [  # built once, not timed (the bots keep no state between games: same moves every round)
        gymnasium.make(
            "TradeCraft-v0", instance=instance, opponents=[RandomBot(2 * index + 1)], settings=setting
        )
        for index, (instance, setting) in enumerate(zip(instances, settings, strict=True))
    ]
    built = (time.perf_counter() - started) / len(envs)

    def through_env() -> list:
        games = []
        for index, env in enumerate(envs):
            learner = RandomBot(2 * index)
            _obs, info = env.reset(seed=index)
            done = False
            while not done:
                view = info["view"]
                _obs, _reward, terminated, truncated, info = env.step(
                    learner.act(view, view["legal_actions"])
                )
                done = terminated or truncated
            games.append(env.unwrapped.match.game)
        return games

    bare(), through_env()  # warm-up round
    times: dict[str, list[tuple[float, float]]] = {"bare": [], "env": []}
    digests: dict[str, list[str]] = {}
    for round_ in range(rounds):
        for name, run in (("bare", bare), ("env", through_env))[:: 1 if round_ % 2 == 0 else -1]:
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            games = run()
            times[name].append((time.process_time() - cpu, time.perf_counter() - wall))
            digests[name] = [game_digest(game) for game in games]
    same = digests["bare"] == digests["env"]
    games_count = len(instances)
    for name, label in (
        ("bare", "Bare engine self-play (random bots, play_local)"),
        ("env", "Gymnasium env self-play"),
    ):
        cpu = statistics.median(t[0] for t in times[name])
        wall = statistics.median(t[1] for t in times[name])
        print(f"{label:<48} {games_count / cpu:6.1f} games/s (cpu)  {games_count / wall:6.1f} games/s (wall)")
    for index, unit in ((0, "cpu"), (1, "wall")):
        ratios = [100 * (e[index] / b[index] - 1) for e, b in zip(times["env"], times["bare"], strict=True)]
        print(
            f"  env overhead ({unit}): median {statistics.median(ratios):+.1f}%  "
            f"[{min(ratios):+.1f} .. {max(ratios):+.1f}] over {rounds} rounds (target <= 10%)"
        )
    print(
        f"  same games both ways: {'yes' if same else 'NO'}; "
        f"building one env (not counted): {1000 * built:.0f} ms"
    )


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    memory_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else AgentSettings().memory_tokens
    ids = instance_set_ids("paper")[:count]
    llm_figures(ids, memory_tokens)
    env_figures(ids)


if __name__ == "__main__":
    main()
