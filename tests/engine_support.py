"""Shared helpers for the engine tests: a small rule set, task instances, a random player and the worlds of
the property tests.

The small rule set is written here, in code, so every engine test runs without shipped data; the
property tests additionally play the shipped rule sets and instances when they exist.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from suite_support import SHIPPED_RULE_SETS, shipped_rule_set

from agents.bots.random_bot import RandomBot
from craft_rules.model import FuelTable, Ingredient, ItemInfo, Recipe, RecipeType, RuleSet
from craft_rules.tasks import TaskInstance, iter_instances, mode_for_players
from server.game import Game, GameError, GameSettings
from server.game.legal import legal_actions
from server.game.views import player_view

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


# --- random play for property tests ----------------------------------------------------------------
def random_move(game: Game, seat: int, rng: random.Random) -> dict[str, Any]:
    """A legal action of ``seat`` from the one random policy, the random bot, seeded from ``rng``.

    The bot sees what a remote player sees (view and legal action types); ``rules`` is handed over
    because the property tests' rule sets are not installed ones.
    """
    bot = RandomBot(rng.getrandbits(63), rules=game.rules)
    return bot.act(player_view(game, seat), legal_actions(game, seat))


def play_random(game: Game, rng: random.Random, max_actions: int = 10_000) -> Iterator[dict[str, Any]]:
    """Play random legal actions until the game ends, yielding each applied step."""
    for _ in range(max_actions):
        if game.finished:
            return
        seat = rng.choice(sorted(game.waiting_for()))
        action = random_move(game, seat, rng)
        game.apply(seat, action)
        yield {"seat": seat, "action": action}


# --- worlds: (rule set, instances) ---------------------------------------------------------------
def drawn_instances(rules: RuleSet, players: int, count: int, seed: int) -> list[TaskInstance]:
    """Instances from recipes: each target is a recipe result, its ingredients spread over the hands."""
    rng = random.Random(seed)
    recipes = sorted(rules.recipes.values(), key=lambda r: r.id)
    mode = mode_for_players(players)
    out = []
    for index in range(count):
        hands: list[dict[str, int]] = [{} for _ in range(players)]
        targets = []
        for _ in range(players):
            recipe = rng.choice(recipes)
            targets.append({recipe.result: recipe.count})
            for ing in recipe.ingredients:
                item = rng.choice(ing.options)
                holder = hands[rng.randrange(players)]
                holder[item] = holder.get(item, 0) + ing.count * rng.randint(1, 2)
            if recipe.burns_fuel and rules.fuels.burn_ticks:
                fuel = rng.choice(sorted(rules.fuels.burn_ticks))
                hands[rng.randrange(players)][fuel] = rng.randint(1, 3)
        out.append(
            TaskInstance(f"{rules.name}/{mode}/drawn#{index}", rules.name, mode, tuple(hands), tuple(targets))
        )
    return out


def property_worlds() -> list[tuple[RuleSet, TaskInstance]]:
    """The small rule set and every shipped one, each with two- and three-player instances (shipped ones,
    else drawn from its recipes): the worlds the engine property tests play."""
    small = small_rules()
    worlds = [(small, TWO_PLAYER), (small, THREE_PLAYER)]
    worlds += [(small, inst) for p in (2, 3) for inst in drawn_instances(small, p, 4, p)]
    for name in SHIPPED_RULE_SETS:  # what the package ships, never what this machine imported
        rules = shipped_rule_set(name)
        for players in (2, 3):
            shipped = list(iter_instances(name, mode_for_players(players)))[:20]
            worlds += [(rules, inst) for inst in shipped or drawn_instances(rules, players, 8, players)]
    return worlds
