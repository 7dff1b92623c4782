"""The price table: cached input tokens at their own price, models matched by name or stem, none guessed."""

from __future__ import annotations

import pytest

from server.table.config import ModelPrice, load_settings
from server.table.costs import Tokens, call_model, cost_usd, price_of

PRICES = {
    "gpt-4o": ModelPrice(input=2.5, cached_input=1.25, output=10.0),
    "gpt-4o-mini": ModelPrice(input=0.15, output=0.6),
}


def test_cached_input_is_priced_apart_from_the_rest_of_the_prompt() -> None:
    # 600k uncached at 2.50, 400k cached at 1.25, 100k out at 10.00 (per million)
    assert cost_usd(PRICES, "gpt-4o", Tokens(1_000_000, 400_000, 100_000)) == pytest.approx(3.0)
    # no cached price: cached tokens cost the input price
    assert cost_usd(PRICES, "gpt-4o-mini", Tokens(1_000_000, 500_000, 0)) == pytest.approx(0.15)
    # a provider reporting more cached than input tokens is not paid for twice
    assert cost_usd(PRICES, "gpt-4o", Tokens(10, 50, 0)) == pytest.approx(10 * 1.25 / 1e6)


def test_a_model_is_found_by_its_name_or_the_longest_stem_it_extends() -> None:
    assert price_of(PRICES, "gpt-4o-2024-08-06") is PRICES["gpt-4o"]
    assert price_of(PRICES, "gpt-4o-mini-2024-07-18") is PRICES["gpt-4o-mini"]
    assert price_of(PRICES, "gpt-4omni") is None  # a stem is followed by "-"
    assert price_of(PRICES, "openai:gpt-4o-mini") is PRICES["gpt-4o-mini"]  # as specs and agents name it
    assert price_of(PRICES, "vllm:llama-3") is None and price_of(PRICES, ":gpt-4o") is None
    assert cost_usd(PRICES, "llama-3.2-1b", Tokens(100, 0, 100)) is None
    assert cost_usd(PRICES, None, Tokens(100, 0, 100)) is None


def test_token_counts_come_from_llm_trace_records() -> None:
    record = {"tokens": {"prompt_tokens": 120, "cached_prompt_tokens": 64, "completion_tokens": 9}}
    assert Tokens.of_trace(record) == Tokens(120, 64, 9)
    assert Tokens.of_trace({"tokens": {"prompt_tokens": True, "completion_tokens": -3}}) == Tokens()
    assert Tokens.of_trace({"step": "heard"}) == Tokens()
    assert Tokens(1, 2, 3) + Tokens(10, 20, 30) == Tokens(11, 22, 33)
    # the model a call ran on: as the provider reported it, else as configured
    reported = {"model": "openai:gpt-4o", "provider_model": "gpt-4o-2024-08-06"}
    assert call_model(reported) == "gpt-4o-2024-08-06"
    assert call_model({"model": "openai:gpt-4o", "provider_model": None}) == "openai:gpt-4o"
    assert call_model({"step": 1}) is None


def test_the_shipped_settings_price_the_papers_models() -> None:
    prices = load_settings().prices.models
    for model in ("gpt-4o", "o3", "o4-mini", "gpt-5"):
        assert price_of(prices, model) is not None, model
