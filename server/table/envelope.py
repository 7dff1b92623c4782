"""The game envelope: what a seat (or a spectator) is told about a game besides the engine's view; and the
one numbering of the events a viewer sees, shared by acks, pushes, logs and replays.

:class:`Envelope` is the one declaration: the table builds every envelope it sends with :func:`envelope`
(``model_construct``: the engine has typed every part already, so nothing is validated twice), the schema
endpoint serves its JSON schema, and tests validate what clients receive against it.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from server.game.events import record_for_viewer
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


ENVELOPE_FIELDS = tuple(Envelope.model_fields)


def envelope(
    *,
    game_id: str,
    hall: str | None,
    status: str,
    seat: int | None,
    log_size: int,
    deadline: float | None,
    seats: list[dict[str, Any]],
    view: dict[str, Any] | None,
    events: list[dict[str, Any]] | None = None,
    ok: bool | None = None,
) -> dict[str, Any]:
    """An :class:`Envelope` as the wire dict (``ok`` and ``events`` only when given). ``log_size`` counts the
    events the viewer may see, not the game's: gaps in the global numbering would count other seats' private
    events."""
    model = Envelope.model_construct(
        ok=ok,
        game_id=game_id,
        hall=hall,
        status=status,
        seat=seat,
        log_size=log_size,
        deadline=deadline,
        seats=seats,
        view=view,
        events=events,
    )
    wire = {name: getattr(model, name) for name in ENVELOPE_FIELDS}  # shallow: the view is shared, not copied
    if ok is None:
        del wire["ok"]
    if events is None:
        del wire["events"]
    return wire


def number_events(visible: list[dict[str, Any]], log_size: int) -> list[dict[str, Any]]:
    """The newest ``visible`` stored records of a viewer's log as that viewer receives them: numbered ``n``
    in its own log (which holds ``log_size`` events), without the global ``seq`` or what it may not see (nor a
    ``time`` an untimed game does not know)."""
    start = log_size - len(visible)
    return [
        {
            "n": start + i,
            **{
                k: v
                for k, v in record_for_viewer(record).items()
                if k != "seq" and (k != "time" or v is not None)
            },
        }
        for i, record in enumerate(visible)
    ]


def json_copy(value: Any) -> Any:
    """A deep copy that is also exactly what a JSON round trip (a store, a socket) gives back."""
    return json.loads(json.dumps(value))
