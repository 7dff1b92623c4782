"""What an LLM agent's traces are made of: offline token counts, messages as JSON, secrets redacted.

Token counts: the provider's reported usage when it sends one, else counted offline with the o200k
encoding (``bpe-openai``, no network). A chat message costs its content's tokens plus a small per-message
overhead (the chat format's role markers), and tool schemas count as the JSON text sent.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens the chat format adds around each message (role and separators), as OpenAI's cookbook counts."""

_KEY_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-]{8,}"),  # OpenAI-style secret keys
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}"),
)
SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")


@cache
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding("o200k_base")


COUNTED_CHARS = 100_000
"""Text longer than this is counted on its first this-many characters and the figure scaled to its length
(the encoder refuses very long input, and whatever a model writes must not stop a count)."""


def count_tokens(text: str) -> int:
    """o200k tokens of ``text`` (special-token look-alikes count as plain text); an estimate beyond
    :data:`COUNTED_CHARS` characters."""
    if not text:
        return 0
    if len(text) <= COUNTED_CHARS:
        return len(_encoding().encode_ordinary(text))
    counted = len(_encoding().encode_ordinary(text[:COUNTED_CHARS]))
    return -(-counted * len(text) // COUNTED_CHARS)


def message_text(message: BaseMessage) -> str:
    """Everything of ``message`` a provider reads, as text: content plus tool calls."""
    content = message.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if isinstance(message, AIMessage) and message.tool_calls:
        text += json.dumps(
            [{"name": c["name"], "arguments": c["args"]} for c in message.tool_calls], ensure_ascii=False
        )
    return text


def count_message_tokens(messages: Iterable[BaseMessage]) -> int:
    """o200k tokens of a list of chat messages, with the per-message overhead."""
    return sum(count_tokens(message_text(m)) + MESSAGE_OVERHEAD_TOKENS for m in messages)


def count_tool_tokens(tool_schemas: Sequence[Mapping[str, Any]]) -> int:
    """o200k tokens of the tool declarations as sent (their JSON text)."""
    return count_tokens(json.dumps(list(tool_schemas), ensure_ascii=False, separators=(",", ":")))


def message_record(message: BaseMessage, max_chars: int | None = None) -> dict[str, Any]:
    """A chat message as a JSON-safe trace record; text content longer than ``max_chars`` is cut there
    (``content_chars`` then says how long it was)."""
    record: dict[str, Any] = {"role": message.type, "content": message.content}
    if max_chars is not None and isinstance(message.content, str) and len(message.content) > max_chars:
        record["content"] = message.content[:max_chars]
        record["content_chars"] = len(message.content)
    if isinstance(message, AIMessage):
        if message.tool_calls:
            record["tool_calls"] = [
                _call_record(c.get("id"), c["name"], c["args"], max_chars) for c in message.tool_calls
            ]
        if message.invalid_tool_calls:
            record["invalid_tool_calls"] = [
                {
                    **_call_record(c.get("id"), c.get("name"), c.get("args"), max_chars),
                    "error": c.get("error"),
                }
                for c in message.invalid_tool_calls
            ]
    if isinstance(message, ToolMessage):
        record["tool_call_id"] = message.tool_call_id
    return record


MAX_NAME_CHARS = 100
"""A tool call's id and name are cut to this many characters in a trace record."""


def _call_record(call_id: Any, name: Any, args: Any, max_chars: int | None) -> dict[str, Any]:
    """A tool call as a trace record; with ``max_chars``, arguments longer than that (as JSON text) are
    kept as their text cut there (``args_chars`` says how long it was), and the id and name cut short."""
    record: dict[str, Any] = {"id": call_id, "name": name, "args": args}
    if max_chars is None:
        return record
    record["id"] = call_id[:MAX_NAME_CHARS] if isinstance(call_id, str) else call_id
    record["name"] = name[:MAX_NAME_CHARS] if isinstance(name, str) else name
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    if len(text) > max_chars:
        record["args"] = text[:max_chars]
        record["args_chars"] = len(text)
    return record


def secrets_in_environment() -> list[str]:
    """Values of environment variables that look like credentials (``*_API_KEY``, ``*_TOKEN``, ...)."""
    return [
        value
        for name, value in os.environ.items()
        if name.upper().endswith(SECRET_ENV_SUFFIXES) and len(value) >= 6
    ]


def redact(value: Any, secrets: Sequence[str] = ()) -> Any:
    """``value`` (any JSON) with every known secret and anything shaped like an API key blanked out."""
    if isinstance(value, str):
        for secret in secrets:
            if secret and secret in value:
                value = value.replace(secret, "[redacted]")
        for pattern in _KEY_PATTERNS:
            value = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "[redacted]", value)
        return value
    if isinstance(value, Mapping):
        return {str(k): redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, secrets) for v in value]
    return value


def json_safe(value: Any) -> Any:
    """``value`` made JSON-safe (unknown objects as their text)."""
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))
