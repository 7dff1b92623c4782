"""The unreachable-target notice in the engine: a seat whose target no combination of all hands can make
any more is told so in its own view, and in no one else's (server/game/reach.py)."""

from __future__ import annotations

import json

import pytest
from engine_support import instance, new_game, replayed

from server.game import Game, player_view, spectator_view
from server.game import reach as reach_module
from server.game.events import viewer_log
from server.game.schemas import PlayerView, SpectatorView

# Seat 0 needs shears (two iron ingots: two smelts, so fuel); the table's only fuel is seat 1's coal and
# stick. Seat 1 (target: a furnace) crafts them into torches in the first craft phase: from then on no
# combination of the hands can smelt, and seat 0 cannot win.
HANDS = [{"raw_iron": 1, "cobblestone": 5}, {"raw_iron": 1, "coal": 1, "stick": 1, "cobblestone": 3}]
LOST = instance(HANDS, [{"shears": 1}, {"furnace": 1}], "lost#0")
# The same table, but seat 0 needs the torches seat 1 makes: its target stays within reach.
KEPT = instance(HANDS, [{"torch": 4}, {"furnace": 1}], "kept#0")


def _to_first_craft(game: Game) -> None:
    game.apply(0, {"type": "pass"})
    assert game.phase == "craft"


def _seat1_burns_the_fuel(game: Game) -> None:
    game.apply(1, {"type": "craft", "recipe": "torch", "runs": "1", "choices": {"0": "coal"}})
    game.apply(0, {"type": "finish_crafting"})
    game.apply(1, {"type": "finish_crafting"})
    assert not game.finished and game.turn == 2


def _played(inst=LOST) -> Game:
    game = new_game(inst, first_proposer=0, max_turns=5)
    _to_first_craft(game)
    _seat1_burns_the_fuel(game)
    return game


def _dump(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def test_reachable_at_the_start_and_lost_after_the_fuel_is_crafted_away() -> None:
    game = new_game(LOST, first_proposer=0, max_turns=5)
    assert player_view(game, 0)["target_reachable"] is True
    _to_first_craft(game)
    assert player_view(game, 0)["target_reachable"] is True
    # seat 1's private crafting changes no public hand: nothing is known (or told) before the reveal
    game.apply(1, {"type": "craft", "recipe": "torch", "runs": "1", "choices": {"0": "coal"}})
    assert player_view(game, 0)["target_reachable"] is True
    game.apply(0, {"type": "finish_crafting"})
    game.apply(1, {"type": "finish_crafting"})
    assert game.hands[1].get("torch") == 4 and "coal" not in game.hands[1]
    assert player_view(game, 0)["target_reachable"] is False
    assert player_view(game, 1)["target_reachable"] is True
    # the next craft phase starts with the notice still there (the pool only shrinks)
    game.apply(1, {"type": "pass"})
    assert game.phase == "craft" and game.turn == 2
    assert player_view(game, 0)["target_reachable"] is False
    assert player_view(replayed(game), 0)["target_reachable"] is False


def test_the_notice_is_in_no_other_view_and_no_log() -> None:
    lost, kept = _played(LOST), _played(KEPT)
    assert player_view(lost, 0)["target_reachable"] is False
    assert player_view(kept, 0)["target_reachable"] is True
    # everything seat 1 and an onlooker see is the same byte for byte, whichever seat 0's fate
    assert _dump(player_view(lost, 1)) == _dump(player_view(kept, 1))
    assert _dump(spectator_view(lost)) == _dump(spectator_view(kept))
    for viewer in (1, None):
        assert _dump(viewer_log(lost.events, viewer)) == _dump(viewer_log(kept.events, viewer))
    # and the log holds no event about it: the two games' logs differ only in the targets they start from
    assert [e.type for e in lost.events] == [e.type for e in kept.events]
    assert spectator_view(lost)["target_reachable"] is None
    PlayerView.model_validate(player_view(lost, 0))
    SpectatorView.model_validate(spectator_view(lost))


def test_every_seat_is_checked_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    real = reach_module._check_all

    def counting(game, pool, active):
        asked.append(len(active))
        return real(game, pool, active)

    monkeypatch.setattr(reach_module, "_check_all", counting)
    for inst in (LOST, KEPT):
        asked.clear()
        game = _played(inst)
        reach_module._cache.clear()
        player_view(game, 0)
        player_view(game, 1)  # answered from the same check: both seats were checked at once
        assert asked == [2]


def test_an_undecided_check_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    game = _played(LOST)
    reach_module._cache.clear()
    monkeypatch.setattr(reach_module, "REACH_CPU_BUDGET_S", 0.0)
    assert player_view(game, 0)["target_reachable"] is None
    assert player_view(game, 1)["target_reachable"] is None
    reach_module._cache.clear()


def test_nothing_is_said_once_the_game_is_over() -> None:
    game = _played(LOST)
    game.apply(0, {"type": "resign"})
    assert game.finished
    assert player_view(game, 0)["target_reachable"] is None
    assert player_view(game, 1)["target_reachable"] is None


def test_a_resigned_seats_hand_leaves_the_pool() -> None:
    # the only fuel is seat 2's coal: once seat 2 resigns nobody can trade for it; seat 0's shears are lost
    three = instance(
        [{"raw_iron": 2}, {"cobblestone": 8}, {"coal": 1, "diamond": 1}],
        [{"shears": 1}, {"furnace": 1}, {"torch": 4}],
        "resign#0",
    )
    game = new_game(three, first_proposer=0, max_turns=5)
    assert [player_view(game, s)["target_reachable"] for s in range(3)] == [True, True, False]
    game.apply(2, {"type": "resign"})
    assert not game.finished
    assert player_view(game, 0)["target_reachable"] is False
    assert player_view(game, 1)["target_reachable"] is True
    assert player_view(game, 2)["target_reachable"] is None  # a resigned seat is told nothing
