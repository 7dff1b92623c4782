"""`tradecraft play`: random bots finish every shipped instance; instance lookup; typed errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from suite_support import shipped_rule_set

from agents.local import LocalPlayError, play_local
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance, iter_instances, mode_for_players
from server.game import GameSettings, viewer_log
from tradecraft.cli import main

SHIPPED = list(iter_instances())

INSTANCE_FILE = [
    {
        "hands": [
            {"minecraft:raw_iron": 2, "minecraft:coal": 1},
            {"minecraft:stick": 2, "minecraft:oak_log": 1},
        ],
        "targets": [{"minecraft:shears": 1}, {"minecraft:torch": 4}],
    }
]


def play(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["play", *args, "--json"])
    return result.exit_code, json.loads(result.output)


def needs_shipped(ruleset: str | None = None, players: int | None = None) -> list[Any]:
    found = [
        i
        for i in SHIPPED
        if (ruleset is None or i.ruleset == ruleset) and (players is None or i.players == players)
    ]
    assert found, f"no shipped instances for {ruleset or 'any rule set'} / {players or 'any'} players"
    return found


@pytest.fixture
def instance_file(tmp_path: Path) -> Path:
    shipped_rule_set("minecraft")
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(INSTANCE_FILE))
    return path


@pytest.mark.slow
def test_random_bots_finish_every_shipped_instance() -> None:
    instances = needs_shipped()
    for inst in instances:
        players = ",".join(["random"] * inst.players)
        code, out = play("--instance", inst.id, "--players", players, "--seed", "11")
        assert code == 0 and out["ok"], (inst.id, out)
        assert out["instance_id"] == inst.id and out["ruleset"] == inst.ruleset
        assert out["end_reason"] in ("target_crafted", "max_turns")
        assert 1 <= out["turns"] <= 10 and out["events"] > out["actions"] > 0
        assert len(out["log_sha256"]) == 64
        if out["end_reason"] == "target_crafted":
            assert out["winners"]


def test_same_arguments_same_log_hash_and_the_seed_matters() -> None:
    inst = needs_shipped("minecraft", 2)[0]
    _, first = play("--instance", inst.id, "--seed", "3")
    _, again = play("--instance", inst.id, "--seed", "3")
    assert first == again
    hashes = {play("--instance", inst.id, "--seed", str(seed))[1]["log_sha256"] for seed in range(4, 9)}
    assert len(hashes - {first["log_sha256"]}) >= 4


def test_instance_by_default_index_or_id_and_max_turns() -> None:
    first = needs_shipped("minecraft", 2)[0]
    _, default = play()
    _, by_index = play("--instance", "0")
    _, by_id = play("--instance", first.id)
    assert default == by_index == by_id
    assert default["instance_id"] == first.id
    _, short = play("--instance", first.id, "--max-turns", "1")
    assert short["turns"] == 1
    three = needs_shipped("minecraft", 3)[0]
    _, trio = play("--players", "random,random,random")
    assert trio["instance_id"] == three.id and trio["players"] == 3
    alchemy = needs_shipped("alchemy", 2)
    _, second = play("--ruleset", "alchemy", "--instance", "1")
    assert second["instance_id"] == alchemy[1].id


def test_an_instance_file_of_your_own(instance_file: Path) -> None:
    code, out = play("--instance", str(instance_file), "--ruleset", "minecraft", "--seed", "2")
    assert code == 0 and out["ok"]
    assert out["instance_id"] == f"minecraft/{mode_for_players(2)}/mine#0"
    code, out = play("--instance", f"{instance_file}#3")
    assert code == 1 and out["error"]["code"] == "unknown_instance"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--players", "random,grandmaster"], "unknown_bot"),
        (["--players", "random"], "wrong_player_count"),
        (["--instance", "minecraft/1p_v_1p/nope#0"], "unknown_instance"),
        (["--instance", "9999"], "unknown_instance"),
        (["--ruleset", "nonexistent"], "no_instances"),
        (["--instance", "/no/such/file.json"], "invalid_instance"),
        (["--narrate", "5"], "unknown_player"),
    ],
)
def test_typed_errors(args: list[str], code: str) -> None:
    exit_code, out = play(*args)
    assert exit_code == 1
    assert out["ok"] is False and out["error"]["code"] == code
    assert out["error"]["message"].endswith((".", ")"))


def test_mismatched_ruleset_and_player_count_for_a_named_instance() -> None:
    inst = needs_shipped("minecraft", 2)[0]
    assert play("--instance", inst.id, "--ruleset", "alchemy")[1]["error"]["code"] == "ruleset_mismatch"
    assert play("--instance", inst.id, "--players", "random,random,random")[1]["error"]["code"] == (
        "wrong_player_count"
    )


def test_text_output_and_narration(instance_file: Path) -> None:
    result = CliRunner().invoke(main, ["play", "--instance", str(instance_file), "--narrate", "1"])
    assert result.exit_code == 0, result.output
    assert "log sha256" in result.output and "winners" in result.output
    assert "The game as Player 1 was told it:" in result.output
    assert "Player 1 (you)" in result.output
    failed = CliRunner().invoke(
        main, ["play", "--players", "nobody,random", "--instance", str(instance_file)]
    )
    assert failed.exit_code == 1 and "[unknown_bot]" in failed.output


def test_console_script_smoke(instance_file: Path) -> None:
    """The installed `tradecraft` entry point runs a game end to end in a fresh process."""
    script = shutil.which("tradecraft", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the tradecraft console script is not installed in this environment")
    done = subprocess.run(
        [script, "play", "--instance", str(instance_file), "--seed", "5", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["ok"] and out["players"] == 2 and len(out["log_sha256"]) == 64
    _, in_process = play("--instance", str(instance_file), "--seed", "5")
    assert in_process["log_sha256"] == out["log_sha256"], "a fresh process must replay the same game"


# --- the local runner under the command -----------------------------------------------------------------
def _alchemy_instance() -> TaskInstance:
    shipped_rule_set("alchemy")
    hands = ({"water": 3, "fire": 2}, {"earth": 3, "air": 2})
    return TaskInstance("alchemy/1p_v_1p/local#0", "alchemy", "1p_v_1p", hands, ({"steam": 9}, {"dust": 9}))


class Scripted:
    """Plays a fixed list of actions, else the dullest legal move; records what it observed."""

    def __init__(self, actions: list[dict[str, Any]]):
        self.actions = list(actions)
        self.observed: list[dict[str, Any]] = []

    def observe(self, events: list[dict[str, Any]]) -> None:
        self.observed += events

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        if self.actions:
            return self.actions.pop(0)
        if "report_tom" in legal:
            tom = view["tom"]
            report: dict[str, Any] = {"type": "report_tom", "v0": dict.fromkeys(tom["items"], 5)}
            for order in tom["orders"][1:]:
                report[f"v{order}"] = {str(s): dict.fromkeys(tom["items"], 5) for s in tom["opponents"]}
            return report
        if "decide" in legal:
            return {"type": "decide", "accept": False, "message": ""}
        if "propose" in legal and "pass" not in legal:
            mine = view["hands"][view["seat"]]
            to = (view["seat"] + 1) % view["players"]
            offer = {min(mine): 1} if mine else {}
            return {
                "type": "propose",
                "to": to,
                "offer": offer,
                "request": {} if mine else {min(view["hands"][to]): 1},
            }
        return {"type": "finish_crafting" if "finish_crafting" in legal else "pass"}


class CraftsForever(Scripted):
    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        hand = {item: Fraction(q) for item, q in (view["crafting_hand"] or {}).items()}
        if "craft" in legal and min(hand.get("fire", 0), hand.get("water", 0)) >= Fraction(1, 1000):
            return {"type": "craft", "recipe": "steam_from_fire_and_water", "runs": "1/1000"}
        return super().act(view, legal)


def test_observers_get_exactly_the_events_their_seat_may_see_once_in_order() -> None:
    inst = _alchemy_instance()
    rules = load_rule_set("alchemy")
    seat0 = CraftsForever([])
    seat1 = Scripted([])
    settings = GameSettings(ruleset="alchemy", max_turns=3, tom_orders=[[0], [0, 1]], allow_pass=False)
    result = play_local(inst, settings, rules, [seat0, seat1], seed=1, max_actions_per_phase=5)
    kinds = {e.type for e in result.events}
    assert {"tom_reported", "proposed", "decided", "crafted"} <= kinds  # private events were there
    for seat, policy in enumerate((seat0, seat1)):
        assert policy.observed == viewer_log(result.events, seat)  # numbered n = 0, 1, ... in its own log
    assert result.end_reason == "max_turns" and result.turns == 3


def test_a_policy_that_never_stops_crafting_is_timed_out() -> None:
    inst = _alchemy_instance()
    rules = load_rule_set("alchemy")
    settings = GameSettings(ruleset="alchemy", max_turns=1)
    result = play_local(
        inst, settings, rules, [CraftsForever([]), Scripted([])], seed=0, max_actions_per_phase=50
    )
    assert result.game.finished and result.timeouts == 1
    timeout = next(e for e in result.events if e.type == "timeout")
    assert timeout.payload["phase"] == "craft" and timeout.payload["seats"] == [0]
    finished = {
        e.payload["seat"]: e.payload.get("reason") for e in result.events if e.type == "craft_finished"
    }
    assert finished == {0: "timeout", 1: None}
    assert sum(e.type == "crafted" for e in result.events) == 50 - 1  # seat 1's finish counted too


def test_an_illegal_action_stops_the_game_with_the_engine_code() -> None:
    inst = _alchemy_instance()
    rules = load_rule_set("alchemy")
    bad = Scripted([{"type": "propose", "to": 1, "offer": {"lava": 1}, "request": {}, "message": ""}])
    with pytest.raises(LocalPlayError) as info:
        play_local(inst, GameSettings(ruleset="alchemy"), rules, [bad, Scripted([])], seed=0)
    err = info.value
    assert err.code == "item_not_held" and err.seat == 0
    assert err.game is not None and err.game.phase == "trade_propose"
    assert json.dumps(err.to_dict())
    with pytest.raises(LocalPlayError) as info:
        play_local(inst, GameSettings(ruleset="alchemy"), rules, [Scripted([])], seed=0)
    assert info.value.code == "wrong_player_count"


@pytest.mark.parametrize(
    ("instance", "runs", "expected"),
    [
        ("minecraft/1p_v_1p/paper#0", None, "whole"),  # the paper set was made for whole runs
        ("minecraft/1p_v_1p/paper#0", "rational", "rational"),
        ("minecraft/1p_v_1p/standard#0", None, "rational"),
        ("minecraft/1p_v_1p/standard#0", "whole", "whole"),
    ],
)
def test_the_crafting_runs_rule_defaults_to_the_instances_own(
    tmp_path: Path, instance: str, runs: str | None, expected: str
) -> None:
    log_path = tmp_path / "game.jsonl"
    code, outcome = play(
        "--instance",
        instance,
        "--max-turns",
        "1",
        "--log",
        str(log_path),
        *(["--runs", runs] if runs else []),
    )
    assert code == 0 and outcome["ok"], outcome
    header = json.loads(log_path.read_text().splitlines()[0])
    assert header["settings"]["crafting_runs"] == expected
