"""A CPU budget for one planning computation (an in-phase query), checked before each costly step.

The planner's cost cannot be told from its input alone (64 grindstones plan in 10 ms from one hand and a
hand of every raw material makes a mixed-integer program of 1,000 columns that HiGHS needs seconds for),
so a caller that must bound it sets a budget around the work (:func:`cpu_budget`); the planner checks it
before every LP/MILP build, solve and execution round (:func:`check`) and caps each solver call at what
is left (:func:`remaining`). An exhausted budget raises :class:`BudgetExceeded`; the caller answers with
a typed refusal instead of a partial, possibly wrong answer. Without a budget nothing changes.

The budget counts the calling thread's CPU time (``time.thread_time``), so other requests of a busy
server do not use it up; HiGHS only takes a wall-clock limit, which is never shorter than the CPU time
the solve spends, so a solve is stopped at the latest when the budget is gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from craft_rules.errors import TradeCraftError


class BudgetExceeded(TradeCraftError):
    """The computation used up its CPU budget before it had an answer."""

    def __init__(self, budget_s: float):
        super().__init__(
            "budget_exceeded",
            f"the planner needed more than its budget of {budget_s * 1000:.0f} ms of CPU",
            {"budget_ms": round(budget_s * 1000)},
        )
        self.budget_s = budget_s


_state = threading.local()


@contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    """Within the block, this thread's planning work may use ``seconds`` of CPU time; an enclosing
    budget still applies when it ends sooner."""
    outer: tuple[float, float] | None = getattr(_state, "budget", None)
    deadline = time.thread_time() + seconds
    if outer is not None and outer[0] < deadline:
        deadline, seconds = outer
    _state.budget = (deadline, seconds)
    try:
        yield
    finally:
        _state.budget = outer


def remaining() -> float | None:
    """Seconds of CPU left in this thread's budget (at least 0), or None when no budget is set."""
    budget: tuple[float, float] | None = getattr(_state, "budget", None)
    if budget is None:
        return None
    return max(0.0, budget[0] - time.thread_time())


def check() -> None:
    """Raise :class:`BudgetExceeded` if this thread's budget is used up."""
    budget: tuple[float, float] | None = getattr(_state, "budget", None)
    if budget is not None and time.thread_time() >= budget[0]:
        raise BudgetExceeded(budget[1])


def budget_seconds() -> float:
    """The CPU seconds this thread's budget allowed in all (0 when no budget is set)."""
    budget: tuple[float, float] | None = getattr(_state, "budget", None)
    return 0.0 if budget is None else budget[1]
