"""Shared helpers for the engine tests: a small rule set, task instances and a random player.

The small rule set is written here, in code, so every engine test runs without shipped data; the
property tests additionally play the shipped rule sets and instances when they exist.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

from craft_rules.model import FuelTable, Ingredient, ItemInfo, Recipe, RecipeType, RuleSet
from craft_rules.tasks import TaskInstance
from server.game import Game, GameError, GameSettings
from server.game.legal import legal_actions, possible_crafts, random_proposal

PLANKS = ("birch_planks", "oak_planks")


def _ing(*options: str, count: int = 1, source: tuple[str, ...] | None = None) -> Ingredient:
    return Ingredient(tuple(sorted(options)), count, source or tuple(options))


def _recipe(rid: str, kind: RecipeType, result: str, count: int, *ings: Ingredient) -> Recipe:
    return Recipe(rid, kind, tuple(ings), result, count)


def small_rules() -> RuleSet:
    """A dozen items, shaped/shapeless/smelting recipes, a tag and fuels: enough to hit every rule."""
    shaped, shapeless, smelting = (
        RecipeType.CRAFTING_SHAPED,
        RecipeType.CRAFTING_SHAPELESS,
        RecipeType.SMELTING,
    )
    recipes = [
        _recipe("oak_planks", shapeless, "oak_planks", 4, _ing("oak_log")),
        _recipe("birch_planks", shapeless, "birch_planks", 4, _ing("birch_log")),
        _recipe("stick", shaped, "stick", 4, _ing(*PLANKS, count=2, source=("#planks",))),
        _recipe("torch", shaped, "torch", 4, _ing("coal", "charcoal"), _ing("stick")),
        _recipe("crafting_table", shaped, "crafting_table", 1, _ing(*PLANKS, count=4, source=("#planks",))),
        _recipe(
            "wooden_pickaxe",
            shaped,
            "wooden_pickaxe",
            1,
            _ing(*PLANKS, count=3, source=("#planks",)),
            _ing("stick", count=2),
        ),
        _recipe("furnace", shaped, "furnace", 1, _ing("cobblestone", count=8)),
        _recipe("shears", shaped, "shears", 1, _ing("iron_ingot", count=2)),
        _recipe("iron_ingot", smelting, "iron_ingot", 1, _ing("raw_iron")),
        _recipe("charcoal", smelting, "charcoal", 1, _ing("oak_log", "birch_log")),
        _recipe("stone", smelting, "stone", 1, _ing("cobblestone")),
    ]
    items = {
        i: ItemInfo(i, i.replace("_", " ").capitalize())
        for i in sorted(
            {
                "oak_log",
                "birch_log",
                "oak_planks",
                "birch_planks",
                "stick",
                "coal",
                "charcoal",
                "torch",
                "crafting_table",
                "wooden_pickaxe",
                "cobblestone",
                "furnace",
                "stone",
                "raw_iron",
                "iron_ingot",
                "shears",
                "diamond",
            }
        )
    }
    fuels = FuelTable(
        burn_ticks={
            "coal": 1600,
            "charcoal": 1600,
            "oak_log": 300,
            "birch_log": 300,
            "oak_planks": 300,
            "birch_planks": 300,
            "stick": 100,
        },
        remainders={},
    )
    return RuleSet(
        name="small",
        prefix="small:",
        items=items,
        recipes={r.id: r for r in recipes},
        tags={"planks": frozenset(PLANKS), "logs": frozenset({"oak_log", "birch_log"})},
        fuels=fuels,
    )


def instance(hands: list[dict[str, int]], targets: list[dict[str, int]], name: str = "t#0") -> TaskInstance:
    mode = "_v_".join(["1p"] * len(hands))
    return TaskInstance(f"small/{mode}/{name}", "small", mode, tuple(hands), tuple(targets))


TWO_PLAYER = instance(
    [
        {"oak_log": 2, "coal": 1, "cobblestone": 3, "raw_iron": 1},
        {"birch_log": 1, "raw_iron": 2, "stick": 2, "diamond": 1},
    ],
    [{"torch": 4}, {"shears": 1}],
    "two#0",
)

THREE_PLAYER = instance(
    [
        {"oak_log": 2, "coal": 1},
        {"raw_iron": 2, "stick": 1, "cobblestone": 4},
        {"birch_log": 1, "cobblestone": 4, "diamond": 2},
    ],
    [{"torch": 2}, {"shears": 1}, {"furnace": 1}],
    "three#0",
)


def new_game(
    inst: TaskInstance = TWO_PLAYER, seed: int = 0, rules: RuleSet | None = None, **settings: Any
) -> Game:
    settings.setdefault("ruleset", "small")
    return Game.new(inst, GameSettings(**settings), rules or small_rules(), seed)


def replayed(game: Game) -> Game:
    records = [e.to_dict() for e in game.events]
    return Game.replay(game.instance, game.settings, game.rules, game.seed, records)


def expect_error(game: Game, actor: int | None, action: dict[str, Any], code: str) -> GameError:
    """Apply an illegal action: assert the typed error and that nothing changed."""
    before = game.state_digest()
    events = len(game.events)
    with pytest.raises(GameError) as caught:
        game.apply(actor, action)
    assert caught.value.code == code, caught.value.to_dict()
    assert caught.value.message and caught.value.message[-1] in ".?!"
    assert game.state_digest() == before
    assert len(game.events) == events
    return caught.value


# --- a random player for property tests and benches ------------------------------------------------
def random_values(items: list[str], rng: random.Random) -> dict[str, int]:
    return {item: rng.randint(0, 10) for item in items}


def random_action(game: Game, seat: int, rng: random.Random) -> dict[str, Any] | None:
    """A random *legal* action for ``seat`` (None when it has nothing to do but resign)."""
    legal = [t for t in legal_actions(game, seat) if t != "resign"]
    if not legal:
        return None
    kind = rng.choice(legal)
    if kind == "report_tom":
        items = game.tom_items
        opponents = [str(s) for s in game.active_seats if s != seat]
        orders = game.tom_orders(seat)
        report: dict[str, Any] = {"type": "report_tom", "v0": random_values(items, rng)}
        for order in (1, 2):
            if order in orders:
                report[f"v{order}"] = {o: random_values(items, rng) for o in opponents}
        return report
    if kind == "propose":
        proposal = random_proposal(game, seat, rng)
        assert proposal is not None
        return {**proposal.model_dump(), "message": f"m{rng.randrange(10**9)}"}
    if kind == "pass":
        return {"type": "pass"}
    if kind == "decide":
        return {"type": "decide", "accept": rng.random() < 0.6, "message": f"r{rng.randrange(10**9)}"}
    if kind == "craft":
        options = possible_crafts(game, seat)
        pick = rng.choice(options)
        runs = Fraction(pick["max_runs"]) * rng.choice([Fraction(1), Fraction(1, 2), Fraction(1, 4)])
        return {"type": "craft", "recipe": pick["recipe"], "runs": str(runs)}
    return {"type": kind}


def play_random(game: Game, rng: random.Random, max_actions: int = 10_000) -> Iterator[dict[str, Any]]:
    """Play until the game ends, yielding each applied step; craft phases end after a few crafts."""
    for _ in range(max_actions):
        if game.finished:
            return
        awaited = sorted(game.waiting_for())
        seat = rng.choice(awaited)
        action = random_action(game, seat, rng)
        if action is None or (action["type"] == "craft" and rng.random() < 0.3):
            action = {"type": "finish_crafting"} if game.phase == "craft" else action
        assert action is not None, (game.phase, seat, legal_actions(game, seat))
        game.apply(seat, action)
        yield {"seat": seat, "action": action}


def test_small_rules_are_consistent() -> None:
    rules = small_rules()
    for recipe in rules.recipes.values():
        assert recipe.result in rules.items
        for ing in recipe.ingredients:
            assert set(ing.options) <= set(rules.items)
    assert set(rules.fuels.burn_ticks) <= set(rules.items)
