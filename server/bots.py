"""Built-in bots that fill seats. The bots themselves live in ``agents.bots`` (one bot library for the
whole project); this module only looks them up and derives their seeds.

The server builds a fresh bot for every move with a seed derived from the game seed, the seat and the
log position, so a bot's play is reproducible from the log even across a server restart (no bot state
needs persisting).
"""

from __future__ import annotations

import hashlib

from agents.bots import BOTS, Policy, make_bot
from server.auth import ServerError


def bot_seed(game_seed: int, seat: int, seq: int, attempt: int = 0) -> int:
    """A stable 63-bit seed for the move of ``seat`` at log position ``seq`` (``attempt`` > 0: a retry)."""
    key = f"{game_seed}:{seat}:{seq}" + (f":{attempt}" if attempt else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class BotRegistry:
    """Names and factories of the built-in bots in ``agents.bots``, with the server's typed errors."""

    def names(self) -> list[str]:
        return sorted(BOTS)

    def require(self, name: str) -> str:
        if name not in BOTS:
            known = ", ".join(self.names())
            raise ServerError(
                "unknown_bot", f"There is no built-in bot {name!r}; choose one of: {known}.", {"bot": name}
            )
        return name

    def make(self, name: str, seed: int) -> Policy:
        return make_bot(self.require(name), seed)
