"""Every action a player (or the system) can take, declared once as a pydantic model.

The models are the single schema per action: the server derives its Socket.IO handlers, REST routes
and JSON schemas from :data:`ACTION_MODELS`, and the language tools derive their argument schemas from
them too. :func:`parse_action` turns JSON (a dict or a string) into a model or raises
``GameError("invalid_action")`` naming the bad field.

Schema checks (types, value ranges, unknown fields) live here; checks that need the game (phase,
turn, hands, rule set, settings) live in :mod:`server.game.state`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from craft_rules.number_text import whole_number
from server.game.errors import GameError


def _ingredient_index(value: Any) -> Any:
    """An ingredient index from a JSON object key, read by the one number grammar (ASCII digits, bounded):
    pydantic's lax int reading would take " 2", "+3" and "1_0"."""
    if isinstance(value, str):
        index = whole_number(value)
        if index is None:
            raise ValueError('an ingredient index is written in ASCII digits, such as "0" or "2"')
        return index
    return value


IngredientIndex = Annotated[
    int, BeforeValidator(_ingredient_index), Field(strict=True, ge=0, description="an ingredient's index")
]
ItemCount = Annotated[int, Field(strict=True, ge=1, description="a positive whole number of units")]
ToMValue = Annotated[int, Field(strict=True, ge=0, le=10, description="0 = useless ... 10 = critical")]
ValueDict = dict[str, ToMValue]
PerOpponentValues = dict[str, ValueDict]


class _ActionModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReportToM(_ActionModel):
    """Report item values (0-10) over every item in the public hands, for the orders the game asks.

    ``v0``: own need. ``v1``: per opponent seat (key = the seat as a string, e.g. ``"1"``), your
    estimate of that opponent's v0. ``v2``: per opponent seat, your estimate of that opponent's
    estimate of your v0. Send only the orders the game requests of you (the view lists them).
    """

    type: Literal["report_tom"] = "report_tom"
    v0: ValueDict
    v1: PerOpponentValues | None = None
    v2: PerOpponentValues | None = None


class Propose(_ActionModel):
    """The proposer offers items from its hand to seat ``to`` and requests items from that seat's hand."""

    type: Literal["propose"] = "propose"
    to: Annotated[int, Field(strict=True, ge=0, description="the seat of the player you propose to")]
    offer: dict[str, ItemCount] = Field(default_factory=dict, description="items you give: item -> count")
    request: dict[str, ItemCount] = Field(default_factory=dict, description="items you get: item -> count")
    message: str = Field("", description="an optional message to the other player")


class Pass(_ActionModel):
    """The proposer makes no proposal this turn (only when the game allows passing)."""

    type: Literal["pass"] = "pass"


class Decide(_ActionModel):
    """The addressee of the pending proposal accepts or rejects it, with an optional reply."""

    type: Literal["decide"] = "decide"
    accept: Annotated[bool, Field(strict=True)]
    message: str = Field("", description="an optional reply to the proposer")


class Craft(_ActionModel):
    """Run ``recipe`` ``runs`` times on your private crafting hand.

    ``runs`` is an exact rational: ``2``, ``"1/4"``, ``"0.25"`` (a JSON number like 0.25 is read as
    the decimal it spells). ``choices`` maps an ingredient index to the item that fills it when the
    ingredient allows several (a tag); ``fuel`` picks the fuel of a smelting/blasting/smoking recipe.
    Without them the documented default rules of :mod:`craft_rules.crafting` apply.
    """

    type: Literal["craft"] = "craft"
    recipe: str = Field(min_length=1)
    runs: str | int = "1"
    choices: dict[IngredientIndex, str] = Field(default_factory=dict)
    fuel: str | None = None

    @field_validator("runs", mode="before")
    @classmethod
    def _runs_as_exact_text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("runs must be a number like 1, 0.25 or 1/4, not true/false")
        if isinstance(value, float):
            # repr gives the shortest decimal that round-trips: 0.1 -> "0.1" -> Fraction(1, 10)
            return repr(value)
        return value

    @field_validator("choices", mode="before")
    @classmethod
    def _choice_indexes_once(cls, value: Any) -> Any:
        # "1" and "01" name one ingredient: refused rather than one silently dropped (a key that is no
        # index is IngredientIndex's to refuse, naming the key in the error's field path)
        if isinstance(value, Mapping):
            seen: set[int] = set()
            for key in value:
                index = whole_number(key) if isinstance(key, str) else key  # a bad key: see below
                if isinstance(index, int) and not isinstance(index, bool):
                    if index in seen:
                        raise ValueError(f"choices name ingredient {index} twice")
                    seen.add(index)
        return value


class FinishCrafting(_ActionModel):
    """Declare that you are done crafting for this craft phase."""

    type: Literal["finish_crafting"] = "finish_crafting"


class Timeout(_ActionModel):
    """System only (actor None): the phase's deadline expired; apply its policy to every awaited seat.

    ``phase`` / ``turn``, when given, must match the game's current ones, so a stale timer that fires
    after the phase moved on is refused (``wrong_phase``) instead of hitting the next phase.
    """

    type: Literal["timeout"] = "timeout"
    phase: str | None = None
    turn: int | None = None


class Resign(_ActionModel):
    """Leave the game. Pending duties of the seat resolve by the timeout policies."""

    type: Literal["resign"] = "resign"


Action = Annotated[
    ReportToM | Propose | Pass | Decide | Craft | FinishCrafting | Timeout | Resign,
    Field(discriminator="type"),
]

ACTION_MODELS: dict[str, type[BaseModel]] = {
    "report_tom": ReportToM,
    "propose": Propose,
    "pass": Pass,
    "decide": Decide,
    "craft": Craft,
    "finish_crafting": FinishCrafting,
    "timeout": Timeout,
    "resign": Resign,
}
"""Action type -> model, in a stable order (the order of the action mask)."""

PLAYER_ACTION_TYPES: tuple[str, ...] = tuple(t for t in ACTION_MODELS if t != "timeout")
"""Action types a seat may send (``timeout`` is reserved for the system)."""

_ACTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(Action)


def action_json_schema() -> dict[str, Any]:
    """JSON schema of the action union (a ``oneOf`` discriminated by ``type``)."""
    return _ACTION_ADAPTER.json_schema()


def _describe(err: ValidationError, tags: Mapping[str, Any], noun: str) -> tuple[str, list[dict[str, Any]]]:
    problems = []
    for item in err.errors(include_url=False, include_context=False):
        loc = [str(p) for p in item["loc"]]
        # the union tag ("propose", ...) is noise in a field path
        if loc and loc[0] in tags:
            loc = loc[1:]
        problems.append({"field": ".".join(loc), "problem": item["msg"], "kind": item["type"]})
    first = problems[0]
    where = f"field '{first['field']}'" if first["field"] else f"the {noun}"
    return f"Invalid {noun}: {where}: {first['problem']}.", problems


def parse_tagged(
    obj: dict[str, Any] | str | bytes | BaseModel,
    models: Mapping[str, type[BaseModel]],
    code: str,
    noun: str,
) -> BaseModel:
    """Validate JSON (a dict, or a JSON string) into the model its ``type`` field names.

    The one parser of every ``type``-tagged request (actions, queries). Raises ``GameError(code)``
    whose message names the first bad field and whose details list every problem as
    ``{"field", "problem", "kind"}``.
    """
    if isinstance(obj, BaseModel):
        if type(obj) not in models.values():
            raise GameError(code, f"Invalid {noun}: {type(obj).__name__} is not an {noun}.")
        return obj
    if isinstance(obj, str | bytes):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as exc:
            raise GameError(
                code,
                f"Invalid {noun}: not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object.",
                {"problems": [{"field": "", "problem": exc.msg, "kind": "json_invalid"}]},
            ) from None
        except (ValueError, RecursionError) as exc:  # undecodable bytes, absurd nesting
            raise GameError(
                code,
                f"Invalid {noun}: not readable JSON text; send a UTF-8 JSON object.",
                {"problems": [{"field": "", "problem": type(exc).__name__, "kind": "json_invalid"}]},
            ) from None
    if not isinstance(obj, dict):
        raise GameError(
            code,
            f"Invalid {noun}: send a JSON object with a 'type' field.",
            {"problems": [{"field": "", "problem": "not an object", "kind": "model_type"}]},
        )
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in models:
        known = ", ".join(models)
        raise GameError(
            code,
            f"Invalid {noun}: field 'type' must be one of {known}, got {kind!r}.",
            {"problems": [{"field": "type", "problem": f"unknown {noun} type {kind!r}", "kind": "tag"}]},
        )
    try:
        return models[kind].model_validate(obj)
    except ValidationError as err:
        message, problems = _describe(err, models, noun)
        raise GameError(code, message, {noun: kind, "problems": problems}) from None


def parse_action(obj: dict[str, Any] | str | bytes | BaseModel) -> Action:
    """Validate JSON (a dict, or a JSON string) into one of the action models.

    Raises ``GameError("invalid_action")`` whose message names the first bad field and whose
    details list every problem as ``{"field", "problem", "kind"}``.
    """
    return parse_tagged(obj, ACTION_MODELS, "invalid_action", "action")  # type: ignore[return-value]
