"""Bounds on one planning computation (an in-phase query): a size limit decided before each solve, and
a CPU budget as a backstop.

**The size limit** (:func:`exact_search_limit`) is what bounds a query's work, deterministically: a
search for items to obtain (a mixed-integer program) with more integer columns than the limit is not
solved as one. Its relaxation (a plain LP, milliseconds) is solved instead and marked ``relaxed``; the
callers verify every LP answer by executing a plan anyway, and where a relaxed answer does not verify
they raise :class:`SearchTooLarge` instead of answering from it. HiGHS needs from milliseconds to
seconds for the same number of integer columns (the search for what to obtain from anywhere has 110-170
candidate items; 64 powered rails take 1 s at 141, 64 gray banners 7 ms at 168), so the limit sits below
the smallest size seen to be slow. The answer therefore depends on the question alone, never on how busy
the machine is. Craftability (``ExactCrafts.solve_plan``, also the check of every answer) is exempt
(:func:`without_size_limit`): whether a hand can craft a target is always answered exactly.

**The CPU budget** (:func:`cpu_budget`, checked before every LP build, solve and execution round by
:func:`check`) counts the calling thread's CPU time; it is a backstop set well above what an admitted
computation costs, so no answer depends on it in practice. An exhausted budget raises
:class:`BudgetExceeded`; the caller answers with a typed refusal, never a cut-short answer.

Without either (bots, task generation, the CLI) nothing changes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

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


class SearchTooLarge(TradeCraftError):
    """The exact search was over the size limit and its relaxation's answer did not verify."""

    def __init__(self, integer_columns: int, limit: int):
        super().__init__(
            "search_too_large",
            f"the exact search has {integer_columns} integer columns, over the limit of {limit}, and its "
            "relaxation's answer did not verify",
            {"integer_columns": integer_columns, "limit": limit},
        )


_state = threading.local()


@dataclass
class SearchLimit:
    """One :func:`exact_search_limit` block: its limit, and whether an answer given inside it came from
    a relaxation (verified by executing a plan, but not proven the fewest items)."""

    integer_columns: int
    approximated: bool = False


@contextmanager
def exact_search_limit(integer_columns: int) -> Iterator[SearchLimit]:
    """Within the block, this thread's planner solves no mixed-integer program with more than
    ``integer_columns`` integer columns: it solves the relaxation and marks the answer relaxed."""
    outer: SearchLimit | None = getattr(_state, "limit", None)
    block = SearchLimit(integer_columns if outer is None else min(outer.integer_columns, integer_columns))
    _state.limit = block
    try:
        yield block
    finally:
        if outer is not None and block.approximated:
            outer.approximated = True
        _state.limit = outer


#: Integer columns an exact check of a relaxed answer may have (a whole-runs craftability solve of the hand
#: plus the items to obtain). Larger checks took up to 120 ms (64 magenta carpets: 72 columns); a check not
#: run leaves the answer unverified, so the field is null and marked unknown, never a guess.
RELAXED_CHECK_MAX_INTEGER_COLUMNS = 60


@contextmanager
def relaxed_check() -> Iterator[None]:
    """Within the block (checking a relaxed answer inside a size-limited search), this thread's planner
    solves no mixed-integer program over :data:`RELAXED_CHECK_MAX_INTEGER_COLUMNS` integer columns: the solve
    answers "no plan". Outside a size-limited search the block changes nothing."""
    outer = getattr(_state, "check_limit", None)
    if getattr(_state, "limit", None) is not None:
        _state.check_limit = RELAXED_CHECK_MAX_INTEGER_COLUMNS
    try:
        yield
    finally:
        _state.check_limit = outer


def check_limit() -> int | None:
    """This thread's limit on a relaxed answer's exact check (:func:`relaxed_check`), or None."""
    limit: int | None = getattr(_state, "check_limit", None)
    return limit


def note_approximated() -> None:
    """Record in the enclosing :func:`exact_search_limit` block that an answer is approximate."""
    block: SearchLimit | None = getattr(_state, "limit", None)
    if block is not None:
        block.approximated = True


@contextmanager
def without_size_limit() -> Iterator[None]:
    """Within the block, this thread's planner solves every program exactly, whatever limit an
    enclosing :func:`exact_search_limit` set: whether a hand can craft a target is never approximated."""
    outer: SearchLimit | None = getattr(_state, "limit", None)
    _state.limit = None
    try:
        yield
    finally:
        _state.limit = outer


def exact_limit() -> int | None:
    """This thread's limit on integer columns (:func:`exact_search_limit`), or None."""
    block: SearchLimit | None = getattr(_state, "limit", None)
    return None if block is None else block.integer_columns


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
