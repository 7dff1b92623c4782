"""A small OpenAI-compatible chat server for tests: scripted or policy-driven answers over real HTTP.

Serves ``POST /v1/chat/completions`` so the real ``ChatOpenAI`` code path can be exercised without a provider
(and any other path ending in ``/chat/completions``: Azure-style clients, which ``init_chat_model`` builds
for other providers, put the deployment in the path).
Each request takes the next scripted :class:`Reply` (or asks ``policy(request)`` for one when the script is
empty); a fault rate injects 500s deterministically from a seed. Every request body is recorded for
assertions.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

MAX_BODY_BYTES = 4_000_000  # a request larger than this is refused before it is read


@dataclass
class Reply:
    """One scripted answer. ``tool_calls`` entries are ``(name, arguments)``; a str argument is sent verbatim
    (so malformed JSON can be served), anything else is JSON-encoded."""

    content: str | None = None
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200
    retry_after: float | None = None  # seconds, sent as the Retry-After header (for 429)
    delay: float = 0.0  # seconds to wait before answering (longer than the client timeout = a timeout)
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens); None = no usage block


def _arguments_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


Policy = Callable[[dict[str, Any]], Reply]


class OpenAITestServer:
    """Start with ``with OpenAITestServer(...) as srv:``; point a client at ``srv.base_url``."""

    def __init__(
        self,
        script: list[Reply] | None = None,
        *,
        policy: Policy | None = None,
        fault_rate: float = 0.0,
        seed: int = 0,
        model: str = "test-model",
    ) -> None:
        self.script: list[Reply] = list(script or [])
        self.policy = policy
        self.fault_rate = fault_rate
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []  # the path (query string included) of each request, in order
        self.faults_injected = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

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

    def _next_reply(self, request: dict[str, Any], path: str) -> Reply:
        with self._lock:
            self.requests.append(request)
            self.paths.append(path)
            if self.fault_rate and self._rng.random() < self.fault_rate:
                self.faults_injected += 1
                return Reply(status=500, content="injected fault")
            if self.script:
                return self.script.pop(0)
        if self.policy is None:
            return Reply(status=500, content="script exhausted and no policy configured")
        return self.policy(request)

    def _completion(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for i, (name, args) in enumerate(reply.tool_calls)
            ]
        finish = "tool_calls" if reply.tool_calls else "stop"
        body: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish,
                }
            ],
        }
        if reply.usage is not None:
            prompt, completion = reply.usage
            body["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
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

            def do_POST(self) -> None:
                if not urlsplit(self.path).path.rstrip("/").endswith("/chat/completions"):
                    self._error(404, f"unknown path {self.path}")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    self._error(413, "request too large")
                    return
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._error(400, "request body is not JSON")
                    return
                reply = server._next_reply(request, self.path)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    headers = (
                        {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else None
                    )
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self._error(reply.status, reply.content or "error", headers)
                    return
                # a client that gave up (timeout) has closed the socket: nothing to answer
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(200, server._completion(reply))

        return Handler
