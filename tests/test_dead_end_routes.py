"""Issue 20 item 5 (no dead ends), the server side: leave a waiting game, cancel a game you created without
joining it, rematch after the end, resign, and what the lobby offers a viewer for each open game.

The routes run on the app in-process (its REST and Socket.IO test clients, a real SQLite file); the races run
two tables ("workers", each with its own memory) over one store, a SQLite file and the MongoDB wire server,
so a leave and a start decided in different processes are exercised through the store's conditional writes.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import write_config
from in_process import InProcessApp, InProcessClient, MakeApp
from mongo_server import database_uri, drop_database
from table_support import in_parallel

from server.store import Store, open_store
from server.table.config import load_settings
from server.table.errors import ServerError
from server.table.live import seat_claim_key, seat_holder_key, waiting_ended_key
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.table.timers import ManualScheduler
from server.web.lobby import Lobby
from server.web.rematch import rematch_key
from server.web.seat_moves import join_offer, leave_waiting_game

BOT_DUEL = {"ruleset": "minecraft", "players": 2, "game": {"max_turns": 3}}


@pytest.fixture(scope="module")
def app(make_app: MakeApp, tmp_path_factory: pytest.TempPathFactory) -> InProcessApp:
    folder = tmp_path_factory.mktemp("deadends")
    config = write_config(folder)
    duel = load_settings(config, environ={}).halls["duel"]
    # a hall like "duel" (the same fixed instance) whose creators choose the seats: a person against a bot
    bot_duel = {**BOT_DUEL, "instances": duel.instances.model_dump(mode="json")}
    return make_app(write_config(folder / "app", overrides={"halls": {"botduel": bot_duel}}))


def person(app: InProcessApp, prefix: str) -> InProcessClient:
    return app.client(f"{prefix} {uuid.uuid4().hex[:4]}").connect()


def create(client: InProcessClient, hall: str = "trio", join: bool = True, **fields: Any) -> str:
    status, body = client.rest("POST", "/api/games", {"hall": hall, "join": join, **fields})
    assert status == 201, body
    return str(body["game"]["game_id"])


def summary(app: InProcessApp, game_id: str) -> dict[str, Any]:
    return dict(app.http().get(f"/api/games/{game_id}").json["game"])


def mine(client: InProcessClient) -> dict[str, dict[str, Any]]:
    status, body = client.rest("GET", "/api/me/games")
    assert status == 200, body
    return {game["game_id"]: game for game in body["games"]}


def refused(client: InProcessClient, path: str, code: str, status: int) -> None:
    got, body = client.rest("POST", path, {})
    assert (got, body["error"]["code"]) == (status, code), body
    assert body["error"]["message"]


# ------------------------------------------------------------------------------------------------ leave
def test_a_player_leaves_a_waiting_game_and_can_join_again(app: InProcessApp) -> None:
    ada, bob, eve = person(app, "Ada"), person(app, "Bob"), person(app, "Eve")
    game_id = create(ada)
    assert ada.call("join", {"game_id": game_id})["seat"] == 0  # in the room: told of seat changes
    assert bob.call("join", {"game_id": game_id})["seat"] == 1
    status, body = bob.rest("POST", f"/api/games/{game_id}/leave", {})
    assert status == 200, body
    assert body["game"]["open_seats"] == [1, 2] and body["game"]["status"] == "waiting"
    assert summary(app, game_id)["seats"][1]["taken"] is False
    assert game_id not in mine(bob) and mine(ada)[game_id]["your_seats"] == [0]
    # the room hears of it, as of any seat change
    assert any(m["seats"][1]["taken"] is False for m in ada.messages("seats") if m["game_id"] == game_id)
    # nothing is left held: the same person takes a seat again, another person may take the freed one
    refused(bob, f"/api/games/{game_id}/leave", "not_your_seat", 409)
    refused(eve, f"/api/games/{game_id}/leave", "not_your_seat", 409)
    anonymous = app.http().post(f"/api/games/{game_id}/leave", json={})
    assert anonymous.json["error"]["code"] == "not_logged_in"
    assert eve.call("join", {"game_id": game_id})["seat"] == 1
    assert bob.call("join", {"game_id": game_id})["seat"] == 2  # the last seat: the game starts
    assert summary(app, game_id)["status"] == "running"


def test_leaving_is_refused_once_the_game_started_or_closed_and_changes_nothing(app: InProcessApp) -> None:
    ada, bob = person(app, "Ada"), person(app, "Bob")
    game_id = create(ada, "duel")
    assert bob.call("join", {"game_id": game_id})["seat"] == 1
    before = summary(app, game_id)
    refused(bob, f"/api/games/{game_id}/leave", "not_waiting", 409)
    assert summary(app, game_id) == before and before["status"] == "running"
    cancelled = create(ada, "duel")
    assert ada.rest("POST", f"/api/games/{cancelled}/cancel", {})[0] == 200
    refused(ada, f"/api/games/{cancelled}/leave", "game_cancelled", 409)
    refused(ada, "/api/games/no-such-game/leave", "unknown_game", 404)
    too_big = ada.rest("POST", f"/api/games/{game_id}/leave", {"pad": "x" * 100_000})
    assert too_big[0] == 413 and too_big[1]["error"]["code"] == "payload_too_large"


# ---------------------------------------------------------------------------------------- cancel, lobby
def test_my_games_lists_a_game_i_created_without_joining_and_i_cancel_it(app: InProcessApp) -> None:
    ada, bob = person(app, "Ada"), person(app, "Bob")
    game_id = create(ada, "duel", join=False)
    listed = mine(ada)[game_id]
    assert listed["your_seats"] == [] and listed["cancellable"] is True
    assert game_id not in mine(bob)
    refused(bob, f"/api/games/{game_id}/cancel", "forbidden", 403)
    page = ada.http.get("/").get_data(as_text=True)
    assert f'class="cancel-game" data-game-id="{game_id}"' in page
    status, body = ada.rest("POST", f"/api/games/{game_id}/cancel", {})
    assert status == 200 and body["game"]["status"] == "aborted"
    assert game_id not in mine(ada)  # closed, and she never sat in it: nothing left to resume or cancel


def test_the_lobby_offers_join_only_where_the_viewer_can_sit(app: InProcessApp) -> None:
    ada, bob = person(app, "Ada"), person(app, "Bob")
    agent_game = create(ada, "botduel", seats=["open", "agent"])  # Ada sits; the other seat is an agent's
    open_game = create(ada, "duel")
    page = bob.http.get("/").get_data(as_text=True)
    row = page[page.index(agent_game) :]
    row = row[: row.index("</tr>")]
    assert "Join" not in row and "for a program (an API agent)" in row and "/watch" in row
    row = page[page.index(open_game) :]
    row = row[: row.index("</tr>")]
    assert f'href="/games/{open_game}">Join</a>' in row
    own = ada.http.get("/").get_data(as_text=True)
    row = own[own.index("open-title") :]
    row = row[row.index(open_game) :]
    row = row[: row.index("</tr>")]
    assert "Open your seat" in row and ">Join<" not in row
    assert ada.rest("POST", f"/api/games/{open_game}/cancel", {})[0] == 200
    assert ada.rest("POST", f"/api/games/{agent_game}/cancel", {})[0] == 200


def test_a_look_alike_name_is_told_why_instead_of_offered_a_seat() -> None:
    game = {
        "seats": [
            {"seat": 0, "accepts": "open", "taken": True, "name": "Ada"},
            {"seat": 1, "accepts": "open", "taken": False, "name": None},
        ]
    }
    twin = Principal(id="u2", name="ADA", kind="human")
    assert join_offer(game, twin, [])["action"] == "none"
    assert "mistaken" in join_offer(game, twin, [])["reason"]
    assert join_offer(game, Principal(id="u3", name="Bea", kind="human"), []) == {
        "action": "join",
        "reason": "",
    }
    assert join_offer(game, Principal(id="u1", name="Ada", kind="human"), [0])["action"] == "resume"
    game["seats"][1]["accepts"] = "agent"
    assert join_offer(game, Principal(id="u3", name="Bea", kind="human"), [])["action"] == "none"


# -------------------------------------------------------------------------------------- resign, rematch
def test_resigning_ends_a_duel_and_a_rematch_seats_the_same_kinds(app: InProcessApp) -> None:
    ada = person(app, "Ada")
    status, body = ada.rest(
        "POST",
        "/api/games",
        {"hall": "botduel", "join": True, "seats": ["open", {"kind": "bot", "bot": "random"}]},
    )
    assert status == 201, body
    game_id = body["game"]["game_id"]
    assert ada.call("join", {"game_id": game_id})["ok"]
    refused(ada, f"/api/games/{game_id}/rematch", "game_not_over", 409)
    answer = ada.call("resign", {"game_id": game_id})
    assert answer["ok"], answer
    view = answer["view"]
    assert view["finished"] and view["end_reason"] == "too_few_players" and view["active"][0] is False
    status, first = ada.rest("POST", f"/api/games/{game_id}/rematch", {})
    assert status == 200, first
    rematch = first["game"]
    assert rematch["game_id"] != game_id and rematch["your_seat"] == 0
    assert [(s["accepts"], s["bot"]) for s in rematch["seats"]] == [("open", None), ("bot", "random")]
    assert summary(app, rematch["game_id"])["status"] == "running"  # the bot's seat was filled at once
    status, again = ada.rest("POST", f"/api/games/{game_id}/rematch", {})
    assert status == 200 and again["game"]["game_id"] == rematch["game_id"]  # one rematch
    assert ada.rest("GET", f"/api/games/{game_id}/rematch")[1]["rematch"] == rematch["game_id"]
    stranger = person(app, "Stranger")
    refused(stranger, f"/api/games/{game_id}/rematch", "not_your_seat", 403)
    assert stranger.rest("GET", f"/api/games/{game_id}/rematch")[1]["error"]["code"] == "not_your_seat"


def test_a_rematch_is_offered_to_the_other_player_only_and_two_requests_make_one(app: InProcessApp) -> None:
    ada, bob, eve = person(app, "Ada"), person(app, "Bob"), person(app, "Eve")
    game_id = create(ada, "duel")
    assert bob.call("join", {"game_id": game_id})["seat"] == 1
    assert ada.call("join", {"game_id": game_id})["ok"]
    assert eve.call("watch", {"game_id": game_id})["ok"]
    assert bob.call("resign", {"game_id": game_id})["view"]["finished"]
    first, second = in_parallel(
        [
            lambda: ada.rest("POST", f"/api/games/{game_id}/rematch", {}),
            lambda: bob.rest("POST", f"/api/games/{game_id}/rematch", {}),
        ]
    )
    assert first[0] == 200 and second[0] == 200, (first, second)
    new_id = first[1]["game"]["game_id"]
    assert second[1]["game"]["game_id"] == new_id
    assert {first[1]["game"]["your_seat"], second[1]["game"]["your_seat"]} == {0, 1}
    assert summary(app, new_id)["status"] == "running"
    pushed = [m for c in (ada, bob) for m in c.messages("rematch")]
    assert pushed and all(m == {"game_id": game_id, "rematch": new_id} for m in pushed)
    assert eve.messages("rematch") == []  # a spectator is not told


def test_a_rematch_cancelled_before_it_started_makes_way_for_a_new_one(app: InProcessApp) -> None:
    ada, bob = person(app, "Ada"), person(app, "Bob")
    game_id = create(ada, "duel")
    assert bob.call("join", {"game_id": game_id})["seat"] == 1
    assert ada.call("resign", {"game_id": game_id})["view"]["finished"]
    status, first = ada.rest("POST", f"/api/games/{game_id}/rematch", {})
    assert status == 200 and summary(app, first["game"]["game_id"])["status"] == "waiting", first
    assert ada.rest("POST", f"/api/games/{first['game']['game_id']}/cancel", {})[0] == 200
    status, second = bob.rest("POST", f"/api/games/{game_id}/rematch", {})
    assert status == 200, second
    assert second["game"]["game_id"] != first["game"]["game_id"] and second["game"]["your_seat"] == 0
    assert ada.rest("GET", f"/api/games/{game_id}/rematch")[1]["rematch"] == second["game"]["game_id"]


def test_a_rematch_keeps_its_seats_for_the_finished_games_people(app: InProcessApp) -> None:
    ada, bob, eve = person(app, "Ada"), person(app, "Bob"), person(app, "Eve")
    game_id = create(ada, "duel")
    assert bob.call("join", {"game_id": game_id})["seat"] == 1
    assert ada.call("resign", {"game_id": game_id})["view"]["finished"]
    rematch = ada.rest("POST", f"/api/games/{game_id}/rematch", {})[1]["game"]["game_id"]
    waiting = eve.rest("GET", "/api/games?status=waiting&limit=1000")[1]["games"]
    assert rematch not in [g["game_id"] for g in waiting]  # not offered in the lobby
    status, body = eve.rest("POST", f"/api/games/{rematch}/join", {})
    assert (status, body["error"]["code"]) == (403, "seat_held"), body
    assert body["error"]["details"]["until"] > time.time() + 60
    assert eve.call("join", {"game_id": rematch})["error"]["code"] == "seat_held"  # the socket path too
    after = summary(app, rematch)
    assert after["status"] == "waiting" and [s["kind"] for s in after["seats"]] == ["human", None]
    # the finished game's other player takes the seat by the plain join as well as by the rematch route
    assert bob.rest("POST", f"/api/games/{rematch}/join", {})[1]["seat"] == 1
    assert summary(app, rematch)["status"] == "running"


def test_a_rematch_opens_to_anyone_once_its_hold_is_over(make_app: MakeApp, tmp_path: Path) -> None:
    brief = make_app(write_config(tmp_path, overrides={"rooms": {"rematch_hold_minutes": 0.01}}))
    ada, bob, eve = person(brief, "Ada"), person(brief, "Bob"), person(brief, "Eve")
    game_id = create(ada, "duel")
    assert bob.call("join", {"game_id": game_id})["seat"] == 1
    assert ada.call("resign", {"game_id": game_id})["view"]["finished"]
    rematch = ada.rest("POST", f"/api/games/{game_id}/rematch", {})[1]["game"]["game_id"]
    assert eve.rest("POST", f"/api/games/{rematch}/join", {})[1]["error"]["code"] == "seat_held"
    time.sleep(0.7)  # the hold (0.6 s) is over: an ordinary waiting game
    waiting = eve.rest("GET", "/api/games?status=waiting&limit=1000")[1]["games"]
    assert rematch in [g["game_id"] for g in waiting]
    assert eve.rest("POST", f"/api/games/{rematch}/join", {})[1]["seat"] == 1
    status, body = bob.rest("POST", f"/api/games/{game_id}/rematch", {})
    assert (status, body["error"]["code"]) == (409, "game_full"), body  # Bob was told; he came too late


# ---------------------------------------------------------------------------------- races across workers
@pytest.fixture(params=["sqlite", "mongodb"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/race.db"
        return
    url = database_uri(request.getfixturevalue("mongo_uri"), f"tc_deadends_{uuid.uuid4().hex[:10]}")
    yield url
    drop_database(url)


def workers(store_url: str, tmp_path: Path, count: int) -> list[tuple[Store, Table, Lobby]]:
    settings = load_settings(write_config(tmp_path / "cfg"), environ={})
    made = []
    for _ in range(count):
        store = open_store(store_url)
        table = Table(settings, store, ManualScheduler(), BotRegistry())
        made.append((store, table, Lobby(settings, store, table, BotRegistry())))
    return made


def outcome(call: Any) -> Any:
    try:
        return call()
    except ServerError as err:
        return err.code


def test_leave_racing_the_last_join_in_another_worker_has_one_truth(store_url: str, tmp_path: Path) -> None:
    (store, _, first), (_, _, second) = made = workers(store_url, tmp_path, 2)
    try:
        results: dict[str, int] = {"left": 0, "started": 0}
        for attempt in range(12):
            ada = Principal(id=f"ada-{attempt}", name="Ada", kind="human")
            bob = Principal(id=f"bob-{attempt}", name="Bob", kind="human")
            game_id = first.create_game("duel", ada, join=True)["game_id"]
            second.table.get(game_id)  # the second worker has the game in memory, with Ada seated
            left, joined = in_parallel(
                [
                    lambda g=game_id, p=ada: outcome(lambda: leave_waiting_game(first, g, p)),
                    lambda g=game_id, p=bob: outcome(lambda: second.join(g, p)),
                ]
            )
            meta = store.get_game(game_id)
            assert meta is not None
            claims = [store.get_value(seat_claim_key(game_id, seat)) for seat in (0, 1)]
            holders = [json.loads(claim)["user_id"] if claim else None for claim in claims]
            if meta["status"] == "running":
                # the start won: Ada sits in the game she was told she could not leave
                assert left == "not_waiting", (left, joined)
                assert [s["user_id"] for s in meta["seats"]] == [ada.id, bob.id]
                assert holders == [ada.id, bob.id]
                results["started"] += 1
            else:
                # the leave won: Ada holds nothing, Bob waits in the game, which did not start
                assert isinstance(left, dict) and joined in (0, 1), (left, joined)
                assert ada.id not in holders and bob.id in holders
                assert store.get_value(seat_holder_key(game_id, ada.id)) is None
                assert meta["status"] == "waiting"
                # the lobby shows the seats as the claims have them, whichever worker wrote the record last
                listed = next(
                    g for g in first.list_games(status="waiting", limit=1000) if g["game_id"] == game_id
                )
                assert [s["taken"] for s in listed["seats"]].count(True) == 1
                assert store.get_value(waiting_ended_key(game_id)) is None
                results["left"] += 1
        assert results["left"] + results["started"] == 12
    finally:
        for store_, table, _ in made:
            table.close()
            store_.close()


def test_a_stale_leave_marker_never_blocks_the_game(store_url: str, tmp_path: Path) -> None:
    [(store, table, lobby)] = workers(store_url, tmp_path, 1)
    try:
        ada = Principal(id="ada", name="Ada", kind="human")
        bob = Principal(id="bob", name="Bob", kind="human")
        game_id = lobby.create_game("duel", ada, join=True)["game_id"]
        store.set_value_if_absent(waiting_ended_key(game_id), "leaving:1.000")  # a leave that crashed
        assert lobby.join(game_id, bob) == 1
        assert store.get_game(game_id)["status"] == "running"  # type: ignore[index]
        assert store.get_value(rematch_key(game_id)) is None
    finally:
        table.close()
        store.close()
