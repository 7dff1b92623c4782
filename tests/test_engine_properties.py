"""Property-based tests over many random games (2 and 3 players, the small test rule set and every
shipped rule set): items are conserved by trades and change only by recipes in crafting, never go
negative; nothing private reaches a third player's view or filtered log; replay equals the live state
at every step; the same seed gives the same log hash; illegal actions never change anything.

Example counts stay CI-sized; raise them with ENGINE_PROPERTY_EXAMPLES=2000 for a long run.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from engine_support import property_worlds, random_move
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from suite_support import SHIPPED_RULE_SETS

from craft_rules.crafting import craft, floor_hand
from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance
from server.game import Game, GameError, GameSettings, filter_events
from server.game.views import player_view, spectator_view

EXAMPLES = int(os.environ.get("ENGINE_PROPERTY_EXAMPLES", "300"))


WORLDS = property_worlds()
SHIPPED = sorted({rules.name for rules, _ in WORLDS} - {"small"})


def test_every_shipped_rule_set_is_exercised():
    assert tuple(SHIPPED) == SHIPPED_RULE_SETS
    assert {players for _, inst in WORLDS for players in [inst.players]} == {2, 3}


# --- the checks --------------------------------------------------------------------------------------
def total(hands: list[dict[str, Any]]) -> Counter:
    counter: Counter = Counter()
    for hand in hands:
        counter.update(hand)
    return counter


class Checker:
    """Runs one game step by step and checks every invariant after each step."""

    def __init__(self, game: Game):
        self.game = game
        self.messages: dict[str, dict[str, Any]] = {}  # unique message text -> proposal parties
        self.counter = 0

    def unique_message(self) -> str:
        self.counter += 1
        return f"<msg-{self.counter}-{self.game.seed}>"

    def crafting(self) -> list[dict[str, Fraction] | None]:
        return [self.game.crafting_hand(s) for s in range(self.game.players)]

    def step(self, actor: int | None, action: dict[str, Any]) -> bool:
        """Apply ``action``; checks either 'nothing changed' (illegal) or the step invariants."""
        game = self.game
        if action.get("type") in ("propose", "decide") and isinstance(action.get("message"), str):
            action = {**action, "message": self.unique_message()}
        before_digest, before_len = game.state_digest(), len(game.events)
        before_public, before_crafting = game.hands, self.crafting()
        try:
            events = game.apply(actor, action)
        except GameError as err:
            assert err.code and err.message
            json.dumps(err.to_dict())
            assert game.state_digest() == before_digest and len(game.events) == before_len
            return False
        assert events and events[0].seq == before_len
        if action.get("type") == "propose":
            self.messages[action["message"]] = {"parties": (actor, action["to"]), "seq": events[0].seq}
        self.check_items(events, before_public, before_crafting)
        return True

    def check_items(self, events, before_public, before_crafting) -> None:
        game = self.game
        after_public = game.hands
        kinds = [e.type for e in events]
        for hand in after_public:
            assert all(isinstance(q, int) and q > 0 for q in hand.values()), hand
        for hand in self.crafting():
            assert hand is None or all(q > 0 for q in hand.values()), hand
        if "hands_revealed" in kinds:
            # the only moment public hands change by crafting: floor of the private hands
            assert "crafted" not in kinds
            assert after_public == [floor_hand(h) for h in before_crafting]  # type: ignore[arg-type]
            return
        # trades move items between two hands and conserve the totals
        assert total(after_public) == total(before_public)
        trades = [e for e in events if e.type == "trade_executed"]
        if not trades:
            assert after_public == before_public
        for trade in trades:
            p, to = trade.payload["proposer"], trade.payload["to"]
            offer, request = Counter(trade.payload["offer"]), Counter(trade.payload["request"])
            assert Counter(after_public[p]) == Counter(before_public[p]) - offer + request
            assert Counter(after_public[to]) == Counter(before_public[to]) - request + offer
        # crafting hands change only by a recipe, exactly as craft_rules computes it
        after_crafting = self.crafting()
        crafted = [e for e in events if e.type == "crafted"]
        for event in crafted:
            seat, p = event.payload["seat"], event.payload
            choices = {int(k): v for k, v in p["choices"].items()}
            result = craft(game.rules, before_crafting[seat], p["recipe"], p["runs"], choices, p["fuel"])
            assert {k: str(v) for k, v in result.consumed.items()} == p["consumed"]
            assert after_crafting[seat] == result.hand
        changed = {e.payload["seat"] for e in crafted}
        for seat in range(game.players):
            if seat not in changed and before_crafting[seat] is not None and after_crafting[seat] is not None:
                assert after_crafting[seat] == before_crafting[seat]

    def check_replay(self) -> None:
        game = self.game
        records = json.loads(json.dumps([e.to_dict() for e in game.events]))
        again = Game.replay(game.instance, game.settings, game.rules, game.seed, records)
        assert again.state_digest() == game.state_digest()

    def check_privacy(self) -> None:
        game = self.game
        accepted = {p["message"] for p in game.proposals if p["status"] == "accepted"}
        for viewer in [*range(game.players), None]:
            log = filter_events(game.events, viewer)
            for event in log:
                p = event.payload
                if event.type in ("proposed", "decided", "proposal_cancelled"):
                    assert viewer in (p["proposer"], p.get("to", p.get("seat")))
                if event.type in ("tom_reported", "crafted"):
                    assert p["seat"] == viewer
                if event.type == "timeout" and p["phase"] == "trade_decide":
                    assert not event.is_public
            view = spectator_view(game) if viewer is None else player_view(game, viewer)
            assert view["log_size"] == len(log) == game.log_size(viewer)  # kept by the engine, not counted
            text = json.dumps(view) + json.dumps([e.to_dict() for e in log])
            for message, info in self.messages.items():
                if viewer not in info["parties"] and message not in accepted:
                    assert message not in text, (viewer, message)
            assert view["target"] == (None if viewer is None else game.target(viewer))
            assert "targets" not in view and "tom_reports" not in view and "crafting" not in view
            pending = game.pending_proposal
            if pending is not None and viewer not in (pending["proposer"], pending["to"]):
                assert view["awaiting"] == [] and view["pending_proposal"] is None


def junk_action(rng: random.Random, game: Game) -> dict[str, Any]:
    """A random, usually illegal, action: wrong phase, wrong seat, unknown or unheld items, bad values."""
    items = [*sorted(game.rules.items)[:30], "unobtainium", "minecraft:stick", "small:coal"]
    if game.hands[game.proposer]:
        items += list(game.hands[game.proposer])

    def counts() -> dict[str, int]:
        return {rng.choice(items): rng.randint(-1, 4) for _ in range(rng.randint(0, 2))}

    kind = rng.randrange(8)
    if kind == 0:
        return {
            "type": "propose",
            "to": rng.randint(-1, 3),
            "offer": counts(),
            "request": counts(),
            "message": "j",
        }
    if kind == 1:
        return {"type": "decide", "accept": rng.random() < 0.5}
    if kind == 2:
        recipe = rng.choice([*sorted(game.rules.recipes)[:20], "nope"])
        return {"type": "craft", "recipe": recipe, "runs": rng.choice(["1", "1/3", "0", "-1", "x", 2, 0.5])}
    if kind == 3:
        values = {item: rng.randint(-1, 11) for item in rng.sample(items, 3)}
        return {"type": "report_tom", "v0": values, "v1": rng.choice([None, {"0": values}])}
    if kind == 4:
        return {"type": rng.choice(["pass", "finish_crafting", "resign"])}
    if kind == 5:
        return {
            "type": "timeout",
            "phase": rng.choice(["craft", "trade_propose", None]),
            "turn": rng.randint(0, 3),
        }
    if kind == 6:
        return {"type": rng.choice(["fly", "", None]), "x": 1}
    return {"type": "craft", "recipe": "stick", "choices": {str(rng.randint(-1, 3)): rng.choice(items)}}


def play_checked(game: Game, rng: random.Random, check_every_step: bool = True) -> Checker:
    """Random play with illegal attempts, timeouts and rare resignations; checks after every step."""
    checker = Checker(game)
    for _ in range(5_000):
        if game.finished:
            break
        roll = rng.random()
        if roll < 0.12:
            actor = rng.choice([*range(-1, game.players + 1), None])
            checker.step(actor, junk_action(rng, game))
        elif roll < 0.15:
            checker.step(None, {"type": "timeout"})
        elif roll < 0.16:
            checker.step(rng.choice(game.active_seats), {"type": "resign"})
        else:
            seat = rng.choice(sorted(game.waiting_for()))
            action = random_move(game, seat, rng)
            assert checker.step(seat, action), action
        if check_every_step:
            checker.check_replay()
            checker.check_privacy()
    assert game.finished
    return checker


game_settings = st.fixed_dictionaries(
    {
        "max_turns": st.integers(1, 8),
        "allow_pass": st.booleans(),
        "end_condition": st.sampled_from(["first_win", "all_win"]),
        "first_proposer": st.sampled_from([0, None]),
        "timeout_policies": st.sampled_from([{}, {"trade_decide": "accept"}]),
        "tom": st.booleans(),
    }
)


def make_game(world: tuple[RuleSet, TaskInstance], options: dict[str, Any], seed: int) -> Game:
    rules, inst = world
    options = dict(options)
    tom = options.pop("tom")
    orders = [[0, 1, 2], *([[0]] * (inst.players - 1))] if tom else []
    return Game.new(inst, GameSettings(ruleset=rules.name, tom_orders=orders, **options), rules, seed)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=st.sampled_from(WORLDS), options=game_settings, seed=st.integers(0, 2**32 - 1))
def test_random_games_keep_every_invariant(world, options, seed):
    game = make_game(world, options, seed)
    play_checked(game, random.Random(seed))
    # the same seed and the same choices give the same log, byte for byte
    twin = make_game(world, options, seed)
    play_checked(twin, random.Random(seed), check_every_step=False)
    assert twin.log_digest() == game.log_digest()


@pytest.mark.slow
@settings(max_examples=max(EXAMPLES // 3, 20), deadline=None)
@given(world=st.sampled_from(WORLDS), seed=st.integers(0, 2**32 - 1))
def test_long_random_games_replay_exactly(world, seed):
    rules, inst = world
    game = Game.new(inst, GameSettings(ruleset=rules.name, max_turns=40), rules, seed)
    play_checked(game, random.Random(seed), check_every_step=False)
    Checker(game).check_replay()


# --- a stateful machine: hypothesis picks every step, so failures shrink to short scripts ----------
class EngineMachine(RuleBasedStateMachine):
    @initialize(world=st.sampled_from(WORLDS), options=game_settings, seed=st.integers(0, 2**16))
    def start(self, world, options, seed):
        self.checker = Checker(make_game(world, options, seed))

    @property
    def game(self) -> Game:
        return self.checker.game

    @precondition(lambda self: not self.game.finished)
    @rule(pick=st.integers(0, 2**32 - 1))
    def legal_action(self, pick):
        rng = random.Random(pick)
        seat = rng.choice(sorted(self.game.waiting_for()))
        action = random_move(self.game, seat, rng)
        assert self.checker.step(seat, action)

    @rule(pick=st.integers(0, 2**32 - 1), actor=st.sampled_from([None, -1, 0, 1, 2, 3]))
    def illegal_attempt(self, pick, actor):
        self.checker.step(actor, junk_action(random.Random(pick), self.game))

    @precondition(lambda self: not self.game.finished)
    @rule()
    def deadline_expires(self):
        assert self.checker.step(None, {"type": "timeout", "phase": self.game.phase, "turn": self.game.turn})

    @precondition(lambda self: not self.game.finished)
    @rule(pick=st.integers(0, 10))
    def someone_resigns(self, pick):
        if pick:  # rare: most draws of this rule do nothing, so games are not cut short
            return
        seats = self.game.active_seats
        assert self.checker.step(seats[pick % len(seats)], {"type": "resign"})

    @invariant()
    def replay_matches_live(self):
        self.checker.check_replay()

    @invariant()
    def nothing_private_leaks(self):
        self.checker.check_privacy()


EngineMachine.TestCase.settings = settings(
    max_examples=max(EXAMPLES // 3, 20), stateful_step_count=40, deadline=None
)
test_engine_state_machine = pytest.mark.slow(EngineMachine.TestCase)
