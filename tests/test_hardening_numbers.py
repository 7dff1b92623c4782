"""Numbers from user text are bounded before exact arithmetic, and exact quantities cannot grow unbounded.

A run amount is text ("1/4", "0.25", "1e-3"): its length and exponent are checked before a Fraction is
built, and a craft may not leave a quantity finer than ``1/MAX_HAND_DENOMINATOR`` in the hand. The
properties: no craft request costs more than a few milliseconds of CPU, a refused craft changes nothing,
and every view of every seat can be built (and printed as JSON) after any sequence of crafts.
"""

from __future__ import annotations

import json
import time
from fractions import Fraction

import pytest
from engine_support import new_game
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from craft_rules.crafting import MAX_HAND_DENOMINATOR, MAX_RUNS, InvalidRunsError, parse_runs
from server.game import Game, GameError
from server.game.views import player_view, researcher_view, spectator_view

#: CPU a single craft request may cost; the refused inputs cost seconds to minutes before the bounds
CRAFT_CPU_LIMIT_SECONDS = 0.05

HOSTILE_RUNS = [
    "1e10000000",
    "1e-10000000",
    "1E+999999",
    "9" * 5000,
    "1/" + "9" * 5000,
    "0." + "0" * 5000 + "1",
    "1" + "_0" * 2000,
    " " * 100_000 + "1",
    "1e" + "9" * 40,
    10**4000,
    -(10**4000),
]


def craft_phase_game() -> Game:
    """Seat 0 passes its proposal, so both seats craft (seat 0 holds 2 oak logs, 1 coal, 3 cobblestone)."""
    game = new_game(first_proposer=0)
    game.apply(0, {"type": "pass"})
    assert game.phase == "craft"
    return game


def every_view_prints(game: Game) -> None:
    for seat in range(game.players):
        json.dumps(player_view(game, seat))
    json.dumps(spectator_view(game))
    json.dumps(researcher_view(game))


@pytest.mark.parametrize("runs", HOSTILE_RUNS, ids=lambda r: f"{str(r)[:12]}...{len(str(r))}")
def test_hostile_run_amounts_are_refused_before_any_big_arithmetic(runs: str | int) -> None:
    started = time.thread_time()
    with pytest.raises(InvalidRunsError):
        parse_runs(runs)
    assert time.thread_time() - started < CRAFT_CPU_LIMIT_SECONDS


def test_ordinary_run_amounts_still_parse() -> None:
    assert parse_runs("1/4") == Fraction(1, 4)
    assert parse_runs("2.5e-1") == Fraction(1, 4)
    assert parse_runs("1e6") == MAX_RUNS
    assert parse_runs(3) == 3
    # " 0.25 ": the one number grammar (craft_rules/number_text.py) takes no spaces
    for refused in ("0", "-1/2", "1e7", "1/1000001", "lots", "1e", "1e+", "1/0", " 0.25 "):
        with pytest.raises(InvalidRunsError):
            parse_runs(refused)


def test_distinct_prime_denominators_are_refused_before_the_hand_grows() -> None:
    """Hundreds of crafts of 1/p used to grow the hand past Python's int->str limit, breaking every view."""
    game = craft_phase_game()
    primes = [p for p in range(1009, 30_000) if all(p % d for d in range(2, int(p**0.5) + 1))][:300]
    refused = 0
    for prime in primes:
        before = game.state_digest()
        try:
            game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": f"1/{prime}"})
        except GameError as err:
            assert err.code == "too_finely_divided", err.to_dict()
            assert game.state_digest() == before  # a refusal changes nothing
            refused += 1
        hand = game.crafting_hand(0)
        assert hand is not None
        assert all(q.denominator <= MAX_HAND_DENOMINATOR for q in hand.values())
    assert refused > 250  # the bound was reached after a few crafts, and held
    every_view_prints(game)
    # the other seat's finish (and the end of the phase) work as usual
    game.apply(1, {"type": "finish_crafting"})
    game.apply(0, {"type": "finish_crafting"})
    every_view_prints(game)


run_texts = st.one_of(
    st.fractions(min_value=Fraction(-5), max_value=Fraction(5), max_denominator=10**7).map(str),
    st.builds(lambda p: f"1/{p}", st.integers(1, 10**7)),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-99, 10**6), st.integers(-(10**9), 10**9)),
    st.decimals(allow_nan=False, allow_infinity=False, places=8).map(str),
    st.text(alphabet="0123456789./eE+-_ ", max_size=60),
    st.text(max_size=80),  # any Unicode: other scripts' digits, full-width forms, controls
    st.integers(-(10**30), 10**30),
)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    crafts=st.lists(
        st.tuples(st.sampled_from(["oak_planks", "stick", "torch", "charcoal"]), run_texts), max_size=40
    )
)
def test_no_craft_request_is_slow_or_breaks_a_later_view(crafts: list[tuple[str, object]]) -> None:
    game = craft_phase_game()
    for recipe, runs in crafts:
        before = game.state_digest()
        started = time.thread_time()
        try:
            game.apply(0, {"type": "craft", "recipe": recipe, "runs": runs})
        except GameError:
            assert game.state_digest() == before
        assert time.thread_time() - started < CRAFT_CPU_LIMIT_SECONDS, (recipe, runs)
    every_view_prints(game)
