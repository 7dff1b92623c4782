"""The compact value report's items (craft_rules/report_items.py, game setting tom_report_items: compact):
exactly the items some recipe the pooled hands can run would use, fuels only when something cooks, every
item when none qualifies; the engine asks for those and accepts a report over them."""

from __future__ import annotations

from engine_support import TWO_PLAYER, new_game, small_rules

from craft_rules.loader import load_rule_set
from craft_rules.report_items import compact_report_items


def test_an_item_no_runnable_recipe_uses_is_left_out() -> None:
    rules = small_rules()
    items = {i for hand in TWO_PLAYER.hands for i in hand}
    # a diamond goes into no recipe of the small rules; everything else is on some route
    assert compact_report_items(rules, items) == sorted(items - {"diamond"})


def test_cooking_counts_only_when_something_can_burn() -> None:
    rules = small_rules()
    # raw iron only smelts: with no fuel on the table it can go nowhere, and neither can the diamond
    assert compact_report_items(rules, ["raw_iron", "diamond", "cobblestone"]) == ["cobblestone"]
    # a stick burns: now raw iron smelts (and the stick is kept as a fuel)
    assert compact_report_items(rules, ["raw_iron", "diamond", "stick"]) == ["raw_iron", "stick"]


def test_every_item_when_none_qualifies() -> None:
    assert compact_report_items(small_rules(), ["diamond", "torch"]) == ["diamond", "torch"]


def test_minecraft_dead_ends_are_left_out() -> None:
    rules = load_rule_set("minecraft")
    # logs make planks, sticks, and with a diamond tools; an egg alone makes nothing (a cake needs more)
    assert compact_report_items(rules, ["oak_log", "egg", "diamond"]) == ["diamond", "oak_log"]


def test_the_engine_asks_the_compact_items_and_takes_a_report_over_them() -> None:
    full = new_game(tom_orders=[[0, 1], [0]])
    compact = new_game(tom_orders=[[0, 1], [0]], tom_report_items="compact")
    assert "diamond" in full.tom_items
    items = compact.tom_items
    assert items == sorted({i for hand in TWO_PLAYER.hands for i in hand} - {"diamond"})
    compact.apply(
        0, {"type": "report_tom", "v0": dict.fromkeys(items, 5), "v1": {"1": dict.fromkeys(items, 3)}}
    )
    reported = [e for e in compact.events if e.type == "tom_reported"]
    assert reported and set(reported[0].payload["v0"]) == set(items)
