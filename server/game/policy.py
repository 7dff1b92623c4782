"""What a policy is, and the one decide step every runner calls.

A **policy** plays one seat: any object with ``act(view, legal) -> action``, where ``view`` is the seat's
player view (:func:`server.game.views.player_view`), ``legal`` the action types it may send now
(:func:`server.game.legal.legal_actions`), and the answer an action dict in the engine's schema
(:mod:`server.game.actions`), or an action model the engine's parser already made (an LLM agent's tools
parse its tool call once; every runner passes a model on without parsing it again). Three hooks are
optional:

- ``observe(events)``: the seat's viewer-log records that are new since the last call, exactly what a
  remote client receives (``{"n", "type", "actor", "payload", "visibility"}``, plus ``"time"`` where a clock
  stamped them), numbered ``n`` in the seat's own log;
- ``drain_traces()``: the JSON-safe records of how it reached its moves (an LLM agent's prompts and token
  counts, a bot's beliefs) made since the last call; the runner stores each with the seat, the first event
  the move produced and the time. A record never holds credentials;
- ``refused(error)``: told the engine's typed error ``{"code", "message", "details"}`` when its answer was
  refused, before it is asked again (an LLM agent tells its model).

A policy is deterministic given its seed and what it was shown; randomness that should differ between moves
comes from ``(seed, view["move_key"])``, so a policy rebuilt after a restart and fed the seat's whole log
plays on as the lost one would have. Policies are built by a :data:`PolicyFactory` named by the
``tradecraft.policies`` entry points.

Every runner — local play, the environments' opponents, the server's bot seats, the experiment runner — asks
a policy for a move with :func:`decide`, submits the answer its own way, and on a refusal asks
:meth:`OnRefusal.next_try` what to do; only the :class:`OnRefusal` strategy differs between runners
(``RAISE``, ``FALLBACK``, ``RESEED_THEN_RESIGN``), as PettingZoo makes illegal-move handling one wrapper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from server.game.actions import Action
from server.game.legal import fallback_action

PolicyAnswer = dict[str, Any] | Action
"""What ``Policy.act`` returns: an action dict in the engine's schema, or an already parsed action model."""


@runtime_checkable
class Policy(Protocol):
    """Anything that picks an action for one seat from what that seat may see."""

    def act(self, view: dict[str, Any], legal: list[str]) -> PolicyAnswer: ...


@runtime_checkable
class ObservingPolicy(Policy, Protocol):
    """A policy that keeps state between moves (beliefs, a transcript) from the events it is shown."""

    def observe(self, events: list[dict[str, Any]]) -> None: ...


@runtime_checkable
class TracingPolicy(Policy, Protocol):
    """A policy that keeps trace records of its decisions for the researcher log."""

    def drain_traces(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class RefusalAwarePolicy(Policy, Protocol):
    """A policy that is told when the game refused its action, before it is asked again."""

    def refused(self, error: dict[str, Any]) -> None: ...


PolicyFactory = Callable[..., Policy]
"""``factory(seed: int, options: <its PolicyOptions model>) -> Policy``, what the ``tradecraft.policies``
entry points name; each declares its options once (:mod:`agents.bots.registry`; a plug-in without a
model gets its keyword parameters as text options, ``factory(seed, **options)``)."""


def observe(policy: Policy, events: list[dict[str, Any]]) -> None:
    """Hand ``events`` to ``policy`` if it observes at all."""
    hook = getattr(policy, "observe", None)
    if hook is not None:
        hook(events)


def drain_traces(policy: Policy) -> list[dict[str, Any]]:
    """The trace records ``policy`` made since the last call (``[]`` for a policy that keeps none)."""
    hook = getattr(policy, "drain_traces", None)
    return list(hook()) if hook is not None else []


def listens(policy: Policy) -> bool:
    """Whether ``policy`` can be told why its answer was refused (it has the ``refused`` hook)."""
    return getattr(policy, "refused", None) is not None


def tell_refused(policy: Policy, error: Mapping[str, Any]) -> bool:
    """Pass a refusal to ``policy``; False when it has no ``refused`` hook (it cannot learn from one)."""
    hook = getattr(policy, "refused", None)
    if hook is None:
        return False
    hook(dict(error))
    return True


@dataclass
class Decision:
    """One answer of a policy: its action, or the exception it raised instead; and its trace records."""

    action: Any = None
    failure: Exception | None = None
    traces: list[dict[str, Any]] = field(default_factory=list)
    """The records of this move (linked to the first event it produces, if it is applied)."""
    refusal_traces: list[dict[str, Any]] = field(default_factory=list)
    """The records it made on hearing its last answer was refused (linked to no event)."""
    trace_failure: Exception | None = None
    """What ``drain_traces`` raised, if it did (the move stands; only its records are lost)."""

    @property
    def ok(self) -> bool:
        return self.failure is None


def decide(
    policy: Policy,
    view: dict[str, Any],
    legal: Sequence[str],
    events: list[dict[str, Any]] | None = None,
    refusal: Mapping[str, Any] | None = None,
) -> Decision:
    """Ask ``policy`` for one move: tell it why its last answer was refused (``refusal``, when it listens),
    show it its new ``events`` (when it observes), ask ``act``, and collect its traces.

    Never raises for the policy: an exception from ``refused``/``observe``/``act`` is the decision's
    ``failure`` (the runner's :class:`OnRefusal` treats it as a refusal), one from ``drain_traces`` its
    ``trace_failure``.
    """
    decision = Decision()
    try:
        if refusal is not None and tell_refused(policy, refusal):
            decision.refusal_traces = drain_traces(policy)
        if events:
            observe(policy, events)
        decision.action = policy.act(view, list(legal))
    except Exception as err:  # a broken policy must not break its runner
        decision.failure = err
    try:
        decision.traces = drain_traces(policy)
    except Exception as err:
        decision.trace_failure = err
    return decision


NextTry = Literal["ask_again", "reseed", "give_up"]


@dataclass(frozen=True)
class OnRefusal:
    """What a runner does when the engine refuses a policy's answer (or the policy raised instead).

    - ``retries``: how many more answers the policy may give for the same move;
    - ``deaf``: what a retry is for a policy without the ``refused`` hook, which would repeat itself when
      asked the same question: ``ask_again`` anyway, ``reseed`` (ask a one-move policy built with another
      seed) or ``give_up`` at once;
    - ``then``: what happens when the retries are spent: ``raise`` (the runner stops with the engine's
      error), ``fallback`` (:func:`server.game.legal.fallback_action`: a safe legal move) or ``resign``.
    A policy that listens is always told the error and asked again while retries remain.
    """

    retries: int
    deaf: NextTry
    then: Literal["raise", "fallback", "resign"]

    def next_try(self, failures: int, policy_listens: bool) -> NextTry:
        """After ``failures`` failed answers to one move: try how, or give up."""
        if failures > self.retries:
            return "give_up"
        return "ask_again" if policy_listens else self.deaf

    def final_action(self, view: Mapping[str, Any]) -> dict[str, Any] | None:
        """The move played once the policy gave up (None: ``raise``, or nothing legal to fall back on)."""
        if self.then == "fallback":
            return fallback_action(view)
        if self.then == "resign":
            return {"type": "resign"}
        return None


RAISE = OnRefusal(retries=5, deaf="give_up", then="raise")
"""Local play (:func:`agents.local.play_local`): a refused move is a bug in the policy; stop and say so."""
FALLBACK = OnRefusal(retries=2, deaf="ask_again", then="fallback")
"""A seat played over a connection (:mod:`agents.driver`, the environments' opponents): never hang a game."""
RESEED_THEN_RESIGN = OnRefusal(retries=2, deaf="reseed", then="resign")
"""The server's bot seats: another seed for a policy that cannot hear why, then the seat resigns."""
