"""Task instances: the shipped sets, the validator's reasons, difficulty and the seeded generator."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from craft_rules.loader import load_rule_set
from craft_rules.taskgen import assess_instance, generate_instances, min_trades
from craft_rules.tasks import TaskInstance, get_instance, iter_instances, parse_instance_file
from tradecraft.cli import main as cli


@pytest.fixture(scope="module")
def minecraft():
    return load_rule_set("minecraft")


def instance(hands, targets, mode="1p_v_1p", ruleset="minecraft") -> TaskInstance:
    return TaskInstance("test#0", ruleset, mode, tuple(hands), tuple(targets))


@pytest.mark.parametrize(
    ("ruleset", "mode", "at_least"),
    [("minecraft", "1p_v_1p", 40), ("minecraft", "1p_v_1p_v_1p", 10), ("alchemy", "1p_v_1p", 20)],
)
def test_shipped_sets_are_large_enough_valid_and_spread(ruleset, mode, at_least):
    shipped = list(iter_instances(ruleset, mode))
    assert len(shipped) >= at_least
    assert len({i.id for i in shipped}) == len(shipped), "instance ids must be unique"
    rules = load_rule_set(ruleset)
    levels = Counter()
    for inst in shipped:
        assert inst.players == len(mode.split("_v_"))
        report = assess_instance(rules, inst)
        assert report.valid, (inst.id, report.reasons)
        # the recorded difficulty is what the validator measures now
        assert inst.difficulty == report.difficulty, inst.id
        levels[report.difficulty["level"]] += 1
    assert levels["easy"] and levels["hard"], f"difficulty should spread from easy to hard: {levels}"


def test_instance_lookup_by_id():
    first = next(iter_instances("minecraft", "1p_v_1p"))
    assert get_instance(first.id) == first
    with pytest.raises(KeyError, match="tasks list"):
        get_instance("minecraft/1p_v_1p/standard#9999")


def test_paper_example_is_valid_and_measured(minecraft):
    # appendix A.2 of the paper: shears vs torch
    inst = instance(
        [
            {"cherry_planks": 1, "coal": 1, "iron_ingot": 1, "raw_copper": 1, "cobblestone": 1},
            {"oak_planks": 1, "raw_iron": 5, "cobblestone": 1, "raw_copper": 2},
        ],
        [{"shears": 1}, {"torch": 1}],
    )
    report = assess_instance(minecraft, inst)
    assert report.valid, report.reasons
    shears, torch = report.players
    # shears: 2 iron ingots; player 0 holds one, smelting a raw iron (with its own coal) gives the other
    assert shears.units_from_others == 1 and shears.distinct_from_others == 1
    assert torch.units_from_others == 1  # the coal
    assert torch.depth == 2  # planks -> sticks -> torch
    assert report.difficulty["min_trades"] == 1


@pytest.mark.parametrize(
    ("hands", "targets", "reason"),
    [
        ([{"iron_ingot": 2}, {"stick": 1}], [{"shears": 1}, {"torch": 1}], "from its own hand"),
        ([{"stick": 1}, {"dirt": 1}], [{"diamond_sword": 1}, {"torch": 1}], "pooled hands cannot"),
        ([{"unobtanium": 1}, {"stick": 1}], [{"torch": 1}, {"torch": 1}], "unknown item"),
        ([{"stick": 1}, {"coal": 1}], [{"torch": 1, "stick": 1}, {"torch": 1}], "exactly one item"),
        ([{"stick": 1}, {"coal": 1}], [{"torch": 1}], "targets"),
        ([{"stick": 1}], [{"torch": 1}], "at least two players"),
    ],
)
def test_validator_rejects_with_reasons(minecraft, hands, targets, reason):
    report = assess_instance(minecraft, instance(hands, targets))
    assert not report.valid
    assert any(reason in r for r in report.reasons), report.reasons
    assert report.difficulty == {}


def test_mode_must_fit_the_player_count(minecraft):
    inst = instance([{"stick": 1}, {"coal": 1}], [{"torch": 1}, {"torch": 1}], mode="1p_v_1p_v_1p")
    report = assess_instance(minecraft, inst)
    assert any("does not fit" in r for r in report.reasons)


def test_min_trades_is_a_set_cover_over_partners():
    partners = {1: {"coal": 1, "stick": 2}, 2: {"iron_ingot": 3}, 3: {"coal": 1, "iron_ingot": 1}}
    assert min_trades([], partners) == 0
    assert min_trades(["coal"], partners) == 1
    assert min_trades(["coal", "iron_ingot"], partners) == 1  # partner 3 alone
    assert min_trades(["stick", "iron_ingot"], partners) == 2


@pytest.mark.parametrize(("ruleset", "players"), [("minecraft", 2), ("minecraft", 3), ("alchemy", 2)])
def test_generator_is_seeded_valid_and_reproducible(ruleset, players):
    rules = load_rule_set(ruleset)
    first = generate_instances(rules, players, count=6, seed=11)
    again = generate_instances(rules, players, count=6, seed=11)
    other = generate_instances(rules, players, count=6, seed=12)
    assert [i.to_json() for i in first] == [i.to_json() for i in again]
    assert [i.to_json() for i in first] != [i.to_json() for i in other]
    for inst in first:
        assert inst.players == players
        assert assess_instance(rules, inst).valid


def test_generated_file_round_trips_through_the_paper_format(tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "minecraft" / "1p_v_1p" / "mine.json"
    result = runner.invoke(
        cli, ["tasks", "generate", "--ruleset", "minecraft", "--count", "3", "--seed", "5", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    raw = json.loads(out.read_text())
    assert isinstance(raw, list) and len(raw) == 3
    assert all(k.startswith("minecraft:") for rec in raw for hand in rec["hands"] for k in hand)
    parsed = parse_instance_file(out, "minecraft", "1p_v_1p", prefix="minecraft:")
    assert [p.id for p in parsed] == [f"minecraft/1p_v_1p/mine#{i}" for i in range(3)]

    result = runner.invoke(cli, ["tasks", "validate", "--json", str(out)])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert [r["valid"] for r in records] == [True] * 3
    assert {"id", "ruleset", "mode", "valid", "reasons", "difficulty"} <= records[0].keys()


def test_validate_cli_fails_on_an_invalid_file(tmp_path: Path):
    bad = tmp_path / "minecraft" / "1p_v_1p" / "bad.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        json.dumps(
            [
                {
                    "hands": [{"minecraft:iron_ingot": 2}, {}],
                    "targets": [{"minecraft:shears": 1}, {"minecraft:stick": 1}],
                }
            ]
        )
    )
    result = CliRunner().invoke(cli, ["tasks", "validate", "--json", str(bad)])
    assert result.exit_code == 1
    (record,) = json.loads(result.output)
    assert record["valid"] is False
    assert any("own hand" in r for r in record["reasons"])


def test_malformed_instance_file_names_the_file(tmp_path: Path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"hands": [{"stick": 1}], "targets": []}]')
    result = CliRunner().invoke(
        cli, ["tasks", "validate", "--ruleset", "minecraft", "--mode", "1p_v_1p", str(bad)]
    )
    assert result.exit_code != 0
    assert "broken.json" in result.output
