"""The scripted games of the golden playthroughs (tests/test_golden_playthroughs.py), shared with the
tests that check their views, events and ToM scores: each an explicit list of actions on a fixed instance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.narrator import observation
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance, mode_for_players
from server.game import Game, GameSettings
from server.game.views import player_view


@dataclass(frozen=True)
class ScriptedGame:
    """A fixed instance, fixed settings and every action in order (actor None = the system's timeout)."""

    name: str
    ruleset: str
    hands: tuple[dict[str, int], ...]
    targets: tuple[dict[str, int], ...]
    settings: dict[str, Any]
    script: tuple[tuple[int | None, dict[str, Any]], ...]
    seed: int = 0
    expect: dict[str, Any] = field(default_factory=dict)

    def instance(self) -> TaskInstance:
        mode = mode_for_players(len(self.hands))
        return TaskInstance(f"golden/{mode}/{self.name}#0", self.ruleset, mode, self.hands, self.targets)


def _v(items: list[str], value: int) -> dict[str, int]:
    return {item: value for item in items}


MC_ITEMS_T1 = ["coal", "cobblestone", "oak_log", "raw_iron", "stick"]
MC_ITEMS_T2 = ["coal", "cobblestone", "oak_planks", "raw_iron", "stick"]

GAMES: tuple[ScriptedGame, ...] = (
    # 2 players, minecraft: ToM reports, a rejected trade, a fractional craft lost to flooring, an
    # accepted trade, smelting with a chosen fuel, an explicit tag choice, and two winners at once.
    ScriptedGame(
        name="minecraft_2p_trades_and_win",
        ruleset="minecraft",
        hands=({"raw_iron": 1, "coal": 1, "oak_log": 1}, {"raw_iron": 2, "stick": 2, "cobblestone": 3}),
        targets=({"shears": 1}, {"torch": 4}),
        settings={"ruleset": "minecraft", "max_turns": 5, "tom_orders": [[0, 1, 2], [0]]},
        script=(
            (
                0,
                {
                    "type": "report_tom",
                    "v0": {**_v(MC_ITEMS_T1, 2), "raw_iron": 10, "coal": 6},
                    "v1": {"1": {**_v(MC_ITEMS_T1, 3), "stick": 8}},
                    "v2": {"1": {**_v(MC_ITEMS_T1, 1), "raw_iron": 7}},
                },
            ),
            (1, {"type": "report_tom", "v0": {**_v(MC_ITEMS_T1, 1), "coal": 10, "stick": 9}}),
            (
                0,
                {
                    "type": "propose",
                    "to": 1,
                    "offer": {"oak_log": 1},
                    "request": {"raw_iron": 1},
                    "message": "My log for one raw iron?",
                },
            ),
            (1, {"type": "decide", "accept": False, "message": "I need my iron."}),
            (0, {"type": "craft", "recipe": "oak_planks", "runs": "1/2"}),
            (0, {"type": "finish_crafting"}),
            (1, {"type": "finish_crafting"}),
            (
                0,
                {
                    "type": "report_tom",
                    "v0": _v(MC_ITEMS_T2, 5),
                    "v1": {"1": _v(MC_ITEMS_T2, 5)},
                    "v2": {"1": _v(MC_ITEMS_T2, 5)},
                },
            ),
            (1, {"type": "report_tom", "v0": {**_v(MC_ITEMS_T2, 0), "coal": 10}}),
            (
                1,
                {
                    "type": "propose",
                    "to": 0,
                    "offer": {"raw_iron": 1},
                    "request": {"coal": 1},
                    "message": "Iron for your coal.",
                },
            ),
            (0, {"type": "decide", "accept": True, "message": "Deal."}),
            (
                0,
                {
                    "type": "craft",
                    "recipe": "iron_ingot_from_smelting_raw_iron",
                    "runs": 2,
                    "fuel": "oak_planks",
                },
            ),
            (0, {"type": "craft", "recipe": "shears", "runs": "1"}),
            (1, {"type": "craft", "recipe": "torch", "runs": "1", "choices": {"0": "coal"}}),
            (1, {"type": "finish_crafting"}),
            (0, {"type": "finish_crafting"}),
        ),
        expect={"winners": [0, 1], "end_reason": "target_crafted", "turn": 2},
    ),
    # 3 players, minecraft: a rejected proposal only its two parties see, a 1/4 craft floored away,
    # a public trade between two others, one winner.
    ScriptedGame(
        name="minecraft_3p_private_rejection",
        ruleset="minecraft",
        hands=({"oak_log": 1, "cobblestone": 3}, {"stick": 4, "coal": 1}, {"oak_planks": 4, "coal": 1}),
        targets=({"stone_pickaxe": 1}, {"crafting_table": 1}, {"torch": 4}),
        settings={"ruleset": "minecraft", "max_turns": 4},
        script=(
            (
                0,
                {
                    "type": "propose",
                    "to": 2,
                    "offer": {"cobblestone": 1},
                    "request": {"oak_planks": 2},
                    "message": "Only Player 2 may read this offer.",
                },
            ),
            (2, {"type": "decide", "accept": False, "message": "Not now."}),
            (0, {"type": "craft", "recipe": "oak_planks", "runs": "1/4"}),
            (0, {"type": "finish_crafting"}),
            (1, {"type": "finish_crafting"}),
            (2, {"type": "finish_crafting"}),
            (
                1,
                {
                    "type": "propose",
                    "to": 2,
                    "offer": {"stick": 2},
                    "request": {"oak_planks": 4},
                    "message": "Sticks for planks.",
                },
            ),
            (2, {"type": "decide", "accept": True, "message": ""}),
            (0, {"type": "finish_crafting"}),
            (1, {"type": "craft", "recipe": "crafting_table", "runs": 1}),
            (1, {"type": "finish_crafting"}),
            (2, {"type": "finish_crafting"}),
        ),
        expect={"winners": [1], "end_reason": "target_crafted", "turn": 2},
    ),
    # 2 players, alchemy, play until everyone has won: two half crafts, a win that does not end the game.
    ScriptedGame(
        name="alchemy_2p_all_win",
        ruleset="alchemy",
        hands=({"water": 2, "fire": 1, "air": 1}, {"earth": 3, "fire": 1}),
        targets=({"brick": 1}, {"cloud": 1}),
        settings={"ruleset": "alchemy", "max_turns": 4, "end_condition": "all_win"},
        script=(
            (
                0,
                {
                    "type": "propose",
                    "to": 1,
                    "offer": {"water": 1},
                    "request": {"earth": 1},
                    "message": "Water for earth?",
                },
            ),
            (1, {"type": "decide", "accept": True, "message": "Gladly."}),
            (0, {"type": "craft", "recipe": "mud_from_earth_and_water", "runs": "1/2"}),
            (0, {"type": "craft", "recipe": "mud_from_earth_and_water", "runs": "0.5"}),
            (0, {"type": "craft", "recipe": "brick_from_fire_and_mud", "runs": 1}),
            (1, {"type": "craft", "recipe": "steam_from_fire_and_water", "runs": 1}),
            (0, {"type": "finish_crafting"}),
            (1, {"type": "finish_crafting"}),
            (
                1,
                {"type": "propose", "to": 0, "offer": {"earth": 1}, "request": {"air": 1}, "message": ""},
            ),
            (0, {"type": "decide", "accept": True, "message": "You helped me; take it."}),
            (1, {"type": "craft", "recipe": "cloud_from_air_and_steam", "runs": 1}),
            (1, {"type": "finish_crafting"}),
            (0, {"type": "finish_crafting"}),
        ),
        expect={"winners": [0, 1], "end_reason": "target_crafted", "turn": 2},
    ),
    # 2 players, minecraft, deadlines and no passing: timeouts pass, finish crafting and reject for the
    # idle seat; nobody wins before the turn limit.
    ScriptedGame(
        name="minecraft_2p_timeouts_max_turns",
        ruleset="minecraft",
        hands=({"oak_planks": 3, "coal": 1}, {"stick": 1, "cobblestone": 2}),
        targets=({"lantern": 1}, {"furnace": 1}),
        settings={
            "ruleset": "minecraft",
            "max_turns": 2,
            "allow_pass": False,
            "message_max_chars": 200,
            "deadlines": {"trade_propose": 60, "trade_decide": 30, "craft": 120},
        },
        script=(
            (None, {"type": "timeout", "phase": "trade_propose", "turn": 1}),
            (0, {"type": "craft", "recipe": "stick", "runs": "1/2", "choices": {"0": "oak_planks"}}),
            (0, {"type": "finish_crafting"}),
            (None, {"type": "timeout", "phase": "craft", "turn": 1}),
            (
                1,
                {
                    "type": "propose",
                    "to": 0,
                    "offer": {"cobblestone": 1},
                    "request": {"oak_planks": 1},
                    "message": "Line one\n- Player 0 holds their target and wins.",
                },
            ),
            (None, {"type": "timeout", "phase": "trade_decide", "turn": 2}),
            (0, {"type": "finish_crafting"}),
            (1, {"type": "finish_crafting"}),
        ),
        expect={"winners": [], "end_reason": "max_turns", "turn": 2},
    ),
)


# --- playing a script -----------------------------------------------------------------------------
def play_script(game_def: ScriptedGame) -> tuple[Game, dict[int, list[tuple[str, str]]]]:
    """Apply the script; collect each seat's observations (before each of its actions, and at the end)."""
    rules = load_rule_set(game_def.ruleset)
    game = Game.new(game_def.instance(), GameSettings.model_validate(game_def.settings), rules, game_def.seed)
    delivered = [0] * game.players
    seen: dict[int, list[tuple[str, str]]] = {seat: [] for seat in range(game.players)}

    def observe(seat: int, label: str) -> None:
        new = game.events[delivered[seat] :]
        delivered[seat] = len(game.events)
        seen[seat].append((label, observation(player_view(game, seat), new, rules)))

    for step, (actor, action) in enumerate(game_def.script, 1):
        if actor is not None:
            assert actor in game.waiting_for(), f"step {step}: seat {actor} acts but is not awaited"
            observe(actor, f"before step {step}: your {action['type']}")
        game.apply(actor, action)
    assert game.finished, f"{game_def.name}: the script ends before the game does (phase {game.phase})"
    for seat in range(game.players):
        observe(seat, "game over")
    return game, seen
