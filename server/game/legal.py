"""What a seat may do now, and enumerations of concrete actions for bots."""

from __future__ import annotations

from server.game.state import Game


def legal_actions(game: Game, seat: int) -> list[str]:
    """Action types ``seat`` may send now, in :data:`~server.game.actions.ACTION_MODELS` order."""
    raise NotImplementedError


def action_mask(game: Game, seat: int) -> dict[str, bool]:
    """For every player action type: whether it is legal for ``seat`` now."""
    raise NotImplementedError
