"""Edge cases of the language API found in review: a policy object shared by seats, a proposal to a seat
that resigned, unreadable strict-mode arguments, and a trace record with a ``kind`` of its own."""

from __future__ import annotations

from typing import Any

import pytest

from agents.bots.random_bot import RandomBot
from agents.driver import SeatOutcome, take_turn
from agents.envs.core import make_policies
from agents.llm.tools import SeatTools
from agents.local import play_local
from agents.local_connection import LocalTable
from craft_rules.loader import load_rule_set
from craft_rules.tasks import iter_instances
from server.game import GameSettings
from server.game.legal import fallback_action


@pytest.fixture(scope="module")
def rules():
    return load_rule_set("minecraft")


def trio_with_seat_1_resigned(rules: Any) -> LocalTable:
    instance = next(iter(iter_instances("minecraft", "1p_v_1p_v_1p")))
    table = LocalTable.new(instance, GameSettings(allow_pass=False, first_proposer=0), rules, 1)
    table.apply(1, {"type": "resign"})
    return table


def test_one_policy_object_cannot_play_several_seats() -> None:
    bot = RandomBot(1)
    with pytest.raises(ValueError, match="cannot play several seats"):
        make_policies(bot, [1, 2], seed=0)
    assert make_policies([RandomBot(1), RandomBot(2)], [1, 2], seed=0)[2] is not None
    made = make_policies("random", [1, 2], seed=0)
    assert made[1] is not made[2]


class ProposesToTheLeaver:
    """Proposes to seat 1 (which resigned) once, then behaves."""

    def __init__(self) -> None:
        self.tries = 0

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        self.tries += 1
        if self.tries == 1:
            item = sorted(view["hands"][0])[0]
            return {"type": "propose", "to": 1, "offer": {item: 1}, "request": {}, "message": ""}
        return fallback_action(view)


def test_a_proposal_to_a_seat_that_left_is_a_bad_move_not_a_lost_seat(rules: Any) -> None:
    table = trio_with_seat_1_resigned(rules)
    conn = table.connection(0)
    outcome = SeatOutcome(seat=0)
    assert take_turn(ProposesToTheLeaver(), conn, outcome)
    assert outcome.seat_lost is None
    assert [r["error"]["code"] for r in outcome.refusals] == ["player_left"]
    assert conn.view()["pending_proposal"]["to"] == 2  # the retry went to a seat still playing


def test_the_fallback_never_proposes_to_a_seat_that_left(rules: Any) -> None:
    table = trio_with_seat_1_resigned(rules)
    action = fallback_action(table.connection(0).view())
    assert action is not None and action["type"] == "propose" and action["to"] == 2


@pytest.mark.parametrize(
    "args",
    [
        {"to": 1, "offer": [{"item": ["coal"], "count": 1}], "request": [], "message": ""},
        {"to": 1, "offer": [{"item": {"a": 1}, "count": 1}], "request": [], "message": ""},
    ],
)
def test_unreadable_strict_arguments_are_a_typed_error_and_change_nothing(rules: Any, args: dict) -> None:
    instance = next(iter(iter_instances("minecraft", "1p_v_1p")))
    table = LocalTable.new(instance, GameSettings(first_proposer=0), rules, 1)
    before = table.game.log_digest()
    answer = SeatTools(table.connection(0), strict=True).call("propose", args)
    assert answer["ok"] is False and answer["error"]["code"] == "invalid_action", answer
    assert table.game.log_digest() == before


class TracesWithItsOwnKind(RandomBot):
    def drain_traces(self) -> list[dict[str, Any]]:
        return [{"kind": "decision", "note": "mine"}]


def test_a_trace_record_with_a_kind_of_its_own_is_kept(rules: Any) -> None:
    instance = next(iter(iter_instances("minecraft", "1p_v_1p")))
    result = play_local(
        instance, GameSettings(max_turns=1), rules, [TracesWithItsOwnKind(1), RandomBot(2)], 0
    )
    kept = [t.model_dump() for t in result.traces]
    assert kept and all(t["kind"] == "trace" and t["trace_kind"] == "decision" for t in kept)
