"""The crafting tree (server/game/queries.py `crafting_tree`) sends players along routes from the hands:
an item some recipe makes is not "raw", held routes come first, runs are net of what the hands hold, and a
smelting step names its fuel (issue 20, bug c)."""

from __future__ import annotations

from typing import Any

from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance
from server.game import Game, GameSettings
from server.game.queries import run_query

RULES = load_rule_set("minecraft")


def game(hand0: dict[str, int], hand1: dict[str, int] | None = None) -> Game:
    inst = TaskInstance(
        "q/1p_v_1p/tree#0",
        "minecraft",
        "1p_v_1p",
        (hand0, hand1 or {"cobblestone": 1}),
        ({"torch": 1}, {"shears": 1}),
    )
    return Game.new(inst, GameSettings(), RULES, 0)


def tree(g: Game, item: str, count: int = 1, depth: int = 4) -> dict[str, Any]:
    return run_query(g, 0, {"type": "crafting_tree", "item": item, "count": count, "depth": depth})["tree"]


def test_a_made_item_is_not_raw_material() -> None:
    # a hay block is made from 9 wheat: the tree shows that way, not "raw material: trade for it"
    hay = tree(game({"wheat": 9}), "hay_block")
    assert hay.get("stop") != "raw"
    (way,) = hay["recipes"]
    assert way["recipe"] == "hay_block" and way["runs"] == "1"
    assert way["inputs"][0]["item"] == "wheat" and way["inputs"][0]["stop"] == "held"
    # the same when nobody holds wheat: wheat is the raw material, not the hay block
    bare = tree(game({"cobblestone": 1}), "hay_block")
    assert bare.get("stop") != "raw" and bare["recipes"][0]["inputs"][0]["stop"] == "raw"


def test_a_held_block_unpacks() -> None:
    # a hand holds a block of redstone: redstone dust comes from it, not from an ore nobody holds
    dust = tree(game({"redstone_block": 1}), "redstone", count=4)
    first = dust["recipes"][0]
    assert first["recipe"] == "redstone"
    assert first["inputs"][0]["item"] == "redstone_block" and first["inputs"][0]["stop"] == "held"


def test_routes_from_the_hands_come_first() -> None:
    # an oak log is in a hand: sticks via oak planks (made from the log), not via bamboo nobody holds
    sticks = tree(game({"oak_log": 1}), "stick", count=4)
    first = sticks["recipes"][0]
    assert first["recipe"] == "stick"
    (planks,) = first["inputs"]
    assert planks["item"] == "oak_planks"
    assert planks["recipes"][0]["inputs"][0]["item"] == "oak_log"


def test_runs_are_net_of_what_the_hands_hold() -> None:
    # 8 planks wanted, 2 held: the tree makes 6, which is 2 runs of 4 planks (not 2 = ceil(8/4) by luck:
    # 10 wanted with 2 held is 2 runs, not 3)
    planks = tree(game({"oak_planks": 2, "oak_log": 3}), "oak_planks", count=10)
    assert planks["to_make"] == "8"
    assert planks["recipes"][0]["runs"] == "2"
    assert planks["recipes"][0]["inputs"][0]["need"] == "2"


def test_a_smelting_step_names_its_fuel() -> None:
    ingot = tree(game({"raw_iron": 3, "coal": 1}), "iron_ingot", count=3)
    way = next(w for w in ingot["recipes"] if w["recipe"] == "iron_ingot_from_smelting_raw_iron")
    assert way["fuel"]["item"] == "coal" and way["fuel"]["need"] == "3/8" and way["fuel"]["enough"] is True
    # no fuel in any hand: the step still says what it burns (coal) and that the hands lack it
    bare = tree(game({"raw_iron": 3}), "iron_ingot", count=3)
    way = next(w for w in bare["recipes"] if w["recipe"] == "iron_ingot_from_smelting_raw_iron")
    assert way["fuel"]["item"] == "coal" and way["fuel"]["enough"] is False
