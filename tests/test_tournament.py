"""`tradecraft tournament`: scheduling, seat swapping, determinism (also across processes), records, KL."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from agents.tournament import (
    TournamentError,
    kl_divergence,
    resolve_instances,
    run_games,
    schedule,
    summarise,
)
from tradecraft.cli import main as cli

INSTANCES = "minecraft/1p_v_1p/paper#1,minecraft/1p_v_1p/paper#5"
PAIRING_FIELDS = {
    "player_a",
    "player_b",
    "games",
    "wins_a",
    "wins_b",
    "draws",
    "turns_to_win",
    "proposed_a",
    "accepted_a",
    "proposed_b",
    "accepted_b",
    "kl_v1_v0_a",
    "kl_v1_ref_a",
    "kl_v1_v0_b",
    "kl_v1_ref_b",
}


@pytest.fixture(scope="module")
def serial_records():
    specs = schedule(["tom1", "random"], resolve_instances(INSTANCES), 1, seed=7)
    return run_games(specs)


def test_schedule_swaps_seats_with_the_same_game_seeds():
    specs = schedule(["a", "b", "c"], ["i1", "i2"], 2, seed=1)
    assert len(specs) == 3 * 2 * 2 * 2
    games = {(s.player_a, s.player_b, s.instance_id, s.repeat): s.seed for s in specs}
    for (a, b, inst, rep), seed in games.items():
        assert games[(b, a, inst, rep)] == seed  # the swapped game is the same game
    assert len({s.seed for s in specs}) == 4  # one seed per (instance, repeat)


@pytest.mark.slow
def test_same_seed_same_records_serial_and_parallel(serial_records):
    specs = schedule(["tom1", "random"], resolve_instances(INSTANCES), 1, seed=7)
    assert run_games(specs) == serial_records
    assert run_games(specs, jobs=2) == serial_records


_GAME_HASHES = """
import json
from agents.tournament import resolve_instances, run_games, schedule
specs = schedule(["tom2", "planner"], resolve_instances("minecraft/1p_v_1p/paper#10"), 1, seed=11)
print(json.dumps([(r.get("error"), r["log_sha256"]) for r in run_games(specs)]))
"""


@pytest.mark.slow
def test_same_games_whatever_the_hash_seed_with_the_planner_and_tom2():
    # the same games in processes with other hash seeds: a bot whose choices followed a set's iteration
    # order would play others (the planner's craft steps once did: 89 of 1920 games differed between two
    # runs; on paper#10 its plan for seat 0's target depended on the hash seed)
    runs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _GAME_HASHES], env=env, capture_output=True, text=True, check=True
        )
        runs.append(json.loads(done.stdout))
    assert all(error is None for error, _ in runs[0])
    assert runs[0] == runs[1]


def test_records_and_kl_sanity(serial_records):
    assert [r["index"] for r in serial_records] == list(range(4))
    for record in serial_records:
        assert record.get("error") is None
        assert set(record["winners"]) <= {0, 1}
        for key in ("kl_v1_v0", "kl_v1_ref"):
            for value in record[key]:
                assert value is not None and value >= 0 and math.isfinite(value)
    rows = summarise(serial_records)
    assert [(r["player_a"], r["player_b"]) for r in rows] == [("tom1", "random"), ("random", "tom1")]
    for row in rows:
        assert set(row) >= PAIRING_FIELDS
        assert row["wins_a"] + row["wins_b"] + row["draws"] == row["games"] == 2


def test_kl_divergence():
    assert kl_divergence({"a": 5, "b": 5}, {"a": 5, "b": 5}, ["a", "b"]) == 0
    near = kl_divergence({"a": 10, "b": 0}, {"a": 8, "b": 1}, ["a", "b"])
    far = kl_divergence({"a": 10, "b": 0}, {"a": 0, "b": 10}, ["a", "b"])
    assert 0 < near < far and math.isfinite(far)  # zeros are smoothed, never infinite


def test_instances_resolve_and_refuse():
    assert len(resolve_instances("paper")) == 40
    with pytest.raises(TournamentError):
        resolve_instances("nosuchset")
    with pytest.raises(TournamentError):
        resolve_instances("minecraft/1p_v_1p_v_1p/standard#0")
    with pytest.raises(TournamentError):
        schedule(["random"], ["x"], 1, 0)


def test_cli_json_and_out(tmp_path):
    result = CliRunner().invoke(
        cli,
        [
            "tournament",
            "--players",
            "random,random?accept_probability=0.9",
            "--instances",
            INSTANCES,
            "--repeats",
            "1",
            "--seed",
            "3",
            "--json",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 2 and all(set(r) >= PAIRING_FIELDS for r in rows)
    assert {p.name for p in tmp_path.iterdir()} == {
        "games.jsonl",
        "pairings.csv",
        "players.csv",
        "summary.json",
    }
    bad = CliRunner().invoke(cli, ["tournament", "--players", "random,nosuchbot", "--instances", INSTANCES])
    assert bad.exit_code != 0 and "unknown_bot" in bad.output


def test_focus_plays_only_the_focus_players_pairings_with_the_full_runs_seeds():
    full = schedule(["planner", "tom1", "random"], ["i1", "i2"], 2, seed=4)
    focused = schedule(["planner", "tom1", "random"], ["i1", "i2"], 2, seed=4, focus=["planner"])
    assert {(s.player_a, s.player_b) for s in focused} == {
        ("planner", "tom1"),
        ("tom1", "planner"),
        ("planner", "random"),
        ("random", "planner"),
    }
    seeds = {(s.player_a, s.player_b, s.instance_id, s.repeat): s.seed for s in full}
    assert all(seeds[(s.player_a, s.player_b, s.instance_id, s.repeat)] == s.seed for s in focused)
    with pytest.raises(TournamentError) as err:
        schedule(["planner", "tom1"], ["i1"], 1, seed=0, focus=["tom9"])
    assert err.value.code == "unknown_focus"


def test_the_planner_and_scripted_partners_play_in_tournaments():
    specs = schedule(
        ["planner", "tit_for_tat", "item_fixated?item=stick"],
        resolve_instances("minecraft/1p_v_1p/paper#3"),
        1,
        0,
    )
    records = run_games(specs)
    assert len(records) == 6 and not any(r.get("error") for r in records)
    assert all(r["end_reason"] for r in records)


def test_cli_focus_naming_no_player_is_refused_with_its_code():
    result = CliRunner().invoke(
        cli, ["tournament", "--players", "tom1,random", "--focus", "planner", "--instances", INSTANCES]
    )
    assert result.exit_code != 0 and "[unknown_focus]" in result.output and "--players" in result.output
