"""End-to-end play: whole games, privacy, refusals, reconnection, deadlines and bot seats, over REST and
Socket.IO. Every Socket.IO message each client receives is captured and, where it matters, scanned for
private information of other seats.

Most tests play the app in-process (``app_client``: Flask and Flask-SocketIO test clients); those taking
``server`` need a real server process: real sockets (a second browser tab's cookie, an agent token and a
refused connection over websocket, an oversized or garbage frame, the health page) and the documented
example client run as a subprocess. One app and one server serve the module; each test makes its own games.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import (
    ADMIN,
    DUEL,
    DUEL_CRAFTS,
    DUEL_TRADE,
    TRIO,
    Client,
    Host,
    Participant,
    ServerProcess,
    play_duel,
)
from in_process import InProcessApp

from server.game.actions import PLAYER_ACTION_TYPES

PRIVATE_EVENT_TYPES = {"tom_reported", "proposed", "decided", "proposal_cancelled", "crafted"}


def new_client(
    host: Host, made: list[Participant], name: str | None = None, token: str | None = None
) -> Participant:
    client = host.client(name, token)
    made.append(client)
    return client.connect()


def start_game(host: Host, made: list[Participant], hall: str, players: int) -> tuple[str, list[Participant]]:
    """Create a game in ``hall``; ``players`` clients join seats 0..n-1 over Socket.IO."""
    seated = [new_client(host, made, f"P{i}-{uuid.uuid4().hex[:4]}") for i in range(players)]
    created = seated[0].call("create_game", {"hall": hall})
    assert created["ok"], created
    game_id = created["game"]["game_id"]
    for seat, client in enumerate(seated):
        joined = client.call("join", {"game_id": game_id})
        assert joined["ok"] and joined["seat"] == seat, joined
    seated[-1].wait_log(game_id, 2)  # game_started, phase_started
    return game_id, seated


def snapshot(client: Participant, game_id: str) -> dict[str, Any]:
    ack = client.call("view", {"game_id": game_id})
    assert ack["ok"], ack
    return ack


def walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for inner in value.values():
            yield from walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from walk(inner)


def assert_nothing_private(
    client: Participant, seat: int | None, targets: list[dict[str, int]], secrets: list[str]
) -> int:
    """Scan every message ``client`` received; returns how many dicts were checked."""
    messages = client.messages()
    dump = json.dumps(messages)
    for secret in secrets:
        assert secret not in dump, f"seat {seat} saw the private text {secret!r}"
    checked = 0
    for node in walk(messages):
        checked += 1
        if node.get("target") is not None:
            assert seat is not None and node["target"] == targets[seat], f"seat {seat} saw a target: {node}"
        if node.get("type") in PRIVATE_EVENT_TYPES and "visibility" in node:
            assert seat is not None and seat in node["visibility"], f"seat {seat} saw {node}"
        if node.get("crafting_hand") is not None:
            assert node.get("seat") == seat, f"seat {seat} saw another crafting hand: {node}"
        if node.get("crafts_this_phase"):
            assert node.get("seat") == seat, f"seat {seat} saw another seat's crafts: {node}"
        if node.get("pending_proposal") is not None or node.get("proposals"):
            assert node.get("seat") == seat, f"seat {seat} saw proposals of others: {node}"
    return checked


# ------------------------------------------------------------------------------------- basics
def test_healthz_and_index_escape(server: ServerProcess, clients: list[Participant]) -> None:
    import requests

    health = requests.get(server.url + "/healthz", timeout=5)
    assert health.status_code == 200
    assert health.json()["status"] == "ok" and health.json()["store"] == "sqlite"
    assert health.json()["version"]
    sneaky = new_client(server, clients, "<script>alert(1)</script>")
    created = sneaky.call("create_game", {"hall": "duel", "join": True})
    assert created["ok"], created
    page = requests.get(server.url + "/", timeout=5).text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_full_two_player_game(app_client: InProcessApp, clients: list[Participant]) -> None:
    game_id, (p0, p1) = start_game(app_client, clients, "duel", 2)
    watcher = new_client(app_client, clients)  # anonymous spectator
    watched = watcher.call("watch", {"game_id": game_id})
    assert watched["ok"] and watched["seat"] is None and watched["view"]["target"] is None
    view0 = snapshot(p0, game_id)["view"]
    assert view0["target"] == DUEL["targets"][0] and view0["your_turn"] and view0["phase"] == "trade_propose"

    last = play_duel(game_id, p0, p1)
    assert last["status"] == "finished"
    assert last["view"]["finished"] and last["view"]["winners"] == [0, 1]
    final = p0.wait_status(game_id, "finished")
    assert final["view"]["winners"] == [0, 1]
    watcher.wait_status(game_id, "finished")

    # every seat got every event it may see, in order, exactly once
    for seat, client in ((0, p0), (1, p1)):
        pushed = [e["n"] for e in client.pushed_events(game_id)]
        history = client.call("events", {"game_id": game_id, "after": -1})["events"]
        assert pushed == [e["n"] for e in history], seat
        # numbered 0, 1, 2, ... in the seat's own log: no gap counts the other seat's private events
        assert pushed == list(range(len(history)))
        assert all("seq" not in e for e in history)
        assert_nothing_private(client, seat, list(DUEL["targets"]), [])
    assert_nothing_private(watcher, None, list(DUEL["targets"]), [])
    spectator_types = {e["type"] for e in watcher.pushed_events(game_id)}
    assert "trade_executed" in spectator_types and not spectator_types & PRIVATE_EVENT_TYPES
    status, summary = p0.rest("GET", f"/api/games/{game_id}")
    assert status == 200 and summary["game"]["status"] == "finished" and summary["game"]["winners"] == [0, 1]
    # a finished game refuses more actions, including resign (the illegal resign)
    refused = p0.act(game_id, "resign")
    assert not refused["ok"] and refused["error"]["code"] == "game_over"


def test_three_player_game_keeps_rejected_proposals_and_crafting_private(
    app_client: InProcessApp, clients: list[Participant]
) -> None:
    game_id, (p0, p1, p2) = start_game(app_client, clients, "trio", 3)
    watcher = new_client(app_client, clients, "watcher")
    assert watcher.call("watch", {"game_id": game_id})["ok"]
    secret_offer, secret_reply = f"SECRET-OFFER-{uuid.uuid4().hex}", f"SECRET-REPLY-{uuid.uuid4().hex}"

    # turn 1: seat 0 proposes to seat 1, who rejects; seat 0 crafts privately
    proposal = {"to": 1, "offer": {"iron_ingot": 1}, "request": {"coal": 1}, "message": secret_offer}
    before = snapshot(p2, game_id)
    assert p0.act(game_id, "propose", **proposal)["ok"]
    mid = snapshot(p2, game_id)
    # the third player cannot tell a pending proposal from a proposer still thinking
    assert (
        mid["view"]["phase"] == "trade"
        and mid["view"]["awaiting"] == []
        and mid["view"]["pending_proposal"] is None
    )
    assert mid["log_size"] == before["log_size"] and mid["deadline"] is None and mid["view"] == before["view"]
    assert p1.act(game_id, "decide", accept=False, message=secret_reply)["ok"]
    crafted = p0.act(game_id, "craft", recipe="stick", runs="1/2")
    assert crafted["ok"] and crafted["view"]["crafting_hand"]["stick"] == "2"
    for client in (p0, p1, p2):
        assert client.act(game_id, "finish_crafting")["ok"]
    # turn 2: seat 1 proposes the trade the other way; seat 0 accepts; both craft their targets
    assert p1.act(game_id, "propose", to=0, offer={"coal": 1}, request={"iron_ingot": 1})["ok"]
    assert p0.act(game_id, "decide", accept=True)["ok"]
    assert p0.act(game_id, "craft", recipe="torch", runs="1/4")["ok"]
    assert p1.act(game_id, "craft", recipe="shears", runs=1)["ok"]
    for client in (p2, p1):
        assert client.act(game_id, "finish_crafting")["ok"]
    last = p0.act(game_id, "finish_crafting")
    assert last["ok"] and last["status"] == "finished" and last["view"]["winners"] == [0, 1]
    for client in (p1, p2, watcher):
        client.wait_status(game_id, "finished")

    targets = list(TRIO["targets"])
    # the two parties saw the rejected proposal (so the scan below can really fail) ...
    for client in (p0, p1):
        assert secret_offer in json.dumps(client.messages()) and secret_reply in json.dumps(client.messages())
    # ... the third player and the spectator never did, nor any target, crafting hand or private event
    assert_nothing_private(p2, 2, targets, [secret_offer, secret_reply])
    assert_nothing_private(watcher, None, targets, [secret_offer, secret_reply])
    assert_nothing_private(p0, 0, targets, [])
    assert_nothing_private(p1, 1, targets, [])
    assert any(e["type"] == "crafted" for e in p0.pushed_events(game_id))
    assert not any(e["type"] == "crafted" and e["actor"] != 2 for e in p2.pushed_events(game_id))


def test_tom_reports_are_private(app_client: InProcessApp, clients: list[Participant]) -> None:
    game_id, (p0, p1) = start_game(app_client, clients, "tom", 2)
    view0 = snapshot(p0, game_id)["view"]
    assert view0["phase"] == "tom_report" and view0["tom"]["due"] and view0["tom"]["orders"] == [0, 1, 2]
    items = view0["tom"]["items"]
    report = {
        "v0": {item: 7 for item in items},
        "v1": {"1": {item: 3 for item in items}},
        "v2": {"1": {item: 9 for item in items}},
    }
    assert p0.act(game_id, "report_tom", **report)["ok"]
    assert p1.act(game_id, "report_tom", v0={item: 5 for item in items})["ok"]
    p1.wait_log(game_id, snapshot(p1, game_id)["log_size"])
    for node in walk(p1.messages()):
        if node.get("type") == "tom_reported":
            assert node["payload"]["seat"] == 1, node
        assert not node.get("v1") and not node.get("v2"), node  # seat 1 reports V0 only; seat 0's are private
    assert any(e["type"] == "tom_reported" for e in p0.pushed_events(game_id))
    assert_nothing_private(p1, 1, list(DUEL["targets"]), [])


# ------------------------------------------------------------------------ refusals (state unchanged)
MALFORMED = {
    "report_tom": {"v0": "everything is a 10"},
    "propose": {"to": "seat one", "offer": {"iron_ingot": 1}},
    "pass": {"extra": 1},
    "decide": {"accept": "yes"},
    "craft": {"recipe": ""},
    "finish_crafting": {"now": True},
    "resign": {"reason": 3},
}
# Well-formed but illegal at the start of the game, sent by seat 1 (seat 0 proposes first). resign is only
# illegal after the game (see test_full_two_player_game) or for another seat (below).
ILLEGAL = {
    "report_tom": ({"v0": {"coal": 1}}, {"tom_not_requested", "wrong_phase"}),
    "propose": ({"to": 0, "offer": {"coal": 1}, "request": {"iron_ingot": 1}}, {"not_your_turn"}),
    "pass": ({}, {"not_your_turn"}),
    "decide": ({"accept": True}, {"wrong_phase"}),
    "craft": ({"recipe": "shears", "runs": 1}, {"wrong_phase"}),
    "finish_crafting": ({}, {"wrong_phase"}),
}


def test_malformed_and_illegal_messages_change_nothing(
    app_client: InProcessApp, clients: list[Participant]
) -> None:
    assert set(MALFORMED) == set(PLAYER_ACTION_TYPES) and set(ILLEGAL) | {"resign"} == set(
        PLAYER_ACTION_TYPES
    )
    game_id, (p0, p1) = start_game(app_client, clients, "duel", 2)
    before = [snapshot(p0, game_id), snapshot(p1, game_id)]

    def unchanged() -> None:
        assert [snapshot(p0, game_id), snapshot(p1, game_id)] == before

    for action_type, fields in MALFORMED.items():
        ack = p1.act(game_id, action_type, **fields)
        assert not ack["ok"] and ack["error"]["code"] == "invalid_action", (action_type, ack)
        assert ack["error"]["message"] and ack["error"]["details"]["problems"], ack
    for action_type, (fields, codes) in ILLEGAL.items():
        ack = p1.act(game_id, action_type, **fields)
        assert not ack["ok"] and ack["error"]["code"] in codes, (action_type, ack)
    generic = [
        ({"game_id": game_id, "action": "{not json"}, "invalid_action"),
        ({"game_id": game_id, "action": [1, 2]}, "invalid_action"),
        ({"game_id": game_id, "action": {"type": "fly"}}, "invalid_action"),
        ({"game_id": game_id, "action": {"type": "timeout"}}, "not_allowed"),
        ({"game_id": game_id}, "invalid_request"),
        ({"game_id": "no-such-game", "action": {"type": "pass"}}, "unknown_game"),
    ]
    for payload, code in generic:
        ack = p0.call("act", payload)
        assert not ack["ok"] and ack["error"]["code"] == code, (payload, ack)
    for raw in ("{broken", 42, ["a", "list"]):
        ack = p0.call("act", raw)
        assert not ack["ok"] and ack["error"]["code"] == "invalid_request", (raw, ack)
    huge = p0.act(game_id, "propose", **{**DUEL_TRADE, "message": "x" * 40_000})
    assert not huge["ok"] and huge["error"]["code"] == "payload_too_large"
    long_message = p0.act(game_id, "propose", **{**DUEL_TRADE, "message": "y" * 600})
    assert not long_message["ok"] and long_message["error"]["code"] == "message_too_long"
    unchanged()
    # the worker is still fine: the game goes on
    assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]


def test_acting_for_another_seat_or_as_spectator_is_refused(
    app_client: InProcessApp, clients: list[Participant]
) -> None:
    game_id, (p0, p1) = start_game(app_client, clients, "duel", 2)
    before = snapshot(p0, game_id)
    impostor = p1.act(game_id, "propose", seat=0, **DUEL_TRADE)
    assert not impostor["ok"] and impostor["error"]["code"] == "not_your_seat"
    resign_other = p1.act(game_id, "resign", seat=0)
    assert not resign_other["ok"] and resign_other["error"]["code"] == "not_your_seat"
    anonymous = new_client(app_client, clients)
    assert anonymous.call("watch", {"game_id": game_id})["ok"]
    refused = anonymous.act(game_id, "propose", **DUEL_TRADE)
    assert not refused["ok"] and refused["error"]["code"] == "not_logged_in"
    onlooker = new_client(app_client, clients, "onlooker")
    assert onlooker.call("watch", {"game_id": game_id})["ok"]
    refused = onlooker.act(game_id, "pass")
    assert not refused["ok"] and refused["error"]["code"] == "spectator"
    full = onlooker.call("join", {"game_id": game_id})
    assert not full["ok"] and full["error"]["code"] == "game_full"
    # over REST too
    status, body = onlooker.rest("POST", f"/api/games/{game_id}/actions/pass", {})
    assert status == 403 and body["error"]["code"] == "spectator"
    status, body = p1.rest("POST", f"/api/games/{game_id}/actions/propose", {"seat": 0, **DUEL_TRADE})
    assert status == 403 and body["error"]["code"] == "not_your_seat"
    assert snapshot(p0, game_id) == before


# ------------------------------------------------------------------------ reconnection, presence
def test_reconnection_restores_seat_view_and_history(
    app_client: InProcessApp, clients: list[Participant]
) -> None:
    game_id, (p0, p1) = start_game(app_client, clients, "duel", 2)
    assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]
    assert p1.act(game_id, "decide", accept=True)["ok"]
    crafted = p0.act(game_id, "craft", **DUEL_CRAFTS[0][0])
    assert crafted["ok"]
    before = snapshot(p0, game_id)
    history_before = p0.call("events", {"game_id": game_id})["events"]

    p0.drop()
    offline = p1.messages("presence")
    p1.wait_for(
        lambda: any(m["seat"] == 0 and not m["online"] for m in p1.messages("presence")), what="offline"
    )
    assert p1.call("view", {"game_id": game_id})["seats"][0]["online"] is False

    # a new connection with the same login cookie (the same browser) gets the seat back
    p0.reconnect()
    rejoined = p0.call("join", {"game_id": game_id})
    assert rejoined["ok"] and rejoined["seat"] == 0
    assert rejoined["view"] == before["view"]
    assert rejoined["view"]["crafting_hand"] == crafted["view"]["crafting_hand"]
    assert rejoined["events"] == history_before
    assert any(e["type"] == "crafted" for e in rejoined["events"])
    p1.wait_for(
        lambda: len(p1.messages("presence")) > len(offline) and p1.messages("presence")[-1]["online"],
        what="back online",
    )
    # and the game continues
    assert p0.act(game_id, "craft", **DUEL_CRAFTS[0][1])["ok"]
    assert p1.act(game_id, "craft", **DUEL_CRAFTS[1][0])["ok"]
    assert p0.act(game_id, "finish_crafting")["ok"]
    assert p1.act(game_id, "finish_crafting")["view"]["winners"] == [0, 1]


def test_a_seats_other_connection_gets_the_push_the_acting_one_only_the_ack(
    server: ServerProcess, clients: list[Participant]
) -> None:
    game_id, (p0, p1) = start_game(server, clients, "duel", 2)
    tab = Client(server.url)  # a second tab of the same browser: same login cookie, same seat
    clients.append(tab)
    tab.http.cookies.update(p0.http.cookies)
    tab.connect()
    assert tab.call("join", {"game_id": game_id})["seat"] == 0
    updates_before = len(p0.messages("update"))
    ack = p0.act(game_id, "propose", **DUEL_TRADE)
    assert ack["ok"]
    # a push to the acting connection would have been sent, and recorded, before its ack
    assert len(p0.messages("update")) == updates_before
    tab.wait_for(lambda: any(m["log_size"] == ack["log_size"] for m in tab.messages("update")), what="push")
    pushed = next(m for m in tab.messages("update") if m["log_size"] == ack["log_size"])
    assert pushed["view"] == ack["view"] and pushed["events"] == ack["events"]
    p1.wait_for(lambda: any(m["view"]["phase"] == "trade_decide" for m in p1.messages("update")))


# ----------------------------------------------------------------------- REST mirror, tokens, idempotency
def test_rest_only_game_with_api_token_and_idempotent_retries(
    app_client: InProcessApp, clients: list[Participant]
) -> None:
    person = app_client.client("rest-person")
    clients.append(person)
    denied = person.rest("POST", "/api/admin/tokens", {"name": "bot"})
    assert denied[0] == 403 and denied[1]["error"]["code"] == "forbidden"
    status, created = person.rest("POST", "/api/admin/tokens", {"name": "rest-bot"}, auth=ADMIN)
    assert status == 201 and created["token"].startswith("tc_")
    bot = app_client.client(token=created["token"])
    clients.append(bot)
    assert bot.rest("GET", "/api/me")[1]["user"]["kind"] == "agent"
    assert app_client.client(token="tc_wrong").rest("GET", "/api/me")[1]["error"]["code"] == "invalid_token"

    status, game = person.rest("POST", "/api/games", {"hall": "duel", "join": True})
    assert status == 201 and game["game"]["your_seat"] == 0
    game_id = game["game"]["game_id"]
    status, joined = bot.rest("POST", f"/api/games/{game_id}/join", {})
    assert status == 200 and joined["seat"] == 1 and joined["status"] == "running"

    url = f"/api/games/{game_id}/actions"
    first = person.rest("POST", url + "/propose", {**DUEL_TRADE, "client_action_id": "p-1"})
    again = person.rest("POST", url + "/propose", {**DUEL_TRADE, "client_action_id": "p-1"})
    assert first == again and first[0] == 200 and first[1]["ok"]
    # the bot long-polls for the proposal, then answers through the generic route
    status, polled = bot.rest("GET", f"/api/games/{game_id}/events?after={joined['log_size'] - 1}&wait=5")
    assert status == 200 and any(e["type"] == "proposed" for e in polled["events"])
    status, decided = bot.rest(
        "POST", url, {"action": {"type": "decide", "accept": True}}, headers={"Idempotency-Key": "d-1"}
    )
    assert status == 200 and decided["ok"]
    assert (
        bot.rest(
            "POST", url, {"action": {"type": "decide", "accept": True}}, headers={"Idempotency-Key": "d-1"}
        )[1]
        == decided
    )
    for seat, client in ((0, person), (1, bot)):
        for craft in DUEL_CRAFTS[seat]:
            assert client.rest("POST", url + "/craft", craft)[1]["ok"]
        client.rest("POST", url + "/finish_crafting", {})
    status, view = person.rest("GET", f"/api/games/{game_id}/view")
    assert view["view"]["winners"] == [0, 1] and view["status"] == "finished"
    # one proposed event although the proposal was sent twice
    events = person.rest("GET", f"/api/games/{game_id}/events")[1]["events"]
    assert sum(e["type"] == "proposed" for e in events) == 1
    status, body = person.rest("POST", url + "/fly", {})
    assert status == 404 and body["error"]["code"] == "invalid_request"
    schemas = person.rest("GET", "/api/actions")[1]["actions"]
    assert set(schemas) == set(PLAYER_ACTION_TYPES)
    assert schemas["propose"]["properties"]["to"]["type"] == "integer"

    # admin views and the token list never show a token
    status, tokens = person.rest("GET", "/api/admin/tokens", auth=ADMIN)
    assert status == 200 and created["token"] not in json.dumps(tokens)
    status, research = person.rest("GET", f"/api/admin/games/{game_id}", auth=ADMIN)
    assert (
        status == 200
        and '"shears"' in json.dumps(research["view"])
        and '"torch"' in json.dumps(research["view"])
    )


@pytest.mark.slow
def test_deadlines_submit_timeouts(app_client: InProcessApp, clients: list[Participant]) -> None:
    game_id, (p0, _p1) = start_game(app_client, clients, "timed", 2)
    first = snapshot(p0, game_id)
    assert first["deadline"] is not None and first["deadline"] > time.time()
    # nobody acts: turn 1 propose times out (pass), craft times out (finish), twice, then the game ends
    p0.wait_for(
        lambda: any(u["game_id"] == game_id and u["status"] == "finished" for u in p0.messages("update")),
        timeout=15,
        what="the game to end by timeouts",
    )
    kinds = [e["type"] for e in p0.pushed_events(game_id)]
    assert kinds.count("timeout") >= 4 and kinds[-1] == "game_ended"
    policies = {e["payload"]["policy"] for e in p0.pushed_events(game_id) if e["type"] == "timeout"}
    assert {"pass", "finish"} <= policies


def test_idle_seat_is_handed_to_a_bot(app_client: InProcessApp, clients: list[Participant]) -> None:
    game_id, (p0, p1) = start_game(app_client, clients, "idle", 2)
    # seat 1 stays idle; seat 0 keeps playing: after one timeout seat 1 is played by the built-in bot
    p0.wait_for(
        lambda: any(s.get("seats", [{}, {}])[1].get("bot") for s in p0.messages("seats")),
        timeout=10,
        what="a bot to take seat 1",
    )
    taken = p1.act(game_id, "pass")
    assert not taken["ok"] and taken["error"]["code"] in ("seat_taken_over", "not_your_turn", "wrong_phase")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        view = snapshot(p0, game_id)
        if view["status"] == "finished":
            break
        if view["view"]["your_turn"]:
            legal = view["view"]["legal_actions"]
            action = "finish_crafting" if "finish_crafting" in legal else "pass" if "pass" in legal else None
            if action is None:
                action = "decide"
            p0.act(game_id, action, **({"accept": False} if action == "decide" else {}))
        time.sleep(0.05)
    assert snapshot(p0, game_id)["status"] == "finished"
    actors = {
        e["actor"] for e in p0.pushed_events(game_id) if e["type"] in ("passed", "craft_finished", "proposed")
    }
    assert 1 in actors  # the bot acted for seat 1


def test_bot_seat_plays_against_a_person(app_client: InProcessApp, clients: list[Participant]) -> None:
    person = new_client(app_client, clients, "vs-random")
    created = person.call(
        "create_game", {"hall": "duel", "seats": ["open", {"kind": "bot", "bot": "random"}], "join": True}
    )
    assert created["ok"] and created["game"]["status"] == "running", created
    game_id = created["game"]["game_id"]
    assert person.call("join", {"game_id": game_id})["seat"] == 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ack = snapshot(person, game_id)
        if ack["status"] == "finished":
            break
        view = ack["view"]
        if view["your_turn"]:
            legal = view["legal_actions"]
            if "finish_crafting" in legal:
                person.act(game_id, "finish_crafting")
            elif "pass" in legal:
                person.act(game_id, "pass")
            elif "decide" in legal:
                person.act(game_id, "decide", accept=False)
        time.sleep(0.02)
    assert snapshot(person, game_id)["status"] == "finished"
    assert any(e["actor"] == 1 for e in person.pushed_events(game_id))
    bad = person.call("create_game", {"hall": "duel", "seats": ["open", {"kind": "bot", "bot": "nope"}]})
    assert not bad["ok"] and bad["error"]["code"] == "unknown_bot"


def test_lobby_lists_games_without_private_data(app_client: InProcessApp, clients: list[Participant]) -> None:
    game_id, _ = start_game(app_client, clients, "duel", 2)
    looker = new_client(app_client, clients, "looker")
    lobby = looker.call("lobby", {})
    assert lobby["ok"] and {h["name"] for h in lobby["halls"]} >= {"duel", "trio"}
    listed = {g["game_id"]: g for g in lobby["games"]}
    assert listed[game_id]["status"] == "running"
    dump = json.dumps(lobby)
    assert "target" not in dump and "user_id" not in dump
    created = new_client(app_client, clients, "creator").call("create_game", {"hall": "trio"})
    looker.wait_for(
        lambda: any(m["game_id"] == created["game"]["game_id"] for m in looker.messages("lobby")),
        what="a lobby push",
    )
    bad = looker.call("create_game", {"hall": "no-such-hall"})
    assert not bad["ok"] and bad["error"]["code"] == "unknown_hall"


# ------------------------------------------------------------------------------- tokens, limits, docs
def test_agent_token_over_socketio_and_reconnect(server: ServerProcess, clients: list[Participant]) -> None:
    admin = Client(server.url)
    clients.append(admin)
    token = admin.rest("POST", "/api/admin/tokens", {"name": "sock-agent"}, auth=ADMIN)[1]["token"]
    agent = new_client(server, clients, token=token)
    assert agent.call("whoami")["user"]["kind"] == "agent"
    person = new_client(server, clients, "person")
    game_id = person.call("create_game", {"hall": "duel", "seats": ["open", "agent"], "join": True})["game"][
        "game_id"
    ]
    assert person.call("join", {"game_id": game_id})["seat"] == 0
    assert agent.call("join", {"game_id": game_id})["seat"] == 1
    assert person.act(game_id, "propose", **DUEL_TRADE)["ok"]
    agent.reconnect()  # same token, new connection: the seat comes back
    rejoined = agent.call("join", {"game_id": game_id})
    assert rejoined["seat"] == 1 and rejoined["view"]["pending_proposal"]["message"] == DUEL_TRADE["message"]
    assert agent.act(game_id, "decide", accept=True)["ok"]

    import socketio

    refused = socketio.Client(reconnection=False)
    reasons: list[Any] = []
    refused.on("connect_error", reasons.append)
    with pytest.raises(socketio.exceptions.ConnectionError):
        refused.connect(
            server.url, auth={"token": "tc_not-a-token"}, transports=["websocket"], wait_timeout=5
        )
    assert reasons and reasons[0]["data"]["code"] == "invalid_token"
    assert "tc_not-a-token" not in json.dumps(reasons)


def test_oversized_message_is_dropped_and_the_server_carries_on(
    server: ServerProcess, clients: list[Participant]
) -> None:
    import requests

    game_id, (p0, p1) = start_game(server, clients, "duel", 2)
    before = snapshot(p1, game_id)
    with contextlib.suppress(Exception):  # the client may notice the closed connection itself
        p0.sio.emit("propose", {"game_id": game_id, **DUEL_TRADE, "message": "z" * 2_000_000})
    p0.wait_for(lambda: not p0.sio.connected, timeout=10, what="the server to drop the connection")
    assert requests.get(server.url + "/healthz", timeout=5).status_code == 200
    after = snapshot(p1, game_id)
    assert (after["log_size"], after["view"]) == (before["log_size"], before["view"])  # only presence changed
    p0.reconnect()
    assert p0.call("join", {"game_id": game_id})["seat"] == 0
    assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]


def test_documented_example_client_plays_a_whole_game(server: ServerProcess) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "docs" / "examples" / "play_over_socketio.py"
    done = subprocess.run(
        [sys.executable, str(script), "--url", server.url, "--name", "docs-example"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "game over after turn" in done.stdout


def test_protocol_doc_covers_every_event_action_and_error_code() -> None:
    from server.game.actions import ACTION_MODELS
    from server.game.errors import ERROR_CODES
    from server.game.queries import QUERY_MODELS
    from server.game.views import VIEW_HISTORY_TURNS
    from server.table.errors import SERVER_ERROR_CODES

    doc = (Path(__file__).resolve().parent.parent / "docs" / "protocol.md").read_text(encoding="utf-8")
    for action_type, model in ACTION_MODELS.items():
        assert f"`{action_type}`" in doc, action_type
        for field in model.model_fields:
            assert f"`{field}`" in doc, (action_type, field)
    for query_type, model in QUERY_MODELS.items():
        assert f"| `{query_type}` |" in doc, query_type
        for field in model.model_fields:
            assert f"`{field}`" in doc, (query_type, field)
    assert f"**{VIEW_HISTORY_TURNS} turns**" in doc
    for endpoint in (
        "GET /api/queries",
        "GET /api/schemas",
        "POST /api/games/<id>/query",
        "POST /api/games/<id>/traces",
    ):
        assert f"`{endpoint}" in doc, endpoint
    for code in [*ERROR_CODES, *SERVER_ERROR_CODES]:
        assert f"| `{code}` |" in doc, code
    for event in (
        "whoami",
        "lobby",
        "create_game",
        "join",
        "watch",
        "leave",
        "view",
        "events",
        "act",
        "query",
        "trace",
        "update",
        "seats",
        "presence",
    ):
        assert f"`{event}`" in doc, event


def test_garbage_socketio_frames_do_not_hurt_the_server(
    server: ServerProcess, clients: list[Participant]
) -> None:
    import requests
    import websocket

    game_id, (p0, p1) = start_game(server, clients, "duel", 2)
    raw = websocket.create_connection(
        f"ws://127.0.0.1:{server.port}/socket.io/?EIO=4&transport=websocket", timeout=5
    )
    try:
        assert raw.recv().startswith("0")  # engine.io open
        raw.send("40")  # socket.io connect, anonymous
        assert raw.recv().startswith("40")
        for frame in (
            '42["act", {"game_id": ',
            "42[",
            "xyz",
            '42["act"]',
            "42[1,2]",
            f'42["pass",{{"game_id":"{game_id}"}}]',
        ):
            with contextlib.suppress(Exception):
                raw.send(frame)
    finally:
        with contextlib.suppress(Exception):
            raw.close()
    assert requests.get(server.url + "/healthz", timeout=5).status_code == 200
    assert p0.act(game_id, "propose", **DUEL_TRADE)["ok"]  # the game and the other connections carry on
    assert p1.act(game_id, "decide", accept=False)["ok"]
