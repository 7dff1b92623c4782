"""check_against_view judges a seat's action over its player view exactly as Game.apply judges it: the same
refusal (code, message, details) or none, in every phase, with two and three players and ToM duties."""

from __future__ import annotations

import random
from typing import Any

import pytest
from engine_support import THREE_PLAYER, TWO_PLAYER, new_game, random_move

from server.game import Game, GameError, parse_action
from server.game.checks import ACTION_PHASES, check_against_view
from server.game.views import player_view

ITEMS = ("coal", "stick", "oak_log", "cobblestone", "raw_iron", "diamond", "torch", "egg", "minecraft:coal")


def _judged(judge: Any) -> dict[str, Any] | None:
    try:
        judge()
    except GameError as err:
        return err.to_dict()
    return None


def _bundle(rng: random.Random) -> dict[str, int]:
    return {item: rng.choice((1, 1, 2, 5)) for item in rng.sample(ITEMS, rng.choice((0, 1, 1, 2)))}


def _values(rng: random.Random, items: list[str]) -> dict[str, int]:
    chosen = [i for i in items if rng.random() < 0.9] + (["egg"] if rng.random() < 0.1 else [])
    return {item: rng.randint(0, 10) for item in chosen}


def _candidate(game: Game, seat: int, rng: random.Random) -> dict[str, Any]:
    """A move of ``seat`` that is often illegal in one way or another (or another seat's legal move)."""
    view = player_view(game, seat)
    now = [kind for kind, phase in ACTION_PHASES.items() if phase == game.phase]
    kind = rng.choice(now if now and rng.random() < 0.8 else list(ACTION_PHASES))
    if rng.random() < 0.02:  # what only the system sends
        return {"type": "timeout"}
    if rng.random() < 0.004:  # leaving the game
        return {"type": "resign"}
    long = "x" * (view["rules"]["message_max_chars"] + 1)
    if kind == "report_tom":
        items = sorted({i for hand in view["hands"] for i in hand})
        seats = [str(s) for s in range(game.players) if s != seat and rng.random() < 0.9]
        report: dict[str, Any] = {"type": kind, "v0": _values(rng, items)}
        for name in ("v1", "v2"):
            if rng.random() < 0.6:
                report[name] = {s: _values(rng, items) for s in seats + (["7"] if rng.random() < 0.1 else [])}
        return report
    if kind == "propose":
        to = rng.choice([*range(game.players), game.players])
        return {
            "type": kind,
            "to": to,
            "offer": _bundle(rng),
            "request": _bundle(rng),
            "message": long if rng.random() < 0.1 else "",
        }
    if kind == "decide":
        return {"type": kind, "accept": rng.random() < 0.7, "message": long if rng.random() < 0.1 else ""}
    if kind == "craft":
        craft: dict[str, Any] = {
            "type": kind,
            "recipe": rng.choice([*sorted(game.rules.recipes), "cake"]),
            "runs": rng.choice(("1", "1/2", 2, "0.3", "1000")),
        }
        if rng.random() < 0.2:
            craft["fuel"] = rng.choice(("coal", "stick", "egg"))
        return craft
    return {"type": kind}


@pytest.mark.parametrize(
    ("instance", "tom_orders", "seed"),
    [
        (TWO_PLAYER, [[0, 1, 2], [0]], 1),
        (TWO_PLAYER, [], 2),
        (THREE_PLAYER, [[0, 1], [0, 1, 2], []], 3),
        (THREE_PLAYER, [], 4),
    ],
)
def test_the_view_check_and_the_engine_refuse_alike(instance: Any, tom_orders: list[Any], seed: int) -> None:
    rng = random.Random(seed)
    refused = allowed = 0
    for game_no in range(8):
        game = new_game(
            instance, seed=game_no, max_turns=6, tom_orders=tom_orders, allow_pass=game_no % 2 == 0
        )
        while not game.finished:
            awaited = sorted(game.waiting_for())
            seat = rng.choice(awaited) if awaited and rng.random() < 0.7 else rng.randrange(game.players)
            view = player_view(game, seat)
            if view["phase"] == "trade":  # a third party to a trade is not told the real phase
                seat = sorted(game.waiting_for())[0]
                view = player_view(game, seat)
            action = parse_action(_candidate(game, seat, rng))
            by_view = _judged(lambda: check_against_view(view, action, game.rules))  # noqa: B023
            by_engine = _judged(lambda: game.apply(seat, action))  # noqa: B023
            assert by_view == by_engine, (action, view)
            if by_engine is None:
                allowed += 1
            else:
                refused += 1
                awaited = sorted(game.waiting_for())
                if awaited and rng.random() < 0.5:  # keep the game moving
                    mover = rng.choice(awaited)
                    game.apply(mover, random_move(game, mover, rng))
    assert refused > 100 and allowed > 100  # both outcomes are well exercised


def refusals_of(game: Any, view: dict[str, Any], action: Any) -> dict[str, Any]:
    """Seat 0's refusal of ``action`` as judged from its view, checked equal to the engine's own."""
    with pytest.raises(GameError) as by_view:
        check_against_view(view, action, game.rules)
    with pytest.raises(GameError) as by_engine:
        game.apply(0, action)
    assert by_view.value.to_dict() == by_engine.value.to_dict()
    return by_view.value.to_dict()


def test_a_bad_proposal_and_a_bad_tom_report_get_byte_identical_errors() -> None:
    game = new_game(TWO_PLAYER, tom_orders=[[0, 1], []])
    view = player_view(game, 0)
    items = view["tom"]["items"]
    bad_report = parse_action(
        {"type": "report_tom", "v0": dict.fromkeys(items, 5), "v1": {"2": dict.fromkeys(items, 5)}}
    )
    assert refusals_of(game, view, bad_report) == {
        "code": "invalid_tom_report",
        "message": "v1 must hold one value dict per opponent, keyed by seat: ['1']; got ['2'].",
        "details": {"field": "v1", "expected_seats": ["1"], "got": ["2"]},
    }
    game.apply(0, {"type": "report_tom", "v0": dict.fromkeys(items, 5), "v1": {"1": dict.fromkeys(items, 5)}})
    view = player_view(game, 0)
    asks_too_much = parse_action({"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {"stick": 3}})
    assert refusals_of(game, view, asks_too_much) == {
        "code": "item_not_held",
        "message": "The request names 3 stick but seat 1 holds 2; request only items that player holds.",
        "details": {"side": "request", "seat": 1, "item": "stick", "wanted": 3, "held": 2},
    }
