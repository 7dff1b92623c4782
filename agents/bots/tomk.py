"""ToM-k bots (k = 0..3): the Colored Trails recursive Theory-of-Mind model adapted to TradeCraft.

The model (de Weerd, Verbrugge & Verheij, "Higher-order theory of mind in negotiations under incomplete
information"; see ``docs/tom-bots.md`` for the equations and every choice made here):

* **Score.** ``pi_i(O)`` is the change an offer ``O`` makes to player ``i``'s *progress* towards a target:
  the share of the target's **requirement** the hand covers. A target's requirement is the smallest
  sub-hand of the pooled public hands that crafts it within one craft phase under the game's
  crafting-runs rule (:meth:`craft_rules.planner.Planner.min_units`, one integer program per target and
  pool, cached per process); coverage 1 means the hand holds the requirement, so the target is
  craftable. Trades keep the pool unchanged, so the integer programs run once per pool, not per offer.
* **ToM-0** keeps ``b(key)``, the observed acceptance frequency of its offers with the same *belief key*
  (``belief_key=offer|kinds|responder``; initialised to 1, the paper's optimism) and proposes
  ``argmax b(O) * pi_self(O)`` (Eq 1-2).
* **ToM-k >= 1** keeps a posterior over each opponent's target among the **candidate targets**: items a
  recipe chain can make from the pool, that the pool can craft and the opponent's own hand cannot (at
  most ``candidates`` of them, 96 by default: the paper set has at most 76; deepest requirements
  first). Bayes updates it from every proposal the opponent makes (likelihood: a softmax of the
  opponent's own gain over its bounded offer set, temperature ``tau``) and from every decision on our
  proposals (the simulated ToM-(k-1) responder's
  answer, with noise ``epsilon``). It simulates the opponent as a pure ToM-(k-1) responder over that
  posterior (ToM-0 responder: accepts iff its own gain is positive; ToM>=1 responder: also refuses a trade
  that completes the proposer's target but not its own, under its belief about the proposer's target,
  which we track as the *second-order posterior*: the same Bayes machinery run from the opponent's
  viewpoint over our public moves). ``EV^k(O) = (1-c_k) EV^(k-1)(O) + c_k P_(k-1)(accept O) pi_self(O)``
  (Eq 5/7); confidences start at 1 and follow Eq 9/10 with learning speed ``lambda`` after each
  opponent proposal.
* **Responder.** Accepts iff ``pi_self(O) - c_1 * race(O) > 0`` where ``race`` is the posterior
  probability that the trade completes the opponent's target and not ours (ToM-0: ``pi_self > 0``).
* **Crafting** follows the planner's plan under the game's crafting-runs rule as soon as the target is
  craftable from the private crafting hand; otherwise the bot finishes crafting.

Search is bounded (``max_offers`` proposals enumerated per decision; the simulation uses the
``top_targets`` most likely targets), ties are broken by a generator seeded with the bot's seed and its
place in its own play, and every belief, confidence and candidate offer's expected value is recorded in
:meth:`ToMBot.trace` (JSON-safe). ToM reports (V0/V1/V2) are the marginal progress values of each public
item under our target, the posterior over the opponent's target and the second-order posterior.
"""

from __future__ import annotations

import itertools
import math
import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from craft_rules.crafting import fmt_qty
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from craft_rules.planner import Planner, PlannerError, planner_for

Hand = Mapping[str, int]
Offer = tuple[int, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]
"""(addressee, offered items, requested items), items sorted: hashable and canonical."""

BELIEF_KEYS = ("offer", "kinds", "responder")
MAX_ORDER = 3
EPS = 1e-9
TRACE_LIMIT = 400
"""Records a bot keeps in its trace (oldest dropped first): bounded memory over a long game."""

# --- requirements: one integer program per (rule set, crafting-runs rule, target item, pool) ---------

_REQUIREMENTS: dict[tuple[int, bool, str, tuple[tuple[str, int], ...]], dict[str, int] | None] = {}
_CANDIDATES: dict[tuple[int, bool, tuple[tuple[str, int], ...]], tuple[str, ...]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_LIMIT = 20000


def pool_of(hands: Iterable[Hand]) -> dict[str, int]:
    """All public hands added together (whole items)."""
    pool: dict[str, int] = {}
    for hand in hands:
        for item, count in hand.items():
            if count > 0:
                pool[item] = pool.get(item, 0) + int(count)
    return pool


def _key(hand: Hand) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k, int(v)) for k, v in hand.items() if v > 0))


def requirement(planner: Planner, target: Mapping[str, int], pool: Hand) -> dict[str, int] | None:
    """The smallest sub-hand of ``pool`` that crafts ``target`` (None: the pool cannot), cached."""
    tkey = ",".join(f"{k}:{v}" for k, v in sorted(target.items()))
    key = (id(planner), planner.whole_runs, tkey, _key(pool))
    with _CACHE_LOCK:
        if key in _REQUIREMENTS:
            return _REQUIREMENTS[key]
    try:
        found = planner.min_units(dict(target), dict(pool))
    except PlannerError:
        found = None
    value = dict(found[1]) if found else None
    with _CACHE_LOCK:
        if len(_REQUIREMENTS) >= _CACHE_LIMIT:
            _REQUIREMENTS.clear()
        _REQUIREMENTS[key] = value
    return value


def candidate_targets(planner: Planner, pool: Hand, limit: int) -> tuple[str, ...]:
    """Items a recipe chain can make from ``pool`` (not already in it) that the pool can craft.

    Bounded to ``limit`` items, those with the largest requirements first (a player's target needs trades,
    so it is rarely a one-item craft), then by name.
    """
    key = (id(planner), planner.whole_runs, _key(pool))
    with _CACHE_LOCK:
        cached = _CANDIDATES.get(key)
    if cached is None:
        reach, _ = planner._fireable(pool, frozenset(planner.rules.recipes))
        sized = []
        for item in sorted(reach - set(pool)):
            need = requirement(planner, {item: 1}, pool)
            if need:
                sized.append((-sum(need.values()), item))
        cached = tuple(item for _, item in sorted(sized))
        with _CACHE_LOCK:
            _CANDIDATES[key] = cached
    return cached[:limit]


def coverage(hand: Hand, need: Mapping[str, int]) -> float:
    """Share of the requirement ``need`` the hand holds (1: the target is craftable from it)."""
    total = sum(need.values())
    if total <= 0:
        return 1.0
    return sum(min(hand.get(item, 0), count) for item, count in need.items()) / total


def after_trade(
    hand: Hand, give: Iterable[tuple[str, int]], get: Iterable[tuple[str, int]]
) -> dict[str, int]:
    out = dict(hand)
    for item, count in give:
        out[item] = out.get(item, 0) - count
    for item, count in get:
        out[item] = out.get(item, 0) + count
    return out


def gain(hand: Hand, need: Mapping[str, int] | None, give, get) -> float:  # type: ignore[no-untyped-def]
    """``pi``: the progress change a trade (``give`` away, ``get`` in) makes for a player needing ``need``."""
    if not need:
        return 0.0
    return coverage(after_trade(hand, give, get), need) - coverage(hand, need)


def completes(hand: Hand, need: Mapping[str, int] | None, give, get) -> bool:  # type: ignore[no-untyped-def]
    return bool(need) and coverage(after_trade(hand, give, get), need) >= 1 - EPS  # type: ignore[arg-type]


def marginal_values(hand: Hand, need: Mapping[str, int] | None, items: Iterable[str]) -> dict[str, float]:
    """Per item: the progress one more unit adds or one unit fewer takes away, whichever is larger."""
    out: dict[str, float] = {}
    for item in items:
        if not need or item not in need:
            out[item] = 0.0
            continue
        up = gain(hand, need, (), ((item, 1),))
        down = -gain(hand, need, ((item, 1),), ()) if hand.get(item, 0) > 0 else 0.0
        out[item] = max(up, down)
    return out


def scale_0_10(values: Mapping[str, float]) -> dict[str, int]:
    """Scale non-negative values so the largest is 10 (all 0 when none is positive), rounded."""
    top = max((v for v in values.values()), default=0.0)
    if top <= EPS:
        return dict.fromkeys(values, 0)
    return {k: max(0, min(10, round(10 * max(v, 0.0) / top))) for k, v in values.items()}


def enumerate_offers(
    me: int,
    to: int,
    my_hand: Hand,
    their_hand: Hand,
    need: Mapping[str, int] | None,
    limit: int,
) -> list[Offer]:
    """Bounded proposals from ``me`` to ``to``: request at most two kinds ``me`` still needs (the
    deficit, as far as ``to`` holds it), offer nothing or at most two kinds of ``me``'s hand (one unit,
    the surplus over ``need``, or all of it). At most ``limit`` offers, smallest bundles first."""
    need = need or {}
    deficit = {
        item: min(count - my_hand.get(item, 0), their_hand.get(item, 0))
        for item, count in sorted(need.items())
        if count > my_hand.get(item, 0) and their_hand.get(item, 0) > 0
    }
    kinds = sorted(deficit, key=lambda i: (-deficit[i], i))[:6]
    requests: list[tuple[tuple[str, int], ...]] = [((i, deficit[i]),) for i in kinds]
    requests += [
        tuple(sorted(((a, deficit[a]), (b, deficit[b])))) for a, b in itertools.combinations(kinds, 2)
    ]
    mine = [i for i, c in sorted(my_hand.items()) if c > 0]
    surplus = {i: my_hand[i] - need.get(i, 0) for i in mine}
    mine.sort(key=lambda i: (-surplus[i], i))
    mine = mine[:8]

    def amounts(item: str) -> list[int]:
        have = my_hand[item]
        return sorted({1, have, *([surplus[item]] if surplus[item] > 0 else [])})

    singles = [((i, n),) for i in mine for n in amounts(i)]
    pairs = [
        tuple(sorted(((a, x), (b, y))))
        for a, b in itertools.combinations(mine, 2)
        for x in amounts(a)
        for y in amounts(b)
    ]
    gives: list[tuple[tuple[str, int], ...]] = [(), *singles, *pairs]
    offers: list[Offer] = []
    for request in requests:
        asked = {i for i, _ in request}
        for give in gives:
            if any(i in asked for i, _ in give):
                continue
            offers.append((to, give, request))
            if len(offers) >= limit:
                return offers
    return offers


@dataclass
class Posterior:
    """A distribution over one player's candidate targets (item names), renormalised after updates."""

    probs: dict[str, float] = field(default_factory=dict)

    def reset(self, candidates: Sequence[str]) -> None:
        known = {c: self.probs.get(c, 0.0) for c in candidates}
        mass = sum(known.values())
        if not candidates:
            self.probs = {}
        elif mass <= EPS:  # first sight (or every old candidate vanished): uniform prior
            self.probs = {c: 1.0 / len(candidates) for c in candidates}
        else:
            self.probs = {c: p / mass for c, p in known.items()}

    def update(self, likelihood: Mapping[str, float]) -> None:
        new = {c: p * likelihood.get(c, 1.0) for c, p in self.probs.items()}
        mass = sum(new.values())
        if mass > EPS:  # evidence every candidate denies leaves the belief as it was
            self.probs = {c: p / mass for c, p in new.items()}

    def top(self, n: int) -> list[tuple[str, float]]:
        ranked = sorted(self.probs.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        mass = sum(p for _, p in ranked)
        return [(c, p / mass) for c, p in ranked] if mass > EPS else []


class ToMBot:
    """A ToM-k negotiator (k = 0..3); see the module docstring. Registered as ``tom0`` .. ``tom3``."""

    def __init__(
        self,
        seed: int | None = 0,
        *,
        order: int = 1,
        learning_speed: float = 0.1,
        belief_key: str = "kinds",
        candidates: int = 96,
        top_targets: int = 6,
        max_offers: int = 400,
        tau: float = 0.05,
        epsilon: float = 0.05,
        rules: RuleSet | None = None,
    ) -> None:
        if not 0 <= order <= MAX_ORDER:
            raise ValueError(f"order must be 0..{MAX_ORDER}, not {order}")
        if belief_key not in BELIEF_KEYS:
            raise ValueError(f"belief_key must be one of {', '.join(BELIEF_KEYS)}, not {belief_key!r}")
        self.seed = seed
        self.order = order
        self.learning_speed = learning_speed
        self.belief_key = belief_key
        self.max_candidates = candidates
        self.top_targets = top_targets
        self.max_offers = max_offers
        self.tau = tau
        self.epsilon = epsilon
        self._given_rules = rules
        self._rules: RuleSet | None = None
        self.name = f"tom{order}"
        # learnt state
        self.confidence = [1.0] * (order + 1)  # c_1..c_k (index 0 unused)
        self.acceptance: dict[Any, list[int]] = {}  # belief key -> [accepted, made]
        self.beliefs: dict[int, Posterior] = {}  # opponent seat -> its target
        self.beliefs_of_me: dict[int, Posterior] = {}  # opponent seat -> its (modelled) belief about mine
        self._seen_proposals: list[dict[str, Any]] = []
        self._seen_decisions: list[dict[str, Any]] = []
        self._my_proposals: dict[int, tuple[Offer, dict[int, dict[str, int]]]] = {}  # turn -> (offer, hands)
        self._trace: list[dict[str, Any]] = []
        self._first_pool: dict[str, int] | None = None

    def __repr__(self) -> str:
        return f"ToMBot(order={self.order}, seed={self.seed!r})"

    # --- the trace -----------------------------------------------------------------------------------
    def trace(self) -> list[dict[str, Any]]:
        """JSON-safe records of every decision: beliefs, confidences, candidate offers' expected values."""
        return list(self._trace)

    def _record(self, record: dict[str, Any]) -> None:
        self._trace.append(record)
        if len(self._trace) > TRACE_LIMIT:
            del self._trace[0]

    # --- the policy ----------------------------------------------------------------------------------
    def observe(self, events: list[dict[str, Any]]) -> None:
        """Keep the proposals and decisions this seat may see; they are learnt from at the next move
        (when the view gives the hands they were made against)."""
        for event in events:
            kind, payload = event.get("type"), event.get("payload") or {}
            if kind == "proposed":
                self._seen_proposals.append(payload)
            elif kind == "decided" and "accept" in payload:
                self._seen_decisions.append(payload)

    def act(self, view: dict[str, Any], legal: Sequence[str]) -> dict[str, Any]:
        options = [kind for kind in legal if kind != "resign"]
        rng = random.Random(
            f"{self.seed}:{view.get('turn')}:{view.get('phase')}:{len(view.get('crafts_this_phase') or [])}"
        )
        ctx = self._context(view)
        self._learn(ctx)
        if "report_tom" in options:
            return self._report(view, ctx)
        if "decide" in options:
            return self._decide(view, ctx)
        if "finish_crafting" in options:
            return self._craft(view, ctx, "craft" in options)
        if "propose" in options or "pass" in options:
            return self._propose(view, ctx, rng, can_propose="propose" in options, can_pass="pass" in options)
        raise ValueError(f"{self.name} has no move among legal actions {list(legal)}; ask only when awaited.")

    # --- context ---------------------------------------------------------------------------------------
    def _rules_for(self, view: dict[str, Any]) -> RuleSet:
        if self._given_rules is not None:
            return self._given_rules
        if self._rules is None or self._rules.name != view["ruleset"]:
            self._rules = load_rule_set(view["ruleset"])
        return self._rules

    def _context(self, view: dict[str, Any]) -> _Context:
        rules = self._rules_for(view)
        whole = (view.get("rules") or {}).get("crafting_runs") == "whole"
        planner = planner_for(rules, whole_runs=whole)
        hands = [{k: int(v) for k, v in h.items() if int(v) > 0} for h in view["hands"]]
        pool = pool_of(hands)
        me = view["seat"]
        target = {k: int(v) for k, v in (view.get("target") or {}).items()}
        try:
            my_need = requirement(planner, target, pool) if target else None
        except Exception:  # an item the rule set does not know: no model of our own progress
            my_need = None
        opponents = [s for s, active in enumerate(view.get("active") or []) if active and s != me]
        # opponents' candidate targets and their requirements stay on the pool first seen this game: only
        # crafting changes the pool and a bot crafts only its target (the random bot excepted), so
        # re-planning every candidate after each craft phase would cost much and change little
        if self._first_pool is None:
            self._first_pool = pool
        ctx = _Context(planner, hands, self._first_pool, me, target, my_need, opponents)
        if self.order >= 1:
            for seat in opponents:
                self.beliefs.setdefault(seat, Posterior()).reset(self._candidates(ctx, seat))
                self.beliefs_of_me.setdefault(seat, Posterior()).reset(self._candidates(ctx, me))
        return ctx

    def _candidates(self, ctx: _Context, seat: int) -> list[str]:
        hand = ctx.hands[seat]
        out = []
        for item in candidate_targets(ctx.planner, ctx.pool, self.max_candidates):
            need = ctx.need_of(item)
            if need is not None and coverage(hand, need) < 1 - EPS:  # its own hand cannot craft it
                out.append(item)
        return out

    # --- learning ----------------------------------------------------------------------------------------
    def _learn(self, ctx: _Context) -> None:
        for payload in self._seen_decisions:
            turn, proposer = payload.get("turn"), payload.get("proposer")
            accepted = bool(payload.get("accept"))
            if proposer == ctx.me and turn in self._my_proposals:
                offer, hands = self._my_proposals.pop(turn)
                stats = self.acceptance.setdefault(self._belief_key(offer), [0, 0])
                stats[0] += accepted
                stats[1] += 1
                if self.order >= 1:
                    self._update_from_decision(ctx, offer, hands, accepted)
            elif payload.get("seat") == ctx.me and self.order >= 1 and proposer in self.beliefs_of_me:
                pass  # our own decisions were learnt from when we made them
        self._seen_decisions.clear()
        for payload in self._seen_proposals:
            proposer = payload.get("proposer")
            if proposer == ctx.me or proposer not in ctx.opponents or payload.get("to") != ctx.me:
                continue
            offer: Offer = (
                ctx.me,
                _key(payload.get("offer") or {}),
                _key(payload.get("request") or {}),
            )
            if self.order >= 1:
                self._update_from_proposal(ctx, proposer, offer)
        self._seen_proposals.clear()

    def _belief_key(self, offer: Offer) -> Any:
        to, give, request = offer
        if self.belief_key == "offer":
            return offer
        if self.belief_key == "responder":
            return to
        return (to, tuple(i for i, _ in give), tuple(i for i, _ in request))

    def _update_from_decision(
        self, ctx: _Context, offer: Offer, hands: dict[int, dict[str, int]], accepted: bool
    ) -> None:
        """Bayes on the opponent's target from its answer to our proposal (a noisy simulated responder)."""
        to = offer[0]
        belief = self.beliefs.get(to)
        if belief is None:
            return
        likelihood = {}
        for target, _ in belief.probs.items():
            yes = self._responder_accepts(ctx, hands, to, ctx.me, target, offer, self.order - 1)
            p = (1 - self.epsilon) if yes else self.epsilon
            likelihood[target] = p if accepted else 1 - p
        belief.update(likelihood)
        self._record(
            {
                "event": "belief_update",
                "from": "decision",
                "seat": to,
                "accepted": accepted,
                "offer": _offer_json(offer),
                "belief": _rounded(belief.top(10)),
            }
        )

    def _update_from_proposal(self, ctx: _Context, proposer: int, offer: Offer) -> None:
        """Bayes on the proposer's target (softmax of its own gain over its bounded offer set), then the
        confidences (Eq 9/10: how good the offer was for a pure ToM-(m-1) proposer of that target)."""
        belief = self.beliefs[proposer]
        hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
        _, give, request = offer
        likelihood = {}
        for target in belief.probs:
            need = ctx.need_of(target)
            own = gain(hands[proposer], need, give, request)
            rivals = enumerate_offers(proposer, ctx.me, hands[proposer], hands[ctx.me], need, self.max_offers)
            scores = [gain(hands[proposer], need, g, r) for _, g, r in rivals] + [own]
            top = max(scores)
            mass = sum(math.exp((s - top) / self.tau) for s in scores)
            likelihood[target] = math.exp((own - top) / self.tau) / mass
        before = dict(belief.probs)
        belief.update(likelihood)
        # Eq 9/10 with the posterior held before this evidence (decision-time beliefs)
        ratios = []
        for m in range(1, self.order + 1):
            ratio = 0.0
            for target, p in Posterior(before).top(self.top_targets):
                need = ctx.need_of(target)
                rivals = enumerate_offers(
                    proposer, ctx.me, hands[proposer], hands[ctx.me], need, self.max_offers
                )
                evs = [self._pure_ev(ctx, hands, proposer, ctx.me, need, o, m - 1) for o in rivals]
                mine = self._pure_ev(ctx, hands, proposer, ctx.me, need, offer, m - 1)
                best = max(evs, default=0.0)
                if best > EPS:
                    ratio += p * max(0.0, min(1.0, mine / best))
                else:
                    ratio += p * (1.0 if abs(mine - best) <= EPS else 0.0)
            lam = self.learning_speed
            self.confidence[m] = min(1.0, max(0.0, (1 - lam) * self.confidence[m] + lam * ratio))
            ratios.append(round(ratio, 4))
        self._record(
            {
                "event": "belief_update",
                "from": "proposal",
                "seat": proposer,
                "offer": _offer_json(offer),
                "belief": _rounded(belief.top(10)),
                "confidence": [round(c, 4) for c in self.confidence[1:]],
                "ratios": ratios,
            }
        )

    # --- simulated players ---------------------------------------------------------------------------------
    def _responder_accepts(
        self,
        ctx: _Context,
        hands: Mapping[int, Hand],
        responder: int,
        proposer: int,
        target: str,
        offer: Offer,
        order: int,
    ) -> bool:
        """Would ``responder``, a pure ToM-``order`` responder whose target is ``target``, accept ``offer``
        from ``proposer``? (order 0: iff its own gain is positive; order >= 1: and the trade does not complete
        the proposer's target without completing its own, by its belief about the proposer's target.)"""
        _, give, request = offer
        need = ctx.need_of(target)
        own = gain(hands[responder], need, request, give)
        if own <= EPS:
            return False
        if order == 0:
            return True
        if completes(hands[responder], need, request, give):
            return True  # shared completion at worst
        return self._race_risk(ctx, hands, proposer, responder, give, request) < 0.5

    def _race_risk(
        self,
        ctx: _Context,
        hands: Mapping[int, Hand],
        proposer: int,
        responder: int,
        give,
        request,  # type: ignore[no-untyped-def]
    ) -> float:
        """The responder's believed probability that the trade completes the proposer's target."""
        if proposer == ctx.me:
            belief = self.beliefs_of_me.get(responder)
            pairs = belief.top(self.top_targets) if belief else []
        else:
            belief = self.beliefs.get(proposer)
            pairs = belief.top(self.top_targets) if belief else []
        return sum(p for t, p in pairs if completes(hands[proposer], ctx.need_of(t), give, request))

    def _accept_probability(
        self, ctx: _Context, hands: Mapping[int, Hand], offer: Offer, order: int
    ) -> float:
        """Our posterior probability that the addressee (a simulated pure ToM-``order`` responder) accepts."""
        to = offer[0]
        belief = self.beliefs.get(to)
        if belief is None:
            return 1.0
        return sum(
            p
            for t, p in belief.top(self.top_targets)
            if self._responder_accepts(ctx, hands, to, ctx.me, t, offer, order)
        )

    def _pure_ev(
        self,
        ctx: _Context,
        hands: Mapping[int, Hand],
        proposer: int,
        responder: int,
        need: Mapping[str, int] | None,
        offer: Offer,
        order: int,
    ) -> float:
        """A simulated pure ToM-``order`` opponent proposer's EV (order 0: optimistic beliefs, b = 1)."""
        _, give, request = offer
        pi = gain(hands[proposer], need, give, request)
        if order == 0 or pi <= 0:
            return pi
        # it models us as a pure ToM-(order-1) responder over its belief about our target
        belief = self.beliefs_of_me.get(proposer)
        pairs = belief.top(self.top_targets) if belief else []
        accept = 0.0
        for t, p in pairs:
            mine = ctx.need_of(t)
            if gain(hands[responder], mine, request, give) <= EPS:
                continue
            if order - 1 >= 1 and not completes(hands[responder], mine, request, give):
                risk = self._race_risk(ctx, hands, proposer, responder, give, request)
                if risk >= 0.5:
                    continue
            accept += p
        return accept * pi

    # --- decisions ------------------------------------------------------------------------------------------
    def _expected_values(self, ctx: _Context, offers: list[Offer]) -> list[tuple[float, list[float]]]:
        hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
        out = []
        for offer in offers:
            _, give, request = offer
            pi = gain(ctx.hands[ctx.me], ctx.my_need, give, request)
            stats = self.acceptance.get(self._belief_key(offer))
            b = 1.0 if not stats or stats[1] == 0 else stats[0] / stats[1]
            levels = [b * pi]
            for k in range(1, self.order + 1):
                p = self._accept_probability(ctx, hands, offer, k - 1) if pi > 0 else 0.0
                c = self.confidence[k]
                levels.append((1 - c) * levels[-1] + c * p * pi)
            out.append((levels[-1], levels))
        return out

    def _propose(
        self, view: dict[str, Any], ctx: _Context, rng: random.Random, can_propose: bool, can_pass: bool
    ) -> dict[str, Any]:
        if not can_propose:
            return {"type": "pass"}
        offers: list[Offer] = []
        for to in ctx.opponents:
            offers += enumerate_offers(
                ctx.me, to, ctx.hands[ctx.me], ctx.hands[to], ctx.my_need, self.max_offers
            )
        offers = offers[: self.max_offers]
        scored = self._expected_values(ctx, offers)
        best = max((ev for ev, _ in scored), default=0.0)
        chosen: Offer | None = None
        if best > EPS:
            ties = [o for o, (ev, _) in zip(offers, scored, strict=True) if ev >= best - EPS]
            chosen = rng.choice(ties)
        ranked = sorted(zip(offers, scored, strict=True), key=lambda x: -x[1][0])[:10]
        self._record(
            {
                "event": "propose",
                "turn": view.get("turn"),
                "order": self.order,
                "offers": len(offers),
                "confidence": [round(c, 4) for c in self.confidence[1:]],
                "belief": {str(s): _rounded(b.top(10)) for s, b in self.beliefs.items()},
                "belief_of_me": {str(s): _rounded(b.top(10)) for s, b in self.beliefs_of_me.items()},
                "candidates": [
                    {"offer": _offer_json(o), "ev": round(ev, 5), "levels": [round(x, 5) for x in lv]}
                    for o, (ev, lv) in ranked
                ],
                "chosen": _offer_json(chosen) if chosen else None,
            }
        )
        if chosen is None:
            if can_pass:
                return {"type": "pass"}
            chosen = self._harmless_offer(ctx)
            if chosen is None:
                return {"type": "pass"}
        to, give, request = chosen
        self._my_proposals[int(view.get("turn") or 0)] = (
            chosen,
            {s: dict(h) for s, h in enumerate(ctx.hands)},
        )
        self._after_own_move(ctx, chosen, proposer=True)
        return {"type": "propose", "to": to, "offer": dict(give), "request": dict(request), "message": ""}

    def _harmless_offer(self, ctx: _Context) -> Offer | None:
        """A proposal that costs us nothing when passing is not allowed: one unit of an item we do not need
        from an opponent, for nothing in return (a rational opponent rejects it)."""
        for to in ctx.opponents:
            for item, count in sorted(ctx.hands[to].items()):
                if count > 0 and item not in (ctx.my_need or {}) and ctx.hands[ctx.me].get(item, 0) == 0:
                    return (to, (), ((item, 1),))
            for item, count in sorted(ctx.hands[to].items()):
                if count > 0:
                    return (to, (), ((item, 1),))
        # the opponents hold nothing: give away one unit of what we need least
        mine = sorted(ctx.hands[ctx.me].items(), key=lambda kv: ((ctx.my_need or {}).get(kv[0], 0), kv[0]))
        if ctx.opponents and mine:
            return (ctx.opponents[0], ((mine[0][0], 1),), ())
        return None

    def _decide(self, view: dict[str, Any], ctx: _Context) -> dict[str, Any]:
        pending = view.get("pending_proposal") or {}
        proposer = pending.get("proposer")
        give = _key(pending.get("request") or {})  # what we would give
        get = _key(pending.get("offer") or {})
        hand = ctx.hands[ctx.me]
        held = all(hand.get(i, 0) >= n for i, n in give)
        pi = gain(hand, ctx.my_need, give, get) if held else -1.0
        risk = 0.0
        if self.order >= 1 and proposer in self.beliefs and held:
            belief = self.beliefs[proposer]
            if not completes(hand, ctx.my_need, give, get):
                hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
                risk = sum(
                    p
                    for t, p in belief.top(self.top_targets)
                    if completes(hands[proposer], ctx.need_of(t), get, give)
                )
        c1 = self.confidence[1] if self.order >= 1 else 0.0
        utility = pi - c1 * risk
        accept = held and utility > EPS
        self._record(
            {
                "event": "decide",
                "turn": view.get("turn"),
                "gain": round(pi, 5),
                "race": round(risk, 4),
                "utility": round(utility, 5),
                "accept": accept,
            }
        )
        if proposer is not None and self.order >= 1:
            offer: Offer = (ctx.me, get, give)
            self._after_own_decision(ctx, proposer, offer, accept)
        return {"type": "decide", "accept": accept, "message": ""}

    def _after_own_move(self, ctx: _Context, offer: Offer, proposer: bool) -> None:
        """Second-order belief: what the addressee learns about our target from our proposal (the same
        softmax likelihood we apply to its proposals)."""
        if self.order < 1:
            return
        to, give, request = offer
        belief = self.beliefs_of_me.get(to)
        if belief is None:
            return
        likelihood = {}
        for target in belief.probs:
            need = ctx.need_of(target)
            own = gain(ctx.hands[ctx.me], need, give, request)
            rivals = enumerate_offers(ctx.me, to, ctx.hands[ctx.me], ctx.hands[to], need, self.max_offers)
            scores = [gain(ctx.hands[ctx.me], need, g, r) for _, g, r in rivals] + [own]
            top = max(scores)
            mass = sum(math.exp((s - top) / self.tau) for s in scores)
            likelihood[target] = math.exp((own - top) / self.tau) / mass
        belief.update(likelihood)

    def _after_own_decision(self, ctx: _Context, proposer: int, offer: Offer, accepted: bool) -> None:
        """Second-order belief: what the proposer learns about our target from our answer."""
        belief = self.beliefs_of_me.get(proposer)
        if belief is None:
            return
        _, get, give = offer  # offer is (us, what we get, what we give)
        likelihood = {}
        for target in belief.probs:
            yes = gain(ctx.hands[ctx.me], ctx.need_of(target), give, get) > EPS
            p = (1 - self.epsilon) if yes else self.epsilon
            likelihood[target] = p if accepted else 1 - p
        belief.update(likelihood)

    def _craft(self, view: dict[str, Any], ctx: _Context, can_craft: bool) -> dict[str, Any]:
        if not can_craft or not ctx.target:
            return {"type": "finish_crafting"}
        hand = {k: Fraction(v) for k, v in (view.get("crafting_hand") or {}).items()}
        if all(hand.get(k, 0) >= v for k, v in ctx.target.items()):
            return {"type": "finish_crafting"}
        try:
            plan = ctx.planner.plan(hand, ctx.target, find_missing=False)
        except PlannerError:
            return {"type": "finish_crafting"}
        if not plan.craftable or not plan.steps:
            return {"type": "finish_crafting"}
        step = plan.steps[0]
        action: dict[str, Any] = {"type": "craft", "recipe": step.recipe_id, "runs": fmt_qty(step.runs)}
        if step.choices:
            action["choices"] = {int(k): v for k, v in step.choices.items()}
        if step.fuel:
            action["fuel"] = step.fuel
        return action

    # --- ToM reports --------------------------------------------------------------------------------
    def values(self, view: dict[str, Any]) -> dict[str, Any]:
        """V0, V1 and V2 (per opponent) as raw marginal progress values over the public items."""
        ctx = self._context(view)
        items = sorted(pool_of(ctx.hands))
        v0 = marginal_values(ctx.hands[ctx.me], ctx.my_need, items)
        v1: dict[str, dict[str, float]] = {}
        v2: dict[str, dict[str, float]] = {}
        for seat in ctx.opponents:
            v1[str(seat)] = self._expected_marginals(ctx, self.beliefs.get(seat), seat, items)
            v2[str(seat)] = self._expected_marginals(ctx, self.beliefs_of_me.get(seat), ctx.me, items)
        return {"v0": v0, "v1": v1, "v2": v2}

    def _expected_marginals(
        self, ctx: _Context, belief: Posterior | None, seat: int, items: list[str]
    ) -> dict[str, float]:
        out = dict.fromkeys(items, 0.0)
        for target, p in belief.top(self.top_targets * 2) if belief else []:
            for item, v in marginal_values(ctx.hands[seat], ctx.need_of(target), items).items():
                out[item] += p * v
        return out

    def _report(self, view: dict[str, Any], ctx: _Context) -> dict[str, Any]:
        duty = view["tom"]
        items = sorted(duty["items"])
        raw = self.values(view)
        report: dict[str, Any] = {
            "type": "report_tom",
            "v0": scale_0_10({i: raw["v0"].get(i, 0.0) for i in items}),
        }
        for order in duty["orders"]:
            if order in (1, 2):
                report[f"v{order}"] = {
                    str(s): scale_0_10({i: raw[f"v{order}"].get(str(s), {}).get(i, 0.0) for i in items})
                    for s in duty["opponents"]
                }
        self._record(
            {"event": "report", "turn": view.get("turn"), **{k: v for k, v in report.items() if k != "type"}}
        )
        return report


@dataclass
class _Context:
    planner: Planner
    hands: list[dict[str, int]]
    pool: dict[str, int]
    me: int
    target: dict[str, int]
    my_need: dict[str, int] | None
    opponents: list[int]
    _needs: dict[str, dict[str, int] | None] = field(default_factory=dict)

    def need_of(self, item: str) -> dict[str, int] | None:
        if item not in self._needs:
            self._needs[item] = requirement(self.planner, {item: 1}, self.pool)
        return self._needs[item]


def _offer_json(offer: Offer | None) -> dict[str, Any] | None:
    if offer is None:
        return None
    to, give, request = offer
    return {"to": to, "offer": dict(give), "request": dict(request)}


def _rounded(pairs: list[tuple[str, float]]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in pairs}


def _number(name: str, text: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number from {low} to {high}, not {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low} to {high}, not {text!r}")
    return value


def _factory(order: int):  # type: ignore[no-untyped-def]
    def make(
        seed: int,
        *,
        learning_speed: str = "0.1",
        belief_key: str = "kinds",
        candidates: str = "96",
        top_targets: str = "6",
        max_offers: str = "400",
        **options: str,
    ) -> ToMBot:
        lam = options.pop("lambda", None) or learning_speed
        if options:
            raise ValueError(f"unknown option(s) {', '.join(sorted(options))} for tom{order}")
        if belief_key not in BELIEF_KEYS:
            raise ValueError(f"belief_key must be one of {', '.join(BELIEF_KEYS)}, not {belief_key!r}")
        return ToMBot(
            seed,
            order=order,
            learning_speed=_number("lambda", lam, 0.0, 1.0),
            belief_key=belief_key,
            candidates=int(_number("candidates", candidates, 1, 500)),
            top_targets=int(_number("top_targets", top_targets, 1, 50)),
            max_offers=int(_number("max_offers", max_offers, 1, 5000)),
        )

    make.__doc__ = f"ToM-{order} negotiator (Colored Trails model); options lambda, belief_key, candidates."
    return make


tom0 = _factory(0)
tom1 = _factory(1)
tom2 = _factory(2)
tom3 = _factory(3)
