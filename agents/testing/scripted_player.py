"""A scripted "model" for the OpenAI-compatible test server: it reads the game text an LLM agent sends and
answers with legal tool calls, so tests and benchmarks can run whole games through the real ``ChatOpenAI``
code path without a provider.

It reads only what a model would read: the narrator's text (the latest game message, the system prompt's
ToM duty) and the answers of its own earlier tool calls in the same move. Its play is simple and
deterministic: value reports from a hash of the items, one-for-one swap offers (a gift or an ask when a
side holds nothing else), accepting
every other proposal, in the craft phase one query (``possible_recipes_from_hands``), then one craft of
the first recipe it lists, then ``finish_crafting``. Tool arguments follow the rendering the request's
tools declare (strict pairs when a tool is ``strict``).

It reads every tool mode: in native mode the answers of its earlier calls come back as ``tool`` messages; in
the JSON modes (no ``tools`` in the request) as user messages ``Result of <name>: <json>``, and the game's
text is the last user message that is not such a result (retry nudges aside: the last one that shows the
move). The agent's connection check (:data:`PROBE_MARKER`) is answered with
``confirm {"ready": true}``.

:class:`Reply`, the answer a policy of the test server gives, is declared here too: the server's command
line serves this player, so the server imports this module and not the other way round.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from agents.llm.probe import CONFIRM_ARGS as PROBE_ARGS
from agents.llm.probe import CONFIRM_TOOL as PROBE_TOOL
from agents.llm.probe import PROBE_MARKER
from agents.llm.tools import tool_call_args

__all__ = ["PROBE_ARGS", "PROBE_MARKER", "PROBE_TOOL", "Reply", "ScriptedPlayer"]


@dataclass
class Reply:
    """One scripted answer. ``tool_calls`` entries are ``(name, arguments)``; a str argument is sent verbatim
    (so malformed JSON can be served), anything else is JSON-encoded. ``action``: the raw action (or query)
    the first call stands for, for behaviours that write it as text (default: the tool's type plus its
    arguments)."""

    content: str | None = None
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200
    retry_after: float | None = None  # seconds, sent as the Retry-After header (for 429)
    delay: float = 0.0  # seconds to wait before answering (longer than the client timeout = a timeout)
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens); None = no usage block
    action: dict[str, Any] | None = None


def is_probe(request: dict[str, Any]) -> bool:
    """Whether ``request`` is the agent's connection check (its last user message carries the marker)."""
    messages = request.get("messages") or []
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    return last_user is not None and PROBE_MARKER in message_text(last_user)


def message_text(message: dict[str, Any]) -> str:
    """A chat message's text content (list contents joined)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


_MOVE = re.compile(r"^Your move: (.+)\.$", re.MULTILINE)
_TOM_ITEMS = re.compile(r"^Report your values now \(report_tom\) for these items: (.+)\.$", re.MULTILINE)
_TOM_SEATS = re.compile(r"^In v1/v2, key each other player by seat: (.+)\.$", re.MULTILINE)
_HAND_LINE = re.compile(r"^- Player (\d+)( \(you\))?: (.+)$", re.MULTILINE)
_BUNDLE_PART = re.compile(r"^(\d+) (.+?)(?: \[([^\]]+)\])?$")
_RESULT = re.compile(r"^Result of ([\w.-]+): ", re.DOTALL)
MAX_ANSWER_CHARS = 200_000  # a tool answer longer than this is not read


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object (None when it is not one or too long to read)."""
    if len(text) > MAX_ANSWER_CHARS:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _game_and_answers(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The latest game message and the answers to the tool calls made since (``tool`` messages, or
    ``Result of`` user messages in the JSON modes)."""
    users = [
        i for i, m in enumerate(messages) if m.get("role") == "user" and not _RESULT.match(message_text(m))
    ]
    moves = [i for i in users if _MOVE.search(message_text(messages[i]))]
    game_at = moves[-1] if moves else users[-1] if users else -1
    answers: list[dict[str, Any]] = []
    for message in messages[game_at + 1 :]:
        text = message_text(message)
        if message.get("role") == "tool":
            answer = _json_object(text)
        elif message.get("role") == "user" and (result := _RESULT.match(text)):
            answer = _json_object(text[result.end() :])
        else:
            continue
        if answer is not None:
            answers.append(answer)
    return (message_text(messages[game_at]) if game_at >= 0 else ""), answers


def _digest(*parts: object) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _hands(text: str) -> dict[int, dict[str, int]]:
    """The public hands of the game message: seat -> item id -> count."""
    section = text.split("Hands (public", 1)[-1]
    hands: dict[int, dict[str, int]] = {}
    for seat, _you, bundle in _HAND_LINE.findall(section):
        if int(seat) in hands:
            break  # later lines (e.g. revealed hands in the events) describe other moments
        hand: dict[str, int] = {}
        if bundle.strip() != "nothing":
            for part in bundle.split(", "):
                match = _BUNDLE_PART.match(part.strip())
                if match:
                    count, name, item_id = match.groups()
                    hand[item_id or name.lower().replace(" ", "_")] = int(count)
        hands[int(seat)] = hand
    return hands


class ScriptedPlayer:
    """``policy(request) -> Reply`` for :class:`~agents.testing.openai_server.OpenAITestServer`.

    ``accept_every``: accept one proposal in this many (1 = all). ``propose``: offer swaps instead of
    passing. ``query_crafts``: ask ``possible_recipes_from_hands`` before crafting. ``explain``: write a
    line of reasoning before each move's tool call, as a model's text (``My plan N: <type> because it
    helps.``), which the agent traces. ``calls`` counts the tool calls made, ``moves`` the moves decided
    (for tool calls per move).
    """

    def __init__(
        self, *, accept_every: int = 2, propose: bool = True, query_crafts: bool = True, explain: bool = False
    ) -> None:
        self.accept_every = accept_every
        self.propose = propose
        self.query_crafts = query_crafts
        self.explain = explain
        self.calls = 0
        self.moves = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        if is_probe(request):
            return Reply(tool_calls=[(PROBE_TOOL, dict(PROBE_ARGS))])
        action = self.decide_action(request)
        name, args = tool_call_args(action, self._strict(request))
        self.calls += 1
        if name not in ("item_info", "possible_recipes_from_hands", "recipe_search", "crafting_tree"):
            self.moves += 1
            if self.explain:
                reason = f"My plan {self.moves}: {action.get('type', 'query')} because it helps."
                return Reply(content=reason, tool_calls=[(name, args)], action=action)
        return Reply(tool_calls=[(name, args)], action=action)

    @staticmethod
    def _strict(request: dict[str, Any]) -> bool:
        return any((t.get("function") or {}).get("strict") for t in request.get("tools") or [])

    def decide(self, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(tool name, arguments) of the call the player makes in answer to ``request``."""
        if is_probe(request):
            return PROBE_TOOL, dict(PROBE_ARGS)
        return tool_call_args(self.decide_action(request), self._strict(request))

    def decide_action(self, request: dict[str, Any]) -> dict[str, Any]:
        """The raw action (or query) the player chooses, as the narrator's action JSON."""
        messages = request.get("messages") or []
        game, answers = _game_and_answers(messages)
        system = message_text(messages[0]) if messages and messages[0].get("role") == "system" else ""
        move = _MOVE.search(game)
        legal = move.group(1).split(" or ") if move else []

        items_match = _TOM_ITEMS.search(game)
        if "report_tom" in legal and items_match:
            items = [i.strip() for i in items_match.group(1).split(",")]
            report: dict[str, Any] = {"type": "report_tom", "v0": {i: _digest("v0", i) % 11 for i in items}}
            seats_match = _TOM_SEATS.search(game)
            seats = [s.strip().strip('"') for s in seats_match.group(1).split(",")] if seats_match else []
            for order in (1, 2):
                if f"- v{order}:" in system:
                    report[f"v{order}"] = {s: {i: _digest(order, s, i) % 11 for i in items} for s in seats}
            return report
        if "decide" in legal:
            accept = _digest(game) % self.accept_every == 0
            return {"type": "decide", "accept": accept, "message": "ok" if accept else "no thanks"}
        if "finish_crafting" in legal:
            crafted = "Your crafts this phase:" in game
            listed = [a for a in answers if (a.get("answer") or {}).get("type") == "possible_crafts"]
            if not crafted and "craft" in legal:
                if listed:
                    crafts = listed[-1]["answer"]["crafts"]
                    if crafts:
                        first = crafts[0]
                        return {"type": "craft", "recipe": first["recipe"], "runs": first["max_runs"]}
                elif self.query_crafts:
                    return {"type": "possible_crafts", "limit": 5}
            return {"type": "finish_crafting"}
        if "propose" in legal and self.propose:
            hands = _hands(game)
            me = next((int(s) for s, you, _ in _HAND_LINE.findall(game) if you), None)
            others = [s for s in sorted(hands) if s != me]
            if me is not None and others:
                to = others[0]
                pick = _digest(game)
                mine = sorted(hands.get(me) or {})
                offer = mine[pick % len(mine)] if mine else None
                theirs = [i for i in sorted(hands.get(to) or {}) if i != offer]
                if offer or theirs:
                    return {
                        "type": "propose",
                        "to": to,
                        "offer": {offer: 1} if offer else {},
                        "request": {theirs[pick % len(theirs)]: 1} if theirs else {},
                        "message": "A one-for-one swap?",
                    }
        if "pass" in legal:
            return {"type": "pass"}
        return {"type": "finish_crafting"}  # nothing readable: a refused call the agent answers
