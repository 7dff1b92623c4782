"""Per-player, spectator and researcher views, and filtered logs: what each may see, and no more."""

from __future__ import annotations

import json

import pytest
from engine_support import THREE_PLAYER, TWO_PLAYER, new_game

from server.game import GameError, filter_events, visible_to
from server.game.events import Event
from server.game.legal import (
    action_mask,
    decision_options,
    legal_actions,
    possible_crafts,
    possible_proposals,
    random_proposal,
)
from server.game.views import player_view, researcher_view, spectator_view, viewer_log


def dump(view: dict) -> str:
    return json.dumps(view, sort_keys=True)


def test_player_view_shows_own_target_and_public_hands_only():
    game = new_game()
    view = player_view(game, 0)
    assert view["seat"] == 0 and view["target"] == {"torch": 4}
    assert view["hands"] == game.hands
    assert "shears" not in dump(view)  # the opponent's target
    assert view["your_turn"] and view["legal_actions"] == ["propose", "pass", "resign"]
    other = player_view(game, 1)
    assert other["target"] == {"shears": 1} and not other["your_turn"]
    assert other["legal_actions"] == ["resign"]
    assert view["phase"] == "trade_propose" and view["turn"] == 1 and view["proposer"] == 0
    assert view["awaiting"] == [0] and view["log_size"] == len(game.events)  # all public so far
    assert other["phase"] == "trade" and other["awaiting"] == []  # not the proposer: no sub-phase


def test_views_are_json_safe_copies():
    game = new_game()
    game.apply(0, {"type": "pass"})
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/3"})
    for view in (player_view(game, 0), spectator_view(game), researcher_view(game)):
        json.dumps(view)
    view = player_view(game, 0)
    view["hands"][0]["diamond"] = 99
    view["target"]["torch"] = 0
    assert game.hands[0].get("diamond") is None and game.target(0) == {"torch": 4}


def _scribble(value: object) -> None:
    """Change every container inside ``value`` in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _scribble(item)
        value["scribbled"] = 1
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")


def test_views_share_no_container_with_the_game_or_each_other():
    """Views are built from per-state cached parts: changing everything in one view changes nothing else."""
    game = new_game(THREE_PLAYER)
    trade = {"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {"stick": 1}, "message": "hi"}
    game.apply(0, trade)
    game.apply(1, {"type": "decide", "accept": True, "message": "ok"})  # a public trade in the history
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/3"})
    game.apply(None, {"type": "timeout"})  # the craft phase ends: turn 2, seat 1 proposes
    game.apply(1, {"type": "propose", "to": 0, "offer": {"raw_iron": 1}, "request": {"oak_log": 1}})
    assert player_view(game, 1)["pending_proposal"] is not None
    digest = game.state_digest()
    viewers = [*range(game.players), None]
    before = {v: dump(spectator_view(game) if v is None else player_view(game, v)) for v in viewers}
    for viewer in viewers:
        _scribble(spectator_view(game) if viewer is None else player_view(game, viewer))
    _scribble(researcher_view(game))
    for accessor in (game.proposals, game.pending_proposal, game.turn_records, game.hands):
        _scribble(accessor)
    assert game.state_digest() == digest
    assert {v: dump(spectator_view(game) if v is None else player_view(game, v)) for v in viewers} == before
    assert "scribbled" not in json.dumps([e.to_dict() for e in game.events])


def test_crafts_this_phase_are_copies():
    game = new_game()
    game.apply(0, {"type": "pass"})
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/3"})
    _scribble(game.crafts_this_phase(0))
    _scribble(player_view(game, 0)["crafts_this_phase"])
    assert "scribbled" not in dump(player_view(game, 0))
    assert "scribbled" not in json.dumps([e.to_dict() for e in game.events])


def test_crafting_hand_is_private_and_exact():
    game = new_game()
    game.apply(0, {"type": "pass"})
    game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/3"})
    mine = player_view(game, 0)
    assert mine["crafting_hand"]["oak_log"] == "5/3" and mine["crafting_hand"]["oak_planks"] == "4/3"
    assert mine["crafts_this_phase"][0]["recipe"] == "oak_planks"
    assert mine["hands"][0]["oak_log"] == 2  # the public hand is unchanged during the phase
    theirs = player_view(game, 1)
    assert theirs["crafting_hand"]["birch_log"] == "1" and theirs["crafts_this_phase"] == []
    assert "oak_planks" not in dump(theirs) and "5/3" not in dump(theirs)
    assert "oak_planks" not in dump(spectator_view(game))
    game.apply(0, {"type": "finish_crafting"})
    assert player_view(game, 1)["crafting_finished"] == [0]
    assert "craft" in player_view(game, 1)["legal_actions"]


def test_pending_and_rejected_proposals_are_seen_by_the_parties_only():
    game = new_game(THREE_PLAYER)
    game.apply(
        0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {"stick": 1}, "message": "zebra"}
    )
    for seat in (0, 1):
        view = player_view(game, seat)
        assert view["pending_proposal"]["message"] == "zebra"
        assert view["awaiting"] == [1]
    third = player_view(game, 2)
    assert third["pending_proposal"] is None and third["proposals"] == []
    assert third["awaiting"] == [] and not third["your_turn"]
    assert "zebra" not in dump(third) and "zebra" not in dump(spectator_view(game))
    assert third["trade_history"] == [{"turn": 1, "proposer": 0, "outcome": "in_progress"}]
    game.apply(1, {"type": "decide", "accept": False, "message": "giraffe"})
    third = player_view(game, 2)
    assert third["trade_history"] == [{"turn": 1, "proposer": 0, "outcome": "no_trade"}]
    for text in ("zebra", "giraffe"):
        assert text not in dump(third)
        assert text not in dump(spectator_view(game))
        assert all(text not in json.dumps(e.to_dict()) for e in filter_events(game.events, 2))
    party = player_view(game, 0)
    assert party["proposals"][0]["status"] == "rejected" and party["proposals"][0]["reply"] == "giraffe"
    assert party["trade_history"][0] == {"turn": 1, "proposer": 0, "outcome": "rejected", "to": 1}
    assert "giraffe" in dump(researcher_view(game))


@pytest.mark.parametrize("messages", ["parties", "public"])
def test_accepted_trade_is_public_history_and_its_messages_as_the_settings_say(messages: str) -> None:
    game = new_game(THREE_PLAYER, trade_messages=messages)
    game.apply(
        0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {"stick": 1}, "message": "zebra"}
    )
    game.apply(1, {"type": "decide", "accept": True, "message": "okapi"})
    trade = {"proposer": 0, "to": 1, "offer": {"coal": 1}, "request": {"stick": 1}}
    said = {"message": "zebra", "reply": "okapi"}
    entry = player_view(game, 2)["trade_history"][0]
    assert entry["outcome"] == "traded"
    assert entry["trade"] == (trade | said if messages == "public" else trade)
    for seat in (0, 1):  # the traders always read their own messages
        assert player_view(game, seat)["trade_history"][0]["trade"] == trade | said
    assert spectator_view(game)["trade_history"][0]["outcome"] == "traded"
    if messages == "parties":  # nothing a third player or a spectator receives carries them
        for viewer in (2, None):
            shown = dump(spectator_view(game) if viewer is None else player_view(game, viewer))
            shown += json.dumps([e.to_dict() for e in filter_events(game.events, viewer)])
            assert "zebra" not in shown and "okapi" not in shown


def test_tom_duty_in_view():
    game = new_game(THREE_PLAYER, tom_orders=[[0, 1, 2], [0], []])
    view = player_view(game, 0)
    assert view["tom"] == {"orders": [0, 1, 2], "due": True, "items": game.tom_items, "opponents": [1, 2]}
    assert view["legal_actions"] == ["report_tom", "resign"]
    assert player_view(game, 2)["tom"] is None
    game.apply(1, {"type": "report_tom", "v0": dict.fromkeys(game.tom_items, 7)})
    assert player_view(game, 1)["tom"]["due"] is False
    # another seat's report never shows: values of 7 appear nowhere in seat 0's view or log
    assert all(e.type != "tom_reported" for e in filter_events(game.events, 0))
    assert "tom_reports" not in player_view(game, 0)
    assert researcher_view(game)["tom_reports"][0]["seat"] == 1


def test_spectator_and_researcher_views():
    game = new_game(idle_timeouts_before_bot=3)
    spectator = spectator_view(game)
    assert spectator["seat"] is None and spectator["target"] is None and spectator["legal_actions"] == []
    assert "torch" not in dump(spectator) and "shears" not in dump(spectator)
    game.apply(None, {"type": "timeout"})
    research = researcher_view(game)
    assert research["targets"] == [{"torch": 4}, {"shears": 1}]
    assert research["idle_timeouts"] == [1, 0] and research["idle_timeouts_before_bot"] == 3
    assert research["crafting"] is not None and research["waiting_for"] == [0, 1]
    assert research["settings"]["idle_timeouts_before_bot"] == 3
    assert research["log_digest"] == game.log_digest()


def test_player_view_refuses_unknown_seats():
    game = new_game()
    for seat in (2, -1, None, True):
        with pytest.raises(GameError) as caught:
            player_view(game, seat)  # type: ignore[arg-type]
        assert caught.value.code == "not_a_player"


def test_filter_events_and_visibility():
    public = Event(0, "passed", 0, {}, "public")
    private = Event(1, "proposed", 0, {}, (0, 1))
    assert visible_to(public, None) and visible_to(public, 2)
    assert visible_to(private, 1) and not visible_to(private, 2) and not visible_to(private, None)
    assert filter_events([public, private], 2) == [public]
    assert filter_events([public, private], 0) == [public, private]
    record = private.to_dict()
    assert record["visibility"] == [0, 1]
    assert Event.from_dict(json.loads(json.dumps(record))) == private


def test_legal_helpers():
    game = new_game()
    assert action_mask(game, 0) == {
        "report_tom": False,
        "propose": True,
        "pass": True,
        "decide": False,
        "craft": False,
        "finish_crafting": False,
        "resign": True,
    }
    proposals = list(possible_proposals(game, 0))
    # 1-for-1 swaps, gifts and asks between seat 0's 4 item kinds and seat 1's 4 item kinds
    assert len(proposals) == 4 + 4 + 4 * 4 - 1  # minus the raw_iron-for-raw_iron swap
    for proposal in proposals:
        copy = new_game()
        copy.apply(0, proposal)
    assert list(possible_proposals(game, 1)) == []
    bigger = list(possible_proposals(game, 0, max_items=2, max_units=2))
    assert len(bigger) > len(proposals)
    assert all(p.to == 1 for p in bigger)
    import random

    rng = random.Random(1)
    for _ in range(50):
        copy = new_game()
        copy.apply(0, random_proposal(copy, 0, rng))
    game.apply(0, proposals[0])
    assert [d.accept for d in decision_options(game, 1)] == [True, False]
    assert decision_options(game, 0) == []


def test_possible_crafts_are_all_accepted():
    game = new_game(TWO_PLAYER)
    assert possible_crafts(game, 0) == []
    game.apply(0, {"type": "pass"})
    crafts = possible_crafts(game, 0)
    assert {c["recipe"] for c in crafts} >= {"oak_planks", "iron_ingot", "charcoal", "stone"}
    for craft in crafts:
        copy = new_game(TWO_PLAYER)
        copy.apply(0, {"type": "pass"})
        copy.apply(0, craft["action"])
    assert legal_actions(game, 0) == ["craft", "finish_crafting", "resign"]


def _outsider_state(game, seat: int) -> tuple:
    view = player_view(game, seat)
    return (
        view["phase"],
        view["awaiting"],
        view["log_size"],
        view["trade_history"],
        viewer_log(game.events, seat),
    )


def test_a_third_player_cannot_tell_a_pass_from_a_rejected_proposal():
    passing = new_game(THREE_PLAYER)
    rejecting = new_game(THREE_PLAYER)
    before = _outsider_state(passing, 2)
    rejecting.apply(0, {"type": "propose", "to": 1, "offer": {"coal": 1}, "request": {}})
    assert _outsider_state(rejecting, 2) == before  # a pending proposal is invisible too
    assert player_view(rejecting, 2)["phase"] == "trade"
    passing.apply(0, {"type": "pass"})
    rejecting.apply(1, {"type": "decide", "accept": False, "message": "no"})
    assert passing.phase == rejecting.phase == "craft"
    assert _outsider_state(passing, 2) == _outsider_state(rejecting, 2)
    assert player_view(passing, 0)["trade_history"][0]["outcome"] == "passed"
    assert player_view(passing, 1)["trade_history"][0]["outcome"] == "no_trade"


def test_viewer_logs_are_numbered_per_viewer_and_hide_private_event_counts():
    game = new_game(THREE_PLAYER)
    game.apply(0, {"type": "pass"})
    start = player_view(game, 1)["log_size"]
    for _ in range(3):  # seat 0 crafts privately
        game.apply(0, {"type": "craft", "recipe": "oak_planks", "runs": "1/4"})
    assert player_view(game, 1)["log_size"] == start
    log = viewer_log(game.events, 1)
    assert [r["n"] for r in log] == list(range(len(log)))
    assert all("seq" not in r for r in log)
    assert len(viewer_log(game.events, 0)) == start + 3 + 1  # its own pass and crafts
    tail = viewer_log(game.events[-2:], 0, start=7)
    assert [r["n"] for r in tail] == [7, 8]


# --------------------------------------------------------------------------- the history window
def _long_game(players: int, turns: int):  # type: ignore[no-untyped-def]
    """A game of ``turns`` turns (targets nobody can reach) with proposals, rejections, trades and passes."""
    import random

    from engine_support import play_random

    inst = THREE_PLAYER if players == 3 else TWO_PLAYER
    endless = type(inst)(
        inst.id, inst.ruleset, inst.mode, inst.hands, tuple({"diamond": 99} for _ in inst.hands)
    )
    game = new_game(endless, max_turns=turns)
    for _ in play_random(game, random.Random(players)):
        pass
    assert game.finished and game.turn == turns
    return game


@pytest.mark.parametrize("players", [2, 3])
def test_views_carry_a_bounded_window_of_the_latest_turns(
    players: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.game import views

    window = views.VIEW_HISTORY_TURNS
    game = _long_game(players, window * 3)
    windowed = [player_view(game, s) for s in range(players)] + [spectator_view(game)]
    monkeypatch.setattr(views, "VIEW_HISTORY_TURNS", 10**9)  # the unbounded history, for reference
    game.state_cache().clear()
    whole = [player_view(game, s) for s in range(players)] + [spectator_view(game)]
    outcomes = set()
    for short, full in zip(windowed, whole, strict=True):
        assert len(full["trade_history"]) == 3 * window
        # the window is exactly the latest turns of the whole history, and their proposals
        assert short["trade_history"] == full["trade_history"][-window:]
        first_turn = short["trade_history"][0]["turn"]
        assert first_turn == game.turn - window + 1
        assert short["proposals"] == [p for p in full["proposals"] if p["turn"] >= first_turn]
        assert {k: v for k, v in short.items() if k not in ("trade_history", "proposals")} == {
            k: v for k, v in full.items() if k not in ("trade_history", "proposals")
        }
        outcomes |= {entry["outcome"] for entry in full["trade_history"]}
    assert {"traded", "no_trade"} <= outcomes  # the random game exercised the history
