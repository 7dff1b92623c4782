"""Per-provider rate limits for LLM seats: requests and tokens per minute, shared by every game of a run.

A provider (``openai``, ``vllm``, ... — the part of an LLM seat's spec before the model, as in
``llm:openai:gpt-4o``) gets a :class:`ProviderLimit`; the experiment config names them under ``limits``::

    limits:
      openai: {requests_per_minute: 500, tokens_per_minute: 200000}

:class:`RateLimiter` keeps a sliding one-minute window per provider. A model call first *acquires*: it
waits until one more request and its estimated input tokens (o200k, prompt plus tool declarations) fit
in the window; when the answer comes its real usage (the provider's input + output tokens, else the
estimate) replaces the estimate (*record*). A call that failed keeps its estimate: providers count
refused requests too. A single call estimated above the whole token budget is let through when the
window is empty (it could never fit otherwise). Providers without a limit are never held.

:func:`attach_limiter` hooks a limiter onto an LLM seat without touching the agent's code: a LangChain
callback handler (:class:`RateLimitCallback`) added to the seat's chat model acquires in
``on_chat_model_start`` (LangChain runs it in the calling thread before the HTTP request) and records
in ``on_llm_end`` / ``on_llm_error``. Anything with ``acquire`` / ``record`` (the :class:`Limiter`
protocol) can stand behind it: the Ray executor hands tasks a proxy of one limiter held by a Ray actor,
built on the non-blocking :meth:`RateLimiter.try_acquire`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from agents.llm.tracing import count_message_tokens, count_tool_tokens
from craft_rules.errors import TradeCraftError

WINDOW_SECONDS = 60.0
"""The sliding window the per-minute limits count over."""


class LimitsError(TradeCraftError):
    """A limit that cannot be honoured (``code``: ``invalid_limit``); the message says what to write."""


@dataclass(frozen=True)
class ProviderLimit:
    """One provider's budget per minute; None is no limit on that count."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise LimitsError(
                    "invalid_limit",
                    f"{name} must be a whole number of at least 1 (or left out), not {value!r}",
                )


@dataclass(frozen=True)
class Ticket:
    """An acquired call: which provider, its number in the limiter, the tokens it reserved, when (the
    limiter's clock)."""

    provider: str
    number: int
    tokens: int
    at: float


class Limiter(Protocol):
    """What :class:`RateLimitCallback` needs: block until a call fits, then record its real usage."""

    def acquire(self, provider: str, tokens: int) -> Ticket | None:
        """Wait until one request of ``tokens`` estimated tokens fits; None when ``provider`` is unlimited."""
        ...

    def record(self, ticket: Ticket, tokens: int) -> None:
        """The call of ``ticket`` used ``tokens`` in the end (replacing its estimate)."""
        ...


class _Entry:
    """One call in the window (mutable: its tokens become the real usage when it ends)."""

    __slots__ = ("at", "number", "tokens")

    def __init__(self, at: float, number: int, tokens: int) -> None:
        self.at = at
        self.number = number
        self.tokens = tokens


class RateLimiter:
    """Sliding-window request and token limits per provider, safe to share between threads.

    ``limits`` maps a provider to its :class:`ProviderLimit` (or a mapping of the same keys). ``clock``
    gives monotonic seconds; ``sleep``, when given, is how :meth:`acquire` waits (a fake clock's advance in
    tests), otherwise it waits on a condition that :meth:`record` wakes.
    """

    def __init__(
        self,
        limits: Mapping[str, ProviderLimit | Mapping[str, Any]],
        *,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        if window <= 0:
            raise LimitsError("invalid_limit", f"the window must be a positive number of seconds: {window}")
        self.limits: dict[str, ProviderLimit] = {
            provider: limit if isinstance(limit, ProviderLimit) else ProviderLimit(**limit)
            for provider, limit in limits.items()
        }
        self.window = window
        self._clock = clock
        self._sleep = sleep
        self._calls: dict[str, deque[_Entry]] = {provider: deque() for provider in self.limits}
        self._open: dict[int, _Entry] = {}  # acquired calls whose usage is not recorded yet
        self._numbers = itertools.count(1)
        self._changed = threading.Condition()

    def __reduce__(self) -> tuple[Any, ...]:
        # locks do not pickle; a copy in another process is a fresh limiter with the same limits (it is
        # no longer shared: the Ray executor shares one through an actor instead)
        return (_fresh_limiter, (self.limits, self.window))

    def attach(self, policy: Any, seat: object = None) -> Any:
        """``policy`` with its model calls held to these limits if it is an LLM seat (see
        :func:`attach_limiter`); the runner calls this for each seat it builds (``seat``: its plan)."""
        attach_limiter(policy, self)
        return policy

    def usage(self, provider: str) -> tuple[int, int]:
        """(requests, tokens) of ``provider`` in the current window."""
        with self._changed:
            calls = self._pruned(provider)
            return len(calls), sum(entry.tokens for entry in calls)

    def try_acquire(self, provider: str, tokens: int) -> tuple[Ticket | None, float]:
        """Take a slot now if one request of ``tokens`` fits: (ticket, 0); else (None, seconds to wait
        before it may fit). An unlimited provider answers (None, 0)."""
        with self._changed:
            return self._try(provider, max(0, int(tokens)))

    def acquire(self, provider: str, tokens: int) -> Ticket | None:
        """Wait until one request of ``tokens`` estimated tokens fits, then hold it in the window."""
        tokens = max(0, int(tokens))
        with self._changed:
            while True:
                ticket, wait = self._try(provider, tokens)
                if ticket is not None or wait <= 0:
                    return ticket
                if self._sleep is None:
                    self._changed.wait(wait)
                    continue
                self._changed.release()
                try:
                    self._sleep(wait)
                finally:
                    self._changed.acquire()

    def record(self, ticket: Ticket, tokens: int) -> None:
        """The call of ``ticket`` used ``tokens``; the window counts that from now on instead of the
        estimate (a call already out of the window stays out)."""
        with self._changed:
            entry = self._open.pop(ticket.number, None)
            if entry is not None:
                entry.tokens = max(0, int(tokens))
            self._changed.notify_all()

    def _pruned(self, provider: str) -> deque[_Entry]:
        calls = self._calls.setdefault(provider, deque())
        horizon = self._clock() - self.window
        while calls and calls[0].at <= horizon:
            self._open.pop(calls.popleft().number, None)
        return calls

    def _try(self, provider: str, tokens: int) -> tuple[Ticket | None, float]:
        limit = self.limits.get(provider)
        if limit is None:
            return None, 0.0
        calls = self._pruned(provider)
        now = self._clock()
        waits = [0.0]
        rpm, tpm = limit.requests_per_minute, limit.tokens_per_minute
        if rpm is not None and len(calls) + 1 > rpm:
            # the oldest calls beyond rpm - 1 must leave the window first
            waits.append(calls[len(calls) - rpm].at + self.window - now)
        if tpm is not None and calls:
            excess = sum(entry.tokens for entry in calls) + tokens - tpm
            if excess > 0:
                freed = 0
                for entry in calls:  # oldest first: wait until enough of them have left
                    freed += entry.tokens
                    if freed >= excess:
                        break
                waits.append(entry.at + self.window - now)
        wait = max(waits)
        if wait > 0:
            return None, max(wait, 1e-3)
        entry = _Entry(now, next(self._numbers), tokens)
        calls.append(entry)
        self._open[entry.number] = entry
        return Ticket(provider, entry.number, tokens, now), 0.0


def _fresh_limiter(limits: Mapping[str, ProviderLimit], window: float) -> RateLimiter:
    return RateLimiter(limits, window=window)


def limiter_from_config(limits: Mapping[str, Any] | None) -> RateLimiter | None:
    """A :class:`RateLimiter` for an experiment config's ``limits`` (provider -> requests/tokens per
    minute, as mappings or the config's pydantic models); None when no provider is limited."""
    if not limits:
        return None
    parsed: dict[str, ProviderLimit] = {}
    for provider, limit in limits.items():
        values = limit if isinstance(limit, Mapping) else limit.model_dump()  # the config's pydantic model
        parsed[provider] = ProviderLimit(
            requests_per_minute=values.get("requests_per_minute"),
            tokens_per_minute=values.get("tokens_per_minute"),
        )
    return RateLimiter(parsed)


def _usage_tokens(response: LLMResult) -> int | None:
    """Input + output tokens the provider reported for ``response``, if it did."""
    total = 0
    found = False
    for generations in response.generations:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                total += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
                found = True
    if found:
        return total
    usage = (response.llm_output or {}).get("token_usage") or {}
    if "prompt_tokens" in usage:
        return int(usage["prompt_tokens"]) + int(usage.get("completion_tokens") or 0)
    return None


class RateLimitCallback(BaseCallbackHandler):
    """Holds each call of a chat model to ``limiter``'s budget for ``provider`` (see the module docstring).

    Errors raised here reach the caller (``raise_error``): a limiter that fails must not let calls
    through unmetered.
    """

    raise_error = True
    run_inline = True

    def __init__(self, limiter: Limiter, provider: str) -> None:
        self.limiter = limiter
        self.provider = provider
        self._tickets: dict[UUID, Ticket] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        invocation_params: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        tools: Sequence[Mapping[str, Any]] = (invocation_params or {}).get("tools") or []
        estimate = sum(count_message_tokens(batch) for batch in messages) + count_tool_tokens(tools)
        ticket = self.limiter.acquire(self.provider, estimate)
        if ticket is not None:
            with self._lock:
                self._tickets[run_id] = ticket

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            ticket = self._tickets.pop(run_id, None)
        if ticket is not None:
            used = _usage_tokens(response)
            self.limiter.record(ticket, ticket.tokens if used is None else used)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            ticket = self._tickets.pop(run_id, None)
        if ticket is not None:
            self.limiter.record(ticket, ticket.tokens)


def provider_of(model_name: str) -> str:
    """The provider of an LLM seat's model name (``openai:gpt-4o`` -> ``openai``)."""
    return model_name.partition(":")[0]


def attach_to_model(model: BaseChatModel, limiter: Limiter, provider: str) -> RateLimitCallback:
    """Add a :class:`RateLimitCallback` to ``model``'s own callbacks (every later call is limited, tool
    bindings included: they call the same model object)."""
    handler = RateLimitCallback(limiter, provider)
    callbacks = model.callbacks
    if isinstance(callbacks, BaseCallbackManager):
        callbacks.add_handler(handler, inherit=True)
    else:
        model.callbacks = [*(callbacks or []), handler]
    return handler


def attach_limiter(policy: object, limiter: Limiter | None) -> RateLimitCallback | None:
    """Limit ``policy``'s model calls if it is an LLM seat (it has a LangChain chat ``model`` and a
    ``model_name`` of the form ``provider:model``); anything else (a bot) is left alone: None."""
    model = getattr(policy, "model", None)
    if limiter is None or not isinstance(model, BaseChatModel):
        return None
    return attach_to_model(model, limiter, provider_of(str(getattr(policy, "model_name", ""))))
