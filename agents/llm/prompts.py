"""The agent's fixed instructions: how it plays through tools, its persona and its reasoning mode.

Personas follow the Ultimatum-game study (../shared/research/papers-ultimatum-and-workflows.md, paper A): the
player is told what kind of negotiator it is, to stay consistent with it and to keep it private; nothing
says how to trade. Reasoning modes: ``direct`` (call the tool at once) and ``cot`` (think step by step in
private text first; the text goes to the trace, never to the game).

Nothing here mentions how to use the ToM reports: the narrator's preamble asks for them neutrally.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agents.llm.tools import ACTION_TOOLS, QUERY_TOOLS, TOOL_OF_TYPE, ToolSpec, tool_specs
from server.game.schemas import to_strict

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
"""The reasoning paragraph of the ``native`` mode (the JSON modes word it per mode, see below)."""


def instructions(*, persona: str, reasoning: str, max_queries: int, strict: bool = False) -> str:
    """The ``native`` mode's instructions (:func:`mode_instructions`), kept for existing callers."""
    return mode_instructions(
        "native", persona=persona, reasoning=reasoning, max_queries=max_queries, strict=strict
    )


def refusal_note(action_type: str, error: dict[str, object]) -> str:
    """What the agent is told when the game refused the action it chose."""
    return (
        f"The game refused your {action_type}: [{error.get('code')}] {error.get('message')} "
        "Choose your move again."
    )


# --- per tool mode (agents/llm/modes.py) -----------------------------------------------------------------
TOOL_MODES = ("native", "json_schema", "prompted")
"""How the model answers: the API's tool calls; one JSON object constrained by ``response_format``; one
JSON object written in the reply text (the schemas are in the prompt)."""

_ACTION_NAMES = ", ".join(ACTION_TOOLS)
_QUERY_NAMES = ", ".join(QUERY_TOOLS)
_ENVELOPE = '{"tool": "<tool name>", "arguments": {...}}'
_STRICT_NOTE = (
    "The tools' arguments write item bundles and values as lists of pairs ({item, count}, {item, value}, "
    "{seat, values}), not as objects keyed by item."
)

# Example argument values by field name: the retry message's example call of a tool is built from the
# fields its model declares (every required field must have one here, checked at import below), so an
# example cannot drift from the declaration. Placeholders in <angle brackets> name what to put there.
_EXAMPLE_VALUES: dict[str, Any] = {
    "v0": {"<item id>": 5},
    "v1": {"<seat>": {"<item id>": 5}},
    "v2": {"<seat>": {"<item id>": 5}},
    "to": 1,
    "offer": {"<item id>": 1},
    "request": {"<item id>": 1},
    "accept": True,
    "message": "...",
    "recipe": "<recipe id>",
    "runs": 1,
    "item": "<item id>",
    "text": "<text>",
    "grid": [["<item id>", None]],
}


def _example_args(spec: ToolSpec, strict: bool = False) -> dict[str, Any]:
    """A minimal plausible argument object for ``spec``: its required fields and the optional ones that
    have an example value, in declaration order (strict: in the strict-mode rendering)."""
    args: dict[str, Any] = {}
    for name, field in spec.model.model_fields.items():
        if name == "type":
            continue
        if name in _EXAMPLE_VALUES:
            args[name] = _EXAMPLE_VALUES[name]
        elif field.is_required():
            raise KeyError(f"no example value for the required field {spec.name}.{name}")
    if strict:
        args = to_strict({"type": spec.type, **args})
        args.pop("type", None)
    return args


_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in tool_specs()}
_EXAMPLES: dict[str, dict[str, Any]] = {name: _example_args(spec) for name, spec in _SPECS.items()}


def mode_instructions(
    mode: str, *, persona: str, reasoning: str, max_queries: int, strict: bool = False, compact: bool = False
) -> str:
    """The agent's fixed instructions for ``mode`` (replaces :func:`instructions`; part of the cached
    prefix): how to answer in this mode and nothing that teaches another format.

    ``native``: act only through the API's tool calls. ``json_schema`` and ``prompted``: every answer is
    one call ``{"tool": ..., "arguments": ...}`` (:func:`call_text`) and a result comes back as
    ``Result of <name>: ...`` (:func:`result_text`); these two modes carry the tool catalogue
    (:func:`tool_catalogue` of every tool; no query tools when ``max_queries`` is 0), as the API is sent
    no tool declarations then, so the agent adds no other copy. Reasoning ``cot``: native and prompted
    think in plain text first (prompted: then end with the JSON object); in ``json_schema`` mode the
    constrained answer is the JSON object alone, so ``cot`` cannot add free text there and the
    instructions ask for the call only (the agent records that cot is not available in that mode).
    ``compact``: the same rules in fewer words, the catalogue without prose.
    """
    if mode not in TOOL_MODES:
        raise ValueError(f"mode must be one of {', '.join(TOOL_MODES)}, not {mode!r}")
    if persona not in PERSONAS:
        raise ValueError(f"persona must be one of {', '.join(PERSONAS)}, not {persona!r}")
    if reasoning not in REASONING_MODES:
        raise ValueError(f"reasoning must be one of {', '.join(REASONING_MODES)}, not {reasoning!r}")
    queries = max_queries > 0
    if mode == "native":
        how = _native_rules(queries, max_queries, compact)
    else:
        how = _json_rules(mode, queries, max_queries, compact, strict)
    if strict:
        how.append(_STRICT_NOTE)
    heading = "# How to play" if compact else "# How you play"
    lines = [heading, *how, "", "# Reasoning", _reasoning_text(mode, reasoning, compact)]
    if PERSONAS[persona]:
        lines += ["", "# Your persona", PERSONAS[persona]]
    if mode != "native":
        specs = [spec for spec in _SPECS.values() if queries or spec.kind == "action"]
        lines += ["", tool_catalogue(specs, strict=strict, compact=compact)]
    return "\n".join(lines)


def _native_rules(queries: bool, max_queries: int, compact: bool) -> list[str]:
    if compact:
        lines = [
            "Act only by calling tools. On your move call one action tool the message allows; one craft "
            "per call, then finish_crafting.",
        ]
        if queries:
            lines.append(f"Query tools change nothing; at most {max_queries} per move.")
        lines.append("A refused call returns an error saying what to fix: call again.")
        return lines
    lines = [
        "You act only by calling tools. Each message from the game shows the state now and what happened "
        "since your last message. When it is your move, call exactly one action tool that the message "
        f"allows ({_ACTION_NAMES}); one craft per call, call finish_crafting when you are done crafting.",
    ]
    if queries:
        lines.append(
            f"Before an action you may call query tools ({_QUERY_NAMES}), at most {max_queries} per "
            "move; they change nothing."
        )
    lines.append(
        "A refused call comes back with an error code and a sentence saying what to fix; then call again."
    )
    return lines


def _json_rules(mode: str, queries: bool, max_queries: int, compact: bool, strict: bool) -> list[str]:
    # a template-like example (placeholders, no yes/no to copy): small models imitate an example's choice
    example = call_text("craft", _example_args(_SPECS["craft"], strict))
    if compact:
        answer = (
            f"Answer with one JSON object only: {_ENVELOPE}."
            if mode == "json_schema"
            else f"Answer with one JSON object: {_ENVELOPE} (alone or in a ```json block)."
        )
        lines = [
            answer,
            f"Example: {example}",
            "On your move call one action tool the message allows; one craft per call, then finish_crafting.",
        ]
        if queries:
            lines.append(f"Query tools change nothing; at most {max_queries} per move.")
        lines.append(
            "The game answers 'Result of <tool name>: ...'; an error there says what to fix: call again. "
            "Never write a result yourself."
        )
        return lines
    if mode == "json_schema":
        answer = (
            f"Answer every message with exactly one JSON object and nothing else: {_ENVELOPE}. "
            "This answer format is enforced."
        )
    else:
        answer = (
            f"You act by writing one tool call as a JSON object: {_ENVELOPE}. Write the object alone, or "
            "alone in a ```json block; one call per answer."
        )
    lines = [
        answer,
        f"For example: {example}",
        "Each message from the game shows the state now and what happened since your last message. When "
        f"it is your move, call exactly one action tool that the message allows ({_ACTION_NAMES}); one "
        "craft per call, call finish_crafting when you are done crafting.",
    ]
    if queries:
        lines.append(
            f"Before an action you may call query tools ({_QUERY_NAMES}) the same way, at most "
            f"{max_queries} per move; they change nothing."
        )
    lines.append(
        "The game answers a call with a message 'Result of <tool name>: {...}': a query's answer, or an "
        "error code and a sentence saying what to fix (then call again). Only the game writes results."
    )
    return lines


def _reasoning_text(mode: str, reasoning: str, compact: bool) -> str:
    if mode == "native":
        if compact and reasoning == "direct":
            return "Call the tool directly, no explanation."
        return REASONING_MODES[reasoning]
    if mode == "prompted" and reasoning == "cot":
        if compact:
            return "Think step by step in plain text first (private), then end with the JSON object."
        return (
            "Before each call, think step by step in plain text about the situation and your options (this "
            "text is private: no other player ever sees it), then end your answer with the JSON object."
        )
    # direct, and cot in json_schema mode: the answer is the JSON object alone
    return (
        "Write the JSON object only, no explanation."
        if compact
        else ("Write the JSON object only, without any explanation.")
    )


def tool_catalogue(specs: Sequence[ToolSpec], *, strict: bool = False, compact: bool = False) -> str:
    """The tools as text for the prompted and JSON-schema modes: each tool's name, what it does (not when
    ``compact``) and its arguments' schema.

    The one text rendering of the tools: the schema is :meth:`ToolSpec.args_schema` dumped as compact
    JSON, without its title and description (the line says them)."""
    lines = ["# Tools"]
    groups = (
        ("action", "Action tools (a valid one ends your move):" if not compact else "Actions:"),
        ("query", "Query tools (answered at once; they change nothing):" if not compact else "Queries:"),
    )
    for kind, heading in groups:
        chosen = [spec for spec in specs if spec.kind == kind]
        if not chosen:
            continue
        lines.append(heading)
        for spec in chosen:
            schema = spec.args_schema(strict, compact)
            schema.pop("title", None)
            description = schema.pop("description", "")
            arguments = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
            if compact:
                lines.append(f"- {spec.name} {arguments}")
            else:
                lines.append(f"- {spec.name}: {' '.join(description.split())}")
                lines.append(f"  arguments: {arguments}")
    return "\n".join(lines)


# characters that end a line for some readers but that JSON leaves unescaped (as the narrator quotes)
_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _one_line_json(value: Any, separators: tuple[str, str]) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=separators)
    for char, escaped in _LINE_BREAKS.items():
        text = text.replace(char, escaped)
    return text


def call_text(name: str, args: Mapping[str, Any]) -> str:
    """A call in the canonical text form ``{"tool": name, "arguments": args}`` (one line of JSON)."""
    return _one_line_json({"tool": name, "arguments": args}, (", ", ": "))


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
MAX_ERROR_CHARS = 300
"""An error's message is cut to this many characters in a retry message (it may quote model text)."""


def _name_text(name: str) -> str:
    """A tool name as it may appear in a message: plain if it looks like one, else quoted and cut."""
    return name if _TOOL_NAME.fullmatch(name) else _one_line_json(name[:64], (",", ":"))


def result_text(name: str, answer: Mapping[str, Any]) -> str:
    """A tool's answer as the message the JSON modes send back: ``Result of <name>: <json>``."""
    return f"Result of {_name_text(name)}: {_one_line_json(answer, (',', ':'))}"


def retry_message(
    mode: str, error: Mapping[str, Any] | None, allowed: Sequence[str], *, strict: bool = False
) -> str:
    """What the model is told after an answer that did not count: the error (None: no call was found)
    and exactly how to answer in ``mode``, with an example call of one of the ``allowed`` tools.

    The example's tool: the one the error is about when it is allowed, else the first allowed action
    tool, else the first allowed tool. ``strict``: the example in the strict-mode rendering."""
    if mode not in TOOL_MODES:
        raise ValueError(f"mode must be one of {', '.join(TOOL_MODES)}, not {mode!r}")
    if error is None:
        head = (
            "Your answer had no tool call." if mode == "native" else "No call could be read in your answer."
        )
    else:
        code = " ".join(str(error.get("code", "error")).split())[:64]
        message = " ".join(str(error.get("message", "")).split())
        if len(message) > MAX_ERROR_CHARS:
            message = message[: MAX_ERROR_CHARS - 3] + "..."
        head = f"Error [{code}]: {message}".rstrip()
    name = _example_tool(error, allowed)
    actions = [n for n in allowed if n in ACTION_TOOLS]
    allowed_now = f" Allowed actions now: {', '.join(actions)}." if actions else ""
    if mode == "native":
        if name is None:
            return f"{head} Call one of the tools now."
        return f"{head} Call the tool {name} now (a tool call, not text).{allowed_now}"
    if name is None:
        example = _ENVELOPE
    else:
        spec = _SPECS[name]
        example = call_text(name, _example_args(spec, strict) if strict else _EXAMPLES[name])
    return f"{head}{allowed_now} Answer with one JSON object only, like:\n{example}"


def _example_tool(error: Mapping[str, Any] | None, allowed: Sequence[str]) -> str | None:
    known = [name for name in allowed if name in _SPECS]
    details = (error or {}).get("details")
    if isinstance(details, Mapping):
        for key in ("tool", "action", "query"):
            named = details.get(key)
            named = TOOL_OF_TYPE.get(named, named) if isinstance(named, str) else None
            if named in known:
                return named
    for name in known:
        if _SPECS[name].kind == "action":
            return name
    return known[0] if known else None
