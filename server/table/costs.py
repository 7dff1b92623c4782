"""What LLM calls cost: token counts and the price table of the settings (``prices`` in settings.yaml).

Providers report ``input`` tokens with the ``cached`` ones among them (OpenAI's ``prompt_tokens`` and
``cached_tokens``; LangChain's ``input_tokens`` and ``input_token_details.cache_read``), so a call costs
``(input - cached) * input price + cached * cached-input price + output * output price``, prices in US
dollars per million tokens. A model is found in the table by its exact name, else by the longest listed
name it starts with followed by ``-`` (``gpt-4o-2024-08-06`` is priced as ``gpt-4o``), a name with its
provider in front (``openai:gpt-4o``, as LLM specs and agents write it) without that prefix; a model the
table does not list has no cost (None), never a guessed one. :func:`call_model` says which model an LLM
call ran on: the one the provider reported, else the configured one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from server.table.config import ModelPrice

PER_TOKENS = 1_000_000
"""Prices are per this many tokens."""


@dataclass(frozen=True)
class Tokens:
    """Token counts of one or more calls; ``cached`` counts input tokens served from the provider's cache."""

    input: int = 0
    cached: int = 0
    output: int = 0

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.cached + other.cached, self.output + other.output)

    @classmethod
    def of_trace(cls, record: Mapping[str, object]) -> Tokens:
        """The tokens an LLM trace record reports (``tokens``: prompt, cached prompt and completion)."""
        tokens = record.get("tokens")
        if not isinstance(tokens, Mapping):
            return cls()

        def count(key: str) -> int:
            value = tokens.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

        return cls(count("prompt_tokens"), count("cached_prompt_tokens"), count("completion_tokens"))


def call_model(record: Mapping[str, object]) -> str | None:
    """The model an LLM call trace ran on: as the provider reported it (``provider_model``), else as it was
    configured (``model``, e.g. ``openai:gpt-4o``)."""
    for key in ("provider_model", "model"):
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def price_of(prices: Mapping[str, ModelPrice], model: str | None) -> ModelPrice | None:
    """The listed price of ``model``: its own entry, else the longest entry it extends by ``-...``; a
    ``provider:model`` name is looked up without its provider."""
    if not model:
        return None
    if model in prices:
        return prices[model]
    stems = [name for name in prices if model.startswith(name + "-")]
    if stems:
        return prices[max(stems, key=len)]
    provider, colon, bare = model.partition(":")
    return price_of(prices, bare) if colon and provider and bare else None


def cost_usd(prices: Mapping[str, ModelPrice], model: str | None, tokens: Tokens) -> float | None:
    """US dollars ``tokens`` cost on ``model`` under ``prices``; None when the table does not list it."""
    price = price_of(prices, model)
    if price is None:
        return None
    cached = min(tokens.cached, tokens.input)
    cached_price = price.input if price.cached_input is None else price.cached_input
    dollars = (tokens.input - cached) * price.input + cached * cached_price + tokens.output * price.output
    return dollars / PER_TOKENS
