"""Lenient reading of tool calls that a model wrote as text instead of as the API's tool calls.

Small open models often answer with a perfectly readable call in the reply text: bare JSON, a fenced
```json block, ``{"name": ..., "arguments": ...}``, doubled braces, ``<tool_call>`` tags that are wrong or
missing, or the raw action JSON (``{"type": "decide", "accept": true}``). :func:`extract_calls` finds them,
bounded in size and work before anything is parsed; it never evaluates text. What it returns is only a
candidate: every call still goes through the tools' one declaration (:class:`agents.llm.tools.SeatTools`)
and the engine's parser before it reaches the game.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.llm.tags import block_spans, reasoning_spans

MAX_TEXT_CHARS = 20_000
"""Text beyond this many characters is cut off before it is read."""

MAX_CANDIDATES = 32
"""Most JSON candidates parsed per text (each a balanced ``{...}`` or ``[...]`` span)."""

MAX_DEPTH = 32
"""Deepest bracket nesting read; a deeper region is abandoned at that depth (``too_deep``)."""

MAX_LIST_CALLS = 32
"""Most entries of one JSON list (``[call, call, ...]``, ``"tool_calls": [...]``) read as calls."""

MAX_REPAIR_CHARS = 2 * MAX_TEXT_CHARS
"""Most characters rewritten by the repairs (Python literals, trailing commas, quotes) per text."""

MAX_NAME_CHARS = 40
"""Length a tool name written by the model is cut to in a problem code."""


@dataclass(frozen=True)
class ExtractedCall:
    """One call read from text: a tool ``name`` from ``tool_names``, its ``args`` object and how it was
    written (``source``: ``fenced`` | ``tagged`` | ``bare`` | ...; for the trace)."""

    name: str
    args: dict[str, Any]
    source: str


@dataclass(frozen=True)
class Extraction:
    """What :func:`extract_calls` read: the ``calls`` in order of appearance (duplicates dropped) and
    ``problems``: short codes with details for call-like text that could not be used (``json_error``,
    ``unknown_tool:<name>``, ``too_long``, ...).

    Codes: ``too_long`` (text cut at MAX_TEXT_CHARS), ``json_error`` (call-like JSON that no repair
    parses), ``unknown_tool:<name>`` (a call-shaped object naming no tool offered; the name cut to
    MAX_NAME_CHARS), ``invalid_arguments:<tool>`` (arguments that are no object), ``imitated_result``
    (a tool result the model wrote itself: never read), ``too_deep``, ``too_many_candidates`` (the
    bounds), ``not_text``."""

    calls: list[ExtractedCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# --- the text around the JSON: reasoning, imitated results, tags, fences --------------------------------
# Every pattern below is a literal or a bounded character class: no nested quantifiers, so each search is
# linear in the text.
_RESULT_TAG = re.compile(
    r"<(/?)\|?(?:tool_response|tool_result|tool_output|function_response|function_result)\|?>", re.IGNORECASE
)
_CALL_OPEN_TAG = re.compile(
    r"<\|?(?:tool_calls?|function_calls?|functioncall|python_tag|tool_call_start|tool_call_begin)\|?>"
    r"|\[TOOL_CALLS\]",
    re.IGNORECASE,
)
_CALL_CLOSE_TAG = re.compile(
    r"<(?:/\|?|\|/)(?:tool_calls?|function_calls?|functioncall|function)\|?>"
    r"|<\|?(?:tool_call_end|eom_id|eot_id|call)\|?>|\[/TOOL_CALLS\]",
    re.IGNORECASE,
)
# The name written outside the JSON: Llama 3.x ``<function=NAME>{args}</function>``, Mistral's
# ``[TOOL_CALLS]NAME[ARGS]{args}``, gpt-oss harmony ``to=functions.NAME <|message|>{args}``.
_NAMED_ARGS_TAG = re.compile(
    r"<function=([A-Za-z0-9_.\-]{1,64})>"
    r"|\[TOOL_CALLS\]\s{0,8}([A-Za-z0-9_.\-]{1,64})\s{0,8}\[ARGS\]"
    r"|to=functions\.([A-Za-z0-9_\-]{1,64})\s{0,8}(?:<\|constrain\|>\s{0,8}\w{0,16}\s{0,8})?<\|message\|>",
    re.IGNORECASE,
)
_RESULT_LABEL = re.compile(r"Result of\s{1,8}[A-Za-z0-9_.\-]{1,64}\s{0,8}:", re.IGNORECASE)
_FENCE = re.compile(r"```")
# an opening bracket whose pair is not a bracket pair holding no bracket and no quote (as _TOKEN skips)
_OPENER = re.compile(r"[{\[](?![^{}\[\]\"']*[}\]])")
# Inside brackets: a JSON string or a bracket pair holding no bracket and no quote (neither can hold a
# call: skipped whole), a run of opening brackets (separated by nothing but spaces, commas, colons) or a run
# of closing ones. Every alternative matches one way only (the string is the unrolled loop; an unclosed
# one runs to the end), so a scan is linear.
_TOKEN = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|\{[^{}\[\]"\']*\}|\[[^{}\[\]"\']*\]'
    r"|([{\[](?:[\s,:]*[{\[])*)|([}\]]+)",
    re.DOTALL,
)
_OPENERS, _CLOSERS = 1, 2  # _TOKEN's groups
_QUOTELESS_OBJECT = re.compile(r"\{[^{}\[\]\"']*\}")
_SPACE = re.compile(r"\s*")
_CLOSER_OF_OPENER = {"{": "}", "[": "]"}


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span replaced by as many spaces (positions stay put; built in one pass)."""
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts += [text[last:start], " " * (end - start)]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _balanced_spans(text: str) -> tuple[list[tuple[int, int]], int | None, bool]:
    """Every balanced ``{...}`` / ``[...]`` span ``(start, end)`` of ``text``, outer before inner (the
    order a reader meets them; the scan stops once more than :data:`MAX_CANDIDATES` outermost ones are
    found), where the first bracket left unclosed opens (None: none), and whether some nesting went deeper
    than :data:`MAX_DEPTH`.

    One linear pass: quotes count only inside brackets (prose quotes are not JSON strings). A closer that
    does not match, nesting deeper than MAX_DEPTH, or the end of the text abandons the open brackets (the
    scan goes on after that point); the balanced spans inside them still count."""
    spans: list[tuple[int, int]] = []
    outermost = 0
    first_unclosed: int | None = None
    too_deep = False
    position = 0
    while outermost <= MAX_CANDIDATES:
        match = _OPENER.search(text, position)
        if match is None:
            break
        opened: list[int] = []  # where the open brackets of this region start, innermost last
        position = len(text)
        for token in _TOKEN.finditer(text, match.start()):
            kind = token.lastindex
            if kind is None:  # a string or a pair holding neither: nothing to do (or a region by itself)
                if not opened:
                    position = token.end()
                    break
                continue
            index, end = token.span()
            if kind == _OPENERS:
                if end - index == 1:
                    if len(opened) == MAX_DEPTH:
                        too_deep, position = True, end
                        break
                    opened.append(index)
                    continue
                if len(opened) + text.count("{", index, end) + text.count("[", index, end) > MAX_DEPTH:
                    too_deep, position = True, end
                    break
                opened.extend(at for at in range(index, end) if text[at] in _CLOSER_OF_OPENER)
                continue
            for closer in range(index, end):  # a run of closers (at most MAX_DEPTH of them match)
                if _CLOSER_OF_OPENER[text[opened[-1]]] != text[closer]:  # mismatched: the region ends
                    position = closer + 1
                    break
                spans.append((opened.pop(), closer + 1))
                if not opened:
                    outermost += 1
                    position = closer + 1
                    break
            if position != len(text):
                break
        if opened and first_unclosed is None:
            first_unclosed = opened[0]
    spans.sort()
    return spans, first_unclosed, too_deep


# --- lenient JSON ------------------------------------------------------------------------------------------
_REPAIR_TOKEN = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)'  # a JSON string: kept
    r"|'([^'\\]*(?:\\.[^'\\]*)*)(?:'|\\?\Z)"  # a single-quoted string: made JSON
    r"|,(?=\s*[}\]])"  # a trailing comma: dropped
    r"|\b(?:True|False|None)\b",  # a Python literal: made JSON
    re.DOTALL,
)
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def _repaired_token(match: re.Match[str]) -> str:
    token = match.group()
    if token[0] == '"':
        return token
    if token[0] == "'":
        return json.dumps(match.group(1).replace("\\'", "'"), ensure_ascii=False)
    if token == ",":
        return ""
    return _PYTHON_LITERALS[token]


def _repair(text: str) -> str:
    """``text`` with Python literals (True/False/None) and single-quoted strings made JSON and trailing
    commas dropped, outside JSON strings (one regex pass, linear)."""
    return _REPAIR_TOKEN.sub(_repaired_token, text)


# --- reading calls out of parsed JSON ---------------------------------------------------------------------
_WRAPPER_KEYS = ("tool_calls", "tool_call", "function_call", "calls")
_NAME_KEYS = ("tool", "name", "function", "tool_name", "action")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "params")
_ENVELOPE_NOISE = ("id", "call_id", "index")
_CALL_HINTS = ('"tool"', '"name"', '"function"', '"arguments"', '"parameters"', "'tool'", "'name'")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def _problem_name(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=True, default=str)[:80]
    return _UNPRINTABLE.sub("?", text[:MAX_NAME_CHARS])


class _Reader:
    """One extraction's state: the tool names, the problems, the repair budget."""

    def __init__(self, tool_names: Collection[str], type_to_tool: Mapping[str, str]) -> None:
        self.tool_names = set(tool_names)
        self.type_to_tool = type_to_tool
        self.problems: list[str] = []
        self.repair_budget = MAX_REPAIR_CHARS

    def problem(self, code: str) -> None:
        if code not in self.problems:
            self.problems.append(code)

    def tool(self, name: str) -> str | None:
        """The tool ``name`` stands for: itself, the tool of an action/query type of that name, the same
        after an API prefix (``functions.decide``) or in lower case; None if none is offered."""
        for candidate in (name, name.rsplit(".", 1)[-1], name.lower()):
            if candidate in self.tool_names:
                return candidate
            mapped = self.type_to_tool.get(candidate)
            if mapped in self.tool_names:
                return mapped
        return None

    def parse(self, text: str) -> tuple[bool, Any]:
        """(parsed, value) of a candidate span: as JSON, then repaired, then with doubled braces undone."""
        attempts = [text]
        if text.startswith(("{{", "[{{")):
            attempts.append(text.replace("{{", "{").replace("}}", "}"))
        for attempt in attempts:
            try:
                return True, _loads(attempt)
            except (ValueError, RecursionError):
                pass
            if self.repair_budget >= len(attempt):
                self.repair_budget -= len(attempt)
                try:
                    return True, _loads(_repair(attempt))
                except (ValueError, RecursionError):
                    pass
        return False, None

    def calls(self, value: Any, source: str, depth: int = 0) -> Iterator[ExtractedCall]:
        """The calls a parsed JSON value stands for (see :func:`extract_calls` for the forms)."""
        if depth > 3:
            return
        if isinstance(value, list):
            for item in value[:MAX_LIST_CALLS]:
                if isinstance(item, dict):
                    yield from self.calls(item, source, depth + 1)
            return
        if not isinstance(value, dict):
            return
        for key in _WRAPPER_KEYS:
            if isinstance(value.get(key), (dict, list)):
                yield from self.calls(value[key], source, depth + 1)
                return
        function = value.get("function")
        if isinstance(function, dict):  # OpenAI: {"type": "function", "function": {"name", "arguments"}}
            yield from self.call(function.get("name"), function, "name", source, call_shaped=True)
            return
        for key in _NAME_KEYS:
            name = value.get(key)
            if name is None or (key == "name" and not isinstance(name, str)):
                continue
            # "name" alone is a call only with arguments beside it or when it names a tool
            shaped = key != "name" or any(arg in value for arg in _ARG_KEYS)
            yield from self.call(name, value, key, source, call_shaped=shaped)
            return
        kind = value.get("type")
        if isinstance(kind, str) and self.tool(kind) is not None:  # the raw action / query form
            yield from self.call(kind, value, "type", source, call_shaped=True)
            return
        if len(value) == 1:  # {"decide": {"accept": true}}
            ((key, args),) = value.items()
            if self.tool(key) is not None and (args is None or isinstance(args, dict)):
                yield from self.call(key, {"arguments": args}, "", source, call_shaped=True)

    def call(
        self, name: Any, holder: Mapping[str, Any], name_key: str, source: str, *, call_shaped: bool
    ) -> Iterator[ExtractedCall]:
        tool = self.tool(name) if isinstance(name, str) else None
        if tool is None:
            if call_shaped:
                self.problem(f"unknown_tool:{_problem_name(name)}")
            return
        args = self.arguments(holder, name_key)
        if args is None:
            self.problem(f"invalid_arguments:{tool}")
            return
        yield ExtractedCall(tool, args, source)

    def arguments(self, holder: Mapping[str, Any], name_key: str) -> dict[str, Any] | None:
        """The call's arguments: the first argument key's value (an object, or a JSON string holding
        one, decoded once; null = none), else the holder's other keys (``{"type": "decide", "accept":
        true}``); None when they are not an object."""
        for key in _ARG_KEYS:
            if key in holder:
                raw = holder[key]
                break
        else:
            return {
                key: value
                for key, value in holder.items()
                if key != name_key
                and key not in _ENVELOPE_NOISE
                and not (key == "type" and value == "function")
            }
        if raw is None:
            return {}
        if isinstance(raw, str):
            if not raw.strip():
                return {}
            parsed, raw = self.parse(raw.strip())
            if not parsed:
                return None
        return raw if isinstance(raw, dict) else None


def _looks_like_call(text: str, tool_names: Collection[str]) -> bool:
    return any(hint in text for hint in _CALL_HINTS) or any(f'"{name}"' in text for name in tool_names)


def extract_calls(
    text: str, tool_names: Collection[str], type_to_tool: Mapping[str, str] | None = None
) -> Extraction:
    """The calls of ``tools_names`` written in ``text`` (see the module docstring).

    ``type_to_tool`` maps an action/query ``type`` to its tool's name (default
    :data:`agents.llm.tools.TOOL_OF_TYPE`), so the raw action form is read as the same call.

    Forms read: the envelope ``{"tool": N, "arguments": {...}}``; ``{"name"|"function"|"action": N,
    "arguments"|"parameters"|"args"|"input": ...}`` (arguments an object or a JSON string holding one);
    ``{"function": {"name", "arguments"}}``; ``{"tool_calls": [...]}``; a list of calls; the raw action
    ``{"type": T, ...}``; ``{N: {...}}``; each bare, fenced, or inside tool-call tags (``<tool_call>``,
    ``<|tool_call|>``, ``<function_call>``, ``[TOOL_CALLS]``, ``<|python_tag|>``, opening or closing tag
    missing), ``<function=N>{...}`` and ``[TOOL_CALLS]N[ARGS]{...}``; doubled braces, Python literals,
    single quotes and trailing commas repaired. Never read: ``<think>`` blocks and imitated tool results
    (``<tool_response>``, ``<tool_result>``, ``Result of N: ...``).
    """
    if type_to_tool is None:
        from agents.llm.tools import TOOL_OF_TYPE  # late: tools imports LangChain, extraction needs none

        type_to_tool = TOOL_OF_TYPE
    reader = _Reader(tool_names, type_to_tool)
    if not isinstance(text, str):
        return Extraction(problems=["not_text"])
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS]
        reader.problem("too_long")
    text = _blank(text, reasoning_spans(text))
    results = block_spans(text, _RESULT_TAG, lone_close_opens_at_start=False)
    if results:
        reader.problem("imitated_result")
        text = _blank(text, results)
    result_labels = list(_RESULT_LABEL.finditer(text))
    result_starts = sorted([start for start, _ in results] + [label.start() for label in result_labels])

    def next_word(position: int) -> int:
        return _SPACE.match(text, position).end()  # type: ignore[union-attr]

    # where a span starts that follows a call tag, a named-arguments tag or a result label
    after_call_tag = {next_word(match.end()) for match in _CALL_OPEN_TAG.finditer(text)}
    after_named_args = {
        next_word(match.end()): next(name for name in match.groups() if name)
        for match in _NAMED_ARGS_TAG.finditer(text)
    }
    after_result_label = {next_word(label.end()) for label in result_labels}
    fences = [match.start() for match in _FENCE.finditer(text)]

    def source_of(start: int, end: int) -> str:
        """How the span ``text[start:end]`` was written."""
        if start in after_named_args:
            return "function_tag"
        if start in after_call_tag or _CALL_CLOSE_TAG.match(text, next_word(end)):
            return "tagged"
        if bisect.bisect_right(fences, start) % 2 == 1:  # after an odd number of ``` marks
            return "fenced"
        return "bare"

    spans, first_unclosed, too_deep = _balanced_spans(text)
    for start in after_named_args:  # the scan skips ``{}``: here it is a call's arguments
        quoteless = _QUOTELESS_OBJECT.match(text, start)
        if quoteless is not None:
            bisect.insort(spans, (start, quoteless.end()))
    if too_deep:
        reader.problem("too_deep")
    if first_unclosed is not None and _looks_like_call(text[first_unclosed:], reader.tool_names):
        reader.problem("json_error")

    calls: list[ExtractedCall] = []
    seen: set[tuple[str, str]] = set()
    budget = MAX_CANDIDATES
    read_until = 0  # spans inside one already read (or skipped as a result) are part of it
    broken_until, calls_before_broken = 0, 0  # a call-like span that did not parse, and what came of it
    continuation_at = len(text)  # after a call, an imitated result starts the model's imagined sequel
    for start, end in spans:
        if start >= broken_until > 0:
            if len(calls) == calls_before_broken:
                reader.problem("json_error")
            broken_until = 0
        if start >= continuation_at:
            break
        if start < read_until:
            continue
        if budget == 0:
            reader.problem("too_many_candidates")
            break
        if start in after_result_label:
            reader.problem("imitated_result")
            read_until = end
            continue
        budget -= 1
        body = text[start:end]
        parsed, value = reader.parse(body)
        if not parsed:  # the spans inside are read next, one by one
            if broken_until == 0 and _looks_like_call(body, reader.tool_names):
                broken_until, calls_before_broken = end, len(calls)
            continue
        read_until = end
        source = source_of(start, end)
        if source == "function_tag":
            value = {"name": after_named_args[start], "arguments": value}
        for call in reader.calls(value, source):
            key = (call.name, json.dumps(call.args, sort_keys=True, default=str))
            if key not in seen:
                seen.add(key)
                calls.append(call)
        if calls and continuation_at == len(text):
            continuation_at = next((at for at in result_starts if at >= end), len(text))
    if broken_until > 0 and len(calls) == calls_before_broken:
        reader.problem("json_error")
    return Extraction(calls=calls, problems=reader.problems)
