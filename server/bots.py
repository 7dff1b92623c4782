"""Policies that fill bot seats, found without importing them: the server knows only the policy contract.

Policies (bots, scripted players, LLM agents) are plug-ins. By default the server asks the registry named
by the ``tradecraft.policy_registry`` entry point (``make_policy(spec, seed)`` and ``policy_names()``);
``create_app(policy_factory=...)`` injects another. A policy has ``act(view, legal) -> dict`` and
optionally ``observe(events)`` (see docs/protocol.md, "Bots"); whatever it answers is validated like a
client's action.

Seeds: one policy per (game, seat), seeded by :func:`bot_seed` from the game seed and the seat (and how
many times that seat's policy had to be rebuilt after failures), so a game's bots replay the same way
after a restart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Protocol

from server.auth import ServerError
from server.game import Game

POLICY_REGISTRY_GROUP = "tradecraft.policy_registry"


class SeatPolicy(Protocol):
    """What the server needs of a policy (``observe(events: list[dict])`` is optional)."""

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]: ...


PolicyFactory = Callable[[str, int], SeatPolicy]
"""``factory(spec, seed)``: a fresh policy for a spec such as ``"random"``; raises ``ValueError``
(with ``code`` and ``message`` where it can) for a spec it does not know."""


def bot_move_key(game: Game, seat: int) -> str:
    """Where ``seat`` is in its own play: the turn, the phase and its crafts so far in this phase.

    A seed keyed by this (not by the log position) gives the same moves for the same game seed: in the
    craft phase every seat acts at once, so the log position of a seat's move depends on how the server's
    threads interleaved the seats.
    """
    return f"{game.turn}:{game.phase}:{len(game.crafts_this_phase(seat))}"


def bot_seed(game_seed: int, seat: int, seq: int | str = 0, attempt: int = 0) -> int:
    """A stable 63-bit seed for the policy of ``seat`` (``seq``/``attempt`` > 0: a rebuilt policy; ``seq`` may
    be a :func:`bot_move_key`)."""
    key = f"{game_seed}:{seat}:{seq}" + (f":{attempt}" if attempt else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def installed_policies() -> tuple[PolicyFactory, Callable[[], list[str]]]:
    """``(make_policy, policy_names)`` of the registry the installed packages name; a clear error if none."""
    found = list(entry_points(group=POLICY_REGISTRY_GROUP, name="default"))
    if not found:
        raise RuntimeError(
            f"No policy registry is installed (entry point group {POLICY_REGISTRY_GROUP!r}): install the "
            "tradecraft package (pip install -e .) or pass create_app(policy_factory=...)."
        )
    registry = found[0].load()
    return registry.make_policy, registry.policy_names


class BotRegistry:
    """The server's view of the policies: check a spec, build a policy, with the server's typed errors."""

    def __init__(
        self, factory: PolicyFactory | None = None, names: Callable[[], list[str]] | None = None
    ) -> None:
        if factory is None:
            factory, installed_names = installed_policies()
            names = names or installed_names
        self._factory = factory
        self._names = names or (lambda: [])

    def names(self) -> list[str]:
        return sorted(self._names())

    def require(self, spec: str) -> str:
        """``spec`` if a policy can be built from it, else a typed ``unknown_bot``/``invalid_bot_spec``."""
        self.make(spec, 0)
        return spec

    def make(self, spec: str, seed: int) -> SeatPolicy:
        try:
            return self._factory(spec, seed)
        except ValueError as err:
            code = getattr(err, "code", "unknown_bot")
            message = getattr(err, "message", None) or str(err)
            raise ServerError(code, message, {"bot": str(spec)[:300]}) from None
