"""Who may choose a game's task instance, over a live server (REST and Socket.IO).

The shipped instance files are public, so an ordinary player who could pick an exact instance would know
every target in it. Ordinary players choose a difficulty band (or random) and the server draws the instance
secretly among at least MIN_BAND_INSTANCES of that band; the band is never shown to anyone while the game
runs. Admins list a hall's instances with their difficulty and pick one exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import yaml
from e2e_helpers import Client, ServerProcess, write_config

from craft_rules.tasks import TC_GAMES_DIR
from server.web.lobby import MIN_BAND_INSTANCES

ADMIN = ("admin", "test-admin-password")
STANDARD = TC_GAMES_DIR / "minecraft" / "1p_v_1p" / "standard.json"


def shipped_levels() -> dict[str, str]:
    """instance id -> difficulty level of the shipped minecraft 1p_v_1p standard set."""
    records = json.loads(STANDARD.read_text(encoding="utf-8"))
    return {
        f"minecraft/1p_v_1p/standard#{index}": record["difficulty"]["level"]
        for index, record in enumerate(records)
    }


LEVELS = shipped_levels()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("instance-choice")
    config = write_config(folder)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["halls"]["banded"] = {
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "random", "set": "standard"},
        "game": {"max_turns": 3},
    }
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    proc = ServerProcess(config).start()
    yield proc
    proc.stop()


def login(server: ServerProcess, name: str) -> requests.Session:
    http = requests.Session()
    http.post(server.url + "/api/login", json={"name": name}, timeout=10).raise_for_status()
    return http


def hall_of(server: ServerProcess, name: str) -> dict[str, Any]:
    halls = requests.get(server.url + "/api/halls", timeout=10).json()["halls"]
    return next(h for h in halls if h["name"] == name)


def drawn_instance(server: ServerProcess, game_id: str) -> dict[str, Any]:
    """The game's stored choice, as only an admin reads it (the researcher view)."""
    answer = requests.get(f"{server.url}/api/admin/games?limit=1000", auth=ADMIN, timeout=10).json()
    return next(g for g in answer["games"] if g["game_id"] == game_id)["instance_choice"]


def test_halls_offer_only_big_enough_bands_and_only_when_drawing_at_random(server: ServerProcess) -> None:
    counts = {level: list(LEVELS.values()).count(level) for level in ("easy", "medium", "hard")}
    offered = {b["band"]: b["instances"] for b in hall_of(server, "banded")["difficulties"]}
    assert offered == {level: n for level, n in counts.items() if n >= MIN_BAND_INSTANCES}
    assert offered  # the shipped set has bands big enough to offer
    assert hall_of(server, "duel")["difficulties"] == []  # a fixed instance: nothing to choose


def test_an_ordinary_player_cannot_pick_an_exact_instance(server: ServerProcess) -> None:
    http = login(server, "Curious")
    for instance_id in ("minecraft/1p_v_1p/standard#3", "minecraft/1p_v_1p/servertest#0", 7):
        answer = http.post(
            server.url + "/api/games", json={"hall": "banded", "instance_id": instance_id}, timeout=10
        )
        assert answer.status_code == 403
        assert answer.json()["error"]["code"] == "instance_choice_forbidden"
    assert http.get(server.url + "/api/me/games", timeout=10).json()["games"] == []  # nothing was created
    # nor may it read the list of instances with their difficulty
    listing = http.get(server.url + "/api/admin/halls/banded/instances", timeout=10)
    assert listing.status_code == 403 and listing.json()["error"]["code"] == "forbidden"
    # the same refusal over Socket.IO
    client = Client(server.url, "Curious too").connect()
    try:
        answer = client.call("create_game", {"hall": "banded", "instance_id": "minecraft/1p_v_1p/standard#3"})
        assert answer["error"]["code"] == "instance_choice_forbidden"
    finally:
        client.close()


@pytest.mark.parametrize(
    ("hall", "body", "code"),
    [
        ("banded", {"difficulty": "impossible"}, "difficulty_not_offered"),
        ("banded", {"difficulty": ["easy"]}, "difficulty_not_offered"),
        ("duel", {"difficulty": "easy"}, "difficulty_not_offered"),  # a fixed hall has no bands
        ("banded", {"difficulty": "easy", "instance_id": "minecraft/1p_v_1p/standard#0"}, "invalid_request"),
    ],
)
def test_bad_difficulty_requests_are_typed_and_create_nothing(
    server: ServerProcess, hall: str, body: dict[str, Any], code: str
) -> None:
    http = login(server, "Picky")
    answer = http.post(server.url + "/api/games", json={"hall": hall, **body}, timeout=10)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == code
    assert answer.json()["error"]["message"]
    assert http.get(server.url + "/api/me/games", timeout=10).json()["games"] == []


def test_a_band_is_drawn_secretly_and_never_shown_while_the_game_runs(server: ServerProcess) -> None:
    band = "hard" if list(LEVELS.values()).count("hard") >= MIN_BAND_INSTANCES else "easy"
    creator = Client(server.url, "Bander").connect()
    other = Client(server.url, "Joiner").connect()
    spectator = Client(server.url).connect()
    try:
        created = creator.call("create_game", {"hall": "banded", "difficulty": band, "join": True})
        assert created["ok"], created
        game = created["game"]
        game_id = game["game_id"]
        assert game["instance_id"] is None and band not in json.dumps(game)
        # more games of the same band, to see the draw vary within it
        drawn = [drawn_instance(server, game_id)]
        for _ in range(6):
            extra = creator.call("create_game", {"hall": "banded", "difficulty": band})["game"]["game_id"]
            drawn.append(drawn_instance(server, extra))
        assert all(c["choice"] == "band" and c["difficulty"] == band for c in drawn)
        assert all(LEVELS[c["instance_id"]] == band for c in drawn)
        assert len({c["instance_id"] for c in drawn}) > 1
        instance_id = drawn[0]["instance_id"]

        assert other.call("join", {"game_id": game_id})["seat"] == 1
        assert spectator.call("watch", {"game_id": game_id})["ok"]
        mine = creator.call("join", {"game_id": game_id})
        lobby = requests.get(server.url + "/api/games?limit=1000", timeout=10).text
        seen = {
            "creator": json.dumps(mine),
            "other seat": json.dumps(other.received) + json.dumps(other.call("view", {"game_id": game_id})),
            "spectator": json.dumps(spectator.received),
            "lobby": lobby,
        }
        stem, index = instance_id.split("#")
        for who, text in seen.items():
            assert f'"{band}"' not in text, who  # the band is the creator's alone
            assert "difficulty" not in text, who
            assert instance_id not in text and stem not in text, who
        # the band is not in the other seat's pushes either, and nobody's frames name the instance index
        assert f"#{index}" not in seen["other seat"]
    finally:
        for client in (creator, other, spectator):
            client.close()


def test_an_admin_lists_instances_with_their_difficulty_and_picks_one(server: ServerProcess) -> None:
    http = login(server, "Researcher")
    assert http.post(server.url + "/api/admin/login", json={"password": ADMIN[1]}, timeout=10).ok
    listing = http.get(server.url + "/api/admin/halls/banded/instances", timeout=10).json()
    levels = {entry["instance_id"]: entry["level"] for entry in listing["instances"]}
    assert levels == LEVELS
    assert all(entry["difficulty"]["score"] is not None for entry in listing["instances"])
    chosen = "minecraft/1p_v_1p/standard#5"
    answer = http.post(server.url + "/api/games", json={"hall": "banded", "instance_id": chosen}, timeout=10)
    assert answer.status_code == 201 and answer.json()["game"]["instance_id"] == chosen
    game_id = answer.json()["game"]["game_id"]
    assert drawn_instance(server, game_id) == {"choice": "requested", "instance_id": chosen}
    # nobody else is told: the public summary hides it while the game waits or runs
    summary = requests.get(f"{server.url}/api/games/{game_id}", timeout=10).json()["game"]
    assert summary["instance_id"] is None


def test_my_games_lists_the_games_i_hold_a_seat_in(server: ServerProcess) -> None:
    ada, bob = login(server, "Ada M"), login(server, "Bob M")
    made = ada.post(server.url + "/api/games", json={"hall": "duel", "join": True}, timeout=10).json()["game"]
    ada.post(server.url + "/api/games", json={"hall": "duel"}, timeout=10)  # created, not joined: not mine
    mine = ada.get(server.url + "/api/me/games", timeout=10).json()["games"]
    assert [(g["game_id"], g["your_seats"]) for g in mine] == [(made["game_id"], [0])]
    assert bob.get(server.url + "/api/me/games", timeout=10).json()["games"] == []
    bob.post(f"{server.url}/api/games/{made['game_id']}/join", json={}, timeout=10).raise_for_status()
    running = bob.get(server.url + "/api/me/games", timeout=10).json()["games"]
    assert [(g["game_id"], g["status"], g["your_seats"]) for g in running] == [
        (made["game_id"], "running", [1])
    ]
    anonymous = requests.get(server.url + "/api/me/games", timeout=10)
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "not_logged_in"
    bots = requests.get(server.url + "/api/bots", timeout=10).json()["bots"]
    assert "random" in bots and "llm" not in bots  # an LLM costs money: only operator-listed specs
