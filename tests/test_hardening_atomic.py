"""Issue 18 item 1: every "one of" invariant holds under parallel requests, against a real server process.

- one person, one seat: parallel joins by the same person (two and three at once, 20 tries each) never give
  them two seats (a person holding two seats sees both targets and can trade with themselves);
- open games per user: 25 parallel creations by one user leave at most ``limits.open_games_per_user``
  waiting games, and a slot is free again once one of them starts or is cancelled;
- the same rules in the store across worker processes: two lobbies over one SQLite file;
- a seated name that could be mistaken for another seat's is refused, naming the seat, not the user;
- only admins set a game's seed from a client.
"""

from __future__ import annotations

import uuid
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests
from e2e_helpers import ADMIN, Client, MakeServer, ServerProcess, write_config
from table_support import Worker, in_parallel

from server.table.config import load_settings
from server.table.errors import ServerError
from server.table.principal import Principal

OPEN_GAMES_LIMIT = 10


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    # the per-user creation rate must not be what refuses the 25 parallel creations
    limits = {"games_per_user": {"count": 1000, "seconds": 600}, "open_games_per_user": OPEN_GAMES_LIMIT}
    return make_server(overrides={"limits": limits})


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def session_of(client: Client) -> requests.Session:
    """Another HTTP connection with the same login cookie: parallel requests of one person."""
    session = requests.Session()
    session.cookies.update(client.http.cookies)
    return session


def post(session: requests.Session, url: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = session.post(url, json=payload, timeout=30)
    return response.status_code, response.json()


@pytest.mark.parametrize("parallel", [2, 3])
def test_parallel_joins_by_one_person_never_give_two_seats(server: ServerProcess, parallel: int) -> None:
    person = Client(server.url, unique("Joiner"))
    try:
        for attempt in range(20):
            creator = Client(server.url, unique("Host"))
            status, body = creator.rest("POST", "/api/games", {"hall": "trio"})
            assert status == 201, body
            game_id = body["game"]["game_id"]
            url = f"{server.url}/api/games/{game_id}/join"
            sessions = [session_of(person) for _ in range(parallel)]
            answers = in_parallel([partial(post, s, url, {"seat": seat}) for seat, s in enumerate(sessions)])
            joined = [body["seat"] for status, body in answers if status == 200]
            refused = [body["error"]["code"] for status, body in answers if status != 200]
            assert len(joined) == 1, (attempt, answers)
            assert set(refused) <= {"seat_taken"}, answers
            status, mine = person.rest("GET", "/api/me/games")
            held = [g["your_seats"] for g in mine["games"] if g["game_id"] == game_id]
            assert held == [joined], (attempt, held, answers)
            status, summary = person.rest("GET", f"/api/games/{game_id}")
            names = [seat["name"] for seat in summary["game"]["seats"]]
            assert names.count(person.user["name"]) == 1, names  # type: ignore[index]
            # a sequential join of another seat is refused too, and the own seat comes back on a retry
            status, again = person.rest("POST", f"/api/games/{game_id}/join", {"seat": (joined[0] + 1) % 3})
            assert status in (400, 409) and again["error"]["code"] == "seat_taken", again
            status, again = person.rest("POST", f"/api/games/{game_id}/join", {})
            assert status == 200 and again["seat"] == joined[0], again
            creator.close()
            for session in sessions:
                session.close()
    finally:
        person.close()


def test_parallel_creations_by_one_user_stay_within_the_open_games_limit(server: ServerProcess) -> None:
    creator = Client(server.url, unique("Creator"))
    url = f"{server.url}/api/games"
    sessions = [session_of(creator) for _ in range(25)]
    answers = in_parallel([lambda s=s: post(s, url, {"hall": "duel"}) for s in sessions])
    created = [body["game"]["game_id"] for status, body in answers if status == 201]
    refused = [(status, body["error"]["code"]) for status, body in answers if status != 201]
    print(f"\n25 parallel creations: {len(created)} created, {len(refused)} refused")
    assert len(created) == OPEN_GAMES_LIMIT, answers
    assert set(refused) == {(409, "too_many_open_games")}, refused
    status, body = creator.rest("POST", url[len(server.url) :], {"hall": "duel"})
    assert status == 409 and body["error"]["code"] == "too_many_open_games", body
    # a cancelled game frees its slot
    status, body = creator.rest("POST", f"/api/games/{created[0]}/cancel")
    assert status == 200 and body["game"]["status"] == "aborted", body
    status, body = creator.rest("POST", "/api/games", {"hall": "duel"})
    assert status == 201, body
    status, body = creator.rest("POST", "/api/games", {"hall": "duel"})
    assert status == 409 and body["error"]["code"] == "too_many_open_games", body
    # so does a game that starts
    players = [Client(server.url, unique("P")) for _ in range(2)]
    for player in players:
        status, body = player.rest("POST", f"/api/games/{created[1]}/join", {})
        assert status == 200, body
    status, body = creator.rest("GET", f"/api/games/{created[1]}")
    assert body["game"]["status"] == "running", body
    status, body = creator.rest("POST", "/api/games", {"hall": "duel"})
    assert status == 201, body
    for client in [creator, *players]:
        client.close()


# ------------------------------------------------------------------------------- across worker processes
@pytest.fixture
def two_workers(tmp_path: Path) -> Any:
    """Two lobbies over one SQLite file: what two server processes share is the store, not a lock."""
    config = write_config(
        tmp_path / "cfg",
        database_uri=f"sqlite:///{tmp_path / 'shared.db'}",
        overrides={"limits": {"open_games_per_user": 3, "games_per_user": None}},
    )
    workers = [Worker(load_settings(config, environ={})) for _ in range(2)]
    yield workers
    for worker in workers:
        worker.close()


def test_one_seat_per_person_holds_across_workers(two_workers: list[Worker]) -> None:
    first, second = two_workers
    host = Principal(id="user-host", name="Host", kind="human")
    ada = Principal(id="user-ada", name="Ada", kind="human")
    for _ in range(20):
        game_id = first.lobby.create_game("trio", host)["game_id"]
        second.table.get(game_id)  # both workers hold the game in memory, each with its own lock

        answers = in_parallel(
            [partial(join_or_code, first, game_id, ada, 0), partial(join_or_code, second, game_id, ada, 1)]
        )
        seats = [answer for answer in answers if isinstance(answer, int)]
        assert len(seats) == 1 and answers.count("seat_taken") == 1, answers
        merged = first.lobby.my_games(ada)
        assert [g["your_seats"] for g in merged if g["game_id"] == game_id] == [seats], merged


def join_or_code(worker: Worker, game_id: str, person: Principal, seat: int) -> Any:
    try:
        return worker.lobby.join(game_id, person, seat)
    except ServerError as err:
        return err.code


def test_open_games_limit_holds_across_workers(two_workers: list[Worker]) -> None:
    first, second = two_workers
    bea = Principal(id="user-bea", name="Bea", kind="human")

    def create(worker: Worker) -> Any:
        try:
            return worker.lobby.create_game("duel", bea, address="10.0.0.1")["game_id"]
        except ServerError as err:
            return err.code

    answers = in_parallel([lambda w=w: create(w) for w in [first, second] * 4])
    created = [a for a in answers if a != "too_many_open_games"]
    assert len(created) == 3, answers
    first.table.abort(created[0], "an admin ended it")  # an aborted waiting game frees its slot too
    assert create(second) not in ("too_many_open_games", None)


# ------------------------------------------------------------------------------------------------ names
def test_a_name_like_another_seats_is_refused_without_revealing_who(server: ServerProcess) -> None:
    first = Client(server.url, unique("Ann"))
    name = first.user["name"]  # type: ignore[index]
    status, body = first.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201, body
    game_id = body["game"]["game_id"]
    twin = Client(server.url, name.upper())  # another person whose name reads the same
    status, body = twin.rest("POST", f"/api/games/{game_id}/join", {})
    assert status == 400 and body["error"]["code"] == "invalid_name", body
    assert "seat 0" in body["error"]["message"] and body["error"]["details"] == {"seat": 0}, body
    assert first.user["id"] not in str(body)  # type: ignore[index]
    status, summary = twin.rest("GET", f"/api/games/{game_id}")
    assert summary["game"]["open_seats"] == [1], summary  # nothing changed
    first.close()
    twin.close()


def test_parallel_joins_of_look_alike_names_never_both_sit(server: ServerProcess) -> None:
    for attempt in range(10):
        creator = Client(server.url, unique("Host"))
        status, body = creator.rest("POST", "/api/games", {"hall": "trio"})
        assert status == 201, body
        game_id = body["game"]["game_id"]
        name = unique("Twin")
        twins = [Client(server.url, name), Client(server.url, name.upper())]
        url = f"{server.url}/api/games/{game_id}/join"
        answers = in_parallel([partial(post, twin.http, url, {}) for twin in twins])
        statuses = sorted(status for status, _ in answers)
        assert statuses == [200, 400], (attempt, answers)
        for client in [creator, *twins]:
            client.close()


# ------------------------------------------------------------------------------------------------ seeds
def test_only_admins_set_a_games_seed(server: ServerProcess) -> None:
    player = Client(server.url, unique("Seeder"))
    status, body = player.rest("POST", "/api/games", {"hall": "duel", "seed": 7})
    assert status == 403 and body["error"]["code"] == "forbidden", body
    assert "admin" in body["error"]["message"]
    made = requests.post(
        f"{server.url}/api/admin/tokens", json={"name": "researcher", "scopes": ["play", "admin"]}, auth=ADMIN
    )
    assert made.status_code == 201, made.text
    admin = Client(server.url, token=made.json()["token"])
    status, body = admin.rest("POST", "/api/games", {"hall": "duel", "seed": 7})
    assert status == 201, body
    researcher = requests.get(f"{server.url}/api/admin/games/{body['game']['game_id']}", auth=ADMIN).json()
    assert researcher["meta"]["seed"] == 7, researcher
    player.close()
    admin.close()


def test_look_alike_names_never_both_sit_across_workers(two_workers: list[Worker]) -> None:
    """Each worker checks names under its own lock: only the store's claim on the name's look-alike class
    keeps two look-alikes joining through different workers from both sitting."""
    first, second = two_workers
    host = Principal(id="user-host-names", name="Host", kind="human")
    for attempt in range(20):
        game_id = first.lobby.create_game("trio", host)["game_id"]
        second.table.get(game_id)
        twin = f"Twin-{attempt}a"
        people = [
            Principal(id=f"user-a-{attempt}", name=twin, kind="human"),
            Principal(id=f"user-b-{attempt}", name=twin.upper(), kind="human"),
        ]
        answers = in_parallel(
            [
                partial(join_or_code, first, game_id, people[0], 0),
                partial(join_or_code, second, game_id, people[1], 1),
            ]
        )
        seated = [answer for answer in answers if isinstance(answer, int)]
        assert len(seated) == 1 and answers.count("invalid_name") == 1, (attempt, answers)
