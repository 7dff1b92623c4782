"""The policy registry: policies are plug-ins, found by name through Python entry points.

A package offers a policy by naming a factory in its ``pyproject.toml``::

    [project.entry-points."tradecraft.policies"]
    random = "agents.bots.random_bot:RandomBot"

A factory is called ``factory(seed, **options)`` with every option as a string and returns a
:class:`~server.game.policy.Policy`. Nothing here imports a policy's module until that policy is made or
described, so listing the names stays cheap and a broken plug-in breaks only itself.

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
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

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
    or options); the message says what to do. ``spec`` is kept out of ``details``: it may hold a credential.
    """

    def __init__(self, code: str, message: str, spec: str):
        super().__init__(code, message)
        self.spec = spec


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
    factory, or a value the factory refuses (its ``ValueError`` message is passed on).
    """
    parsed = parse_policy_spec(spec)
    if parsed.name not in _entry_points():
        raise _unknown(spec, parsed.name)
    factory = load_factory(parsed.name)
    try:
        inspect.signature(factory).bind(seed, **parsed.options)
    except TypeError:
        accepted = _option_names(factory)
        raise PolicySpecError(
            "invalid_bot_spec",
            f"Policy {parsed.name!r} takes no option(s) {sorted(set(parsed.options) - set(accepted))}; "
            f"it accepts: {', '.join(accepted) or 'no options'}.",
            spec,
        ) from None
    try:
        policy = factory(seed, **parsed.options)
    except ValueError as err:
        raise PolicySpecError("invalid_bot_spec", f"Policy spec {spec!r}: {err}", spec) from err
    if not isinstance(policy, Policy):
        raise PolicySpecError(
            "invalid_bot_spec", f"Policy {parsed.name!r} built an object without act(view, legal).", spec
        )
    return policy


def _option_names(factory: PolicyFactory) -> list[str]:
    try:
        parameters = list(inspect.signature(factory).parameters.values())[1:]  # the first one is the seed
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def describe_policies() -> list[dict[str, Any]]:
    """One entry per installed policy: name, factory (``module:attr``), summary (the docstring's first
    line), options and, where the factory documents it, ``best_response``. Describing imports each
    policy's module; one that fails to import says why."""
    out = []
    for name in policy_names():
        point = _entry_points()[name]
        entry: dict[str, Any] = {"name": name, "factory": point.value}
        try:
            factory = load_factory(name)
        except Exception as err:  # a broken plug-in must not hide the others
            entry.update(summary=f"unavailable: {type(err).__name__}: {err}", options=[])
        else:
            doc = inspect.getdoc(factory) or ""
            entry.update(
                summary=doc.strip().splitlines()[0] if doc.strip() else "", options=_option_names(factory)
            )
            best = getattr(factory, "best_response", None)
            if isinstance(best, dict):  # scripted partners: how to play them best (regret needs it)
                entry["best_response"] = dict(best)
        out.append(entry)
    return out
