"""Sessions that end (issue 18 item 4), on real server processes over real sockets and a real SQLite file.

A copied cookie is refused after logout (over REST and on an already-open socket), an admin cookie after admin
logout and after the admin password changed (a new server on the same store), every session of a user after an
admin ended them, and a session after its idle or absolute lifetime.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
import socketio
import yaml
from e2e_helpers import ADMIN, Client, MakeServer, ServerProcess, write_config
from in_process import MakeApp

from server.store import open_store
from server.table.config import load_settings
from server.web.sessions import Sessions, session_key


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server()


def person(server: ServerProcess, clients: list[Client]) -> Client:
    client = Client(server.url, f"S-{uuid.uuid4().hex[:6]}")
    clients.append(client)
    return client


def copy_of(client: Client) -> requests.Session:
    """Another browser holding a copy of ``client``'s cookie."""
    thief = requests.Session()
    thief.cookies.update(client.http.cookies)
    return thief


def me(http: requests.Session, server: ServerProcess) -> Any:
    return http.get(server.url + "/api/me", timeout=15).json()["user"]


def refused_on_socket(client: Client) -> bool:
    """The open socket was disconnected, or its next event answers ``not_logged_in``."""
    deadline = time.monotonic() + 5
    while client.sio.connected and time.monotonic() < deadline:
        try:
            ack = client.call("whoami", {}, timeout=5)
        except Exception:  # disconnected while waiting for the answer
            break
        if not ack["ok"]:
            assert ack["error"]["code"] == "not_logged_in", ack
            return True
        time.sleep(0.05)
    return not client.sio.connected


def store_of(server: ServerProcess) -> Any:
    return open_store(load_settings(str(server.config)).database_uri)


def test_a_copied_cookie_is_refused_after_logout(server: ServerProcess, clients: list[Client]) -> None:
    player = person(server, clients)
    thief = copy_of(player)
    assert me(thief, server)["id"] == player.user["id"]
    player.connect()
    assert player.call("whoami", {})["user"]["id"] == player.user["id"]

    status, _ = player.rest("POST", "/api/logout", {})
    assert status == 200
    assert me(thief, server) is None
    created = thief.post(server.url + "/api/games", json={"hall": "duel", "join": True}, timeout=15)
    assert created.status_code == 401 and created.json()["error"]["code"] == "not_logged_in"
    assert refused_on_socket(player)


def test_a_logout_elsewhere_refuses_the_next_socket_event(
    server: ServerProcess, clients: list[Client]
) -> None:
    """The per-event check (what a socket on another server process meets): the session ends in the store,
    not through this process's logout route."""
    player = person(server, clients)
    player.connect()
    with store_of(server) as store:
        key = session_key(player.http.cookies["tradecraft_session"])
        assert store.replace_value(key, store.get_value(key), None)
    before = requests.get(server.url + "/api/games?status=waiting", timeout=15).json()["games"]
    try:
        ack = player.call("create_game", {"hall": "duel", "join": True}, timeout=5)
        assert not ack["ok"] and ack["error"]["code"] == "not_logged_in", ack
    except socketio.exceptions.TimeoutError:  # disconnected before the answer: refused as well
        assert not player.sio.connected
    assert refused_on_socket(player)
    assert requests.get(server.url + "/api/games?status=waiting", timeout=15).json()["games"] == before


def test_a_socket_whose_session_ended_in_another_process_is_closed_without_sending_anything(
    make_server: MakeServer, tmp_path: Path, clients: list[Client]
) -> None:
    """Several workers: a logout handled by another process reaches this one only through the store; the
    periodic check closes the socket within ``security.socket_session_check_seconds``, so a silent socket
    (one that never sends an event) stops receiving its seat's pushes too."""
    config = write_config(tmp_path, overrides={"security": {"socket_session_check_seconds": 0.5}})
    server = make_server(config)
    player = person(server, clients)
    player.connect()
    assert player.call("whoami", {})["user"]["id"] == player.user["id"]
    with store_of(server) as store:
        key = session_key(player.http.cookies["tradecraft_session"])
        assert store.replace_value(key, store.get_value(key), None)
    deadline = time.monotonic() + 10
    while player.sio.connected and time.monotonic() < deadline:
        time.sleep(0.1)  # no event is sent: only the server's own check can close it
    assert not player.sio.connected


def test_login_starts_a_new_session_id(server: ServerProcess, clients: list[Client]) -> None:
    player = person(server, clients)
    planted = player.http.cookies["tradecraft_session"]
    player.login("Another")
    assert player.http.cookies["tradecraft_session"] != planted
    assert me(requests.Session(), server) is None
    planted_copy = requests.Session()
    planted_copy.cookies.set("tradecraft_session", planted)
    assert me(planted_copy, server) is None


def admin_session(server: ServerProcess, password: str = ADMIN[1]) -> requests.Session:
    admin = requests.Session()
    answer = admin.post(server.url + "/api/admin/login", json={"password": password}, timeout=15)
    assert answer.status_code == 200, answer.text
    assert admin.get(server.url + "/api/admin/tokens", timeout=15).status_code == 200
    return admin


def test_an_admin_cookie_is_refused_after_admin_logout(server: ServerProcess, clients: list[Client]) -> None:
    admin = admin_session(server)
    thief = requests.Session()
    thief.cookies.update(admin.cookies)
    assert admin.post(server.url + "/api/admin/logout", timeout=15).status_code == 200
    for http in (admin, thief):
        answer = http.get(server.url + "/api/admin/tokens", timeout=15)
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"
    # a person's admin logout keeps their display-name login
    player = person(server, clients)
    assert player.http.post(server.url + "/api/admin/login", json={"password": ADMIN[1]}, timeout=15).ok
    assert player.http.get(server.url + "/api/admin/tokens", timeout=15).status_code == 200
    assert player.http.post(server.url + "/api/admin/logout", timeout=15).ok
    assert player.http.get(server.url + "/api/admin/tokens", timeout=15).status_code == 403
    assert me(player.http, server)["id"] == player.user["id"]


def test_admin_sessions_end_when_the_password_changes(make_server: MakeServer, tmp_path: Path) -> None:
    first = make_server(admin_password="first-password")
    admin = admin_session(first, "first-password")
    player = Client(first.url, "Keeps")
    try:
        first.stop()
        config = yaml.safe_load(first.config.read_text())
        config["security"]["admin_password"] = "second-password"
        second_config = first.config.parent / "second.yaml"
        second_config.write_text(yaml.safe_dump(config))
        second = make_server(second_config)
        answer = admin.get(second.url + "/api/admin/tokens", timeout=15)
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden", answer.text
        # the same store and secret key: a person's login outlives the restart
        assert me(player.http, second)["id"] == player.user["id"]
        admin_session(second, "second-password")
    finally:
        player.close()


def test_an_admin_ends_every_session_of_a_user(server: ServerProcess, clients: list[Client]) -> None:
    player = person(server, clients)
    thief = copy_of(player)
    player.connect()
    bystander = person(server, clients)
    admin = admin_session(server)
    url = f"{server.url}/api/admin/users/{player.user['id']}/end-sessions"

    assert player.http.post(url, timeout=15).status_code == 403  # not for players
    answer = admin.post(url, timeout=15)
    assert answer.status_code == 200 and answer.json()["ok"], answer.text
    assert me(player.http, server) is None and me(thief, server) is None
    assert refused_on_socket(player)
    assert me(bystander.http, server)["id"] == bystander.user["id"]
    unknown = admin.post(f"{server.url}/api/admin/users/nobody/end-sessions", timeout=15)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_user"


def age_session(server: ServerProcess, client: Client, **ago_seconds: float) -> None:
    """Move the client's session back in time (``created`` and/or ``seen`` that many seconds ago)."""
    with store_of(server) as store:
        key = session_key(client.http.cookies["tradecraft_session"])
        raw = store.get_value(key)
        record = json.loads(raw)
        for field, ago in ago_seconds.items():
            record[field] = time.time() - ago
        assert store.replace_value(key, raw, json.dumps(record))


@pytest.mark.parametrize(
    "ago",
    [{"seen": 72 * 3600 + 60}, {"created": 720 * 3600 + 60, "seen": 0}],
    ids=["idle", "absolute"],
)
def test_sessions_expire(server: ServerProcess, clients: list[Client], ago: dict[str, float]) -> None:
    player = person(server, clients)
    player.connect()
    cookie = player.http.cookies["tradecraft_session"]
    fresh = person(server, clients)
    age_session(server, fresh, seen=72 * 3600 - 600)  # idle, but not long enough
    age_session(server, player, **ago)
    assert me(player.http, server) is None
    assert refused_on_socket(player)
    assert me(fresh.http, server)["id"] == fresh.user["id"]
    with store_of(server) as store:  # the expired record is gone; the fresh one's last use was written
        assert store.get_value(session_key(cookie)) is None
        seen = json.loads(store.get_value(session_key(fresh.http.cookies["tradecraft_session"])))["seen"]
        assert time.time() - seen < 60


def test_the_cookie_is_an_opaque_session_id(server: ServerProcess, clients: list[Client]) -> None:
    player = person(server, clients)
    cookie = player.http.cookies["tradecraft_session"]
    assert player.user["id"] not in cookie and "." not in cookie and len(cookie) >= 40
    answer = requests.post(server.url + "/api/login", json={"name": "Cookie"}, timeout=15)
    set_cookie = answer.headers["Set-Cookie"].lower()
    assert "httponly" in set_cookie and "samesite=lax" in set_cookie and "max-age=2592000" in set_cookie


def sweeps() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "_sweep_until_stopped" in t.name}


def test_the_socket_sweep_stops_with_its_app(make_app: MakeApp) -> None:
    """Each app's periodic session check is a background task: closing the app ends it (a test suite builds
    hundreds of apps; a sweep left running kept its app alive and logged a traceback per interval)."""
    before = sweeps()
    app = make_app(overrides={"security": {"socket_session_check_seconds": 0.05}})
    sessions = app.flask.session_interface
    assert isinstance(sessions, Sessions) and not sessions.stopped.is_set()
    (mine,) = sweeps() - before
    app.close()
    mine.join(5)
    assert not mine.is_alive()


def test_dead_session_records_are_swept_without_their_cookie_coming_back(
    make_server: MakeServer, tmp_path: Path, clients: list[Client]
) -> None:
    """A browser that drops its cookie never presents it again: the periodic sweep pages through the stored
    sessions and removes the expired and ended ones, and only those."""
    config = write_config(tmp_path, overrides={"security": {"socket_session_check_seconds": 0.2}})
    server = make_server(config)
    gone, ended, kept = (person(server, clients) for _ in range(3))
    age_session(server, gone, seen=72 * 3600 + 60)
    status, _ = ended.rest("POST", f"/api/admin/users/{ended.user['id']}/end-sessions", auth=ADMIN)
    assert status == 200
    keys = {
        name: session_key(c.http.cookies["tradecraft_session"])
        for name, c in [("gone", gone), ("ended", ended), ("kept", kept)]
    }
    deadline = time.monotonic() + 10
    with store_of(server) as store:
        while store.get_value(keys["gone"]) is not None or store.get_value(keys["ended"]) is not None:
            assert time.monotonic() < deadline, "the sweep did not remove the dead sessions"
            time.sleep(0.1)
        assert store.get_value(keys["kept"]) is not None


def test_a_late_answer_to_the_old_cookie_does_not_log_the_browser_out(
    server: ServerProcess, clients: list[Client]
) -> None:
    """A login (or an admin login, or a study link) gives the browser a new session id while another request
    of the same browser, sent with the old id, is still being answered. That answer must not clear the
    cookie: it arrives after the login's and would erase the new session (an admin flag lost in CI)."""
    player = person(server, clients)
    old = player.http.cookies["tradecraft_session"]
    player.login("Newer")
    late = requests.get(server.url + "/api/me", cookies={"tradecraft_session": old}, timeout=15)
    assert late.json()["user"] is None  # the old id is refused...
    assert "tradecraft_session" not in late.headers.get("Set-Cookie", "")  # ...without erasing the cookie
    assert me(player.http, server)["name"] == "Newer"
    logout = player.http.post(server.url + "/api/logout", json={}, timeout=15)
    assert logout.status_code == 200 and "tradecraft_session=;" in logout.headers.get("Set-Cookie", "")
