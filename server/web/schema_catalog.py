"""The catalogue of JSON schemas at ``GET /api/schemas``: every typed message of the protocol, together.

The engine's own models (views, events, actions, queries) live in ``server/game``; the game envelope (what
only the server knows about a game: its id, hall, status, seats, deadline) in ``server/table/envelope.py``.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from craft_rules.catalog import ItemCatalogue
from server.game.actions import ACTION_MODELS, PLAYER_ACTION_TYPES, action_json_schema
from server.game.queries import QUERY_MODELS
from server.game.schemas import (
    EVENT_PAYLOAD_MODELS,
    PlayerView,
    SpectatorView,
    ViewerEvent,
    strict_args_schema,
)
from server.game.views import VIEW_HISTORY_TURNS
from server.table.envelope import Envelope
from server.table.replay import ReplayStep


def schema_catalogue() -> dict[str, Any]:
    """Every JSON schema a client may want, in one answer (``GET /api/schemas``)."""
    return {
        "envelope": Envelope.model_json_schema(),
        "views": {"player": PlayerView.model_json_schema(), "spectator": SpectatorView.model_json_schema()},
        "view_history_turns": VIEW_HISTORY_TURNS,
        "events": {t: model.model_json_schema() for t, model in EVENT_PAYLOAD_MODELS.items()},
        "event": TypeAdapter(ViewerEvent).json_schema(),
        "actions": {t: ACTION_MODELS[t].model_json_schema() for t in PLAYER_ACTION_TYPES},
        "action": action_json_schema(),
        "queries": {t: model.model_json_schema() for t, model in QUERY_MODELS.items()},
        "replay_step": ReplayStep.model_json_schema(),
        "item_catalogue": ItemCatalogue.model_json_schema(),
        "strict": {
            "actions": {t: strict_args_schema(ACTION_MODELS[t]) for t in PLAYER_ACTION_TYPES},
            "queries": {t: strict_args_schema(model) for t, model in QUERY_MODELS.items()},
        },
    }
