"""The read-only routes behind the replay viewer and the item icons (the app in-process, test clients).

A three-player game with a rejected proposal and private crafting is played to its end while a spectator
watches; then every step of the replays is compared with what each viewer received live, and the private
parts are checked to stay with their owners.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_helpers import ADMIN, TRIO, Participant
from flask.testing import FlaskClient
from in_process import InProcessApp
from pydantic import TypeAdapter

from server.game.schemas import PlayerView, SpectatorView, ViewerEvent
from server.table.replay import ReplayStep


def _replay(http: FlaskClient, game_id: str, **params: Any) -> tuple[int, dict[str, Any]]:
    response = http.get(f"/api/games/{game_id}/replay", query_string=params)
    return response.status_code, response.json


def _admin_replay(app: InProcessApp, game_id: str, **params: Any) -> tuple[int, dict[str, Any]]:
    response = app.http().get(f"/api/games/{game_id}/replay", query_string=params, auth=ADMIN)
    return response.status_code, response.json


@pytest.fixture(scope="module")
def played(app_client: InProcessApp) -> Iterator[dict[str, Any]]:
    """The trio game of test_server_e2e, with a rejected proposal in turn 1; refusals checked mid-game."""
    made: list[Participant] = []
    seated = []
    for i in range(3):
        client = app_client.client(f"R{i}-{uuid.uuid4().hex[:4]}").connect()
        made.append(client)
        seated.append(client)
    p0, p1, p2 = seated
    game_id = p0.call("create_game", {"hall": "trio"})["game"]["game_id"]
    for seat, client in enumerate(seated):
        assert client.call("join", {"game_id": game_id})["seat"] == seat
    watcher = app_client.client().connect()
    made.append(watcher)
    assert watcher.call("watch", {"game_id": game_id})["ok"]
    secret_offer, secret_reply = f"SECRET-OFFER-{uuid.uuid4().hex}", f"SECRET-REPLY-{uuid.uuid4().hex}"

    proposal = {"to": 1, "offer": {"iron_ingot": 1}, "request": {"coal": 1}, "message": secret_offer}
    assert p0.act(game_id, "propose", **proposal)["ok"]
    running = {
        "spectator": _replay(app_client.http(), game_id),
        "own seat": _replay(p0.http, game_id, view="0"),
        "admin": _admin_replay(app_client, game_id, view="researcher"),
    }
    assert p1.act(game_id, "decide", accept=False, message=secret_reply)["ok"]
    assert p0.act(game_id, "craft", recipe="stick", runs="1/2")["ok"]
    for client in (p0, p1, p2):
        assert client.act(game_id, "finish_crafting")["ok"]
    assert p1.act(game_id, "propose", to=0, offer={"coal": 1}, request={"iron_ingot": 1})["ok"]
    assert p0.act(game_id, "decide", accept=True)["ok"]
    assert p0.act(game_id, "craft", recipe="torch", runs="1/4")["ok"]
    assert p1.act(game_id, "craft", recipe="shears", runs=1)["ok"]
    for client in (p2, p1, p0):
        assert client.act(game_id, "finish_crafting")["ok"]
    for client in (p0, p1, p2, watcher):
        client.wait_status(game_id, "finished")
    yield {
        "game_id": game_id,
        "players": seated,
        "watcher": watcher,
        "secrets": [secret_offer, secret_reply],
        "running": running,
    }
    for client in made:
        client.close()


def _all_steps(fetch: Any) -> list[dict[str, Any]]:
    status, first = fetch(step=0)
    assert status == 200, first
    steps = [first]
    for k in range(1, first["steps"]):
        status, answer = fetch(step=k)
        assert status == 200, answer
        steps.append(answer)
    return steps


def _live_views(client: Participant, game_id: str) -> dict[int, dict[str, Any]]:
    """The view a live client held after each log size it was told about (the last one wins)."""
    views: dict[int, dict[str, Any]] = {}
    for name, data in client.received:
        live = name in ("update", "ack") and isinstance(data, dict) and data.get("game_id") == game_id
        if live and data.get("view") is not None:
            views[data["log_size"]] = data["view"]
    return views


def test_a_running_game_is_not_replayed_for_anyone(played: dict[str, Any]) -> None:
    for who, (status, body) in played["running"].items():
        assert status == 409 and body["ok"] is False, who
        assert body["error"]["code"] == "game_not_over", who
        assert set(body) == {"ok", "error"} and "events" not in json.dumps(body), who


@pytest.mark.parametrize("seat", [None, 0])
def test_every_replay_step_is_what_the_viewer_saw_live(played: dict[str, Any], seat: int | None) -> None:
    game_id = played["game_id"]
    client = played["watcher"] if seat is None else played["players"][seat]
    params = {} if seat is None else {"view": str(seat)}
    steps = _all_steps(lambda **kw: _replay(client.http, game_id, **params, **kw))
    live_events = client.call("events", {"game_id": game_id})["events"]
    assert [s["event"] for s in steps] == live_events
    live_views = _live_views(client, game_id)
    compared = 0
    for answer in steps:
        ReplayStep.model_validate(answer)
        (SpectatorView if seat is None else PlayerView).model_validate(answer["view"])
        TypeAdapter(ViewerEvent).validate_python(answer["event"])
        assert answer["viewer"] == ("spectator" if seat is None else "seat") and answer["seat"] == seat
        # the view after the event (game_started comes with the first phase_started: one transition)
        assert answer["view"]["log_size"] == max(answer["step"] + 1, 2)
        if answer["step"] + 1 in live_views:
            assert answer["view"] == live_views[answer["step"] + 1], answer["step"]
            compared += 1
    assert compared >= 5
    assert steps[-1]["view"]["finished"] and steps[-1]["event"]["type"] == "game_ended"
    # the end screen's targets come from the public reveal, only once the log reached it
    assert steps[-1]["revealed"]["targets"] == list(TRIO["targets"])
    assert all(s["revealed"] is None for s in steps[:-2])
    assert [e["n"] for e in steps[-1]["recent"]] == list(range(len(steps) - 13, len(steps) - 1))
    seen = json.dumps(steps)
    for secret in played["secrets"]:
        assert (secret in seen) == (seat == 0)


def test_private_views_stay_with_their_owners(app_client: InProcessApp, played: dict[str, Any]) -> None:
    game_id = played["game_id"]
    _, p1, p2 = played["players"]
    refusals = [
        _replay(p2.http, game_id, view="0"),
        _replay(p1.http, game_id, view="researcher"),
        _replay(played["watcher"].http, game_id, view="1"),
        _replay(app_client.http(), game_id, view="2"),
    ]
    for status, body in refusals:
        assert status == 403 and body["error"]["code"] == "forbidden", body
        assert not any(secret in json.dumps(body) for secret in played["secrets"])
    status, own = _replay(p2.http, game_id, view="2", step=0)
    assert status == 200 and own["viewers"] == ["spectator", "2"]
    third_party = _all_steps(lambda **kw: _replay(p2.http, game_id, view="2", **kw))
    dump = json.dumps(third_party)
    assert not any(secret in dump for secret in played["secrets"])
    assert not any(s["event"]["type"] in ("proposed", "decided") for s in third_party[:8])
    # the admin may see every seat and the researcher view (which holds every target)
    status, researcher = _admin_replay(app_client, game_id, view="researcher")
    assert status == 200 and researcher["viewers"] == ["spectator", "0", "1", "2", "researcher"]
    assert researcher["steps"] > own["steps"]
    assert [t for t in researcher["view"]["targets"]] == list(TRIO["targets"])
    status, seat0 = _admin_replay(app_client, game_id, view="0")
    assert status == 200 and seat0["view"]["target"] == TRIO["targets"][0]


def test_jump_to_a_turn_and_refuse_bad_steps(app_client: InProcessApp, played: dict[str, Any]) -> None:
    game_id, anonymous = played["game_id"], app_client.http()
    status, last = _replay(anonymous, game_id)
    assert status == 200 and last["step"] == last["steps"] - 1
    assert [t["turn"] for t in last["turns"]] == [1, 2]
    status, turn2 = _replay(anonymous, game_id, turn=2)
    assert status == 200 and turn2["step"] == last["turns"][1]["step"] and turn2["turn"] == 2
    assert turn2["event"]["type"] == "phase_started" and turn2["event"]["payload"]["turn"] == 2
    status, back = _replay(anonymous, game_id, step=1)  # backwards after a later step: replayed again
    assert status == 200 and back["view"]["turn"] == 1
    for params, code, http in (
        ({"step": last["steps"]}, "invalid_request", 400),
        ({"step": -1}, "invalid_request", 400),
        ({"step": "9" * 40}, "invalid_request", 400),
        ({"turn": 9}, "invalid_request", 400),
        ({"view": "7"}, "invalid_request", 400),
        ({"view": "<b>x</b>"}, "invalid_request", 400),
    ):
        status, body = _replay(anonymous, game_id, **params)
        assert status == http and body["error"]["code"] == code, (params, body)
    status, body = _replay(anonymous, "no-such-game")
    assert status == 404 and body["error"]["code"] == "unknown_game"


def test_item_catalogue_route(app_client: InProcessApp) -> None:
    http = app_client.http()
    response = http.get("/api/rulesets/minecraft/items")
    assert response.status_code == 200
    catalogue = response.json
    assert catalogue["ruleset"] == "minecraft" and len(catalogue["items"]) > 1200
    assert catalogue["items"]["oak_planks"]["category"] == "wood"
    again = http.get("/api/rulesets/minecraft/items", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304 and not again.data
    for name in ("alchemy", "../minecraft", "nonexistent", "%2e%2e"):
        response = http.get(f"/api/rulesets/{name}/items")
        assert response.status_code == 404, name  # alchemy: no hall of this test server plays it
        assert response.json["error"]["code"] in ("unknown_ruleset", "invalid_request")
