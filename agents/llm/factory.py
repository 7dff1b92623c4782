"""The ``llm`` policy factory: a spec's options become :class:`~agents.llm.agent.AgentSettings` and a
LangChain chat model, and the two an :class:`~agents.llm.agent.LLMAgent`.

``llm:<provider>:<model>[?tom=0,1&persona=fair&cot=1&...]`` (grammar in :mod:`agents.bots.registry`).
Credentials come only from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, a provider's own
variables), never from a spec.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from agents.bots.registry import Flag, PolicyOptions, WholeNumber, card
from agents.llm import prompts
from agents.llm.agent import DEFAULT_MAX_TOKENS, TOOL_MODE_SETTINGS, AgentSettings, LLMAgent
from agents.llm.modes import TOOL_CHOICES
from server.table.model_catalog import OPENAI_COMPATIBLE  # providers served through ChatOpenAI

TOM_ORDER_SETS: dict[str, tuple[int, ...]] = {"0": (0,), "0,1": (0, 1), "0,1,2": (0, 1, 2)}
"""The paper's ToM elicitation conditions: V0, V0+V1, V0+V1+V2."""


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


Persona = Literal[tuple(prompts.PERSONAS)]  # type: ignore[valid-type]  # the names of prompts.PERSONAS
ToMOrderSet = Literal[tuple(TOM_ORDER_SETS)]  # type: ignore[valid-type]
ToolModeSetting = Literal[TOOL_MODE_SETTINGS]  # type: ignore[valid-type]
ToolChoice = Literal[TOOL_CHOICES]  # type: ignore[valid-type]


class LLMOptions(PolicyOptions):
    """The options of the ``llm`` policy (``llm:<provider>:<model>?key=value&...``)."""

    model_spec: str = Field(
        max_length=160,
        pattern=r"^[^:]+:.+$",
        description="the model as <provider>:<model>, written after the name: llm:<provider>:<model>, "
        "e.g. llm:openai:gpt-4o-mini",
    )
    tom: ToMOrderSet | None = Field(
        None,
        description="the ToM orders `tradecraft play` asks of this seat (V0, V0+V1, V0+V1+V2); on a server "
        "the game's settings decide",
    )
    persona: Persona = Field("none", description="the persona in its instructions")
    cot: Flag = Field(False, description="reason step by step before each action (1) or act at once (0)")
    strict: Flag | None = Field(
        None, description="strict tool schemas; unset: on for OpenAI itself, off for other servers"
    )
    temperature: float | None = Field(
        None, ge=0, le=2, description="sampling temperature; unset: the provider's"
    )
    base_url: str | None = Field(
        None, max_length=200, description="an OpenAI-compatible server's URL; unset: OPENAI_BASE_URL"
    )
    timeout: float = Field(
        60.0, ge=0.01, le=3600, description="seconds per request (the first gets warmup_seconds more)"
    )
    warmup_seconds: float = Field(
        300.0,
        ge=0,
        le=3600,
        description="extra seconds for the model's first request and first move (a cold local model "
        "reads its first long prompt slowly)",
    )
    tool_mode: ToolModeSetting = Field(
        "auto",
        description="how the model answers: native tool calls, json_schema (response_format constrains "
        "the answer to a call), prompted (the tools in the prompt, the call in the text); auto: native on "
        "a provider's own API, else probe the server once and use the best that works",
    )
    tool_choice: ToolChoice | None = Field(
        None, description="native mode's tool_choice; unset: what the probe found, else auto"
    )
    max_tokens: WholeNumber = Field(
        0,
        ge=0,
        le=100_000,
        description="completion tokens per answer in every phase; 0: per phase ("
        + ", ".join(f"{phase} {tokens}" for phase, tokens in DEFAULT_MAX_TOKENS.items())
        + ", more with cot)",
    )
    compact: Flag = Field(False, description="the compact prompt (small context windows)")
    memory_tokens: WholeNumber = Field(1000, ge=0, le=200_000, description="tokens of earlier moves it keeps")
    max_queries: WholeNumber = Field(3, ge=0, le=50, description="queries per move")
    max_invalid: WholeNumber = Field(3, ge=1, le=20, description="invalid calls per move before the fallback")
    provider_retries: WholeNumber = Field(4, ge=0, le=20, description="retries of a failed provider call")
    retry_budget: WholeNumber = Field(
        40, ge=0, le=10_000, description="provider retries per game (0: no limit)"
    )
    backoff: float = Field(1.0, ge=0, le=60, description="seconds of the first retry's backoff (it doubles)")
    move_seconds: float = Field(
        300.0, ge=0.1, le=86_400, description="no model call or retry starts later than this into a move"
    )

    def chat_model(self) -> str:
        return self.model_spec


@card(
    "LLM agent",
    "A language model playing through the game's tools; the operator chooses which models may be seated.",
    "varies",
)
def llm_policy(seed: int, options: LLMOptions) -> LLMAgent:
    """An LLM agent: llm:<provider>:<model>[?tom=0,1&persona=fair&cot=1&strict=1&temperature=0.7].

    Credentials only from the environment (OPENAI_API_KEY, OPENAI_BASE_URL, ...). The seed derives each
    attempt's sampling seed where the provider takes one. With no ``tool_mode`` the agent probes the
    endpoint (:mod:`agents.llm.probe`).
    """
    provider, _, model = options.model_spec.partition(":")
    url = options.base_url or os.environ.get("OPENAI_BASE_URL") or None
    strict = options.strict if options.strict is not None else (provider == "openai" and url is None)
    settings = AgentSettings(
        persona=options.persona,
        reasoning="cot" if options.cot else "direct",
        strict=strict,
        memory_tokens=options.memory_tokens,
        max_queries=options.max_queries,
        max_invalid=options.max_invalid,
        provider_retries=options.provider_retries,
        game_retry_budget=options.retry_budget,
        backoff_base=options.backoff,
        move_seconds=options.move_seconds,
        warmup_seconds=options.warmup_seconds,
        tool_mode=options.tool_mode,
        tool_choice=options.tool_choice,
        compact=options.compact,
        **(
            # one figure for every answer, thinking included
            {"max_tokens": dict.fromkeys(DEFAULT_MAX_TOKENS, options.max_tokens), "cot_extra_tokens": 0}
            if options.max_tokens
            else {}
        ),
        tom_orders=TOM_ORDER_SETS[options.tom] if options.tom is not None else None,
    )
    chat = build_chat_model(
        provider, model, base_url=url, timeout=options.timeout, temperature=options.temperature, seed=seed
    )
    return LLMAgent(chat, model_name=options.model_spec, settings=settings, seed=seed)
