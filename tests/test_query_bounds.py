"""Every query's CPU cost is bounded before the work starts (issue 18, item 8). A client chooses the item
and the count, not the hand: the hands here are a shipped task instance's (one seat's, the others the other
seats'), and all of an instance's items in one hand (the most trades can gather). The known-worst queries
(the issue's three at 64, 0.4-2.5 s before, and the worst bench/bench_query_cost.py found) stay under a CPU
bound; where the search for what is missing is over the size limit the answer says so (``approximate``:
verified to craft, not proven the fewest; ``unknown``: null), and an exhausted CPU backstop answers the
typed ``query_too_expensive``, never an answer cut short."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from craft_rules import budget
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.planner import planner_for
from craft_rules.tasks import get_instance
from server.game.errors import ERROR_CODES, GameError
from server.game.queries import QueryContext, answer_query, parse_query

# generous for a loaded 2-core machine; the goal is 100 ms
CPU_BOUND_MS = 250.0
DUEL = "minecraft/1p_v_1p/standard#0"
TRIO = "minecraft/1p_v_1p_v_1p/standard#0"


def _hands(instance_id: str, seat: int | None) -> tuple[dict[str, int], dict[str, int]]:
    """(own hand, the others' pooled hands): one seat's, or (seat None) everything in one hand."""
    instance = get_instance(instance_id)
    own: dict[str, int] = {}
    others: dict[str, int] = {}
    for index, hand in enumerate(instance.hands):
        pool = own if seat is None or index == seat else others
        for item, count in hand.items():
            pool[item] = pool.get(item, 0) + count
    return own, others


def _context(rules: RuleSet, hand: dict[str, int], others: dict[str, int], whole: bool) -> QueryContext:
    return QueryContext(
        rules=rules,
        seat=0,
        players=2,
        public_hands=(dict(hand), dict(others)),
        own_hand={item: Fraction(n) for item, n in hand.items()},
        own_hand_kind="crafting",
        target={"stick": 1},
        whole_runs=whole,
    )


WORST = [
    # the three at 64, with a real seat's hand and with all of the instance's items in one hand
    *(
        (item, DUEL, seat, count, whole)
        for item in ("grindstone", "detector_rail", "powered_rail")
        for seat in (0, None)
        for count in (64,)
        for whole in (False, True)
    ),
    # the worst real-hand queries before this bound (0.45-5.4 s each, found with bench_query_cost.py)
    ("golden_pickaxe", "minecraft/1p_v_1p/paper#5", 0, 64, True),
    ("light_gray_carpet", "minecraft/1p_v_1p/paper#5", None, 1, True),
    ("iron_pickaxe", "minecraft/1p_v_1p/standard#32", None, 64, False),
    ("birch_fence", "minecraft/1p_v_1p/paper#37", 0, 64, True),
    ("cyan_carpet", TRIO, 1, 64, True),
    # the worst after it (46 ms; 12 ms before, exact: see the report of bench_query_cost.py)
    ("blue_stained_glass_pane", TRIO, None, 64, True),
]


@pytest.mark.parametrize(("item", "instance_id", "seat", "count", "whole"), WORST)
def test_the_worst_real_queries_stay_under_a_cpu_bound(
    item: str, instance_id: str, seat: int | None, count: int, whole: bool
) -> None:
    rules = load_rule_set("minecraft")
    hand, others = _hands(instance_id, seat)
    ctx = _context(rules, hand, others, whole)
    planner = planner_for(rules, whole_runs=whole)
    # a server's one-time work (the solver's imports, the graph's indexes), outside the bound
    answer_query(ctx, parse_query({"type": "craftable", "item": "stick", "count": 1}))
    query = parse_query({"type": "craftable", "item": item, "count": count})
    start = time.process_time()
    answer = answer_query(ctx, query)
    cpu_ms = (time.process_time() - start) * 1000
    print(
        f"craftable {count} {item} ({instance_id} {'all' if seat is None else f'seat {seat}'}, "
        f"{'whole' if whole else 'rational'}): {cpu_ms:.0f} ms, craftable {answer['craftable']}, "
        f"missing {answer['missing']}, marked {answer.get('unknown', {})} {answer.get('approximate', {})}"
    )
    assert cpu_ms < CPU_BOUND_MS
    # craftability is exact; a field over the size limit is null and marked unknown, or verified
    # and marked approximate
    assert answer["craftable"] is planner.can_craft(hand, {item: count})
    for field in ("missing", "missing_from_others"):
        if field in answer.get("unknown", {}):
            assert answer[field] is None
    if answer["missing"]:
        with_missing = {i: hand.get(i, 0) + answer["missing"].get(i, 0) for i in {*hand, *answer["missing"]}}
        assert planner.can_craft(with_missing, {item: count})
    assert answer_query(ctx, query) == answer  # decided by the question's size, not by the clock


def test_an_exhausted_budget_answers_the_typed_error_never_a_cut_answer() -> None:
    rules = load_rule_set("minecraft")
    hand, others = _hands(DUEL, 0)
    ctx = _context(rules, hand, others, False)
    query = parse_query({"type": "craftable", "item": "grindstone", "count": 2})
    full = answer_query(ctx, query, cpu_budget_ms=60_000)
    assert full == answer_query(ctx, query)  # the default budget changes no answer it can give
    with pytest.raises(GameError) as raised:
        answer_query(ctx, query, cpu_budget_ms=0.001)
    assert raised.value.code == "query_too_expensive"
    assert raised.value.code in ERROR_CODES
    assert "fewer units" in raised.value.message
    # the budget applies to planner work only: queries that plan nothing answer under any budget
    info = answer_query(ctx, parse_query({"type": "item_info", "item": "grindstone"}), cpu_budget_ms=0.001)
    assert info["item"] == "grindstone"


def test_a_check_too_big_to_run_is_not_remembered_as_a_failed_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside one query, a relaxed answer's check over its size bound answers "no plan" — only for that check:
    a later exact question about the same hand must still find the plan (it was memoised as impossible)."""
    planner = planner_for(load_rule_set("minecraft"), whole_runs=True)
    hand, need = {"oak_log": Fraction(4)}, {"stick": 4}
    monkeypatch.setattr(budget, "RELAXED_CHECK_MAX_INTEGER_COLUMNS", 0)  # every check is too big
    with planner.remembering(private=True), budget.exact_search_limit(20):
        with budget.relaxed_check():
            assert planner._find_plan(dict(hand), dict(need)) is None
        assert planner._find_plan(dict(hand), dict(need)) is not None
