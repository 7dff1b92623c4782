"""The ``llm`` policy factory: a spec's options become :class:`~agents.llm.agent.AgentSettings` and a
LangChain chat model, and the two an :class:`~agents.llm.agent.LLMAgent`.

``llm:<provider>:<model>[?tom=0,1&persona=fair&cot=1&...]`` (grammar in :mod:`agents.bots.registry`).
Credentials come only from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, a provider's own
variables), never from a spec.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel

from agents.llm.agent import AgentSettings, LLMAgent

TOM_ORDER_SETS: dict[str, tuple[int, ...]] = {"0": (0,), "0,1": (0, 1), "0,1,2": (0, 1, 2)}
"""The paper's ToM elicitation conditions: V0, V0+V1, V0+V1+V2."""

OPENAI_COMPATIBLE = ("openai", "vllm", "ollama", "llamacpp", "lmstudio")
"""Providers served through ``ChatOpenAI`` (an OpenAI-compatible HTTP API)."""


def build_chat_model(
    provider: str,
    model: str,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    temperature: float | None = None,
    seed: int | None = None,
) -> BaseChatModel:
    """A chat model for ``provider:model``; credentials only from the environment.

    OpenAI and OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LM Studio) use ``ChatOpenAI``: base
    URL from ``base_url`` or ``OPENAI_BASE_URL``, key from ``OPENAI_API_KEY`` (a local server without
    one gets a placeholder). Other providers go through ``init_chat_model`` with their own environment
    variables (e.g. ``ANTHROPIC_API_KEY``). The client's own retries are off: the agent retries.
    ``seed`` is passed to OpenAI-compatible servers (their best-effort sampling seed).
    """
    extra: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
    if provider in OPENAI_COMPATIBLE:
        from langchain_openai import ChatOpenAI

        url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            if url is None and provider == "openai":
                raise ValueError(
                    "set OPENAI_API_KEY in the environment (or point OPENAI_BASE_URL / base_url= at an "
                    "OpenAI-compatible server)"
                )
            key = "not-needed"  # local servers ignore the key, the client insists on one
        if seed is not None:
            extra["seed"] = seed % 2**31  # best-effort determinism where the server supports it
        return ChatOpenAI(  # type: ignore[arg-type]
            model=model, base_url=url, api_key=key, timeout=timeout, max_retries=0, **extra
        )
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(model, model_provider=provider, timeout=timeout, max_retries=0, **extra)
    except ImportError as err:
        raise ValueError(f"provider {provider!r} needs its LangChain package: {err}") from None


def _flag(name: str, text: str) -> bool:
    if text not in ("0", "1", "true", "false"):
        raise ValueError(f"{name} must be 0 or 1, not {text!r}")
    return text in ("1", "true")


def _number(name: str, text: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number from {low:g} to {high:g}, not {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low:g} to {high:g}, not {text!r}")
    return value


def parse_tom_orders(text: str) -> tuple[int, ...]:
    """``"0,1"`` -> ``(0, 1)``: one of the paper's order sets (V0, V0+V1, V0+V1+V2)."""
    orders = TOM_ORDER_SETS.get(text.replace(" ", ""))
    if orders is None:
        raise ValueError(
            f"tom must be one of {', '.join(TOM_ORDER_SETS)} (V0, V0+V1, V0+V1+V2), not {text!r}"
        )
    return orders


def llm_policy(
    seed: int,
    *,
    model_spec: str = "",
    tom: str | None = None,
    persona: str = "none",
    cot: str = "0",
    strict: str | None = None,
    temperature: str | None = None,
    base_url: str | None = None,
    timeout: str = "60",
    memory_tokens: str = "1000",
    max_queries: str = "3",
    max_invalid: str = "3",
    provider_retries: str = "4",
    retry_budget: str = "40",
    backoff: str = "1",
    move_seconds: str = "300",
) -> LLMAgent:
    """An LLM agent: llm:<provider>:<model>[?tom=0,1&persona=fair&cot=1&strict=1&temperature=0.7].

    Credentials only from the environment (OPENAI_API_KEY, OPENAI_BASE_URL, ...). ``tom`` is the ToM
    order set ``tradecraft play`` asks of this seat (0 | 0,1 | 0,1,2); on a server the game's settings
    decide. ``strict`` defaults to on for OpenAI itself and off for other servers.
    """
    provider, _, model = model_spec.partition(":")
    if not provider or not model:
        raise ValueError("name a model as llm:<provider>:<model>, e.g. llm:openai:gpt-4o-mini")
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    strict_mode = _flag("strict", strict) if strict is not None else (provider == "openai" and url is None)
    settings = AgentSettings(
        persona=persona,
        reasoning="cot" if _flag("cot", cot) else "direct",
        strict=strict_mode,
        memory_tokens=int(_number("memory_tokens", memory_tokens, 0, 200_000)),
        max_queries=int(_number("max_queries", max_queries, 0, 50)),
        max_invalid=int(_number("max_invalid", max_invalid, 1, 20)),
        provider_retries=int(_number("provider_retries", provider_retries, 0, 20)),
        game_retry_budget=int(_number("retry_budget", retry_budget, 0, 10_000)),
        backoff_base=_number("backoff", backoff, 0, 60),
        move_seconds=_number("move_seconds", move_seconds, 0.1, 86_400),
        tom_orders=parse_tom_orders(tom) if tom is not None else None,
    )
    chat = build_chat_model(
        provider,
        model,
        base_url=url,
        timeout=_number("timeout", timeout, 0.01, 3600),
        temperature=_number("temperature", temperature, 0, 2) if temperature is not None else None,
        seed=seed,
    )
    return LLMAgent(chat, model_name=model_spec, settings=settings, seed=seed)
