"""One policy loop: local play, the environments' opponents and the server's bot seats all ask policies for
moves with the same decide step; a refused move is handled by the refusal strategy each runner chose.

The same refusing policy (it answers every move with a craft of a recipe that does not exist) meets:
- local play: ``RAISE`` (a policy that cannot hear why is given up at once, one that listens is told and
  asked again, then the game stops with the engine's error);
- an environment's opponent: ``FALLBACK`` (asked again, then the safe move is played);
- a server bot seat: ``RESEED_THEN_RESIGN`` (another seed per retry, or told why when it listens; then the
  seat resigns).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from agents.bots.random_bot import RandomBot
from agents.envs.gym_env import TradeCraftEnv
from agents.local import LocalPlayError, LocalProgress, play_local
from craft_rules.loader import load_rule_set
from craft_rules.tasks import iter_instances
from server.game import Game, GameSettings
from server.game.policy import FALLBACK, RAISE, RESEED_THEN_RESIGN, decide
from server.store.memory import MemoryStore
from server.table.config import Settings
from server.table.live import SeatState
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.timers import DeadlineScheduler

NO_SUCH_CRAFT = {"type": "craft", "recipe": "no_such_recipe", "runs": 1}


class Refuser:
    """Answers every move with an action the engine refuses; counts how often it was asked."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.asked = 0

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        self.asked += 1
        return dict(NO_SUCH_CRAFT)


class ListeningRefuser(Refuser):
    """The same, but it hears why (as an LLM agent does), and leaves a trace record each time."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.told: list[str] = []
        self._traces: list[dict[str, Any]] = []

    def refused(self, error: dict[str, Any]) -> None:
        self.told.append(error["code"])
        self._traces.append({"step": "heard", "code": error["code"]})

    def drain_traces(self) -> list[dict[str, Any]]:
        traces, self._traces = self._traces, []
        return traces


@pytest.fixture(scope="module")
def duel() -> tuple[Any, Any]:
    instance = next(iter(iter_instances("minecraft", "1p_v_1p")))
    return instance, load_rule_set("minecraft")


def test_the_decide_step_tells_observes_asks_and_keeps_apart_what_it_heard() -> None:
    policy = ListeningRefuser()
    decision = decide(policy, {"move_key": "1:craft:0"}, ["craft"], refusal={"code": "unknown_recipe"})
    assert decision.action == NO_SUCH_CRAFT and decision.failure is None
    assert decision.refusal_traces == [{"step": "heard", "code": "unknown_recipe"}] and decision.traces == []

    class Broken:
        def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
            raise RuntimeError("model unavailable")

    broken = decide(Broken(), {}, ["pass"])
    assert isinstance(broken.failure, RuntimeError) and broken.action is None


def test_local_play_raises_after_telling_a_listening_policy(duel: tuple[Any, Any]) -> None:
    instance, rules = duel
    settings = GameSettings(first_proposer=0)
    deaf = Refuser()
    with pytest.raises(LocalPlayError) as refused:
        play_local(instance, settings, rules, [deaf, RandomBot(1)])
    assert refused.value.seat == 0 and deaf.asked == 1  # it could not learn why: no second try

    listening = ListeningRefuser()
    with pytest.raises(LocalPlayError) as refused:
        play_local(instance, settings, rules, [listening, RandomBot(1)])
    assert listening.asked == RAISE.retries + 1 and len(listening.told) == RAISE.retries
    assert refused.value.code == listening.told[0]


def test_local_play_reports_its_progress_move_by_move(duel: tuple[Any, Any]) -> None:
    """What a caller streams into a store as the game goes is, put together, the whole game."""
    instance, rules = duel
    ticks = iter(range(1, 10**6))
    reports: list[LocalProgress] = []
    listening = ListeningRefuser()
    settings = GameSettings(first_proposer=0, max_turns=3)
    result = play_local(
        instance,
        settings,
        rules,
        [listening, RandomBot(1)],
        on_refusal=FALLBACK,
        clock=lambda: float(next(ticks)),
        on_progress=reports.append,
    )
    assert len(reports) == result.actions + result.timeouts + 1  # once before the first move, then per move
    assert [e for r in reports for e in r.events] == result.events
    assert [t for r in reports for t in r.times] == result.times
    assert [t for r in reports for t in r.traces] == result.traces and result.traces
    assert reports[0].events and reports[0].events[0].type == "game_started"


def test_an_environments_opponent_falls_back_to_the_safe_move(duel: tuple[Any, Any]) -> None:
    instance, _ = duel
    opponent = Refuser()
    env = TradeCraftEnv(instance, seat=0, opponents=opponent, settings={"first_proposer": 1}, max_turns=2)
    env.reset(seed=3)
    assert env.match is not None
    outcome = env.match.outcomes[1]
    assert outcome.fallbacks, "the opponent's refused moves were replaced by the safe move"
    first = outcome.fallbacks[0]
    assert len(first["after"]) == FALLBACK.retries + 1 and first["answer_ok"]
    # every move: asked again although deaf, then the fallback
    assert opponent.asked == (FALLBACK.retries + 1) * len(outcome.fallbacks)
    assert env.match.table.game.is_active(1)  # a fallback never resigns


def _bot_table(factory: Any, max_failures: int = 3) -> Table:
    settings = Settings.model_validate({"bots": {"move_delay_seconds": 0, "max_failures": max_failures}})
    return Table(
        settings,
        MemoryStore(),
        DeadlineScheduler(workers=2),
        BotRegistry(factory, lambda: ["refuser"], settings=settings),
    )


def _seat_a_refusing_bot(table: Table, duel: tuple[Any, Any]) -> Game:
    instance, rules = duel
    game = Game.new(instance, GameSettings(first_proposer=1), rules, seed=5)
    seats = [
        SeatState(seat=0, accepts="agent", kind="agent", name="Ann", user_id="ann"),
        SeatState(seat=1, accepts="bot", kind="bot", name="refuser", bot="refuser"),
    ]
    table.host("bot-game", game, seats)
    deadline = time.monotonic() + 20
    while game.is_active(1):
        assert time.monotonic() < deadline, "the refusing bot seat never resigned"
        time.sleep(0.02)
    return game


def test_a_server_bot_seat_is_reseeded_then_resigns(duel: tuple[Any, Any]) -> None:
    built: list[Refuser] = []

    def factory(spec: str, seed: int) -> Refuser:
        built.append(Refuser(seed))
        return built[-1]

    table = _bot_table(factory)
    try:
        game = _seat_a_refusing_bot(table, duel)
    finally:
        table.close()
    answers = RESEED_THEN_RESIGN.retries + 1
    assert [p.asked for p in built] == [1] * answers  # one try per policy: each retry has another seed
    assert len({p.seed for p in built}) == answers
    assert game.events[-1].type in ("resigned", "game_ended") and not game.is_active(1)


def test_a_server_bot_seat_that_listens_is_told_then_resigns(duel: tuple[Any, Any]) -> None:
    built: list[ListeningRefuser] = []

    def factory(spec: str, seed: int) -> ListeningRefuser:
        built.append(ListeningRefuser(seed))
        return built[-1]

    table = _bot_table(factory)
    try:
        _seat_a_refusing_bot(table, duel)
        traces = table.store.load_traces("bot-game")
    finally:
        table.close()
    assert len(built) == 1 and built[0].asked == RESEED_THEN_RESIGN.retries + 1
    assert len(built[0].told) == RESEED_THEN_RESIGN.retries
    heard = [t for t in traces if t.get("step") == "heard"]
    assert len(heard) == RESEED_THEN_RESIGN.retries and all(t["event_seq"] is None for t in heard)
