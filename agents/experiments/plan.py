"""From a validated config to the experiment's jobs: conditions x instances x seeds x repetitions x seatings.

Order: seed by seed, repetition by repetition, instance by instance, then every condition and seating, so
the games that finish first of a long run already cover every condition evenly.

Seeds: a game's seed is ``derive_seed(base seed, instance id, repetition)``: every condition and both
seatings of one instance, seed and repetition play with the same game seed (common random numbers);
each seat's policy seed derives from the game seed, its seat and its spec
(:func:`agents.experiments.jobs.policy_seed`).

Job keys (stable ids of a job, whatever the attempt): ``<condition>|<instance id>|seed=<s>|rep=<r>|<seating>``
with seating ``focal0`` (focal seat at seat 0) or ``focal1``.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from agents.bots.registry import MODEL_SPEC_OPTION
from agents.experiments.config import (
    SAME,
    ExperimentConfig,
    ExperimentError,
    chat_model_of,
    orders_label,
    parse_policy_spec,
    spec_with,
    takes_option,
)
from agents.experiments.jobs import GameJob, SeatPlan
from agents.local import derive_seed
from craft_rules.tasks import get_instance, instance_set_ids

MAX_JOBS = 200_000
"""The most games one experiment may plan (checked before anything is played)."""


@dataclass(frozen=True)
class SeatChoice:
    """One seat's agent in a condition, before it is given a seat number."""

    agent: str
    tom_orders: tuple[int, ...]
    persona: str | None
    reasoning: str | None
    focal: bool
    name: str | None = None
    """How labels name the agent (:func:`agent_names`); unset: its short name."""

    def plan(self, seat: int) -> SeatPlan:
        chat_model = chat_model_of(self.agent)
        llm = chat_model is not None
        if chat_model is not None:
            options = {"tom": ",".join(map(str, self.tom_orders))}
            if takes_option(self.agent, "persona"):  # a policy without personas was refused one (config)
                options["persona"] = self.persona or "none"
            if (self.reasoning or "direct") == "cot":
                options["cot"] = "1"
            spec = spec_with(self.agent, **options)
            name = chat_model
        else:
            spec, name = self.agent, parse_policy_spec(self.agent).name
        return SeatPlan(
            seat=seat,
            spec=spec,
            kind="agent" if llm else "bot",
            name=name,
            agent=self.agent_label,
            tom_orders=self.tom_orders,
            persona=(self.persona or "none") if llm else None,
            reasoning=(self.reasoning or "direct") if llm else None,
            focal=self.focal,
        )

    @property
    def label(self) -> str:
        """``tom1 V0+V1+V2``, ``gpt-4o V0+V1 fair cot``, ``gpt-4o?temperature=0 V0`` (persona and reasoning
        only when not the default)."""
        return " ".join([self._who, orders_label(self.tom_orders), *self._extras])

    @property
    def agent_label(self) -> str:
        """The label without the ToM orders (``gpt-4o fair cot``): who the analysis compares across its
        ToM groups, which it reads from the seat's ``tom_orders``."""
        return " ".join([self._who, *self._extras])

    @property
    def _who(self) -> str:
        return self.name or agent_names([self.agent])[self.agent]

    @property
    def _extras(self) -> list[str]:
        return [p for p in (self.persona, self.reasoning) if p not in (None, "none", "direct")]


@dataclass(frozen=True)
class Condition:
    """One cell of the grid: a focal seat and its opponent."""

    focal: SeatChoice
    opponent: SeatChoice

    @property
    def label(self) -> str:
        return f"{self.focal.label} vs {self.opponent.label}"


def agent_names(agents: Sequence[str]) -> dict[str, str]:
    """How labels name each agent: a bot by its spec (``tom1``, ``random?accept_probability=0.9``), a model
    without its provider (``gpt-4o``, ``gpt-4o?temperature=0``), unless two of ``agents`` would then share
    a name (``llm:openai:gpt-4o`` and ``llm:vllm:gpt-4o``): those keep it (``openai:gpt-4o``)."""
    names: dict[str, tuple[str, str]] = {}
    for agent in agents:
        parsed = parse_policy_spec(agent)
        model = parsed.options.get(MODEL_SPEC_OPTION)
        if model is None:
            names[agent] = (agent, agent)
            continue
        options = {k: v for k, v in parsed.options.items() if k != MODEL_SPEC_OPTION}
        tail = "?" + "&".join(f"{k}={v}" for k, v in options.items()) if options else ""
        names[agent] = (model.split(":", 1)[-1] + tail, model + tail)
    short = Counter(name for name, _ in names.values())
    return {agent: name if short[name] == 1 else full for agent, (name, full) in names.items()}


def conditions(config: ExperimentConfig) -> list[Condition]:
    """The focal grid (agents x tom_orders x personas x reasoning), each with its opponent."""
    focal, opp = config.focal, config.opponent
    names = agent_names(list(dict.fromkeys([*focal.agents, *([] if opp.agent == SAME else [opp.agent])])))
    cells = []
    for agent, orders, persona, reasoning in itertools.product(
        focal.agents, focal.tom_orders, focal.personas or [None], focal.reasoning or [None]
    ):
        studied = SeatChoice(agent, tuple(orders), persona, reasoning, focal=True, name=names[agent])
        opponent_agent = agent if opp.agent == SAME else opp.agent
        opponent = SeatChoice(
            opponent_agent,
            tuple(opp.tom_orders),
            opp.persona,
            opp.reasoning,
            focal=False,
            name=names[opponent_agent],
        )
        cells.append(Condition(studied, opponent))
    return cells


def instance_ids(config: ExperimentConfig) -> list[str]:
    """The instances the config names, checked to exist and to be 1-vs-1."""
    spec = config.instances
    if spec.ids is not None:
        ids = list(spec.ids)
    else:
        try:
            ids = instance_set_ids(spec.set or "", ruleset=spec.ruleset, mode="1p_v_1p")
        except KeyError as err:
            raise ExperimentError("invalid_config", f"instances.set: {err.args[0]}") from None
        if spec.first is not None:
            if spec.first > len(ids):
                raise ExperimentError(
                    "invalid_config",
                    f"instances.first: set {spec.set!r} has {len(ids)} instances, fewer than {spec.first}",
                )
            ids = ids[: spec.first]
    for instance_id in ids:
        try:
            instance = get_instance(instance_id)
        except KeyError as err:
            raise ExperimentError("invalid_config", f"instances.ids: {err.args[0]}") from None
        if instance.players != 2:
            raise ExperimentError(
                "invalid_config",
                f"instances: {instance_id} has {instance.players} seats; experiments are 1-vs-1",
            )
    return ids


def plan_jobs(config: ExperimentConfig, store_url: str) -> list[GameJob]:
    """Every game of the experiment, as first attempts, in schedule order (see the module docstring)."""
    cells = conditions(config)
    ids = instance_ids(config)
    seatings = (False, True) if config.swap_seats else (False,)
    count = len(cells) * len(ids) * len(config.seeds) * config.repetitions * len(seatings)
    if count > MAX_JOBS:
        raise ExperimentError(
            "too_many_games", f"the config plans {count} games (at most {MAX_JOBS}); shrink the grid"
        )
    base = config.game_settings()
    jobs: list[GameJob] = []
    for seed in config.seeds:
        for repetition in range(config.repetitions):
            for instance_id in ids:
                game_seed = derive_seed(seed, instance_id, repetition)
                for cell in cells:
                    for swapped in seatings:
                        order = (cell.opponent, cell.focal) if swapped else (cell.focal, cell.opponent)
                        seats = tuple(choice.plan(seat) for seat, choice in enumerate(order))
                        seating = "focal1" if swapped else "focal0"
                        key = f"{cell.label}|{instance_id}|seed={seed}|rep={repetition}|{seating}"
                        jobs.append(
                            GameJob(
                                experiment=config.name,
                                key=key,
                                index=len(jobs),
                                attempt=1,
                                store_url=store_url,
                                instance_id=instance_id,
                                seats=seats,
                                settings={**base, "tom_orders": [list(s.tom_orders) for s in seats]},
                                seed=game_seed,
                                labels={
                                    "condition": cell.label,
                                    "focal_agent": cell.focal.label,
                                    "opponent_agent": cell.opponent.label,
                                    "instance": instance_id,
                                    "seed": seed,
                                    "repetition": repetition,
                                    "swapped": swapped,
                                    "focal_seat": 1 if swapped else 0,
                                },
                            )
                        )
    repeated = [key for key, count in Counter(job.key for job in jobs).items() if count > 1]
    if repeated:  # the config's own checks refuse repeated entries; this is the last guard
        raise ExperimentError(
            "invalid_config",
            f"two games of the plan come out the same ({repeated[0]}): each condition, instance and seed "
            "must be listed once",
        )
    return jobs
