"""What a policy is: the one contract every bot, scripted player and LLM agent implements.

A policy plays one seat. Before each move it may be handed the seat's new events (``observe``, optional);
then ``act`` gets the seat's player view (:func:`server.game.views.player_view`) and the action types it
may send now (:func:`server.game.legal.legal_actions`) and returns an action dict in the engine's schema
(:mod:`server.game.actions`). The events are the seat's viewer-log records, exactly what a remote client
receives: dicts ``{"n", "type", "actor", "payload", "visibility"}`` numbered ``n`` in the seat's own log
(plus ``"time"`` when a server played them).

A policy must be deterministic given its seed and what it was shown; randomness that should differ
between moves comes from ``(seed, view["log_size"])``, so a policy rebuilt after a server restart (and fed
the whole seat log) plays on exactly as the lost one would have. The server calls ``act`` outside the
game's lock and validates the answer like any client's action: an illegal action is refused, not applied.

**Traces** (optional): a policy that records how it reached its moves (an LLM agent's prompts, completions,
tool calls, token counts, latencies and retries; a bot's beliefs) implements ``drain_traces()``, returning
the JSON-safe records made since the last call and forgetting them. Whoever runs the policy (the server,
:func:`agents.local.play_local`, the environments, the remote client) calls it after each ``act`` and stores
each record as a game-log ``trace`` record (:mod:`server.game.gamelog`) with ``seat``, ``event_seq`` (the
first event the move produced; null if refused) and ``time`` added. A record never holds credentials.

**Refusals** (optional): a policy that can learn from a refused move (an LLM agent, which tells its model
the error and tries again) implements ``refused(error)``. A runner whose engine refuses the action ``act``
returned passes the engine's typed error ``{"code", "message", "details"}`` (what a browser would get) and
asks ``act`` again, a bounded number of times; a policy without the hook is handled as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Policy(Protocol):
    """Anything that picks an action for one seat from what that seat may see."""

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]: ...


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
"""``factory(seed: int, **options: str) -> Policy``: what the ``tradecraft.policies`` entry points name."""


def observe(policy: Policy, events: list[dict[str, Any]]) -> None:
    """Hand ``events`` to ``policy`` if it observes at all (``observe`` is optional)."""
    hook = getattr(policy, "observe", None)
    if hook is not None:
        hook(events)


def drain_traces(policy: Policy) -> list[dict[str, Any]]:
    """The trace records ``policy`` made since the last call (``[]`` for a policy that keeps none)."""
    hook = getattr(policy, "drain_traces", None)
    return list(hook()) if hook is not None else []


def tell_refused(policy: Policy, error: dict[str, Any]) -> bool:
    """Pass a refusal to ``policy``; False when it has no ``refused`` hook (it cannot learn from one)."""
    hook = getattr(policy, "refused", None)
    if hook is None:
        return False
    hook(error)
    return True
