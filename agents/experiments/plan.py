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
from dataclasses import dataclass

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
        parsed = parse_policy_spec(self.agent)
        if parsed.name != "llm":
            return self.agent
        # the model without its provider, and any options of the spec
        options = {k: v for k, v in parsed.options.items() if k != "model_spec"}
        who = parsed.options["model_spec"].split(":", 1)[-1]
        return who + ("?" + "&".join(f"{k}={v}" for k, v in options.items()) if options else "")

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


def conditions(config: ExperimentConfig) -> list[Condition]:
    """The focal grid (agents x tom_orders x personas x reasoning), each with its opponent."""
    focal, opp = config.focal, config.opponent
    cells = []
    for agent, orders, persona, reasoning in itertools.product(
        focal.agents, focal.tom_orders, focal.personas or [None], focal.reasoning or [None]
    ):
        studied = SeatChoice(agent, tuple(orders), persona, reasoning, focal=True)
        opponent_agent = agent if opp.agent == SAME else opp.agent
        opponent = SeatChoice(opponent_agent, tuple(opp.tom_orders), opp.persona, opp.reasoning, focal=False)
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
    if len({job.key for job in jobs}) != len(jobs):  # two grid cells that would play the same games
        raise ExperimentError(
            "invalid_config", "focal: two conditions come out the same; list each agent once"
        )
    return jobs
