"""Unit tests of the rules of play (DESIGN.md §2) and of every illegal action's typed error.

Every illegal action is checked with ``expect_error``: the right code, a sentence, and an unchanged
state (same ``state_digest()`` and the same number of events).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from engine_support import (
    THREE_PLAYER,
    TWO_PLAYER,
    expect_error,
    instance,
    new_game,
    replayed,
    small_rules,
)
from pydantic import ValidationError

from server.game import Game, GameError, GameSettings


def types(events) -> list[str]:
    return [e.type for e in events]


def propose(game: Game, seat: int, to: int, offer=None, request=None, message: str = "") -> list:
    return game.apply(
        seat,
        {"type": "propose", "to": to, "offer": offer or {}, "request": request or {}, "message": message},
    )


def to_craft_phase(game: Game) -> None:
    game.apply(game.proposer, {"type": "pass"})
    assert game.phase == "craft"


def finish_all(game: Game) -> list:
    events = []
    for seat in sorted(game.waiting_for()):
        events += game.apply(seat, {"type": "finish_crafting"})
    return events


# --- start ----------------------------------------------------------------------------------------
def test_new_game_starts_with_the_first_proposer_in_the_trade_phase():
    game = new_game()
    assert types(game.events) == ["game_started", "phase_started"]
    assert game.events[0].payload["hands"] == [dict(sorted(h.items())) for h in TWO_PLAYER.hands]
    assert "targets" not in game.events[0].payload  # targets are private
    assert (game.phase, game.turn, game.proposer) == ("trade_propose", 1, 0)
    assert game.waiting_for() == {0}
    assert game.hands == [dict(h) for h in TWO_PLAYER.hands]
    assert not game.finished and game.winners == []


def test_first_proposer_setting_and_seeded_draw():
    assert new_game(first_proposer=1).proposer == 1
    drawn = {new_game(seed=s, first_proposer=None).proposer for s in range(30)}
    assert drawn == {0, 1}
    assert new_game(seed=7, first_proposer=None).proposer == new_game(seed=7, first_proposer=None).proposer


@pytest.mark.parametrize(
    ("settings", "inst"),
    [
        ({"tom_orders": [[0], [0], [0]]}, TWO_PLAYER),
        ({"first_proposer": 2}, TWO_PLAYER),
        ({}, instance([{"unobtainium": 1}, {"coal": 1}], [{"torch": 1}, {"torch": 1}])),
        ({}, instance([{"coal": 1}, {"coal": 1}], [{"torch": 1}, {"ghost_item": 1}])),
    ],
)
def test_settings_that_do_not_fit_the_instance_are_refused(settings, inst):
    with pytest.raises(GameError) as caught:
        new_game(inst, **settings)
    assert caught.value.code == "invalid_settings"


@pytest.mark.parametrize("orders", [[[3]], [[1]], [[0, 0]], [[0, -1]]])
def test_settings_validate_tom_orders(orders):
    with pytest.raises(ValidationError):
        GameSettings(tom_orders=orders)


def test_settings_round_trip_and_refuse_unknown_keys():
    settings = GameSettings(max_turns=3, tom_orders=[[2, 0, 1], []], deadlines={"craft": 60})
    assert settings.tom_orders == [[0, 1, 2], []]
    assert GameSettings.model_validate(settings.model_dump()) == settings
    with pytest.raises(ValidationError):
        GameSettings(max_turn=3)


# --- trade ----------------------------------------------------------------------------------------
def test_accepted_proposal_swaps_items_and_becomes_public():
    game = new_game()
    events = propose(game, 0, 1, {"coal": 1}, {"stick": 2}, "coal for sticks?")
    assert types(events) == ["proposed"]
    assert events[0].visibility == (0, 1)
    assert game.phase == "trade_decide" and game.waiting_for() == {1}
    events = game.apply(1, {"type": "decide", "accept": True, "message": "deal"})
    assert types(events) == ["decided", "trade_executed", "phase_started"]
    assert events[0].visibility == (0, 1)
    executed = events[1]
    assert executed.is_public
    assert executed.payload["offer"] == {"coal": 1} and executed.payload["request"] == {"stick": 2}
    assert game.hands[0] == {"oak_log": 2, "cobblestone": 3, "raw_iron": 1, "stick": 2}
    assert game.hands[1] == {"birch_log": 1, "raw_iron": 2, "coal": 1, "diamond": 1}
    assert game.phase == "craft"


def test_rejected_proposal_changes_nothing_and_stays_private():
    game = new_game()
    hands = game.hands
    propose(game, 0, 1, {"coal": 1}, {"diamond": 1}, "secret")
    events = game.apply(1, {"type": "decide", "accept": False, "message": "no"})
    assert types(events) == ["decided", "phase_started"]
    assert game.hands == hands
    assert all(e.visibility == (0, 1) for e in game.events if e.type in ("proposed", "decided"))
    assert game.proposals[0]["status"] == "rejected" and game.proposals[0]["reply"] == "no"


def test_gift_and_pure_request_are_valid_proposals():
    game = new_game()
    propose(game, 0, 1, {"coal": 1})
    game.apply(1, {"type": "decide", "accept": True})
    assert game.hands[1]["coal"] == 1 and "coal" not in game.hands[0]


def test_prefixed_item_names_are_accepted():
    game = new_game()
    events = propose(game, 0, 1, {"small:coal": 1}, {"stick": 1})
    assert events[0].payload["offer"] == {"coal": 1}


@pytest.mark.parametrize(
    ("actor", "action", "code"),
    [
        (1, {"type": "propose", "to": 0, "offer": {"stick": 1}}, "not_your_turn"),
        (0, {"type": "propose", "to": 0, "offer": {"coal": 1}}, "proposal_to_self"),
        (0, {"type": "propose", "to": 2, "offer": {"coal": 1}}, "unknown_player"),
        (0, {"type": "propose", "to": 1, "offer": {"unobtainium": 1}}, "unknown_item"),
        (0, {"type": "propose", "to": 1, "request": {"small:nothing": 1}}, "unknown_item"),
        (0, {"type": "propose", "to": 1}, "empty_trade"),
        (
            0,
            {"type": "propose", "to": 1, "offer": {"raw_iron": 1}, "request": {"raw_iron": 1}},
            "same_item_both_sides",
        ),
        (0, {"type": "propose", "to": 1, "offer": {"coal": 2}}, "item_not_held"),
        (0, {"type": "propose", "to": 1, "offer": {"stick": 1}}, "item_not_held"),
        (0, {"type": "propose", "to": 1, "request": {"diamond": 2}}, "item_not_held"),
        (0, {"type": "propose", "to": 1, "request": {"coal": 1}}, "item_not_held"),
        (0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "message": "x" * 501}, "message_too_long"),
        (0, {"type": "propose", "to": 1, "offer": {"coal": 0}}, "invalid_action"),
        (0, {"type": "propose", "to": "one", "offer": {"coal": 1}}, "invalid_action"),
        (0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "bonus": 1}, "invalid_action"),
        (0, {"type": "decide", "accept": True}, "wrong_phase"),
        (0, {"type": "craft", "recipe": "stick"}, "wrong_phase"),
        (0, {"type": "finish_crafting"}, "wrong_phase"),
        (0, {"type": "report_tom", "v0": {}}, "wrong_phase"),
        (5, {"type": "pass"}, "not_a_player"),
        (-1, {"type": "pass"}, "not_a_player"),
        (None, {"type": "pass"}, "not_a_player"),
        (0, {"type": "timeout"}, "not_allowed"),
        (0, {"type": "shout"}, "invalid_action"),
        (0, "{not json", "invalid_action"),
        (0, ["pass"], "invalid_action"),
    ],
)
def test_illegal_actions_in_the_propose_phase(actor, action, code):
    expect_error(new_game(), actor, action, code)


def test_invalid_action_error_names_the_field():
    err = expect_error(new_game(), 0, {"type": "propose", "to": 1, "offer": {"coal": -1}}, "invalid_action")
    assert "offer.coal" in err.message
    assert err.details["problems"][0]["field"] == "offer.coal"
    assert err.to_dict()["code"] == "invalid_action"


def test_message_limit_follows_settings():
    game = new_game(message_max_chars=5)
    expect_error(
        game, 0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "message": "123456"}, "message_too_long"
    )
    propose(game, 0, 1, {"coal": 1}, message="12345")
    expect_error(game, 1, {"type": "decide", "accept": False, "message": "too long"}, "message_too_long")


def test_decide_errors():
    game = new_game(THREE_PLAYER)
    propose(game, 0, 1, {"coal": 1}, {"stick": 1})
    expect_error(game, 0, {"type": "decide", "accept": True}, "not_your_turn")
    expect_error(game, 2, {"type": "decide", "accept": True}, "not_your_turn")
    expect_error(game, 0, {"type": "propose", "to": 2, "offer": {"coal": 1}}, "wrong_phase")
    expect_error(game, 1, {"type": "decide", "accept": "yes"}, "invalid_action")
    expect_error(game, 0, {"type": "pass"}, "wrong_phase")


def test_pass_allowed_and_disallowed():
    game = new_game()
    events = game.apply(0, {"type": "pass"})
    # a pass is private to the proposer: others cannot tell it from a rejected proposal
    assert types(events) == ["passed", "phase_started"] and events[0].visibility == (0,)
    assert game.phase == "craft"
    game = new_game(allow_pass=False)
    expect_error(game, 0, {"type": "pass"}, "not_allowed")
    expect_error(game, 1, {"type": "pass"}, "not_your_turn")


def test_pass_is_allowed_when_no_proposal_is_possible():
    inst = instance([{}, {}], [{"torch": 1}, {"torch": 1}])
    game = new_game(inst, allow_pass=False)
    expect_error(game, 0, {"type": "propose", "to": 1, "offer": {"coal": 1}}, "item_not_held")
    game.apply(0, {"type": "pass"})
    assert game.phase == "craft"


# --- craft ----------------------------------------------------------------------------------------
def test_crafting_is_private_until_everyone_finishes_then_floored_and_revealed():
    game = new_game()
    to_craft_phase(game)
    public_before = game.hands
    events = game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/4"})
    assert types(events) == ["crafted"] and events[0].visibility == (0,)
    assert events[0].payload["consumed"] == {"oak_log": "1/4"}
    assert events[0].payload["produced"] == {"oak_planks": "1"}
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": 0.5})
    assert game.crafting_hand(0)["oak_log"] == Fraction(5, 4)
    assert game.crafting_hand(0)["oak_planks"] == 3
    assert game.hands == public_before  # nothing public yet
    events = game.apply(0, {"type": "finish_crafting"})
    assert types(events) == ["craft_finished"] and events[0].is_public
    assert set(events[0].payload) == {"turn", "seat"}
    expect_error(game, 0, {"type": "craft", "recipe": "stick"}, "already_finished")
    expect_error(game, 0, {"type": "finish_crafting"}, "already_finished")
    events = game.apply(1, {"type": "finish_crafting"})
    assert types(events) == ["craft_finished", "hands_revealed", "turn_ended", "phase_started"]
    revealed = events[1].payload["hands"]
    assert revealed[0] == {"oak_log": 1, "oak_planks": 3, "coal": 1, "cobblestone": 3, "raw_iron": 1}
    assert game.hands == revealed
    assert (game.turn, game.proposer, game.phase) == (2, 1, "trade_propose")
    assert game.crafting_hand(0) is None


def test_smelting_burns_fuel_in_proportion_and_choices_pick_items():
    game = new_game()
    to_craft_phase(game)
    events = game.apply(0, {"type": "craft", "recipe": "iron_ingot", "runs": 1, "fuel": "coal"})
    assert events[0].payload["consumed"] == {"coal": "1/8", "raw_iron": "1"}
    events = game.apply(1, {"type": "craft", "recipe": "iron_ingot", "runs": "1", "fuel": "stick"})
    assert events[0].payload["consumed"] == {"raw_iron": "1", "stick": "2"}
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": 1})
    events = game.apply(0, {"type": "craft", "recipe": "stick", "choices": {"0": "oak_planks"}})
    assert events[0].payload["choices"] == {"0": "oak_planks"}
    assert events[0].payload["consumed"] == {"oak_planks": "2"}


@pytest.mark.parametrize(
    ("seat", "action", "code"),
    [
        (0, {"type": "craft", "recipe": "shears"}, "insufficient_items"),
        (0, {"type": "craft", "recipe": "warp_drive"}, "unknown_recipe"),
        (0, {"type": "craft", "recipe": "oak_planks", "runs": "0"}, "invalid_runs"),
        (0, {"type": "craft", "recipe": "oak_planks", "runs": "-1/2"}, "invalid_runs"),
        (0, {"type": "craft", "recipe": "oak_planks", "runs": "lots"}, "invalid_runs"),
        (0, {"type": "craft", "recipe": "oak_planks", "runs": "1/10000000"}, "invalid_runs"),
        (0, {"type": "craft", "recipe": "oak_planks", "runs": True}, "invalid_action"),
        (0, {"type": "craft", "recipe": "stick", "choices": {"0": "coal"}}, "invalid_choice"),
        (0, {"type": "craft", "recipe": "stick", "choices": {"5": "oak_planks"}}, "invalid_choice"),
        (0, {"type": "craft", "recipe": "stick", "choices": {"0": "plutonium"}}, "unknown_item"),
        (0, {"type": "craft", "recipe": "iron_ingot", "fuel": "cobblestone"}, "invalid_choice"),
        (0, {"type": "craft", "recipe": "iron_ingot", "fuel": "charcoal"}, "insufficient_items"),
        (0, {"type": "propose", "to": 1, "offer": {"coal": 1}}, "wrong_phase"),
        (0, {"type": "pass"}, "wrong_phase"),
    ],
)
def test_illegal_crafts(seat, action, code):
    game = new_game()
    to_craft_phase(game)
    expect_error(game, seat, action, code)


def test_no_fuel_error():
    inst = instance([{"raw_iron": 2}, {"coal": 1}], [{"shears": 1}, {"torch": 1}])
    game = new_game(inst)
    to_craft_phase(game)
    expect_error(game, 0, {"type": "craft", "recipe": "iron_ingot"}, "no_fuel")


def test_fraction_floor_drops_partial_items():
    game = new_game()
    to_craft_phase(game)
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "3/8"})  # 3/8 log -> 3/2 planks
    finish_all(game)
    assert game.hands[0]["oak_log"] == 1  # 13/8 floored
    assert game.hands[0]["oak_planks"] == 1  # 3/2 floored


# --- winning and the end ----------------------------------------------------------------------------
def craft_torches(game: Game, seat: int = 0) -> None:
    game.apply(seat, {"type": "craft", "recipe": "oak_planks"})
    game.apply(seat, {"type": "craft", "recipe": "stick"})
    game.apply(seat, {"type": "craft", "recipe": "torch"})


def craft_shears(game: Game, seat: int = 1) -> None:
    game.apply(seat, {"type": "craft", "recipe": "iron_ingot", "fuel": "birch_log"})
    game.apply(seat, {"type": "craft", "recipe": "iron_ingot", "fuel": "stick"})
    game.apply(seat, {"type": "craft", "recipe": "shears"})


def test_holding_the_target_after_the_craft_phase_wins():
    game = new_game()
    to_craft_phase(game)
    craft_torches(game)
    assert not game.finished  # only after the phase
    events = finish_all(game)
    assert types(events)[-4:] == ["hands_revealed", "player_won", "targets_revealed", "game_ended"]
    assert game.finished and game.winners == [0] and game.end_reason == "target_crafted"
    reveal = events[-2]
    assert reveal.is_public and reveal.payload["targets"] == [game.target(0), game.target(1)]
    assert reveal.payload["scores"] == [3, 0] == game.scores  # a sole win: 3 points
    assert game.phase == "finished" and game.waiting_for() == set()
    expect_error(game, 1, {"type": "pass"}, "game_over")
    expect_error(game, None, {"type": "timeout"}, "game_over")


def test_several_winners_in_one_phase():
    game = new_game()
    to_craft_phase(game)
    craft_torches(game)
    craft_shears(game)
    finish_all(game)
    assert game.winners == [0, 1]
    assert [e.payload["seat"] for e in game.events if e.type == "player_won"] == [0, 1]
    assert game.scores == [1, 1]  # a shared win: 1 point each by default


def test_a_target_held_from_the_start_wins_after_the_first_craft_phase():
    inst = instance([{"torch": 4}, {"coal": 1}], [{"torch": 4}, {"shears": 1}])
    game = new_game(inst)
    assert not game.finished
    to_craft_phase(game)
    finish_all(game)
    assert game.winners == [0]


def test_all_win_end_condition_keeps_playing_until_everyone_has_won():
    game = new_game(end_condition="all_win")
    to_craft_phase(game)
    craft_torches(game)
    finish_all(game)
    assert not game.finished and game.winners == [0] and game.turn == 2
    to_craft_phase(game)
    craft_shears(game)
    finish_all(game)
    assert game.finished and game.winners == [0, 1]


def test_max_turns_ends_without_winner_and_proposer_rotates():
    game = new_game(THREE_PLAYER, max_turns=4)
    proposers = []
    while not game.finished:
        proposers.append(game.proposer)
        to_craft_phase(game)
        finish_all(game)
    assert proposers == [0, 1, 2, 0]
    assert game.end_reason == "max_turns" and game.winners == [] and game.turn == 4
    assert game.events[-1].type == "game_ended"


# --- ToM reports ------------------------------------------------------------------------------------
def tom_game(**kw) -> Game:
    return new_game(THREE_PLAYER, tom_orders=[[0, 1, 2], [0], []], **kw)


def values(game: Game, v: int = 5) -> dict[str, int]:
    return dict.fromkeys(game.tom_items, v)


def test_tom_phase_opens_each_turn_for_reporting_seats():
    game = tom_game()
    assert game.phase == "tom_report" and game.waiting_for() == {0, 1}
    assert game.tom_items == sorted({i for h in THREE_PLAYER.hands for i in h})
    v = values(game)
    events = game.apply(1, {"type": "report_tom", "v0": v})
    assert types(events) == ["tom_reported"] and events[0].visibility == (1,)
    events = game.apply(0, {"type": "report_tom", "v0": v, "v1": {"1": v, "2": v}, "v2": {"1": v, "2": v}})
    assert types(events) == ["tom_reported", "phase_started"]
    assert game.phase == "trade_propose"
    assert len(game.tom_reports) == 2
    to_craft_phase(game)
    finish_all(game)
    assert game.phase == "tom_report" and game.turn == 2 and game.proposer == 1


def test_tom_report_errors():
    game = tom_game()
    v = values(game)
    both = {"1": v, "2": v}
    expect_error(game, 2, {"type": "report_tom", "v0": v}, "tom_not_requested")
    expect_error(game, 1, {"type": "report_tom", "v0": v, "v1": both}, "tom_not_requested")
    expect_error(game, 0, {"type": "report_tom", "v0": v, "v2": both}, "invalid_tom_report")
    expect_error(game, 0, {"type": "report_tom", "v0": v, "v1": {"1": v}, "v2": both}, "invalid_tom_report")
    expect_error(
        game, 0, {"type": "report_tom", "v0": v, "v1": {"1": v, "0": v}, "v2": both}, "invalid_tom_report"
    )
    missing = dict(v)
    missing.pop("coal")
    err = expect_error(game, 1, {"type": "report_tom", "v0": missing}, "invalid_tom_report")
    assert err.details["missing"] == ["coal"]
    err = expect_error(game, 1, {"type": "report_tom", "v0": {**v, "torch": 3}}, "invalid_tom_report")
    assert err.details["extra"] == ["torch"]
    expect_error(game, 1, {"type": "report_tom", "v0": {**v, "coal": 11}}, "invalid_action")
    expect_error(game, 1, {"type": "report_tom", "v0": {**v, "coal": -1}}, "invalid_action")
    expect_error(game, 1, {"type": "report_tom", "v0": {**v, "coal": 2.5}}, "invalid_action")
    expect_error(game, 0, {"type": "propose", "to": 1, "offer": {"coal": 1}}, "wrong_phase")
    game.apply(1, {"type": "report_tom", "v0": v})
    expect_error(game, 1, {"type": "report_tom", "v0": v}, "already_reported")


def test_tom_values_accept_prefixed_item_names():
    game = tom_game()
    v = {f"small:{item}": 3 for item in game.tom_items}
    events = game.apply(1, {"type": "report_tom", "v0": v})
    assert set(events[0].payload["v0"]) == set(game.tom_items)


def test_two_player_v1_is_keyed_by_the_single_opponent():
    game = new_game(tom_orders=[[0, 1], [0]])
    v = values(game)
    game.apply(0, {"type": "report_tom", "v0": v, "v1": {"1": v}})
    game.apply(1, {"type": "report_tom", "v0": v})
    assert game.phase == "trade_propose"


# --- timeouts -------------------------------------------------------------------------------------
def test_timeout_policies_for_every_phase_and_idle_counters():
    game = tom_game()
    game.apply(1, {"type": "report_tom", "v0": values(game)})
    events = game.apply(None, {"type": "timeout", "phase": "tom_report", "turn": 1})
    assert types(events) == ["timeout", "tom_skipped", "phase_started"]
    assert events[0].payload["seats"] == [0]
    assert game.idle_timeouts() == [1, 0, 0]
    events = game.apply(None, {"type": "timeout"})
    assert types(events) == ["timeout", "passed", "phase_started"]
    assert events[1].payload == {"turn": 1, "seat": 0, "reason": "timeout"}
    assert game.idle_timeouts() == [2, 0, 0]
    game.apply(2, {"type": "finish_crafting"})
    events = game.apply(None, {"type": "timeout"})
    assert types(events)[:3] == ["timeout", "craft_finished", "craft_finished"]
    assert "hands_revealed" in types(events)
    assert game.idle_timeouts() == [3, 1, 0]
    game.apply(0, {"type": "report_tom", "v0": values(game), "v1": {"1": values(game), "2": values(game)},
                   "v2": {"1": values(game), "2": values(game)}})  # fmt: skip
    assert game.idle_timeouts() == [0, 1, 0]  # acting ends the streak


def test_decision_timeout_rejects_by_default_and_is_private_to_the_parties():
    game = new_game(THREE_PLAYER)
    propose(game, 0, 1, {"coal": 1}, {"stick": 1})
    events = game.apply(None, {"type": "timeout"})
    assert types(events) == ["timeout", "decided", "phase_started"]
    assert events[0].visibility == (0, 1) and events[1].visibility == (0, 1)
    assert events[1].payload["accept"] is False and events[1].payload["reason"] == "timeout"
    assert game.proposals[0]["status"] == "rejected"


def test_decision_timeout_can_accept():
    game = new_game(timeout_policies={"trade_decide": "accept"})
    propose(game, 0, 1, {"coal": 1}, {"stick": 1})
    events = game.apply(None, {"type": "timeout"})
    assert "trade_executed" in types(events)
    assert game.hands[1]["coal"] == 1


def test_stale_timeouts_are_refused():
    game = new_game()
    expect_error(game, None, {"type": "timeout", "phase": "craft"}, "wrong_phase")
    expect_error(game, None, {"type": "timeout", "turn": 2}, "wrong_phase")


# --- resigning ------------------------------------------------------------------------------------
def test_resigned_seat_is_skipped_and_cannot_act_or_be_addressed():
    game = new_game(THREE_PLAYER)
    events = game.apply(1, {"type": "resign"})
    assert types(events) == ["resigned"] and events[0].is_public
    expect_error(game, 1, {"type": "pass"}, "player_left")
    expect_error(game, 0, {"type": "propose", "to": 1, "offer": {"coal": 1}}, "player_left")
    to_craft_phase(game)
    assert game.waiting_for() == {0, 2}
    finish_all(game)
    assert game.proposer == 2  # seat 1 is skipped


def test_resigning_proposer_passes_and_resigning_addressee_rejects():
    game = new_game(THREE_PLAYER)
    events = game.apply(0, {"type": "resign"})
    assert types(events) == ["resigned", "passed", "phase_started"]
    game = new_game(THREE_PLAYER)
    propose(game, 0, 1, {"coal": 1})
    events = game.apply(1, {"type": "resign"})
    assert types(events) == ["resigned", "decided", "phase_started"]
    assert events[1].payload["reason"] == "resign"


def test_resigning_proposer_cancels_its_pending_proposal():
    game = new_game(THREE_PLAYER)
    propose(game, 0, 1, {"coal": 1})
    events = game.apply(0, {"type": "resign"})
    assert types(events) == ["resigned", "proposal_cancelled", "phase_started"]
    assert events[1].visibility == (0, 1)
    assert game.proposals[0]["status"] == "cancelled"


def test_resigning_during_tom_and_craft_phases():
    game = tom_game()
    events = game.apply(0, {"type": "resign"})  # the proposer, awaited for a report
    assert types(events) == ["resigned", "tom_skipped"]
    events = game.apply(1, {"type": "report_tom", "v0": values(game)})
    assert types(events) == ["tom_reported", "passed", "phase_started"]  # no proposer left this turn
    assert game.phase == "craft"
    game.apply(1, {"type": "finish_crafting"})
    events = game.apply(2, {"type": "resign"})
    assert types(events)[:2] == ["resigned", "hands_revealed"]  # 1 active seat: the game ends
    assert game.finished and game.end_reason == "too_few_players"


def test_resign_leaving_one_player_ends_the_game_and_checks_the_craft():
    game = new_game()
    to_craft_phase(game)
    craft_torches(game)
    events = game.apply(1, {"type": "resign"})
    assert types(events) == ["resigned", "hands_revealed", "player_won", "targets_revealed", "game_ended"]
    assert game.winners == [0] and game.end_reason == "too_few_players"
    game = new_game()
    events = game.apply(0, {"type": "resign"})
    assert types(events) == ["resigned", "targets_revealed", "game_ended"] and game.winners == []


# --- log, replay, atomicity -------------------------------------------------------------------------
def test_replay_rebuilds_the_same_state_and_refuses_broken_logs():
    game = new_game(THREE_PLAYER, tom_orders=[[0], [0], [0]])
    for seat in (0, 1, 2):
        game.apply(seat, {"type": "report_tom", "v0": values(game)})
    propose(game, 0, 2, {"coal": 1}, {"diamond": 1}, "hi")
    game.apply(2, {"type": "decide", "accept": True})
    game.apply(1, {"type": "craft", "recipe": "iron_ingot", "fuel": "stick", "runs": "1/2"})
    again = replayed(game)
    assert again.state_digest() == game.state_digest()
    assert again.log_digest() == game.log_digest()
    assert again.events == game.events
    records = [e.to_dict() for e in game.events]
    for broken, fragment in [
        ([{**records[1], "seq": 0}], "begin with game_started"),
        ([records[0], records[2]], "gap"),
        ([records[0], {**records[1], "type": "teleported"}], "unknown type"),
        ([records[0], {**records[1], "payload": {}}], "does not fit"),
    ]:
        with pytest.raises(GameError) as caught:
            Game.replay(game.instance, game.settings, game.rules, game.seed, broken)
        assert caught.value.code == "invalid_log" and fragment in caught.value.message


def test_replay_in_parts_equals_replay_at_once():
    game = new_game()
    propose(game, 0, 1, {"coal": 1})
    game.apply(1, {"type": "decide", "accept": True})
    partial = Game.replay(game.instance, game.settings, game.rules, game.seed, game.events[:2])
    partial.apply_events(game.events[2:])
    assert partial.state_digest() == game.state_digest()


def test_same_actions_same_log_digest_and_store_fields_are_ignored():
    def play() -> Game:
        game = new_game(seed=3, first_proposer=None)
        game.apply(game.proposer, {"type": "pass"})
        return game

    a, b = play(), play()
    assert a.log_digest() == b.log_digest()
    stored = [{**e.to_dict(), "time": 123.4, "game_id": "g1"} for e in a.events]
    assert Game.replay(a.instance, a.settings, a.rules, a.seed, stored).log_digest() == a.log_digest()


def test_an_unexpected_failure_after_emitting_restores_the_state(monkeypatch):
    game = new_game()
    before = game.state_digest()

    def broken(self):
        raise RuntimeError("bug in a transition")

    monkeypatch.setattr(Game, "_start_craft", broken)
    with pytest.raises(RuntimeError):
        game.apply(0, {"type": "pass"})  # 'passed' was emitted before the failure
    assert game.state_digest() == before and len(game.events) == 2


def test_apply_accepts_models_dicts_and_json_text():
    from server.game.actions import Pass

    for action in (Pass(), {"type": "pass"}, '{"type": "pass"}'):
        game = new_game()
        game.apply(0, action)
        assert game.phase == "craft"


def test_rules_from_a_data_pack_folder_play_too(tmp_path):
    # the loader path (files in the data-pack layout), not just the in-code rule set
    import json

    (tmp_path / "recipes").mkdir()
    (tmp_path / "ruleset.json").write_text(json.dumps({"name": "pack", "prefix": "pack:"}))
    (tmp_path / "recipes" / "bread.json").write_text(
        json.dumps(
            {
                "type": "pack:crafting_shapeless",
                "ingredients": [{"item": "pack:wheat"}] * 3,
                "result": {"item": "pack:bread"},
            }
        )
    )
    from craft_rules.loader import load_rule_set_from

    rules, _ = load_rule_set_from(tmp_path)
    inst = instance([{"wheat": 2}, {"wheat": 1}], [{"bread": 1}, {"bread": 1}])
    game = Game.new(inst, GameSettings(ruleset="pack"), rules, 0)
    propose(game, 0, 1, request={"pack:wheat": 1})
    game.apply(1, {"type": "decide", "accept": True})
    game.apply(0, {"type": "craft", "recipe": "bread"})
    finish_all(game)
    assert game.winners == [0]


def test_small_rules_fixture_is_not_mutated_between_games():
    rules = small_rules()
    a = Game.new(TWO_PLAYER, GameSettings(ruleset="small"), rules, 0)
    a.apply(0, {"type": "pass"})
    b = Game.new(TWO_PLAYER, GameSettings(ruleset="small"), rules, 0)
    assert b.hands == [dict(h) for h in TWO_PLAYER.hands]


def test_small_rules_are_consistent() -> None:
    rules = small_rules()
    for recipe in rules.recipes.values():
        assert recipe.result in rules.items
        for ing in recipe.ingredients:
            assert set(ing.options) <= set(rules.items)
    assert set(rules.fuels.burn_ticks) <= set(rules.items)
