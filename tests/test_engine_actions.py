"""The action models (one schema per action), parse_action's typed errors, events and error codes."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from engine_support import new_game
from hypothesis import given, settings
from hypothesis import strategies as st

from craft_rules.crafting import InsufficientItemsError
from server.game import ACTION_MODELS, Event, GameError, parse_action
from server.game.actions import PLAYER_ACTION_TYPES, Craft, Propose, ReportToM, action_json_schema
from server.game.errors import ERROR_CODES
from server.game.events import EVENT_TYPES

GAME_DIR = Path(__file__).resolve().parents[1] / "server" / "game"


def test_one_model_per_action_type_with_a_json_schema():
    assert list(ACTION_MODELS) == [
        "report_tom",
        "propose",
        "pass",
        "decide",
        "craft",
        "finish_crafting",
        "timeout",
        "resign",
    ]
    assert "timeout" not in PLAYER_ACTION_TYPES
    for kind, model in ACTION_MODELS.items():
        schema = model.model_json_schema()
        assert schema["properties"]["type"]["const"] == kind
        assert schema.get("additionalProperties") is False
        assert model.__doc__  # the docstring becomes the tool / route description
    union = action_json_schema()
    assert union["discriminator"]["propertyName"] == "type"
    assert len(union["oneOf"]) == len(ACTION_MODELS)


def test_parse_action_accepts_dicts_json_text_and_models():
    proposal = parse_action({"type": "propose", "to": 1, "offer": {"coal": 2}})
    assert isinstance(proposal, Propose) and proposal.request == {} and proposal.message == ""
    assert parse_action(json.dumps({"type": "pass"})).type == "pass"
    assert parse_action(proposal) is proposal
    report = parse_action({"type": "report_tom", "v0": {"coal": 0, "stick": 10}, "v1": {"1": {"coal": 3}}})
    assert isinstance(report, ReportToM) and report.v2 is None


@pytest.mark.parametrize(
    ("runs", "exact"),
    [("1/4", Fraction(1, 4)), ("0.25", Fraction(1, 4)), (2, Fraction(2)), (0.1, Fraction(1, 10)), ("3", 3)],
)
def test_craft_runs_are_exact(runs, exact):
    action = parse_action({"type": "craft", "recipe": "torch", "runs": runs})
    assert isinstance(action, Craft) and Fraction(action.runs) == exact


def test_craft_choice_keys_from_json_become_indexes():
    action = parse_action('{"type": "craft", "recipe": "stick", "choices": {"0": "oak_planks"}}')
    assert action.choices == {0: "oak_planks"}


@pytest.mark.parametrize(
    "key", [" 2", "2 ", "+3", "1_0", "\u0661", "\uff12", "-1", "0x1", "1e2", "9" * 19, ""]
)
def test_craft_choice_keys_go_through_the_strict_number_grammar(key):
    with pytest.raises(GameError) as caught:
        parse_action({"type": "craft", "recipe": "stick", "choices": {key: "oak_planks"}})
    assert caught.value.code == "invalid_action"
    assert [p["field"] for p in caught.value.details["problems"]] == [f"choices.{key}.[key]"]


@pytest.mark.parametrize("keys", [("1", "01"), ("0", "00"), ("2", "002")])
def test_craft_choice_keys_naming_one_ingredient_twice_are_refused(keys):
    choices = dict.fromkeys(keys, "oak_planks")
    with pytest.raises(GameError, match=r"ingredient \d twice"):
        parse_action({"type": "craft", "recipe": "stick", "choices": choices})


def test_craft_choice_keys_in_ascii_digits_are_read():
    action = parse_action({"type": "craft", "recipe": "stick", "choices": {"2": "oak_planks", "10": "stick"}})
    assert action.choices == {2: "oak_planks", 10: "stick"}
    assert Craft(recipe="stick", choices={0: "oak_planks"}).choices == {0: "oak_planks"}  # in-process
    for bad in ({True: "oak_planks"}, {-1: "oak_planks"}):
        with pytest.raises(ValueError):
            Craft(recipe="stick", choices=bad)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"type": "propose", "to": 1, "offer": {"coal": 1.5}}, "offer.coal"),
        ({"type": "propose", "to": True, "offer": {"coal": 1}}, "to"),
        ({"type": "propose", "offer": {"coal": 1}}, "to"),
        ({"type": "decide"}, "accept"),
        ({"type": "decide", "accept": "true"}, "accept"),
        ({"type": "report_tom", "v0": {"coal": "high"}}, "v0.coal"),
        ({"type": "report_tom", "v0": {}, "v1": {"1": {"coal": 12}}}, "v1.1.coal"),
        ({"type": "craft", "recipe": ""}, "recipe"),
        ({"type": "craft", "recipe": "x", "choices": {"first": "oak_planks"}}, "choices.first.[key]"),
        ({"type": "pass", "to": 1}, "to"),
        ({"type": "teleport"}, "type"),
        ({}, "type"),
    ],
)
def test_parse_errors_name_the_bad_field(raw, field):
    with pytest.raises(GameError) as caught:
        parse_action(raw)
    err = caught.value
    assert err.code == "invalid_action"
    fields = [p["field"] for p in err.details["problems"]]
    assert field in fields, fields
    assert f"'{fields[0]}'" in err.message
    json.dumps(err.to_dict())


def test_non_objects_are_invalid_actions():
    for raw in ("not json", "[1, 2]", b"42", 7):
        with pytest.raises(GameError) as caught:
            parse_action(raw)  # type: ignore[arg-type]
        assert caught.value.code == "invalid_action"


def test_craft_errors_keep_their_code_and_become_sentences():
    err = GameError.from_craft_error(
        InsufficientItemsError("cannot run x: short of 1 coal", {"coal": Fraction(1, 2)})
    )
    assert err.code == "insufficient_items"
    assert err.message == "Cannot run x: short of 1 coal."
    assert err.details == {"short": {"coal": "1/2"}}


def test_every_error_code_the_engine_raises_is_documented():
    raised = set()
    for path in GAME_DIR.glob("*.py"):
        raised |= set(re.findall(r'GameError\(\s*"([a-z_]+)"', path.read_text()))
    assert raised, "no GameError found: the pattern is stale"
    assert raised <= set(ERROR_CODES), raised - set(ERROR_CODES)
    # the crafting codes come through from_craft_error
    assert {"insufficient_items", "unknown_recipe", "invalid_runs", "invalid_choice", "no_fuel"} <= set(
        ERROR_CODES
    )


def test_every_event_the_engine_emits_is_a_known_type_and_round_trips():
    source = (GAME_DIR / "state.py").read_text()
    emitted = set(re.findall(r'_emit\(\s*"([a-z_]+)"', source))
    assert emitted == EVENT_TYPES
    game = new_game()
    game.apply(0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "message": "é ✓"})
    for event in game.events:
        record = json.loads(json.dumps(event.to_dict()))
        assert Event.from_dict({**record, "time": 1.5}) == event


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
action_like = st.fixed_dictionaries(
    {"type": st.sampled_from([*ACTION_MODELS, "nope"])},
    optional={
        "to": json_values,
        "offer": json_values,
        "request": json_values,
        "message": json_values,
        "accept": json_values,
        "recipe": json_values,
        "runs": json_values,
        "choices": json_values,
        "fuel": json_values,
        "v0": json_values,
        "v1": json_values,
        "phase": json_values,
    },
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    action=action_like | json_values,
    actor=st.none() | st.integers(-2, 3) | st.text(max_size=2),
    in_craft=st.booleans(),
)
def test_arbitrary_input_is_applied_or_refused_with_a_game_error(action, actor, in_craft):
    game = new_game(tom_orders=[[0, 1], [0]]) if not in_craft else new_game()
    if in_craft:
        game.apply(0, {"type": "pass"})
    before = game.state_digest()
    try:
        game.apply(actor, action)  # type: ignore[arg-type]
    except GameError as err:
        json.dumps(err.to_dict())
        assert game.state_digest() == before


def test_unreadable_json_text_is_an_invalid_action():
    for text in ("[" * 100_000, b"\xff\xfe{", '{"type": "pass"'):
        with pytest.raises(GameError) as caught:
            parse_action(text)
        assert caught.value.code == "invalid_action"
