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

:class:`OracleBot` is the shared skeleton (dispatch on the legal actions, crafting, reports, trace) of the
planner bot and the scripted partners (:mod:`agents.bots.scripted`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field

from agents.bots.oracle import (
    EPS,
    CraftingOracle,
    Offer,
    RulesCache,
    bundle,
    enumerate_offers,
    harmless_offer,
    offer_action,
    offer_json,
    tom_report,
)
from agents.bots.registry import PolicyOptions
from craft_rules.model import RuleSet

TRACE_LIMIT = 400
MAX_OFFERS = 400
AcceptRule = Literal["no_loss", "gain"]
ACCEPT_RULES: tuple[str, ...] = get_args(AcceptRule)
SEEN_LIMIT = 1000


class OracleBot:
    """A policy that decides from :class:`CraftingOracle` scores; subclasses choose proposals and answers.

    ``best_response`` (class attribute) says, machine-readably, how to play against this bot best: keys
    ``it_proposes`` and ``it_accepts`` (what the bot does), ``propose`` and ``decide`` (the best response).
    """

    name: ClassVar[str] = "oracle"
    best_response: ClassVar[dict[str, str]] = {}
    strict_idle: ClassVar[bool] = False
    """Whether its fallback proposal never asks for an item it needs (:func:`harmless_offer` ``strict``)."""

    def __init__(self, seed: int | None = 0, *, rules: RuleSet | None = None) -> None:
        self.seed = seed
        self._rules = RulesCache(rules)
        self._undrained: list[dict[str, Any]] = []
        self.seen: list[dict[str, Any]] = []
        """The ``proposed`` and ``decided`` payloads this seat saw, in order."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed!r})"

    # --- the policy contract -------------------------------------------------------------------------
    def observe(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            if event.get("type") in ("proposed", "decided"):
                self.seen.append({"type": event["type"], **(event.get("payload") or {})})
        if len(self.seen) > SEEN_LIMIT:  # bots that never read it stay bounded over a long game
            del self.seen[: len(self.seen) - SEEN_LIMIT]

    def drain_traces(self) -> list[dict[str, Any]]:
        out, self._undrained = self._undrained, []
        return out

    def act(self, view: dict[str, Any], legal: Sequence[str]) -> dict[str, Any]:
        options = [kind for kind in legal if kind != "resign"]
        rng = random.Random(f"{self.seed}:{view['move_key']}")
        oracle = CraftingOracle.for_view(view, self._rules.for_view(view))
        if "report_tom" in options:
            report = self.report(view, oracle)
            self._record({"event": "report", "turn": view.get("turn"), "v0": report["v0"]})
            return report
        if "decide" in options:
            pending = view.get("pending_proposal") or {}
            accept = can_accept(view, pending) and self.accepts(view, oracle, pending)
            self._record({"event": "decide", "turn": view.get("turn"), "accept": accept})
            return {"type": "decide", "accept": accept, "message": ""}
        if "finish_crafting" in options:
            if "craft" not in options:
                return {"type": "finish_crafting"}
            return oracle.craft_action(view.get("crafting_hand") or {})
        if "propose" in options or "pass" in options:
            offer = self.choose_offer(view, oracle, rng) if "propose" in options else None
            self._record({"event": "propose", "turn": view.get("turn"), "chosen": offer_json(offer)})
            if offer is not None:
                return offer_action(offer)
            if "pass" in options or "propose" not in options:
                return {"type": "pass"}
            fallback = harmless_offer(
                oracle.me, oracle.hands, oracle.opponents, oracle.my_need, strict=self.strict_idle
            )
            return offer_action(fallback) if fallback else {"type": "pass"}
        raise ValueError(f"{self.name} has no move among legal actions {list(legal)}; ask only when awaited.")

    # --- what subclasses decide ----------------------------------------------------------------------
    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        """Whether to accept the pending proposal (it is already known that we can)."""
        return False

    def choose_offer(self, view: dict[str, Any], oracle: CraftingOracle, rng: random.Random) -> Offer | None:
        """The proposal to make, or None to pass (or make a harmless proposal when passing is not allowed)."""
        return None

    def report(self, view: dict[str, Any], oracle: CraftingOracle) -> dict[str, Any]:
        """V0 = own marginal progress per item; V1/V2 all 0 (this bot models nobody)."""
        return tom_report(view, oracle.marginal_values(view["tom"]["items"]))

    # --- shared helpers ------------------------------------------------------------------------------
    def _record(self, record: dict[str, Any]) -> None:
        self._undrained.append({"policy": self.name, **record})
        if len(self._undrained) > TRACE_LIMIT:  # nobody drains (a bare local game): stay bounded
            del self._undrained[0]

    @staticmethod
    def pending_gain(oracle: CraftingOracle, pending: dict[str, Any]) -> float:
        """Our progress change if we accept ``pending`` (we give its request, get its offer)."""
        return oracle.my_gain(bundle(pending.get("request") or {}), bundle(pending.get("offer") or {}))

    @staticmethod
    def best_offers(
        oracle: CraftingOracle, addressees: Sequence[int] | None = None
    ) -> list[tuple[float, Offer]]:
        """Every candidate proposal with our gain, best first (gain, then more units given, then order)."""
        offers: list[Offer] = []
        for to in oracle.opponents if addressees is None else addressees:
            offers += enumerate_offers(
                oracle.me, to, oracle.hands[oracle.me], oracle.hands[to], oracle.my_need, MAX_OFFERS
            )
        scored = [
            (oracle.my_gain(give, request), (to, give, request)) for to, give, request in offers[:MAX_OFFERS]
        ]
        scored.sort(key=lambda x: (-round(x[0], 9), -sum(n for _, n in x[1][1])))
        return scored


def can_accept(view: dict[str, Any], pending: dict[str, Any]) -> bool:
    """Whether accepting ``pending`` is legal: we hold what it requests and the proposer what it offers."""
    hands = view.get("hands") or []
    me, proposer = view.get("seat"), pending.get("proposer")
    if not isinstance(me, int) or not isinstance(proposer, int) or not 0 <= proposer < len(hands):
        return False

    def held(seat: int, items: dict[str, Any]) -> bool:
        return all(int(hands[seat].get(item, 0)) >= int(n) for item, n in items.items())

    return held(me, pending.get("request") or {}) and held(proposer, pending.get("offer") or {})


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


def planner_policy(seed: int, options: PlannerOptions) -> PlannerBot:
    """Self-interested planner: proposes its best trade, accepts what does not lower its progress
    (``accept=gain``: only what raises it)."""
    return PlannerBot(seed, accept=options.accept)


planner_policy.best_response = dict(PlannerBot.best_response)  # type: ignore[attr-defined]
