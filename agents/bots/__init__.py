"""The built-in bots: policies that play without an API key.

A policy is anything with ``act(view: dict, legal: list[str]) -> dict``: it gets its seat's player view
(:func:`server.game.views.player_view`) and the action types it may send now
(:func:`server.game.legal.legal_actions`) and returns an action dict in the engine's schema
(:mod:`server.game.actions`). :data:`BOTS` maps a bot's name to its class (constructed with a seed);
new bots join by adding one line there. :func:`make_bot` is what the server and ``tradecraft play`` use.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from agents.bots.random_bot import RandomBot


@runtime_checkable
class Policy(Protocol):
    """Anything that picks an action for one seat from what that seat may see."""

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]: ...


BOTS: dict[str, type[Any]] = {
    "random": RandomBot,
}
"""Bot name -> class; ``cls(seed)`` builds one."""


class UnknownBotError(ValueError):
    """A bot name that is not in :data:`BOTS`. ``code`` is machine-readable."""

    code = "unknown_bot"

    def __init__(self, name: str):
        self.name = name
        self.message = f"There is no built-in bot {name!r}; choose one of: {', '.join(sorted(BOTS))}."
        super().__init__(self.message)


def make_bot(name: str, seed: int | None = 0) -> Policy:
    """A fresh bot of kind ``name`` with its own seeded random generator."""
    try:
        cls = BOTS[name]
    except KeyError:
        raise UnknownBotError(name) from None
    return cls(seed)


__all__ = ["BOTS", "Policy", "RandomBot", "UnknownBotError", "make_bot"]
