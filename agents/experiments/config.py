"""An experiment's config file (YAML), validated: every key documented, unknown keys refused.

The design is the paper's: a **focal** seat (the one studied) against an **opponent** seat, on a set of
1-vs-1 instances, with seats swapped. The focal seat's grid is the cross product of its lists
(``agents`` x ``tom_orders`` x ``personas`` x ``reasoning``); each combination is one *condition*. The
opponent is one agent, or ``same`` (the focal seat's own bot or model, with the opponent's ToM orders,
persona and reasoning). Each condition is played on every instance, for every seed and repetition, and,
with ``swap_seats``, once with the focal seat at seat 0 and once at seat 1::

    name: bots-only
    instances: {set: paper, first: 20}
    focal: {agents: [tom0, tom1, tom2], tom_orders: [[0, 1, 2]]}
    opponent: {agent: tom0, tom_orders: [0]}
    swap_seats: true

:func:`load_config` reads a file and raises :class:`ExperimentError` (code ``invalid_config``) naming
each key at fault and what it takes. ``ExperimentConfig.model_json_schema()`` documents every key;
docs/experiments.md lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agents.bots.registry import (
    MODEL_SPEC_OPTION,
    PolicyOptions,
    PolicySpec,
    PolicySpecError,
    load_factory,
    option_names,
    options_model,
    parse_options,
    parse_policy_spec,
    policy_names,
)
from agents.experiments.limits import provider_of
from agents.llm import prompts
from craft_rules.errors import TradeCraftError
from server.game import GameSettings

SAME = "same"
"""The opponent agent that means: the focal seat's own bot or model."""

SEAT_OPTIONS = {"tom": "tom_orders", "persona": "personas / persona", "cot": "reasoning"}
"""LLM spec options the config sets from its own keys (so they are not written into ``agent`` specs)."""

PAPER_GAME: dict[str, Any] = {
    "max_turns": 15,
    "crafting_runs": "whole",
    "allow_pass": False,
    "end_condition": "first_win",
}
"""The paper's game settings (whole crafting runs, 15 turns, no passing, first win ends the game); the
config's ``game`` keys override them."""


class ExperimentError(TradeCraftError):
    """An experiment that cannot be run, resumed or read as asked. ``code`` is machine-readable
    (``invalid_config``, ``config_changed``, ``unknown_experiment``, ...); the message says what to do."""


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def orders_label(orders: tuple[int, ...] | list[int]) -> str:
    """``(0, 1)`` -> ``"V0+V1"``."""
    return "+".join(f"V{o}" for o in orders) or "none"


def _check_orders(orders: list[int]) -> list[int]:
    if (
        not orders
        or 0 not in orders
        or any(o not in (0, 1, 2) for o in orders)
        or len(set(orders)) != len(orders)
    ):
        raise ValueError("ToM orders are 0, 1 or 2, each once, always with 0: [0], [0, 1] or [0, 1, 2]")
    return sorted(orders)


def _once(values: list[Any], what: str) -> None:
    """Refuse a list that names one thing twice (it would plan the same games twice)."""
    seen: list[Any] = []
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} is listed twice; list each once")
        seen.append(value)


def check_agent(spec: str) -> PolicySpec:
    """Parse a policy spec and check its options against its policy's options model (without building it,
    so no API key is needed); ValueError says what is wrong."""
    try:
        parsed = parse_policy_spec(spec)
        if parsed.name not in policy_names():
            raise ValueError(f"there is no policy {parsed.name!r}; `tradecraft bots` lists them")
        model, _ = options_model(load_factory(parsed.name))
        parse_options(parsed, model, spec)
    except PolicySpecError as err:
        raise ValueError(err.message) from None
    set_here = sorted(set(parsed.options) & set(SEAT_OPTIONS))
    if is_llm(spec) and set_here:
        keys = ", ".join(f"{o} (use {SEAT_OPTIONS[o]})" for o in set_here)
        raise ValueError(f"{spec!r} sets {keys} in the spec; the config's own keys set them per seat")
    return parsed


def seat_options(spec: str) -> PolicyOptions:
    """The options a (valid) policy spec gives its policy."""
    parsed = parse_policy_spec(spec)
    model, _ = options_model(load_factory(parsed.name))
    return parse_options(parsed, model, spec)


def chat_model_of(spec: str) -> str | None:
    """``<provider>:<model>`` of an LLM seat's spec (its policy's options say which,
    :meth:`~agents.bots.registry.PolicyOptions.chat_model`), None for a bot."""
    return seat_options(spec).chat_model()


def is_llm(spec: str) -> bool:
    """Whether the spec's policy plays through a chat model (``llm``, ``simulated_llm``, ...)."""
    return chat_model_of(spec) is not None


def takes_option(spec: str, option: str) -> bool:
    """Whether the spec's policy has the option ``option`` (e.g. ``persona``)."""
    return option in option_names(type(seat_options(spec)))


class InstancesConfig(_Config):
    """Which 1-vs-1 task instances are played: a named set (optionally its first N) or explicit ids."""

    set: str | None = Field(
        None,
        description="an instance set name, e.g. 'paper' (the paper's instances; `tradecraft tasks list`)",
    )
    first: int | None = Field(None, ge=1, description="play only the set's first N instances (in file order)")
    ids: list[str] | None = Field(
        None, min_length=1, description="explicit instance ids, e.g. minecraft/1p_v_1p/paper.json#0"
    )
    ruleset: str = Field("minecraft", description="the rule set whose instance sets `set` names")

    @field_validator("ids")
    @classmethod
    def _ids(cls, value: list[str] | None) -> list[str] | None:
        _once(value or [], "the instance")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> InstancesConfig:
        if (self.set is None) == (self.ids is None):
            raise ValueError("give either `set` (e.g. set: paper, first: 20) or `ids` (a list), not both")
        if self.first is not None and self.set is None:
            raise ValueError("`first` applies to a `set`; with `ids`, list the ones you want")
        return self


class FocalConfig(_Config):
    """The studied seat. Every combination of these lists is one condition of the experiment."""

    agents: list[str] = Field(
        min_length=1,
        description="policy specs: built-in bots (tom0, tom1, tom2, planner, random, ...; `tradecraft bots`) "
        "or LLMs as llm:<provider>:<model>[?option=value] (options other than tom, persona, cot)",
    )
    tom_orders: list[list[int]] = Field(
        default_factory=lambda: [[0]],
        min_length=1,
        description="the ToM orders the seat reports each turn, one list per condition: [[0], [0, 1], "
        "[0, 1, 2]] is the paper's V0, V0+V1, V0+V1+V2",
    )
    personas: list[str] | None = Field(
        None,
        min_length=1,
        description=f"LLM seats only: personas to cross ({', '.join(prompts.PERSONAS)}); unset: 'none'",
    )
    reasoning: list[Literal["direct", "cot"]] | None = Field(
        None,
        min_length=1,
        description="LLM seats only: reasoning modes to cross (direct: act at once; cot: think step by step "
        "first); unset: direct",
    )

    @field_validator("agents")
    @classmethod
    def _agents(cls, value: list[str]) -> list[str]:
        for spec in value:
            check_agent(spec)
        _once(value, "the agent")
        return value

    @field_validator("tom_orders")
    @classmethod
    def _orders(cls, value: list[list[int]]) -> list[list[int]]:
        orders = [_check_orders(orders) for orders in value]
        _once(orders, "the ToM orders")
        return orders

    @field_validator("personas")
    @classmethod
    def _personas(cls, value: list[str] | None) -> list[str] | None:
        for persona in value or []:
            if persona not in prompts.PERSONAS:
                raise ValueError(f"persona {persona!r} is not one of {', '.join(prompts.PERSONAS)}")
        _once(value or [], "the persona")
        return value

    @field_validator("reasoning")
    @classmethod
    def _reasoning(cls, value: list[str] | None) -> list[str] | None:
        _once(value or [], "the reasoning mode")
        return value


class OpponentConfig(_Config):
    """The seat the focal seat plays against (stored with ``focal: false``)."""

    agent: str = Field(
        description="a policy spec as in focal.agents, or 'same': the focal seat's own bot or model"
    )
    tom_orders: list[int] = Field(
        default_factory=lambda: [0], description="the ToM orders it reports each turn, e.g. [0] (V0 only)"
    )
    persona: str | None = Field(None, description="LLM opponents only: its persona; unset: 'none'")
    reasoning: Literal["direct", "cot"] | None = Field(None, description="LLM opponents only; unset: direct")

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str) -> str:
        if value != SAME:
            check_agent(value)
        return value

    @field_validator("tom_orders")
    @classmethod
    def _orders(cls, value: list[int]) -> list[int]:
        return _check_orders(value)

    @field_validator("persona")
    @classmethod
    def _persona(cls, value: str | None) -> str | None:
        if value is not None and value not in prompts.PERSONAS:
            raise ValueError(f"persona {value!r} is not one of {', '.join(prompts.PERSONAS)}")
        return value


class ProviderLimit(_Config):
    """Rate limits of one provider, shared by every game of the run."""

    requests_per_minute: int | None = Field(None, ge=1, description="model calls per minute; unset: no limit")
    tokens_per_minute: int | None = Field(
        None, ge=1, description="tokens (input + output) per minute; unset: no limit"
    )

    @model_validator(mode="after")
    def _some_limit(self) -> ProviderLimit:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError(
                "set requests_per_minute, tokens_per_minute or both (an empty entry limits nothing)"
            )
        return self


class ExperimentConfig(_Config):
    """One experiment: who plays whom, on which instances, how often, with which seeds."""

    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$",
        description="the experiment's name (lowercase letters, digits, - and _): its games, manifest and "
        "resume are keyed by it; a changed config needs a new name",
    )
    description: str = Field("", max_length=2000, description="free text: what the experiment is for")
    instances: InstancesConfig = Field(description="the task instances played")
    focal: FocalConfig = Field(description="the studied seat and its grid of conditions")
    opponent: OpponentConfig = Field(description="the seat the focal seat plays against")
    swap_seats: bool = Field(
        True,
        description="play every game twice, the focal seat at seat 0 and at seat 1 (the paper's protocol)",
    )
    repetitions: int = Field(1, ge=1, le=1000, description="games per condition, instance, seed and seating")
    seeds: list[int] = Field(
        default_factory=lambda: [0],
        min_length=1,
        description="base seeds: every game's seed (and its policies') derives from one of them",
    )
    game: dict[str, Any] = Field(
        default_factory=dict,
        description="game settings (server.game.GameSettings keys, e.g. max_turns) over the paper's "
        f"{PAPER_GAME}; tom_orders comes from the seats",
    )
    max_attempts: int = Field(
        3, ge=1, le=100, description="tries per game: an errored game is rerun until it has failed this often"
    )
    concurrency: int = Field(4, ge=1, le=1024, description="games played at once (--concurrency overrides)")
    limits: dict[str, ProviderLimit] = Field(
        default_factory=dict,
        description="per provider of the LLM seats (openai, anthropic, ...: the <provider> of "
        "llm:<provider>:<model>): requests and tokens per minute over all games",
    )

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: list[int]) -> list[int]:
        _once(value, "the seed")
        return value

    @field_validator("game")
    @classmethod
    def _game(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "tom_orders" in value:
            raise ValueError(
                "tom_orders is set per seat (focal.tom_orders, opponent.tom_orders), not in game"
            )
        try:
            GameSettings.model_validate({**PAPER_GAME, **value})
        except ValidationError as err:
            raise ValueError(
                "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            ) from None
        return value

    @model_validator(mode="after")
    def _llm_only_options(self) -> ExperimentConfig:
        bots = [a for a in self.focal.agents if not is_llm(a)]
        if bots and (self.focal.personas or self.focal.reasoning):
            raise ValueError(
                f"focal.personas and focal.reasoning apply to LLM seats only, and {bots} are bots: "
                "put LLM and bot agents in separate experiments, or drop those keys"
            )
        opponent_llm = self.opponent.agent != SAME and is_llm(self.opponent.agent)
        opponent_bot = (self.opponent.agent == SAME and bots) or (
            self.opponent.agent != SAME and not opponent_llm
        )
        if opponent_bot and (self.opponent.persona or self.opponent.reasoning):
            raise ValueError("opponent.persona and opponent.reasoning apply to LLM opponents only; drop them")
        opponents = self.focal.agents if self.opponent.agent == SAME else [self.opponent.agent]
        for where, agents, persona, reasoning in (
            ("focal.personas", self.focal.agents, self.focal.personas, None),
            ("focal.reasoning", self.focal.agents, None, self.focal.reasoning),
            ("opponent.persona", opponents, self.opponent.persona, None),
            ("opponent.reasoning", opponents, None, self.opponent.reasoning),
        ):
            option = "persona" if persona else "cot" if reasoning else None
            unable = [a for a in agents if option and is_llm(a) and not takes_option(a, option)]
            if unable:
                raise ValueError(
                    f"{where} is set, but {unable} take no {option!r} option (see `tradecraft bots`): "
                    "drop the key or put those agents in another experiment"
                )
        return self

    @model_validator(mode="after")
    def _limited_providers(self) -> ExperimentConfig:
        unknown = sorted(set(self.limits) - set(self.providers()))
        if unknown:
            used = ", ".join(self.providers()) or "none (every seat is a bot)"
            raise ValueError(
                f"limits: {', '.join(unknown)} is not the provider of any LLM seat here, so it would limit "
                f"nothing; the seats' providers: {used}"
            )
        return self

    def providers(self) -> list[str]:
        """The providers of the config's LLM seats (``openai`` of ``llm:openai:gpt-4o``), sorted."""
        agents = [*self.focal.agents, *([] if self.opponent.agent == SAME else [self.opponent.agent])]
        return sorted({provider_of(model) for agent in agents if (model := chat_model_of(agent)) is not None})

    def game_settings(self) -> dict[str, Any]:
        """The settings every game shares (the seats' tom_orders are filled in per game)."""
        return {**PAPER_GAME, **self.game}


def _explain(err: ValidationError, source: str) -> str:
    lines = [f"{source}: the experiment config is not valid:"]
    for problem in err.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "(top level)"
        message = str(problem["msg"]).removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden":
            message = (
                "is not a config key; remove it or check its spelling (docs/experiments.md lists the keys)"
            )
        elif problem["type"] == "missing":
            message = f"is required: {_description(problem['loc'])}"
        lines.append(f"  {where}: {message}")
    return "\n".join(lines)


def _description(loc: tuple[Any, ...]) -> str:
    model: Any = ExperimentConfig
    description = ""
    for part in loc:
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            break
        description = fields[part].description or ""
        model = fields[part].annotation
    return description


def parse_config(data: Any, source: str = "config") -> ExperimentConfig:
    """Validate a config mapping; :class:`ExperimentError` ``invalid_config`` names each key at fault."""
    if not isinstance(data, dict):
        raise ExperimentError("invalid_config", f"{source}: an experiment config is a YAML mapping of keys")
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as err:
        raise ExperimentError("invalid_config", _explain(err, source)) from None


def read_config(path: str | Path) -> dict[str, Any]:
    """The config file's mapping as written (what the manifest keeps as "given")."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExperimentError(
            "invalid_config", f"{path}: no such file; give the path of a YAML config"
        ) from None
    except yaml.YAMLError as err:
        raise ExperimentError("invalid_config", f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ExperimentError("invalid_config", f"{path}: an experiment config is a YAML mapping of keys")
    return data


def load_config(path: str | Path) -> tuple[dict[str, Any], ExperimentConfig]:
    """Read and validate a config file: ``(as given, validated)``."""
    data = read_config(path)
    return data, parse_config(data, str(path))


def spec_with(spec: str, **options: str) -> str:
    """``spec`` with ``options`` added: ``llm:openai:gpt-4o`` + tom="0,1" -> ``llm:openai:gpt-4o?tom=0,1``."""
    parsed = parse_policy_spec(spec)
    merged = {**parsed.options, **options}
    model = merged.pop(MODEL_SPEC_OPTION, None)
    ordered = {**({MODEL_SPEC_OPTION: model} if model else {}), **merged}
    return PolicySpec(parsed.name, ordered).text
