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
  answer, with noise ``epsilon``). It simulates the opponent as the ToM-(k-1) responder this module
  implements (:func:`answer_utility`: ToM-0 accepts iff its own gain is positive; ToM>=1 iff its gain
  minus ``c_1`` times the believed probability that the trade completes the proposer's target and not
  its own is positive). Its belief about our target is the *second-order posterior*: the same Bayes
  machinery run from the opponent's viewpoint over our public moves, including the proposal it is
  answering, and its ``c_1`` is tracked as the real bot updates it (:meth:`ToMBot._responder_state`).
  ``EV^k(O) = (1-c_k) EV^(k-1)(O) + c_k P_(k-1)(accept O) pi_self(O)``
  (Eq 5/7); confidences start at 1 and follow Eq 9/10 with learning speed ``lambda`` after each
  opponent proposal.
* **Proposer-side race** (option ``race`` = ``w``, default 1; 0 turns it off): a ToM-k >= 1 proposer's
  order-k term is ``c_k sum_t P(t) accept_t(O) (pi_self(O) - w c_1 handover_t(O))``, ``handover_t`` = the
  trade completes the responder's target ``t`` and not ours (:func:`hands_over`): it does not offer the
  win, as a responder does not accept handing it over. Its model of an opponent proposer carries the same
  term.
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

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import AliasChoices, Field

from agents.bots.oracle import (
    EPS,
    Bundle,
    CraftingOracle,
    Hand,
    Offer,
    RulesCache,
    bundle,
    candidate_targets,
    completes,
    coverage,
    enumerate_offers,
    gain,
    harmless_offer,
    marginal_values,
    offer_action,
    offer_json,
    pool_of,
    tom_report,
)
from agents.bots.registry import PolicyOptions, WholeNumber, card
from craft_rules.model import RuleSet

BeliefKey = Literal["offer", "kinds", "responder"]
BELIEF_KEYS: tuple[str, ...] = get_args(BeliefKey)
MAX_ORDER = 3
MAX_RACE = 10.0
"""Largest proposer-side race weight (``race`` option): a multiple of ``c_1``, as the responder weighs it."""
TRACE_LIMIT = 400
"""Records a bot keeps in its trace (oldest dropped first): bounded memory over a long game."""


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

    def updated(self, likelihood: Mapping[str, float]) -> Posterior:
        """A copy after Bayes on ``likelihood`` (this posterior unchanged)."""
        copy = Posterior(dict(self.probs))
        copy.update(likelihood)
        return copy


@dataclass
class ProposalModel:
    """What a proposal says about its proposer's target, for every candidate target at once.

    The likelihood of offer ``O`` under target ``t`` is the softmax (temperature ``tau``) of the proposer's
    gain ``pi_t(O)`` against its bounded offer set for ``t`` (a rational proposer asks for what it needs);
    :meth:`optimality` is Eq 9/10's ratio for a pure ToM-0 proposer, ``pi_t(O) / max pi_t``. The offer sets
    are enumerated once per (hands, targets) and reused for every offer scored, so a bot can ask what its
    opponent would learn from each of its candidate offers. One code path for the bot's own updates and its
    model of its opponent's, so the two cannot drift apart.
    """

    hand: Hand
    needs: dict[str, dict[str, int] | None]
    tau: float
    tops: dict[str, float]
    masses: dict[str, float]
    bests: dict[str, float]

    @classmethod
    def build(
        cls,
        ctx: CraftingOracle,
        hands: Mapping[int, Hand],
        proposer: int,
        responder: int,
        targets: Sequence[str],
        max_offers: int,
        tau: float,
    ) -> ProposalModel:
        needs, tops, masses, bests = {}, {}, {}, {}
        for target in targets:
            need = needs[target] = ctx.need_of(target)
            rivals = enumerate_offers(
                proposer, responder, hands[proposer], hands[responder], need, max_offers
            )
            scores = [gain(hands[proposer], need, g, r) for _, g, r in rivals]
            if scores:
                top = tops[target] = max(scores)
                masses[target] = sum(math.exp((s - top) / tau) for s in scores)
            bests[target] = max(scores, default=0.0)
        return cls(dict(hands[proposer]), needs, tau, tops, masses, bests)

    def likelihood(self, give: Bundle, request: Bundle) -> dict[str, float]:
        out = {}
        for target, need in self.needs.items():
            own = gain(self.hand, need, give, request)
            if target not in self.tops:  # no other offer to compare with
                out[target] = 1.0
                continue
            rival_top = self.tops[target]
            top = max(rival_top, own)
            mass = self.masses[target] * math.exp((rival_top - top) / self.tau) + math.exp(
                (own - top) / self.tau
            )
            out[target] = math.exp((own - top) / self.tau) / mass
        return out

    def optimality(self, give: Bundle, request: Bundle, pairs: Sequence[tuple[str, float]]) -> float:
        """Eq 9/10's ratio for a pure ToM-0 proposer, averaged over ``pairs`` (target, probability)."""
        ratio = 0.0
        for target, p in pairs:
            need = self.needs.get(target)
            mine = gain(self.hand, need, give, request)
            best = self.bests.get(target, 0.0)
            if best > EPS:
                ratio += p * max(0.0, min(1.0, mine / best))
            else:
                ratio += p * (1.0 if abs(mine - best) <= EPS else 0.0)
        return ratio


@dataclass(frozen=True)
class ResponderState:
    """What a ToM-(>=1) responder holds when it answers a proposal: its belief about the proposer's target
    (the ``top_targets`` most likely, renormalised) and its confidence ``c_1`` in its first order."""

    about_proposer: tuple[tuple[str, float], ...]
    confidence: float


def answer_utility(
    hand: Hand,
    need: Mapping[str, int] | None,
    proposer_hand: Hand,
    give: Bundle,
    get: Bundle,
    state: ResponderState | None,
    need_of: Callable[[str], Mapping[str, int] | None],
) -> tuple[float, float, float]:
    """(gain, race, utility) of a responder that would ``give`` and ``get``: the one answer rule of every
    ToM-k responder, real or simulated. ``race`` is its believed probability that the trade completes the
    proposer's target and not its own (0 without a ``state``: ToM-0); it accepts iff it holds ``give`` and
    ``utility = gain - c_1 * race > EPS``."""
    pi = gain(hand, need, give, get)
    race = 0.0
    if state is not None and not completes(hand, need, give, get):
        race = sum(p for t, p in state.about_proposer if completes(proposer_hand, need_of(t), get, give))
    c1 = state.confidence if state is not None else 0.0
    return pi, race, pi - c1 * race


def hands_over(
    hands: Mapping[int, Hand],
    proposer: int,
    proposer_need: Mapping[str, int] | None,
    responder: int,
    responder_need: Mapping[str, int] | None,
    offer: Offer,
) -> bool:
    """Whether ``offer`` (from ``proposer``) completes the responder's target (``responder_need``) and not
    the proposer's: the proposer's side of :func:`answer_utility`'s race."""
    _, give, request = offer
    return completes(hands[responder], responder_need, request, give) and not completes(
        hands[proposer], proposer_need, give, request
    )


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
        race: float = 1.0,
        rules: RuleSet | None = None,
    ) -> None:
        if not 0 <= order <= MAX_ORDER:
            raise ValueError(f"order must be 0..{MAX_ORDER}, not {order}")
        if belief_key not in BELIEF_KEYS:
            raise ValueError(f"belief_key must be one of {', '.join(BELIEF_KEYS)}, not {belief_key!r}")
        if not 0.0 <= race <= MAX_RACE:
            raise ValueError(f"race must be a number from 0 to {MAX_RACE}, not {race!r}")
        self.seed = seed
        self.order = order
        self.learning_speed = learning_speed
        self.belief_key = belief_key
        self.max_candidates = candidates
        self.top_targets = top_targets
        self.max_offers = max_offers
        self.tau = tau
        self.epsilon = epsilon
        self.race = race
        self._rules = RulesCache(rules)
        self.name = f"tom{order}"
        # learnt state
        self.confidence = [1.0] * (order + 1)  # c_1..c_k (index 0 unused)
        self.acceptance: dict[Any, list[int]] = {}  # belief key -> [accepted, made]
        self.beliefs: dict[int, Posterior] = {}  # opponent seat -> its target
        self.beliefs_of_me: dict[int, Posterior] = {}  # opponent seat -> its (modelled) belief about mine
        self.their_confidence: dict[int, float] = {}  # opponent seat -> its (modelled) c_1
        self._seen_proposals: list[dict[str, Any]] = []
        self._seen_decisions: list[dict[str, Any]] = []
        # turn -> (offer, hands, the addressee's modelled state when it answers)
        self._my_proposals: dict[int, tuple[Offer, dict[int, dict[str, int]], ResponderState | None]] = {}
        self._models: dict[Any, ProposalModel] = {}  # this decision's proposal models
        self._answers: dict[Any, ResponderState] = {}  # this decision's simulated responders, per offer
        self._trace: list[dict[str, Any]] = []
        self._undrained: list[dict[str, Any]] = []
        self._first_pool: dict[str, int] | None = None

    def __repr__(self) -> str:
        return f"ToMBot(order={self.order}, seed={self.seed!r})"

    # --- the trace -----------------------------------------------------------------------------------
    def trace(self) -> list[dict[str, Any]]:
        """JSON-safe records of every decision: beliefs, confidences, candidate offers' expected values."""
        return list(self._trace)

    def drain_traces(self) -> list[dict[str, Any]]:
        """The trace records made since the last call (the policy trace contract, :mod:`server.game.policy`);
        whoever runs the bot stores them in the game log."""
        out, self._undrained = self._undrained, []
        return out

    def _record(self, record: dict[str, Any]) -> None:
        record = {"policy": self.name, **record}
        self._trace.append(record)
        self._undrained.append(record)
        if len(self._trace) > TRACE_LIMIT:
            del self._trace[0]
        if len(self._undrained) > TRACE_LIMIT:  # nobody drains (a bare tournament game): stay bounded
            del self._undrained[0]

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
        self._models.clear()  # per-decision memos: hands and beliefs change between decisions
        self._answers.clear()
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

    def predicted_answer(
        self, view: dict[str, Any], offer: Offer, target: str
    ) -> tuple[bool, ResponderState | None]:
        """What this bot, about to propose from ``view``, predicts its addressee would answer to ``offer``
        if the addressee's target were ``target``: (accept, the addressee's modelled state when it answers;
        None for a ToM-0 addressee). The addressee is simulated as the ToM-(k-1) bot of this module.
        Learns from the events observed so far, as :meth:`act` would."""
        if self.order < 1:
            raise ValueError("a ToM-0 bot has no model of its opponents")
        self._models.clear()
        self._answers.clear()
        ctx = self._context(view)
        self._learn(ctx)
        hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
        accept = self._responder_accepts(ctx, hands, offer[0], ctx.me, target, offer, self.order - 1)
        return accept, self._responder_state(ctx, hands, offer) if self.order >= 2 else None

    # --- context ---------------------------------------------------------------------------------------
    def _context(self, view: dict[str, Any]) -> CraftingOracle:
        # opponents' candidate targets and their requirements stay on the pool first seen this game: only
        # crafting changes the pool and a bot crafts only its target (the random bot excepted), so
        # re-planning every candidate after each craft phase would cost much and change little
        ctx = CraftingOracle.for_view(view, self._rules.for_view(view), pool=self._first_pool)
        if self._first_pool is None:
            self._first_pool = ctx.pool
        if self.order >= 1:
            for seat in ctx.opponents:
                self.beliefs.setdefault(seat, Posterior()).reset(self._candidates(ctx, seat))
                self.beliefs_of_me.setdefault(seat, Posterior()).reset(self._candidates(ctx, ctx.me))
        return ctx

    def _candidates(self, ctx: CraftingOracle, seat: int) -> list[str]:
        hand = ctx.hands[seat]
        out = []
        for item in candidate_targets(ctx.planner, ctx.pool, self.max_candidates):
            need = ctx.need_of(item)
            if need is not None and coverage(hand, need) < 1 - EPS:  # its own hand cannot craft it
                out.append(item)
        return out

    # --- learning ----------------------------------------------------------------------------------------
    def _learn(self, ctx: CraftingOracle) -> None:
        for payload in self._seen_decisions:
            turn, proposer = payload.get("turn"), payload.get("proposer")
            accepted = bool(payload.get("accept"))
            if proposer == ctx.me and turn in self._my_proposals:
                offer, hands, state = self._my_proposals.pop(turn)
                stats = self.acceptance.setdefault(self._belief_key(offer), [0, 0])
                stats[0] += accepted
                stats[1] += 1
                if self.order >= 1:
                    self._update_from_decision(ctx, offer, hands, state, accepted)
            # our own decisions were learnt from (in the model of the proposer) when we made them
        self._seen_decisions.clear()
        for payload in self._seen_proposals:
            proposer = payload.get("proposer")
            if proposer == ctx.me or proposer not in ctx.opponents or payload.get("to") != ctx.me:
                continue
            offer: Offer = (
                ctx.me,
                bundle(payload.get("offer") or {}),
                bundle(payload.get("request") or {}),
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
        self,
        ctx: CraftingOracle,
        offer: Offer,
        hands: dict[int, dict[str, int]],
        state: ResponderState | None,
        accepted: bool,
    ) -> None:
        """Bayes on the opponent's target from its answer to our proposal (the simulated ToM-(k-1)
        responder in the state we modelled it in when it answered, with noise ``epsilon``)."""
        to = offer[0]
        belief = self.beliefs.get(to)
        if belief is None:
            return
        likelihood = {}
        for target, _ in belief.probs.items():
            yes = self._responder_accepts(ctx, hands, to, ctx.me, target, offer, self.order - 1, state)
            p = (1 - self.epsilon) if yes else self.epsilon
            likelihood[target] = p if accepted else 1 - p
        belief.update(likelihood)
        self._record(
            {
                "event": "belief_update",
                "from": "decision",
                "seat": to,
                "accepted": accepted,
                "offer": offer_json(offer),
                "belief": _rounded(belief.top(10)),
            }
        )

    def _update_from_proposal(self, ctx: CraftingOracle, proposer: int, offer: Offer) -> None:
        """Bayes on the proposer's target (softmax of its own gain over its bounded offer set), then the
        confidences (Eq 9/10: how good the offer was for a pure ToM-(m-1) proposer of that target)."""
        belief = self.beliefs[proposer]
        hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
        _, give, request = offer
        model = self._proposal_model(ctx, hands, proposer, ctx.me, list(belief.probs))
        before = belief.top(self.top_targets)
        belief.update(model.likelihood(give, request))
        # Eq 9/10 with the posterior held before this evidence (decision-time beliefs)
        ratios = []
        for m in range(1, self.order + 1):
            if (
                m == 1
            ):  # a pure ToM-0 proposer's EV is its gain: the same ratio our model of the opponent uses
                ratio = model.optimality(give, request, before)
                lam = self.learning_speed
                self.confidence[m] = min(1.0, max(0.0, (1 - lam) * self.confidence[m] + lam * ratio))
                ratios.append(round(ratio, 4))
                continue
            ratio = 0.0
            for target, p in before:
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
                "offer": offer_json(offer),
                "belief": _rounded(belief.top(10)),
                "confidence": [round(c, 4) for c in self.confidence[1:]],
                "ratios": ratios,
            }
        )

    # --- simulated players ---------------------------------------------------------------------------------
    def _proposal_model(
        self,
        ctx: CraftingOracle,
        hands: Mapping[int, Hand],
        proposer: int,
        responder: int,
        targets: Sequence[str],
    ) -> ProposalModel:
        """The proposal likelihoods for these hands and targets, built once per decision."""
        key = (proposer, responder, bundle(hands[proposer]), bundle(hands[responder]), tuple(targets))
        model = self._models.get(key)
        if model is None:
            model = ProposalModel.build(ctx, hands, proposer, responder, targets, self.max_offers, self.tau)
            self._models[key] = model
        return model

    def _responder_state(
        self, ctx: CraftingOracle, hands: Mapping[int, Hand], offer: Offer
    ) -> ResponderState:
        """The addressee of our ``offer``, modelled as the ToM-(>=1) bot this module implements, when it
        answers: like the real bot it first learns from the proposal itself (Bayes on our target with the
        same softmax likelihood, over its belief about our target that our second-order posterior tracks,
        and Eq 9/10 on its ``c_1``), then applies :func:`answer_utility`."""
        to, give, request = offer
        key = (to, give, request, bundle(hands[ctx.me]), bundle(hands[to]))
        state = self._answers.get(key)
        if state is None:
            belief = self.beliefs_of_me.get(to) or Posterior()
            model = self._proposal_model(ctx, hands, ctx.me, to, list(belief.probs))
            after = belief.updated(model.likelihood(give, request))
            ratio = model.optimality(give, request, belief.top(self.top_targets))
            lam = self.learning_speed
            c1 = min(1.0, max(0.0, (1 - lam) * self.their_confidence.get(to, 1.0) + lam * ratio))
            state = ResponderState(tuple(after.top(self.top_targets)), c1)
            self._answers[key] = state
        return state

    def _responder_accepts(
        self,
        ctx: CraftingOracle,
        hands: Mapping[int, Hand],
        responder: int,
        proposer: int,
        target: str,
        offer: Offer,
        order: int,
        state: ResponderState | None = None,
    ) -> bool:
        """Would ``responder``, a ToM-``order`` responder whose target is ``target``, accept ``offer`` from
        ``proposer``? The rule is the real bot's (:func:`answer_utility`; order 0: iff its own gain is
        positive). When we propose, the responder's state is our model of it (``state`` if given, else
        :meth:`_responder_state`); when it proposes to us (a simulated opponent simulating us), it is our own
        belief about its target and our own ``c_1``: the truth its model of us aims at."""
        _, give, request = offer
        need = ctx.need_of(target)
        if order == 0:
            return gain(hands[responder], need, request, give) > EPS
        if proposer == ctx.me:
            state = state or self._responder_state(ctx, hands, offer)
        else:
            belief = self.beliefs.get(proposer)
            pairs = tuple(belief.top(self.top_targets)) if belief else ()
            state = ResponderState(pairs, self.confidence[1] if self.order >= 1 else 1.0)
        _, _, utility = answer_utility(
            hands[responder], need, hands[proposer], request, give, state, ctx.need_of
        )
        return utility > EPS

    def _accept_probability(
        self, ctx: CraftingOracle, hands: Mapping[int, Hand], offer: Offer, order: int
    ) -> tuple[float, float]:
        """Our posterior probability that the addressee (a simulated ToM-``order`` responder) accepts, and
        that it accepts a trade completing its target and not ours (:func:`hands_over`)."""
        to = offer[0]
        belief = self.beliefs.get(to)
        if belief is None:
            return 1.0, 0.0
        accept = handed = 0.0
        for t, p in belief.top(self.top_targets):
            if self._responder_accepts(ctx, hands, to, ctx.me, t, offer, order):
                accept += p
                if self.race > 0 and hands_over(hands, ctx.me, ctx.my_need, to, ctx.need_of(t), offer):
                    handed += p
        return accept, handed

    def _pure_ev(
        self,
        ctx: CraftingOracle,
        hands: Mapping[int, Hand],
        proposer: int,
        responder: int,
        need: Mapping[str, int] | None,
        offer: Offer,
        order: int,
    ) -> float:
        """A simulated pure ToM-``order`` opponent proposer's EV (order 0: optimistic beliefs, b = 1); with
        the race term on, an order >= 1 proposer also discounts what it believes the trade hands us, as
        :meth:`_expected_values` does (by its ``c_1`` as we track it)."""
        _, give, request = offer
        pi = gain(hands[proposer], need, give, request)
        if order == 0 or pi <= 0:
            return pi
        # it models us as a ToM-(order-1) responder over its belief about our target
        belief = self.beliefs_of_me.get(proposer)
        pairs = belief.top(self.top_targets) if belief else []
        accept = handed = 0.0
        for t, p in pairs:
            if self._responder_accepts(ctx, hands, responder, proposer, t, offer, order - 1):
                accept += p
                if self.race > 0 and hands_over(hands, proposer, need, responder, ctx.need_of(t), offer):
                    handed += p
        c1 = self.their_confidence.get(proposer, 1.0)
        return accept * pi - self.race * c1 * handed

    # --- decisions ------------------------------------------------------------------------------------------
    def _expected_values(self, ctx: CraftingOracle, offers: list[Offer]) -> list[tuple[float, list[float]]]:
        hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
        out = []
        for offer in offers:
            _, give, request = offer
            pi = gain(ctx.hands[ctx.me], ctx.my_need, give, request)
            stats = self.acceptance.get(self._belief_key(offer))
            b = 1.0 if not stats or stats[1] == 0 else stats[0] / stats[1]
            levels = [b * pi]
            for k in range(1, self.order + 1):
                p, handed = self._accept_probability(ctx, hands, offer, k - 1) if pi > 0 else (0.0, 0.0)
                c = self.confidence[k]
                # the race term: what the trade is believed to hand the responder, weighed as a responder
                # weighs it (race x c_1); 0 when the option is off
                levels.append((1 - c) * levels[-1] + c * (p * pi - self.race * self.confidence[1] * handed))
            out.append((levels[-1], levels))
        return out

    def _propose(
        self, view: dict[str, Any], ctx: CraftingOracle, rng: random.Random, can_propose: bool, can_pass: bool
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
                "race": self.race,
                "offers": len(offers),
                "confidence": [round(c, 4) for c in self.confidence[1:]],
                "their_confidence": {str(s): round(c, 4) for s, c in self.their_confidence.items()},
                "belief": {str(s): _rounded(b.top(10)) for s, b in self.beliefs.items()},
                "belief_of_me": {str(s): _rounded(b.top(10)) for s, b in self.beliefs_of_me.items()},
                "candidates": [
                    {"offer": offer_json(o), "ev": round(ev, 5), "levels": [round(x, 5) for x in lv]}
                    for o, (ev, lv) in ranked
                ],
                "chosen": offer_json(chosen) if chosen else None,
            }
        )
        if chosen is None:
            if can_pass:
                return {"type": "pass"}
            chosen = harmless_offer(ctx.me, ctx.hands, ctx.opponents, ctx.my_need)
            if chosen is None:
                return {"type": "pass"}
        hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
        state = self._responder_state(ctx, hands, chosen) if self.order >= 2 else None
        self._my_proposals[int(view.get("turn") or 0)] = (chosen, hands, state)
        self._after_own_move(ctx, chosen)
        return offer_action(chosen)

    def _decide(self, view: dict[str, Any], ctx: CraftingOracle) -> dict[str, Any]:
        pending = view.get("pending_proposal") or {}
        proposer = pending.get("proposer")
        give = bundle(pending.get("request") or {})  # what we would give
        get = bundle(pending.get("offer") or {})
        hand = ctx.hands[ctx.me]
        held = all(hand.get(i, 0) >= n for i, n in give)
        state = None
        if self.order >= 1 and proposer in self.beliefs:
            state = ResponderState(tuple(self.beliefs[proposer].top(self.top_targets)), self.confidence[1])
        pi, risk, utility = -1.0, 0.0, -1.0
        if held:
            pi, risk, utility = answer_utility(
                hand, ctx.my_need, ctx.hands[proposer], give, get, state, ctx.need_of
            )
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

    def _after_own_move(self, ctx: CraftingOracle, offer: Offer) -> None:
        """Our model of the addressee learns from our proposal as the real bot does before it answers: its
        belief about our target (the second-order posterior; the same softmax likelihood we apply to its
        proposals) and its ``c_1`` (Eq 9/10 with the belief it held before)."""
        if self.order < 1:
            return
        to, give, request = offer
        belief = self.beliefs_of_me.get(to)
        if belief is None:
            return
        hands = {s: dict(h) for s, h in enumerate(ctx.hands)}
        model = self._proposal_model(ctx, hands, ctx.me, to, list(belief.probs))
        before = belief.top(self.top_targets)
        belief.update(model.likelihood(give, request))
        lam = self.learning_speed
        ratio = model.optimality(give, request, before)
        self.their_confidence[to] = min(
            1.0, max(0.0, (1 - lam) * self.their_confidence.get(to, 1.0) + lam * ratio)
        )

    def _after_own_decision(self, ctx: CraftingOracle, proposer: int, offer: Offer, accepted: bool) -> None:
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

    def _craft(self, view: dict[str, Any], ctx: CraftingOracle, can_craft: bool) -> dict[str, Any]:
        if not can_craft:
            return {"type": "finish_crafting"}
        return ctx.craft_action(view.get("crafting_hand") or {})

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
        self, ctx: CraftingOracle, belief: Posterior | None, seat: int, items: list[str]
    ) -> dict[str, float]:
        out = dict.fromkeys(items, 0.0)
        for target, p in belief.top(self.top_targets * 2) if belief else []:
            for item, v in marginal_values(ctx.hands[seat], ctx.need_of(target), items).items():
                out[item] += p * v
        return out

    def _report(self, view: dict[str, Any], ctx: CraftingOracle) -> dict[str, Any]:
        raw = self.values(view)
        report = tom_report(view, raw["v0"], raw["v1"], raw["v2"])
        self._record(
            {"event": "report", "turn": view.get("turn"), **{k: v for k, v in report.items() if k != "type"}}
        )
        return report


def _rounded(pairs: list[tuple[str, float]]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in pairs}


class ToMOptions(PolicyOptions):
    """The options of the ``tom0`` .. ``tom3`` policies (the order is the policy's name)."""

    learning_speed: float = Field(
        0.1,
        ge=0,
        le=1,
        validation_alias=AliasChoices("lambda", "learning_speed"),
        description="learning speed of the confidences, the paper's lambda",
    )
    belief_key: BeliefKey = Field("kinds", description="what its acceptance counts are kept per")
    candidates: WholeNumber = Field(96, ge=1, le=500, description="most candidate targets per opponent")
    top_targets: WholeNumber = Field(6, ge=1, le=50, description="likeliest targets the simulation uses")
    max_offers: WholeNumber = Field(400, ge=1, le=5000, description="most proposals weighed per decision")
    race: float = Field(1.0, ge=0, le=MAX_RACE, description="proposer-side race weight, times c_1; 0: off")


def _factory(order: int) -> Callable[[int, ToMOptions], ToMBot]:
    def make(seed: int, options: ToMOptions) -> ToMBot:
        return ToMBot(seed, order=order, **options.model_dump())

    make.__name__ = f"tom{order}"
    make.__doc__ = f"ToM-{order} negotiator (Colored Trails model)."
    return make


tom0 = card(
    "ToM-0 bot",
    "Learns which of its offers you tend to accept, without modelling your goal.",
    "medium",
)(_factory(0))
tom1 = card(
    "ToM-1 bot",
    "Guesses your secret target from your moves, and will not hand you the win.",
    "hard",
)(_factory(1))
tom2 = card(
    "ToM-2 bot",
    "Guesses your target and what you believe about its own, to predict your answers.",
    "hard",
)(_factory(2))
tom3 = card(
    "ToM-3 bot",
    "Reasons one level deeper than ToM-2 about what each of you believes.",
    "hard",
)(_factory(3))
