"""No cross-site actions (issue 18 item 5), on a real server process over real sockets and a real SQLite file.

What a page of another origin can make a logged-in browser send (a form posting ``text/plain`` or
``application/x-www-form-urlencoded``, a ``fetch`` carrying a foreign ``Origin``) changes nothing: accepting a
trade, resigning, creating a game, logging in. The game's own pages (same host) and token clients still act.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import requests
from e2e_helpers import ADMIN, DUEL_TRADE, Client, MakeServer, ServerProcess

FOREIGN = "http://evil.example:8666"
ALLOWED = "https://play.example.org"
#: A body-carrying request a foreign page can make without a CORS preflight, or with a foreign Origin.
FORGERIES: dict[str, dict[str, Any]] = {
    "text/plain form": {"content_type": "text/plain", "origin": FOREIGN},
    "urlencoded form": {"content_type": "application/x-www-form-urlencoded", "origin": FOREIGN},
    "multipart form": {"content_type": "multipart/form-data; boundary=x", "origin": FOREIGN},
    "JSON, foreign Origin": {"content_type": "application/json", "origin": FOREIGN},
    "JSON, foreign Referer only": {"content_type": "application/json", "referer": FOREIGN + "/page"},
    "JSON, Origin null": {"content_type": "application/json", "origin": "null"},
    "text/plain, no Origin": {"content_type": "text/plain"},
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server(overrides={"security": {"allowed_origins": [ALLOWED]}})


def forge(victim: Client, path: str, payload: dict[str, Any], how: dict[str, Any]) -> requests.Response:
    """``POST path`` with the victim's cookie, shaped as ``how`` says (the body is the JSON text either way:
    a text/plain form can spell any JSON)."""
    headers = {"Content-Type": how["content_type"]}
    if "origin" in how:
        headers["Origin"] = how["origin"]
    if "referer" in how:
        headers["Referer"] = how["referer"]
    return victim.http.post(victim.url + path, data=json.dumps(payload), headers=headers, timeout=15)


def refused(answer: requests.Response) -> None:
    assert answer.status_code in (403, 415), (answer.status_code, answer.text[:300])
    assert answer.json()["error"]["code"] == (
        "cross_site_request" if answer.status_code == 403 else "unsupported_media_type"
    ), answer.text[:300]
    assert "Set-Cookie" not in answer.headers


def duel_with_offer(server: ServerProcess, clients: list[Client]) -> tuple[str, Client, Client]:
    """A running duel in which seat 0 offered a trade that seat 1 (the victim) could accept."""
    p0 = Client(server.url, f"A-{uuid.uuid4().hex[:6]}")
    p1 = Client(server.url, f"V-{uuid.uuid4().hex[:6]}")
    clients.extend([p0, p1])
    status, created = p0.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201, created
    game_id = created["game"]["game_id"]
    status, joined = p1.rest("POST", f"/api/games/{game_id}/join", {})
    assert status == 200, joined
    status, proposed = p0.rest("POST", f"/api/games/{game_id}/actions/propose", DUEL_TRADE)
    assert status == 200 and proposed["ok"], proposed
    return game_id, p0, p1


def game_state(player: Client, game_id: str) -> tuple[str, int]:
    status, events = player.rest("GET", f"/api/games/{game_id}/events?after=-1")
    assert status == 200, events
    status, summary = player.rest("GET", f"/api/games/{game_id}")
    return summary["game"]["status"], len(events["events"])


@pytest.mark.parametrize("how", list(FORGERIES.values()), ids=list(FORGERIES))
def test_forged_accept_and_resign_change_nothing(
    server: ServerProcess, clients: list[Client], how: dict[str, Any]
) -> None:
    game_id, _, victim = duel_with_offer(server, clients)
    before = game_state(victim, game_id)
    refused(forge(victim, f"/api/games/{game_id}/actions/decide", {"accept": True, "message": "x"}, how))
    refused(forge(victim, f"/api/games/{game_id}/actions", {"type": "decide", "accept": True}, how))
    refused(forge(victim, f"/api/games/{game_id}/actions/resign", {}, how))
    assert game_state(victim, game_id) == before
    # the victim's own page still acts
    ack = victim.http.post(
        f"{server.url}/api/games/{game_id}/actions/decide",
        json={"accept": True, "message": "deal"},
        headers={"Origin": server.url},
        timeout=15,
    )
    assert ack.status_code == 200 and ack.json()["ok"], ack.text[:300]
    assert game_state(victim, game_id)[1] > before[1]


@pytest.mark.parametrize("how", list(FORGERIES.values()), ids=list(FORGERIES))
def test_forged_create_game_and_login_change_nothing(
    server: ServerProcess, clients: list[Client], how: dict[str, Any]
) -> None:
    victim = Client(server.url, f"V-{uuid.uuid4().hex[:6]}")
    clients.append(victim)
    _, mine = victim.rest("GET", "/api/me/games")
    refused(forge(victim, "/api/games", {"hall": "duel", "join": True}, how))
    assert victim.rest("GET", "/api/me/games")[1]["games"] == mine["games"]
    cookie = victim.http.cookies.get_dict()
    refused(forge(victim, "/api/login", {"name": "Mallory"}, how))
    refused(forge(victim, "/api/logout", {}, how))
    assert victim.http.cookies.get_dict() == cookie
    assert victim.rest("GET", "/api/me")[1]["user"]["id"] == victim.user["id"]


def test_a_body_less_post_from_a_foreign_page_is_refused(
    server: ServerProcess, clients: list[Client]
) -> None:
    """A cross-site ``fetch(url, {method: "POST", mode: "no-cors", credentials: "include"})`` sends no
    Content-Type and no body, but an Origin."""
    victim = Client(server.url, f"V-{uuid.uuid4().hex[:6]}")
    clients.append(victim)
    answer = victim.http.post(server.url + "/api/logout", headers={"Origin": FOREIGN}, timeout=15)
    refused(answer)
    assert victim.rest("GET", "/api/me")[1]["user"] is not None
    # the same from no page at all (curl, a script) is a plain client's logout
    answer = victim.http.post(server.url + "/api/logout", timeout=15)
    assert answer.status_code == 200
    assert victim.rest("GET", "/api/me")[1]["user"] is None


def test_forged_admin_requests_change_nothing(server: ServerProcess) -> None:
    admin = requests.Session()
    login = admin.post(server.url + "/api/admin/login", json={"password": ADMIN[1]}, timeout=15)
    assert login.status_code == 200, login.text
    tokens = admin.get(server.url + "/api/admin/tokens", timeout=15).json()["tokens"]
    for how in FORGERIES.values():
        headers = {
            "Content-Type": how["content_type"],
            **({"Origin": how["origin"]} if "origin" in how else {}),
        }
        headers.update({"Referer": how["referer"]} if "referer" in how else {})
        answer = admin.post(
            server.url + "/api/admin/tokens", data='{"name": "evil"}', headers=headers, timeout=15
        )
        refused(answer)
        # HTTP Basic credentials are sent by browsers on their own too: the same rules hold
        answer = requests.post(
            server.url + "/api/admin/tokens", data='{"name": "evil"}', headers=headers, auth=ADMIN, timeout=15
        )
        refused(answer)
    assert admin.get(server.url + "/api/admin/tokens", timeout=15).json()["tokens"] == tokens


def test_same_origin_configured_origins_and_tokens_still_act(
    server: ServerProcess, clients: list[Client]
) -> None:
    player = Client(server.url, f"P-{uuid.uuid4().hex[:6]}")
    clients.append(player)
    for origin in (server.url, ALLOWED, None):
        headers = {"Origin": origin} if origin else {"Referer": server.url + "/lobby"}
        answer = player.http.post(
            server.url + "/api/games",
            json={"hall": "duel", "join": False},
            headers=headers,
            timeout=15,
        )
        assert answer.status_code == 201, (origin, answer.text[:300])
    answer = player.http.post(
        server.url + "/api/games",
        data='{"hall": "duel"}',
        headers={"Content-Type": "application/json; charset=utf-8", "Origin": server.url},
        timeout=15,
    )
    assert answer.status_code == 201, answer.text[:300]
    # an API token is not sent by a browser on its own: no Origin rule (the JSON rule holds)
    token = requests.post(server.url + "/api/admin/tokens", json={"name": "bot"}, auth=ADMIN, timeout=15)
    bot = requests.Session()
    bot.headers["Authorization"] = "Bearer " + token.json()["token"]
    answer = bot.post(
        server.url + "/api/games", json={"hall": "duel"}, headers={"Origin": FOREIGN}, timeout=15
    )
    assert answer.status_code == 201, answer.text[:300]
    answer = bot.post(
        server.url + "/api/games", data='{"hall": "duel"}', headers={"Content-Type": "text/plain"}, timeout=15
    )
    assert answer.status_code == 415 and answer.json()["error"]["code"] == "unsupported_media_type"


def test_the_error_codes_are_declared(server: ServerProcess) -> None:
    codes = requests.get(server.url + "/api/errors", timeout=15).json()["server"]
    assert "cross_site_request" in codes and "unsupported_media_type" in codes


def test_an_unverified_bearer_header_does_not_lift_the_origin_rule(
    server: ServerProcess, clients: list[Client]
) -> None:
    """Found by the hostile-input fuzz: any ``Authorization: Bearer`` header skipped the Origin check, while
    logout and the admin area act on the cookie whatever the header says. Only a token that verifies is a
    token client; with one that does not, the cookie-carried request is refused and changes nothing."""
    victim = Client(server.url, f"V-{uuid.uuid4().hex[:6]}")
    clients.append(victim)
    admin = requests.Session()
    assert admin.post(server.url + "/api/admin/login", json={"password": ADMIN[1]}, timeout=15).ok
    tokens = admin.get(server.url + "/api/admin/tokens", timeout=15).json()["tokens"]
    for bearer in ("Bearer tc_forged", "bearer x", "Bearer tc_\x00\x1b"):
        headers = {"Origin": FOREIGN, "Content-Type": "application/json", "Authorization": bearer}
        for session, path, payload in (
            (victim.http, "/api/logout", None),
            (admin, "/api/admin/tokens", {"name": "evil"}),
            (admin, "/api/admin/logout", None),
        ):
            answer = session.post(server.url + path, json=payload, headers=headers, timeout=15)
            assert answer.status_code == 401, (bearer, path, answer.status_code, answer.text[:300])
            assert answer.json()["error"]["code"] == "invalid_token", answer.text[:300]
            assert "Set-Cookie" not in answer.headers
    assert victim.rest("GET", "/api/me")[1]["user"] is not None
    assert admin.get(server.url + "/api/admin/tokens", timeout=15).json()["tokens"] == tokens
