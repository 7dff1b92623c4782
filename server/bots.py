"""Built-in bots that fill seats. The bots themselves live in ``agents.bots`` (one bot library for the
whole project); this module only looks them up and derives their seeds.

The server builds a fresh bot for every move with a seed derived from the game seed, the seat and where
the seat is in its own play (:func:`bot_move_key`), so a bot's play is reproducible from the game seed even
across a server restart (no bot state needs persisting), however the seats' simultaneous crafting
interleaved.
"""

from __future__ import annotations

import hashlib

from agents.bots import BOTS, Policy, make_bot
from server.auth import ServerError
from server.game import Game


def bot_move_key(game: Game, seat: int) -> str:
    """Where ``seat`` is in its own play: the turn, the phase and its crafts so far in this phase.

    Not the log position: in the craft phase every seat acts at once, so the log position of a seat's
    move depends on how the server's threads interleaved the seats, and the same game seed would give
    different moves.
    """
    return f"{game.turn}:{game.phase}:{len(game.crafts_this_phase(seat))}"


def bot_seed(game_seed: int, seat: int, move: int | str, attempt: int = 0) -> int:
    """A stable 63-bit seed for the move of ``seat`` at ``move`` (see :func:`bot_move_key`; ``attempt`` >
    0: a retry)."""
    key = f"{game_seed}:{seat}:{move}" + (f":{attempt}" if attempt else "")
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
