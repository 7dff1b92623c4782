"""Review fixes of issue 18's lobby: a create-with-join whose join is refused leaves no waiting game behind
(it held an open-game slot and never expired), and an admin cancels any waiting game over REST and Socket.IO
(admin session, HTTP Basic, admin token).

Real server processes over real sockets and SQLite files; the failure paths no request can reach (a claim
lost after the checks) in-process on a manual clock.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from e2e_helpers import ADMIN, ADMIN_PASSWORD, Client, MakeServer, ServerProcess, write_config

from server.store import open_store
from server.table.config import load_settings
from server.table.errors import ServerError
from server.table.master import Table, expiry_timer_key
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.table.timers import ManualScheduler
from server.web.lobby import Lobby

OPEN_GAMES = 2


def custom_hall(folder: Path) -> dict[str, Any]:
    """A two-seat hall whose creator chooses the seats (the test settings' instance files in ``folder``)."""
    instances = {"choice": "fixed", "root": str(folder / "instances")}
    return {
        "ruleset": "minecraft",
        "players": 2,
        "instances": instances,
        "allow_custom_seats": True,
        "game": {"max_turns": 3},
    }


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("review")
    overrides = {"halls": {"custom": custom_hall(folder)}, "limits": {"open_games_per_user": OPEN_GAMES}}
    return make_server(write_config(folder, overrides=overrides))


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"


def waiting_ids(client: Client) -> set[str]:
    status, body = client.rest("GET", "/api/games?status=waiting&limit=1000")
    assert status == 200, body
    return {game["game_id"] for game in body["games"]}


def researcher_meta(server: ServerProcess, game_id: str) -> dict[str, Any]:
    answer = requests.get(f"{server.url}/api/admin/games/{game_id}", auth=ADMIN, timeout=10).json()
    return dict(answer["meta"])


# ------------------------------------------------------------------------------ create-with-join refused
@pytest.mark.parametrize(
    ("seats", "code"),
    [
        # the creator's name clashes with the bot seat name they chose
        ([{"kind": "bot", "bot": "random", "name": "ANNA-{tag}"}, {"kind": "open"}], "invalid_name"),
        # no seat accepts a person
        ([{"kind": "bot", "bot": "random"}, {"kind": "agent"}], "invalid_seats"),
    ],
    ids=["name clash", "no seat for the kind"],
)
def test_a_refused_create_with_join_leaves_no_game_and_no_slot(
    server: ServerProcess, seats: list[dict[str, str]], code: str
) -> None:
    tag = uuid.uuid4().hex[:6]
    creator = Client(server.url, f"Anna-{tag}")
    seats = [{k: v.format(tag=tag) for k, v in seat.items()} for seat in seats]
    before = waiting_ids(creator)
    for _ in range(OPEN_GAMES + 1):  # more than the open-game limit: each would have held a slot
        status, body = creator.rest("POST", "/api/games", {"hall": "custom", "seats": seats, "join": True})
        assert status == 400 and body["error"]["code"] == code, body
    assert waiting_ids(creator) - before == set()  # nothing new is listed
    status, body = creator.rest("GET", "/api/me/games")
    assert status == 200 and body["games"] == [], body
    for _ in range(OPEN_GAMES):  # and every slot is still the creator's
        status, body = creator.rest("POST", "/api/games", {"hall": "custom", "join": True})
        assert status == 201, body
    creator.close()


@pytest.fixture()
def lobby(tmp_path: Path) -> Any:
    config = write_config(tmp_path / "cfg", overrides={"limits": {"open_games_per_user": 1}})
    settings = load_settings(config, environ={})
    store = open_store(f"sqlite:///{tmp_path / 'lobby.db'}")
    scheduler = ManualScheduler()
    table = Table(settings, store, scheduler, BotRegistry())
    yield Lobby(settings, store, table, BotRegistry()), store, scheduler
    table.close()
    store.close()


def lost_claim(*_: Any) -> int:
    """A seat claim lost after the checks before creation (another join took the seat meanwhile)."""
    raise ServerError("game_full", "Every seat you may take in this game is taken.", status=409)


def test_a_join_lost_after_creation_closes_the_game_and_frees_its_slot(
    lobby: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lobby, store, _ = lobby
    host = Principal(id="user-host", name="Host", kind="human")
    with monkeypatch.context() as patch:
        patch.setattr(lobby, "_claim", lost_claim)
        with pytest.raises(ServerError) as refused:
            lobby.create_game("duel", host, join=True, address="198.51.100.7")
    assert refused.value.code == "game_full"
    assert store.list_games(status="waiting") == []
    (closed,) = store.list_games(status="aborted")
    assert closed["abort_reason"] == "cancelled"
    # the one open-game slot (limits.open_games_per_user: 1) is free again
    again = lobby.create_game("duel", host, join=True, address="198.51.100.7")
    assert again["status"] == "waiting" and again["your_seat"] == 0


def test_a_game_left_waiting_by_a_failed_join_still_expires(
    lobby: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lobby, store, scheduler = lobby
    host = Principal(id="user-host", name="Host", kind="human")

    def close_fails(*_: Any) -> None:
        raise ConnectionError("the store went away")

    with monkeypatch.context() as patch:
        patch.setattr(lobby, "_claim", lost_claim)
        patch.setattr(lobby.table, "close_waiting", close_fails)
        with pytest.raises(ConnectionError):
            lobby.create_game("duel", host, join=True, address="198.51.100.7")
    (left,) = store.list_games(status="waiting")
    assert expiry_timer_key(left["game_id"]) in scheduler.pending()  # armed although the join failed
    scheduler.run_due(float(left["created_at"]) + 61 * 60)
    assert store.get_game(left["game_id"])["abort_reason"] == "expired"  # type: ignore[index]


# ------------------------------------------------------------------------------------- admins cancel
def waiting_game(server: ServerProcess) -> str:
    creator = Client(server.url, unique("Host"))
    status, body = creator.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201, body
    creator.close()
    return str(body["game"]["game_id"])


def cancelled(server: ServerProcess, game_id: str, status: int, body: dict[str, Any]) -> bool:
    assert status == 200 and body["game"]["status"] == "aborted", body
    return researcher_meta(server, game_id)["abort_reason"] == "cancelled"


def test_an_admin_session_cancels_any_waiting_game(server: ServerProcess) -> None:
    admin = Client(server.url)  # logged in to the admin area only, no player login
    status, body = admin.rest("POST", "/api/admin/login", {"password": ADMIN_PASSWORD})
    assert status == 200, body
    game_id = waiting_game(server)
    assert cancelled(server, game_id, *admin.rest("POST", f"/api/games/{game_id}/cancel"))
    player_admin = Client(server.url, unique("Ops")).as_researcher()  # a player who is also the operator
    game_id = waiting_game(server)
    assert cancelled(server, game_id, *player_admin.rest("POST", f"/api/games/{game_id}/cancel"))
    game_id = waiting_game(server)  # and over Socket.IO, the same handler
    ack = player_admin.connect().call("cancel_game", {"game_id": game_id})
    assert ack["ok"] and researcher_meta(server, game_id)["abort_reason"] == "cancelled", ack
    # after admin logout the same session is an ordinary player's again
    status, body = player_admin.rest("POST", "/api/admin/logout")
    assert status == 200, body
    game_id = waiting_game(server)
    status, body = player_admin.rest("POST", f"/api/games/{game_id}/cancel")
    assert status == 403 and body["error"]["code"] == "forbidden", body
    admin.close()
    player_admin.close()


def test_the_admin_password_and_an_admin_token_cancel_any_waiting_game(server: ServerProcess) -> None:
    game_id = waiting_game(server)
    url = f"{server.url}/api/games/{game_id}/cancel"
    wrong = requests.post(url, auth=("admin", "not-the-password"), timeout=10)
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "not_logged_in", wrong.text
    assert researcher_meta(server, game_id)["status"] == "waiting"
    answer = requests.post(url, auth=ADMIN, timeout=10)
    assert cancelled(server, game_id, answer.status_code, answer.json())

    made = requests.post(
        f"{server.url}/api/admin/tokens",
        json={"name": "ops", "scopes": ["play", "admin"]},
        auth=ADMIN,
        timeout=10,
    )
    assert made.status_code == 201, made.text
    game_id = waiting_game(server)
    answer = requests.post(
        f"{server.url}/api/games/{game_id}/cancel",
        headers={"Authorization": f"Bearer {made.json()['token']}"},
        timeout=10,
    )
    assert cancelled(server, game_id, answer.status_code, answer.json())
    played = requests.post(f"{server.url}/api/admin/tokens", json={"name": "agent"}, auth=ADMIN, timeout=10)
    game_id = waiting_game(server)
    answer = requests.post(
        f"{server.url}/api/games/{game_id}/cancel",
        headers={"Authorization": f"Bearer {played.json()['token']}"},
        timeout=10,
    )
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden", answer.text


def test_a_creators_stray_basic_header_is_not_an_admin_login_attempt(make_server: MakeServer) -> None:
    """A logged-in creator cancelling with some other Authorization: Basic header (a proxy's, a browser's
    saved one) cancels as themselves; the header is not tried as the admin password, so it neither counts
    admin failures against their address nor gets them throttled."""
    server = make_server(overrides={"limits": {"admin_failures_per_address": {"count": 1, "seconds": 600}}})
    creator = Client(server.url, unique("Host"))
    for _ in range(3):
        status, body = creator.rest("POST", "/api/games", {"hall": "duel", "join": True})
        assert status == 201, body
        game_id = body["game"]["game_id"]
        answer = creator.http.post(
            f"{server.url}/api/games/{game_id}/cancel", json={}, auth=("someone", "else"), timeout=10
        )
        assert answer.status_code == 200 and answer.json()["game"]["status"] == "aborted", answer.text
    creator.close()
