"""Whether each seat's target can still be made by any combination of all current hands.

A player whose target no combination of every active seat's public hand can craft any more (under the
game's crafting-runs rule, within one craft phase) cannot win; its view says so (``target_reachable``
False, see :mod:`server.game.views`), and only its own view.

Why it can be computed from the public hands alone, at any moment: trades move items between hands but
never change the pooled items; the pool shrinks only when a craft phase ends (crafts consume items,
quantities are rounded down) and when a seat resigns (its hand leaves the table). Crafting within one
phase from the pool can do whatever several phases could (rounding only loses), so one craftability
check of the pool is exact. During a craft phase the public hands are those at the phase's start, so a
player learns it at the start of the craft phase at the latest — in fact as soon as the hands that lost
the route are revealed — and, as the pool only shrinks, a lost target stays lost.

Privacy and cost: the check runs for every active seat at once, in the same way whether its target is
reachable or not, the first time any seat's view needs it after the pool changed; the answers are kept
per (pool, targets) so every later view is a dictionary lookup. Each seat's check has a CPU budget
(:data:`REACH_CPU_BUDGET_S`, :mod:`craft_rules.budget`); a check that runs out, or that the planner
refuses, decides nothing: the view says ``None`` (unknown), never "out of reach" on a guess. The answer
is a view field, not an event, so the event log (and replay) never depends on the machine's speed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from fractions import Fraction

from craft_rules.budget import BudgetExceeded, SearchTooLarge, cpu_budget
from craft_rules.errors import TradeCraftError
from craft_rules.planner import planner_for
from server.game.state import Game

REACH_CPU_BUDGET_S = 0.25
"""CPU seconds one seat's check may use. A craftability check of a pooled table costs milliseconds (a
plain LP, or a small integer program under the whole rule); past this the seat's answer is unknown."""

_CACHE_SIZE = 512
_cache: OrderedDict[tuple[object, ...], tuple[bool | None, ...]] = OrderedDict()
_cache_lock = threading.Lock()


def _pooled(game: Game) -> dict[str, int]:
    hands = game.hands
    pool: dict[str, int] = {}
    for seat in game.active_seats:
        for item, count in hands[seat].items():
            if count > 0:
                pool[item] = pool.get(item, 0) + count
    return pool


def reachable_targets(game: Game) -> tuple[bool | None, ...]:
    """Per seat: True when the pooled hands of the active seats can still craft its target, False when
    they cannot, None when unknown (the check ran out of budget) or not asked (a resigned seat)."""
    pool = _pooled(game)
    active = tuple(game.active_seats)
    targets = tuple(tuple(sorted(game.target(seat).items())) for seat in range(game.players))
    key = (
        id(game.rules),
        game.rules.name,
        game.settings.crafting_runs,
        tuple(sorted(pool.items())),
        active,
        targets,
    )
    with _cache_lock:
        known = _cache.get(key)
        if known is not None:
            _cache.move_to_end(key)
            return known
    answers = _check_all(game, pool, active)
    with _cache_lock:
        _cache[key] = answers
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return answers


def _check_all(game: Game, pool: dict[str, int], active: tuple[int, ...]) -> tuple[bool | None, ...]:
    planner = planner_for(game.rules, whole_runs=game.settings.whole_runs)
    planner.prepare()  # one-time imports and indexes: not charged to any seat's budget
    hand = {item: Fraction(count) for item, count in pool.items()}
    answers: list[bool | None] = []
    for seat in range(game.players):
        if seat not in active:
            answers.append(None)
            continue
        try:
            with planner.remembering(private=True), cpu_budget(REACH_CPU_BUDGET_S):
                answers.append(planner.can_craft(hand, game.target(seat)))
        except (BudgetExceeded, SearchTooLarge, TradeCraftError):
            answers.append(None)  # undecided: say nothing rather than something wrong
    return tuple(answers)


def target_reachable(game: Game, seat: int) -> bool | None:
    """The view's ``target_reachable`` for ``seat``: None before the game starts, once it is over, for a
    resigned seat, and when the check was undecided."""
    if game.finished or not game.is_active(seat) or game.phase == "starting":
        return None
    return reachable_targets(game)[seat]
