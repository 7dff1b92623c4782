"""The unreachable-target notice over a real server process and real sockets: the seat whose target the
hands can no longer make gets ``target_reachable: false`` in its own view; the other seat and an onlooker
never receive it, in any push or ack."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from e2e_helpers import Client, MakeServer, ServerProcess, write_config

# Seat 0 needs shears (two smelts: fuel); the only fuel is its own coal and stick, which it crafts into
# torches. Seat 1 needs a furnace: eight cobblestone, four in each hand, which nobody touches.
FUEL = {
    "hands": [{"raw_iron": 1, "coal": 1, "stick": 1, "cobblestone": 4}, {"raw_iron": 1, "cobblestone": 4}],
    "targets": [{"shears": 1}, {"furnace": 1}],
}


@pytest.fixture(scope="module")
def server(make_server: MakeServer, tmp_path_factory: pytest.TempPathFactory) -> ServerProcess:
    folder = tmp_path_factory.mktemp("reach")
    config_path = write_config(folder)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    root = folder / "fuel-instances"
    (root / "minecraft" / "1p_v_1p").mkdir(parents=True)
    (root / "minecraft" / "1p_v_1p" / "fuel.json").write_text(json.dumps([FUEL]), encoding="utf-8")
    config["halls"]["fuel"] = {
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "fixed", "root": str(root), "set": "fuel"},
        "game": {"max_turns": 3, "first_proposer": 0},
    }
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return make_server(config_path)


@pytest.fixture
def clients(server: ServerProcess) -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for client in made:
        client.close()


def _views(client: Client, game_id: str) -> list[dict[str, Any]]:
    return [
        data["view"]
        for name, data in client.received
        if name in ("update", "ack") and isinstance(data, dict) and data.get("game_id") == game_id
        if data.get("view")
    ]


def test_only_the_seat_that_cannot_win_is_told(server: ServerProcess, clients: list[Client]) -> None:
    players = [Client(server.url, f"R{i}-{uuid.uuid4().hex[:4]}").connect() for i in range(2)]
    watcher = Client(server.url).connect()
    clients.extend([*players, watcher])
    created = players[0].call("create_game", {"hall": "fuel"})
    assert created["ok"], created
    game_id = created["game"]["game_id"]
    for seat, client in enumerate(players):
        assert client.call("join", {"game_id": game_id})["seat"] == seat
    assert watcher.call("watch", {"game_id": game_id})["ok"]
    players[1].wait_log(game_id, 2)
    first = players[0].call("view", {"game_id": game_id})
    assert first["view"]["target_reachable"] is True

    assert players[0].act(game_id, "pass")["ok"]
    crafted = players[0].act(game_id, "craft", recipe="torch", runs="1")
    assert crafted["ok"], crafted
    assert crafted["view"]["target_reachable"] is True  # private crafting: the public hands are unchanged
    assert players[1].act(game_id, "finish_crafting")["ok"]
    done = players[0].act(game_id, "finish_crafting")
    assert done["ok"], done
    assert done["view"]["turn"] == 2 and done["view"]["hands"][0].get("torch") == 4
    assert done["view"]["target_reachable"] is False
    players[1].wait_for(lambda: any(v["turn"] == 2 for v in _views(players[1], game_id)), what="turn 2")
    watcher.wait_for(lambda: any(v["turn"] == 2 for v in _views(watcher, game_id)), what="turn 2")

    again = players[0].call("view", {"game_id": game_id})
    assert again["view"]["target_reachable"] is False
    other = players[1].call("view", {"game_id": game_id})
    assert other["view"]["target_reachable"] is True
    onlooker = watcher.call("view", {"game_id": game_id})
    assert onlooker["view"]["target_reachable"] is None
    # nothing seat 1 or the onlooker ever received says seat 0 lost its target
    assert all(v["target_reachable"] is True for v in _views(players[1], game_id))
    assert all(v["target_reachable"] is None for v in _views(watcher, game_id))
    for client in (players[1], watcher):
        assert '"target_reachable": false' not in json.dumps(client.received)
