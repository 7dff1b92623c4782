"""Who may choose a game's task instance (the app in-process; REST and Socket.IO test clients).

The shipped instance files are public, so an ordinary player who could pick an exact instance would know
every target in it. Ordinary players choose a difficulty band (or random) and the server draws the instance
secretly among at least MIN_BAND_INSTANCES of that band; the band is never shown to anyone while the game
runs. Admins list a hall's instances with their difficulty and pick one exactly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_helpers import ADMIN
from flask.testing import FlaskClient
from in_process import InProcessApp, MakeApp

from craft_rules.difficulty import measured_difficulty, pool_levels
from craft_rules.tasks import TC_GAMES_DIR, get_instance
from server.web.lobby import MIN_BAND_INSTANCES

STANDARD = TC_GAMES_DIR / "minecraft" / "1p_v_1p" / "standard.json"


def shipped_levels() -> dict[str, str]:
    """instance id -> difficulty level of the shipped minecraft 1p_v_1p standard set in a hall over the
    whole set: the measured label (craft_rules/difficulty.py), fitted on the set's own measured costs when
    the calibrated labels leave a band too small to offer, the generator's record where none was measured."""
    records = json.loads(STANDARD.read_text(encoding="utf-8"))
    ids = [f"minecraft/1p_v_1p/standard#{index}" for index in range(len(records))]
    labels = {instance_id: measured_difficulty(get_instance(instance_id)) for instance_id in ids}
    refitted = pool_levels({i: d.get("measured") for i, d in labels.items()}, MIN_BAND_INSTANCES)
    return refitted or {instance_id: label["level"] for instance_id, label in labels.items()}


LEVELS = shipped_levels()


BANDED_HALL = {"ruleset": "minecraft", "players": 2, "instances": {"choice": "random", "set": "standard"}}


@pytest.fixture(scope="module")
def app(make_app: MakeApp) -> InProcessApp:
    return make_app(overrides={"halls": {"banded": {**BANDED_HALL, "game": {"max_turns": 3}}}})


def login(app: InProcessApp, name: str) -> FlaskClient:
    return app.client(name).http


def hall_of(app: InProcessApp, name: str) -> dict[str, Any]:
    halls = app.http().get("/api/halls").json["halls"]
    return next(h for h in halls if h["name"] == name)


def drawn_instance(app: InProcessApp, game_id: str) -> dict[str, Any]:
    """The game's stored choice, as only an admin reads it (the researcher view)."""
    answer = app.http().get("/api/admin/games?limit=1000", auth=ADMIN).json
    return next(g for g in answer["games"] if g["game_id"] == game_id)["instance_choice"]


def test_halls_offer_only_big_enough_bands_and_only_when_drawing_at_random(app: InProcessApp) -> None:
    counts = {level: list(LEVELS.values()).count(level) for level in ("easy", "medium", "hard")}
    offered = {b["band"]: b["instances"] for b in hall_of(app, "banded")["difficulties"]}
    assert offered == {level: n for level, n in counts.items() if n >= MIN_BAND_INSTANCES}
    assert offered  # the shipped set has bands big enough to offer
    assert hall_of(app, "duel")["difficulties"] == []  # a fixed instance: nothing to choose


def test_an_ordinary_player_cannot_pick_an_exact_instance(app: InProcessApp) -> None:
    http = login(app, "Curious")
    for instance_id in ("minecraft/1p_v_1p/standard#3", "minecraft/1p_v_1p/servertest#0", 7):
        answer = http.post("/api/games", json={"hall": "banded", "instance_id": instance_id})
        assert answer.status_code == 403
        assert answer.json["error"]["code"] == "instance_choice_forbidden"
    assert http.get("/api/me/games").json["games"] == []  # nothing was created
    # nor may it read the list of instances with their difficulty
    listing = http.get("/api/admin/halls/banded/instances")
    assert listing.status_code == 403 and listing.json["error"]["code"] == "forbidden"
    # the same refusal over Socket.IO
    client = app.client("Curious too").connect()
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
    app: InProcessApp, hall: str, body: dict[str, Any], code: str
) -> None:
    http = login(app, "Picky")
    answer = http.post("/api/games", json={"hall": hall, **body})
    assert answer.status_code == 400 and answer.json["error"]["code"] == code
    assert answer.json["error"]["message"]
    assert http.get("/api/me/games").json["games"] == []


def test_a_band_is_drawn_secretly_and_never_shown_while_the_game_runs(app: InProcessApp) -> None:
    band = "hard" if list(LEVELS.values()).count("hard") >= MIN_BAND_INSTANCES else "easy"
    creator = app.client("Bander").connect()
    other = app.client("Joiner").connect()
    spectator = app.client().connect()
    try:
        created = creator.call("create_game", {"hall": "banded", "difficulty": band, "join": True})
        assert created["ok"], created
        game = created["game"]
        game_id = game["game_id"]
        assert game["instance_id"] is None and band not in json.dumps(game)
        # more games of the same band, to see the draw vary within it
        drawn = [drawn_instance(app, game_id)]
        for _ in range(6):
            extra = creator.call("create_game", {"hall": "banded", "difficulty": band})["game"]["game_id"]
            drawn.append(drawn_instance(app, extra))
        assert all(c["choice"] == "band" and c["difficulty"] == band for c in drawn)
        assert all(LEVELS[c["instance_id"]] == band for c in drawn)
        assert len({c["instance_id"] for c in drawn}) > 1
        instance_id = drawn[0]["instance_id"]

        assert other.call("join", {"game_id": game_id})["seat"] == 1
        assert spectator.call("watch", {"game_id": game_id})["ok"]
        mine = creator.call("join", {"game_id": game_id})
        lobby = app.http().get("/api/games?limit=1000").text
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


def test_an_admin_lists_instances_with_their_difficulty_and_picks_one(app: InProcessApp) -> None:
    http = login(app, "Researcher")
    assert http.post("/api/admin/login", json={"password": ADMIN[1]}).status_code == 200
    listing = http.get("/api/admin/halls/banded/instances").json
    levels = {entry["instance_id"]: entry["level"] for entry in listing["instances"]}
    assert levels == LEVELS
    assert all(entry["difficulty"]["score"] is not None for entry in listing["instances"])
    chosen = "minecraft/1p_v_1p/standard#5"
    answer = http.post("/api/games", json={"hall": "banded", "instance_id": chosen})
    assert answer.status_code == 201 and answer.json["game"]["instance_id"] == chosen
    game_id = answer.json["game"]["game_id"]
    assert drawn_instance(app, game_id) == {"choice": "requested", "instance_id": chosen}
    # nobody else is told: the public summary hides it while the game waits or runs
    summary = app.http().get(f"/api/games/{game_id}").json["game"]
    assert summary["instance_id"] is None


def test_my_games_lists_the_games_i_hold_a_seat_in(app: InProcessApp) -> None:
    ada, bob = login(app, "Ada M"), login(app, "Bob M")
    made = ada.post("/api/games", json={"hall": "duel", "join": True}).json["game"]
    # created, not joined: listed too (issue 20: its creator must be able to find and cancel it)
    unjoined = ada.post("/api/games", json={"hall": "duel"}).json["game"]
    mine = ada.get("/api/me/games").json["games"]
    assert sorted((g["game_id"], g["your_seats"], g["cancellable"]) for g in mine) == sorted(
        [(made["game_id"], [0], True), (unjoined["game_id"], [], True)]
    )
    assert bob.get("/api/me/games").json["games"] == []
    assert bob.post(f"/api/games/{made['game_id']}/join", json={}).status_code == 200
    running = bob.get("/api/me/games").json["games"]
    assert [(g["game_id"], g["status"], g["your_seats"]) for g in running] == [
        (made["game_id"], "running", [1])
    ]
    anonymous = app.http().get("/api/me/games")
    assert anonymous.status_code == 401 and anonymous.json["error"]["code"] == "not_logged_in"
    bots = app.http().get("/api/bots").json["bots"]
    assert "random" in bots and "llm" not in bots  # an LLM costs money: only operator-listed specs
