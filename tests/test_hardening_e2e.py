"""Hardening: what a curious or hostile client can learn or break (the app in-process, REST and Socket.IO
test clients; the same answers and pushes as over sockets).

One app serves the module. Its "privacy" hall draws a game from a pool file of many instances, so
the instance's file name and index are distinctive enough to be searched for in everything a client receives.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_helpers import DUEL, DUEL_CRAFTS, DUEL_TRADE, Participant, write_config
from in_process import InProcessApp, InProcessClient, MakeApp

POOL_FILE_STEM = "privacy_pool"
POOL_SIZE = 200
POOL_INDEX = 173
POOL_ID = f"minecraft/1p_v_1p/{POOL_FILE_STEM}#{POOL_INDEX}"
INDEX_WORD = re.compile(rf"(?<![\w.-]){POOL_INDEX}(?![\w.-])")


def shipped_instance_names() -> list[str]:
    """Every shipped instance's id (``minecraft/1p_v_1p/paper#7``), its file's path below TC_GAMES and its
    file name: the texts that would lead a reader to a shipped file and an entry in it."""
    from craft_rules.tasks import TC_GAMES_DIR

    names: set[str] = set()
    for path in sorted(Path(TC_GAMES_DIR).glob("*/*/*.json")):
        ruleset, mode = path.parent.parent.name, path.parent.name
        names.update((f"{ruleset}/{mode}/{path.stem}", path.name))
        records = json.loads(path.read_text(encoding="utf-8"))
        names.update(f"{ruleset}/{mode}/{path.stem}#{index}" for index in range(len(records)))
    return sorted(names)


SHIPPED_NAMES = shipped_instance_names()


def write_privacy_hall(config: Path) -> None:
    """Add hall "privacy": every game gets instance #173 of a 200-instance file."""
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    root = config.parent / "instances"
    (root / "minecraft" / "1p_v_1p" / f"{POOL_FILE_STEM}.json").write_text(
        json.dumps([DUEL] * POOL_SIZE), encoding="utf-8"
    )
    data["halls"]["shipped"] = {  # draws from the shipped paper set, as a study would
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "random", "set": "paper"},
        "game": {"max_turns": 3},
    }
    data["halls"]["fresh"] = {  # a fresh deal per game, as the shipped play halls
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "generated"},
        "game": {"max_turns": 3},
    }
    data["halls"]["privacy"] = {
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "fixed", "ids": [POOL_ID], "root": str(root)},
        "game": {"max_turns": 3},
    }
    config.write_text(yaml.safe_dump(data), encoding="utf-8")


@pytest.fixture(scope="module")
def app(make_app: MakeApp, tmp_path_factory: pytest.TempPathFactory) -> InProcessApp:
    config = write_config(tmp_path_factory.mktemp("hardening"))
    write_privacy_hall(config)
    return make_app(config)


def new_client(app: InProcessApp, made: list[Participant], name: str | None = None) -> InProcessClient:
    client = app.client(name)
    made.append(client)
    return client.connect()


def scalars(value: Any) -> Iterator[Any]:
    """Every key, string and number inside a JSON value."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from scalars(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from scalars(inner)
    else:
        yield value


def assert_instance_hidden(received: list[Any], who: str, pool: bool = True) -> int:
    """No string names the instance, its file or its index, or any shipped instance file or entry; no number
    equals the index."""
    checked = 0
    for value in scalars(received):
        checked += 1
        if isinstance(value, str):
            for secret in (POOL_ID, POOL_FILE_STEM, f"#{POOL_INDEX}") if pool else ():
                assert secret not in value, f"{who} received {value!r}, which reveals the instance"
            # the index as a word of its own; random ids (hex, url-safe base64) hold "173" by chance
            assert not (pool and INDEX_WORD.search(value)), f"{who} received {value!r}: the instance's index"
            if "/" in value or ".json" in value:  # every shipped name has one of them: skip the rest fast
                for shipped in SHIPPED_NAMES:
                    assert shipped not in value, f"{who} received {value!r}, which names a shipped instance"
        elif pool and isinstance(value, int | float) and not isinstance(value, bool):
            assert value != POOL_INDEX, f"{who} received the number {value}, the instance's index"
    return checked


# ------------------------------------------------------------------------------------------- privacy
def test_players_spectators_and_the_lobby_never_learn_the_instance(
    app: InProcessApp, clients: list[Participant]
) -> None:
    p0 = new_client(app, clients, f"P0-{uuid.uuid4().hex[:4]}")
    p1 = new_client(app, clients, f"P1-{uuid.uuid4().hex[:4]}")
    spectator = new_client(app, clients, f"Spec-{uuid.uuid4().hex[:4]}")
    anonymous = new_client(app, clients)  # no login: reads the lobby, watches, polls REST
    rest_answers: list[Any] = []

    def rest(client: Participant, method: str, path: str, payload: Any = None) -> dict[str, Any]:
        status, body = client.rest(method, path, payload)
        assert status < 500, body
        rest_answers.append(body)
        return body

    anonymous.call("lobby", {})
    created = p0.call("create_game", {"hall": "privacy"})
    assert created["ok"], created
    game_id = created["game"]["game_id"]
    for client in (p0, p1):
        assert client.call("join", {"game_id": game_id})["ok"]
    p1.wait_log(game_id, 2)
    assert spectator.call("watch", {"game_id": game_id})["ok"]
    assert anonymous.call("watch", {"game_id": game_id})["ok"]

    def read_everything() -> None:
        for client in (p0, p1, spectator, anonymous):
            client._record("read", client.call("view", {"game_id": game_id}))
            client._record("read", client.call("events", {"game_id": game_id}))
            client._record("read", client.call("lobby", {}))
            for path in (
                "/api/games",
                f"/api/games/{game_id}",
                f"/api/games/{game_id}/view",
                f"/api/games/{game_id}/events",
                "/api/halls",
                "/api/me",
            ):
                rest(client, "GET", path)

    # the whole game but the last action: every answer, push and REST read while it runs
    read_everything()
    assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]
    read_everything()
    assert p1.act(game_id, "decide", accept=True, message="deal")["ok"]
    for seat, client in ((0, p0), (1, p1)):
        for craft in DUEL_CRAFTS[seat]:
            assert client.act(game_id, "craft", **craft)["ok"]
    read_everything()
    assert p0.act(game_id, "finish_crafting")["ok"]
    spectator.wait_log(game_id, 1)
    read_everything()

    checked = 0
    readers = (("seat 0", p0), ("seat 1", p1), ("the spectator", spectator), ("anonymous", anonymous))
    for who, client in readers:
        checked += assert_instance_hidden(client.messages(), who)
    checked += assert_instance_hidden(rest_answers, "a REST reader")
    assert checked > 2000  # the scan really walked the traffic
    assert all(part not in game_id for part in (POOL_FILE_STEM, str(POOL_INDEX)))

    # once the game is over the instance may be shown
    assert p1.act(game_id, "finish_crafting")["ok"]
    p0.wait_status(game_id, "finished")
    summary = rest(anonymous, "GET", f"/api/games/{game_id}")["game"]
    assert summary["status"] == "finished" and summary["instance_id"] == POOL_ID


def test_a_game_from_the_shipped_files_names_none_of_them(
    app: InProcessApp, clients: list[Participant]
) -> None:
    """Everything a player, a spectator and an anonymous reader receive in a game drawn from the shipped paper
    set is searched for every shipped instance id, file path and file name."""
    p0 = new_client(app, clients, f"S0-{uuid.uuid4().hex[:4]}")
    p1 = new_client(app, clients, f"S1-{uuid.uuid4().hex[:4]}")
    anonymous = new_client(app, clients)
    rest_answers: list[Any] = []
    anonymous.call("lobby", {})
    created = p0.call("create_game", {"hall": "shipped", "join": True})
    assert created["ok"], created
    game_id = created["game"]["game_id"]
    assert p1.call("join", {"game_id": game_id})["ok"]
    p1.wait_log(game_id, 2)
    assert anonymous.call("watch", {"game_id": game_id})["ok"]
    for client in (p0, p1, anonymous):
        client._record("read", client.call("view", {"game_id": game_id}))
        client._record(
            "read", client.call("query", {"game_id": game_id, "query": {"type": "possible_crafts"}})
        )
        for path in ("/api/games", f"/api/games/{game_id}", f"/api/games/{game_id}/view", "/api/halls"):
            rest_answers.append(client.rest("GET", path)[1])
    # the instance may be named once the game is over: what arrived while it ran is searched
    readers = (("seat 0", p0), ("seat 1", p1), ("anonymous", anonymous))
    while_running = {who: list(client.messages()) for who, client in readers}
    assert p0.act(game_id, "resign")["ok"]
    p1.wait_status(game_id, "finished")
    # (the lobby also lists the other tests' games, some finished and so named: only shipped names count)
    checked = assert_instance_hidden(rest_answers, "a REST reader", pool=False)
    for who, received in while_running.items():
        checked += assert_instance_hidden(received, who, pool=False)
    assert checked > 500
    summary = anonymous.rest("GET", f"/api/games/{game_id}")[1]["game"]
    assert summary["instance_id"] in SHIPPED_NAMES  # and after the end it is shown


def shipped_hands() -> set[frozenset[tuple[str, int]]]:
    from craft_rules.tasks import iter_instances

    return {frozenset(hand.items()) for instance in iter_instances() for hand in instance.hands}


def received_hands(value: Any) -> Iterator[dict[str, Any]]:
    """Every hand inside a JSON value: the entries of each ``hands`` list."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "hands" and isinstance(inner, list):
                yield from (hand for hand in inner if isinstance(hand, dict))
            else:
                yield from received_hands(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from received_hands(inner)


def test_a_freshly_dealt_game_cannot_be_looked_up_in_the_shipped_files(
    app: InProcessApp, clients: list[Participant]
) -> None:
    """In a generated hall, every hand a player or spectator receives while the game runs is searched for in
    every shipped instance: none holds it, so the public files give no target away; nothing names a file."""
    p0 = new_client(app, clients, f"F0-{uuid.uuid4().hex[:4]}")
    p1 = new_client(app, clients, f"F1-{uuid.uuid4().hex[:4]}")
    watcher = new_client(app, clients)
    created = p0.call("create_game", {"hall": "fresh", "join": True})
    assert created["ok"], created
    game_id = created["game"]["game_id"]
    assert p1.call("join", {"game_id": game_id})["ok"]
    p1.wait_log(game_id, 2)
    assert watcher.call("watch", {"game_id": game_id})["ok"]
    for client in (p0, p1, watcher):
        client._record("read", client.call("view", {"game_id": game_id}))
        client._record("read", client.call("events", {"game_id": game_id}))
    published = shipped_hands()
    hands = [hand for client in (p0, p1, watcher) for hand in received_hands(client.messages())]
    assert len(hands) >= 6
    for hand in hands:
        counts = frozenset((item, int(str(count))) for item, count in hand.items())
        assert counts not in published, f"a shipped instance file holds the received hand {hand}"
    for who, client in (("seat 0", p0), ("seat 1", p1), ("spectator", watcher)):
        assert_instance_hidden(client.messages(), who, pool=False)
        assert "dealt-" not in json.dumps(client.messages())


# ---------------------------------------------------------------------------------------- REST bodies
UNREADABLE_BODIES = {
    "invalid UTF-8": b'{"name": "\xff\xfe"}',
    "nesting 5,000 deep": b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    "a 5,000-digit number": b'{"hall": "duel", "seed": ' + b"9" * 5000 + b"}",
    "a lone surrogate": b'{"name": "\\ud800"}',
    "not JSON": b"{'hall': 'duel'}",
}


@pytest.mark.parametrize("body", list(UNREADABLE_BODIES.values()), ids=list(UNREADABLE_BODIES))
def test_bodies_the_json_parser_rejects_are_invalid_request(
    app: InProcessApp, clients: list[Participant], body: bytes
) -> None:
    player = app.client(f"Body-{uuid.uuid4().hex[:4]}")
    clients.append(player)
    game_id = player.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]["game_id"]
    log_before = app.log()
    for path in (
        "/api/login",
        "/api/games",
        f"/api/games/{game_id}/actions/craft",
        f"/api/games/{game_id}/join",
    ):
        answer = player.http.post(path, data=body, headers={"Content-Type": "application/json"})
        assert answer.status_code < 500, (path, answer.status_code, answer.text[:200])
        if body != UNREADABLE_BODIES["a lone surrogate"]:  # valid JSON: the endpoint judges its fields
            assert answer.status_code == 400, (path, answer.status_code, answer.text[:200])
            assert answer.json["error"]["code"] == "invalid_request", answer.text[:200]
    assert "Traceback" not in app.log()[len(log_before) :]


@pytest.mark.parametrize(
    "query",
    ["limit=" + "9" * 5000, "limit=1e999", "limit=-5", "status=done"],
)
def test_query_numbers_are_bounded_as_text(app: InProcessApp, query: str) -> None:
    answer = app.http().get(f"/api/games?{query}")
    assert answer.status_code in (200, 400), answer.text[:200]
    if answer.status_code == 400:
        assert answer.json["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("query", ["after=" + "9" * 5000, "wait=nan", "wait=1e999", "wait=" + "1" * 400])
def test_event_query_arguments_are_bounded_as_text(
    app: InProcessApp, clients: list[Participant], query: str
) -> None:
    player = app.client(f"Q-{uuid.uuid4().hex[:4]}")
    clients.append(player)
    game_id = player.rest("POST", "/api/games", {"hall": "duel", "join": True})[1]["game"]["game_id"]
    answer = player.http.get(f"/api/games/{game_id}/events?{query}")
    assert answer.status_code == 400 and answer.json["error"]["code"] == "invalid_request", answer.text[:200]


@pytest.mark.parametrize("join", ["false", "no", 0, 1, [], {}])
def test_true_false_fields_are_not_read_from_other_types(
    app: InProcessApp, clients: list[Participant], join: Any
) -> None:
    """``"join": "false"`` used to seat the creator (bool("false") is True); now invalid_request, no game."""
    player = app.client(f"J-{uuid.uuid4().hex[:4]}").connect()
    clients.append(player)
    status, body = player.rest("POST", "/api/games", {"hall": "duel", "join": join})
    assert status == 400 and body["error"]["code"] == "invalid_request", body
    ack = player.call("create_game", {"hall": "duel", "join": join})
    assert not ack["ok"] and ack["error"]["code"] == "invalid_request", ack
    status, body = player.rest("POST", "/api/games", {"hall": "duel", "join": False})
    assert status == 201 and body["game"].get("your_seat") is None, body
    status, body = player.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201 and body["game"]["your_seat"] == 0, body


@pytest.mark.parametrize("seed", [-1, 2**63, 10**30, 1.5, "7", True])
def test_a_seed_is_a_whole_number_every_store_can_keep(
    app: InProcessApp, clients: list[Participant], seed: Any
) -> None:
    """A seed past 64 bits was accepted and made MongoDB's encoder raise (HTTP 500); now invalid_request."""
    player = app.client(f"S-{uuid.uuid4().hex[:4]}").connect()
    clients.append(player)
    status, body = player.rest("POST", "/api/games", {"hall": "duel", "seed": seed})
    assert status == 400 and body["error"]["code"] == "invalid_request", body
    status, body = player.rest("POST", "/api/games", {"hall": "duel", "seed": 2**63 - 1})
    assert status == 403 and body["error"]["code"] == "forbidden", body  # a valid seed: admins only
