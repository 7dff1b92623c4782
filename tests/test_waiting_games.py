"""Issue 18 item 6: games waiting for players expire, can be cancelled by their creator, and a cancel racing
the last join has one winner. Real server processes over real sockets and SQLite files; the expiry's default
(60 minutes) is checked in-process on a manual clock.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests
from e2e_helpers import ADMIN, Client, MakeServer, ServerProcess, write_config
from table_support import in_parallel

from server.store import open_store
from server.table.config import load_settings
from server.table.errors import ServerError
from server.table.master import Table
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.table.timers import ManualScheduler
from server.web.lobby import Lobby

#: Expiry of the short-lived server's waiting games: 1.2 seconds.
TINY_EXPIRY_MINUTES = 0.02


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server()


@pytest.fixture(scope="module")
def expiring(make_server: MakeServer) -> ServerProcess:
    limits = {"waiting_game_expiry_minutes": TINY_EXPIRY_MINUTES, "open_games_per_user": 1}
    return make_server(overrides={"limits": limits})


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def researcher_meta(server: ServerProcess, game_id: str) -> dict[str, Any]:
    answer = requests.get(f"{server.url}/api/admin/games/{game_id}", auth=ADMIN, timeout=10).json()
    return dict(answer["meta"])


def waiting_ids(client: Client) -> list[str]:
    status, body = client.rest("GET", "/api/games?status=waiting")
    assert status == 200, body
    return [game["game_id"] for game in body["games"]]


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def outcome(call: Callable[[], Any]) -> Any:
    """What ``call`` answers, or the code of the ServerError it raises."""
    try:
        return call()
    except ServerError as err:
        return err.code


def seated(server: ServerProcess, hall: str = "duel") -> tuple[Client, str]:
    """A creator connected over Socket.IO who created a game of ``hall`` and sits in it."""
    creator = Client(server.url, unique("Host")).connect()
    ack = creator.call("create_game", {"hall": hall})
    assert ack["ok"], ack
    game_id = ack["game"]["game_id"]
    joined = creator.call("join", {"game_id": game_id})
    assert joined["ok"] and joined["seat"] == 0, joined
    return creator, game_id


# ------------------------------------------------------------------------------------------------ expiry
def test_a_waiting_game_expires_leaves_the_lobby_and_frees_its_slot(expiring: ServerProcess) -> None:
    creator, game_id = seated(expiring)
    guest = Client(expiring.url, unique("Guest"))
    assert game_id in waiting_ids(creator)
    refused = creator.call("create_game", {"hall": "duel"})  # open_games_per_user: 1
    assert not refused["ok"] and refused["error"]["code"] == "too_many_open_games", refused
    creator.wait_for(
        lambda: any(
            m == {"game_id": game_id, "reason": "expired"} for m in creator.messages("game_cancelled")
        ),
        timeout=15,
        what="the game_cancelled push",
    )
    meta = researcher_meta(expiring, game_id)
    assert meta["status"] == "aborted" and meta["abort_reason"] == "expired", meta
    assert game_id not in waiting_ids(creator)
    status, body = guest.rest("POST", f"/api/games/{game_id}/join", {})
    assert status == 409 and body["error"]["code"] == "game_cancelled", body
    again = creator.call("create_game", {"hall": "duel"})  # the slot is free again
    assert again["ok"], again
    creator.close()
    guest.close()


def test_an_expiry_survives_a_restart(make_server: MakeServer, tmp_path: Path) -> None:
    config = write_config(tmp_path / "restart", overrides={"limits": {"waiting_game_expiry_minutes": 0.05}})
    first = make_server(config)
    creator = Client(first.url, unique("Host"))
    status, body = creator.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201, body
    game_id = body["game"]["game_id"]
    first.kill()  # no shutdown code runs: the expiry timer dies with the process
    creator.close()
    second = make_server(config)  # recovery re-arms the timer from the stored creation time
    wait_until(lambda: researcher_meta(second, game_id)["status"] == "aborted", 20, "the expiry")
    assert researcher_meta(second, game_id)["abort_reason"] == "expired"


def test_the_default_expiry_is_an_hour_on_the_tables_clock(tmp_path: Path) -> None:
    settings = load_settings(write_config(tmp_path / "cfg"), environ={})
    assert settings.limits.waiting_game_expiry_minutes == 60
    store = open_store(f"sqlite:///{tmp_path / 'clock.db'}")
    scheduler = ManualScheduler()
    table = Table(settings, store, scheduler, BotRegistry())
    lobby = Lobby(settings, store, table, BotRegistry())
    try:
        host = Principal(id="user-host", name="Host", kind="human")
        game_id = lobby.create_game("duel", host, join=True)["game_id"]
        created = float(store.get_game(game_id)["created_at"])  # type: ignore[index]
        scheduler.run_due(created + 59 * 60)
        assert store.get_game(game_id)["status"] == "waiting"  # type: ignore[index]
        scheduler.run_due(created + 60 * 60 + 1)
        meta = store.get_game(game_id)
        assert meta["status"] == "aborted" and meta["abort_reason"] == "expired", meta  # type: ignore[index]
        assert store.get_value(f"game:{game_id}:waiting_ended") == "expired"
    finally:
        table.close()
        store.close()


# ------------------------------------------------------------------------------------------------ cancel
def test_the_creator_cancels_a_waiting_game_and_its_players_are_told(server: ServerProcess) -> None:
    creator, game_id = seated(server, "trio")
    guest = Client(server.url, unique("Guest")).connect()
    joined = guest.call("join", {"game_id": game_id})
    assert joined["ok"] and joined["seat"] == 1, joined
    # anyone else may not cancel it (a seated player, a stranger, anonymous), and nothing changes
    status, body = guest.rest("POST", f"/api/games/{game_id}/cancel")
    assert status == 403 and body["error"]["code"] == "forbidden", body
    refused = guest.call("cancel_game", {"game_id": game_id})
    assert not refused["ok"] and refused["error"]["code"] == "forbidden", refused
    anonymous = requests.post(f"{server.url}/api/games/{game_id}/cancel", json={}, timeout=10)
    assert anonymous.json()["error"]["code"] == "not_logged_in", anonymous.text
    assert game_id in waiting_ids(creator)
    # the creator may, over Socket.IO (or REST: the same handler)
    ack = creator.call("cancel_game", {"game_id": game_id})
    assert ack["ok"] and ack["game"]["status"] == "aborted", ack
    guest.wait_for(
        lambda: {"game_id": game_id, "reason": "cancelled"} in guest.messages("game_cancelled"),
        what="the game_cancelled push",
    )
    assert researcher_meta(server, game_id)["abort_reason"] == "cancelled"
    assert game_id not in waiting_ids(creator)
    again = creator.call("cancel_game", {"game_id": game_id})
    assert not again["ok"] and again["error"]["code"] == "not_waiting", again
    late = Client(server.url, unique("Late"))
    status, body = late.rest("POST", f"/api/games/{game_id}/join", {})
    assert status == 409 and body["error"]["code"] == "game_cancelled", body
    for client in (creator, guest, late):
        client.close()


def test_a_started_game_cannot_be_cancelled(server: ServerProcess) -> None:
    creator, game_id = seated(server)
    guest = Client(server.url, unique("Guest"))
    status, body = guest.rest("POST", f"/api/games/{game_id}/join", {})
    assert status == 200, body
    status, body = creator.rest("POST", f"/api/games/{game_id}/cancel")
    assert status == 409 and body["error"]["code"] == "not_waiting", body
    assert researcher_meta(server, game_id)["status"] == "running"
    creator.close()
    guest.close()


def test_cancel_racing_the_last_join_has_one_winner(server: ServerProcess) -> None:
    outcomes: dict[str, int] = {"cancel": 0, "join": 0}
    for attempt in range(20):
        creator = Client(server.url, unique("Host"))
        status, body = creator.rest("POST", "/api/games", {"hall": "duel", "join": True})
        assert status == 201, body
        game_id = body["game"]["game_id"]
        guest = Client(server.url, unique("Guest"))
        cancel, join = in_parallel(
            [
                partial(creator.rest, "POST", f"/api/games/{game_id}/cancel"),
                partial(guest.rest, "POST", f"/api/games/{game_id}/join", {}),
            ]
        )
        answers = {"cancel": cancel, "join": join}
        won = [name for name, (status, _) in answers.items() if status == 200]
        assert len(won) == 1, (attempt, answers)
        status = researcher_meta(server, game_id)["status"]
        if won == ["cancel"]:
            assert status == "aborted", answers
            assert join[1]["error"]["code"] in ("game_cancelled", "game_full"), answers
        else:
            assert status == "running", answers
            assert cancel[1]["error"]["code"] == "not_waiting", answers
        outcomes[won[0]] += 1
        creator.close()
        guest.close()
    print(f"\ncancel vs last join over REST, 20 tries: {outcomes}")


def test_a_cancel_of_an_unknown_game_is_typed(server: ServerProcess) -> None:
    player = Client(server.url, unique("P"))
    status, body = player.rest("POST", "/api/games/nope/cancel")
    assert status == 404 and body["error"]["code"] == "unknown_game", body
    player.close()


def test_cancel_needs_a_login_in_process(tmp_path: Path) -> None:
    """The lobby's own rule: a waiting game's creator, or an admin, may cancel; an agent token is not the
    creator of a person's game."""
    settings = load_settings(write_config(tmp_path / "cfg"), environ={})
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    table = Table(settings, store, ManualScheduler(), BotRegistry())
    lobby = Lobby(settings, store, table, BotRegistry())
    try:
        host = Principal(id="user-host", name="Host", kind="human")
        agent = Principal(id="token:t1", name="bot", kind="agent")
        admin = Principal(id="token:a", name="admin", kind="agent", scopes=frozenset({"play", "admin"}))
        first = lobby.create_game("duel", host)["game_id"]
        with pytest.raises(ServerError) as refused:
            lobby.cancel_game(first, agent)
        assert refused.value.code == "forbidden" and refused.value.status == 403
        assert lobby.cancel_game(first, admin)["status"] == "aborted"
    finally:
        table.close()
        store.close()


def test_cancel_racing_the_last_join_in_another_worker_has_one_winner(tmp_path: Path) -> None:
    """Two workers over one SQLite file, each with its own lock: the store's conditional write decides."""
    config = write_config(tmp_path / "cfg", database_uri=f"sqlite:///{tmp_path / 'shared.db'}")
    workers = []
    for _ in range(2):
        settings = load_settings(config, environ={})
        store = open_store(settings.database_uri)
        table = Table(settings, store, ManualScheduler(), BotRegistry())
        workers.append((store, table, Lobby(settings, store, table, BotRegistry())))
    (store, _, first_lobby), (_, second, second_lobby) = workers
    host = Principal(id="user-host", name="Host", kind="human")
    guest = Principal(id="user-guest", name="Guest", kind="human")
    try:
        for attempt in range(20):
            game_id = first_lobby.create_game("duel", host, join=True)["game_id"]
            second.get(game_id)
            cancel, join = in_parallel(
                [
                    partial(outcome, partial(first_lobby.cancel_game, game_id, host)),
                    partial(outcome, partial(second_lobby.join, game_id, guest)),
                ]
            )
            answers = {"cancel": cancel, "join": join}
            won = [name for name, answer in answers.items() if not isinstance(answer, str)]
            assert len(won) == 1, (attempt, answers)
            status = store.get_game(game_id)["status"]  # type: ignore[index]
            assert status == ("aborted" if won == ["cancel"] else "running"), (attempt, answers, status)
    finally:
        for worker_store, table, _ in workers:
            table.close()
            worker_store.close()
