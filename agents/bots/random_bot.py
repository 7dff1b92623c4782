"""A bot that plays legal moves at random: the baseline opponent and the engine's fuzzing partner.

It sees exactly what a remote player sees (the player view and the list of legal action types) and
nothing else, so the server can seat it without handing it the game. The concrete moves come from
the view: proposals are random bundles of the two public hands, crafts are the recipes the private
crafting hand affords (:func:`craft_rules.possible_crafts.runnable_recipes`, the same answer the engine's
legal moves give), each run a random fraction of its largest amount.

Deterministic for a seed: each move draws from a generator seeded with the seed and where the seat is in
its own play (turn, phase, its crafts so far this phase: the view's ``move_key``), so the same seed and the
same view give the same action whichever bot object is asked. Not ``view["log_size"]``: in the craft phase
all seats act at once and the others' ``craft_finished`` events reach the seat's log in whatever order the
server's threads ran, so the same game seed would play different moves. The bot keeps no game state
between calls (it counts its crafts from ``view["crafts_this_phase"]``).
Registered as the policy ``random`` (:func:`random_policy`; options as in ``random?accept_probability=0.9``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar

from pydantic import Field

from agents.bots.registry import PolicyOptions, WholeNumber, card
from craft_rules.crafting import clamp_runs, fmt_qty
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.possible_crafts import runnable_recipes

# Fractions of the largest run amount a random craft uses: whole runs and the usual exact parts.
RUN_FRACTIONS: tuple[Fraction, ...] = (
    Fraction(1),
    Fraction(1, 2),
    Fraction(1, 3),
    Fraction(1, 4),
    Fraction(3, 4),
)

MESSAGES: tuple[str, ...] = (
    "",
    "Would this work for you?",
    "I think this helps us both.",
    "Fair trade?",
)


class RandomBot:
    """Plays uniformly among simple legal choices.

    - ToM reports: a random 0-10 value per requested item, for every requested order and opponent.
    - Proposer: passes with probability ``pass_probability`` (when passing is allowed), else proposes a
      random trade to a random other active player (up to ``max_units`` of each item, disjoint sides).
    - Addressee: accepts with probability ``accept_probability``.
    - Craft phase: up to ``max_crafts`` crafts (each: a random affordable recipe, a random fraction of
      its largest run amount), finishing earlier with probability ``finish_probability`` per step.
    - Never resigns.
    """

    name = "random"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": "random bundles of both hands (passes with pass_probability)",
        "it_accepts": "with accept_probability (0.5), whatever the trade",
        "propose": "your trade of most gain (asking for nothing in return costs you nothing)",
        "decide": "accept iff your gain > 0 and it does not complete its target without yours",
    }

    def __init__(
        self,
        seed: int | None = 0,
        *,
        rules: RuleSet | None = None,
        pass_probability: float = 0.2,
        accept_probability: float = 0.5,
        finish_probability: float = 0.3,
        max_crafts: int = 3,
        max_units: int = 3,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self._given_rules = rules
        self._loaded_rules: RuleSet | None = None
        self.pass_probability = pass_probability
        self.accept_probability = accept_probability
        self.finish_probability = finish_probability
        self.max_crafts = max_crafts
        self.max_units = max_units

    def __repr__(self) -> str:
        return f"RandomBot(seed={self.seed!r})"

    # --- the policy ------------------------------------------------------------------------------
    def act(self, view: dict[str, Any], legal: Sequence[str]) -> dict[str, Any]:
        """An action dict in the engine's schema for the seat whose ``view`` this is.

        ``legal`` is the list of action types the seat may send now
        (:func:`server.game.legal.legal_actions`). Raises ``ValueError`` when nothing but resigning
        is legal: a policy is only asked to act when its action is awaited.
        """
        if "move_key" in view:  # per-move randomness: a rebuilt bot repeats exactly what this one would do
            self.rng = random.Random(f"{self.seed}:{view['move_key']}")
        options = [kind for kind in legal if kind != "resign"]
        if "report_tom" in options:
            return self._report_tom(view)
        if "decide" in options:
            return self._decide()
        if "finish_crafting" in options:
            return self._craft_or_finish(view, can_craft="craft" in options)
        if "propose" in options or "pass" in options:
            return self._propose_or_pass(view, can_propose="propose" in options, can_pass="pass" in options)
        raise ValueError(
            f"RandomBot has no move among legal actions {list(legal)}; ask a policy to act only when "
            "its seat is awaited."
        )

    # --- one method per kind of decision -------------------------------------------------------------
    def _report_tom(self, view: dict[str, Any]) -> dict[str, Any]:
        duty = view["tom"]
        items = sorted(duty["items"])
        rng = self.rng
        report: dict[str, Any] = {"type": "report_tom", "v0": {item: rng.randint(0, 10) for item in items}}
        for order in duty["orders"]:
            if order:
                report[f"v{order}"] = {
                    str(seat): {item: rng.randint(0, 10) for item in items} for seat in duty["opponents"]
                }
        return report

    def _decide(self) -> dict[str, Any]:
        return {"type": "decide", "accept": self.rng.random() < self.accept_probability, "message": ""}

    def _propose_or_pass(self, view: dict[str, Any], can_propose: bool, can_pass: bool) -> dict[str, Any]:
        rng = self.rng
        if can_pass and (not can_propose or rng.random() < self.pass_probability):
            return {"type": "pass"}
        proposal = self._random_proposal(view)
        if proposal is None:  # cannot happen while "propose" is legal; passing is the safe answer
            return {"type": "pass"}
        return proposal

    def _random_proposal(self, view: dict[str, Any]) -> dict[str, Any] | None:
        rng = self.rng
        me = view["seat"]
        hands: list[dict[str, int]] = view["hands"]
        partners = [s for s, active in enumerate(view["active"]) if active and s != me]
        rng.shuffle(partners)
        rules = self._rules_for(view)  # items it does not know (an imported rule set) are left alone
        mine = sorted(item for item, count in hands[me].items() if count > 0 and rules.has_item(item))
        for to in partners:
            theirs = sorted(item for item, count in hands[to].items() if count > 0 and rules.has_item(item))
            if not mine and not theirs:
                continue
            offer = {i: rng.randint(1, min(hands[me][i], self.max_units)) for i in mine if rng.random() < 0.4}
            request = {
                i: rng.randint(1, min(hands[to][i], self.max_units))
                for i in theirs
                if i not in offer and rng.random() < 0.4
            }
            if not offer and not request:
                # one unit either way: the smallest proposal, always valid
                if mine and (not theirs or rng.random() < 0.5):
                    offer = {rng.choice(mine): 1}
                else:
                    request = {rng.choice(theirs): 1}
            return {
                "type": "propose",
                "to": to,
                "offer": offer,
                "request": request,
                "message": rng.choice(MESSAGES),
            }
        return None

    def _craft_or_finish(self, view: dict[str, Any], can_craft: bool) -> dict[str, Any]:
        rng = self.rng
        done_enough = len(view.get("crafts_this_phase") or []) >= self.max_crafts
        if not can_craft or done_enough or rng.random() < self.finish_probability:
            return {"type": "finish_crafting"}
        rules = self._rules_for(view)
        hand = {i: Fraction(q) for i, q in (view.get("crafting_hand") or {}).items() if rules.has_item(i)}
        whole = (view.get("rules") or {}).get("crafting_runs") == "whole"
        options = runnable_recipes(rules, hand, whole_runs=whole)
        if not options:
            return {"type": "finish_crafting"}
        recipe, most = rng.choice(options)
        # under the whole rule a share of a single run rounds down to nothing: run it once instead
        runs = clamp_runs(most * rng.choice(RUN_FRACTIONS), whole_runs=whole) or most
        if runs <= 0:  # a sliver too small to name as a run amount
            return {"type": "finish_crafting"}
        return {"type": "craft", "recipe": recipe.id, "runs": fmt_qty(runs)}

    def _rules_for(self, view: dict[str, Any]) -> RuleSet:
        """The rule set given to the constructor, else the installed one the view names."""
        if self._given_rules is not None:
            return self._given_rules
        if self._loaded_rules is None or self._loaded_rules.name != view["ruleset"]:
            self._loaded_rules = load_rule_set(view["ruleset"])
        return self._loaded_rules


class RandomOptions(PolicyOptions):
    """The options of the ``random`` policy (as :class:`RandomBot`'s parameters)."""

    pass_probability: float = Field(0.2, ge=0, le=1, description="chance it passes when it may")
    accept_probability: float = Field(0.5, ge=0, le=1, description="chance it accepts a proposal")
    finish_probability: float = Field(0.3, ge=0, le=1, description="chance it stops crafting at each step")
    max_crafts: WholeNumber = Field(3, ge=0, le=100, description="most crafts per craft phase")
    max_units: WholeNumber = Field(3, ge=1, le=100, description="most units of an item it trades")


@card(
    "Random bot",
    "Makes random legal trades and crafts, and rarely reaches its target: the easiest opponent, good for a "
    "first game.",
    "easy",
)
def random_policy(seed: int, options: RandomOptions) -> RandomBot:
    """Plays random legal moves: the baseline opponent."""
    return RandomBot(seed, **options.model_dump())


random_policy.best_response = dict(RandomBot.best_response)  # type: ignore[attr-defined]
