"""The work of ``GET /api/games/<id>/beliefs`` is bounded (server/web/beliefs.py :class:`BeliefsCache`): one
computation per game however many ask at once, at most ``at_once`` games computed together, and a request
that would wait longer than ``wait_seconds`` is refused ``too_busy`` (HTTP 503) rather than queued without
end. The real computation runs over real finished games of the in-process app; a gate around it holds it
open so that the requests meet while it runs."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_helpers import play_duel
from in_process import InProcessApp, MakeApp
from table_support import in_parallel

from server.table.errors import ServerError
from server.table.live import LiveGame
from server.table.master import Table
from server.web import beliefs
from server.web.beliefs import BeliefsCache, ComputedBeliefs


@pytest.fixture(scope="module")
def app(make_app: MakeApp) -> InProcessApp:
    return make_app()


def finished_duel(app: InProcessApp, n: int) -> str:
    p0, p1 = app.client(f"Bea {n}"), app.client(f"Cy {n}")
    created = p0.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]
    game_id: str = created["game"]["game_id"]
    assert p1.rest("POST", f"/api/games/{game_id}/join", {})[0] == 200
    p0.connect().call("join", {"game_id": game_id})
    p1.connect().call("join", {"game_id": game_id})
    play_duel(game_id, p0, p1)  # type: ignore[arg-type]
    return game_id


class Gate:
    """Holds each real computation until opened, and counts the computations of each game."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.started = threading.Semaphore(0)
        self.calls: Counter[str] = Counter()
        self._real = beliefs.compute

    def compute(self, table: Table, live: LiveGame) -> ComputedBeliefs:
        self.calls[live.game_id] += 1
        self.started.release()
        assert self.opened.wait(20), "the test never opened the gate"
        return self._real(table, live)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate()
    monkeypatch.setattr(beliefs, "compute", held.compute)
    yield held
    held.opened.set()


def get_in_thread(cache: BeliefsCache, table: Table, live: LiveGame, out: list[Any]) -> threading.Thread:
    def run() -> None:
        try:
            out.append(cache.get(table, live))
        except ServerError as err:
            out.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_burst_for_one_game_costs_one_computation(app: InProcessApp, gate: Gate) -> None:
    table = app.services.table
    live = table.get(finished_duel(app, 1))
    cache = BeliefsCache(at_once=1, wait_seconds=10)
    results: list[Any] = []
    threads = [get_in_thread(cache, table, live, results) for _ in range(6)]
    assert gate.started.acquire(timeout=10)
    time.sleep(0.2)  # the other five are waiting for this computation, not starting their own
    gate.opened.set()
    for thread in threads:
        thread.join(10)
    assert gate.calls[live.game_id] == 1 and len(results) == 6
    assert all(result is results[0] for result in results), results
    assert cache.get(table, live) is results[0] and gate.calls[live.game_id] == 1  # cached


def test_games_beyond_the_limit_are_refused_too_busy_within_the_wait(app: InProcessApp, gate: Gate) -> None:
    table = app.services.table
    first, second = (table.get(finished_duel(app, n)) for n in (2, 3))
    cache = BeliefsCache(at_once=1, wait_seconds=0.4)
    held: list[Any] = []
    thread = get_in_thread(cache, table, first, held)
    assert gate.started.acquire(timeout=10)
    began = time.monotonic()
    with pytest.raises(ServerError) as refused:
        cache.get(table, second)  # the one slot is taken
    assert refused.value.code == "too_busy" and refused.value.status == 503
    with pytest.raises(ServerError) as waited:
        cache.get(table, first)  # its own computation runs longer than the wait
    assert waited.value.code == "too_busy"
    assert time.monotonic() - began < 3, "a refused request waited far longer than wait_seconds"
    assert gate.calls == Counter({first.game_id: 1})  # neither refusal computed anything
    gate.opened.set()
    thread.join(10)
    assert isinstance(held[0], ComputedBeliefs)
    assert cache.get(table, second).players == 2  # the slot is free again
    assert cache._computations == {}, "a finished computation left its entry behind"


def test_the_route_answers_too_busy_typed(make_app: MakeApp, gate: Gate) -> None:
    app = make_app()
    games = [finished_duel(app, n) for n in (4, 5)]
    app.flask.extensions["tradecraft_beliefs"] = BeliefsCache(at_once=1, wait_seconds=0.3)
    viewer = app.client("Dee Viewer")

    def ask(game_id: str) -> tuple[int, dict[str, Any]]:
        return viewer.rest("GET", f"/api/games/{game_id}/beliefs")

    def second() -> tuple[int, dict[str, Any]]:
        assert gate.started.acquire(timeout=10)
        answer = ask(games[1])
        gate.opened.set()
        return answer

    (status, body), (busy_status, busy) = in_parallel([lambda: ask(games[0]), second])
    assert status == 200 and body["game_id"] == games[0], body
    assert (busy_status, busy["error"]["code"]) == (503, "too_busy"), busy
    assert busy["error"]["details"]["retry_after"] >= 1
    assert ask(games[1])[0] == 200
