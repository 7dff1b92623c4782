"""analysis.tom_scores: each reported V0/V1/V2 value next to its ground truth (docs/reference-values.md)."""

from __future__ import annotations

from typing import Any

from golden_games import GAMES, play_script

from analysis.tom_scores import COLUMNS, tom_score_rows
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance
from craft_rules.values import reference_values
from server.game import Game, GameSettings
from server.game.gamelog import GameLog, InstanceRecord, LogHeader, RuleSetRef

HANDS = ({"oak_planks": 1, "coal": 1}, {"cobblestone": 3})
TARGETS = ({"torch": 1}, {"cobblestone_slab": 1})


def as_log(game: Game) -> GameLog:
    header = LogHeader(
        game_id="tom-scores",
        source="test",
        settings=game.settings.model_dump(mode="json"),
        ruleset=RuleSetRef(name=game.rules.name, content_hash=game.rules.content_hash),
        instance=InstanceRecord.of(game.instance),
    )
    return GameLog(header, list(game.events), [None] * len(game.events), [None] * len(game.events))


def by_key(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(r["turn"], r["seat"], r["order"], r["opponent_seat"], r["item"]): r for r in rows}


def test_v2_is_scored_against_the_opponents_own_v1_when_it_reports_one(minecraft: RuleSet) -> None:
    """The worked example of docs/reference-values.md ("Ground truth for V1 and V2")."""
    instance = TaskInstance("minecraft/1p_v_1p/tom-scores#0", "minecraft", "1p_v_1p", HANDS, TARGETS)
    settings = GameSettings(ruleset="minecraft", max_turns=2, tom_orders=[[0, 1, 2], [0, 1]])
    game = Game.new(instance, settings, minecraft, seed=0)
    game.apply(0, {"type": "report_tom", "v0": {"coal": 9, "oak_planks": 9, "cobblestone": 0},
                   "v1": {"1": {"coal": 2, "oak_planks": 2, "cobblestone": 9}},
                   "v2": {"1": {"coal": 8, "oak_planks": 4, "cobblestone": 0}}})  # fmt: skip
    game.apply(1, {"type": "report_tom", "v0": {"coal": 3, "oak_planks": 0, "cobblestone": 10},
                   "v1": {"0": {"coal": 6, "oak_planks": 6, "cobblestone": 1}}})  # fmt: skip
    rows = list(tom_score_rows(as_log(game), minecraft))
    assert all(tuple(row) == COLUMNS for row in rows) and len(rows) == 3 * 5
    table = by_key(rows)
    # V2 of seat 0 about seat 1: seat 1's V1 about seat 0 is the truth
    v2 = [table[(1, 0, 2, 1, item)] for item in ("coal", "oak_planks", "cobblestone")]
    assert [(r["value"], r["reference"], r["reference_kind"]) for r in v2] == [
        (8, 6, "opponent_v1_report"), (4, 6, "opponent_v1_report"), (0, 1, "opponent_v1_report")
    ]  # fmt: skip
    # V0 against its own target's reference values (example 1: coal 10, planks 10, cobblestone 0)
    own = [table[(1, 0, 0, None, item)]["reference"] for item in ("coal", "oak_planks", "cobblestone")]
    assert own == [10, 10, 0]
    # V1 against the opponent's true target, with the opponent's own V0 alongside
    slab = reference_values(minecraft, TARGETS[1], HANDS)
    v1 = table[(1, 0, 1, 1, "cobblestone")]
    assert v1["reference"] == slab["cobblestone"] == 10 and v1["opponent_report"] == 10
    assert v1["reference_kind"] == "opponent_target"


def test_without_an_opponent_v1_v2_falls_back_to_the_reporters_own_target(minecraft: RuleSet) -> None:
    """The paper's V0+V1+V2 vs V0 configuration: the golden 2-player game (seat 1 reports V0 only)."""
    game_def = next(g for g in GAMES if g.name == "minecraft_2p_trades_and_win")
    game, _ = play_script(game_def)
    rows = list(tom_score_rows(as_log(game), minecraft))
    v2 = [r for r in rows if r["order"] == 2]
    assert v2 and {r["reference_kind"] for r in v2} == {"own_target"}
    assert {r["turn"] for r in v2} == {1, 2}
    # each turn is judged over the public hands at its start: turn 2 after turn 1's reveal
    revealed = next(e.payload["hands"] for e in game.events if e.type == "hands_revealed")
    shears_turn2 = reference_values(minecraft, game_def.targets[0], revealed)
    for row in (r for r in v2 if r["turn"] == 2):
        assert row["reference"] == shears_turn2[row["item"]] and row["opponent_report"] is None
    shears_turn1 = reference_values(minecraft, game_def.targets[0], game_def.hands)
    for row in (r for r in v2 if r["turn"] == 1):
        assert row["reference"] == shears_turn1[row["item"]]


def test_a_whole_runs_game_is_scored_against_whole_runs_references(minecraft: RuleSet) -> None:
    """A `paper`-hall-like game (whole runs): two planks are both indispensable for a torch (one plank is
    half a run of sticks), where under rational runs either one would do (docs/reference-values.md, W1)."""
    hands = ({"oak_planks": 1, "birch_planks": 1, "coal": 1}, {"cobblestone": 3})
    instance = TaskInstance("minecraft/1p_v_1p/tom-scores#1", "minecraft", "1p_v_1p", hands, TARGETS)
    v0 = {"coal": 9, "oak_planks": 9, "birch_planks": 9, "cobblestone": 0}
    references = {}
    for runs in ("rational", "whole"):
        settings = GameSettings(ruleset="minecraft", max_turns=2, tom_orders=[[0], []], crafting_runs=runs)
        game = Game.new(instance, settings, minecraft, seed=0)
        game.apply(0, {"type": "report_tom", "v0": v0})
        rows = list(tom_score_rows(as_log(game), minecraft))
        references[runs] = {r["item"]: r["reference"] for r in rows if r["order"] == 0}
    assert references["rational"] == {"coal": 10, "oak_planks": 5, "birch_planks": 5, "cobblestone": 0}
    assert references["whole"] == {"coal": 10, "oak_planks": 10, "birch_planks": 10, "cobblestone": 0}
