"""A seat's observations, built step after step from what changed: the same content at a fraction of the cost.

An observation (:mod:`agents.envs.core`) is the narrator's text, the view as JSON, a tool mask, the turn
and whether the seat is awaited; the info adds the view itself and the answer to the seat's last call.
Built from scratch at every step, the text and the JSON cost about as much as the moves they describe.
Most of it does not change from one step to the next, so :class:`SeatObserver` keeps, per seat and game:

- the stable prefix of the text (rules and the seat's fixed facts), told once;
- the news (``## New since your last observation``): each event is narrated once, when it arrives, and
  the lines are joined when the seat looks;
- the state section (``## Now``): told per state, with the unchanged turns of the trade history and the
  bundles remembered (:class:`agents.narrator.NarrationMemo`, :func:`agents.narrator.bundle`);
- the view's JSON (:class:`ViewJson`): the large values (settings, target, hands, history) are encoded
  again only when they changed;
- the tool mask per set of legal action types.

Every piece is what the narrator and ``json.dumps`` give for the whole (``tests/test_env_observations.py``
checks the texts against :func:`agents.narrator.observation` and the JSON against ``json.dumps`` over
whole games), and nothing handed out is shared with an earlier step's observation or info.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

import numpy as np

from agents.narrator import (
    SECTION_EVENTS,
    NarrationMemo,
    describe_view,
    event_lines,
    stable_prefix,
)
from craft_rules.model import RuleSet

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
_CUT_MARKER = "\n[... cut: longer than the observation allows]"


def escape_text(text: str) -> str:
    """``text`` with every character outside :data:`TEXT_CHARSET` written as an escape. Character by
    character, so escaping the parts of a text and joining them equals escaping the whole."""
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


REMEMBERED_VIEW_KEYS = frozenset(
    {"target", "crafts_this_phase", "pending_proposal", "proposals", "trade_history", "tom", "rules"}
)
"""The player-view keys whose JSON :class:`ViewJson` remembers. Their values are built by the engine in
a fixed key order from records it never rebuilds (settings, the seat's target, stored proposals and
turn records, the seat's crafts), with the types the view schema fixes, so a value equal (``==``) to
the last one has the same JSON. Not ``hands``: a hand's items can come back in another order after
crafting, which ``==`` does not see."""


class ViewJson:
    """``json.dumps(view)`` of one seat's successive player views (default separators, ASCII), the same
    text, built from pieces: the keys of :data:`REMEMBERED_VIEW_KEYS` are encoded again only when their
    value changed (the memo compares against a private copy), each run of other keys in one call of
    the C encoder ``json.dumps`` itself uses."""

    def __init__(self) -> None:
        self._plans: dict[tuple[Any, ...], list[tuple[str, tuple[str, ...]]]] = {}
        self._memo: dict[str, tuple[Any, str]] = {}

    def dumps(self, view: Mapping[str, Any]) -> str:
        keys = tuple(view)
        plan = self._plans.get(keys)
        if plan is None:
            plan = self._plans[keys] = _plan(keys)
        if _ENCODE is None or not plan:
            return json.dumps(view)
        memo = self._memo
        pieces = []
        try:
            for head, run in plan:
                if head:  # a remembered key
                    value = view[run[0]]
                    known = memo.get(run[0])
                    if known is not None and known[0] == value:
                        pieces.append(head + known[1])
                    else:
                        text = "".join(_ENCODE({}, value))
                        memo[run[0]] = (copy_data(value), text)
                        pieces.append(head + text)
                else:
                    pieces.append("".join(_ENCODE({}, {k: view[k] for k in run}))[1:-1])
        except (TypeError, ValueError, RecursionError):
            return json.dumps(view)  # raises as json.dumps does
        return "{" + ", ".join(pieces) + "}"


def _plan(keys: tuple[Any, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """How to write a view with these keys, in order: ``(head, (key,))`` for a remembered key (head:
    its JSON name and separator), ``("", run)`` for a run of other keys; empty when a key is not a
    string (``json.dumps`` converts such keys its own way)."""
    if not all(type(k) is str for k in keys):
        return []
    plan: list[tuple[str, tuple[str, ...]]] = []
    run: list[str] = []
    for key in keys:
        if key in REMEMBERED_VIEW_KEYS:
            if run:
                plan.append(("", tuple(run)))
                run = []
            plan.append((encode_basestring_ascii(key) + ": ", (key,)))
        else:
            run.append(key)
    if run:
        plan.append(("", tuple(run)))
    return plan


def _c_encoder() -> Any:
    """The C encoder exactly as ``json.dumps`` with default arguments builds it, as a function of a
    fresh circularity-marker dict and a value (None without the C accelerator)."""
    if c_make_encoder is None:
        return None
    default = json.JSONEncoder().default

    def encode(markers: dict[int, Any], value: Any) -> Any:
        return c_make_encoder(  # type: ignore[misc]
            markers, default, encode_basestring_ascii, None, ": ", ", ", False, False, True
        )(value, 0)

    return encode


_ENCODE = _c_encoder()


class SeatObserver:
    """One seat's observations through one game (see the module docstring).

    The caller (:class:`agents.envs.core.Match`) hands it the seat's news as they arrive
    (:meth:`add_news`), says when the seat has seen them (:meth:`news_shown`), and asks for the pieces
    of the current state's observation: :meth:`text` and :meth:`view_json` for a view.
    """

    def __init__(self, rules: RuleSet, seat: int, narrate: bool = True) -> None:
        self.rules = rules
        self.seat = seat
        self.narrate = narrate
        self._prefix: str | None = None
        self._news: list[str] = []  # the unshown news, narrated and escaped, one line per event
        self._memo = NarrationMemo()
        self._json = ViewJson()
        self._masks: dict[tuple[tuple[str, ...], bool], np.ndarray] = {}

    # ---------------------------------------------------------------------------------- news
    def add_news(self, events: list[dict[str, Any]]) -> None:
        if self.narrate and events:
            self._news += [escape_text(line) for line in event_lines(events, self.seat, self.rules)]

    def news_shown(self) -> None:
        self._news = []

    # ------------------------------------------------------------------------------- pieces
    def narration(self, view: Mapping[str, Any]) -> str:
        """:func:`agents.narrator.observation` of ``view`` and the unshown news, escaped (not cut)."""
        if self._prefix is None:
            self._prefix = escape_text(stable_prefix(view, self.rules))
        news = "\n".join(self._news) if self._news else "(nothing new)"
        state = escape_text(describe_view(view, self.rules, self._memo))
        return "\n\n".join([self._prefix, state, SECTION_EVENTS + "\n" + news])

    def view_json(self, view: Mapping[str, Any]) -> str:
        return cut_text(self._json.dumps(view))  # ASCII: nothing to escape

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
