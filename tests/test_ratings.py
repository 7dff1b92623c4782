"""Ratings and histories (server/table/ratings.py): the ranking rules, which games are rated, exactly one
update per finished game however many workers race to settle it (memory, SQLite file shared by two store
objects, MongoDB over the wire), a crashed settle's journal applied once, and the bounded history pages."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mongo_server import database_uri, drop_database
from table_support import in_parallel

from server.store import Store, open_store
from server.table import ratings
from server.table.ratings import (
    MODEL,
    RATINGS_LOCK_KEY,
    GameResult,
    Leaderboard,
    game_result,
    history_page,
    participants,
    player_rating,
    ranks,
    record_finished_game,
    settled_key,
)

BACKENDS = ["memory", "sqlite-file", "mongodb"]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory://"
    elif request.param == "sqlite-file":
        yield f"sqlite:///{tmp_path}/ratings.db"
    else:
        url = database_uri(request.getfixturevalue("mongo_uri"), f"tc_ratings_{uuid.uuid4().hex[:10]}")
        yield url
        drop_database(url)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def human(seat: int, name: str) -> dict[str, Any]:
    return {"seat": seat, "kind": "human", "name": name, "user_id": f"u-{name.lower()}", "bot": None}


def bot(seat: int, spec: str) -> dict[str, Any]:
    return {"seat": seat, "kind": "bot", "name": f"{spec} bot", "user_id": None, "bot": spec}


def result(
    seats: list[dict[str, Any]],
    winners: list[int],
    active: list[int] | None = None,
    meta: dict[str, Any] | None = None,
) -> GameResult:
    active = list(range(len(seats))) if active is None else active
    scores = [3 if winners == [s] else 1 if s in winners else 0 for s in range(len(seats))]
    record = {"game_id": uuid.uuid4().hex[:12], "hall": "duel", "title": "Duel", **(meta or {})}
    return game_result(record, seats, winners, active, scores, lambda hall: hall == "duel", time.time())


def rating(store: Store, key: str) -> dict[str, Any]:
    value = store.get_value(ratings.rating_key(key))
    assert value is not None, key
    data: dict[str, Any] = json.loads(value)
    return data


# ------------------------------------------------------------------------------------------------ the rules
def test_a_sole_winner_ranks_first_and_the_others_tie() -> None:
    assert ranks([1], [0, 1, 2], 3) == [1, 0, 1]


def test_a_shared_win_puts_the_sharers_first_together() -> None:
    assert ranks([0, 2], [0, 1, 2], 3) == [0, 1, 0]


def test_no_winner_is_a_draw_among_those_who_played_it_out_above_the_resigned() -> None:
    assert ranks([], [0, 1, 2], 3) == [0, 0, 0]
    assert ranks([], [0, 2], 3) == [0, 1, 0]
    assert ranks([0], [0, 2], 3) == [0, 2, 1]  # resigned below a plain loss


def test_rating_moves_follow_the_rules(store: Store) -> None:
    solo = result([human(0, "Ada"), human(1, "Bob"), bot(2, "random")], winners=[0])
    assert record_finished_game(store, solo)
    ada, bob, rnd = rating(store, "user:u-ada"), rating(store, "user:u-bob"), rating(store, "bot:random")
    assert ada["mu"] > 25 > bob["mu"] and bob["mu"] == pytest.approx(rnd["mu"])  # the others tie
    assert (ada["games"], ada["wins"], bob["wins"]) == (1, 1, 0)

    draw = result([human(0, "Cy"), human(1, "Di")], winners=[])
    assert record_finished_game(store, draw)
    cy, di = rating(store, "user:u-cy"), rating(store, "user:u-di")
    assert cy["mu"] == pytest.approx(25) and di["mu"] == pytest.approx(25)  # a draw between equals
    assert cy["sigma"] < MODEL.rating().sigma  # but it was a game: more certain now

    shared = result([human(0, "Eve"), human(1, "Fay"), human(2, "Gus")], winners=[0, 1])
    record_finished_game(store, shared)
    eve, fay, gus = (rating(store, f"user:u-{n}") for n in ("eve", "fay", "gus"))
    assert eve["mu"] == pytest.approx(fay["mu"]) and eve["mu"] > 25 > gus["mu"]
    assert eve["wins"] == fay["wins"] == 1

    resigned = result([human(0, "Hal"), human(1, "Ivy")], winners=[], active=[1])
    record_finished_game(store, resigned)
    assert rating(store, "user:u-ivy")["mu"] > 25 > rating(store, "user:u-hal")["mu"]


def test_several_seats_of_one_player_count_once_at_the_best_seat() -> None:
    players = participants([bot(0, "random"), human(1, "Ada"), bot(2, "random")], [2], [0, 1, 2], [0, 0, 3])
    assert [(p.key, p.rank, p.won) for p in players] == [("bot:random", 0, True), ("user:u-ada", 1, False)]
    alone = result([bot(0, "tom1"), bot(1, "tom1")], winners=[0])
    assert not alone.rated  # one player against itself: nothing to compare


def test_which_games_are_rated() -> None:
    seats = [human(0, "Ada"), bot(1, "tom1")]
    assert result(seats, [0]).rated
    assert not result(seats, [0], meta={"hall": "tom_study"}).rated  # a hall with rated: false
    assert not result(seats, [0], meta={"hall": None, "mode": "experiment"}).rated  # the experiment runner
    assert result(seats, [0], meta={"hall": None, "rated": True}).rated  # unless its definition says so
    assert not result(seats, [0], meta={"rated": False}).rated


def test_an_llm_seat_is_rated_by_its_spec_and_an_api_agent_by_its_token() -> None:
    seats = [
        {"seat": 0, "kind": "bot", "name": "Model", "bot": "llm:openai:m?tom=0", "user_id": None},
        {"seat": 1, "kind": "agent", "name": "Remote", "user_id": "token:abc", "bot": None},
    ]
    players = participants(seats, [0], [0, 1], None, bot_name=lambda spec: f"named {spec}")
    assert [(p.key, p.kind, p.user_id, p.name) for p in players] == [
        ("bot:llm:openai:m?tom=0", "llm", None, "named llm:openai:m?tom=0"),  # the namer's, not the seat's
        ("agent:abc", "agent", None, "Remote"),
    ]


# ---------------------------------------------------------------------------------------------- exactly once
def test_racing_finishes_update_each_rating_exactly_once(store_url: str) -> None:
    """Eight workers (own store objects: own SQLite connections, own Mongo clients) settle the same two
    finished games at once, as every worker that saw the finish would: each game counts once."""
    games = [
        result([human(0, "Ada"), bot(1, "random")], winners=[0]),
        result([human(0, "Ada"), bot(1, "tom1")], winners=[1]),
    ]
    games[1] = dataclasses.replace(games[1], finished_at=games[0].finished_at + 1)  # the later one
    workers = [open_store(store_url) for _ in range(8)] if store_url != "memory://" else None
    shared = open_store(store_url) if workers is None else None
    try:
        targets = workers or [shared] * 8
        calls = [(lambda s=s, g=games[i % 2]: record_finished_game(s, g)) for i, s in enumerate(targets)]
        settled = in_parallel(calls)
        reader = targets[0]
        assert reader is not None
        ada = rating(reader, "user:u-ada")
        assert (ada["games"], ada["wins"]) == (2, 1)
        assert rating(reader, "bot:random")["games"] == 1 and rating(reader, "bot:tom1")["games"] == 1
        assert sum(bool(s) for s in settled) <= 2  # the calls that did the settling
        assert reader.get_value(RATINGS_LOCK_KEY) is None  # released
        assert reader.list_keys(ratings.PENDING_PREFIX) == []
        entries, cursor = history_page(reader, "u-ada", "", 10)
        assert [e["game_id"] for e in entries] == [games[1].game_id, games[0].game_id] and cursor is None
        # and again later (a reloaded worker recording the same finish): still once
        record_finished_game(reader, games[0])
        assert rating(reader, "user:u-ada")["games"] == 2
    finally:
        for opened in workers or [shared]:
            assert opened is not None
            opened.close()


def test_a_crashed_settle_is_finished_once_from_its_journal(store: Store) -> None:
    """A process died holding the lock after writing its journal: the next settle applies the journal
    (the crashed game counts once) before rating its own game."""
    crashed = result([human(0, "Ada"), bot(1, "random")], winners=[0])
    writes = ratings._plan(store, crashed, time.time)
    stale = {"holder": "dead", "at": time.time() - 3600, "journal": writes}
    assert store.replace_value(RATINGS_LOCK_KEY, None, json.dumps(stale))
    store.set_value_if_absent(ratings.pending_key(crashed.game_id), crashed.to_json())

    later = result([human(0, "Ada"), bot(1, "random")], winners=[1])
    assert record_finished_game(store, later)
    ada = rating(store, "user:u-ada")
    assert (ada["games"], ada["wins"]) == (2, 1)
    assert store.get_value(settled_key(crashed.game_id)) == "rated"
    assert store.list_keys(ratings.PENDING_PREFIX) == []


def test_a_busy_lock_leaves_the_result_pending_for_the_next_finish(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ratings, "LOCK_WAIT_SECONDS", 0.05)
    busy = {"holder": "alive", "at": time.time(), "journal": None}
    assert store.replace_value(RATINGS_LOCK_KEY, None, json.dumps(busy))
    first = result([human(0, "Ada"), bot(1, "random")], winners=[0])
    assert not record_finished_game(store, first)
    assert store.get_value(ratings.rating_key("user:u-ada")) is None
    assert store.replace_value(RATINGS_LOCK_KEY, json.dumps(busy), None)
    second = result([human(0, "Ada"), bot(1, "random")], winners=[0])
    record_finished_game(store, second)
    assert rating(store, "user:u-ada")["games"] == 2  # the pending one was settled with it


# --------------------------------------------------------------------------------------------- reading
def test_history_pages_newest_first_and_bounded(store: Store) -> None:
    ids = []
    for k in range(5):
        game = result([human(0, "Ada"), bot(1, "random")], winners=[0])
        game = dataclasses.replace(game, finished_at=1_700_000_000 + k)
        record_finished_game(store, game)
        ids.append(game.game_id)
    first, cursor = history_page(store, "u-ada", "", 2)
    assert [e["game_id"] for e in first] == ids[::-1][:2] and cursor
    second, cursor2 = history_page(store, "u-ada", cursor, 2)
    third, end = history_page(store, "u-ada", cursor2 or "", 2)
    assert [e["game_id"] for e in second + third] == ids[::-1][2:] and end is None
    entry = first[0]
    assert entry["result"] == "won" and entry["points"] == 3 and entry["rated"] is True
    assert entry["opponents"] == [{"kind": "bot", "name": "random bot", "won": False}]
    assert "user_id" not in json.dumps(entry) and "u-ada" not in json.dumps(entry)
    assert history_page(store, "u-bob", "", 2) == ([], None)  # nobody else's games


def test_the_leaderboard_is_public_data_only_sorted_and_paged(store: Store) -> None:
    for winner in (0, 0, 1):
        record_finished_game(store, result([human(0, "Ada"), bot(1, "random")], winners=[winner]))
    board = Leaderboard(store)
    page = board.page(min_games=3, provisional=False, offset=0, limit=1)
    assert page["total"] == 2 and [p["name"] for p in page["players"]] == ["Ada"]
    assert page["players"][0]["place"] == 1 and page["players"][0]["spec"] is None
    assert "u-ada" not in json.dumps(page)
    second = board.page(min_games=3, provisional=False, offset=1, limit=1)
    assert [(p["spec"], p["place"]) for p in second["players"]] == [("random", 2)]
    assert board.page(min_games=4, provisional=False, offset=0, limit=10)["total"] == 0
    assert board.page(min_games=4, provisional=True, offset=0, limit=10)["total"] == 2
    mine = player_rating(store, "user:u-ada")
    assert mine is not None and (mine["games"], mine["wins"]) == (3, 2)
