"""The project's OpenAI-compatible test server answers over HTTP as scripted, by policy and with faults."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from agents.llm.tracing import count_tokens
from agents.testing.openai_server import OpenAITestServer, Reply


def post(base_url: str, body: dict, timeout: float = 5.0) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read()), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


def test_scripted_replies_come_back_in_order_and_requests_are_recorded() -> None:
    script = [
        Reply(tool_calls=[("propose", {"give": [], "get": []})], usage=(120, 7)),
        Reply(tool_calls=[("propose", "{not json")]),
        Reply(content="<think>hmm</think>I pass."),
        Reply(status=429, retry_after=0.5, content="slow down"),
        Reply(status=500),
    ]
    with OpenAITestServer(script) as server:
        status, body, _ = post(
            server.base_url, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert status == 200
        call = body["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "propose" and json.loads(call["arguments"]) == {"give": [], "get": []}
        assert body["usage"] == {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}
        _, body, _ = post(server.base_url, {"messages": []})
        assert body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{not json"
        assert "usage" not in body
        _, body, _ = post(server.base_url, {"messages": []})
        assert body["choices"][0]["message"]["content"] == "<think>hmm</think>I pass."
        assert body["choices"][0]["finish_reason"] == "stop"
        status, body, headers = post(server.base_url, {"messages": []})
        assert status == 429 and headers["Retry-After"] == "0.5"
        status, _, _ = post(server.base_url, {"messages": []})
        assert status == 500
        # script exhausted and no policy: a clear error, not a hang
        status, body, _ = post(server.base_url, {"messages": []})
        assert status == 500 and "no policy" in body["error"]["message"]
        assert server.requests[0]["messages"][0]["content"] == "hi"
        assert len(server.requests) == 6


def test_a_delay_longer_than_the_client_timeout_is_a_timeout_and_the_request_is_abandoned() -> None:
    with OpenAITestServer([Reply(delay=5.0, content="late"), Reply(content="on time")]) as server:
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            post(server.base_url, {"messages": []}, timeout=0.2)
        deadline = time.monotonic() + 1.0  # noticed within a poll, long before the 5 s delay ends
        while server.cancelled < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.cancelled == 1
        # the abandoned request is not answered later to anyone; the next one is served at once
        _, body, _ = post(server.base_url, {"messages": []}, timeout=1.0)
        assert body["choices"][0]["message"]["content"] == "on time"


def test_the_model_list_names_the_served_model() -> None:
    with OpenAITestServer(model="tiny-1b") as server:
        answer = urllib.request.urlopen(server.base_url + "/models", timeout=5)
        assert [m["id"] for m in json.loads(answer.read())["data"]] == ["tiny-1b"]


def test_policy_mode_decides_from_the_request_and_faults_are_seeded() -> None:
    def policy(request: dict) -> Reply:
        first_tool = request["tools"][0]["function"]["name"]
        return Reply(tool_calls=[(first_tool, {"seen": len(request["messages"])})])

    request = {"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "pass_turn"}}]}
    statuses = []
    with OpenAITestServer(policy=policy, fault_rate=0.2, seed=7) as server:
        for _ in range(50):
            status, body, _ = post(server.base_url, request)
            statuses.append(status)
            if status == 200:
                call = body["choices"][0]["message"]["tool_calls"][0]["function"]
                assert call["name"] == "pass_turn" and json.loads(call["arguments"]) == {"seen": 1}
        assert statuses.count(500) == server.faults_injected
        assert 0 < server.faults_injected < 25


def test_unknown_path_and_non_json_body_are_typed_errors() -> None:
    with OpenAITestServer() as server:
        request = urllib.request.Request(server.base_url + "/nowhere", data=b"{}")
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=5)
        assert error.value.code == 404
        request = urllib.request.Request(server.base_url + "/chat/completions", data=b"not json")
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=5)
        assert error.value.code == 400
        assert server.requests == []


def test_a_failing_policy_and_a_streaming_request_are_typed_errors() -> None:
    def broken(request: dict) -> Reply:
        raise KeyError("tools")

    with OpenAITestServer(policy=broken) as server:
        status, body, _ = post(server.base_url, {"messages": []})
        assert status == 500 and "policy failed: KeyError" in body["error"]["message"]
        status, body, _ = post(server.base_url, {"messages": [], "stream": True})
        assert status == 400 and "stream" in body["error"]["message"]


def test_a_huge_or_unwritable_reply_and_a_bad_content_length_are_typed_answers() -> None:
    replies = iter(
        [
            Reply(tool_calls=[("decide", {"accept": True, "message": "y" * 1_100_000})]),
            Reply(tool_calls=[("decide", {"accept": object()})]),  # a policy bug: arguments no JSON
        ]
    )
    with OpenAITestServer(policy=lambda request: next(replies)) as server:
        status, body, _ = post(server.base_url, {"messages": [], "tools": [{"type": "function"}]}, 30)
        arguments = body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        assert status == 200 and len(arguments) > 1_100_000 and body["usage"]["completion_tokens"] > 0
        status, body, _ = post(server.base_url, {"messages": []})
        assert status == 500 and "could not be written: TypeError" in body["error"]["message"]
        host, port = server.base_url.removeprefix("http://").split("/")[0].split(":")
        for length in ("-5", "lots"):
            with socket.create_connection((host, int(port)), timeout=5) as connection:
                head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n"
                connection.sendall(head.encode() + b"{}")
                assert connection.recv(100).startswith(b"HTTP/1.0 400"), length


def test_token_counts_of_any_length_never_fail() -> None:
    assert count_tokens("y" * 1_100_000) >= count_tokens("y" * 100_000) * 11
