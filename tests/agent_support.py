"""Small hand-written instances shared by the agent tests: short crafting chains, so random play
crafts, trades and sometimes wins, on both shipped rule sets."""

from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI

from agents.bots.random_bot import RandomBot
from agents.llm.agent import AgentSettings, LLMAgent
from agents.local import LocalResult, play_local
from agents.testing.openai_server import OpenAITestServer
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance
from server.game import GameSettings
from server.game.legal import fallback_action

SMALL_INSTANCES: dict[str, list[tuple[tuple[dict[str, int], ...], tuple[dict[str, int], ...]]]] = {
    "minecraft": [
        (
            (
                {"raw_iron": 2, "coal": 2, "oak_log": 2, "stick": 3},
                {"cobblestone": 5, "oak_planks": 6, "raw_iron": 1},
            ),
            ({"shears": 1}, {"torch": 4}),
        ),
        (
            ({"oak_log": 2, "cobblestone": 3}, {"stick": 4, "coal": 1}, {"oak_planks": 4, "raw_iron": 3}),
            ({"stone_pickaxe": 1}, {"crafting_table": 1}, {"bucket": 1}),
        ),
    ],
    "alchemy": [
        (
            ({"water": 3, "fire": 2, "air": 1}, {"earth": 3, "fire": 1, "air": 2}),
            ({"brick": 1}, {"cloud": 1}),
        ),
        (
            ({"water": 2, "fire": 2}, {"earth": 3, "air": 1}, {"air": 2, "water": 2, "earth": 1}),
            ({"steam": 2}, {"dust": 1}, {"mud": 2}),
        ),
    ],
}


# --- LLM agents against the project's OpenAI-compatible test server -----------------------------------
LLM_INSTANCE = TaskInstance(
    id="test/1p_v_1p/llm#0",
    ruleset="minecraft",
    mode="1p_v_1p",
    hands=({"oak_log": 2, "coal": 2, "stick": 3}, {"cobblestone": 5, "raw_iron": 1}),
    targets=({"torch": 4}, {"stone_pickaxe": 1}),
)
"""The LLM tests' two-seat game: seat 0 (the agent) needs coal and sticks, seat 1 cobblestone and iron."""


def llm_agent(server: OpenAITestServer, timeout: float = 5.0, seed: int = 0, **settings: Any) -> LLMAgent:
    """An agent driving the real ChatOpenAI against ``server``, with quick backoff."""
    model = ChatOpenAI(
        base_url=server.base_url,
        api_key="sk-test-placeholder-0000",
        model="test-model",
        max_retries=0,
        timeout=timeout,
    )
    defaults: dict[str, Any] = {"backoff_base": 0.005, "backoff_cap": 0.05}
    return LLMAgent(
        model, model_name="openai:test-model", settings=AgentSettings(**{**defaults, **settings}), seed=seed
    )


def play_llm(
    agent: Any, opponent: Any = None, max_turns: int = 1, tom: list[list[int]] | None = None, seed: int = 0
) -> LocalResult:
    """One local game: ``agent`` at seat 0, ``opponent`` (a random bot) at seat 1."""
    settings = GameSettings(ruleset="minecraft", max_turns=max_turns, tom_orders=tom or [])
    rules = load_rule_set("minecraft")
    return play_local(LLM_INSTANCE, settings, rules, [agent, opponent or RandomBot(seed)], seed)


def trace_records(result: LocalResult, kind: str) -> list[dict[str, Any]]:
    return [t.model_dump() for t in result.traces if t.model_extra.get("trace") == kind]


class Proposer:
    """Seat 1 of :data:`LLM_INSTANCE`: offers one cobblestone for one coal to seat 0 on its every turn,
    so seat 0 has a proposal to decide; the safe fallback otherwise."""

    name = "proposer"

    def observe(self, events: list[dict[str, Any]]) -> None:
        pass

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        if "propose" in legal:
            return {"type": "propose", "to": 0, "offer": {"cobblestone": 1}, "request": {"coal": 1}}
        action = fallback_action({**view, "legal_actions": legal})
        assert action is not None
        return action


class Recording:
    """A seat connection that records the actions and queries that reach it and accepts every one
    (for declaring and calling tools without a game)."""

    seat, finished = 0, False

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def view(self) -> dict[str, Any]:
        return {}

    def events(self) -> list[dict[str, Any]]:
        return []

    def act(self, action: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(action)
        return {"ok": True}

    def query(self, query: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(query)
        return {"ok": True, "answer": {}}

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        return True
