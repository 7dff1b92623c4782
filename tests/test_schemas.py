"""The typed views and events: the engine produces exactly what server/game/schemas.py declares.

Every view (each seat's and the spectator's, after every action) and every event of the golden games and
of random games validates against the models; every event type of the engine has a payload model; the
strict-mode rendering of every action and query parses back to the same action or query.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from engine_support import THREE_PLAYER, TWO_PLAYER, new_game, play_random
from golden_games import GAMES, ScriptedGame
from pydantic import BaseModel, TypeAdapter, ValidationError
from suite_support import shipped_rule_set

from craft_rules.loader import load_rule_set
from server.game import Game, GameSettings, parse_action
from server.game.actions import ACTION_MODELS, PLAYER_ACTION_TYPES
from server.game.events import EVENT_TYPES, viewer_log
from server.game.queries import QUERY_MODELS, parse_query
from server.game.schemas import (
    EVENT_PAYLOAD_MODELS,
    PlayerView,
    SpectatorView,
    ViewerEvent,
    from_strict,
    strict_args_schema,
    strict_model,
    to_strict,
)
from server.game.views import player_view, spectator_view

EVENTS: TypeAdapter[Any] = TypeAdapter(list[ViewerEvent])


def check_state(game: Game) -> None:
    """Every viewer's view and whole log validate against the models."""
    for seat in range(game.players):
        PlayerView.model_validate(player_view(game, seat))
        EVENTS.validate_python(viewer_log(game.events, seat))
    SpectatorView.model_validate(spectator_view(game))
    EVENTS.validate_python(viewer_log(game.events, None))


def test_every_engine_event_type_has_a_payload_model() -> None:
    assert set(EVENT_PAYLOAD_MODELS) == EVENT_TYPES == set(Game._EVENT_EFFECTS)


@pytest.mark.parametrize("game_def", GAMES, ids=lambda g: g.name)
def test_golden_games_views_and_events_validate(game_def: ScriptedGame) -> None:
    shipped_rule_set(game_def.ruleset)  # missing: a failure, never a skip
    rules = load_rule_set(game_def.ruleset)
    game = Game.new(game_def.instance(), GameSettings.model_validate(game_def.settings), rules, game_def.seed)
    check_state(game)
    for actor, action in game_def.script:
        game.apply(actor, action)
        check_state(game)
    assert game.finished
    types_seen = {e.type for e in game.events}
    assert {"game_started", "phase_started", "game_ended"} <= types_seen


@pytest.mark.parametrize("seed", range(12))
def test_random_games_views_and_events_validate(seed: int) -> None:
    inst = (TWO_PLAYER, THREE_PLAYER)[seed % 2]
    orders = [[0, 1, 2]] + [[0]] * (inst.players - 1) if seed % 3 == 0 else []
    game = new_game(inst, seed=seed, max_turns=6, tom_orders=orders, allow_pass=seed % 4 != 1)
    rng = random.Random(seed)
    check_state(game)
    for step in play_random(game, rng):
        del step
        check_state(game)
    # resignations and timeouts too: a fresh game where seats time out and one resigns
    game = new_game(inst, seed=seed, max_turns=4, tom_orders=orders)
    game.apply(None, {"type": "timeout"})
    check_state(game)
    game.apply(inst.players - 1, {"type": "resign"})
    check_state(game)
    for step in play_random(game, rng):
        del step
    check_state(game)


def test_view_models_refuse_what_the_engine_must_not_show() -> None:
    game = new_game()
    spectator = spectator_view(game)
    with pytest.raises(ValidationError):
        SpectatorView.model_validate({**spectator, "target": {"torch": 4}})
    with pytest.raises(ValidationError):  # the instance id gives the targets away (shipped files)
        PlayerView.model_validate({**player_view(game, 0), "instance_id": game.instance.id})
    finished = {**player_view(game, 0), "finished": True, "phase": "finished"}
    PlayerView.model_validate({**finished, "instance_id": game.instance.id})  # shown once it is over
    with pytest.raises(ValidationError):
        EVENTS.validate_python([{**viewer_log(game.events, 0)[0], "seq": 0}])


# --------------------------------------------------------------------------- strict-mode rendering
ACTION_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "report_tom": [
        {"type": "report_tom", "v0": {"coal": 3, "stick": 10}},
        {
            "type": "report_tom",
            "v0": {"coal": 3},
            "v1": {"1": {"coal": 2}, "2": {"coal": 0}},
            "v2": {"1": {"coal": 9}, "2": {"coal": 1}},
        },
    ],
    "propose": [
        {
            "type": "propose",
            "to": 1,
            "offer": {"coal": 1},
            "request": {"stick": 2, "raw_iron": 1},
            "message": "hi",
        },
        {"type": "propose", "to": 2, "request": {"stick": 1}},
    ],
    "pass": [{"type": "pass"}],
    "decide": [{"type": "decide", "accept": True}, {"type": "decide", "accept": False, "message": "no"}],
    "craft": [
        {"type": "craft", "recipe": "torch", "runs": "1/4", "choices": {0: "coal"}},
        {"type": "craft", "recipe": "iron_ingot", "runs": 2, "fuel": "coal"},
        {"type": "craft", "recipe": "stick"},
    ],
    "finish_crafting": [{"type": "finish_crafting"}],
    "timeout": [{"type": "timeout", "phase": "craft", "turn": 2}, {"type": "timeout"}],
    "resign": [{"type": "resign"}],
}
QUERY_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "item_info": [{"type": "item_info", "item": "torch"}],
    "recipe_search": [
        {"type": "recipe_search", "text": "pick", "limit": 3},
        {"type": "recipe_search", "text": "x"},
    ],
    "possible_crafts": [{"type": "possible_crafts"}, {"type": "possible_crafts", "limit": 5}],
    "crafting_tree": [{"type": "crafting_tree", "item": "torch", "count": 4, "depth": 2}],
    "craftable": [{"type": "craftable"}, {"type": "craftable", "item": "shears", "count": 2}],
    "match_grid": [
        {"type": "match_grid", "grid": [["coal"], ["stick"]]},
        {"type": "match_grid", "grid": [[None, "iron_ingot", None], ["iron_ingot", None, None]]},
    ],
    "craft_options": [{"type": "craft_options", "recipe": "torch"}],
    "history": [{"type": "history"}, {"type": "history", "since_n": 3, "limit": 10}],
}


def test_every_action_and_query_has_examples() -> None:
    assert set(ACTION_EXAMPLES) == set(ACTION_MODELS)
    assert set(QUERY_EXAMPLES) == set(QUERY_MODELS)


def _walk(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        found.append(schema)
        for value in schema.values():
            found += _walk(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _walk(value)
    return found


@pytest.mark.parametrize("model", [*ACTION_MODELS.values(), *QUERY_MODELS.values()], ids=lambda m: m.__name__)
def test_strict_schema_follows_the_strict_rules(model: type[BaseModel]) -> None:
    schema = strict_args_schema(model)
    assert schema["type"] == "object"
    for node in _walk(schema):
        if node.get("type") == "object":
            # no free-key objects: every object lists its properties, requires all, allows no others
            assert "properties" in node, node
            assert node["additionalProperties"] is False
            assert set(node["required"]) == set(node["properties"])
        assert "default" not in node
    assert json.loads(json.dumps(schema)) == schema


@pytest.mark.parametrize(
    ("kind", "example"),
    [
        (k, e)
        for table in (ACTION_EXAMPLES, QUERY_EXAMPLES)
        for k, examples in table.items()
        for e in examples
    ],
)
def test_strict_rendering_round_trips(kind: str, example: dict[str, Any]) -> None:
    parse = parse_action if kind in ACTION_MODELS else parse_query
    original = parse(example)
    strict = to_strict(original)
    # what an OpenAI strict tool call would send: valid for the strict twin, no free-key dicts left
    strict_model(type(original)).model_validate(strict)
    assert not any(isinstance(v, dict) for v in strict.values()), strict
    wire = json.loads(json.dumps(strict))  # int keys cannot survive JSON; the pairs do
    assert parse(from_strict(wire)) == original
    assert parse(from_strict(to_strict(example))) == original


def test_from_strict_leaves_bad_input_for_the_parser_to_name() -> None:
    from server.game.errors import GameError

    with pytest.raises(GameError) as caught:
        parse_action(from_strict({"type": "propose", "to": 1, "offer": [{"item": "coal", "count": 0}]}))
    assert caught.value.code == "invalid_action" and "offer" in caught.value.message
    with pytest.raises(GameError):
        parse_action(from_strict({"type": "propose", "to": 1, "offer": ["coal"]}))
    assert from_strict({"type": "nonsense", "x": [1]}) == {"type": "nonsense", "x": [1]}
    # a repeated item adds up, like two offers of the same thing would
    assert from_strict({"type": "propose", "to": 1, "offer": [{"item": "coal", "count": 1}] * 2})[
        "offer"
    ] == {"coal": 2}


def test_player_action_types_match_the_view_model() -> None:
    field = PlayerView.model_fields["legal_actions"]
    adapter: TypeAdapter[Any] = TypeAdapter(field.annotation)
    adapter.validate_python(list(PLAYER_ACTION_TYPES))
    with pytest.raises(ValidationError):
        adapter.validate_python(["timeout"])
