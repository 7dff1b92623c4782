"""Built-in bots that fill seats. The bots themselves live in ``agents.bots`` (one bot library for the
whole project); this module only looks them up and derives their seeds.

A bot is anything with ``act(view: dict, legal: list[str]) -> dict`` (an action in the engine's schema),
registered in ``agents.bots.BOTS`` (name -> class taking a seed) and built by ``agents.bots.make_bot(name,
seed)`` when that helper exists. The server builds a fresh bot for every move with a seed derived from the
game seed, the seat and the log position, so a bot's play is reproducible from the log even across a server
restart (no bot state needs persisting).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
from typing import Any, Protocol

from server.auth import ServerError

log = logging.getLogger(__name__)


class BotPolicy(Protocol):
    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]: ...


def bot_seed(game_seed: int, seat: int, seq: int, attempt: int = 0) -> int:
    """A stable 63-bit seed for the move of ``seat`` at log position ``seq`` (``attempt`` > 0: a retry)."""
    key = f"{game_seed}:{seat}:{seq}" + (f":{attempt}" if attempt else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class BotRegistry:
    """Names and factories of the built-in bots found in ``agents.bots``."""

    def __init__(self, module: str = "agents.bots") -> None:
        self._module_name = module

    def _module(self) -> Any | None:
        try:
            return importlib.import_module(self._module_name)
        except ImportError as exc:
            log.warning("no built-in bots available (%s cannot be imported: %s)", self._module_name, exc)
            return None

    def names(self) -> list[str]:
        module = self._module()
        registry = getattr(module, "BOTS", None) if module else None
        return sorted(registry) if isinstance(registry, dict) else []

    def require(self, name: str) -> str:
        if name not in self.names():
            known = ", ".join(self.names()) or "none installed"
            raise ServerError(
                "unknown_bot", f"There is no built-in bot {name!r}; choose one of: {known}.", {"bot": name}
            )
        return name

    def make(self, name: str, seed: int) -> BotPolicy:
        module = self._module()
        self.require(name)
        factory = getattr(module, "make_bot", None)
        if callable(factory):
            return factory(name, seed)
        return module.BOTS[name](seed)  # type: ignore[union-attr]
