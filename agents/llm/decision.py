"""The connection one policy decision plays through: a :class:`~agents.connection.SeatConnection` over the
view a runner hands to ``Policy.act``.

A policy does not apply its own move: whoever runs it (the server, :func:`agents.local.play_local`, an
environment) validates and applies what ``act`` returns. So during a decision the agent's tools talk to a
:class:`DecisionConnection`:

- ``query`` answers from what the seat may see, with the engine's own query code
  (:func:`server.game.queries.answer_query` over a :class:`~server.game.queries.QueryContext` copied from
  the view, and the seat's own observed events for ``history``). Nothing advances.
- ``act`` parses the action with the engine's parser (the only parse on its way to the engine: the parsed
  model is what the runner submits) and judges it with the engine's own checks over the view
  (:func:`server.game.checks.check_against_view`: whose move it is, a ToM report's seats and items, a
  proposal's items in the public hands, a craft on the crafting hand), refusing it with the very error the
  engine would raise; on success it holds the model as the decision (``submitted``) instead of applying it.
  The runner applies it; if the engine refuses it after all (the game moved on), the runner passes the
  engine's typed error to the policy's ``refused`` hook and asks again (:mod:`server.game.policy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from craft_rules.model import RuleSet
from server.game.actions import Action, parse_action
from server.game.checks import check_against_view
from server.game.errors import GameError
from server.game.queries import History, QueryContext, answer_query, parse_query


class DecisionConnection:
    """A :class:`~agents.connection.SeatConnection` for one decision (see the module docstring)."""

    def __init__(
        self,
        view: Mapping[str, Any],
        rules: RuleSet,
        seat_log: Sequence[Mapping[str, Any]] = (),
        new_events: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._view = dict(view)
        self.rules = rules
        self.seat_log = seat_log
        self._new = list(new_events)
        self.submitted: Action | None = None
        """The parsed action the decision chose: the runner submits this very model (parsed once)."""

    @property
    def seat(self) -> int:
        return int(self._view["seat"])

    @property
    def finished(self) -> bool:
        return bool(self._view["finished"])

    def view(self) -> dict[str, Any]:
        return self._view

    def events(self) -> list[dict[str, Any]]:
        new, self._new = self._new, []
        return [dict(e) for e in new]

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        return True  # a decision is only made when the seat is awaited

    def act(self, action: dict[str, Any] | Action) -> dict[str, Any]:
        try:
            parsed = parse_action(action)
            if self.submitted is not None:
                return _error(
                    "not_your_turn",
                    "You already chose your action for this decision; wait for its outcome.",
                    {"submitted": self.submitted.type},
                )
            check_against_view(self._view, parsed, self.rules)
        except GameError as err:
            return {"ok": False, "error": err.to_dict()}
        self.submitted = parsed
        return {"ok": True, "submitted": parsed.type}

    def query(self, query: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = parse_query(query)
            answer = answer_query(self._context(parsed), parsed)
        except GameError as err:
            return {"ok": False, "error": err.to_dict()}
        return {"ok": True, "answer": answer}

    def _context(self, query: Any) -> QueryContext:
        view = self._view
        seat = self.seat
        hands = tuple(dict(h) for h in view["hands"])
        if view.get("crafting_hand") is not None:
            own = {k: Fraction(v) for k, v in view["crafting_hand"].items()}
            kind = "crafting"
        else:
            own = {k: Fraction(v) for k, v in hands[seat].items()}
            kind = "public"
        events: tuple[dict[str, Any], ...] = ()
        if isinstance(query, History):
            chosen = [e for e in self.seat_log if e["n"] >= query.since_n][: query.limit]
            events = tuple(dict(e) for e in chosen)
        return QueryContext(
            rules=self.rules,
            seat=seat,
            players=view["players"],
            public_hands=hands,
            own_hand=own,
            own_hand_kind=kind,  # type: ignore[arg-type]
            target=dict(view["target"] or {}),
            events=events,
            log_size=view["log_size"],
            whole_runs=(view.get("rules") or {}).get("crafting_runs") == "whole",
        )


def _error(code: str, message: str, details: Mapping[str, Any]) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "details": dict(details)}}
