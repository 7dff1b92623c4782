"""What each participant may see: per-player, spectator and researcher views, and filtered logs.

All views are JSON-safe dicts (Fractions as strings). Nothing private leaks: other players' targets,
crafting in progress, ToM reports, and proposals a seat was not party to never appear in its view.
"""

from __future__ import annotations

from typing import Any

from server.game.events import filter_events
from server.game.state import Game

__all__ = ["filter_events", "player_view", "researcher_view", "spectator_view"]


def player_view(game: Game, seat: int) -> dict[str, Any]:
    """What ``seat`` sees now: own target, public hands, own crafting hand, phase, turn, proposer,
    awaited seats it may know of, its pending/past proposals, public trade history, its ToM duty."""
    raise NotImplementedError


def spectator_view(game: Game) -> dict[str, Any]:
    """What an onlooker sees: public hands, phase, turn, proposer, public history; no targets."""
    raise NotImplementedError


def researcher_view(game: Game) -> dict[str, Any]:
    """Everything: targets, crafting hands, all proposals, ToM reports, idle counters, settings."""
    raise NotImplementedError
