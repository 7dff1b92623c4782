"""Queries and schemas (the app in-process, Flask and Flask-SocketIO test clients): every query over
Socket.IO and REST, the same answers as the planner, typed errors like actions, nothing private leaks; the
schema endpoints; envelopes validate."""

from __future__ import annotations

import json
import uuid
from fractions import Fraction
from typing import Any

from e2e_helpers import DUEL, DUEL_TRADE, Participant
from in_process import InProcessApp, InProcessClient

from craft_rules.loader import load_rule_set
from craft_rules.planner import planner_for
from server.game.actions import PLAYER_ACTION_TYPES
from server.game.events import EVENT_TYPES
from server.game.queries import QUERY_MODELS
from server.table.envelope import Envelope

QUERIES: list[dict[str, Any]] = [
    {"type": "item_info", "item": "shears"},
    {"type": "recipe_search", "text": "shears"},
    {"type": "possible_crafts", "limit": 500},
    {"type": "crafting_tree", "item": "shears"},
    {"type": "craftable"},
    {"type": "match_grid", "grid": [[None, "iron_ingot"], ["iron_ingot", None]]},
    {"type": "craft_options", "recipe": "shears"},
    {"type": "history", "limit": 200},
]


def planner_keys(crafts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """possible_crafts entries without the keys the query adds (type, burns_fuel, choosable)."""
    return [{k: v for k, v in c.items() if k not in ("type", "burns_fuel", "choosable")} for c in crafts]


def _client(app: InProcessApp, made: list[Participant], name: str | None) -> InProcessClient:
    client = app.client(name)
    made.append(client)
    return client.connect()


def _ask_both(
    client: Participant, game_id: str, query: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same query over Socket.IO and over REST; both answers must agree."""
    ack = client.call("query", {"game_id": game_id, "query": query})
    status, body = client.rest("POST", f"/api/games/{game_id}/query", query)
    flat_status, flat = client.rest(
        "POST", f"/api/games/{game_id}/query/{query['type']}", {k: v for k, v in query.items() if k != "type"}
    )
    assert ack == body == flat, (ack, body, flat)
    assert status == flat_status == (200 if ack["ok"] else status)
    return ack, {"status": status}


def test_every_query_over_socketio_and_rest(app_client: InProcessApp, clients: list[Participant]) -> None:
    assert {q["type"] for q in QUERIES} == set(QUERY_MODELS)
    p0, p1 = (_client(app_client, clients, f"Q{i}-{uuid.uuid4().hex[:4]}") for i in range(2))
    watcher = _client(app_client, clients, None)
    game_id = p0.call("create_game", {"hall": "duel"})["game"]["game_id"]
    for seat, client in enumerate((p0, p1)):
        assert client.call("join", {"game_id": game_id})["seat"] == seat
    assert watcher.call("watch", {"game_id": game_id})["ok"]
    p1.wait_log(game_id, 2)
    planner = planner_for(load_rule_set("minecraft"))

    # the trade, then seat 0 crafts privately in the craft phase
    secret = f"SECRET-{uuid.uuid4().hex}"
    assert p0.act(game_id, "propose", **{**DUEL_TRADE, "message": secret})["ok"]
    assert p1.act(game_id, "decide", accept=False, message=secret)["ok"]
    assert p0.act(game_id, "craft", recipe="stick", runs="1/2")["ok"]
    crafting0 = p0.call("view", {"game_id": game_id})["view"]["crafting_hand"]

    answers: dict[str | None, list[dict[str, Any]]] = {}
    for seat, client in ((0, p0), (1, p1), (None, watcher)):
        answers[seat] = []
        for query in QUERIES:
            ack, _ = _ask_both(client, game_id, query)
            if seat is None and query["type"] in ("possible_crafts", "craftable", "craft_options"):
                assert not ack["ok"] and ack["error"]["code"] == "not_a_player", ack
                continue
            assert ack["ok"], (seat, query, ack)
            assert ack["seat"] == seat and ack["answer"]["type"] == query["type"]
            answers[seat].append(ack["answer"])

    # agreement with the planner, from what each seat holds
    hand0 = {k: Fraction(v) for k, v in crafting0.items()}
    by_type0 = {a["type"]: a for a in answers[0]}
    assert by_type0["possible_crafts"]["hand"] == "crafting"
    assert planner_keys(by_type0["possible_crafts"]["crafts"]) == [
        c.as_dict() for c in planner.possible_crafts(hand0)
    ]
    hand1 = {k: Fraction(v) for k, v in DUEL["hands"][1].items()}
    by_type1 = {a["type"]: a for a in answers[1]}
    assert planner_keys(by_type1["possible_crafts"]["crafts"]) == [
        c.as_dict() for c in planner.possible_crafts(hand1)
    ]
    plan1 = planner.plan(hand1, DUEL["targets"][1], available=DUEL["hands"][0])
    assert by_type1["craftable"]["craftable"] is plan1.craftable
    assert by_type1["craftable"]["missing_from_others"] == plan1.missing
    assert by_type1["item_info"]["made_by"] == list(planner.item_info("shears").made_by)
    # the grid and the craft options answer from the seat's own hand (seat 1 holds one iron ingot)
    assert by_type1["match_grid"]["matches"][0]["recipe"] == "shears"
    assert by_type1["match_grid"]["matches"][0]["max_runs"] == by_type1["craft_options"]["max_runs"] == "1/2"

    # nothing private: seat 1 asks during seat 0's crafting and sees no trace of its crafting hand;
    # the spectator sees neither the rejected proposal nor any target
    seen1 = json.dumps(answers[1])
    assert '"hand": "crafting"' in seen1  # seat 1's own crafting hand, not seat 0's
    assert not any(e["type"] == "crafted" for e in by_type1["history"]["events"])
    seen_by_watcher = json.dumps(answers[None])
    assert secret not in seen_by_watcher and "you_hold" not in seen_by_watcher
    assert not {e["type"] for e in answers[None][-1]["events"]} & {"proposed", "decided", "crafted"}
    assert secret in json.dumps(by_type0["history"])  # the parties do see it (the scan above can fail)
    # nor the running game's instance id (it names a public file holding the targets), in any answer
    assert "servertest" not in json.dumps(answers)
    assert any(e["type"] == "game_started" for e in by_type0["history"]["events"])

    # refusals are typed like actions' and change nothing
    before = p0.call("view", {"game_id": game_id})
    for bad, code, http in (
        ({"type": "item_info", "item": "x" * 500}, "invalid_query", 400),
        ({"type": "nope"}, "invalid_query", 400),
        ({"type": "item_info", "item": "unobtainium"}, "unknown_item", 409),
    ):
        ack = p0.call("query", {"game_id": game_id, "query": bad})
        status, body = p0.rest("POST", f"/api/games/{game_id}/query", bad)
        assert not ack["ok"] and ack["error"]["code"] == code and body == ack and status == http
    assert not p0.call("query", {"game_id": game_id})["ok"]
    huge = {"type": "recipe_search", "text": "a" * 20_000}
    status, body = p0.rest("POST", f"/api/games/{game_id}/query", huge)
    assert status == 413 and body["error"]["code"] == "payload_too_large"
    status, body = p0.rest("POST", "/api/games/no-such-game/query", QUERIES[0])
    assert not body["ok"] and body["error"]["code"] == "unknown_game"
    assert p0.call("view", {"game_id": game_id}) == before

    # every envelope this test received validates against the envelope model
    for client in (p0, p1, watcher):
        for name, data in client.received:
            if name in ("update", "ack") and isinstance(data, dict) and data.get("ok", True):
                Envelope.model_validate(data)
    Envelope.model_validate(before)


def test_schema_endpoints(app_client: InProcessApp) -> None:
    http = app_client.http()
    queries = http.get("/api/queries").json
    assert queries["ok"] and set(queries["queries"]) == set(QUERY_MODELS) == set(queries["strict"])
    assert queries["queries"]["craftable"]["properties"]["item"]["description"]
    schemas = http.get("/api/schemas").json
    assert schemas["ok"]
    assert set(schemas["events"]) == EVENT_TYPES
    assert {"player", "spectator"} == set(schemas["views"])
    assert (
        "null while the game runs" in schemas["views"]["player"]["properties"]["instance_id"]["description"]
    )
    assert set(schemas["strict"]["actions"]) == set(PLAYER_ACTION_TYPES)
    assert schemas["view_history_turns"] >= 1
    actions = http.get("/api/actions").json
    offer = actions["strict"]["propose"]["properties"]["offer"]
    # strict mode: a list of pairs (null = none), not a free-key object
    assert [option["type"] for option in offer["anyOf"]] == ["array", "null"]


def test_every_message_of_a_tom_game_validates(app_client: InProcessApp, clients: list[Participant]) -> None:
    """Every envelope, pushed event and history answer of a game with ToM reports, a rejection, a trade,
    crafts and the end-of-game reveal validates against the typed models."""
    from pydantic import TypeAdapter

    from server.game.schemas import ViewerEvent

    players = [_client(app_client, clients, f"T{i}-{uuid.uuid4().hex[:4]}") for i in range(2)]
    watcher = _client(app_client, clients, None)
    game_id = players[0].call("create_game", {"hall": "tom"})["game"]["game_id"]
    for seat, client in enumerate(players):
        assert client.call("join", {"game_id": game_id})["seat"] == seat
    assert watcher.call("watch", {"game_id": game_id})["ok"]
    p0, p1 = players
    p1.wait_log(game_id, 2)
    items = p0.call("view", {"game_id": game_id})["view"]["tom"]["items"]
    report = {
        "v0": dict.fromkeys(items, 7),
        "v1": {"1": dict.fromkeys(items, 3)},
        "v2": {"1": dict.fromkeys(items, 9)},
    }
    assert p0.act(game_id, "report_tom", **report)["ok"]
    assert p1.act(game_id, "report_tom", v0=dict.fromkeys(items, 5))["ok"]
    assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]
    assert p1.act(game_id, "decide", accept=True, message="deal")["ok"]
    assert p0.act(game_id, "craft", recipe="stick", runs="1/2")["ok"]
    assert p0.act(game_id, "craft", recipe="torch", runs="1/4")["ok"]
    assert p1.act(game_id, "craft", recipe="shears", runs=1)["ok"]
    assert p0.act(game_id, "finish_crafting")["ok"]
    assert p1.act(game_id, "finish_crafting")["ok"]
    watcher.wait_status(game_id, "finished")
    events = TypeAdapter(list[ViewerEvent])
    types_seen: set[str] = set()
    for client in (p0, p1, watcher):
        for name, data in client.received:
            if name in ("update", "ack") and isinstance(data, dict) and data.get("ok", True):
                envelope = Envelope.model_validate(data)
                types_seen |= {e.type for e in envelope.events or []}
        log = client.call("events", {"game_id": game_id, "after": -1})["events"]
        assert len(events.validate_python(log)) == len(log)
        ack = client.call("query", {"game_id": game_id, "query": {"type": "history", "limit": 200}})
        assert ack["answer"]["events"] == log  # the same events, numbered and timed alike
    assert {"tom_reported", "trade_executed", "crafted", "hands_revealed", "targets_revealed"} <= types_seen
