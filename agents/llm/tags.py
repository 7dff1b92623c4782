"""Tag-delimited blocks in a model's text: its reasoning (``<think>``) and, for the reader, imitated
tool results. The reasoning tag is declared here once, for the reader (:mod:`agents.llm.extract`), the
tools (:func:`agents.llm.tools.strip_reasoning`) and the agent's trace. Linear scans; nothing else."""

from __future__ import annotations

import re

THINK_TAG = re.compile(r"<(/?)think(?:ing)?>", re.IGNORECASE)
"""An opening or closing reasoning tag (``<think>``, ``</thinking>``, any case)."""


def block_spans(text: str, tag: re.Pattern[str], *, lone_close_opens_at_start: bool) -> list[tuple[int, int]]:
    """Spans from an opening ``tag`` to its closing one (an unclosed block runs to the end). With
    ``lone_close_opens_at_start``, a closing tag before any opening one ends a block that began with the
    text (reasoning models whose template already wrote ``<think>`` answer ``... </think> answer``)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for match in tag.finditer(text):
        closing = bool(match.group(1))
        if start is None and not closing:
            start = match.start()
        elif start is not None and closing:
            spans.append((start, match.end()))
            start = None
        elif closing and lone_close_opens_at_start and not spans:
            spans.append((0, match.end()))
    if start is not None:
        spans.append((start, len(text)))
    return spans


def reasoning_spans(text: str) -> list[tuple[int, int]]:
    """The reasoning blocks of ``text``, tags included: ``<think>...</think>`` (or ``<thinking>``; an
    unclosed one runs to the end) and, before any opening tag, everything up to a lone ``</think>`` (a
    template that already wrote the opening tag). Linear in the text."""
    return block_spans(text, THINK_TAG, lone_close_opens_at_start=True)
