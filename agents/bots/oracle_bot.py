"""The skeleton of the bots that decide from the crafting oracle (:mod:`agents.bots.oracle`): the planner bot
(:mod:`agents.bots.planner_bot`) and the scripted partners (:mod:`agents.bots.scripted`) share its dispatch on
the legal actions, crafting, reports and trace; they choose proposals and answers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar

from agents.bots.oracle import (
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
from craft_rules.model import RuleSet

TRACE_LIMIT = 400
MAX_OFFERS = 400
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
