"""The server's typed messages: the game envelope, and the catalogue of JSON schemas at ``GET /api/schemas``.

The engine's own models (views, events, actions, queries) live in ``server/game``; this module adds what
only the server knows about a game (its id, hall, status, seats, deadline) and serves everything together.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

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
from server.replay import ReplayStep


class SeatInfo(BaseModel):
    """A seat as everyone may see it (no user ids)."""

    model_config = ConfigDict(extra="forbid")

    seat: Annotated[int, Field(ge=0)]
    accepts: Literal["open", "human", "agent", "bot"] = Field(description="what the seat was created for")
    kind: Literal["human", "agent", "bot"] | None = Field(description="who took it; null while it is free")
    name: str | None = Field(description="the holder's display name or the bot's name")
    bot: str | None = Field(description="the built-in bot playing the seat, if any")
    taken: bool
    online: bool | None = Field(None, description="whether the holder is connected (to this server process)")


class Envelope(BaseModel):
    """What a seat (or a spectator) is told about a game: the ack of join/watch/view/actions and every
    ``update`` push."""

    model_config = ConfigDict(extra="forbid")

    ok: Literal[True] | None = Field(None, description="present in acknowledgements and REST answers")
    game_id: str
    hall: str | None = Field(description="the hall (game mode) the game was created in")
    status: Literal["waiting", "running", "finished", "aborted"]
    seat: Annotated[int, Field(ge=0)] | None = Field(description="your seat, or null for a spectator")
    log_size: Annotated[int, Field(ge=0)] = Field(description="how many events your log holds")
    deadline: float | None = Field(description="unix time at which the current phase times out, or null")
    seats: list[SeatInfo]
    view: PlayerView | SpectatorView | None = Field(description="your view; null before the game starts")
    events: list[ViewerEvent] | None = Field(None, description="events you may see, numbered n in your log")


ENVELOPE = TypeAdapter(Envelope)


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
