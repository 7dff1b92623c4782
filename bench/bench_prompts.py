"""Prompt size per tool mode, full vs compact: o200k tokens of what an LLM agent sends on every call.

For one instance of the minecraft 1-vs-1 ``paper`` set under the paper protocol
(:func:`agents.tournament.settings_for`), seat 0 at its first move (the turn-1 value report), counted
offline with o200k (:mod:`agents.llm.tracing`):

- ``system``: the stable prefix (:func:`agents.narrator.stable_prefix` without the raw action section)
  plus the mode's instructions (:func:`agents.llm.prompts.mode_instructions`; the JSON modes carry the
  tool catalogue there);
- ``tools``: the tool declarations sent with the request (``native`` mode only; the JSON modes send no
  tools, and their ``response_format`` schema is counted separately by whoever builds it);
- ``prefix``: system + tools, the part identical on every call of a seat (cached by providers);
- ``call``: prefix + one typical observation (the state and the new events at that move, no memory).

``today`` is the prompt before issue 19: the prefix with the raw "Actions (JSON)" section, the old
instructions and the native tool declarations.

Usage: ``python bench/bench_prompts.py [instance index in the paper set]``.
"""

from __future__ import annotations

import sys

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from agents.bots.random_bot import RandomBot
from agents.llm import prompts
from agents.llm.tools import DeclarationOnly, SeatTools
from agents.llm.tracing import count_message_tokens, count_tool_tokens
from agents.narrator import describe_view, narrate_events, stable_prefix, state_and_news
from agents.tournament import settings_for
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.tasks import get_instance, instance_set_ids
from server.game import Game, player_view, viewer_log
from server.game.legal import legal_actions


def tool_tokens(compact: bool) -> int:
    declared = SeatTools(DeclarationOnly()).tools(compact=compact)
    return count_tool_tokens([convert_to_openai_tool(tool) for tool in declared])


def observation_tokens(game: Game, rules: RuleSet, seen: int) -> int:
    """o200k tokens of seat 0's observation now: the state and the events after the first ``seen``."""
    view = player_view(game, 0)
    events = narrate_events(viewer_log(game.events, 0)[seen:], 0, rules)
    text = state_and_news(describe_view(view, rules), events)
    return count_message_tokens([HumanMessage(text)])


def play_until_turn(game: Game, rules: RuleSet, turn: int) -> int:
    """Random bots play until seat 0 is awaited in ``turn``; the number of seat-0 events seen before its
    last move (so the observation tells what happened since)."""
    bots = [RandomBot(seat, rules=rules) for seat in range(2)]
    seen = 0
    while not game.finished:
        waiting = sorted(game.waiting_for())
        if game.turn >= turn and 0 in waiting:
            break
        seat = waiting[0]
        if seat == 0:
            seen = len(viewer_log(game.events, 0))
        game.apply(seat, bots[seat].act(player_view(game, seat), legal_actions(game, seat)))
    return seen


def main(index: int) -> None:
    instance_id = instance_set_ids("paper")[index]
    instance = get_instance(instance_id)
    rules = load_rule_set(instance.ruleset)
    game = Game.new(instance, settings_for(instance, 0), rules, seed=0)
    view = player_view(game, 0)
    first = observation_tokens(game, rules, 0)
    later_game = Game.new(instance, settings_for(instance, 0), rules, seed=0)
    seen = play_until_turn(later_game, rules, 5)
    later = observation_tokens(later_game, rules, seen)
    settings = {"persona": "none", "reasoning": "direct", "max_queries": 3}
    print(f"instance {instance_id}, seat 0; o200k tokens")
    print(
        f"observation (state + new events): {first} at the turn-1 value report, {later} at its first move "
        f"of turn {later_game.turn} (random bots played the turns before)"
    )
    today_system = stable_prefix(view, rules) + "\n\n" + prompts.instructions(**settings)
    today = count_message_tokens([SystemMessage(today_system)]) + tool_tokens(False)
    print(
        f"today (raw action section + native tools): prefix {today}, call {today + first} / {today + later}"
    )
    print("call = prefix + observation (turn 1 / the later move); no memory")
    print(f"{'mode':<12} {'variant':<8} {'system':>7} {'tools':>6} {'prefix':>7} {'call':>13}")
    for mode in prompts.TOOL_MODES:
        full_call = 0
        for compact in (False, True):
            system = (
                stable_prefix(view, rules, action_formats=False, compact=compact)
                + "\n\n"
                + prompts.mode_instructions(mode, compact=compact, **settings)
            )
            system_tokens = count_message_tokens([SystemMessage(system)])
            tools = tool_tokens(compact) if mode == "native" else 0
            prefix = system_tokens + tools
            call = prefix + first
            variant = "compact" if compact else "full"
            saving = f"  ({100 * (full_call - call) / full_call:.0f}% fewer)" if compact else ""
            calls = f"{call} / {prefix + later}"
            print(f"{mode:<12} {variant:<8} {system_tokens:>7} {tools:>6} {prefix:>7} {calls:>13}{saving}")
            full_call = call


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
