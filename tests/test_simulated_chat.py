"""The simulated chat model of fixed latency (agents/testing/simulated_chat.py): legal play, fixed waits."""

from __future__ import annotations

from agents.bots.registry import make_policy
from agents.llm.agent import LLMAgent
from agents.local import play_local
from agents.testing.simulated_chat import SIMULATED_MODEL, SimulatedChatModel
from craft_rules.loader import load_rule_set
from craft_rules.tasks import get_instance
from server.game import GameSettings


def test_two_simulated_seats_play_a_game_legally_one_fixed_wait_per_call() -> None:
    waits: list[float] = []
    seats = []
    for seat in range(2):
        agent = make_policy("simulated_llm?latency=0.25&tom=0,1", seed=seat)
        assert isinstance(agent, LLMAgent) and isinstance(agent.model, SimulatedChatModel)
        agent.model.sleep = waits.append  # a fake clock: record the waits instead of sleeping
        seats.append(agent)
    instance = get_instance("minecraft/1p_v_1p/paper#3")
    settings = GameSettings(max_turns=2, tom_orders=[[0, 1], [0]])
    result = play_local(instance, settings, load_rule_set(instance.ruleset), seats, seed=3)
    assert result.turns == 2 or result.winners
    calls = sum(agent.model.calls for agent in seats)  # type: ignore[attr-defined]
    assert calls >= 8 and waits == [0.25] * calls
    assert all(agent.fallbacks == 0 for agent in seats)  # every answer was a legal tool call
    llm_calls = [r for r in (t.model_dump() for t in result.traces) if r.get("trace") == "llm_call"]
    assert len(llm_calls) == calls
    assert all(r["tokens"]["source"] == "provider" and r["tokens"]["prompt_tokens"] > 0 for r in llm_calls)
    assert SIMULATED_MODEL in seats[0].model_name
