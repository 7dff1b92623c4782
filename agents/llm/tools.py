"""LangChain tools for one seat, generated from the game's own declarations.

One tool per end-of-phase action of :data:`server.game.actions.ACTION_MODELS` (``report_tom``,
``propose``, ``pass``, ``decide``, ``craft``, ``finish_crafting``) and per in-phase query of
:data:`server.game.queries.QUERY_MODELS` (``item_info``, ``possible_recipes_from_hands``,
``recipe_search``, ``crafting_tree``, ``craftable``, ``history``, ... every query declared there; only
``possible_crafts`` is renamed, to the paper's name). A tool's arguments are its model's
JSON schema without the ``type`` tag (the tool's name says it), its description the model's docstring:
there is no second copy of any schema here. ``resign`` gets no tool: leaving a study game for good is
the participant's decision, not a move an LLM should stumble into while negotiating (a program that
wants it sends ``{"type": "resign"}`` through its connection).

Strict mode (OpenAI strict tools, which refuse free-key objects) renders the arguments with
:func:`server.game.schemas.strict_args_schema` (lists of ``{item, count}`` pairs) and parses calls back
with :func:`~server.game.schemas.from_strict` into the very same action or query.

Every tool calls a :class:`~agents.connection.SeatConnection` (``act`` / ``query``), so it plays the same
in-process and over the network, and the connection's side parses it (once: the engine's parser,
in-process or at the server); it returns the connection's typed answer as JSON text
(``{"ok": true, ...}`` or ``{"ok": false, "error": {"code", "message", "details"}}``), never raises, and
so works inside any tool-calling loop, LangChain's ``create_agent`` included.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel

from agents.connection import SeatConnection
from agents.llm.tags import THINK_TAG, reasoning_spans
from server.game.actions import ACTION_MODELS
from server.game.queries import QUERY_MODELS
from server.game.schemas import from_strict, strict_args_schema, to_strict

ACTION_TOOLS: dict[str, str] = {
    "report_tom": "report_tom",
    "propose": "propose",
    "pass": "pass",
    "decide": "decide",
    "craft": "craft",
    "finish_crafting": "finish_crafting",
}
"""Tool name -> action type (every player action but ``resign``; see the module docstring)."""

PAPER_TOOL_NAMES: dict[str, str] = {"possible_crafts": "possible_recipes_from_hands"}
"""Query types whose tool carries the paper's name instead (``item_info`` already matches)."""

QUERY_TOOLS: dict[str, str] = {PAPER_TOOL_NAMES.get(t, t): t for t in QUERY_MODELS}
"""Tool name -> query type: every declared in-phase query, in QUERY_MODELS order."""

TOOL_OF_TYPE: dict[str, str] = {t: name for name, t in (ACTION_TOOLS | QUERY_TOOLS).items()}
"""Action or query type -> its tool's name."""

assert set(ACTION_TOOLS.values()) == set(ACTION_MODELS) - {"timeout", "resign"}

_MESSAGE_FIELDS = ("message",)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, whether it acts or queries, the action/query type and model it renders."""

    name: str
    kind: Literal["action", "query"]
    type: str
    model: type[BaseModel]

    def description(self, compact: bool = False) -> str:
        """The model's docstring as plain text (reST literals and roles unwrapped); ``compact``: its
        first sentence only."""
        text = inspect.cleandoc(self.model.__doc__ or self.name)
        text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
        text = text.replace("``", "'")
        if compact:
            text = _FIRST_SENTENCE.match(" ".join(text.split())).group(0)  # type: ignore[union-attr]
        return text

    def args_schema(self, strict: bool = False, compact: bool = False) -> dict[str, Any]:
        """The JSON schema of the tool's arguments: the model's own (or its strict rendering) minus
        the ``type`` tag. ``compact``: without prose (no property descriptions or titles; the tool's
        description is its first sentence), for small context windows."""
        schema = strict_args_schema(self.model) if strict else self.model.model_json_schema()
        schema = json.loads(json.dumps(schema))  # a private copy: the models' schemas are cached
        schema["properties"].pop("type", None)
        if "required" in schema:
            schema["required"] = [name for name in schema["required"] if name != "type"]
        if compact:
            _drop_prose(schema)
        schema["title"] = self.name
        schema["description"] = self.description(compact)
        return schema

    def request(self, args: Mapping[str, Any] | Any, strict: bool = False) -> dict[str, Any] | Any:
        """The action/query dict a call with ``args`` stands for (unparsed: the engine's parser judges).

        Reasoning blocks (``<think>...</think>``) a model leaked into a message are cut out here, so they
        reach the trace and never the game.
        """
        if not isinstance(args, Mapping):
            return args
        request: dict[str, Any] = {**args, "type": self.type}
        if strict:
            request = from_strict(request)
        for name in _MESSAGE_FIELDS:
            if isinstance(request.get(name), str):
                request[name] = strip_reasoning(request[name])
        return request


_FIRST_SENTENCE = re.compile(r".*?[.!?](?=\s|$)|.*", re.DOTALL)
_PROSE_KEYS = ("title", "description")
_DATA_KEYS = frozenset({"default", "const", "enum", "examples"})  # values, not schemas: left as they are


def _drop_prose(schema: Any) -> None:
    """Remove titles and descriptions from ``schema`` and every subschema, in place. The names in a
    ``properties`` or ``$defs`` mapping are never touched (a property may be called ``title``)."""
    if isinstance(schema, list):
        for sub in schema:
            _drop_prose(sub)
        return
    if not isinstance(schema, dict):
        return
    for key in _PROSE_KEYS:
        schema.pop(key, None)
    for key, value in schema.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            for sub in value.values():
                _drop_prose(sub)
        elif key not in _DATA_KEYS:
            _drop_prose(value)


def split_reasoning(text: str) -> tuple[list[str], str]:
    """(the reasoning pieces of ``text``, what is left outside them, stripped): the blocks of
    :func:`agents.llm.tags.reasoning_spans` without their tags. Text with no reasoning tag comes back
    as it is."""
    spans = reasoning_spans(text)
    if not spans:
        return [], text
    pieces: list[str] = []
    outside: list[str] = []
    last = 0
    for start, end in spans:
        outside.append(text[last:start])
        inner = THINK_TAG.sub("", text[start:end]).strip()
        if inner:
            pieces.append(inner)
        last = end
    outside.append(text[last:])
    return pieces, "".join(outside).strip()


def strip_reasoning(text: str) -> str:
    """``text`` without its reasoning (:func:`split_reasoning`): ``<think>...</think>`` and
    ``<thinking>`` blocks, an unclosed one to the end, everything before a lone ``</think>``."""
    return split_reasoning(text)[1]


def tool_specs(*, actions: bool = True, queries: bool = True) -> list[ToolSpec]:
    """The tool declarations in a stable order: actions first (ACTION_MODELS order), then queries."""
    specs: list[ToolSpec] = []
    if actions:
        specs += [ToolSpec(n, "action", t, ACTION_MODELS[t]) for n, t in ACTION_TOOLS.items()]
    if queries:
        specs += [ToolSpec(n, "query", t, QUERY_MODELS[t]) for n, t in QUERY_TOOLS.items()]
    return specs


def tool_call_args(obj: BaseModel | Mapping[str, Any], strict: bool = False) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of the call that stands for an action or query: the inverse of
    :meth:`ToolSpec.request` (used by scripted players and tests)."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else dict(obj)
    if strict:
        data = to_strict(data)
    kind = data.pop("type")
    return TOOL_OF_TYPE[kind], data


def error_answer(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The protocol's typed error answer."""
    return {"ok": False, "error": {"code": code, "message": message, "details": dict(details or {})}}


_ANSWER_KEYS = ("ok", "error", "answer", "events", "submitted")


def compact(answer: Mapping[str, Any]) -> dict[str, Any]:
    """What a model needs of a connection's answer: ok / error, a query's answer, the events an action
    produced; not the envelope (game id, seats, the whole view) a server acknowledges with."""
    return {key: answer[key] for key in _ANSWER_KEYS if key in answer}


def _unparsable(answer: Mapping[str, Any]) -> bool:
    """Whether ``answer`` refuses a query the engine's parser could not read (its error lists the
    ``problems``, as :func:`server.game.actions.parse_tagged`'s errors do)."""
    error = answer.get("error") or {}
    return error.get("code") == "invalid_query" and "problems" in (error.get("details") or {})


class SeatTools:
    """The tools of one seat over a connection, plus the dispatcher an agent loop calls directly.

    ``max_queries``: queries answered per decision (None: unbounded); further ones get the typed error
    ``query_limit``. ``reset_queries()`` starts a new decision. ``on_call(name, args, answer)`` observes
    every call (an agent's trace).
    """

    def __init__(
        self,
        connection: SeatConnection,
        *,
        strict: bool = False,
        actions: bool = True,
        queries: bool = True,
        max_queries: int | None = None,
        on_call: Callable[[str, Any, dict[str, Any]], None] | None = None,
    ) -> None:
        self.connection = connection
        self.strict = strict
        self.max_queries = max_queries
        self.on_call = on_call
        self.specs = {spec.name: spec for spec in tool_specs(actions=actions, queries=queries)}
        self.queries_asked = 0

    def reset_queries(self) -> None:
        self.queries_asked = 0

    def call(self, name: str, args: Any) -> dict[str, Any]:
        """Run tool ``name`` with ``args`` (a dict) on the connection; the typed answer."""
        answer = self._call(name, args)
        if self.on_call is not None:
            self.on_call(name, args, answer)
        return answer

    def _call(self, name: str, args: Any) -> dict[str, Any]:
        spec = self.specs.get(name)
        if spec is None:
            return error_answer(
                "unknown_tool",
                f"There is no tool {name!r}; call one of: {', '.join(self.specs)}.",
                {"tool": name},
            )
        if not isinstance(args, Mapping):
            return error_answer(
                "invalid_action" if spec.kind == "action" else "invalid_query",
                f"The arguments of {name} must be a JSON object; got {type(args).__name__}.",
                {"tool": name},
            )
        try:
            request = spec.request(args, self.strict)
        except Exception as err:  # arguments no rendering can read: the model hears why, nothing is sent
            return error_answer(
                "invalid_action" if spec.kind == "action" else "invalid_query",
                f"The arguments of {name} cannot be read ({type(err).__name__}); follow the tool's schema.",
                {"tool": name},
            )
        if spec.kind == "action":
            return compact(self.connection.act(request))
        if self.max_queries is not None and self.queries_asked >= self.max_queries:
            return error_answer(
                "query_limit",
                f"You have asked {self.queries_asked} queries for this decision, the most allowed; "
                "decide now with one of the action tools.",
                {"limit": self.max_queries},
            )
        answer = compact(self.connection.query(request))
        if not _unparsable(answer):  # a query that could not be parsed was never asked: it costs nothing
            self.queries_asked += 1
        return answer

    def tools(self, names: Iterable[str] | None = None, compact: bool = False) -> list[BaseTool]:
        """LangChain tools (all, or those named) whose results are the typed answers as JSON text;
        ``compact``: declared without prose (see :meth:`ToolSpec.args_schema`)."""
        chosen = list(self.specs) if names is None else list(names)
        return [self._tool(self.specs[name], compact) for name in chosen]

    def _tool(self, spec: ToolSpec, compact: bool = False) -> BaseTool:
        def run(**kwargs: Any) -> str:
            return json.dumps(self.call(spec.name, kwargs), ensure_ascii=False)

        return StructuredTool.from_function(
            func=run,
            name=spec.name,
            description=spec.description(compact),
            args_schema=spec.args_schema(self.strict, compact),
        )


def make_tools(
    connection: SeatConnection,
    *,
    strict: bool = False,
    actions: bool = True,
    queries: bool = True,
    max_queries: int | None = None,
) -> list[BaseTool]:
    """The seat's LangChain tools over ``connection`` (see :class:`SeatTools`); with ``strict`` the
    arguments use the strict-mode rendering (bind them with ``model.bind_tools(tools, strict=True)``)."""
    return SeatTools(
        connection, strict=strict, actions=actions, queries=queries, max_queries=max_queries
    ).tools()


class DeclarationOnly:
    """A seat connection for tools that are only declared (schemas for a prompt or a ``bind_tools``), never
    called: calling one is a programming error."""

    seat = -1
    finished = False

    def view(self) -> dict[str, Any]:
        return {}

    def events(self) -> list[dict[str, Any]]:
        return []

    def act(self, action: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("declaration-only tools cannot act")

    def query(self, query: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("declaration-only tools cannot query")

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        return True
