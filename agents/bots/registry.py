"""The policy registry: policies are plug-ins, found by name through Python entry points.

A package offers a policy by naming a factory in its ``pyproject.toml``::

    [project.entry-points."tradecraft.policies"]
    random = "agents.bots.random_bot:RandomBot"

A factory declares its options once, as a :class:`PolicyOptions` model (pydantic: typed, bounded, no
unknown keys) annotated on its second parameter, and is called ``factory(seed, options)``::

    class RandomOptions(PolicyOptions):
        accept_probability: float = Field(0.5, ge=0, le=1, description="chance it accepts a proposal")

    def random_policy(seed: int, options: RandomOptions) -> RandomBot: ...

:func:`parse_options` is the one step that turns a spec's option strings into that model, with a
:class:`PolicySpecError` naming the option, what is wrong and what is allowed; :func:`describe_options`
lists a model's options (names, types, bounds, defaults) for ``tradecraft bots``. A plug-in factory without
a model, ``factory(seed, **options)``, gets each of its keyword parameters as a text option. Nothing here
imports a policy's module until that policy is made or described, so listing the names stays cheap and a
broken plug-in breaks only itself.

**Policy specs** (what ``tradecraft play --players``, seat settings and the lobby name)::

    spec   := name [":" model] ["?" key "=" value ("&" key "=" value)*]
    random                          the random bot with its defaults
    random?accept_probability=0.9   ... with one option
    llm:openai:gpt-4o?tom=0,1       the ``llm`` factory, model_spec="openai:gpt-4o", tom="0,1"

``name`` (lowercase letters, digits, ``_`` and ``-``) picks the entry point. Everything between the first
``:`` and the ``?`` is handed to the factory as the option ``model_spec`` (it may itself contain ``:``).
Option values may hold any characters but ``&``, ``?`` and white space; commas are fine.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, ValidationError, create_model

from craft_rules.errors import TradeCraftError
from server.game.policy import Policy, PolicyFactory

ENTRY_POINT_GROUP = "tradecraft.policies"
MAX_SPEC_LENGTH = 300
MODEL_SPEC_OPTION = "model_spec"

_NAME = r"[a-z][a-z0-9_-]{0,39}"
_SPEC = re.compile(rf"(?P<name>{_NAME})(?::(?P<model>[A-Za-z0-9._:/@+-]{{1,160}}))?(?:\?(?P<query>.*))?")
_OPTION = re.compile(r"(?P<key>[a-z][a-z0-9_]{0,39})=(?P<value>[^&?\s]{1,200})")


class PolicySpecError(TradeCraftError, ValueError):
    """A policy spec that names no installed policy or that the policy refuses.

    ``code`` is machine-readable: ``unknown_bot`` (no such policy) or ``invalid_bot_spec`` (bad grammar
    or options); ``option`` names the option at fault, if one is; the message says what to do. ``spec`` is
    kept out of ``details``: it may hold a credential.
    """

    def __init__(self, code: str, message: str, spec: str, option: str | None = None):
        super().__init__(code, message)
        self.spec = spec
        self.option = option  # the option refused, when one is


@dataclass(frozen=True)
class PolicySpec:
    """A parsed spec: the entry point's ``name`` and the keyword options for its factory."""

    name: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The canonical spec text (options in the order given)."""
        options = dict(self.options)
        model = options.pop(MODEL_SPEC_OPTION, None)
        head = f"{self.name}:{model}" if model else self.name
        return head + ("?" + "&".join(f"{k}={v}" for k, v in options.items()) if options else "")


def parse_policy_spec(spec: str) -> PolicySpec:
    """``"name:model?key=value&..."`` -> :class:`PolicySpec`; :class:`PolicySpecError` when malformed."""
    if not isinstance(spec, str) or not spec or len(spec) > MAX_SPEC_LENGTH:
        raise PolicySpecError(
            "invalid_bot_spec",
            f"A policy spec is a name such as 'random', optionally with options ('random?key=value'), "
            f"at most {MAX_SPEC_LENGTH} characters.",
            str(spec)[:MAX_SPEC_LENGTH],
        )
    match = _SPEC.fullmatch(spec)
    if match is None:
        raise PolicySpecError(
            "invalid_bot_spec",
            f"{spec!r} is not a policy spec: write name[:model][?key=value&key=value] with a lowercase "
            "name, e.g. 'random' or 'random?accept_probability=0.9'.",
            spec,
        )
    options: dict[str, str] = {}
    if match["model"]:
        options[MODEL_SPEC_OPTION] = match["model"]
    query = match["query"]
    if query is not None:
        for part in query.split("&"):
            option = _OPTION.fullmatch(part)
            if option is None:
                raise PolicySpecError(
                    "invalid_bot_spec",
                    f"Option {part!r} of policy spec {spec!r} is not key=value (a lowercase key; a value "
                    "without '&', '?' or spaces).",
                    spec,
                )
            if option["key"] in options:
                raise PolicySpecError(
                    "invalid_bot_spec", f"Option {option['key']!r} appears twice in {spec!r}.", spec
                )
            options[option["key"]] = option["value"]
    return PolicySpec(match["name"], options)


# ---------------------------------------------------------------------------------------------- cards
Strength = Literal["easy", "medium", "hard", "scripted", "varies"]
"""How hard a policy is to beat, for players choosing an opponent: ``scripted`` partners follow one fixed
rule (for studies); ``varies``: it depends on the model or the options."""

_Factory = TypeVar("_Factory", bound=Callable[..., Any])


@dataclass(frozen=True)
class PolicyCard:
    """What a player is told about a policy before seating it: a plain name, one line on what it does
    and how strong it is. Declared once, on the factory (:func:`card`); read by :func:`describe_policies`."""

    display_name: str
    description: str
    strength: Strength
    in_lobby: bool = True  # False: a test or benchmark stand-in, seatable by name but not offered to players


def card(
    display_name: str, description: str, strength: Strength, *, in_lobby: bool = True
) -> Callable[[_Factory], _Factory]:
    """Declare a factory's :class:`PolicyCard`: ``@card("Random bot", "Plays random moves.", "easy")``."""

    def declare(factory: _Factory) -> _Factory:
        factory.card = PolicyCard(display_name, description, strength, in_lobby)  # type: ignore[attr-defined]
        return factory

    return declare


# ---------------------------------------------------------------------------------------------- options
class PolicyOptions(BaseModel):
    """The options a policy factory declares: subclass it, one field per option, with its type, bounds
    (``Field(ge=, le=, max_length=)``, ``Literal`` choices), default and a ``description``.

    Values arrive as the spec's text and are converted by pydantic (``"0.9"`` -> 0.9); unknown options,
    non-finite numbers and values out of bounds are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def chat_model(self) -> str | None:
        """``<provider>:<model>`` of the chat model a policy with these options plays through, or None for
        a policy that calls no model. An LLM policy's options say so here (experiments then treat its
        seats as LLM seats: played in threads, held to the run's per-provider limits)."""
        return None


class NoOptions(PolicyOptions):
    """The options of a policy that takes none."""


def _digits_only(value: object) -> object:
    if isinstance(value, str) and not (value.isascii() and value.isdigit()):
        raise ValueError("a whole number is written with the digits 0-9 only")
    return value


def _flag(value: object) -> object:
    if isinstance(value, str):
        if value not in ("0", "1", "false", "true"):
            raise ValueError("a flag is 0 or 1 (or false / true)")
        return value in ("1", "true")
    return value


WholeNumber = Annotated[int, BeforeValidator(_digits_only)]
"""An integer option written with digits only (``"3"``; not ``"3.0"``, ``"+3"`` or ``"1e3"``)."""
Flag = Annotated[bool, BeforeValidator(_flag)]
"""An on/off option: ``0`` or ``1`` (``false`` / ``true`` too)."""


@dataclass(frozen=True)
class OptionInfo:
    """One option as ``tradecraft bots`` shows it, generated from its model's field."""

    names: tuple[str, ...]  # the spec key, then any other name it goes by
    allowed: str  # what values it takes, e.g. "a number from 0 to 1"
    default: Any  # None when it has none
    required: bool
    description: str
    schema: dict[str, Any]  # its JSON schema

    def summary(self) -> str:
        """``a number from 0 to 1: chance it accepts a proposal; default 0.5``."""
        text = self.allowed + (f": {self.description}" if self.description else "")
        if self.required:
            return text + "; required"
        if isinstance(self.default, bool):
            return text + f"; default {int(self.default)}"
        return text + (f"; default {self.default}" if self.default is not None else "; default unset")


class _TextOptions(PolicyOptions):
    """A plug-in factory's ``**options``: any further keys, as text."""

    model_config = ConfigDict(extra="allow")


@lru_cache(maxsize=64)
def options_model(factory: PolicyFactory) -> tuple[type[PolicyOptions], bool]:
    """The options model ``factory`` declares (on its second parameter) and True; for a factory without
    one, a model of its keyword parameters as text options and False."""
    try:
        signature = inspect.signature(factory, eval_str=True)
    except (TypeError, ValueError, NameError):  # no signature, or annotations that do not resolve
        return NoOptions, False
    parameters = list(signature.parameters.values())[1:]  # the first one is the seed
    if len(parameters) == 1 and isinstance(parameters[0].annotation, type):
        declared = parameters[0].annotation
        if issubclass(declared, PolicyOptions):
            return declared, True
    fields: dict[str, Any] = {
        p.name: (str, ... if p.default is p.empty else p.default)
        for p in parameters
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }
    free = any(p.kind is p.VAR_KEYWORD for p in parameters)
    base = _TextOptions if free else PolicyOptions
    return create_model(f"{getattr(factory, '__name__', 'policy')}_options", __base__=base, **fields), False


def option_names(model: type[PolicyOptions]) -> dict[str, str]:
    """Every spec key ``model`` accepts -> the field it sets (a field may go by several names)."""
    names: dict[str, str] = {}
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        keys = alias.choices if isinstance(alias, AliasChoices) else [alias or info.alias or name]
        names.update({str(key): name for key in keys})
    return names


def describe_options(model: type[PolicyOptions]) -> list[OptionInfo]:
    """Each option of ``model``, in declaration order, from its JSON schema (so help cannot drift)."""
    schema = model.model_json_schema()
    properties, required = schema.get("properties", {}), set(schema.get("required", []))
    by_field: dict[str, list[str]] = {}
    for key, name in option_names(model).items():
        by_field.setdefault(name, []).append(key)
    out = []
    for name, keys in by_field.items():
        prop = properties.get(keys[0], {})
        out.append(
            OptionInfo(
                names=tuple(keys),
                allowed=_allowed(prop),
                default=prop.get("default"),
                required=keys[0] in required,
                description=model.model_fields[name].description or "",
                schema=prop,
            )
        )
    return out


def _allowed(prop: dict[str, Any]) -> str:
    """What values a JSON-schema property takes, in words: ``a whole number from 1 to 500``."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    kind = {**prop, **(branches[0] if branches else {})}
    if "enum" in kind:
        return "one of " + " | ".join(str(v) for v in kind["enum"])
    if kind.get("type") == "boolean":
        return "0 or 1"
    if kind.get("type") in ("integer", "number"):
        noun = "a whole number" if kind["type"] == "integer" else "a number"
        low, high = kind.get("minimum"), kind.get("maximum")
        if low is not None and high is not None:
            return f"{noun} from {low:g} to {high:g}"
        if low is not None:
            return f"{noun} of at least {low:g}"
        return f"{noun} of at most {high:g}" if high is not None else noun
    length = kind.get("maxLength")
    return f"text of at most {length} characters" if length else "text"


def parse_options(spec: PolicySpec, model: type[PolicyOptions], text: str | None = None) -> PolicyOptions:
    """The one parse step: ``spec``'s option strings as an instance of ``model``, else a
    :class:`PolicySpecError` (``invalid_bot_spec``) that names the option, says what is wrong and what
    is allowed. ``text`` is the spec as written (default: ``spec.text``)."""
    text = spec.text if text is None else text
    accepted = option_names(model)
    unknown = sorted(set(spec.options) - set(accepted))
    if unknown and model.model_config.get("extra") == "forbid":
        raise PolicySpecError(
            "invalid_bot_spec",
            f"Policy {spec.name!r} takes no option(s) {unknown}; it accepts: "
            f"{', '.join(accepted) or 'no options'}.",
            text,
            option=unknown[0],
        )
    try:
        return model.model_validate(spec.options)
    except ValidationError as err:
        by_field = {accepted[info.names[0]]: info for info in describe_options(model)}
        problems = err.errors(include_url=False)
        message = " ".join(
            _problem(spec, text, error, by_field.get(accepted.get(_key(error), ""))) for error in problems
        )
        raise PolicySpecError("invalid_bot_spec", message, text, option=_key(problems[0])) from None


def _key(error: Any) -> str:
    """The spec key a pydantic error is about."""
    return str(error["loc"][0]) if error["loc"] else ""


def _problem(spec: PolicySpec, text: str, error: Any, info: OptionInfo | None) -> str:
    """One refused option in words: which, what is wrong, what it takes."""
    key = _key(error)
    if error["type"] == "extra_forbidden":  # two names of one option given at once
        return f"Option {key!r} of policy spec {text!r} repeats an option given by another name; give one."
    takes = info.summary() if info is not None else "no such option"
    if error["type"] == "missing":
        return f"Policy {spec.name!r} needs the option {key!r}: {takes}."
    reason = str(error["msg"]).removeprefix("Value error, ")
    reason = reason[:1].lower() + reason[1:]
    given = f"{key}={spec.options.get(key)}"
    return f"Option {given} of policy spec {text!r} is refused: {reason}; it takes {takes}."


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point)  # the first installed distribution wins a name clash
    return found


def policy_names() -> list[str]:
    """The names of every installed policy, sorted."""
    return sorted(_entry_points())


def _unknown(spec: str, name: str) -> PolicySpecError:
    names = policy_names()
    if not names:
        hint = (
            f"no policies are installed: install the tradecraft package (pip install -e .) so its "
            f"{ENTRY_POINT_GROUP!r} entry points exist"
        )
    else:
        hint = f"choose one of: {', '.join(names)}"
    return PolicySpecError("unknown_bot", f"There is no policy {name!r}; {hint}.", spec)


@lru_cache(maxsize=64)
def load_factory(name: str) -> PolicyFactory:
    """The factory the entry point ``name`` names (imports its module); :class:`PolicySpecError` if none."""
    point = _entry_points().get(name)
    if point is None:
        raise _unknown(name, name)
    factory = point.load()
    if not callable(factory):
        raise PolicySpecError(
            "invalid_bot_spec", f"Entry point {name!r} ({point.value}) is not callable.", name
        )
    return factory


def make_policy(spec: str, seed: int) -> Policy:
    """A fresh policy for ``spec`` (see the module docstring) seeded with ``seed``.

    :class:`PolicySpecError` when the name is unknown, the spec malformed, an option unknown to the
    factory or refused by its options model (:func:`parse_options`), or when the factory refuses to build
    (its ``ValueError`` message is passed on, e.g. a missing provider key).
    """
    parsed = parse_policy_spec(spec)
    if parsed.name not in _entry_points():
        raise _unknown(spec, parsed.name)
    factory = load_factory(parsed.name)
    model, declared = options_model(factory)
    options = parse_options(parsed, model, spec)
    try:
        if declared:
            policy = factory(seed, options)
        else:  # a plug-in without a model: its keyword parameters, as given
            policy = factory(seed, **options.model_dump(exclude_unset=True))
    except ValueError as err:
        raise PolicySpecError("invalid_bot_spec", f"Policy spec {spec!r}: {err}", spec) from err
    if not isinstance(policy, Policy):
        raise PolicySpecError(
            "invalid_bot_spec", f"Policy {parsed.name!r} built an object without act(view, legal).", spec
        )
    return policy


def describe_policies() -> list[dict[str, Any]]:
    """One entry per installed policy: name, factory (``module:attr``), summary (the docstring's first
    line), its :class:`PolicyCard` (display_name, description, strength), options (:class:`OptionInfo` as
    dicts: names, allowed, default, required, description, schema, and ``help``, its summary in words)
    and, where the factory documents it, ``best_response``.
    Describing imports each policy's module; one that fails to import says why."""
    out = []
    for name in policy_names():
        point = _entry_points()[name]
        entry: dict[str, Any] = {"name": name, "factory": point.value}
        try:
            factory = load_factory(name)
        except Exception as err:  # a broken plug-in must not hide the others
            broken = f"unavailable: {type(err).__name__}: {err}"
            entry.update(summary=broken, options=[], **asdict(PolicyCard(name, broken, "varies")))
        else:
            doc = inspect.getdoc(factory) or ""
            model, _ = options_model(factory)
            summary = doc.strip().splitlines()[0] if doc.strip() else ""
            declared = getattr(factory, "card", None)
            if not isinstance(declared, PolicyCard):  # a plug-in without a card: its name and docstring
                declared = PolicyCard(name, summary, "varies")
            entry.update(
                summary=summary,
                options=[{**asdict(info), "help": info.summary()} for info in describe_options(model)],
                **asdict(declared),
            )
            best = getattr(factory, "best_response", None)
            if isinstance(best, dict):  # scripted partners: how to play them best (regret needs it)
                entry["best_response"] = dict(best)
        out.append(entry)
    return out
