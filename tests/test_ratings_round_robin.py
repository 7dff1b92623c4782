"""A seeded round-robin of built-in bots on a real server: the leaderboard orders them as their head-to-head
results do (ToM-1 above ToM-0 above random).

Every ordered pair of random, tom0 and tom1 plays the first four paper instances (each seat order, a fixed
seed per game, set by a researcher), all games at once on one server process; then the leaderboard's JSON
must put each bot above every bot it beat more often than it lost to.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from e2e_helpers import Client, MakeServer, ServerProcess

BOTS = ("random", "tom0", "tom1")
INSTANCES = [f"minecraft/1p_v_1p/paper#{k}" for k in range(4)]
ROUND_ROBIN_HALL = {
    "ruleset": "minecraft",
    "mode": "1p_v_1p",
    "players": 2,
    "instances": {"choice": "fixed", "set": "paper", "first": len(INSTANCES)},
    "game": {"max_turns": 10},
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(overrides={"halls": {"league": ROUND_ROBIN_HALL}, "ratings": {"min_games": 4}})


def play_round_robin(researcher: Client) -> list[dict[str, Any]]:
    """Create every game (seeded, an exact instance each), then wait for all of them to finish."""
    game_ids = []
    for index, (instance, (first, second)) in enumerate(
        itertools.product(INSTANCES, itertools.permutations(BOTS, 2))
    ):
        status, body = researcher.rest(
            "POST",
            "/api/games",
            {
                "hall": "league",
                "seats": [{"kind": "bot", "bot": first}, {"kind": "bot", "bot": second}],
                "instance_id": instance,
                "seed": 1000 + index,
            },
        )
        assert status == 201 and body["ok"], body
        game_ids.append(body["game"]["game_id"])
    finished: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 240
    while len(finished) < len(game_ids):
        assert time.monotonic() < deadline, f"only {len(finished)} of {len(game_ids)} games finished"
        for game_id in game_ids:
            if game_id not in finished:
                status, body = researcher.rest("GET", f"/api/games/{game_id}")
                assert status == 200, body
                if body["game"]["status"] in ("finished", "aborted"):
                    assert body["game"]["status"] == "finished", body
                    finished[game_id] = body["game"]
        time.sleep(0.5)
    return list(finished.values())


def head_to_head(games: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(a, b) -> games a won and b did not."""
    beat: dict[tuple[str, str], int] = dict.fromkeys(itertools.permutations(BOTS, 2), 0)
    for game in games:
        specs = [seat["bot"] for seat in game["seats"]]
        winners = set(game["winners"])
        for a, b in itertools.permutations(range(2), 2):
            if a in winners and b not in winners:
                beat[(specs[a], specs[b])] += 1
    return beat


def test_the_leaderboard_orders_bots_as_their_head_to_head_results(server: ServerProcess) -> None:
    researcher = Client(server.url, "Researcher").as_researcher()
    try:
        started = time.monotonic()
        games = play_round_robin(researcher)
        played_seconds = time.monotonic() - started
        beat = head_to_head(games)
        # the premise: on these seeds ToM-1 beats ToM-0 and both beat random more often than they lose
        for better, worse in (("tom1", "tom0"), ("tom0", "random"), ("tom1", "random")):
            assert beat[(better, worse)] > beat[(worse, better)], (better, worse, beat)

        games_each = 2 * len(INSTANCES) * (len(BOTS) - 1)
        deadline = time.monotonic() + 15  # the leaderboard is cached for a few seconds per process
        while True:
            status, board = researcher.rest("GET", "/api/leaderboard")
            assert status == 200 and board["ok"], board
            if sum(row["games"] for row in board["players"]) == games_each * len(BOTS):
                break
            assert time.monotonic() < deadline, board
            time.sleep(1)
        rows = {row["spec"]: row for row in board["players"]}
        assert set(rows) == set(BOTS), board  # no person played: only the three bots are rated
        assert all(rows[b]["games"] == games_each and rows[b]["kind"] == "bot" for b in BOTS), rows
        order = [row["spec"] for row in board["players"]]
        assert order == ["tom1", "tom0", "random"], (order, beat, rows)
        assert [row["place"] for row in board["players"]] == [1, 2, 3]
        for better, worse in itertools.permutations(BOTS, 2):
            if beat[(better, worse)] > beat[(worse, better)]:
                assert rows[better]["rating"] > rows[worse]["rating"], (better, worse, rows)
        wins = {b: sum(n for (a, _), n in beat.items() if a == b) for b in BOTS}
        assert all(rows[b]["wins"] >= wins[b] for b in BOTS), (rows, wins)  # shared wins count too
        print(f"{len(games)} games in {played_seconds:.1f} s; head to head {beat}")
    finally:
        researcher.close()
