"""The practice game's server side (server/web/practice.py) on the real app, over SQLite and the real pymongo
path: one running practice per person (a second start resumes it), listed in no lobby or hall list, played
to the win against the practice partner through the REST actions, then its completion is stored once; the
refusals are typed and change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from e2e_helpers import write_config
from in_process import InProcessApp, InProcessClient, rest_act, view_when

from server.table.principal import Principal
from server.web.practice import completed_key, practice_completed


@pytest.fixture(params=["sqlite", "mongodb"])
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    uri = request.getfixturevalue("mongo_uri") + "/practice" if request.param == "mongodb" else None
    made = InProcessApp(write_config(tmp_path_factory.mktemp("practice"), database_uri=uri))
    yield made
    made.close()


def test_a_practice_is_played_to_the_win_and_its_completion_stored(app: InProcessApp) -> None:
    player = app.client("Newcomer")
    status, body = player.rest("POST", "/api/practice", {})
    assert status == 200, body
    game_id = body["game_id"]
    # a second start resumes the running practice; nobody sees it in the lobby's lists
    assert player.rest("POST", "/api/practice", {})[1]["game_id"] == game_id
    assert game_id not in [g["game_id"] for g in player.rest("GET", "/api/games")[1]["games"]]
    assert "practice" not in [h["name"] for h in player.rest("GET", "/api/halls")[1]["halls"]]
    assert game_id in [g["game_id"] for g in player.rest("GET", "/api/me/games")[1]["games"]]

    # before the win, completion is refused and nothing is stored
    status, body = player.rest("POST", f"/api/practice/{game_id}/completed", {})
    assert status == 409 and body["error"]["code"] == "game_not_over"
    assert player.rest("GET", "/api/practice")[1]["completed"] is False

    # the worked example: ask for the coal, accept the stick, craft 4 torches
    view = view_when(player, game_id, lambda v: "propose" in v["legal_actions"])
    assert view["target"] == {"torch": 4}
    rest_act(player, game_id, "propose", to=1, offer={"cobblestone": 1}, request={"coal": 1})
    view_when(player, game_id, lambda v: v["phase"] == "craft")
    rest_act(player, game_id, "finish_crafting")
    view = view_when(player, game_id, lambda v: "decide" in v["legal_actions"])
    assert view["pending_proposal"]["offer"] == {"stick": 1}
    assert view["pending_proposal"]["request"] == {"cobblestone": 1}
    rest_act(player, game_id, "decide", accept=True)
    view_when(player, game_id, lambda v: "craft" in v["legal_actions"])
    rest_act(player, game_id, "craft", recipe="torch", runs=1)
    rest_act(player, game_id, "finish_crafting")
    view = view_when(player, game_id, lambda v: v["finished"])
    assert view["winners"] == [0]

    status, body = player.rest("POST", f"/api/practice/{game_id}/completed", {})
    assert status == 200 and body["completed"] is True and body["completed_game_id"] == game_id
    stored = app.services.store.get_value(completed_key(player.user["id"]))
    # a second report changes nothing: the first completion stands
    assert player.rest("POST", f"/api/practice/{game_id}/completed", {})[0] == 200
    assert app.services.store.get_value(completed_key(player.user["id"])) == stored
    assert practice_completed(app.services.store, _who(player))
    # the next start is a fresh game: the finished one is not resumed
    fresh = player.rest("POST", "/api/practice", {})[1]["game_id"]
    assert fresh != game_id


def test_refusals_are_typed_and_change_nothing(app: InProcessApp) -> None:
    anonymous = app.client()
    status, body = anonymous.rest("POST", "/api/practice", {})
    assert status == 401 and body["error"]["code"] == "not_logged_in"

    owner = app.client("Owner")
    game_id = owner.rest("POST", "/api/practice", {})[1]["game_id"]
    other = app.client("Other")
    status, body = other.rest("POST", f"/api/practice/{game_id}/completed", {})
    assert status == 403 and body["error"]["code"] == "not_your_seat"
    status, body = other.rest("POST", "/api/practice/nope/completed", {})
    assert status == 404 and body["error"]["code"] == "unknown_game"
    status, body = other.rest("POST", "/api/practice/" + "x" * 80 + "/completed", {})
    assert status == 404 and body["error"]["code"] == "unknown_game"

    # an ordinary game is not a practice game
    status, created = other.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201, created
    status, body = other.rest("POST", f"/api/practice/{created['game']['game_id']}/completed", {})
    assert status == 400 and body["error"]["code"] == "not_a_practice_game"

    # the practice hall cannot be seated by hand: its seat is reserved for the person who started it
    status, body = other.rest("POST", f"/api/games/{game_id}/join", {})
    assert status == 409 and body["error"]["code"] == "game_full"

    # an agent (API token) does not practise
    token, _ = app.services.store.create_token("bot-maker", ["play"])
    agent = app.client(token=token)
    status, body = agent.rest("POST", "/api/practice", {})
    assert status == 403 and body["error"]["code"] == "forbidden"
    assert not practice_completed(app.services.store, _who(owner))


def test_malformed_requests_are_refused_typed_and_start_nothing(app: InProcessApp) -> None:
    player = app.client("Mal Formed")
    for body, content_type, code, status in [
        ("{bad", "application/json", "invalid_request", 400),
        ("[1, 2]", "application/json", "invalid_request", 400),
        ("name=x", "application/x-www-form-urlencoded", "unsupported_media_type", 415),
    ]:
        for path in ("/api/practice", "/api/practice/nope/completed"):
            answer = player.http.open(path, method="POST", data=body, content_type=content_type)
            assert (answer.status_code, answer.get_json()["error"]["code"]) == (status, code), (path, body)
    assert player.rest("GET", "/api/practice")[1]["game_id"] is None  # no practice game was started


def test_practice_again_is_the_one_practice_game_and_the_partner_is_sam(app: InProcessApp) -> None:
    """The end screen's "Practice again" (the practice's rematch) and /practice lead to one game; the
    partner is named by its seat ("Sam") in the person's history."""
    player = app.client("Pat Again")
    first = player.rest("POST", "/api/practice", {})[1]["game_id"]
    status, body = player.rest("POST", f"/api/games/{first}/rematch", {})
    assert status == 409 and body["error"]["code"] == "game_not_over"
    rest_act(player, first, "resign")
    status, body = player.rest("POST", f"/api/games/{first}/rematch", {})
    assert status == 200, body
    again = body["game"]["game_id"]
    assert again != first and body["game"]["your_seat"] == 0 and body["game"]["hall"] == "practice"
    assert player.rest("POST", f"/api/games/{first}/rematch", {})[1]["game"]["game_id"] == again
    assert player.rest("POST", "/api/practice", {})[1]["game_id"] == again
    assert player.rest("GET", f"/api/games/{first}/rematch")[1]["rematch"] is None  # no lobby rematch made
    history = player.rest("GET", "/api/me/history")[1]["games"]
    assert [o["name"] for g in history if g["game_id"] == first for o in g["opponents"]] == ["Sam"]


def _who(player: InProcessClient) -> Principal:
    return Principal(id=player.user["id"], name=player.user["name"], kind="human")
