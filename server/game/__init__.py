"""The pure game engine: state, actions, events, rules of play and per-player views.

Imports only craft_rules, the standard library and pydantic (DESIGN.md, "the house"): no I/O, no
clock, randomness only from a seeded generator.
"""

from server.game.actions import (
    ACTION_MODELS,
    Action,
    Craft,
    Decide,
    FinishCrafting,
    Pass,
    Propose,
    ReportToM,
    Resign,
    Timeout,
    parse_action,
)
from server.game.errors import ERROR_CODES, GameError
from server.game.events import Event, filter_events, viewer_log, visible_to
from server.game.legal import action_mask, legal_actions
from server.game.settings import GameSettings, PhaseDeadlines, TimeoutPolicies
from server.game.state import Game
from server.game.views import player_view, researcher_view, spectator_view

__all__ = [
    "ACTION_MODELS",
    "ERROR_CODES",
    "Action",
    "Craft",
    "Decide",
    "Event",
    "FinishCrafting",
    "Game",
    "GameError",
    "GameSettings",
    "Pass",
    "PhaseDeadlines",
    "Propose",
    "ReportToM",
    "Resign",
    "Timeout",
    "TimeoutPolicies",
    "action_mask",
    "filter_events",
    "legal_actions",
    "parse_action",
    "player_view",
    "researcher_view",
    "spectator_view",
    "viewer_log",
    "visible_to",
]
