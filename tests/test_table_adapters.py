"""The one table, two adapters: the same scripted games played through in-process local connections and
through a live Flask-SocketIO server give every seat the same acks, envelopes, views and event logs.

Scripts cover 2 and 3 players, a rejected proposal (private to its two parties in the trio), a private craft
phase and phase deadlines that expire. Only what must differ is set aside: the game id, the event times and
the deadline's absolute time (compared as "is there one").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from e2e_helpers import DUEL_ID, TRIO_ID, Client, ServerProcess, write_instances

from agents.local_connection import LocalConnection, LocalTable
from craft_rules.loader import load_rule_set
from craft_rules.tasks import get_instance
from server.game import Game
from server.table.config import load_settings
from server.table.envelope import Envelope

pytestmark = pytest.mark.slow

DEADLINE = 2.5  # seconds per phase: longer than any scripted step takes, short enough to wait for twice
NAMES = ["Ann", "Bob", "Cid"]
ADMIN = ("admin", "test-admin-password")


def config(folder: Path) -> Path:
    instances = {"choice": "fixed", "root": str(write_instances(folder / "instances"))}
    deadlines = dict.fromkeys(("trade_propose", "trade_decide", "craft"), DEADLINE)
    game = {"max_turns": 2, "deadlines": deadlines}
    halls = {
        "duel": {"ruleset": "minecraft", "players": 2, "instances": instances, "game": game},
        "trio": {"ruleset": "minecraft", "players": 3, "instances": instances, "game": game},
    }
    path = folder / "settings.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "server": {"host": "127.0.0.1", "data_dir": str(folder / "data")},
                "security": {"admin_password": ADMIN[1]},
                "bots": {"move_delay_seconds": 0},
                "halls": halls,
            }
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(config(tmp_path_factory.mktemp("adapters"))).start()
    yield proc
    proc.stop()


# ------------------------------------------------------------------------------------------------ scripts
def reject_a_proposal(game: Game) -> list[tuple[int, dict[str, Any]]]:
    """The proposer offers one unit of its first item for one of the next seat's; that seat rejects."""
    proposer, to = game.proposer, (game.proposer + 1) % game.players
    offer, request = sorted(game.hands[proposer])[0], sorted(game.hands[to])[0]
    return [
        (
            proposer,
            {"type": "propose", "to": to, "offer": {offer: 1}, "request": {request: 1}, "message": "deal?"},
        ),
        (to, {"type": "decide", "accept": False, "message": "no thanks"}),
    ]


def craft_privately_then_finish(game: Game) -> list[tuple[int, dict[str, Any]]]:
    """Seat 0 turns half its planks into sticks (private until the phase ends); every seat finishes."""
    steps: list[tuple[int, dict[str, Any]]] = [(0, {"type": "craft", "recipe": "stick", "runs": "1/2"})]
    return steps + [(seat, {"type": "finish_crafting"}) for seat in range(game.players)]


SCRIPT: list[Callable[[Game], list[tuple[int, dict[str, Any]]] | str]] = [
    reject_a_proposal,
    craft_privately_then_finish,
    lambda game: "deadline",  # turn 2: nobody proposes; the trade phase times out
    lambda game: "deadline",  # nobody finishes crafting; the craft phase times out and the game ends
]


# ------------------------------------------------------------------------------------------- comparison
def normalised(message: dict[str, Any]) -> dict[str, Any]:
    """What both adapters must agree on: all but the game id, event times and the deadline's clock time."""
    out = {k: v for k, v in message.items() if k not in ("game_id", "deadline")}
    out["has_deadline"] = message.get("deadline") is not None
    if "events" in out:
        out["events"] = [{k: v for k, v in e.items() if k != "time"} for e in out["events"]]
    return out


class ServerSide:
    """The game through the live server: one agent per seat over Socket.IO (API tokens, seats "agent")."""

    def __init__(self, server: ServerProcess, hall: str, players: int) -> None:
        self.clients = []
        for name in NAMES[:players]:
            answer = requests.post(
                f"{server.url}/api/admin/tokens", json={"name": name}, auth=ADMIN, timeout=10
            ).json()
            self.clients.append(Client(server.url, token=answer["token"]).connect())
        created = self.clients[0].call("create_game", {"hall": hall, "seats": ["agent"] * players})
        assert created["ok"], created
        self.game_id = created["game"]["game_id"]
        for seat, client in enumerate(self.clients):
            assert client.call("join", {"game_id": self.game_id})["seat"] == seat
        games = requests.get(f"{server.url}/api/admin/games?limit=10000", auth=ADMIN, timeout=10).json()
        self.seed = next(g for g in games["games"] if g["game_id"] == self.game_id)["seed"]

    def act(self, seat: int, action: dict[str, Any]) -> dict[str, Any]:
        fields = {k: v for k, v in action.items() if k != "type"}
        return self.clients[seat].call(action["type"], {"game_id": self.game_id, **fields})

    def envelope(self, seat: int) -> dict[str, Any]:
        return self.clients[seat].call("view", {"game_id": self.game_id})

    def log(self, seat: int) -> list[dict[str, Any]]:
        return self.clients[seat].call("events", {"game_id": self.game_id, "after": -1})["events"]

    def wait_for_timeout(self, count: int) -> None:
        deadline = time.monotonic() + DEADLINE * 4
        while sum(e["type"] == "timeout" for e in self.log(0)) < count:
            assert time.monotonic() < deadline, "the server's deadline did not expire"
            time.sleep(0.1)

    def close(self) -> None:
        for client in self.clients:
            client.close()


class LocalSide:
    """The same game through in-process local connections, its clock moved by hand."""

    def __init__(self, server_config: Path, hall: str, instance_id: str, seed: int) -> None:
        hall_settings = load_settings(server_config, environ={}).halls[hall]
        instance = get_instance(instance_id, server_config.parent / "instances")
        self.now = 1_000_000.0
        game = Game.new(instance, hall_settings.game_settings(), load_rule_set("minecraft"), seed)
        self.table = LocalTable(game, clock=lambda: self.now, seat_names=NAMES[: game.players], hall=hall)
        self.conns: list[LocalConnection] = self.table.connections()

    def act(self, seat: int, action: dict[str, Any]) -> dict[str, Any]:
        self.now += 0.01
        return self.conns[seat].act(action)

    def envelope(self, seat: int) -> dict[str, Any]:
        return {"ok": True, **self.conns[seat].envelope()}

    def log(self, seat: int) -> list[dict[str, Any]]:
        return self.table.master.history(self.table.live, seat)

    def expire_deadline(self) -> None:
        self.now += DEADLINE + 1
        assert self.table.run_due_timers() >= 1


@pytest.mark.parametrize(("hall", "instance_id", "players"), [("duel", DUEL_ID, 2), ("trio", TRIO_ID, 3)])
def test_local_and_server_adapters_tell_every_seat_the_same(
    server: ServerProcess, hall: str, instance_id: str, players: int
) -> None:
    remote = ServerSide(server, hall, players)
    try:
        local = LocalSide(server.config, hall, instance_id, remote.seed)
        timeouts = 0

        def agree(what: str) -> None:
            for seat in range(players):
                mine, theirs = normalised(local.envelope(seat)), normalised(remote.envelope(seat))
                assert mine == theirs, f"{what}: seat {seat}'s envelope differs"
                Envelope.model_validate({**local.envelope(seat), "events": None})  # the one declared shape
                assert normalised({"events": local.log(seat)}) == normalised({"events": remote.log(seat)}), (
                    f"{what}: seat {seat}'s log differs"
                )

        agree("start")
        outsider = (local.table.game.proposer + 2) % players  # party to no trade of turn 1 in the trio
        for step in SCRIPT:
            planned = step(local.table.game)
            if planned == "deadline":
                timeouts += 1
                local.expire_deadline()
                remote.wait_for_timeout(timeouts)
                agree(f"deadline {timeouts}")
                continue
            assert isinstance(planned, list)
            for seat, action in planned:
                ack_local, ack_remote = local.act(seat, action), remote.act(seat, action)
                assert ack_local["ok"], ack_local
                assert normalised(ack_local) == normalised(ack_remote), f"ack of {action['type']} by {seat}"
                agree(f"after {action['type']} by seat {seat}")
        assert local.table.game.finished
        assert remote.envelope(0)["status"] == "finished"
        if players == 3:  # the rejected proposal never reached the third seat
            assert not any(e["type"] in ("proposed", "decided") for e in local.log(outsider))
    finally:
        remote.close()
