"""The agent's fixed instructions: how it plays through tools, its persona and its reasoning mode.

Personas follow the Ultimatum-game study (../shared/research/papers-ultimatum-and-workflows.md, paper A): the
player is told what kind of negotiator it is, to stay consistent with it and to keep it private; nothing
says how to trade. Reasoning modes: ``direct`` (call the tool at once) and ``cot`` (think step by step in
private text first; the text goes to the trace, never to the game).

Nothing here mentions how to use the ToM reports: the narrator's preamble asks for them neutrally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.llm.tools import QUERY_TOOLS, ToolSpec

PERSONAS: dict[str, str] = {
    "none": "",
    "greedy": (
        "You are greedy: you care about your own outcome above everything else and want trades that give "
        "you much more than the other player. Stay very consistent with this belief and keep it private."
    ),
    "fair": (
        "You are fair: you want trades that are about equally good for both sides. Stay very consistent "
        "with this belief and keep it private."
    ),
    "selfless": (
        "You are selfless: you care about the other players reaching their targets and are content to give "
        "more than you get. Stay very consistent with this belief and keep it private."
    ),
}

REASONING_MODES: dict[str, str] = {
    "direct": "Call the tool directly, without writing any explanation.",
    "cot": (
        "Before each action, think step by step in your reply text about the situation and your options "
        "(this text is private: no other player ever sees it), then call the tool."
    ),
}


def instructions(*, persona: str, reasoning: str, max_queries: int, strict: bool = False) -> str:
    """The agent's instructions, identical at every step of a game (part of the cached prefix)."""
    lines = [
        "# How you play",
        "You act only by calling tools. Each message from the game shows the state now and what happened "
        "since your last message. When it is your move, call exactly one action tool that the message "
        "allows (report_tom, propose, pass, decide, craft, finish_crafting); one craft per call, call "
        "finish_crafting when you are done crafting.",
        f"Before an action you may call query tools ({', '.join(QUERY_TOOLS)}), at most {max_queries} per "
        "move; they change nothing.",
        "A refused call comes back with an error code and a sentence saying what to fix; then call again.",
        *(
            [
                "The tools' arguments write item bundles and values as lists of pairs ({item, count}, "
                "{item, value}, {seat, values}) instead of the JSON objects shown under Actions."
            ]
            if strict
            else []
        ),
        "",
        "# Reasoning",
        REASONING_MODES[reasoning],
    ]
    if PERSONAS[persona]:
        lines += ["", "# Your persona", PERSONAS[persona]]
    return "\n".join(lines)


def refusal_note(action_type: str, error: dict[str, object]) -> str:
    """What the agent is told when the game refused the action it chose."""
    return (
        f"The game refused your {action_type}: [{error.get('code')}] {error.get('message')} "
        "Choose your move again."
    )


NOT_A_TOOL_CALL = (
    "Your answer was not a tool call. Answer with exactly one call of one of the action tools the last "
    "game message allows."
)


# --- per tool mode (agents/llm/modes.py) -----------------------------------------------------------------
TOOL_MODES = ("native", "json_schema", "prompted")
"""How the model answers: the API's tool calls; one JSON object constrained by ``response_format``; one
JSON object written in the reply text (the schemas are in the prompt)."""


def mode_instructions(
    mode: str, *, persona: str, reasoning: str, max_queries: int, strict: bool = False, compact: bool = False
) -> str:
    """The agent's fixed instructions for ``mode`` (replaces :func:`instructions`; part of the cached
    prefix): how to answer in this mode and nothing that teaches another format."""
    raise NotImplementedError("filled in by the prompts work")


def tool_catalogue(specs: Sequence[ToolSpec], *, strict: bool = False, compact: bool = False) -> str:
    """The tools as text for the prompted and JSON-schema modes: each tool's name, what it does (not when
    ``compact``) and its arguments' schema."""
    raise NotImplementedError("filled in by the prompts work")


def call_text(name: str, args: Mapping[str, Any]) -> str:
    """A call in the canonical text form ``{"tool": name, "arguments": args}`` (one line of JSON)."""
    raise NotImplementedError("filled in by the prompts work")


def result_text(name: str, answer: Mapping[str, Any]) -> str:
    """A tool's answer as the message the JSON modes send back: ``Result of <name>: <json>``."""
    raise NotImplementedError("filled in by the prompts work")


def retry_message(mode: str, error: Mapping[str, Any] | None, allowed: Sequence[str]) -> str:
    """What the model is told after an answer that did not count: the error (None: no call was found)
    and exactly how to answer in ``mode``, with an example call of one of the ``allowed`` tools."""
    raise NotImplementedError("filled in by the prompts work")
