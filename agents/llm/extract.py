"""Lenient reading of tool calls that a model wrote as text instead of as the API's tool calls.

Small open models often answer with a perfectly readable call in the reply text: bare JSON, a fenced
```json block, ``{"name": ..., "arguments": ...}``, doubled braces, ``<tool_call>`` tags that are wrong or
missing, or the raw action JSON (``{"type": "decide", "accept": true}``). :func:`extract_calls` finds them,
bounded in size and work before anything is parsed; it never evaluates text. What it returns is only a
candidate: every call still goes through the tools' one declaration (:class:`agents.llm.tools.SeatTools`)
and the engine's parser before it reaches the game.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_TEXT_CHARS = 20_000
"""Text beyond this many characters is cut off before it is read."""

CALL_ENVELOPE = ("tool", "arguments")
"""The canonical text form of a call in the JSON modes: ``{"tool": "<name>", "arguments": {...}}``."""


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
    ``unknown_tool:<name>``, ``too_long``, ...)."""

    calls: list[ExtractedCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        return bool(self.calls)


def extract_calls(
    text: str, tool_names: Collection[str], type_to_tool: Mapping[str, str] | None = None
) -> Extraction:
    """The calls of ``tools_names`` written in ``text`` (see the module docstring).

    ``type_to_tool`` maps an action/query ``type`` to its tool's name (default
    :data:`agents.llm.tools.TOOL_OF_TYPE`), so the raw action form is read as the same call."""
    raise NotImplementedError("filled in by the extraction work")
