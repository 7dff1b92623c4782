"""Per-game settings: everything besides the task instance that decides how a game is played.

``GameSettings().model_dump()`` is the settings snapshot stored with a game and carried by exports;
``GameSettings.model_validate(snapshot)`` restores it. Deadlines are only *recorded* here: the
engine has no clock, the server's timers submit a :class:`~server.game.actions.Timeout` action when a
deadline expires and the engine applies the phase's policy.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from craft_rules.crafting import CraftingRuns

PHASES: tuple[str, ...] = ("tom_report", "trade_propose", "trade_decide", "craft", "finished")
"""Every value of ``Game.phase``, in the order a turn runs through them."""

TOM_ORDERS: tuple[int, ...] = (0, 1, 2)
"""V0 = own need, V1 = estimate of an opponent's V0, V2 = estimate of an opponent's estimate of my V0."""


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PhaseDeadlines(_Settings):
    """Seconds a phase may last before the server submits a timeout; None = no deadline."""

    tom_report: float | None = Field(None, gt=0)
    trade_propose: float | None = Field(None, gt=0)
    trade_decide: float | None = Field(None, gt=0)
    craft: float | None = Field(None, gt=0)

    def for_phase(self, phase: str) -> float | None:
        return getattr(self, phase, None)


class TimeoutPolicies(_Settings):
    """What a timeout does to every seat whose action was awaited.

    tom_report ``skip``: the seat gives no report this turn. trade_propose ``pass``: no proposal.
    trade_decide ``reject`` (or ``accept``): the pending proposal is decided so. craft ``finish``:
    the seat's crafting so far stands and it is done for this phase.
    """

    tom_report: Literal["skip"] = "skip"
    trade_propose: Literal["pass"] = "pass"
    trade_decide: Literal["reject", "accept"] = "reject"
    craft: Literal["finish"] = "finish"

    def for_phase(self, phase: str) -> str:
        return str(getattr(self, phase))


class Scoring(_Settings):
    """Points each seat gets when the game ends (told to players up front, paid in targets_revealed).

    The original game's rule: 3 points for winning alone, 1 each when several win in the same craft
    phase, nothing otherwise (also nothing for anyone when the game ends without a winner)."""

    sole_win: int = Field(3, ge=0, le=1000, description="points of the only winner")
    shared_win: int = Field(1, ge=0, le=1000, description="points of each winner when several win together")
    no_win: int = Field(0, ge=0, le=1000, description="points of a seat that did not win")

    def scores(self, players: int, winners: list[int]) -> list[int]:
        """Points per seat for this set of winners."""
        prize = self.sole_win if len(winners) == 1 else self.shared_win
        return [prize if seat in winners else self.no_win for seat in range(players)]


class GameSettings(_Settings):
    """How one game is played. All fields have sensible defaults; unknown keys are refused."""

    ruleset: str = Field("minecraft", description="name of the rule set the game uses")
    max_turns: int = Field(
        10,
        ge=1,
        le=10_000,
        description="turns (trade + craft) before a draw; a task instance's own max_turn overrides it",
    )
    crafting_runs: CraftingRuns = Field(
        "rational",
        description=(
            "rational: a craft may run a recipe any positive rational number of times (1/4 of "
            "'1 coal + 1 stick -> 4 torches' makes 1 torch); whole: whole runs only, as the original "
            "server (fuel is still burnt in proportion, 1/8 coal per smelt)"
        ),
    )
    scoring: Scoring = Field(default_factory=Scoring, description="points paid when the game ends")
    trade_messages: Literal["parties", "public"] = Field(
        "parties",
        description=(
            "who reads the messages of an accepted trade: parties = only its two traders (as the "
            "original; a message is written to one addressee, and would otherwise become public only "
            "when accepted), public = everyone; the trade itself is always public"
        ),
    )
    tom_orders: list[list[int]] = Field(
        default_factory=list,
        description=(
            "per seat, the ToM orders it reports at the start of every turn, e.g. [[0, 1, 2], [0]]; "
            "[] for a seat = no reports; an empty outer list = no reports at all"
        ),
    )
    tom_report_items: Literal["all", "compact"] = Field(
        "all",
        description=(
            "the items a ToM report values: all = every item in the public hands (the paper's); compact = "
            "only those some recipe the pooled hands can run would use (craft_rules/report_items.py)"
        ),
    )
    allow_pass: bool = Field(True, description="whether a proposer may skip proposing")
    message_max_chars: int = Field(500, ge=0, description="longest proposal / reply message")
    end_condition: Literal["first_win", "all_win"] = Field(
        "first_win",
        description=(
            "first_win: the game ends after the craft phase in which anyone holds their target "
            "(all who do win); all_win: it goes on until every active seat has held its target"
        ),
    )
    first_proposer: int | None = Field(
        0, ge=0, description="seat that proposes in turn 1; None = drawn from the game's seeded RNG"
    )
    deadlines: PhaseDeadlines = Field(default_factory=PhaseDeadlines)
    timeout_policies: TimeoutPolicies = Field(default_factory=TimeoutPolicies)
    idle_timeouts_before_bot: int | None = Field(
        None,
        ge=1,
        description="consecutive timeouts after which the server may hand a seat to a bot; None = never",
    )
    show_agent_reasoning: bool = Field(
        True,
        description="whether, once the game is over, its players may read each bot or LLM seat's reasoning "
        "for its moves (GET /api/games/<id>/beliefs); false keeps it for researchers' exports only",
    )

    @field_validator("tom_orders")
    @classmethod
    def _check_orders(cls, value: list[list[int]]) -> list[list[int]]:
        normalised = []
        for seat, orders in enumerate(value):
            bad = [o for o in orders if o not in TOM_ORDERS]
            if bad:
                raise ValueError(f"seat {seat}: ToM orders must be 0, 1 or 2, got {bad}")
            if len(set(orders)) != len(orders):
                raise ValueError(f"seat {seat}: ToM orders repeat: {orders}")
            if orders and 0 not in orders:
                raise ValueError(f"seat {seat}: a seat that reports always reports order 0 (V0)")
            normalised.append(sorted(orders))
        return normalised

    @property
    def whole_runs(self) -> bool:
        """Whether crafts must run whole numbers of times (``crafting_runs == "whole"``)."""
        return self.crafting_runs == "whole"

    def orders_for(self, seat: int) -> tuple[int, ...]:
        """The ToM orders ``seat`` reports each turn (empty: none)."""
        if seat < len(self.tom_orders):
            return tuple(self.tom_orders[seat])
        return ()
