"""LLM agents on the 40 minecraft 1-vs-1 instances of the ``paper`` set: prompt size, prefix, tool calls.

Two LLM agents play each other (the paper protocol of :func:`agents.tournament.settings_for`: 15 turns,
whole runs, no passing, V0+V1+V2 reports) through the real ``ChatOpenAI`` against the project's
OpenAI-compatible test server in policy mode (:class:`agents.testing.scripted_player.ScriptedPlayer`
reads the game text and answers with tool calls, including a query before each craft). Printed, from
the agents' own traces:

- prompt tokens per model call (the probe's connection checks aside), counted offline with o200k (median,
  p95), in all and without the stable prefix (system prompt + tool declarations, identical on every call
  of a seat, so provider caches hit); target: median <= 1,500 without the prefix;
- the share of the prompt that is the stable prefix (median over calls, and token-weighted); target >= 60%;
- tool calls per turn and per move (a move = one action sent to the game);
- games/s of bot-vs-bot self-play through the Gymnasium env vs bare engine self-play (random bots, the
  same games both ways), when the env (``agents.envs``) is installed; target: overhead <= 10%.

Then, per test-server behaviour (:data:`agents.testing.openai_server.BEHAVIOURS`: how a model writes its
calls) and per tool mode (``auto``, the probe's choice, and each explicit mode that makes sense for the
behaviour), one LLM seat against a random bot on short paper games (the protocol above, ``--turns`` turns):
the share of the seat's moves that are the model's own (not the logged fallback), prompt tokens per
decision (every model call of a move, the probe's excluded; as the server counts them), both with the
full and with the compact prompt, and retries per move (model calls that followed an answer that did not
count).

Usage: ``python bench/bench_agents.py [instances] [memory_tokens] [--behaviours N] [--turns T]``
(``--behaviours N``: only the behaviour table, on N instances).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from agents.bots.random_bot import RandomBot
from agents.llm.agent import AgentSettings, LLMAgent
from agents.llm.probe import clear_probe_cache
from agents.llm.tools import QUERY_TOOLS
from agents.local import play_local
from agents.testing.openai_server import BEHAVIOURS, OpenAITestServer
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
                if record.get("trace") == "llm_call" and record.get("completion") and not record.get("probe"):
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


ALL_MODES = ("native", "json_schema", "prompted")
EXPLICIT_MODES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            "native",
            "bare_json",
            "fenced_json",
            "doubled_braces",
            "wrong_tags",
            "raw_action",
            "needs_tool_choice",
            "runaway",
            "imitates_tool_results",
        ),
        ALL_MODES,
    ),
    "constrained": ("json_schema",),  # prose unless a response_format schema constrains it
    "cold_start": (),  # answers as native: the cold call is what matters, and auto shows it
    "unreadable": (),  # prose in every mode
}
"""Besides ``auto``, the tool modes worth measuring per behaviour (those its answers can be read in)."""


@dataclass
class ModeFigures:
    """What one (behaviour, mode, prompt variant) played: moves, own moves, calls and retries."""

    mode_chosen: str = ""
    moves: int = 0
    own: int = 0
    prompt_tokens: int = 0
    retries: int = 0
    seconds: float = 0.0


def play_behaviour(
    behaviour: str, tool_mode: str, compact: bool, ids: list[str], turns: int, memory_tokens: int
) -> ModeFigures:
    """One LLM seat (``tool_mode``, full or ``compact`` prompt) against a random bot on each instance."""
    from langchain_openai import ChatOpenAI

    rules = load_rule_set("minecraft")
    figures = ModeFigures()
    chosen: set[str] = set()
    started = time.perf_counter()
    clear_probe_cache()
    with OpenAITestServer(policy=ScriptedPlayer(), behaviour=behaviour, cold_seconds=1.0) as server:
        for index, instance_id in enumerate(ids):
            instance = get_instance(instance_id)
            model = ChatOpenAI(
                base_url=server.base_url, api_key="sk-bench", model="scripted", max_retries=0, timeout=10
            )
            settings = AgentSettings(memory_tokens=memory_tokens, tool_mode=tool_mode, compact=compact)
            agent = LLMAgent(model, model_name="scripted", settings=settings, seed=index)
            game = settings_for(instance, index).model_copy(update={"max_turns": turns})
            result = play_local(instance, game, rules, [agent, RandomBot(index)], index)
            calls = queries = moves = 0
            for trace in result.traces:
                record = trace.model_extra
                kind = record.get("trace")
                if kind == "llm_call" and not record.get("probe"):
                    calls += 1
                    figures.prompt_tokens += (record.get("tokens") or {}).get("prompt_tokens", 0)
                elif kind == "tool_results":
                    queries += sum(
                        r["tool"] in QUERY_TOOLS and r["answer"].get("ok") for r in record["results"]
                    )
                elif kind in ("decision", "fallback"):
                    moves += 1
                    figures.own += kind == "decision"
                    chosen.add(record["tool_mode"])
            figures.moves += moves
            figures.retries += calls - moves - queries
    figures.seconds = time.perf_counter() - started
    figures.mode_chosen = "/".join(sorted(chosen))
    return figures


def behaviour_figures(ids: list[str], turns: int, memory_tokens: int) -> None:
    """The table: per behaviour and mode, own moves, prompt tokens per decision (full, compact), retries."""
    print(
        f"LLM seat vs random bot per test-server behaviour and tool mode: {len(ids)} paper games of "
        f"{turns} turns each (V0+V1+V2 reports, whole runs)"
    )
    header = (
        f"  {'behaviour':<22} {'mode':<12} {'plays':<12} {'own moves':>14} "
        f"{'compact':>8} {'tokens/decision':>16} {'compact':>8} {'retries/move':>13} {'s':>5}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    for behaviour in BEHAVIOURS:
        for mode in ("auto", *EXPLICIT_MODES[behaviour]):
            full = play_behaviour(behaviour, mode, False, ids, turns, memory_tokens)
            compact = play_behaviour(behaviour, mode, True, ids, turns, memory_tokens)
            moves = max(full.moves, 1)
            own = f"{100 * full.own / moves:5.1f}% ({full.own}/{full.moves})"
            print(
                f"  {behaviour:<22} {mode:<12} {full.mode_chosen or '-':<12} {own:>14} "
                f"{100 * compact.own / max(compact.moves, 1):>7.1f}% "
                f"{full.prompt_tokens / moves:>16.0f} {compact.prompt_tokens / max(compact.moves, 1):>8.0f} "
                f"{full.retries / moves:>13.2f} {full.seconds + compact.seconds:>5.1f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("instances", type=int, nargs="?", default=40, help="paper instances (default 40)")
    parser.add_argument("memory_tokens", type=int, nargs="?", default=AgentSettings().memory_tokens)
    parser.add_argument(
        "--behaviours",
        type=int,
        metavar="N",
        help="only the table per test-server behaviour and tool mode, on N instances",
    )
    parser.add_argument("--turns", type=int, default=4, help="turns per game of that table (default 4)")
    options = parser.parse_args()
    if options.behaviours is not None:
        ids = instance_set_ids("paper")[: options.behaviours]
        behaviour_figures(ids, options.turns, options.memory_tokens)
        return
    ids = instance_set_ids("paper")[: options.instances]
    llm_figures(ids, options.memory_tokens)
    env_figures(ids)
    behaviour_figures(ids[:2], options.turns, options.memory_tokens)


if __name__ == "__main__":
    main()
