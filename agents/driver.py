"""Run any policy over any seat connection until the game ends: the one loop every player runs.

:func:`run_seat` waits for the seat's turn, then asks the policy for a move with the one decide step every
runner calls (:func:`server.game.policy.decide`: the seat's new events, ``act(view, legal)``, its traces) and
sends it. A refused action (a typed error; the game did not change) is handled by the runner's
:class:`~server.game.policy.OnRefusal` strategy, here ``FALLBACK`` by default: the policy is told why
(``refused(error)``, when it has that hook) and asked again up to ``retries`` more times with the fresh view;
then the driver sends a **fallback**: a safe legal action (:func:`server.game.legal.fallback_action`) and logs
it, so a confused policy can never hang a game. A policy that raises counts as a refusal too. Traces the
policy keeps (``drain_traces``) are collected after each move with the seat, the number ``n`` of the first
event the move produced in the seat's log (null if refused) and the time; a connection with ``record_traces``
(a remote agent's) also hands them to the server, which keeps them with the game for researchers.

:func:`take_turn` is one such decision; the environments use it to move the seats their learner does not
play.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.connection import SeatConnection
from server.game.policy import FALLBACK, OnRefusal, Policy, decide, drain_traces, listens, observe

log = logging.getLogger(__name__)

MAX_STALE_ROUNDS = 20
"""Refusals that say the view was stale (the turn moved on meanwhile) are not the policy's fault; after
this many in a row the driver gives up on the move rather than spin."""
STALE_CODES = frozenset(
    {"not_your_turn", "wrong_phase", "already_finished", "conflict", "game_over", "answer_failed"}
)
"""Refusals that may mean "the game moved on since your view" (or, ``answer_failed``, "it was applied but the
answer was lost"): when the re-read view shows the game did move on, the driver asks again without counting
a failure; when it did not, the policy sent the wrong thing and the refusal counts like any other."""
SEAT_LOST_CODES = frozenset({"seat_taken_over", "not_your_seat", "spectator", "player_left"})
"""Refusals that mean the seat is no longer this player's to play (an idle seat handed to a bot, a
resigned seat): the driver stops instead of trying again."""


@dataclass
class SeatOutcome:
    """What :func:`run_seat` did: counts, the fallbacks it had to send, the traces, the final view."""

    seat: int
    actions: int = 0
    refusals: list[dict[str, Any]] = field(default_factory=list)
    """Every refused action: ``{"action", "error"}`` (the server's ``{code, message, details}``)."""
    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    """Every fallback sent: ``{"action", "after"}`` (the refusals or the exception that led to it)."""
    traces: list[dict[str, Any]] = field(default_factory=list)
    final_view: dict[str, Any] | None = None
    seat_lost: dict[str, Any] | None = None
    """The refusal that took the seat away (``SEAT_LOST_CODES``), if the driver stopped for it."""

    @property
    def winners(self) -> list[int]:
        return list((self.final_view or {}).get("winners") or [])

    def summary(self) -> dict[str, Any]:
        view = self.final_view or {}
        return {
            "seat": self.seat,
            "actions": self.actions,
            "refusals": len(self.refusals),
            "fallbacks": len(self.fallbacks),
            "traces": len(self.traces),
            "winners": self.winners,
            "end_reason": view.get("end_reason"),
            "turns": view.get("turn"),
            "finished": bool(view.get("finished")),
            "seat_lost": (self.seat_lost or {}).get("code"),
        }


def _seat_lost(error: dict[str, Any], seat: int) -> bool:
    """Whether a refusal means this seat is no longer ours to play. ``player_left`` counts only when it
    names this seat: a proposal to a seat that resigned is refused with the same code (just a bad move)."""
    code = error.get("code")
    if code == "player_left":
        return (error.get("details") or {}).get("seat") == seat
    return code in SEAT_LOST_CODES


def _moved_on(conn: SeatConnection, view: dict[str, Any]) -> bool:
    """Whether the game moved on since ``view`` (so a "wrong phase" refusal was the view's age, not the
    policy's mistake): the seat's log grew or its move changed, once a remote connection has re-read."""
    refresh = getattr(conn, "refresh", None)  # a remote connection re-reads the view
    if refresh is not None:
        refresh()
    fresh = conn.view()
    return fresh.get("log_size") != view.get("log_size") or fresh.get("move_key") != view.get("move_key")


def _first_n(answer: dict[str, Any]) -> int | None:
    events = answer.get("events") or []
    return events[0]["n"] if events else None


def take_turn(
    policy: Policy,
    conn: SeatConnection,
    outcome: SeatOutcome,
    *,
    on_refusal: OnRefusal = FALLBACK,
    clock: Callable[[], float] = time.time,
) -> bool:
    """One decision for ``conn``'s seat, which must be awaited now: the one decide step
    (:func:`server.game.policy.decide`), sent over the connection; a refusal handled by ``on_refusal``
    (default :data:`~server.game.policy.FALLBACK`: asked again, then the safe move).

    Returns True when an action was applied (the policy's or the fallback), False when the seat turned
    out not to be awaited (the game moved on) or nothing could be applied.
    """
    events, refusal = conn.events(), None
    failures: list[dict[str, Any]] = []
    stale = 0
    while True:
        view = conn.view()
        if view.get("finished") or not view.get("your_turn"):
            return False
        decision = decide(policy, view, view.get("legal_actions") or [], events, refusal)
        _keep_traces(decision.refusal_traces, conn, outcome, None, clock)
        events, refusal = [], None
        if decision.failure is not None:  # a broken policy must not hang the game: a failed answer
            err = decision.failure
            log.warning("seat %s: the policy raised %s: %s", conn.seat, type(err).__name__, err)
            _keep_traces(decision.traces, conn, outcome, None, clock)
            error: dict[str, Any] = {"code": "policy_failed", "message": str(err)}
            action = None
        else:
            action = decision.action
            answer = conn.act(action)
            _keep_traces(
                decision.traces, conn, outcome, _first_n(answer) if answer.get("ok") else None, clock
            )
            if answer.get("ok"):
                outcome.actions += 1
                return True
            error = answer.get("error") or {}
            outcome.refusals.append({"action": action, "error": error})
            if _seat_lost(error, conn.seat):
                log.warning(
                    "seat %s: no longer ours to play (%s): %s", conn.seat, error["code"], error.get("message")
                )
                outcome.seat_lost = error
                return False
            refusal = error  # a policy that can learn from it (an LLM agent) hears why first
            if error.get("code") in STALE_CODES and _moved_on(conn, view):
                stale += 1
                if stale > MAX_STALE_ROUNDS:
                    return False
                continue
            log.info("seat %s: action refused (%s): %s", conn.seat, error.get("code"), error.get("message"))
        failures.append({"action": action, "error": error})
        events = conn.events()
        if on_refusal.next_try(len(failures), listens(policy)) != "ask_again":
            break  # a connection holds no factory to reseed from: reseeding gives up too
    view = conn.view()
    if view.get("finished") or not view.get("your_turn"):
        return False
    action = on_refusal.final_action(view)
    if action is None:
        return False
    answer = conn.act(action)
    log.warning(
        "seat %s: %s %s after %d failed attempt(s): %s",
        conn.seat,
        on_refusal.then,
        action["type"],
        len(failures),
        "; ".join(f"{f['error'].get('code')}" for f in failures),
    )
    outcome.fallbacks.append({"action": action, "after": failures, "answer_ok": bool(answer.get("ok"))})
    if answer.get("ok"):
        outcome.actions += 1
        return True
    outcome.refusals.append({"action": action, "error": answer.get("error") or {}})
    return False


def _keep_traces(
    records: list[dict[str, Any]],
    conn: SeatConnection,
    outcome: SeatOutcome,
    first_n: int | None,
    clock: Callable[[], float],
) -> None:
    now = clock()
    for record in records:
        outcome.traces.append({**record, "seat": conn.seat, "event_n": first_n, "time": now})
    keep = getattr(conn, "record_traces", None)  # a remote agent's records go to the server's game log
    if records and keep is not None:
        try:
            answer = keep(records, first_n)
        except Exception as err:  # traces are for researchers: losing some must not stop the game
            answer = {"ok": False, "error": {"code": type(err).__name__, "message": str(err)}}
        if not answer.get("ok"):
            log.warning("seat %s: trace records not kept by the server: %s", conn.seat, answer.get("error"))


def run_seat(
    policy: Policy,
    conn: SeatConnection,
    *,
    on_refusal: OnRefusal = FALLBACK,
    turn_timeout: float | None = None,
    on_move: Callable[[SeatOutcome], None] | None = None,
) -> SeatOutcome:
    """Play ``conn``'s seat with ``policy`` until the game ends (or the seat is no longer ours: an idle
    seat handed to a bot, see ``outcome.seat_lost``); what happened.

    ``turn_timeout``: give up (``TimeoutError``) when the seat waits longer than this for its turn (None:
    wait as long as the game runs; a server's deadlines and bots keep games moving). ``on_move`` is called
    after each applied action (e.g. to print progress).
    """
    outcome = SeatOutcome(seat=conn.seat)
    while not conn.finished and outcome.seat_lost is None:
        if not conn.wait_for_turn(timeout=turn_timeout):
            raise TimeoutError(f"seat {conn.seat} waited more than {turn_timeout} s for its turn")
        if conn.finished:
            break
        if take_turn(policy, conn, outcome, on_refusal=on_refusal):
            if on_move is not None:
                on_move(outcome)
        else:
            time.sleep(0.05)  # the game moved on under us: let the connection catch up
    observe(policy, conn.events())  # the end: targets revealed, game ended
    _keep_traces(drain_traces(policy), conn, outcome, None, time.time)
    outcome.final_view = conn.view()
    return outcome
