"""Scripted partners for functional-ToM studies: simple, seeded policies with a known best response.

They are the trade-game analogues of the single-action and tit-for-tat partners of Riemer et al.'s
functional-ToM position paper (``../shared/research/papers-functional-tom-and-tom-k-agents.md`` §1.3, §3
MUST-3): an agent that adapts to its partner should find the best response, and regret is measured against it.
Each partner documents that best response in ``docs/bots.md`` and machine-readably in its class attribute
``best_response`` (:func:`best_response_of` by policy name). Every partner crafts its target as soon as its
crafting hand can (the planner's plan) and then finishes; it reports V0 (its own marginal progress) when a ToM
report is due and V1/V2 all 0 (it models nobody).

"Idle proposal" below: pass when the game allows it, else one unit of an item the partner does not need
from the addressee, for nothing, or, when the addressee holds only items it needs, one unit of its own
least-needed item given away (:func:`agents.bots.oracle.harmless_offer` with ``strict``; a needed item is
never asked for).
"Gain" is progress change by :mod:`agents.bots.oracle`.

==================  ============================================================================
name                behaviour
==================  ============================================================================
``always_accept``   accepts every proposal it can pay for; idle proposals
``always_reject``   rejects every proposal; idle proposals
``fixed_offer``     makes the same proposal every turn (options ``offer``/``request`` as
                    ``item:count,item:count``, else its first planner-best proposal, pinned);
                    rejects every proposal
``rational``        accepts iff its own gain is positive; idle proposals
``item_fixated``    accepts iff the proposal gives it at least one unit of ``item`` (option; default:
                    the item it lacks most of that others hold, pinned at its first decision)
``tit_for_tat``     proposes its planner-best trade; accepts a proposal iff that proposer accepted its
                    last proposal to it (accepts while it has made none)
``best_response``   answers the partner's last move: after the partner accepted its proposal it asks
                    for its whole need for nothing; after the partner asked it for items it offers
                    those (as far as it can spare them) for what it needs; else its planner-best
                    trade. Accepts iff its own gain is positive.
==================  ============================================================================
"""

from __future__ import annotations

import random
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, WithJsonSchema

from agents.bots.oracle import EPS, Bundle, CraftingOracle, Offer, bundle, gain, holds
from agents.bots.oracle_bot import OracleBot
from agents.bots.planner_bot import PlannerBot
from agents.bots.registry import NoOptions, PolicyOptions, card
from craft_rules.model import RuleSet

IDLE = "idle proposals (pass, or ask one unit it does not need for nothing, or give one away)"


class ScriptedPartner(OracleBot):
    """A scripted partner: its idle proposal never asks for an item it needs."""

    strict_idle = True


class AlwaysAccept(ScriptedPartner):
    """Accepts every proposal it can pay for; makes idle proposals."""

    name = "always_accept"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": IDLE,
        "it_accepts": "always (when it holds what is asked)",
        "propose": "request everything you still need that it holds, offer nothing",
        "decide": "reject its idle asks unless the item is of no use to you",
    }

    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        return True


class AlwaysReject(ScriptedPartner):
    """Rejects every proposal; makes idle proposals."""

    name = "always_reject"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": IDLE,
        "it_accepts": "never",
        "propose": "anything harmless (nothing is accepted): craft from your own hand",
        "decide": "reject its idle asks unless the item is of no use to you",
    }


class RationalResponder(ScriptedPartner):
    """Accepts iff its own progress rises; makes idle proposals."""

    name = "rational"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": IDLE,
        "it_accepts": "gain_to_it > 0",
        "propose": "max your gain subject to its gain > 0 (offer what its target needs)",
        "decide": "reject its idle asks unless the item is of no use to you",
    }

    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        return self.pending_gain(oracle, pending) > EPS


class FixedOffer(ScriptedPartner):
    """Makes one fixed proposal every turn (options ``offer``, ``request``); rejects every proposal."""

    name = "fixed_offer"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": "the same proposal every turn",
        "it_accepts": "never",
        "propose": "anything harmless (nothing is accepted)",
        "decide": "accept its proposal iff your gain > 0 (it repeats, so accept once it helps)",
    }

    def __init__(
        self,
        seed: int | None = 0,
        *,
        offer: Bundle | None = None,
        request: Bundle | None = None,
        rules: RuleSet | None = None,
    ) -> None:
        super().__init__(seed, rules=rules)
        self.fixed: tuple[Bundle, Bundle] | None = (offer or (), request or ()) if offer or request else None
        self._to: int | None = None

    def choose_offer(self, view: dict[str, Any], oracle: CraftingOracle, rng: random.Random) -> Offer | None:
        if self.fixed is None:  # pin its first planner-best proposal
            best = [(g, o) for g, o in self.best_offers(oracle) if g > EPS]
            if not best:
                return None
            to, give, request = best[0][1]
            self.fixed, self._to = (give, request), to
        give, request = self.fixed
        for to in [self._to] if self._to in oracle.opponents else oracle.opponents:
            if to is not None and holds(oracle.hands[oracle.me], give) and holds(oracle.hands[to], request):
                return (to, give, request)
        return None  # it cannot make its proposal now: idle


class ItemFixated(ScriptedPartner):
    """Accepts iff a proposal gives it at least one unit of ``item``; makes idle proposals."""

    name = "item_fixated"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": IDLE,
        "it_accepts": "the offer includes its item X (whatever it costs it)",
        "propose": "offer one unit of X (if you can spare it) and request everything you need",
        "decide": "reject its idle asks unless the item is of no use to you",
    }

    def __init__(
        self, seed: int | None = 0, *, item: str | None = None, rules: RuleSet | None = None
    ) -> None:
        super().__init__(seed, rules=rules)
        self.item = item

    def fixation(self, oracle: CraftingOracle) -> str | None:
        if self.item is None:
            others: dict[str, int] = {}
            for seat in oracle.opponents:
                for k, v in oracle.hands[seat].items():
                    others[k] = others.get(k, 0) + v
            lacking = {k: n for k, n in oracle.missing().items() if others.get(k, 0) > 0}
            if lacking:
                self.item = sorted(lacking, key=lambda k: (-lacking[k], k))[0]
            elif others:
                self.item = sorted(others)[0]
        return self.item

    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        item = self.fixation(oracle)
        return item is not None and int((pending.get("offer") or {}).get(item, 0)) > 0


class TitForTat(ScriptedPartner):
    """Proposes its best trade; accepts from a proposer iff that proposer accepted its last proposal."""

    name = "tit_for_tat"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": "its planner-best trade (its deficit for its surplus)",
        "it_accepts": "iff you accepted its last proposal to you (yes before its first)",
        "propose": "your best trade, made right after accepting its proposal",
        "decide": "accept its proposals when what your next accepted proposal gains outweighs the cost",
    }

    def __init__(self, seed: int | None = 0, *, rules: RuleSet | None = None) -> None:
        super().__init__(seed, rules=rules)
        self.last_answer: dict[int, bool] = {}  # partner seat -> its answer to our last proposal to it
        self._pending_to: dict[int, int] = {}  # turn -> addressee of our proposal

    def _learn(self, me: int) -> None:
        for seen in self.seen:
            if seen["type"] == "proposed" and seen.get("proposer") == me:
                self._pending_to[int(seen.get("turn") or 0)] = int(seen["to"])
            elif seen["type"] == "decided" and seen.get("proposer") == me:
                to = self._pending_to.get(int(seen.get("turn") or 0), seen.get("seat"))
                if isinstance(to, int):
                    self.last_answer[to] = bool(seen.get("accept"))
        self.seen.clear()

    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        self._learn(oracle.me)
        return self.last_answer.get(int(pending["proposer"]), True)

    def choose_offer(self, view: dict[str, Any], oracle: CraftingOracle, rng: random.Random) -> Offer | None:
        self._learn(oracle.me)
        best = [(g, o) for g, o in self.best_offers(oracle) if g > EPS]
        return best[0][1] if best else None


class BestResponse(ScriptedPartner):
    """Answers the partner's last move (see the module docstring); accepts iff its own gain is positive."""

    name = "best_response"
    best_response: ClassVar[dict[str, str]] = {
        "it_proposes": "after you accept: its whole need for nothing; after you ask for X: X for its need",
        "it_accepts": "gain_to_it > 0",
        "propose": "ask for the items you need (it offers them next turn) and offer what it needs",
        "decide": "accept its offers of what you asked for; reject its asks for nothing",
    }

    def __init__(self, seed: int | None = 0, *, rules: RuleSet | None = None) -> None:
        super().__init__(seed, rules=rules)
        self.last_move: dict[int, dict[str, Any]] = {}  # partner seat -> its last proposal or answer to us

    def _learn(self, me: int) -> None:
        for seen in self.seen:
            if seen["type"] == "proposed" and seen.get("to") == me:
                self.last_move[int(seen["proposer"])] = seen
            elif (
                seen["type"] == "decided" and seen.get("proposer") == me and isinstance(seen.get("seat"), int)
            ):
                self.last_move[int(seen["seat"])] = seen
        self.seen.clear()

    def accepts(self, view: dict[str, Any], oracle: CraftingOracle, pending: dict[str, Any]) -> bool:
        self._learn(oracle.me)
        return self.pending_gain(oracle, pending) > EPS

    def choose_offer(self, view: dict[str, Any], oracle: CraftingOracle, rng: random.Random) -> Offer | None:
        self._learn(oracle.me)
        scored = [(g, o) for g, o in self.best_offers(oracle) if g > EPS]
        if not scored:
            return None
        for to in oracle.opponents:
            move = self.last_move.get(to)
            if move is None:
                continue
            mine = [(g, o) for g, o in scored if o[0] == to]
            if not mine:
                continue
            if move["type"] == "decided" and move.get("accept"):  # it accepts: ask, give nothing
                greedy = [(g, o) for g, o in mine if not o[1]]
                if greedy:
                    return greedy[0][1]
            if move["type"] == "proposed" and move.get("request"):  # it wants these: offer them
                wanted = bundle(move["request"])
                give = tuple((i, n) for i, n in wanted if oracle.hands[oracle.me].get(i, 0) >= n)
                if give:
                    asked = {i for i, _ in give}
                    options = [
                        (gain(oracle.hands[oracle.me], oracle.my_need, give, request), (to, give, request))
                        for _, (_, _, request) in mine
                        if not asked & {i for i, _ in request}
                    ]
                    options = [x for x in options if x[0] > EPS]
                    if options:
                        return max(options, key=lambda x: x[0])[1]
        return scored[0][1]


def parse_bundle(text: object) -> object:
    """``"log:2,stick:1"`` -> ``(("log", 2), ("stick", 1))`` (a count defaults to 1); ``ValueError``
    otherwise. Anything but text is left to the model's own type check."""
    if not isinstance(text, str):
        return text
    out: dict[str, int] = {}
    for part in text.split(","):
        item, _, count = part.partition(":")
        count = count or "1"
        if not item or not count.isdigit() or not 1 <= int(count) <= 1000 or item in out:
            raise ValueError(f"write item:count pairs joined by commas (e.g. log:2,stick:1), not {text!r}")
        out[item] = int(count)
    return bundle(out)


BundleOption = Annotated[
    Bundle,
    BeforeValidator(parse_bundle),
    WithJsonSchema({"type": "string", "maxLength": 200}),
]
"""A bundle option, written ``item:count,item:count`` (count 1-1000, default 1)."""


class FixedOfferOptions(PolicyOptions):
    """The options of ``fixed_offer``: its proposal (both empty: its first planner-best one, pinned)."""

    offer: BundleOption | None = Field(None, description="what it offers, as item:count,item:count")
    request: BundleOption | None = Field(None, description="what it asks for, as item:count,item:count")


class ItemFixatedOptions(PolicyOptions):
    """The options of ``item_fixated``."""

    item: str | None = Field(
        None,
        max_length=100,
        pattern=r"^[\w:]*[^\W_][\w:]*$",
        description="the item it wants, e.g. oak_log (letters, digits, _ and :); unset: the one it lacks "
        "most of that others hold, pinned at its first decision",
    )


@card(
    "Always-accept partner",
    "Accepts every trade it can pay for (a scripted partner for studies).",
    "scripted",
)
def always_accept(seed: int, options: NoOptions) -> AlwaysAccept:
    """Scripted partner: accepts every proposal it can pay for; idle proposals."""
    return AlwaysAccept(seed)


@card(
    "Always-reject partner",
    "Rejects every trade: you must reach your target without it (a scripted partner for studies).",
    "scripted",
)
def always_reject(seed: int, options: NoOptions) -> AlwaysReject:
    """Scripted partner: rejects every proposal; idle proposals."""
    return AlwaysReject(seed)


@card(
    "Rational responder",
    "Accepts a trade only when it brings it closer to its own target (a scripted partner for studies).",
    "scripted",
)
def rational(seed: int, options: NoOptions) -> RationalResponder:
    """Scripted partner: accepts iff its own progress rises; idle proposals."""
    return RationalResponder(seed)


@card(
    "Fixed-offer partner",
    "Makes the same proposal every turn and rejects yours (a scripted partner for studies).",
    "scripted",
)
def fixed_offer(seed: int, options: FixedOfferOptions) -> FixedOffer:
    """Scripted partner: the same proposal every turn (offer/request as item:count,...); rejects all."""
    return FixedOffer(seed, offer=options.offer, request=options.request)


@card(
    "Item-fixated partner",
    "Accepts only trades that give it one particular item (a scripted partner for studies).",
    "scripted",
)
def item_fixated(seed: int, options: ItemFixatedOptions) -> ItemFixated:
    """Scripted partner: accepts iff the proposal gives it the item ``item``; idle proposals."""
    return ItemFixated(seed, item=options.item)


@card(
    "Tit-for-tat partner",
    "Accepts your proposal only if you accepted its last one (a scripted partner for studies).",
    "scripted",
)
def tit_for_tat(seed: int, options: NoOptions) -> TitForTat:
    """Scripted partner: proposes its best trade; accepts iff you accepted its last proposal."""
    return TitForTat(seed)


@card(
    "Best-response partner",
    "Answers your last move: greedy after you accept, offers what you asked for (a scripted partner "
    "for studies).",
    "scripted",
)
def best_response(seed: int, options: NoOptions) -> BestResponse:
    """Scripted partner: answers your last move (greedy after an accept, offers what you asked for)."""
    return BestResponse(seed)


SCRIPTED_PARTNERS: dict[str, type[OracleBot]] = {
    cls.name: cls
    for cls in (
        AlwaysAccept,
        AlwaysReject,
        FixedOffer,
        RationalResponder,
        ItemFixated,
        TitForTat,
        BestResponse,
    )
}


# the factories carry it too, so the registry's describe_policies() lists it without building a bot
for _factory, _cls in (
    (always_accept, AlwaysAccept),
    (always_reject, AlwaysReject),
    (rational, RationalResponder),
    (fixed_offer, FixedOffer),
    (item_fixated, ItemFixated),
    (tit_for_tat, TitForTat),
    (best_response, BestResponse),
):
    _factory.best_response = dict(_cls.best_response)  # type: ignore[attr-defined]


def best_response_of(name: str) -> dict[str, str]:
    """The documented best response to the policy ``name`` (scripted partners, ``planner``, ``random``)."""
    from agents.bots.random_bot import RandomBot

    known: dict[str, Any] = {**SCRIPTED_PARTNERS, PlannerBot.name: PlannerBot, RandomBot.name: RandomBot}
    if name not in known:
        raise KeyError(f"no documented best response for {name!r}; known: {', '.join(sorted(known))}")
    return dict(known[name].best_response)
