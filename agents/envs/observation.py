"""A seat's observations, built step after step from what changed: the same content at a fraction of the cost.

An observation (:mod:`agents.envs.core`) is the narrator's text, the view as JSON, a tool mask, the turn
and whether the seat is awaited; the info adds the view itself and the answer to the seat's last call.
Built from scratch at every step, the text and the JSON cost about as much as the moves they describe.
Most of it does not change from one step to the next, so :class:`SeatObserver` keeps, per seat and game:

- the stable prefix of the text (rules and the seat's fixed facts), told once;
- the news (``## New since your last observation``): each event is narrated once, from the game's own
  event (not a copy rebuilt from the seat's log record), and the lines are joined when the seat looks;
- the state section (``## Now``): told per state, with the unchanged turns of the trade history and the
  bundles remembered (:class:`agents.narrator.NarrationMemo`, :func:`agents.narrator.bundle`);
- the tool mask per set of legal action types.

The view's JSON is ``json.dumps`` of each state's view, built once per state (remembering parts of it
between states was tried: comparing the parts costs about what the C encoder takes to write them).
Every text is what the narrator gives for the whole (``tests/test_env_observations.py`` checks them
against :func:`agents.narrator.observation` at every step of whole games), and nothing handed out is
shared with an earlier step's observation or info.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agents.narrator import (
    NarrationMemo,
    describe_view,
    event_lines,
    stable_prefix,
    state_and_news,
)
from craft_rules.model import RuleSet
from server.game.events import Event

MAX_TEXT_CHARS = 200_000
"""Longest observation text (and view JSON). A view covers 20 turns of history, so real observations
stay far below this; a longer one is cut at the end with a marker (never silently)."""

# Every character the texts may hold: tab, newline, carriage return and the Basic Multilingual Plane
# without surrogates. Players' messages may hold anything; characters beyond it (e.g. emoji) are written
# as \U0001xxxx escapes by :func:`escape_text`, so every observation lies in the space.
TEXT_CHARSET = frozenset(
    "\t\n\r" + "".join(chr(c) for c in range(0x20, 0xD800)) + "".join(chr(c) for c in range(0xE000, 0x10000))
)
_OUTSIDE_CHARSET = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\uffff]")
_ASCII_INSIDE = bytes([0x09, 0x0A, 0x0D, *range(0x20, 0x80)])  # the charset's ASCII part
_CUT_MARKER = "\n[... cut: longer than the observation allows]"


def escape_text(text: str) -> str:
    """``text`` with every character outside :data:`TEXT_CHARSET` written as an escape. Character by
    character, so escaping the parts of a text and joining them equals escaping the whole."""
    if text.isascii() and not text.encode("ascii").translate(None, _ASCII_INSIDE):
        return text  # the usual case, checked ten times faster than by the pattern
    if _OUTSIDE_CHARSET.search(text):
        text = _OUTSIDE_CHARSET.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return text


def cut_text(text: str) -> str:
    """``text`` cut to :data:`MAX_TEXT_CHARS` with a marker saying so (unchanged when it fits)."""
    if len(text) > MAX_TEXT_CHARS:
        text = text[: MAX_TEXT_CHARS - len(_CUT_MARKER)] + _CUT_MARKER
    return text


def fit_text(text: str) -> str:
    """``text`` inside the observation charset and length: astral characters escaped, cut if too long."""
    return cut_text(escape_text(text))


def copy_data(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists and immutable leaves), far cheaper than deepcopy."""
    if type(value) is dict:
        return {k: copy_data(v) for k, v in value.items()}
    if type(value) is list:
        return [copy_data(v) for v in value]
    return value


class SeatObserver:
    """One seat's observations through one game (see the module docstring).

    The caller (:class:`agents.envs.core.Match`) hands it the seat's news as they arrive
    (:meth:`add_news`), says when the seat has seen them (:meth:`news_shown`), and asks for the pieces
    of the narration of the current state (:meth:`narration`) and the tool mask (:meth:`mask`).
    """

    def __init__(self, rules: RuleSet, seat: int, narrate: bool = True) -> None:
        self.rules = rules
        self.seat = seat
        self.narrate = narrate
        self._prefix: str | None = None
        self._news: list[str] = []  # the unshown news, narrated, one line per event
        self._memo = NarrationMemo()
        self._masks: dict[tuple[tuple[str, ...], bool], np.ndarray] = {}

    # ---------------------------------------------------------------------------------- news
    def add_news(self, events: Sequence[Event]) -> None:
        """Narrate the game's new events (those the seat may not see are skipped), once each."""
        if self.narrate and events:
            self._news += event_lines(events, self.seat, self.rules)

    def news_shown(self) -> None:
        self._news = []

    # ------------------------------------------------------------------------------- pieces
    def narration(self, view: Mapping[str, Any]) -> str:
        """:func:`agents.narrator.observation` of ``view`` and the unshown news, escaped (not cut)."""
        if self._prefix is None:
            self._prefix = escape_text(stable_prefix(view, self.rules))
        news = "\n".join(self._news) if self._news else "(nothing new)"
        changing = state_and_news(describe_view(view, self.rules, self._memo), news)
        return self._prefix + "\n\n" + escape_text(changing)

    def mask(
        self, legal: list[str], queries_open: bool, tools: tuple[str, ...], queries: frozenset[str]
    ) -> np.ndarray:
        """1 for each tool usable now (a fresh array: callers keep it)."""
        key = (tuple(legal), queries_open)
        mask = self._masks.get(key)
        if mask is None:
            usable = set(legal)
            mask = self._masks[key] = np.array(
                [1 if (t in usable or (t in queries and queries_open)) else 0 for t in tools], dtype=np.int8
            )
        return mask.copy()
