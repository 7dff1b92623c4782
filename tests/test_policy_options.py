"""Every policy declares its options once (a bounded pydantic model); one parse step refuses a bad option with
a typed error that names it, and `tradecraft bots` shows every option, generated from the models."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agents.bot_cli import bots_command
from agents.bots.registry import (
    PolicyOptions,
    PolicySpecError,
    describe_options,
    load_factory,
    make_policy,
    option_names,
    options_model,
    parse_options,
    parse_policy_spec,
)
from agents.cli import play_command
from tradecraft.cli import main

ROOT = Path(__file__).resolve().parents[1]
ENTRY_POINTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "entry-points"
]["tradecraft.policies"]
POLICIES = sorted(ENTRY_POINTS)


@pytest.fixture(autouse=True)
def _provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """``llm:openai:...`` builds its client only with a key (a fake one: nothing is called here)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _model(name: str) -> type[PolicyOptions]:
    model, declared = options_model(load_factory(name))
    assert declared, f"{name} declares no options model"
    return model


def _head(name: str) -> str:
    return "llm:openai:gpt-4o-mini" if name == "llm" else name


@pytest.mark.parametrize("name", POLICIES)
def test_every_policy_declares_a_closed_options_model(name: str) -> None:
    model = _model(name)
    assert model.model_config["extra"] == "forbid" and model.model_config["allow_inf_nan"] is False
    for info in describe_options(model):  # bounded: numbers have both bounds, text a length limit
        kind = next(b for b in info.schema.get("anyOf", [info.schema]) if b.get("type") != "null")
        if kind.get("type") in ("integer", "number"):
            assert {"minimum", "maximum"} <= set(kind), (name, info.names)
        elif kind.get("type") == "string" and "enum" not in kind:
            assert "maxLength" in kind, (name, info.names)


# policy -> [(spec, the option refused or None when accepted, what the built policy holds)]
TABLE: dict[str, list[tuple[str, str | None, dict[str, Any]]]] = {
    "random": [
        ("random?accept_probability=0.9&max_crafts=2", None, {"accept_probability": 0.9, "max_crafts": 2}),
        ("random?accept_probability=1.5", "accept_probability", {}),  # out of range
        ("random?max_crafts=2.5", "max_crafts", {}),  # not a whole number
        ("random?pass_probability=often", "pass_probability", {}),  # not a number
        ("random?finish_probability=nan", "finish_probability", {}),
    ],
    "tom1": [
        (
            "tom1?lambda=0.25&belief_key=offer&candidates=10",
            None,
            {"learning_speed": 0.25, "max_candidates": 10},
        ),
        ("tom1?learning_speed=0.3", None, {"learning_speed": 0.3}),
        ("tom1?race=11", "race", {}),
        ("tom1?belief_key=colour", "belief_key", {}),
        ("tom1?top_targets=six", "top_targets", {}),
        ("tom1?lambda=0.2&learning_speed=0.3", "learning_speed", {}),  # one option by two names
    ],
    "planner": [
        ("planner?accept=gain", None, {"accept_rule": "gain"}),
        ("planner?accept=always", "accept", {}),
    ],
    "fixed_offer": [
        (
            "fixed_offer?offer=oak_log:2,stick&request=stick:1",
            None,
            {"fixed": ((("oak_log", 2), ("stick", 1)), (("stick", 1),))},
        ),
        ("fixed_offer?offer=oak_log:x", "offer", {}),
        ("fixed_offer?request=oak_log:0", "request", {}),
    ],
    "item_fixated": [
        ("item_fixated?item=minecraft:oak_log", None, {"item": "minecraft:oak_log"}),
        ("item_fixated?item=oak-log", "item", {}),
        ("item_fixated?item=" + "x" * 101, "item", {}),
    ],
    "llm": [
        ("llm:openai:gpt-4o-mini?tom=0,1&cot=true&strict=0", None, {"model_name": "openai:gpt-4o-mini"}),
        ("llm:openai:gpt-4o-mini?temperature=2.5", "temperature", {}),
        ("llm:openai:gpt-4o-mini?max_invalid=0", "max_invalid", {}),
        ("llm:openai:gpt-4o-mini?strict=yes", "strict", {}),
        ("llm:openai:?tom=0", "model_spec", {}),
        ("llm?tom=0", "model_spec", {}),  # no model named
    ],
    "always_accept": [("always_accept", None, {}), ("always_accept:some-model", "model_spec", {})],
}


@pytest.mark.parametrize(
    ("spec", "refused", "holds"), [row for rows in TABLE.values() for row in rows], ids=lambda v: str(v)[:60]
)
def test_the_table_of_specs_is_built_or_refused_with_the_option_named(
    spec: str, refused: str | None, holds: dict[str, Any]
) -> None:
    if refused is None:
        policy = make_policy(spec, 1)
        assert {k: getattr(policy, k) for k in holds} == holds
        return
    with pytest.raises(PolicySpecError) as info:
        make_policy(spec, 1)
    error = info.value
    assert (error.code, error.option, error.spec) == ("invalid_bot_spec", refused, spec)
    assert refused in error.message and error.message.endswith(".")


@pytest.mark.parametrize("name", POLICIES)
def test_an_unknown_option_is_refused_and_the_accepted_ones_are_listed(name: str) -> None:
    spec = f"{_head(name)}?no_such_option=1"
    with pytest.raises(PolicySpecError) as info:
        make_policy(spec, 1)
    assert info.value.option == "no_such_option" and info.value.code == "invalid_bot_spec"
    assert all(key in info.value.message for key in option_names(_model(name)) if key != "model_spec")


def _sweep(name: str) -> list[tuple[str, str, Any]]:
    """(option, value, what it parses to, or PolicySpecError) for every bounded or enumerated option of
    ``name``, generated from its model: each bound accepted, just past it refused, text of the wrong type
    refused, each choice accepted, an unknown choice refused."""
    cases: list[tuple[str, str, Any]] = []
    for info in describe_options(_model(name)):
        key = info.names[0]
        kind = next(b for b in info.schema.get("anyOf", [info.schema]) if b.get("type") != "null")
        if kind.get("type") in ("integer", "number"):
            low, high = kind["minimum"], kind["maximum"]
            step = 1 if kind["type"] == "integer" else 0.5
            cases += [(key, f"{low:g}", low), (key, f"{high:g}", high)]
            cases += [(key, f"{low - step:g}", PolicySpecError), (key, f"{high + step:g}", PolicySpecError)]
            cases += [(key, "many", PolicySpecError)]
            if kind["type"] == "integer":
                cases += [(key, f"{low + 0.5:g}", PolicySpecError)]
        elif "enum" in kind:
            cases += [(key, str(choice), choice) for choice in kind["enum"]]
            cases += [(key, "no_such_choice", PolicySpecError)]
        elif kind.get("type") == "boolean":
            cases += [(key, "1", True), (key, "0", False), (key, "maybe", PolicySpecError)]
    return cases


@pytest.mark.parametrize("name", POLICIES)
def test_every_bound_and_choice_of_every_policy_holds(name: str) -> None:
    model = _model(name)
    fields = option_names(model)
    for key, value, expected in _sweep(name):
        spec = f"{_head(name)}?{key}={value}"
        if expected is PolicySpecError:
            with pytest.raises(PolicySpecError) as info:
                make_policy(spec, 1)
            assert info.value.option == key, spec
        else:
            parsed = parse_options(parse_policy_spec(spec), model)
            assert getattr(parsed, fields[key]) == expected, spec
            make_policy(spec, 1)  # and the policy is built with it


def test_the_help_lists_every_option_of_every_policy_from_its_model() -> None:
    shown = CliRunner().invoke(bots_command, [])
    assert shown.exit_code == 0, shown.output
    blocks: dict[str, str] = {}
    for line in shown.output.splitlines():
        if not line.startswith(" "):
            current = line.split()[0]
            blocks[current] = ""
        else:
            blocks[current] += line + "\n"
    assert set(POLICIES) <= set(blocks)
    for name in POLICIES:
        infos = describe_options(_model(name))
        for info in infos:  # names, what it takes (type, bounds, choices) and default, as the model says
            assert f"{' | '.join(info.names):<24} {info.summary()}" in blocks[name], (name, info.names)
        assert len(blocks[name].splitlines()) == max(len(infos), 1)
    assert "a number from 0 to 1: chance it accepts a proposal; default 0.5" in blocks["random"]
    assert "one of 0 | 0,1 | 0,1,2" in blocks["llm"] and "required" in blocks["llm"]
    # the same text through `tradecraft bots` and `tradecraft play --list-policies`
    assert CliRunner().invoke(main, ["bots"]).output == shown.output
    assert CliRunner().invoke(play_command, ["--list-policies"]).output == shown.output


def test_the_help_shows_chosen_policies_and_refuses_unknown_ones() -> None:
    one = CliRunner().invoke(bots_command, ["planner"])
    assert one.exit_code == 0 and one.output.splitlines()[0].startswith("planner ")
    assert "one of no_loss | gain" in one.output and "random" not in one.output
    unknown = CliRunner().invoke(bots_command, ["grandmaster"])
    assert unknown.exit_code != 0 and "unknown_bot" in unknown.output and "random" in unknown.output


def test_a_plug_in_without_a_model_gets_its_keyword_parameters_as_text_options() -> None:
    def free(seed: int, *, greeting: str = "hi", **more: str) -> None: ...

    def strict(seed: int, *, greeting: str) -> None: ...

    model, declared = options_model(free)
    assert not declared
    parsed = parse_options(parse_policy_spec("echo?greeting=yo&colour=red"), model)
    assert parsed.model_dump(exclude_unset=True) == {"greeting": "yo", "colour": "red"}
    model, _ = options_model(strict)
    with pytest.raises(PolicySpecError) as info:
        parse_options(parse_policy_spec("echo?colour=red"), model)
    assert info.value.option == "colour" and "greeting" in info.value.message
    with pytest.raises(PolicySpecError) as info:
        parse_options(parse_policy_spec("echo"), model)
    assert info.value.option == "greeting" and "needs the option 'greeting'" in info.value.message
