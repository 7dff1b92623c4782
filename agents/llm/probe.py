"""Which tool mode a model's endpoint handles, checked once per (model class, base URL, model name) per
process.

The checks, in order, each a small call whose last user message contains ``TradeCraft connection check``
and offers one tool named ``confirm`` with arguments ``{"ready": true}``:

1. native function calling with ``tool_choice="auto"``: the answer's ``tool_calls`` hold that call;
2. the same with ``tool_choice="required"`` (servers that ignore tools unless told to use one);
3. ``json_schema``: ``response_format`` with the envelope schema of ``confirm``; the content is exactly
   the envelope ``{"tool": "confirm", "arguments": {"ready": true}}`` as JSON;
4. otherwise ``prompted``, the mode that always works (nothing to check).

The first that works is the result. A result is cached unless no check got through to the model at all
(every one failed in transport or with a server error: the endpoint may come back, so the next agent asks
again). The cache is thread-safe: one check per key at a time, agents of the same key wait for it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable

from agents.llm.modes import ENVELOPE_NAME, answer_text, envelope_option

PROBE_MARKER = "TradeCraft connection check"
"""Every probe request's last user message contains this (the test server's brain recognises it)."""

CONFIRM_TOOL = "confirm"
CONFIRM_ARGS = {"ready": True}
PROBE_MAX_TOKENS = 200
"""Enough for the call (about 20 tokens) and a short think block; a runaway probe is cut here."""
MAX_PROBE_TEXT = 2_000

CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ready": {"type": "boolean", "description": "always true"}},
    "required": ["ready"],
    "additionalProperties": False,
}
CONFIRM_DECLARATION: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": CONFIRM_TOOL,
        "description": "Confirm that you are ready to play.",
        "parameters": CONFIRM_SCHEMA,
    },
}
ENVELOPE: dict[str, Any] = envelope_option(CONFIRM_TOOL, CONFIRM_SCHEMA)

_SYSTEM = "You are about to play a trading game through tool calls. First, a short connection check."
_ASK_NATIVE = (
    f'{PROBE_MARKER}: call the tool {CONFIRM_TOOL} with the arguments {{"ready": true}}. Nothing else.'
)
_ASK_JSON = (
    f"{PROBE_MARKER}: answer with exactly this JSON object and nothing else: "
    f'{{"tool": "{CONFIRM_TOOL}", "arguments": {{"ready": true}}}}'
)


@dataclass(frozen=True)
class ProbeResult:
    """The mode chosen (``native`` | ``json_schema`` | ``prompted``), the ``tool_choice`` that worked
    (native only), the checks made (``tries``: mode, tool_choice, outcome, detail) and whether it came from
    the cache (then ``tries`` are the first agent's)."""

    mode: str
    tool_choice: str | None
    tries: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    cached: bool = False
    cacheable: bool = True


Send = Callable[[Runnable[Any, Any], Sequence[BaseMessage], str], tuple[AIMessage | None, dict[str, Any]]]
"""How the agent sends one probe request: ``send(runnable, messages, label)`` -> (the answer or None when
the provider failed for good, what to note of the failure: ``{"kind": ..., "status": ...}`` or ``{}``)."""

_cache: dict[tuple[str, str, str], ProbeResult] = {}
_key_locks: dict[tuple[str, str, str], threading.Lock] = {}
_guard = threading.Lock()


def endpoint_url(model: BaseChatModel) -> str:
    """The base URL ``model`` sends to: its client's own (which also reads ``OPENAI_BASE_URL``), else the
    URL the model was given; "" when it has none."""
    client = getattr(model, "root_client", None)
    base = getattr(client, "base_url", None) if client is not None else None
    if not base:
        base = (
            getattr(model, "openai_api_base", None)
            or getattr(model, "azure_endpoint", None)
            or getattr(model, "base_url", None)
        )
    return str(base or "")


def probe_key(model: BaseChatModel) -> tuple[str, str, str]:
    """(model class, base URL, model name): what a probe result holds for."""
    cls = type(model)
    base = endpoint_url(model)
    name = (
        getattr(model, "deployment_name", None)
        or getattr(model, "model_name", None)
        or getattr(model, "model", None)
        or ""
    )
    return (f"{cls.__module__}.{cls.__qualname__}", str(base), str(name))


def cached_probe(model: BaseChatModel) -> ProbeResult | None:
    """The cached result for ``model``'s key, if any."""
    with _guard:
        return _cache.get(probe_key(model))


def clear_probe_cache() -> None:
    """Forget every probe result (tests; a process that restarted its servers)."""
    with _guard:
        _cache.clear()


def probe(model: BaseChatModel, send: Send) -> ProbeResult:
    """The best mode ``model`` handles (see the module docstring); cached per key for the process."""
    key = probe_key(model)
    with _guard:
        lock = _key_locks.setdefault(key, threading.Lock())
    with lock:  # agents of the same endpoint wait for one probe instead of each sending their own
        with _guard:
            known = _cache.get(key)
        if known is not None:
            return replace(known, cached=True)
        result = _check(model, send)
        if result.cacheable:
            with _guard:
                _cache[key] = result
        return result


def _check(model: BaseChatModel, send: Send) -> ProbeResult:
    tries: list[dict[str, Any]] = []
    reached = False  # some check got an answer or a client error: the endpoint spoke

    def attempt(mode: str, tool_choice: str | None, runnable: Runnable[Any, Any], ask: str) -> bool:
        nonlocal reached
        messages = [SystemMessage(_SYSTEM), HumanMessage(ask)]
        answer, failure = send(runnable, messages, mode if tool_choice is None else f"{mode}:{tool_choice}")
        entry: dict[str, Any] = {"mode": mode, "tool_choice": tool_choice}
        if answer is None:
            status = failure.get("status")
            reached = reached or (isinstance(status, int) and 400 <= status < 500)
            entry.update(outcome="provider_failed", failure=failure)
            tries.append(entry)
            return False
        reached = True
        works, detail = (_native_ok if mode == "native" else _json_ok)(answer)
        entry.update(outcome="ok" if works else "no", detail=detail)
        tries.append(entry)
        return works

    for choice in ("auto", "required"):
        try:
            runnable = model.bind_tools([CONFIRM_DECLARATION], tool_choice=choice)
        except (NotImplementedError, ValueError, TypeError) as err:  # a model class without tool calling
            tries.append(
                {"mode": "native", "tool_choice": choice, "outcome": "unsupported", "detail": str(err)}
            )
            reached = True
            break
        if attempt("native", choice, runnable, _ASK_NATIVE):
            return ProbeResult("native", choice, tuple(tries))
    schema = {"type": "json_schema", "json_schema": {"name": ENVELOPE_NAME, "schema": ENVELOPE}}
    if attempt("json_schema", None, model.bind(response_format=schema), _ASK_JSON):
        return ProbeResult("json_schema", None, tuple(tries))
    return ProbeResult("prompted", None, tuple(tries), cacheable=reached)


def _native_ok(answer: AIMessage) -> tuple[bool, str]:
    calls = [(c["name"], c["args"]) for c in answer.tool_calls]
    if (CONFIRM_TOOL, CONFIRM_ARGS) in calls:
        return True, "tool call"
    if calls:
        return False, "other tool calls: " + ", ".join(str(name)[:40] for name, _ in calls[:3])
    return False, "no tool call; text: " + answer_text(answer)[:200]


def _json_ok(answer: AIMessage) -> tuple[bool, str]:
    text = answer_text(answer).strip()
    if len(text) > MAX_PROBE_TEXT:
        return False, f"answer of {len(text)} characters"
    try:
        value = json.loads(text)
    except (
        ValueError,
        RecursionError,
    ):  # not JSON as a whole (prose, a fenced block): the server did not constrain it
        return False, "not JSON: " + text[:200]
    if value == {"tool": CONFIRM_TOOL, "arguments": CONFIRM_ARGS}:
        return True, "envelope"
    return False, "other JSON: " + text[:200]
