"""The game envelope: what a seat (or a spectator) is told about a game besides the engine's view."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from server.game.schemas import PlayerView, SpectatorView, ViewerEvent


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
