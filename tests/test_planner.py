"""The planner: feasibility within one phase, exact step-by-step plans, missing items, depth, possible
crafts, item info, and the `tradecraft craft ...` commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from fractions import Fraction as F

import pytest
from click.testing import CliRunner

from craft_rules import lp
from craft_rules.crafting import craft
from craft_rules.model import RuleSet
from craft_rules.plan_crafts import Plan, PlanStep
from craft_rules.plan_inputs import InvalidQuantityError, UnknownItemError, parse_counts, parse_target
from craft_rules.planner import Planner, planner_for
from tradecraft.cli import main


def replay(rules: RuleSet, hand: Mapping[str, F | int], steps: Sequence[PlanStep]) -> dict[str, F]:
    """Run a plan's steps with exact crafting, one by one, as a player would."""
    current = {k: F(v) for k, v in hand.items()}
    for step in steps:
        current = craft(rules, current, step.recipe_id, step.runs, step.choices, step.fuel).hand
    return current


def holds(hand: Mapping[str, F], target: Mapping[str, int]) -> bool:
    return all(hand.get(item, 0) >= n for item, n in target.items())


def assert_valid(rules: RuleSet, plan: Plan) -> None:
    assert plan.craftable
    final = replay(rules, plan.hand, plan.steps)
    assert final == plan.final_hand
    assert holds(final, plan.target)


# --- worked examples ---------------------------------------------------------------------------------


def test_torch_from_one_plank_and_one_coal(mini: RuleSet) -> None:
    plan = Planner(mini).plan({"planks": 1, "coal": 1}, {"torch": 1})
    assert_valid(mini, plan)
    assert [s.recipe_id for s in plan.steps] == ["stick", "torch"]
    assert [s.runs for s in plan.steps] == [F(1, 16), F(1, 4)]  # 1/8 plank -> 1/4 stick; 1/4 torch run
    assert (plan.depth, plan.craft_steps) == (2, 2)
    assert plan.final_hand == {"planks": F(7, 8), "coal": F(3, 4), "torch": F(1)}
    assert plan.missing == {}


def test_shears_from_raw_iron_and_coal_but_not_without_fuel(mini: RuleSet) -> None:
    planner = Planner(mini)
    plan = planner.plan({"raw_iron": 2, "coal": 1}, {"shears": 1})
    assert_valid(mini, plan)
    assert plan.steps[0].fuel == "coal"
    assert (plan.depth, plan.craft_steps) == (2, 2)

    stuck = planner.plan({"raw_iron": 2}, {"shears": 1})
    assert not stuck.craftable
    assert stuck.steps == ()
    assert stuck.missing is not None and sum(stuck.missing.values()) == 1  # one unit of some fuel
    assert stuck.missing_plan is not None
    assert_valid(mini, stuck.missing_plan)


def test_missing_only_from_what_is_available(mini: RuleSet) -> None:
    planner = Planner(mini)
    # 2 smelts need 400 ticks: one coal does it, sticks would take four
    assert planner.missing({"raw_iron": 2}, {"shears": 1}, available={"stick": 5, "coal": 1}) == {"coal": 1}
    assert planner.missing({"raw_iron": 2}, {"shears": 1}, available={"stick": 5}) == {"stick": 4}
    assert planner.missing({"raw_iron": 2}, {"shears": 1}, available={"stick": 3}) is None
    assert planner.missing({"raw_iron": 2, "coal": 1}, {"shears": 1}) == {}


def test_missing_counts_whole_items_and_prefers_fewest(mini: RuleSet) -> None:
    planner = Planner(mini)
    # 1 iron ingot short: 1 raw iron (the coal covers the smelt) beats anything else
    assert planner.missing({"raw_iron": 1, "coal": 1}, {"shears": 1}, {"raw_iron": 3, "iron_ingot": 3}) in (
        {"raw_iron": 1},
        {"iron_ingot": 1},
    )
    # the target itself is always a way out when nothing else is limited
    found = planner.missing({}, {"iron_block": 1})
    assert found is not None and sum(found.values()) == 1


def test_already_held_target_has_depth_zero(mini: RuleSet) -> None:
    plan = Planner(mini).plan({"torch": 2, "coal": 1}, {"torch": 2})
    assert plan.craftable and plan.steps == () and plan.depth == 0
    assert plan.final_hand == {"torch": F(2), "coal": F(1)}


def test_depth_is_the_longest_chain(mini: RuleSet) -> None:
    plan = Planner(mini).plan({"raw_iron": 9, "coal": 2}, {"iron_block": 1})
    assert_valid(mini, plan)
    assert (plan.depth, plan.craft_steps) == (2, 2)
    plan = Planner(mini).plan({"log_a": 1, "coal": 1}, {"torch": 1})
    assert_valid(mini, plan)
    assert plan.depth == 3  # log -> planks -> stick -> torch


def test_several_targets_at_once(mini: RuleSet) -> None:
    plan = Planner(mini).plan({"raw_iron": 2, "coal": 1, "planks": 1}, {"shears": 1, "torch": 2})
    assert_valid(mini, plan)


def test_unreachable_target_is_not_craftable(mini: RuleSet) -> None:
    planner = Planner(mini)
    assert not planner.can_craft({"coal": 5}, {"shears": 1})
    assert not planner.lp_feasible({"coal": 5}, {"shears": 1})


def test_tag_ingredient_split_over_two_held_options(mini: RuleSet) -> None:
    # 4 planks need a whole log; half of each kind is held, so the run is split in two crafts
    plan = Planner(mini).plan({"log_a": F(1, 2), "log_b": F(1, 2)}, {"planks": 4})
    assert_valid(mini, plan)
    assert sorted(s.choices[0] for s in plan.steps) == ["log_a", "log_b"]
    assert sum(s.runs for s in plan.steps) == 1
    assert plan.final_hand == {"planks": F(4)}


def test_fuel_and_ingredient_from_one_stock(mini: RuleSet) -> None:
    plan = Planner(mini).plan({"log_a": 3}, {"charcoal": 1})
    assert_valid(mini, plan)
    assert plan.final_hand == {"log_a": F(4, 3), "charcoal": F(1)}
    # x smelts need 200x ticks; a log crafted into 4 planks burns 1200: x + x/6 logs in all
    assert Planner(mini).can_craft({"log_a": 4}, {"charcoal": 3})
    assert not Planner(mini).can_craft({"log_a": 3}, {"charcoal": 3})


def test_fuel_cycle_runs_on_the_held_seed_but_never_from_nothing(mini: RuleSet) -> None:
    planner = Planner(mini)
    # 8 logs and 1 charcoal: burn the charcoal to smelt 8 logs into 8 charcoal
    plan = planner.plan({"log_a": 8, "charcoal": 1}, {"charcoal": 8})
    assert_valid(mini, plan)
    # 9 logs alone: with planks as fuel at most 9 * 6/7 < 8 charcoal, and charcoal cannot pay for itself
    assert not planner.can_craft({"log_a": 9}, {"charcoal": 8})


def test_lava_bucket_fuel_leaves_a_bucket_share(mini: RuleSet) -> None:
    plan = Planner(mini).plan({"raw_iron": 10, "lava_bucket": 1}, {"iron_ingot": 10})
    assert_valid(mini, plan)
    assert plan.final_hand["bucket"] == F(1, 10)


def test_plan_as_dict_is_json_ready(mini: RuleSet) -> None:
    data = Planner(mini).plan({"planks": 1, "coal": 1}, {"torch": 1}).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["steps"][0] == {
        "recipe": "stick",
        "runs": "1/16",
        "result": "stick",
        "produced": "1/4",
        "choices": {},
        "fuel": None,
        "depth": 1,
    }
    assert data["craftable"] is True and data["depth"] == 2 and data["craft_steps"] == 2


def test_planner_for_is_cached_per_rule_set(mini: RuleSet) -> None:
    assert planner_for(mini) is planner_for(mini)


def test_one_computation_solves_a_repeated_question_once_and_no_other_caller_shares_it(
    mini: RuleSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    planner = Planner(mini)
    solves = []
    solve = planner.lp.solve
    monkeypatch.setattr(planner.lp, "solve", lambda *a, **k: solves.append(1) or solve(*a, **k))
    hand, target = {"planks": 1, "coal": 1}, {"torch": 1}
    with planner.remembering():
        first = planner.plan(hand, target)
        first.final_hand["torch"] = F(99)  # a caller that edits its answer must not edit the next one
        with planner.remembering():  # a nested block is the same computation
            again = planner.plan(hand, target)
        assert planner.can_craft(hand, target)
    assert len(solves) == 1
    assert_valid(mini, again)
    assert again.steps == first.steps and again.final_hand["torch"] == 1
    # after the block, and in another thread during one, the question is solved afresh: an answer that
    # came back faster because someone else asked it first would tell what they asked
    planner.plan(hand, target)
    assert len(solves) == 2
    with planner.remembering():
        planner.plan(hand, target)
        other = threading.Thread(target=planner.plan, args=(hand, target))
        other.start()
        other.join()
    assert len(solves) == 4


def test_a_private_computation_keeps_its_ancestor_graphs_to_itself(mini: RuleSet) -> None:
    planner = Planner(mini)
    planner.ancestors({"torch": 1})
    shared = planner._ancestors_cached.cache_info()
    with planner.remembering(private=True):
        assert planner.ancestors({"torch": 1}) == planner.graph.ancestors(frozenset({"torch"}), False)
        planner.plan({"planks": 1, "coal": 1}, {"shears": 1})
        with planner.remembering():  # a shared block inside a private one stays private
            planner.ancestors({"stick": 1})
    after = planner._ancestors_cached.cache_info()
    assert (after.hits, after.currsize) == (shared.hits, shared.currsize)


def test_task_validation_solves_each_plan_once(minecraft: RuleSet, monkeypatch: pytest.MonkeyPatch) -> None:
    from craft_rules import taskgen
    from craft_rules.tasks import iter_instances, mode_for_players

    planner = planner_for(minecraft)
    asked: list[tuple[object, ...]] = []
    solve_plan = planner.crafts.solve_plan

    def counted(hand: dict[str, F], need: dict[str, int]) -> object:
        asked.append((tuple(hand.items()), tuple(need.items())))
        return solve_plan(hand, need)

    monkeypatch.setattr(planner.crafts, "solve_plan", counted)
    for instance in list(iter_instances("minecraft", mode_for_players(2)))[:5]:
        assert taskgen.assess_instance(minecraft, instance, planner).valid
    assert asked and len(asked) == len(set(asked))


def test_solves_print_nothing_to_stdout_or_stderr(
    minecraft: RuleSet, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """scipy's HiGHS options keep the solver's logging off: LPs and MILPs (missing items, whole runs,
    smallest sub-hands) print nothing to descriptors 1 and 2, even with the descriptor swap off."""
    monkeypatch.setattr(lp, "SILENCE_SOLVER_STDOUT", False)
    capfd.readouterr()
    for whole in (False, True):
        planner = Planner(minecraft, whole_runs=whole)
        assert planner.plan({"oak_log": 2, "coal": 1}, {"torch": 4}).craftable
        assert planner.missing({"stick": 2}, {"iron_pickaxe": 1}, never=["iron_pickaxe"])
        assert planner.min_units({"torch": 1}, {"coal": 3, "stick": 2, "oak_log": 1}) is not None
        assert planner.fewest_kinds({"stick": 2}, {"iron_pickaxe": 1}, {"iron_ingot": 5, "raw_iron": 3})
    assert capfd.readouterr() == ("", "")


def test_the_descriptor_swap_discards_what_c_code_writes_to_stdout(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What no HiGHS option silences (a bare printf in its MIP solver) is written straight to descriptor
    1; with the swap on (as the command line sets it) none of it reaches the real stdout."""
    monkeypatch.setattr(lp, "SILENCE_SOLVER_STDOUT", True)
    with lp.quiet_solver_stdout():
        os.write(1, b"stray solver line\n")
    os.write(1, b"after\n")
    assert capfd.readouterr().out == "after\n"


# --- possible crafts and item info -----------------------------------------------------------------------


def test_possible_crafts_lists_runnable_recipes_with_max_runs(mini: RuleSet) -> None:
    crafts = {c.recipe_id: c for c in Planner(mini).possible_crafts({"planks": 2, "coal": 1, "stick": 3})}
    assert set(crafts) == {"stick", "torch"}
    assert crafts["stick"].max_runs == 1 and crafts["stick"].max_output == 4
    assert crafts["torch"].max_runs == 1
    smelts = Planner(mini).possible_crafts({"raw_iron": 2, "coal": F(1, 8)})
    assert [(c.recipe_id, c.max_runs) for c in smelts] == [("iron_ingot", 1)]
    assert Planner(mini).possible_crafts({"raw_iron": 2}) == []  # no fuel
    assert Planner(mini).possible_crafts({}) == []


def test_possible_crafts_accept_prefixed_names(minecraft: RuleSet) -> None:
    crafts = planner_for(minecraft).possible_crafts({"minecraft:oak_planks": 2})
    assert "stick" in {c.recipe_id for c in crafts}


def test_item_info(mini: RuleSet) -> None:
    planner = Planner(mini)
    coal = planner.item_info("coal")
    assert coal.made_by == () and coal.used_by == ("torch",)
    assert coal.burn_ticks == 1600 and coal.smelts_per_unit == 8
    log = planner.item_info("log_a")
    assert log.tags == ("logs",) and log.made_by == () and set(log.used_by) == {"planks", "charcoal"}
    lava = planner.item_info("lava_bucket")
    assert lava.fuel_remainder == "bucket" and lava.smelts_per_unit == 100
    ingot = planner.item_info("iron_ingot")
    assert set(ingot.made_by) == {"iron_ingot", "iron_ingot_from_iron_block"}
    assert ingot.as_dict()["fuel"] is None
    with pytest.raises(UnknownItemError) as err:
        planner.item_info("unobtainium")
    assert err.value.code == "unknown_item"


# --- parsing -------------------------------------------------------------------------------------------


def test_parse_counts_and_targets(minecraft: RuleSet) -> None:
    assert parse_counts(minecraft, '{"minecraft:coal": 1, "oak_planks": "1/2"}') == {
        "coal": F(1),
        "oak_planks": F(1, 2),
    }
    assert parse_target(minecraft, {"minecraft:torch": 2}) == {"torch": 2}
    with pytest.raises(UnknownItemError):
        parse_counts(minecraft, '{"unobtainium": 1}')
    for bad in ['{"coal": -1}', '{"coal": "x"}', "[1, 2]", "{not json"]:
        with pytest.raises(InvalidQuantityError):
            parse_counts(minecraft, bad)
    with pytest.raises(InvalidQuantityError):
        parse_target(minecraft, '{"torch": 0.5}')
    with pytest.raises(InvalidQuantityError):
        parse_target(minecraft, "{}")


# --- the shipped minecraft rule set -----------------------------------------------------------------------


def test_minecraft_worked_examples(minecraft: RuleSet) -> None:
    planner = planner_for(minecraft)
    torch = planner.plan({"oak_planks": 1, "coal": 1}, {"torch": 1})
    assert_valid(minecraft, torch)
    assert (torch.depth, torch.craft_steps) == (2, 2)
    shears = planner.plan({"raw_iron": 2, "coal": 1}, {"shears": 1})
    assert_valid(minecraft, shears)
    assert (shears.depth, shears.craft_steps) == (2, 2)
    stuck = planner.plan({"raw_iron": 2}, {"shears": 1})
    assert not stuck.craftable
    assert stuck.missing == {"coal": 1}
    assert stuck.missing_plan is not None
    assert_valid(minecraft, stuck.missing_plan)


def test_minecraft_missing_prefers_the_fewest_items(minecraft: RuleSet) -> None:
    planner = planner_for(minecraft)
    # a crossbow is also a fuel nobody crafts with: obtaining it is still the one-item answer
    assert planner.missing({}, {"crossbow": 1}) == {"crossbow": 1}
    assert planner.missing({"oak_planks": 1}, {"torch": 1}) == {"coal": 1}


def test_minecraft_missing_from_others(minecraft: RuleSet) -> None:
    planner = planner_for(minecraft)
    others = {"iron_ingot": 2, "coal": 3, "dirt": 5}
    assert planner.missing({"stick": 2}, {"iron_pickaxe": 1}, others) is None  # 3 ingots needed
    others["iron_ingot"] = 3
    assert planner.missing({"stick": 2}, {"iron_pickaxe": 1}, others) == {"iron_ingot": 3}


# --- the shipped alchemy rule set ---------------------------------------------------------------------------


def test_alchemy_chain_from_the_four_elements(alchemy: RuleSet) -> None:
    rules = alchemy
    planner = planner_for(rules)
    elements = {item: 4 for item in rules.starting_items}
    for item in sorted(rules.recipes_by_result)[:40]:
        plan = planner.plan(elements, {item: 1}, find_missing=False)
        if plan.craftable:
            assert_valid(rules, plan)
            assert plan.depth >= 1
    one_each = {item: 1 for item in rules.starting_items}
    plan = planner.plan(one_each, {"steam": 1})
    assert_valid(rules, plan)
    assert (plan.depth, plan.craft_steps) == (1, 1)
    # two fires make heat only if two are held: one fire short
    stuck = planner.plan({"fire": 1, "air": 1}, {"heat": 1}, available={"fire": 3})
    assert not stuck.craftable and stuck.missing == {"fire": 1}


# --- the command line --------------------------------------------------------------------------------------


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["craft", *args])
    return result.exit_code, result.output


def test_cli_plan_text_and_json(minecraft: RuleSet) -> None:
    code, out = run_cli(
        "plan",
        "--ruleset",
        "minecraft",
        "--hand",
        '{"oak_planks": 1, "minecraft:coal": 1}',
        "--target",
        '{"torch": 1}',
    )
    assert code == 0
    assert "craftable within one phase: yes (depth 2, 2 craft steps)" in out
    assert "stick x1/16" in out and "torch x1/4" in out
    code, out = run_cli("plan", "--hand", '{"raw_iron": 2}', "--target", '{"shears": 1}', "--json")
    assert code == 0
    data = json.loads(out)
    assert data["craftable"] is False and data["missing"] == {"coal": 1}
    assert data["with_missing"]["depth"] == 2
    code, out = run_cli(
        "plan",
        "--hand",
        '{"raw_iron": 2}',
        "--target",
        '{"shears": 1}',
        "--available",
        '{"stick": 1}',
        "--json",
    )
    assert code == 0 and json.loads(out)["missing"] is None


def test_cli_errors_are_typed(minecraft: RuleSet) -> None:
    code, out = run_cli("plan", "--hand", '{"unobtainium": 1}', "--target", '{"torch": 1}', "--json")
    assert code == 1
    assert json.loads(out)["error"]["code"] == "unknown_item"
    code, out = run_cli("plan", "--hand", "{oops", "--target", '{"torch": 1}')
    assert code == 1 and "[invalid_quantity]" in out
    code, out = run_cli("info", "--ruleset", "no_such_rule_set", "coal", "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "invalid_rule_set"


def test_cli_possible_info_values(minecraft: RuleSet) -> None:
    code, out = run_cli("possible", "--hand", '{"oak_planks": 2, "coal": 1, "stick": 3}', "--json")
    assert code == 0
    crafts = {c["recipe"]: c for c in json.loads(out)["crafts"]}
    assert crafts["torch"]["max_runs"] == "1" and crafts["stick"]["max_output"] == "4"
    code, out = run_cli("info", "coal")
    assert code == 0 and "burns 1600 ticks = 8 smelts" in out
    code, out = run_cli("info", "minecraft:oak_planks", "--json")
    assert code == 0 and "#planks" in json.loads(out)["tags"]
    code, out = run_cli(
        "values",
        "--target",
        '{"torch": 1}',
        "--hands",
        '[{"oak_planks": 1, "coal": 1}, {"dirt": 2}]',
        "--json",
    )
    assert code == 0
    values = {k: v["value"] for k, v in json.loads(out)["values"].items()}
    assert values == {"coal": 10, "oak_planks": 10, "dirt": 0}


_PLAN_DIGEST = """
import hashlib
from collections import Counter
from craft_rules.loader import load_rule_set
from craft_rules.planner import planner_for
from craft_rules.tasks import iter_instances
rules = load_rule_set("minecraft")
digest = hashlib.sha256()
for whole in (False, True):
    planner = planner_for(rules, whole_runs=whole)
    for instance in iter_instances("minecraft", "1p_v_1p"):
        pool = Counter()
        for hand in instance.hands:
            pool.update(hand)
        for target in instance.targets:
            digest.update(repr(planner.plan(dict(pool), target)).encode())
print(digest.hexdigest())
"""


@pytest.mark.slow
def test_plans_do_not_depend_on_the_hash_seed() -> None:
    """Plans (and so bots' crafts and game logs) are the same in every process: the order of craft steps
    once followed the iteration order of a set of strings, which PYTHONHASHSEED changes."""
    digests = set()
    for hash_seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _PLAN_DIGEST], env=env, capture_output=True, text=True, check=True
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1
