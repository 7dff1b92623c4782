"""The planner bot (``planner``): self-interested, no Theory of Mind, every decision from the oracle.

- **Proposer**: among the bounded candidate set (:func:`agents.bots.oracle.enumerate_offers`: request at
  most two kinds it still needs, as many as the addressee holds up to its deficit; offer nothing or at
  most two kinds of its hand, one unit, its surplus or all), it proposes the trade that most raises its
  own progress; among equal gains the one giving more units (surplus costs it nothing and makes the
  trade likelier to help the addressee), then a seeded draw. A proposal the addressee rejected is not
  repeated while both hands are unchanged (the next best is made). When no trade raises its progress it
  passes, or, when passing is not allowed, makes a harmless proposal (one unit of something it does not
  need, for nothing).
- **Responder**: accepts iff the trade does not lower its progress (and it holds what is asked); with the
  option ``accept=gain`` only iff it raises it (a trade of its surplus for nothing is then refused).
- **Crafting**: runs the planner's plan for its target step by step as soon as the crafting hand can
  craft it (whole or rational runs, as the game says), then finishes.
- **ToM reports**: V0 is its own marginal progress per item (:func:`agents.bots.oracle.marginal_values`).
  It does not reason about anyone else's values, so V1 and V2 are all 0 ("no model"), like ToM-0's.

:class:`~agents.bots.oracle_bot.OracleBot` is the skeleton it shares with the scripted partners.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field

from agents.bots.oracle import (
    EPS,
    CraftingOracle,
    Offer,
    bundle,
    offer_json,
)
from agents.bots.oracle_bot import OracleBot
from agents.bots.registry import PolicyOptions, card
from craft_rules.model import RuleSet

AcceptRule = Literal["no_loss", "gain"]
ACCEPT_RULES: tuple[str, ...] = get_args(AcceptRule)


class PlannerBot(OracleBot):
    """Proposes the trade that most raises its own progress; accepts what does not lower it; crafts."""

    name = "planner"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": "the trade of most gain to itself (its deficit, offering its surplus)",
        "it_accepts": "gain_to_it >= 0",
        "propose": "max your gain subject to its gain >= 0 (e.g. ask for its surplus for nothing)",
        "decide": "accept iff your gain > 0 and it does not complete its target without yours",
    }

    def __init__(
        self, seed: int | None = 0, *, accept: str = "no_loss", rules: RuleSet | None = None
    ) -> None:
        super().__init__(seed, rules=rules)
        if accept not in ACCEPT_RULES:
            raise ValueError(f"accept must be one of {', '.join(ACCEPT_RULES)}, not {accept!r}")
        self.accept_rule = accept
        self._rejected: set[tuple[Offer, Any]] = set()
        self._made: dict[int, tuple[Offer, Any]] = {}  # turn -> (offer, the two hands it was made against)

    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        change = self.pending_gain(oracle, pending)
        return change > EPS if self.accept_rule == "gain" else change >= -EPS

    def choose_offer(self, view: dict[str, Any], oracle: CraftingOracle, rng: random.Random) -> Offer | None:
        for seen in self.seen:  # learn which of our proposals were rejected
            if seen["type"] == "decided" and seen.get("proposer") == oracle.me and not seen.get("accept"):
                made = self._made.get(int(seen.get("turn") or 0))
                if made is not None:
                    self._rejected.add(made)
        self.seen.clear()
        scored = self.best_offers(oracle)
        fresh = [(g, o) for g, o in scored if g > EPS and (o, _hands_key(oracle, o[0])) not in self._rejected]
        if not fresh:
            return None
        top_gain, top_units = fresh[0][0], sum(n for _, n in fresh[0][1][1])
        ties = [o for g, o in fresh if abs(g - top_gain) <= EPS and sum(n for _, n in o[1]) == top_units]
        chosen = rng.choice(ties)
        self._made[int(view.get("turn") or 0)] = (chosen, _hands_key(oracle, chosen[0]))
        self._record(
            {
                "event": "candidates",
                "turn": view.get("turn"),
                "progress": round(oracle.progress(), 5),
                "best": [{"offer": offer_json(o), "gain": round(g, 5)} for g, o in fresh[:5]],
            }
        )
        return chosen


def _hands_key(oracle: CraftingOracle, to: int) -> tuple[Any, Any]:
    return bundle(oracle.hands[oracle.me]), bundle(oracle.hands[to])


class PlannerOptions(PolicyOptions):
    """The options of the ``planner`` policy."""

    accept: AcceptRule = Field(
        "no_loss", description="no_loss: accept what does not lower its progress; gain: only what raises it"
    )


@card(
    "Planner bot",
    "Plans the shortest way to its own target, proposes the trade that helps it most and accepts what does "
    "not set it back. Does not guess what you need.",
    "medium",
)
def planner_policy(seed: int, options: PlannerOptions) -> PlannerBot:
    """Self-interested planner: proposes its best trade, accepts what does not lower its progress
    (``accept=gain``: only what raises it)."""
    return PlannerBot(seed, accept=options.accept)


planner_policy.best_response = dict(PlannerBot.best_response)  # type: ignore[attr-defined]
