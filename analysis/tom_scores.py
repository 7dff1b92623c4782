"""Every reported ToM value next to its ground truth, as docs/reference-values.md defines it.

One row per reported value (:data:`COLUMNS`), from a game log and its rule set:

- V0 (``order`` 0): the reference values of the reporter's own target (``reference_kind`` ``own_target``).
- V1 about opponent ``j``: the reference values of ``j``'s target (``opponent_target``); ``opponent_report``
  holds ``j``'s own V0 of the same turn when it reported one.
- V2 about ``j``: ``j``'s V1 about the reporter in the same turn when ``j`` reported one
  (``opponent_v1_report``); otherwise the reference values of the reporter's own target (``own_target``:
  the V1 an opponent would hold had it inferred the target exactly, e.g. in the paper's V0+V1+V2 vs V0
  configuration).

Reference values are computed over the public hands at the start of the turn (the items a report covers),
under the rule set the log names and the game's crafting-runs rule (a ``whole`` game's references count
whole runs only). Unlike :mod:`analysis.tables` this needs the rule set (it solves); without one
(``rules=None``: the rule set cannot be found or has changed) every row is still given, with the
opponent's same-turn reports, and ``reference`` is missing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from craft_rules.model import RuleSet
from craft_rules.values import reference_values
from server.game.gamelog import GameLog

COLUMNS: tuple[str, ...] = (
    "game_id", "turn", "seat", "order", "opponent_seat", "item", "value", "reference", "reference_kind",
    "opponent_report",
)  # fmt: skip


def tom_score_rows(log: GameLog, rules: RuleSet | None) -> Iterator[dict[str, Any]]:
    """Rows of :data:`COLUMNS` for every value of every ToM report in ``log`` (empty without an instance);
    ``reference`` is missing where ``rules`` is None."""
    instance = log.header.instance
    if instance is None:
        return
    whole_runs = log.header.settings.get("crafting_runs") == "whole"
    targets = [dict(target) for target in instance.targets]
    hands: list[dict[str, int]] = [dict(hand) for hand in instance.hands]
    turn, reports, turn_hands = 0, {}, hands
    for event in log.events:
        payload = event.payload
        if event.type == "phase_started" and payload.get("turn") != turn:
            yield from _turn_rows(log.game_id, turn, reports, turn_hands, targets, rules, whole_runs)
            turn, reports = int(payload.get("turn") or 0), {}
        if event.type in ("game_started", "hands_revealed"):
            hands = [dict(hand) for hand in payload["hands"]]
        if event.type == "tom_reported":
            if not reports:
                turn_hands = hands  # reports open a turn, before any trade moves the public hands
            reports[int(payload["seat"])] = payload
    yield from _turn_rows(log.game_id, turn, reports, turn_hands, targets, rules, whole_runs)


def _turn_rows(
    game_id: str,
    turn: int,
    reports: Mapping[int, Mapping[str, Any]],
    hands: list[dict[str, int]],
    targets: list[dict[str, int]],
    rules: RuleSet | None,
    whole_runs: bool,
) -> Iterator[dict[str, Any]]:
    references: dict[int, dict[str, int]] = {}

    def truth(seat: int) -> dict[str, int]:
        if rules is None:
            return {}
        if seat not in references:
            references[seat] = reference_values(rules, targets[seat], hands, whole_runs=whole_runs)
        return references[seat]

    for seat, payload in sorted(reports.items()):
        common = {"game_id": game_id, "turn": turn, "seat": seat}
        for item, value in sorted((payload.get("v0") or {}).items()):
            yield {
                **common, "order": 0, "opponent_seat": None, "item": item, "value": value,
                "reference": truth(seat).get(item), "reference_kind": "own_target", "opponent_report": None,
            }  # fmt: skip
        for key, order in (("v1", 1), ("v2", 2)):
            for opponent_key, values in sorted((payload.get(key) or {}).items(), key=lambda kv: int(kv[0])):
                opponent = int(opponent_key)
                theirs = reports.get(opponent) or {}
                if order == 1:
                    reference, kind = truth(opponent), "opponent_target"
                    reported = theirs.get("v0") or {}
                else:
                    reported = (theirs.get("v1") or {}).get(str(seat)) or {}
                    reference, kind = (
                        (reported, "opponent_v1_report") if reported else (truth(seat), "own_target")
                    )
                for item, value in sorted(values.items()):
                    yield {
                        **common, "order": order, "opponent_seat": opponent, "item": item, "value": value,
                        "reference": reference.get(item), "reference_kind": kind,
                        "opponent_report": reported.get(item),
                    }  # fmt: skip
