"""Play one TradeCraft game over Socket.IO, the way a browser or a remote bot does.

    python run_server.py                          # in one terminal
    python docs/examples/play_over_socketio.py    # in another: a simple policy vs a built-in bot

Options: ``--url`` (default http://127.0.0.1:5000), ``--hall`` (default duel), ``--name``, ``--token`` (an API
token from ``tradecraft admin create-token``, instead of a display-name login), ``--game`` (join an existing
game instead of creating one against a bot), ``--random`` (play with the built-in random bot's policy instead
of the simple one below).

Needs only ``python-socketio[client]`` and ``requests``. The protocol is in docs/protocol.md.
"""

from __future__ import annotations

import argparse
import queue
import sys
from typing import Any

import requests
import socketio


def simple_policy(view: dict[str, Any]) -> dict[str, Any]:
    """A deliberately plain policy: value everything 5, pass (or give nothing away), reject, stop crafting."""
    legal = view["legal_actions"]
    if "report_tom" in legal:
        items = view["tom"]["items"]
        report: dict[str, Any] = {"type": "report_tom", "v0": dict.fromkeys(items, 5)}
        for order in view["tom"]["orders"]:
            if order:
                report[f"v{order}"] = {
                    str(seat): dict.fromkeys(items, 5) for seat in view["tom"]["opponents"]
                }
        return report
    if "decide" in legal:
        return {"type": "decide", "accept": False, "message": "No, thank you."}
    if "finish_crafting" in legal:
        return {"type": "finish_crafting"}
    if "pass" in legal:
        return {"type": "pass"}
    if "propose" in legal:  # passing is disabled: ask the next player for one unit of something they hold
        other = (view["seat"] + 1) % view["players"]
        item = next(iter(sorted(view["hands"][other])))
        mine = next(iter(sorted(view["hands"][view["seat"]])))
        return {"type": "propose", "to": other, "offer": {mine: 1}, "request": {item: 1}, "message": "Swap?"}
    return {"type": "resign"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:5000")
    parser.add_argument("--hall", default="duel")
    parser.add_argument("--name", default="example-client")
    parser.add_argument("--token", help="API token (agents); default: log in with --name")
    parser.add_argument("--game", help="join this game id instead of creating one against a bot")
    parser.add_argument("--random", action="store_true", help="play with agents.bots' random policy")
    args = parser.parse_args()

    http = requests.Session()
    headers: dict[str, str] = {}
    auth = None
    if args.token:
        auth = {"token": args.token}  # Socket.IO auth payload; over HTTP send Authorization: Bearer ...
    else:
        login = http.post(f"{args.url}/api/login", json={"name": args.name}, timeout=10).json()
        if not login["ok"]:
            print(login["error"]["message"], file=sys.stderr)
            return 1
        headers["Cookie"] = "; ".join(f"{c.name}={c.value}" for c in http.cookies)  # the signed session

    policy = simple_policy
    if args.random:
        from agents.bots import make_policy

        bot = make_policy("random", 1)

        def policy(view: dict[str, Any]) -> dict[str, Any]:
            return bot.act(view, view["legal_actions"])

    updates: queue.Queue[dict[str, Any]] = queue.Queue()
    sio = socketio.Client(reconnection=True)
    sio.on("update", updates.put)  # pushed after every change: your filtered events + your new view
    sio.on(
        "presence",
        lambda data: print(f"  seat {data['seat']} is {'online' if data['online'] else 'offline'}"),
    )
    sio.connect(args.url, headers=headers, auth=auth, transports=["websocket"])

    game_id = args.game
    if game_id is None:
        created = sio.call(
            "create_game", {"hall": args.hall, "seats": ["open", {"kind": "bot"}], "join": True}
        )
        if not created["ok"]:
            print(created["error"]["message"], file=sys.stderr)
            return 1
        game_id = created["game"]["game_id"]
    joined = sio.call("join", {"game_id": game_id})  # also how a reconnecting client gets its seat back
    if not joined["ok"]:
        print(joined["error"]["message"], file=sys.stderr)
        return 1
    print(
        f"game {game_id}: you are seat {joined['seat']}, target {joined['view'] and joined['view']['target']}"
    )

    latest = joined
    actions = 0
    while True:
        while not updates.empty():  # keep only the freshest state
            update = updates.get()
            for event in update["events"]:
                print(f"  event {event['n']:>3} {event['type']}")
            if update["log_size"] >= latest["log_size"]:
                latest = update
        view = latest["view"]
        if view is not None and (view["finished"] or latest["status"] != "running"):
            break
        if view is None or not view["your_turn"]:
            latest = _wait(updates, latest)
            continue
        action = policy(view)
        ack = sio.call("act", {"game_id": game_id, "action": action, "client_action_id": f"a{actions}"})
        actions += 1
        if not ack["ok"]:  # a typed error: code + a sentence saying what to do; nothing changed
            print(f"  refused {action['type']}: {ack['error']['code']}: {ack['error']['message']}")
            latest = _wait(updates, latest)
            continue
        for event in ack["events"]:
            print(f"  event {event['n']:>3} {event['type']} (yours)")
        latest = ack
    view = latest["view"]
    print(f"game over after turn {view['turn']}: winners {view['winners']} ({view['end_reason']})")
    sio.disconnect()
    return 0


def _wait(updates: queue.Queue[dict[str, Any]], latest: dict[str, Any]) -> dict[str, Any]:
    update = updates.get(timeout=120)
    for event in update["events"]:
        print(f"  event {event['n']:>3} {event['type']}")
    return update if update["log_size"] >= latest["log_size"] else latest


if __name__ == "__main__":
    sys.exit(main())
