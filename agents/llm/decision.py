"""The connection one policy decision plays through: a :class:`~agents.connection.SeatConnection` over the
view a runner hands to ``Policy.act``.

A policy does not apply its own move: whoever runs it (the server, :func:`agents.local.play_local`, an
environment) validates and applies what ``act`` returns. So during a decision the agent's tools talk to a
:class:`DecisionConnection`:

- ``query`` answers from what the seat may see, with the engine's own query code
  (:func:`server.game.queries.answer_query` over a :class:`~server.game.queries.QueryContext` copied from
  the view, and the seat's own observed events for ``history``). Nothing advances.
- ``act`` checks the action with the engine's parser, against the legal action types and against what the
  view declares (a ToM report's items and seats, a proposal's items in the public hands), and on success
  holds it as the decision (``submitted``) instead of applying it. The runner applies it; if the engine
  refuses it after all (an item not held, a bad ToM report), the runner passes the engine's typed error to
  the policy's ``refused`` hook and asks again (:mod:`server.game.policy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from craft_rules.model import RuleSet
from server.game.actions import parse_action
from server.game.errors import GameError
from server.game.queries import History, QueryContext, answer_query, parse_query


class DecisionConnection:
    """A :class:`~agents.connection.SeatConnection` for one decision (see the module docstring)."""

    def __init__(
        self,
        view: Mapping[str, Any],
        legal: Sequence[str],
        rules: RuleSet,
        seat_log: Sequence[Mapping[str, Any]] = (),
        new_events: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._view = dict(view)
        self.legal = [kind for kind in legal if kind != "resign"]
        self.rules = rules
        self.seat_log = seat_log
        self._new = list(new_events)
        self.submitted: dict[str, Any] | None = None

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

    def act(self, action: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = parse_action(action)
        except GameError as err:
            return {"ok": False, "error": err.to_dict()}
        if self.submitted is not None:
            return _error(
                "not_your_turn",
                "You already chose your action for this decision; wait for its outcome.",
                {"submitted": self.submitted["type"]},
            )
        if parsed.type not in self.legal:
            return _error(
                "wrong_phase",
                f"'{parsed.type}' is not allowed now; allowed now: {', '.join(self.legal) or 'nothing'}.",
                {"action": parsed.type, "legal": list(self.legal)},
            )
        mismatch = self._view_check(parsed)
        if mismatch is not None:
            return mismatch
        self.submitted = parsed.model_dump(mode="json", exclude_defaults=False)
        return {"ok": True, "submitted": parsed.type}

    def _view_check(self, action: Any) -> dict[str, Any] | None:
        """The two refusals an LLM most often earns, caught against what the view declares (the duty's
        items and seats, the public hands) so a runner that cannot report a refusal back (a server's bot
        seat) rarely sees one; the engine still judges everything when the move is applied."""
        view, canonical = self._view, self.rules.canonical
        if action.type == "report_tom" and view.get("tom"):
            duty = view["tom"]
            items, seats = set(duty["items"]), {str(s) for s in duty["opponents"]}
            reports = [("v0", action.v0)]
            for order in (1, 2):
                given = getattr(action, f"v{order}")
                if given is not None and order in duty["orders"]:
                    if set(given) != seats:
                        return _error(
                            "invalid_tom_report",
                            f"v{order} must hold one value dict per other player, keyed by seat: "
                            f"{sorted(seats)}; got {sorted(given)}.",
                            {"field": f"v{order}", "expected_seats": sorted(seats), "got": sorted(given)},
                        )
                    reports += [(f"v{order}.{seat}", values) for seat, values in sorted(given.items())]
            for name, values in reports:
                keys = {canonical(item) for item in values}
                if keys != items:
                    missing, extra = sorted(items - keys), sorted(keys - items)
                    listed = (
                        f"missing: {', '.join(missing) or 'none'}; in no hand: {', '.join(extra) or 'none'}"
                    )
                    return _error(
                        "invalid_tom_report",
                        f"{name} must value exactly the items in the public hands, 0-10 each ({listed}).",
                        {"field": name, "missing": missing, "extra": extra},
                    )
        if action.type == "propose" and 0 <= action.to < len(view["hands"]):
            for side, seat, bundle in (
                ("offer", self.seat, action.offer),
                ("request", action.to, action.request),
            ):
                hand = view["hands"][seat]
                for item, count in bundle.items():
                    held = hand.get(canonical(item), 0)
                    if held < count:
                        whose = "you hold" if side == "offer" else f"Player {seat} holds"
                        return _error(
                            "item_not_held",
                            f"The {side} names {count} {item} but {whose} {held}; {side} only items "
                            f"{'you hold' if side == 'offer' else 'that player holds'}.",
                            {"side": side, "seat": seat, "item": item, "wanted": count, "held": held},
                        )
        return None

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
