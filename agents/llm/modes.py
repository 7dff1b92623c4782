"""The three ways a model answers with a call (``prompts.TOOL_MODES``), one small object each.

- ``native``: the API's function calling. The tools are bound once per game in a fixed order
  (``bind_tools(..., tool_choice=auto|required|none)``); calls come back in ``AIMessage.tool_calls``, and
  when there are none the reply text is read leniently (:func:`agents.llm.extract.extract_calls`).
- ``json_schema``: no tools in the API; ``response_format`` carries a JSON schema that only admits the
  canonical envelope ``{"tool": name, "arguments": {...}}`` of a tool allowed now (servers that constrain
  decoding to it always produce parseable JSON). The content is read with ``extract_calls``.
- ``prompted``: no tools in the API; the tool catalogue is in the system prompt and the model writes one
  envelope in its text, read with ``extract_calls``.

Whatever the mode, every call read goes through :meth:`agents.llm.tools.SeatTools.call` (the one
declaration of the actions and the engine's parser). A mode also says how a call and its answer are
remembered: native as an ``AIMessage`` with the tool call plus a ``ToolMessage``; the JSON modes as the
call's canonical text (``prompts.call_text``) plus a user message ``Result of <name>: ...``
(``prompts.result_text``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from agents.llm import extract, prompts
from agents.llm.tools import TOOL_OF_TYPE, ToolSpec

ENVELOPE_NAME = "tradecraft_call"
"""The ``json_schema.name`` of the envelope schema sent as ``response_format``."""

JSON_MODE_STOP = ("\n\nUser:",)
"""Default stop sequences of the JSON modes: where a model starts imitating the user. Not an imitated tool
result (``<tool_response>``, ``Result of``): a model may write one *before* its call, and a stop there would
cut the answer at its start; :func:`~agents.llm.extract.extract_calls` never reads an imitated result and
stops reading at one that follows a call, and ``max_tokens`` bounds the rest."""

NATIVE_STOP: tuple[str, ...] = ()
"""Native mode sends none by default: hosted reasoning models refuse ``stop``, and the API's tool calls do
not run on into imitated results."""

TOOL_CHOICES = ("auto", "required", "none")

TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
"""What a tool name of an API tool call may look like; any other name is refused unread."""
_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_\-]")


@dataclass(frozen=True)
class ReadCall:
    """One call read from an answer: ``source`` ``api`` (the server's tool call), ``text`` (read from
    the reply text) or ``invalid`` (an API tool call that cannot be used: ``problem`` says why,
    ``not_json`` arguments, arguments ``too_long`` or a ``bad_name``; its ``args`` are then None and its
    name is cut to a safe one)."""

    name: str
    args: Any
    call_id: str
    source: Literal["api", "text", "invalid"]
    problem: Literal["", "not_json", "too_long", "bad_name"] = ""
    written: str = ""  # a call read from text: how it was written (extract's ``fenced``, ``tagged``, ...)


@dataclass(frozen=True)
class Reading:
    """What was read from one answer: its ``calls`` in order, the ``problems`` of call-like text that
    could not be used (from ``extract_calls``) and the answer's ``text`` (cut to ``MAX_TEXT_CHARS``)."""

    calls: list[ReadCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    text: str = ""


class ToolMode:
    """What the agent asks a mode (see the module docstring); subclasses fill in the differences."""

    name: str = ""
    default_stop: tuple[str, ...] = ()

    def runnable(
        self,
        model: BaseChatModel,
        *,
        tools: Sequence[BaseTool],
        allowed: Sequence[ToolSpec],
        tool_choice: str | None,
        strict: bool,
        compact: bool,
    ) -> Runnable[Any, Any]:
        """The model bound for one call: ``tools`` are every tool (native binds them all, always in the same
        order, so prompt caches hit), ``allowed`` the tools this move admits now."""
        raise NotImplementedError

    def system_text(
        self, prefix: str, specs: Sequence[ToolSpec], *, instructions: str, strict: bool, compact: bool
    ) -> str:
        """The stable system prompt: the narrator's ``prefix`` and the mode's ``instructions`` (in the JSON
        modes they carry the tool catalogue, :func:`agents.llm.prompts.mode_instructions`)."""
        return prefix + "\n\n" + instructions

    def read(self, answer: AIMessage, tool_names: Sequence[str]) -> Reading:
        """The calls of ``answer`` (see :class:`Reading`)."""
        text = answer_text(answer)
        found = extract.extract_calls(text, tool_names, TOOL_OF_TYPE)
        calls = [ReadCall(c.name, c.args, "", "text", written=c.source) for c in found.calls]
        return Reading(calls, list(found.problems), text)

    def call_messages(self, call: ReadCall, answer: Mapping[str, Any], call_id: str) -> list[BaseMessage]:
        """A call and its typed ``answer`` as the mode remembers them (canonical form)."""
        raise NotImplementedError


class NativeMode(ToolMode):
    name = "native"
    default_stop = NATIVE_STOP

    def runnable(
        self,
        model: BaseChatModel,
        *,
        tools: Sequence[BaseTool],
        allowed: Sequence[ToolSpec],
        tool_choice: str | None,
        strict: bool,
        compact: bool,
    ) -> Runnable[Any, Any]:
        options: dict[str, Any] = {"tool_choice": tool_choice or "auto"}
        if strict:
            options["strict"] = True
        return model.bind_tools(list(tools), **options)

    def read(self, answer: AIMessage, tool_names: Sequence[str]) -> Reading:
        calls = [_api_call(c.get("name"), c["args"], c.get("id")) for c in answer.tool_calls]
        calls += [
            _api_call(c.get("name"), c.get("args"), c.get("id"), problem="not_json")
            for c in answer.invalid_tool_calls
        ]
        if calls:
            return Reading(calls, [], answer_text(answer))
        return super().read(answer, tool_names)  # a call written in the text counts as well

    def call_messages(self, call: ReadCall, answer: Mapping[str, Any], call_id: str) -> list[BaseMessage]:
        args = call.args if isinstance(call.args, Mapping) else {}
        tool_call = {"name": call.name, "args": dict(args), "id": call_id, "type": "tool_call"}
        return [
            AIMessage(content="", tool_calls=[tool_call]),
            ToolMessage(json.dumps(answer, ensure_ascii=False), tool_call_id=call_id),
        ]


def _api_call(name: Any, args: Any, call_id: Any, problem: Literal["", "not_json"] = "") -> ReadCall:
    """An API tool call, bounded before anything reads it: a name that is no tool name or arguments
    longer than ``extract.MAX_TEXT_CHARS`` make it ``invalid`` (its name cut to a safe one, no args)."""
    call_id = str(call_id or "")[:64]
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        shown = _NOT_NAME_CHARS.sub("_", str(name)[:64]) or "unnamed"
        return ReadCall(shown, None, call_id, "invalid", "bad_name")
    if problem:
        return ReadCall(name, None, call_id, "invalid", "not_json")
    try:
        size = len(args) if isinstance(args, str) else len(json.dumps(args, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        size = extract.MAX_TEXT_CHARS + 1
    if size > extract.MAX_TEXT_CHARS:
        return ReadCall(name, None, call_id, "invalid", "too_long")
    return ReadCall(name, args, call_id, "api")


class JsonSchemaMode(ToolMode):
    name = "json_schema"
    default_stop = JSON_MODE_STOP

    def runnable(
        self,
        model: BaseChatModel,
        *,
        tools: Sequence[BaseTool],
        allowed: Sequence[ToolSpec],
        tool_choice: str | None,
        strict: bool,
        compact: bool,
    ) -> Runnable[Any, Any]:
        schema = envelope_schema(allowed, strict=strict, compact=compact)
        return model.bind(
            response_format={"type": "json_schema", "json_schema": {"name": ENVELOPE_NAME, "schema": schema}}
        )

    def call_messages(self, call: ReadCall, answer: Mapping[str, Any], call_id: str) -> list[BaseMessage]:
        args = call.args if isinstance(call.args, Mapping) else {}
        return [
            AIMessage(content=prompts.call_text(call.name, args)),
            HumanMessage(prompts.result_text(call.name, answer)),
        ]


class PromptedMode(JsonSchemaMode):
    name = "prompted"
    default_stop = JSON_MODE_STOP

    def runnable(
        self,
        model: BaseChatModel,
        *,
        tools: Sequence[BaseTool],
        allowed: Sequence[ToolSpec],
        tool_choice: str | None,
        strict: bool,
        compact: bool,
    ) -> Runnable[Any, Any]:
        return model


MODES: dict[str, ToolMode] = {mode.name: mode for mode in (NativeMode(), JsonSchemaMode(), PromptedMode())}
assert tuple(MODES) == prompts.TOOL_MODES


def envelope_schema(specs: Sequence[ToolSpec], *, strict: bool, compact: bool = False) -> dict[str, Any]:
    """The JSON schema that admits only ``{"tool": <name>, "arguments": <its args>}`` for one of ``specs``.

    Each tool's ``$defs`` move to the root under ``<tool>.<name>`` (a ``$ref`` is resolved against the
    root of the whole schema)."""
    options: list[dict[str, Any]] = []
    definitions: dict[str, Any] = {}
    for spec in specs:
        arguments = spec.args_schema(strict, compact)
        local = arguments.pop("$defs", {})
        renamed = {name: f"{spec.name}.{name}" for name in local}
        arguments = _renamed_refs(arguments, renamed)
        for name, definition in local.items():
            definitions[renamed[name]] = _renamed_refs(definition, renamed)
        options.append(envelope_option(spec.name, arguments))
    schema: dict[str, Any] = {"anyOf": options}
    if definitions:
        schema["$defs"] = definitions
    return schema


def envelope_option(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The schema of one tool's envelope ``{"tool": name, "arguments": <arguments>}`` (the probe's
    ``confirm`` uses it as it is)."""
    return {
        "type": "object",
        "properties": {"tool": {"const": name}, "arguments": arguments},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


def _renamed_refs(value: Any, renamed: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        out = {key: _renamed_refs(item, renamed) for key, item in value.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            out["$ref"] = "#/$defs/" + renamed.get(name, name)
        return out
    if isinstance(value, list):
        return [_renamed_refs(item, renamed) for item in value]
    return value


def answer_text(answer: AIMessage) -> str:
    """The reply text of ``answer`` (text blocks joined), cut to ``extract.MAX_TEXT_CHARS`` before anything
    reads it."""
    content = answer.content
    if isinstance(content, str):
        text = content
    else:
        parts: list[str] = []
        size = 0
        for block in content or []:
            piece = block if isinstance(block, str) else None
            if isinstance(block, Mapping) and block.get("type") == "text":
                piece = str(block.get("text", ""))
            if piece:
                parts.append(piece)
                size += len(piece)
                if size > extract.MAX_TEXT_CHARS:
                    break
        text = "".join(parts)
    return text[: extract.MAX_TEXT_CHARS]
