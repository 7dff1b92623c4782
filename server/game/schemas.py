"""Typed views and events: the pydantic models of everything the engine shows a player or a spectator.

The engine builds views and events as plain JSON-safe dicts on its hot path; these models are their one
declared schema. Tests validate every view and every event of the golden and random games against them,
the server serves their JSON schemas at ``GET /api/schemas``, and the language tools read their field
descriptions (plain text on purpose: they become tool descriptions).

- :class:`PlayerView`, :class:`SpectatorView`: what :func:`server.game.views.player_view` /
  :func:`~server.game.views.spectator_view` return.
- :data:`EVENT_PAYLOAD_MODELS`: event type -> payload model (one per type of the table in
  :mod:`server.game.events`); :data:`ViewerEvent` is an event as a viewer receives it
  (:func:`server.game.events.viewer_log`, plus the server's ``time``), discriminated by ``type``.
- The strict-mode rendering for OpenAI's strict tools, which refuse free-key objects:
  :func:`strict_args_schema` gives a model's arguments with every free-key dict written as a list of
  pairs (``{"item", "count"}``, ``{"item", "value"}``, ``{"seat", "values"}``, ``{"index", "item"}``),
  every field required (optional ones nullable) and no extra keys; :func:`to_strict` renders an action or
  query so, and :func:`from_strict` parses such arguments back into the same action or query dict.
"""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from craft_rules.crafting import CraftingRuns
from server.game.actions import ACTION_MODELS, PLAYER_ACTION_TYPES
from server.game.events import EVENT_TYPES
from server.game.settings import PHASES, PhaseDeadlines, Scoring, TimeoutPolicies

Seat = Annotated[int, Field(ge=0, description="a seat number, 0-based")]
Turn = Annotated[int, Field(ge=0, description="the turn number, 1-based (0 before the first turn)")]
Count = Annotated[int, Field(ge=0, description="a whole number of units")]
Quantity = Annotated[
    str,
    Field(
        pattern=r"^[0-9]+(/[0-9]+)?$",
        description='an exact non-negative amount as text: a whole number like "2" or a fraction like "3/4"',
    ),
]
ItemName = Annotated[
    str, Field(min_length=1, description="an item id of the game's rule set, e.g. oak_planks")
]
Hand = dict[str, Count]
ExactHand = dict[str, Quantity]
Message = Annotated[str, Field(description="free text written by a player; show it as plain text")]
_TRADE_MESSAGE = "absent for a third party when the game keeps trade messages to their two parties"
EndReason = Literal["target_crafted", "max_turns", "too_few_players"]
DoneReason = Literal["timeout", "resign"]
ViewPhase = Literal["tom_report", "trade_propose", "trade_decide", "trade", "craft", "finished"]
assert set(PHASES) <= set(get_args(ViewPhase)), "a phase of the engine is missing from ViewPhase"
PlayerActionType = Literal["report_tom", "propose", "pass", "decide", "craft", "finish_crafting", "resign"]
assert set(get_args(PlayerActionType)) == set(PLAYER_ACTION_TYPES), "PlayerActionType is out of date"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ItemCount(_Model):
    """An item and a whole number of units: one entry of a bundle in the strict-mode rendering."""

    item: ItemName
    count: Annotated[int, Field(ge=1, description="a positive whole number of units")]


class ItemValue(_Model):
    """An item and its value 0-10 (0 = useless, 10 = critical): one entry of a ToM report."""

    item: ItemName
    value: Annotated[int, Field(ge=0, le=10, description="0 = useless ... 10 = critical")]


class SeatValues(_Model):
    """One opponent's values in a v1/v2 ToM report (strict-mode rendering)."""

    seat: Annotated[str, Field(pattern=r"^[0-9]+$", description="the opponent's seat as text, e.g. '1'")]
    values: list[ItemValue] = Field(description="a value for every item the report covers")


class IndexedChoice(_Model):
    """Which item fills ingredient ``index`` of a recipe (strict-mode rendering of a craft's choices)."""

    index: Annotated[int, Field(ge=0, description="the ingredient's position in the recipe, 0-based")]
    item: ItemName


# =================================================================================== event payloads
class GameStartedPayload(_Model):
    """The deal: every public hand, the number of turns and the first proposer."""

    instance_id: str | None = Field(
        None, description="the task instance (in the researcher's log only: viewers never receive it)"
    )
    ruleset: str = Field(description="the rule set's name")
    players: Annotated[int, Field(ge=2, description="how many seats the game has")]
    hands: list[Hand] = Field(description="per seat, its public hand: item -> count")
    max_turns: Annotated[int, Field(ge=1, description="turns before the game ends without a winner")]
    first_proposer: Seat


class PhaseStartedPayload(_Model):
    """A phase began: who proposes this turn and whose action is awaited."""

    turn: Turn
    phase: Literal["tom_report", "trade_propose", "craft"]
    proposer: Seat
    awaiting: list[Seat] = Field(description="seats whose action the phase awaits")
    items: list[ItemName] | None = Field(
        None, description="tom_report only: the items every report must value (the public hands' items)"
    )


class TomReportedPayload(_Model):
    """A seat's own value report (seen by the reporter only)."""

    turn: Turn
    seat: Seat
    v0: dict[str, int] = Field(description="own need per item, 0-10")
    v1: dict[str, dict[str, int]] | None = Field(
        description="per opponent seat (as text): the estimate of that opponent's v0"
    )
    v2: dict[str, dict[str, int]] | None = Field(
        description="per opponent seat (as text): the estimate of that opponent's estimate of my v0"
    )


class TomSkippedPayload(_Model):
    """A seat gave no report this turn."""

    turn: Turn
    seat: Seat
    reason: DoneReason


class ProposedPayload(_Model):
    """A proposal (seen by its two parties only)."""

    turn: Turn
    proposer: Seat
    to: Seat
    offer: Hand = Field(description="items the proposer gives: item -> count")
    request: Hand = Field(description="items the proposer gets: item -> count")
    message: Message


class DecidedPayload(_Model):
    """The addressee's decision on a proposal (seen by its two parties only)."""

    turn: Turn
    proposer: Seat
    seat: Seat = Field(description="the seat that decided (the addressee)")
    accept: bool
    message: Message
    reason: DoneReason | None = Field(None, description="set when a timeout or a resignation decided")


class TradeExecutedPayload(_Model):
    """An accepted proposal, now public: the items moved between the two hands."""

    turn: Turn
    proposer: Seat
    to: Seat
    offer: Hand = Field(description="items the proposer gave: item -> count")
    request: Hand = Field(description="items the proposer got: item -> count")
    message: Message | None = Field(None, description=_TRADE_MESSAGE)
    reply: Message | None = Field(None, description=_TRADE_MESSAGE)


class TargetsRevealedPayload(_Model):
    """The game is over: every target, the winners and the points the game's scoring rule pays."""

    turn: Turn
    targets: list[Hand] = Field(description="per seat, its target: item -> count")
    winners: list[Seat]
    scores: list[int] = Field(description="per seat, its points")


class ProposalCancelledPayload(_Model):
    """A pending proposal was withdrawn because its proposer left (seen by its two parties only)."""

    turn: Turn
    proposer: Seat
    to: Seat
    reason: Literal["resign"]


class PassedPayload(_Model):
    """The proposer made no proposal this turn (seen by the proposer only)."""

    turn: Turn
    seat: Seat
    reason: DoneReason | None = Field(None, description="set when a timeout or a resignation caused the pass")


class CraftedPayload(_Model):
    """One craft on a private crafting hand (seen by the crafter only)."""

    turn: Turn
    seat: Seat
    recipe: str = Field(description="the recipe id that ran")
    runs: Quantity
    choices: dict[str, ItemName] = Field(description="ingredient index (as text) -> the item that filled it")
    fuel: ItemName | None = Field(description="the fuel burnt, for smelting-like recipes")
    consumed: ExactHand = Field(description="item -> amount used")
    produced: ExactHand = Field(description="item -> amount made")


class CraftFinishedPayload(_Model):
    """A seat is done crafting this phase (public: only *that* it is done)."""

    turn: Turn
    seat: Seat
    reason: DoneReason | None = Field(None, description="set when a timeout or a resignation finished it")


class HandsRevealedPayload(_Model):
    """The end of a craft phase: every hand, floored to whole units, becomes public."""

    turn: Turn
    hands: list[Hand] = Field(description="per seat, its public hand: item -> count")


class PlayerWonPayload(_Model):
    """A seat held its target after this craft phase."""

    turn: Turn
    seat: Seat


class TurnEndedPayload(_Model):
    """A turn ended without ending the game."""

    turn: Turn


class GameEndedPayload(_Model):
    """The game is over."""

    turn: Turn
    winners: list[Seat]
    reason: EndReason


class TimeoutPayload(_Model):
    """A phase's deadline expired; its policy applied to every awaited seat."""

    turn: Turn
    phase: Literal["tom_report", "trade_propose", "trade_decide", "craft"]
    seats: list[Seat] = Field(description="the seats that timed out")
    policy: str = Field(description="what the timeout did: skip, pass, reject, accept or finish")


class ResignedPayload(_Model):
    """A seat left the game."""

    turn: Turn
    seat: Seat


EVENT_PAYLOAD_MODELS: dict[str, type[BaseModel]] = {
    "game_started": GameStartedPayload,
    "phase_started": PhaseStartedPayload,
    "tom_reported": TomReportedPayload,
    "tom_skipped": TomSkippedPayload,
    "proposed": ProposedPayload,
    "decided": DecidedPayload,
    "trade_executed": TradeExecutedPayload,
    "proposal_cancelled": ProposalCancelledPayload,
    "passed": PassedPayload,
    "crafted": CraftedPayload,
    "craft_finished": CraftFinishedPayload,
    "hands_revealed": HandsRevealedPayload,
    "player_won": PlayerWonPayload,
    "turn_ended": TurnEndedPayload,
    "targets_revealed": TargetsRevealedPayload,
    "game_ended": GameEndedPayload,
    "timeout": TimeoutPayload,
    "resigned": ResignedPayload,
}
"""Event type -> the model of its payload; one entry per type of the engine's event table."""


def _viewer_event_model(event_type: str, payload: type[BaseModel]) -> type[BaseModel]:
    return create_model(  # type: ignore[call-overload, no-any-return]
        "".join(part.title() for part in event_type.split("_")) + "Event",
        __base__=_Model,
        __doc__=f"A {event_type} event as a viewer receives it. {payload.__doc__}",
        n=(
            Annotated[int, Field(ge=0, description="the event's position in the viewer's own log, 0-based")],
            ...,
        ),
        type=(Literal[event_type], ...),  # type: ignore[valid-type]
        actor=(
            Seat | None,
            Field(description="the seat whose own action caused the event; null for the system"),
        ),
        payload=(payload, ...),
        visibility=(
            Literal["public"] | list[Seat],
            Field(description='"public", or the seats that may see the event'),
        ),
        time=(float | None, Field(None, description="the server's unix time when it stored the event")),
    )


VIEWER_EVENT_MODELS: dict[str, type[BaseModel]] = {
    t: _viewer_event_model(t, model) for t, model in EVENT_PAYLOAD_MODELS.items()
}
"""Event type -> the model of that event as a viewer receives it."""

ViewerEvent = Annotated[
    Union[tuple(VIEWER_EVENT_MODELS.values())],  # type: ignore[valid-type]  # noqa: UP007
    Field(discriminator="type"),
]
"""Any event of a viewer's log, discriminated by ``type``."""

assert set(EVENT_PAYLOAD_MODELS) == EVENT_TYPES, "every event type needs a payload model"


# ========================================================================================== views
class Proposal(_Model):
    """A proposal the viewer was party to, with its status."""

    turn: Turn
    proposer: Seat
    to: Seat
    offer: Hand = Field(description="items the proposer gives: item -> count")
    request: Hand = Field(description="items the proposer gets: item -> count")
    message: Message
    status: Literal["pending", "accepted", "rejected", "cancelled"]
    reply: Message | None = Field(description="the addressee's reply, once decided")
    reason: DoneReason | None = Field(None, description="set when a timeout or a resignation decided it")


class Trade(_Model):
    """An accepted trade as everyone saw it."""

    proposer: Seat
    to: Seat
    offer: Hand = Field(description="items the proposer gave: item -> count")
    request: Hand = Field(description="items the proposer got: item -> count")
    message: Message | None = Field(None, description=_TRADE_MESSAGE)
    reply: Message | None = Field(None, description=_TRADE_MESSAGE)


class TradeHistoryEntry(_Model):
    """One turn's trade outcome as the viewer may know it."""

    turn: Turn
    proposer: Seat
    outcome: Literal[
        "passed", "no_trade", "traded", "in_progress", "proposed", "accepted", "rejected", "cancelled"
    ] = Field(
        description=(
            "passed (the viewer passed), no_trade (no trade happened; a third party cannot tell a pass "
            "from a rejection), traded, in_progress (the current turn), or for the two parties of a "
            "proposal: proposed (pending), rejected, cancelled"
        )
    )
    trade: Trade | None = Field(None, description="the trade, when one was made")
    to: Seat | None = Field(None, description="the addressee, for the parties of an untraded proposal")


class TomDuty(_Model):
    """The viewer's theory-of-mind reporting duty."""

    orders: list[Literal[0, 1, 2]] = Field(description="the orders this seat reports each turn (0 = v0, ...)")
    due: bool = Field(description="whether a report is awaited from this seat now")
    items: list[ItemName] = Field(description="the items to value, while a report is due")
    opponents: list[Seat] = Field(description="the seats that key v1 and v2")


class PublicRules(_Model):
    """The game's settings every participant may know."""

    allow_pass: bool = Field(description="whether a proposer may skip proposing")
    message_max_chars: Annotated[int, Field(ge=0, description="longest proposal or reply message")]
    end_condition: Literal["first_win", "all_win"]
    deadlines: PhaseDeadlines
    timeout_policies: TimeoutPolicies
    crafting_runs: CraftingRuns = Field(
        description="rational: any positive rational run amount; whole: whole runs only"
    )
    scoring: Scoring = Field(description="the points paid when the game ends")
    trade_messages: Literal["parties", "public"] = Field(
        description="who reads the messages of an accepted trade: its two parties only, or everyone"
    )


class PlayerView(_Model):
    """What one seat may see now: its own target and private crafting, every public hand, the phase."""

    seat: Seat = Field(description="the viewer's seat")
    players: Annotated[int, Field(ge=2, description="how many seats the game has")]
    instance_id: str | None = Field(
        description="null while the game runs (the id names a public task file holding every target); "
        "the task instance once the game is over"
    )
    ruleset: str = Field(description="the rule set's name")
    turn: Turn
    max_turns: Annotated[int, Field(ge=1, description="turns before the game ends without a winner")]
    phase: ViewPhase = Field(
        description=(
            "the current phase; 'trade' for a seat outside a trade, which may not know whether a "
            "proposal is pending"
        )
    )
    proposer: Seat = Field(description="the seat that proposes this turn")
    move_key: str = Field(
        description="names the viewer's current move: turn, phase as the viewer sees it, and its crafts so "
        "far this phase (seeds per-move randomness; the same across restarts)"
    )
    finished: bool
    winners: list[Seat]
    end_reason: EndReason | None
    log_size: Annotated[int, Field(ge=0, description="how many events the viewer's own log holds")]
    awaiting: list[Seat] = Field(description="seats whose action is awaited that this viewer may know of")
    your_turn: bool = Field(description="whether the viewer's own action is awaited")
    legal_actions: list[PlayerActionType] = Field(description="the action types the viewer may send now")
    target: Hand | None = Field(description="the viewer's own secret target: item -> count")
    hands: list[Hand] = Field(
        description="per seat, its public hand (during crafting: as at the phase's start)"
    )
    active: list[bool] = Field(description="per seat, whether it is still in the game")
    crafting_hand: ExactHand | None = Field(
        description="the viewer's private crafting hand during the craft phase, else null"
    )
    crafts_this_phase: list[CraftedPayload] = Field(description="the viewer's own crafts this craft phase")
    crafting_finished: list[Seat] = Field(description="seats done crafting this phase")
    pending_proposal: Proposal | None = Field(
        description="the proposal awaiting a decision, if the viewer is party"
    )
    proposals: list[Proposal] = Field(
        description="the latest proposals the viewer was party to (a bounded window; the events hold all)"
    )
    trade_history: list[TradeHistoryEntry] = Field(
        description="the most recent turns' trade outcomes (a bounded window; the events hold all)"
    )
    tom: TomDuty | None = Field(
        description="the viewer's ToM reporting duty, if the game asks it for reports"
    )
    target_reachable: bool | None = Field(
        default=None,
        description="whether any combination of all active seats' hands can still make the viewer's own "
        "target (false: it cannot win any more); null when unknown, before the start or after the end",
    )
    rules: PublicRules

    @model_validator(mode="after")
    def _no_instance_while_running(self) -> PlayerView:
        if self.instance_id is not None and not self.finished:
            raise ValueError("instance_id must be null while the game runs: it gives the targets away")
        return self


class SpectatorView(PlayerView):
    """What an onlooker sees: the public state only; the private keys are empty."""

    seat: None = Field(description="always null: a spectator holds no seat")  # type: ignore[assignment]
    your_turn: Literal[False]  # type: ignore[assignment]
    legal_actions: list[PlayerActionType] = Field(max_length=0, description="always empty")
    target: None = Field(description="always null: targets are private")  # type: ignore[assignment]
    crafting_hand: None = Field(description="always null: crafting is private")  # type: ignore[assignment]
    crafts_this_phase: list[CraftedPayload] = Field(max_length=0, description="always empty")
    pending_proposal: None = Field(description="always null: proposals are private")  # type: ignore[assignment]
    proposals: list[Proposal] = Field(max_length=0, description="always empty")
    tom: None = Field(description="always null")  # type: ignore[assignment]
    target_reachable: None = Field(default=None, description="always null: targets are private")  # type: ignore[assignment]


# ====================================================================== strict-mode rendering
# A free-key dict field is rendered as a list of pairs; each kind knows both directions.
_STRICT_PAIR_MODELS: dict[str, type[BaseModel]] = {
    "counts": ItemCount,
    "values": ItemValue,
    "seat_values": SeatValues,
    "choices": IndexedChoice,
}


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without Annotated/Optional, whether None is allowed)."""
    nullable = False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            nullable = nullable or len(args) < len(get_args(annotation))
            if len(args) != 1:
                return annotation, nullable
            annotation = args[0]
        else:
            return annotation, nullable


def _dict_kind(annotation: Any) -> str | None:
    """Which pair rendering a free-key dict annotation takes (None: not a free-key dict)."""
    if get_origin(annotation) is not dict:
        return None
    key, value = get_args(annotation)
    if _unwrap(key)[0] is int:  # ingredient indexes (an Annotated int)
        return "choices"
    inner, _ = _unwrap(value)
    if get_origin(inner) is dict:
        return "seat_values"
    metadata = [m for m in getattr(value, "__metadata__", ()) if getattr(m, "metadata", None)]
    bounded = any(getattr(c, "le", None) == 10 for m in metadata for c in m.metadata)
    return "values" if bounded else "counts"


def _strict_fields(model: type[BaseModel]) -> dict[str, tuple[str | None, bool]]:
    """Per field of ``model``: (its pair kind or None, whether it was optional)."""
    out = {}
    for name, info in model.model_fields.items():
        bare, nullable = _unwrap(info.annotation)
        out[name] = (_dict_kind(bare), nullable or not info.is_required())
    return out


@cache
def strict_model(model: type[BaseModel]) -> type[BaseModel]:
    """The strict-mode twin of an action or query model: pairs instead of free-key dicts, every field
    required (an optional one nullable: null means "use the default")."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        kind, optional = _strict_fields(model)[name]
        annotation: Any = info.annotation
        if kind is not None:
            annotation = list[_STRICT_PAIR_MODELS[kind]]  # type: ignore[valid-type]
        elif name == "type":
            annotation = info.annotation
        if optional and name != "type":
            annotation = annotation | None
        description = info.description
        if kind is not None:
            description = (
                description + "; " if description else ""
            ) + f"a list of {kind.replace('_', ' ')} pairs"
        fields[name] = (annotation, Field(..., description=description))
    return create_model(  # type: ignore[call-overload, no-any-return]
        f"Strict{model.__name__}", __base__=_Model, __doc__=model.__doc__, **fields
    )


def _close(schema: Any) -> Any:
    """Strict JSON schema rules: every object lists all its properties as required, allows no others,
    and carries no defaults."""
    if isinstance(schema, dict):
        schema = {k: _close(v) for k, v in schema.items() if k != "default"}
        if schema.get("type") == "object" and "properties" in schema:
            schema["required"] = list(schema["properties"])
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_close(v) for v in schema]
    return schema


def strict_args_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of ``model``'s arguments in the strict-mode rendering (OpenAI strict tools)."""
    return typing.cast(dict[str, Any], _close(strict_model(model).model_json_schema()))


def _model_of(data: dict[str, Any]) -> type[BaseModel] | None:
    from server.game.queries import QUERY_MODELS  # the queries import this module

    kind = data.get("type")
    return ACTION_MODELS.get(kind) or QUERY_MODELS.get(kind)  # type: ignore[arg-type]


def to_strict(obj: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """An action or query (a model, or its dict) in the strict-mode rendering."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else dict(obj)
    model = type(obj) if isinstance(obj, BaseModel) else _model_of(data)
    if model is None:
        return data
    out: dict[str, Any] = {}
    for name, (kind, _optional) in _strict_fields(model).items():
        value = data.get(name)
        if kind is None or value is None:
            out[name] = value
        elif kind == "counts":
            out[name] = [{"item": k, "count": v} for k, v in value.items()]
        elif kind == "values":
            out[name] = [{"item": k, "value": v} for k, v in value.items()]
        elif kind == "seat_values":
            out[name] = [
                {"seat": str(seat), "values": [{"item": k, "value": v} for k, v in values.items()]}
                for seat, values in value.items()
            ]
        else:
            out[name] = [{"index": int(k), "item": v} for k, v in value.items()]
    return out


def from_strict(data: dict[str, Any]) -> dict[str, Any]:
    """Parse strict-mode arguments back into the action or query dict they render.

    Lists of pairs become the free-key dicts again (a repeated key adds up counts and keeps the last
    value, like the engine reading a JSON object would keep one); a null optional field is dropped so
    its default applies. Anything else passes through unchanged for the action/query parser to judge.
    """
    model = _model_of(data) if isinstance(data, dict) else None
    if model is None:
        return data
    out: dict[str, Any] = {}
    fields = _strict_fields(model)
    for name, value in data.items():
        kind, optional = fields.get(name, (None, False))
        if value is None and optional:
            continue
        if kind is None or not isinstance(value, list):
            out[name] = value
            continue
        out[name] = _pairs_to_dict(kind, value)
    return out


def _pairs_to_dict(kind: str, pairs: list[Any]) -> Any:
    out: dict[Any, Any] = {}
    for pair in pairs:
        if not isinstance(pair, dict):
            return pairs  # not pairs at all: let the parser name the field
        if kind in ("counts", "values") and not isinstance(pair.get("item"), str):
            return pairs  # an item that is no name (a list, an object) keys no dict: the parser says so
        if kind == "counts":
            item, count = pair.get("item"), pair.get("count")
            before = out.get(item)
            both_whole = isinstance(before, int) and isinstance(count, int)
            out[item] = before + count if both_whole else count  # type: ignore[operator]
        elif kind == "values":
            out[pair.get("item")] = pair.get("value")
        elif kind == "seat_values":
            values = pair.get("values")
            out[str(pair.get("seat"))] = (
                _pairs_to_dict("values", values) if isinstance(values, list) else values
            )
        else:
            out[pair.get("index")] = pair.get("item")
    return out
