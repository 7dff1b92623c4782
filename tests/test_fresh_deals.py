"""Fresh deals: the public play halls give each game an instance made for it, which no public file holds.

Every player sees every starting hand, and the shipped instance files (craft_rules/TC_GAMES) are public: a
game dealt from them can be looked up by its hands and every target read. These tests run the halls of the
real settings.yaml (the app in-process; the kill test on a real server process, which it kills) and search
every shipped instance for the hands and targets it deals; they check the band a creator asks for, that the
deal depends on the server's secret, that a killed server replays a generated game exactly, that the
researcher export carries the instance, and that file halls (fixed, the paper set) work as before.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from e2e_helpers import ADMIN, DUEL_ID, Client, MakeServer, Participant, write_config
from in_process import InProcessApp, MakeApp

from craft_rules.tasks import iter_instances
from server.table.config import DEFAULT_CONFIG_PATH, SettingsError, load_settings
from server.web.app import create_app
from server.web.lobby import DEAL_SECRET_NAME, DIFFICULTY_BANDS, repeats_published

REAL_HALLS = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))["halls"]
GENERATED_HALLS = [name for name, hall in REAL_HALLS.items() if hall["instances"]["choice"] == "generated"]


def hand_key(hand: dict[str, Any]) -> frozenset[tuple[str, int]]:
    return frozenset((item, int(Fraction(str(count)))) for item, count in hand.items() if count)


def shipped() -> tuple[set[frozenset[tuple[str, int]]], set[tuple[tuple[str, int], ...]]]:
    """Every hand and every seat-by-seat target list of every shipped instance file (every rule set)."""
    hands: set[frozenset[tuple[str, int]]] = set()
    targets: set[tuple[tuple[str, int], ...]] = set()
    for instance in iter_instances():
        hands.update(hand_key(hand) for hand in instance.hands)
        targets.add(tuple(pair for target in instance.targets for pair in sorted(target.items())))
    return hands, targets


SHIPPED_HANDS, SHIPPED_TARGETS = shipped()


def assert_in_no_shipped_file(instance: dict[str, Any]) -> None:
    for hand in instance["hands"]:
        assert hand_key(hand) not in SHIPPED_HANDS, f"a shipped instance file holds the hand {hand}"
    targets = tuple(pair for target in instance["targets"] for pair in sorted(target.items()))
    assert targets not in SHIPPED_TARGETS, f"a shipped instance file holds the targets {targets}"


def untimed(hall: str) -> dict[str, Any]:
    """A shipped hall as it is, but without deadlines."""
    return {**REAL_HALLS[hall], "game": {**REAL_HALLS[hall].get("game", {}), "deadlines": {}}}


@pytest.fixture(scope="module")
def app(make_app: MakeApp) -> InProcessApp:
    halls = {name: untimed(name) for name in [*GENERATED_HALLS, "paper"]}  # beside the tests' fixed halls
    halls["stingy"] = {  # three players, one draw per game: easy deals often fail
        "ruleset": "minecraft",
        "players": 3,
        "instances": {"choice": "generated", "max_attempts": 1},
    }
    return make_app(overrides={"halls": halls})


def admin_games(reader: Participant) -> list[dict[str, Any]]:
    """Every game's stored record, as only an admin (a researcher) reads them."""
    status, answer = reader.rest("GET", "/api/admin/games?limit=10000", auth=ADMIN)
    assert status == 200, answer
    return list(answer["games"])


def admin_record(reader: Participant, game_id: str) -> dict[str, Any]:
    return next(g for g in admin_games(reader) if g["game_id"] == game_id)


def create(app: InProcessApp, user: str, hall: str, **body: Any) -> tuple[int, dict[str, Any]]:
    return app.client(user).rest("POST", "/api/games", {"hall": hall, **body})


@pytest.mark.slow
@pytest.mark.parametrize("hall", GENERATED_HALLS)
def test_each_band_of_each_generated_hall_deals_a_game_no_shipped_file_holds(
    app: InProcessApp, hall: str
) -> None:
    listed = next(h for h in app.http().get("/api/halls").json["halls"] if h["name"] == hall)
    assert listed["instance_choice"] == "generated"
    assert [b["band"] for b in listed["difficulties"]] == list(DIFFICULTY_BANDS)
    for band in [*DIFFICULTY_BANDS, None]:
        body = {"difficulty": band} if band else {}
        status, answer = create(app, f"creator {hall.replace('_vs_bot', '')}-{band}", hall, **body)
        assert status == 201, answer
        game = answer["game"]
        assert game["instance_id"] is None and "dealt" not in json.dumps(game)
        record = admin_record(app.client(), game["game_id"])
        choice, instance = record["instance_choice"], record["instance"]
        assert choice["choice"] == "generated" and choice["attempts"] >= 1
        assert instance["difficulty"]["level"] == choice["difficulty"]
        if band:
            assert choice["difficulty"] == band  # the band asked for is honoured
        assert len(instance["hands"]) == REAL_HALLS[hall]["players"]
        assert instance["crafting_runs"] == REAL_HALLS[hall].get("game", {}).get("crafting_runs", "rational")
        assert_in_no_shipped_file(instance)
        assert record["instance_id"] == f"{record['ruleset']}/{record['mode']}/dealt-{game['game_id']}#0"


@pytest.mark.slow
def test_a_played_generated_game_shows_hands_no_file_holds_and_replays_after_a_kill(
    tmp_path: Path, make_server: MakeServer
) -> None:
    """Players see hands that match no shipped instance; killed mid-game, the server replays the game
    exactly from the store; the researcher export carries the instance and replays it."""
    config = write_config(tmp_path, overrides={"halls": {"duel": untimed("duel")}})
    server = make_server(config)
    p0, p1, spectator = (
        Client(server.url, "Ada").connect(),
        Client(server.url, "Bob").connect(),
        Client(server.url),
    )
    try:
        created = p0.call("create_game", {"hall": "duel", "join": True})
        game_id = created["game"]["game_id"]
        assert p1.call("join", {"game_id": game_id})["ok"]
        spectator.connect()
        assert spectator.call("watch", {"game_id": game_id})["ok"]
        started = next(
            e for e in p0.call("events", {"game_id": game_id})["events"] if e["type"] == "game_started"
        )
        dealt_hands = started["payload"]["hands"]
        for hand in dealt_hands:
            assert hand_key(hand) not in SHIPPED_HANDS
        stored = admin_record(spectator, game_id)["instance"]
        assert [hand_key(h) for h in dealt_hands] == [hand_key(h) for h in stored["hands"]]
        seen = json.dumps([p0.received, p1.received, spectator.received])
        assert "dealt-" not in seen and game_id + "#" not in seen  # no view or push names the instance

        # a few moves: the proposer offers one unit of something for one unit the other holds; it is refused
        view = p0.call("view", {"game_id": game_id})["view"]
        proposer = view["proposer"]
        clients = (p0, p1)
        offer_item = sorted(dealt_hands[proposer])[0]
        ask_item = next(item for item in sorted(dealt_hands[1 - proposer]) if item != offer_item)
        ack = clients[proposer].act(
            game_id, "propose", to=1 - proposer, offer={offer_item: 1}, request={ask_item: 1}, message="swap?"
        )
        assert ack["ok"], ack
        assert clients[1 - proposer].act(game_id, "decide", accept=False, message="no")["ok"]
        logs = [c.call("events", {"game_id": game_id})["events"] for c in clients]
        views = [c.call("view", {"game_id": game_id})["view"] for c in clients]

        server.kill()
        # nothing of the deal is on disk outside the store: recovery reads the game's record alone
        assert not [p for p in tmp_path.rglob("*dealt*")], list(tmp_path.rglob("*dealt*"))
        for client in (p0, p1, spectator):
            client.drop()
        server.start()
        for seat, client in enumerate(clients):
            client.reconnect()
            joined = client.call("join", {"game_id": game_id})
            assert joined["ok"] and joined["seat"] == seat
            assert joined["events"] == logs[seat]  # the same deal, the same history
            assert joined["view"] == views[seat]

        export = requests.get(f"{server.url}/api/admin/games/{game_id}/export", auth=ADMIN, timeout=30)
        assert export.status_code == 200, export.text
        lines = [json.loads(line) for line in export.text.splitlines()]
        header = lines[0]
        assert header["instance"]["hands"] == stored["hands"]
        assert header["instance"]["targets"] == stored["targets"]
        assert header["instance"]["id"] == f"minecraft/1p_v_1p/dealt-{game_id}#0"
        assert not lines[-1].get("replay_error"), lines[-1]
    finally:
        for client in (p0, p1, spectator):
            client.close()
        server.stop()


def test_the_deal_depends_on_the_servers_secret(tmp_path: Path) -> None:
    """The same game id deals the same instance under one secret and another under another: a game id, a
    published seed or a copy of the code reproduce nothing without the server's store."""

    def lobby_for(database: Path) -> Any:
        settings = load_settings(
            DEFAULT_CONFIG_PATH,
            environ={},
            overrides={
                "server": {"data_dir": str(tmp_path / "data")},
                "database": {"uri": f"sqlite:///{database}"},
            },
        )
        return create_app(settings).extensions["tradecraft"].lobby

    first, second = lobby_for(tmp_path / "one.db"), lobby_for(tmp_path / "two.db")
    same_store = lobby_for(tmp_path / "one.db")
    hall = first.settings.halls["duel"]
    dealt = first.deal_instance(hall, "game-id-7", "medium")[0]
    assert same_store.deal_instance(hall, "game-id-7", "medium")[0] == dealt  # another worker, same secret
    other = second.deal_instance(hall, "game-id-7", "medium")[0]
    assert other.hands != dealt.hands
    assert first.deal_seed("game-id-7") != second.deal_seed("game-id-7")
    assert first.deal_instance(hall, "game-id-8", "medium")[0].hands != dealt.hands
    secret = first.store.get_value(DEAL_SECRET_NAME)
    assert secret and len(secret) >= 64 and secret != second.store.get_value(DEAL_SECRET_NAME)
    assert not repeats_published(dealt, "minecraft")


def test_a_deal_that_does_not_come_is_a_typed_error_that_creates_nothing(app: InProcessApp) -> None:
    """One draw per game: a three-player easy deal mostly fails; the answer says what to do."""
    failures = 0
    for attempt in range(12):
        status, answer = create(app, f"Stingy {attempt}", "stingy", difficulty="easy")
        if status == 201:
            continue
        failures += 1
        assert status == 503, answer
        error = answer["error"]
        assert error["code"] == "deal_failed" and "Try again" in error["message"], error
    assert failures > 0
    stingy = [g for g in admin_games(app.client()) if g.get("hall") == "stingy"]
    assert len(stingy) == 12 - failures  # a failed deal stored nothing
    assert "Traceback" not in app.log()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"difficulty": "impossible"}, "difficulty_not_offered"),
        ({"difficulty": ["easy"]}, "difficulty_not_offered"),
    ],
)
def test_bad_bands_are_refused_before_any_deal(app: InProcessApp, body: dict[str, Any], code: str) -> None:
    status, answer = create(app, "Picky", "duel_vs_bot", **body)
    assert status == 400 and answer["error"]["code"] == code


def test_file_halls_deal_from_their_files_as_before(app: InProcessApp) -> None:
    status, answer = create(app, "Fixed", "slow")  # a fixed hall of the tests (duel is the real one here)
    assert status == 201
    record = admin_record(app.client(), answer["game"]["game_id"])
    assert record["instance_id"] == DUEL_ID and "instance" not in record
    assert record["instance_choice"] == {"choice": "fixed", "instance_id": DUEL_ID}
    status, answer = create(app, "Replicator", "paper")  # the published paper set, by design
    assert status == 201
    record = admin_record(app.client(), answer["game"]["game_id"])
    assert record["instance_choice"]["choice"] == "sequential"
    assert record["instance_id"].startswith("minecraft/1p_v_1p/paper#") and "instance" not in record


def test_generated_halls_take_no_file_keys_and_bounded_attempts(tmp_path: Path) -> None:
    config = tmp_path / "settings.yaml"
    for instances, problem in (
        ({"choice": "generated", "seed": 7}, "remove instances.seed"),
        ({"choice": "generated", "set": "paper"}, "remove instances.set"),
        ({"choice": "generated", "max_attempts": 100_000}, "max_attempts"),
    ):
        config.write_text(
            yaml.safe_dump({"halls": {"h": {"players": 2, "instances": instances}}}), encoding="utf-8"
        )
        with pytest.raises(SettingsError, match=problem):
            load_settings(config, environ={})
    # naming files without a choice keeps the former default, a random draw from them
    config.write_text(
        yaml.safe_dump({"halls": {"h": {"players": 2, "instances": {"set": "paper"}}}}), encoding="utf-8"
    )
    assert load_settings(config, environ={}).halls["h"].instances.choice == "random"
    config.write_text(yaml.safe_dump({"halls": {"h": {"players": 2}}}), encoding="utf-8")
    assert load_settings(config, environ={}).halls["h"].instances.choice == "generated"
