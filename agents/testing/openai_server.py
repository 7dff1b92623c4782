"""A small OpenAI-compatible chat server for tests: scripted or policy-driven answers over real HTTP.

Serves ``POST /v1/chat/completions`` so the real ``ChatOpenAI`` code path can be exercised without a provider
(and any other path ending in ``/chat/completions``: Azure-style clients, which ``init_chat_model`` builds
for other providers, put the deployment in the path).
Each request takes the next scripted :class:`Reply` (served verbatim) or asks ``policy(request)`` for one
when the script is empty; a fault rate injects 500s deterministically from a seed. Every request body is
recorded for assertions.

A policy decides *what* to call; the server's ``behaviour`` (:data:`BEHAVIOURS`) decides *how the reply is
written*, imitating what real models and servers do with a call: proper ``tool_calls``, the call as bare
JSON or in a fenced block, doubled braces, wrong tags, the raw action, tools ignored unless ``tool_choice``
is sent, runaway repetition, a slow cold first call, imitated tool results, grammar-constrained JSON, or
prose. Policy answers honour ``max_tokens`` / ``max_completion_tokens`` and ``stop`` and report ``usage``
(o200k tokens). A client that disconnects while its answer is pending (delay, cold start, runaway) is
noticed at once and the request abandoned (``cancelled``).

Connection-check (probe) requests of the agent (:data:`~agents.testing.scripted_player.PROBE_MARKER`) are
answered by the server itself with the call ``confirm {"ready": true}`` in the behaviour's rendering: they
never consume the script or reach the policy (``answer_probes=False`` turns that off).

Start one from the command line with ``python -m agents.testing.openai_server --behaviour NAME``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import jsonschema

from agents.llm.tools import ACTION_TOOLS, QUERY_TOOLS
from agents.llm.tracing import MESSAGE_OVERHEAD_TOKENS, count_tokens
from agents.testing.scripted_player import (
    PROBE_ARGS,
    PROBE_TOOL,
    Reply,
    ScriptedPlayer,
    is_probe,
    message_text,
)
from server.game.schemas import to_strict

MAX_BODY_BYTES = 4_000_000  # a request larger than this is refused before it is read

BEHAVIOURS: dict[str, str] = {
    "native": "proper tool_calls (the default); without tools: the call as JSON text, schema-valid if asked",
    "bare_json": 'no tool_calls; the call as bare JSON {"name": N, "arguments": {...}}, sometimes after '
    "a sentence",
    "fenced_json": 'a sentence, then the call {"name": N, "arguments": {...}} in a ```json fenced block',
    "doubled_braces": "the call as JSON with every brace doubled ({{...}})",
    "wrong_tags": "the call in tag variants, rotated per request: <tool_call> unclosed, a closing tag alone, "
    "<function_call>...</function_call>, <|tool_call|>",
    "raw_action": 'the narrator\'s raw action JSON ({"type": "decide", "accept": true, ...}) as text',
    "needs_tool_choice": "ignores the tools unless tool_choice is required or names a function (as "
    "llama-cpp-python's server does) and answers like raw_action; with it: proper tool_calls; honours a "
    "response_format schema",
    "runaway": 'even or missing seed: repeats "- Coal" until max_tokens (cap 4096), ~1 ms a token, '
    "finish_reason length; odd seed: native",
    "cold_start": "the first request waits cold_seconds (model loading) and so does every request until "
    "then; answers as native",
    "imitates_tool_results": "one or two fake <tool_response> blocks, then the real call in <tool_call> "
    "tags; no tool_calls",
    "constrained": 'with a response_format JSON schema: {"tool": N, "arguments": {...}} valid against it '
    "(grammar-constrained decoding); without one: prose, no JSON",
    "unreadable": "prose, never a call",
}
"""Behaviour name -> what its replies look like (``--list`` prints this)."""

DEFAULT_COLD_SECONDS = 3.0
RUNAWAY_LINE = "- Coal\n"
RUNAWAY_TOKEN_CAP = 4096  # what a runaway reply generates when the request sets no max_tokens
RUNAWAY_SECONDS_PER_TOKEN = 0.001  # generation is not free: an unbounded runaway takes ~4 s
_POLL_SECONDS = 0.02  # how often a pending answer checks that its client is still connected

_TYPE_OF_TOOL: dict[str, str] = ACTION_TOOLS | QUERY_TOOLS

_SENTENCES = (
    "I have considered the situation.",
    "Here is my move.",
    "Let me make my choice now.",
    "This is what I will do.",
)
_PROSE = (
    "I would like to think about the trade a little longer before I commit to anything.",
    "The others seem to need what I hold, so I should be careful about what I give away.",
    "My plan is to keep the items that matter for my target and to trade the rest when the time is right.",
    "I am not sure yet which move is best; the hands look balanced to me.",
)
_FAKE_RESULTS = (
    {"ok": True, "submitted": "pass"},
    {"ok": True, "answer": {"type": "possible_crafts", "crafts": []}},
    {"ok": False, "error": {"code": "not_your_turn", "message": "It is not your move.", "details": {}}},
)


def _arguments_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


Policy = Callable[[dict[str, Any]], Reply]


class BadRequest(ValueError):
    """A request the server refuses with 400 (as a real server refuses an unusable schema)."""


@dataclass
class Completion:
    """What one answer says: ``content``, ``tool_calls`` as (name, arguments text), why it ended, how long
    it takes to generate (seconds) and the prompt and completion tokens it reports."""

    content: str | None
    tool_calls: list[tuple[str, str]]
    finish_reason: str
    generation_seconds: float = 0.0
    usage: tuple[int, int] | None = None
    seconds_per_token: float = 0.0  # what generating costs (runaway: a slow unbounded reply)
    saw_tools: bool = True  # False: the server dropped the tools from the prompt (not counted in usage)


def prompt_tokens(request: dict[str, Any], *, with_tools: bool = True) -> int:
    """o200k tokens of what the request asks the model to read: every message's text (and the calls an
    assistant message made) plus the per-message overhead, and the tool schemas when the model sees them."""
    total = 0
    for message in request.get("messages") or []:
        text = message_text(message)
        if message.get("tool_calls"):
            text += json.dumps(message["tool_calls"])
        total += count_tokens(text) + MESSAGE_OVERHEAD_TOKENS
    if with_tools and request.get("tools"):
        total += count_tokens(json.dumps(request["tools"]))
    return total


def token_limit(request: dict[str, Any]) -> int | None:
    """The request's completion token limit (``max_completion_tokens`` wins over ``max_tokens``)."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = request.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def cut_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` o200k tokens (binary search over characters)."""
    if count_tokens(text) <= limit:
        return text
    low, high = 0, len(text)  # count_tokens(text[:low]) <= limit < count_tokens(text[:high])
    while high - low > 1:
        middle = (low + high) // 2
        if count_tokens(text[:middle]) <= limit:
            low = middle
        else:
            high = middle
    return text[:low]


def cut_at_stop(text: str, stop: Any) -> str:
    """``text`` up to (not including) the earliest of the ``stop`` strings, as OpenAI's API cuts."""
    stops = [stop] if isinstance(stop, str) else [s for s in stop or [] if isinstance(s, str)]
    positions = [text.find(s) for s in stops if s and s in text]
    return text[: min(positions)] if positions else text


def response_schema(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of a ``response_format`` of type ``json_schema`` (None without one)."""
    response_format = request.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    schema = (response_format.get("json_schema") or {}).get("schema")
    return schema if isinstance(schema, dict) else None


def _wants_json_object(request: dict[str, Any]) -> bool:
    response_format = request.get("response_format")
    return isinstance(response_format, dict) and response_format.get("type") == "json_object"


def _forces_tools(request: dict[str, Any]) -> bool:
    """Whether ``tool_choice`` obliges a tool call (``required`` or a named function)."""
    choice = request.get("tool_choice")
    return choice == "required" or isinstance(choice, dict)


class _Schema:
    """A request's response schema: validation, and the minimal instance a grammar would force."""

    MAX_DEPTH = 32

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        try:
            validator_class = jsonschema.validators.validator_for(schema)
            validator_class.check_schema(schema)
            self.validator = validator_class(schema)
        except jsonschema.SchemaError as error:
            raise BadRequest(f"response_format schema is invalid: {error.message[:300]}") from error

    def admits(self, instance: Any) -> bool:
        try:
            return bool(self.validator.is_valid(instance))
        except Exception as error:  # unresolvable $ref and the like: the schema cannot be used
            raise BadRequest(f"response_format schema cannot be used: {str(error)[:300]}") from error

    def minimal(self) -> Any:
        """The first alternative of the schema that a minimal instance satisfies (grammar-constrained
        decoding of a model that wanted something else)."""
        alternatives = self.schema.get("anyOf") or self.schema.get("oneOf") or [self.schema]
        candidate: Any = None
        for alternative in alternatives:
            candidate = self._instance(alternative, 0)
            if self.admits(candidate):
                return candidate
        return candidate

    def _resolve(self, ref: str) -> dict[str, Any]:
        node: Any = self.schema
        for part in ref.removeprefix("#/").split("/") if ref.startswith("#/") else []:
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}

    def _instance(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > self.MAX_DEPTH:
            return None
        if "$ref" in schema:
            return self._instance(self._resolve(str(schema["$ref"])), depth + 1)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        for key in ("anyOf", "oneOf", "allOf"):
            if schema.get(key):
                return self._instance(schema[key][0], depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or (kind is None and "properties" in schema):
            properties = schema.get("properties") or {}
            return {
                name: self._instance(properties.get(name), depth + 1) for name in schema.get("required") or []
            }
        if kind == "array":
            return [
                self._instance(schema.get("items"), depth + 1) for _ in range(int(schema.get("minItems", 0)))
            ]
        if kind == "string":
            return "x" * int(schema.get("minLength", 0))
        if kind in ("integer", "number"):
            if "minimum" in schema:
                return schema["minimum"]
            if "exclusiveMinimum" in schema:
                return schema["exclusiveMinimum"] + 1
            return 0
        if kind == "boolean":
            return False
        return None


def _call_json(name: str, args: Any) -> str:
    """The call as ``{"name": N, "arguments": {...}}`` (a str argument goes in verbatim)."""
    return f'{{"name": {json.dumps(name)}, "arguments": {_arguments_text(args)}}}'


def _envelope_json(name: str, args: Any) -> str:
    """The call in the JSON modes' canonical form ``{"tool": N, "arguments": {...}}``."""
    return f'{{"tool": {json.dumps(name)}, "arguments": {_arguments_text(args)}}}'


def _raw_action_json(reply: Reply, name: str, args: Any) -> str:
    if reply.action is not None:
        return json.dumps(reply.action)
    if isinstance(args, dict):
        return json.dumps({"type": _TYPE_OF_TOOL.get(name, name), **args})
    return _arguments_text(args)


def _constrained_json(schema: _Schema, name: str, args: Any, reply: Reply) -> str:
    """The envelope if the schema admits it (as is, or with the action's strict rendering), else the first
    tool the schema admits with minimal arguments."""
    candidates: list[Any] = [{"tool": name, "arguments": args}]
    if reply.action is not None:
        with contextlib.suppress(Exception):  # not every raw action has a strict rendering
            strict = to_strict(reply.action)
            strict.pop("type", None)
            candidates.append({"tool": name, "arguments": strict})
    for candidate in candidates:
        if schema.admits(candidate):
            return json.dumps(candidate)
    return json.dumps(schema.minimal())


def render(behaviour: str, reply: Reply, request: dict[str, Any], index: int) -> Completion:
    """How ``behaviour`` writes the first call of a policy's ``reply`` in answer to ``request`` (the
    server's ``index``-th request), before ``max_tokens`` / ``stop``. A reply without calls keeps its
    content."""
    tools = bool(request.get("tools"))
    schema_body = response_schema(request)
    schema = _Schema(schema_body) if schema_body is not None else None
    if not reply.tool_calls:
        return Completion(reply.content, [], "stop")
    name, args = reply.tool_calls[0]
    sentence = _SENTENCES[index % len(_SENTENCES)]
    prose = _PROSE[index % len(_PROSE)]

    def native() -> Completion:
        if tools and request.get("tool_choice") != "none":
            return Completion(
                reply.content, [(n, _arguments_text(a)) for n, a in reply.tool_calls], "tool_calls"
            )
        if schema is not None:
            return Completion(_constrained_json(schema, name, args, reply), [], "stop")
        return Completion(_envelope_json(name, args), [], "stop")  # a capable model follows the prompt

    def text(content: str) -> Completion:
        return Completion(content, [], "stop")

    if behaviour in ("native", "cold_start"):
        return native()
    if behaviour == "bare_json":
        call = _call_json(name, args)
        return text(call if index % 2 == 0 else f"{sentence}\n{call}")
    if behaviour == "fenced_json":
        return text(f"{sentence}\n```json\n{_call_json(name, args)}\n```")
    if behaviour == "doubled_braces":
        return text(_call_json(name, args).replace("{", "{{").replace("}", "}}"))
    if behaviour == "wrong_tags":
        call = _call_json(name, args)
        variants = (
            f"<tool_call>\n{call}",
            f"{call}\n</tool_call>",
            f"<function_call>{call}</function_call>",
            f"<|tool_call|>{call}",
        )
        return text(variants[index % len(variants)])
    if behaviour == "raw_action":
        return text(_raw_action_json(reply, name, args))
    if behaviour == "needs_tool_choice":
        if tools and _forces_tools(request):
            return native()
        if schema is not None:  # llama-cpp-python does constrain to a response_format schema
            return text(_constrained_json(schema, name, args, reply))
        return Completion(_raw_action_json(reply, name, args), [], "stop", saw_tools=False)
    if behaviour == "runaway":
        seed = request.get("seed")
        if isinstance(seed, int) and seed % 2 == 1:
            return native()
        limit = token_limit(request)
        budget = RUNAWAY_TOKEN_CAP if limit is None else min(limit, RUNAWAY_TOKEN_CAP)
        lines = budget // max(1, count_tokens(RUNAWAY_LINE)) + 2
        content = cut_to_tokens(f"{sentence}\n" + RUNAWAY_LINE * lines, budget)
        return Completion(content, [], "length", seconds_per_token=RUNAWAY_SECONDS_PER_TOKEN)
    if behaviour == "imitates_tool_results":
        fakes = [_FAKE_RESULTS[index % len(_FAKE_RESULTS)]]
        if index % 2:
            fakes.append(_FAKE_RESULTS[(index + 1) % len(_FAKE_RESULTS)])
        blocks = "".join(f"<tool_response>\n{json.dumps(fake)}\n</tool_response>\n" for fake in fakes)
        return text(f"{blocks}<tool_call>\n{_call_json(name, args)}\n</tool_call>")
    if behaviour == "constrained":
        if schema is not None:
            return text(_constrained_json(schema, name, args, reply))
        if _wants_json_object(request):
            return text(_envelope_json(name, args))
        return text(prose)
    if behaviour == "unreadable":
        return text(prose)
    raise ValueError(f"unknown behaviour {behaviour!r}; known: {', '.join(BEHAVIOURS)}")


def finish(completion: Completion, request: dict[str, Any]) -> Completion:
    """Apply ``stop`` and the token limit, price the generation time and report usage."""
    content, calls, reason = completion.content, completion.tool_calls, completion.finish_reason
    limit = token_limit(request)
    if content is not None:
        content = cut_at_stop(content, request.get("stop"))
        if limit is not None and count_tokens(content) > limit:
            content, reason = cut_to_tokens(content, limit), "length"
    if limit is not None and calls:
        budget = limit - count_tokens(content or "")
        kept: list[tuple[str, str]] = []
        for name, arguments in calls:
            if count_tokens(arguments) > budget:
                kept.append((name, cut_to_tokens(arguments, max(budget, 0))))
                reason = "length"
                break
            kept.append((name, arguments))
            budget -= count_tokens(arguments)
        calls = kept
    completion_tokens = count_tokens(content or "") + sum(count_tokens(a) + count_tokens(n) for n, a in calls)
    return Completion(
        content,
        calls,
        reason,
        generation_seconds=completion.generation_seconds + completion_tokens * completion.seconds_per_token,
        usage=(prompt_tokens(request, with_tools=completion.saw_tools), completion_tokens),
    )


class OpenAITestServer:
    """Start with ``with OpenAITestServer(...) as srv:``; point a client at ``srv.base_url``.

    ``behaviour``: how policy (and probe) answers are written (:data:`BEHAVIOURS`); ``cold_seconds``: the
    ``cold_start`` wait. ``cancelled`` counts requests abandoned because the client went away first.
    """

    def __init__(
        self,
        script: list[Reply] | None = None,
        *,
        policy: Policy | None = None,
        fault_rate: float = 0.0,
        seed: int = 0,
        model: str = "test-model",
        behaviour: str = "native",
        cold_seconds: float = DEFAULT_COLD_SECONDS,
        answer_probes: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"unknown behaviour {behaviour!r}; known: {', '.join(BEHAVIOURS)}")
        self.script: list[Reply] = list(script or [])
        self.policy = policy
        self.fault_rate = fault_rate
        self.model = model
        self.behaviour = behaviour
        self.cold_seconds = cold_seconds
        self.answer_probes = answer_probes
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []  # the path (query string included) of each request, in order
        self.faults_injected = 0
        self.probes = 0  # connection checks answered by the server itself
        self.cancelled = 0  # requests abandoned because the client disconnected before the answer
        self._warm_at: float | None = None  # cold_start: when the model has "loaded"
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        # a short poll interval: shutdown() waits for it, and tests start many servers
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> OpenAITestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_reply(self, request: dict[str, Any], path: str) -> tuple[Reply, bool, int]:
        """The reply, whether the behaviour renders it (policy and probe answers; scripted ones are
        verbatim), and the request's index."""
        with self._lock:
            self.requests.append(request)
            self.paths.append(path)
            index = len(self.requests) - 1
            if self.fault_rate and self._rng.random() < self.fault_rate:
                self.faults_injected += 1
                return Reply(status=500, content="injected fault"), False, index
            if self.answer_probes and is_probe(request):
                self.probes += 1
                return Reply(tool_calls=[(PROBE_TOOL, dict(PROBE_ARGS))]), True, index
            if self.script:
                return self.script.pop(0), False, index
        if self.policy is None:
            return Reply(status=500, content="script exhausted and no policy configured"), False, index
        try:
            return self.policy(request), True, index
        except Exception as error:  # a policy bug is the server's 500, not a dropped connection
            return Reply(status=500, content=f"policy failed: {type(error).__name__}: {error}"), False, index

    def _cold_wait(self) -> float:
        """Seconds this request waits for the model to load (``cold_start`` only)."""
        if self.behaviour != "cold_start":
            return 0.0
        with self._lock:
            now = time.monotonic()
            if self._warm_at is None:
                self._warm_at = now + self.cold_seconds
            return max(0.0, self._warm_at - now)

    def _body(self, completion: Completion, index: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": completion.content}
        if completion.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{index}_{i}", "type": "function", "function": {"name": name, "arguments": args}}
                for i, (name, args) in enumerate(completion.tool_calls)
            ]
        body: dict[str, Any] = {
            "id": f"chatcmpl-{index + 1}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": completion.finish_reason}],
        }
        if completion.usage is not None:
            prompt, generated = completion.usage
            body["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": generated,
                "total_tokens": prompt + generated,
            }
        return body

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # headers and body go out in separate writes: without TCP_NODELAY every answer waits ~40 ms
            # for the client's delayed ACK
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
                self._send(
                    status, {"error": {"message": message, "type": "test_server", "code": status}}, headers
                )

            def _client_waits(self, seconds: float) -> bool:
                """Sleep ``seconds`` unless the client hangs up first (False: it did; the request is
                abandoned). A closed socket polls readable and peeks zero bytes."""
                deadline = time.monotonic() + seconds
                connection: socket.socket = self.connection
                while (remaining := deadline - time.monotonic()) > 0:
                    readable, _, _ = select.select([connection], [], [], min(remaining, _POLL_SECONDS))
                    if not readable:
                        continue
                    try:
                        peeked = connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        continue
                    except OSError:  # reset by the peer
                        peeked = b""
                    if not peeked:
                        with server._lock:
                            server.cancelled += 1
                        self.close_connection = True
                        return False
                    time.sleep(min(remaining, _POLL_SECONDS))  # bytes of a next request: still there
                return True

            def _completion(
                self, reply: Reply, rendered: bool, request: dict[str, Any], index: int
            ) -> Completion:
                if rendered:
                    completion = finish(render(server.behaviour, reply, request, index), request)
                    if reply.usage is not None:
                        completion.usage = reply.usage
                    return completion
                calls = [(name, _arguments_text(args)) for name, args in reply.tool_calls]
                return Completion(reply.content, calls, "tool_calls" if calls else "stop", usage=reply.usage)

            def do_GET(self) -> None:
                if urlsplit(self.path).path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._error(404, f"unknown path {self.path}")

            def do_POST(self) -> None:
                if not urlsplit(self.path).path.rstrip("/").endswith("/chat/completions"):
                    self._error(404, f"unknown path {self.path}")
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1
                if length < 0:
                    self._error(400, "Content-Length is not a whole number of bytes")
                    return
                if length > MAX_BODY_BYTES:
                    self._error(413, "request too large")
                    return
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._error(400, "request body is not JSON")
                    return
                if not isinstance(request, dict):
                    self._error(400, "request body is not a JSON object")
                    return
                if request.get("stream"):
                    self._error(400, "this test server does not stream; send stream: false")
                    return
                reply, rendered, index = server._next_reply(request, self.path)
                wait = reply.delay + server._cold_wait()
                if reply.status != 200:
                    if wait and not self._client_waits(wait):
                        return
                    headers = (
                        {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else None
                    )
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self._error(reply.status, reply.content or "error", headers)
                    return
                try:
                    completion = self._completion(reply, rendered, request, index)
                except BadRequest as error:
                    self._error(400, str(error))
                    return
                except (
                    Exception
                ) as error:  # a reply the server cannot write: its typed 500, not a dead thread
                    self._error(
                        500, f"reply could not be written: {type(error).__name__}: {str(error)[:200]}"
                    )
                    return
                if not self._client_waits(wait + completion.generation_seconds):
                    return
                # a client that gave up just now has closed the socket: nothing to answer
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(200, server._body(completion, index))

        return Handler


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.testing.openai_server``: serve the scripted player until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.testing.openai_server",
        description="An OpenAI-compatible chat server whose 'model' is the project's scripted player, "
        "answering in the manner of a chosen behaviour: try an LLM agent without a model.",
    )
    parser.add_argument("--behaviour", default="native", choices=list(BEHAVIOURS), metavar="NAME")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--cold-seconds", type=float, default=DEFAULT_COLD_SECONDS)
    parser.add_argument("--model", default="test-model", help="the model name the answers carry")
    parser.add_argument("--list", action="store_true", help="print the behaviours and exit")
    options = parser.parse_args(argv)
    if options.list:
        width = max(map(len, BEHAVIOURS))
        for name, description in BEHAVIOURS.items():
            print(f"{name:<{width}}  {description}")
        return 0

    server = OpenAITestServer(
        policy=ScriptedPlayer(),
        behaviour=options.behaviour,
        cold_seconds=options.cold_seconds,
        model=options.model,
        host=options.host,
        port=options.port,
    )
    # Ctrl-C stops it even when a shell started it in the background (which ignores SIGINT), and so does
    # SIGTERM: both end in the clean shutdown below
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with server:
        print(f"Serving behaviour {options.behaviour!r} at {server.base_url} (Ctrl-C stops)")
        print("Point an LLM agent at it, e.g.:")
        players = f"llm:openai:{options.model},random"
        print(f'  OPENAI_BASE_URL={server.base_url} tradecraft play --players "{players}"', flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    print(f"Stopped after {len(server.requests)} requests ({server.cancelled} cancelled).", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
