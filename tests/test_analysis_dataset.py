"""analysis.load: the same tidy tables from game-log files, a directory, a store and an experiment directory;
typed errors for anything else; dtypes, traces without prompts, writing CSV and Parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from analysis_support import Played, experiment_meta, play, store_game

import analysis
from analysis import dataset as dataset_module
from analysis.dataset import TABLES, AnalysisError, Dataset, columns, load
from server.game.gamelog import encode_log
from server.store import open_store

EXPERIMENT = "replication"
INSTANCES = ("minecraft/1p_v_1p/paper#2", "minecraft/1p_v_1p/paper#5", "minecraft/1p_v_1p/paper#9")


@pytest.fixture(scope="module")
def games() -> list[Played]:
    """Three jobs of an experiment: tom2 (LLM-like, focal, V0+V1+V2) or tom1 against a tom0 baseline."""
    played = []
    for job, (instance_id, spec) in enumerate(zip(INSTANCES, ("tom2", "tom1", "tom2"), strict=True)):
        meta = experiment_meta(EXPERIMENT, f"job-{job}", 1, f"{spec}-vs-tom0")
        played.append(
            play(
                instance_id,
                [spec, "tom0"],
                seed=job,
                llm_seats=[0] if job != 1 else [],
                game_id=f"g{job}",
                meta=meta,
            )
        )
    return played


@pytest.fixture(scope="module")
def sources(games: list[Played], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("sources")
    logs = root / "logs"
    logs.mkdir()
    for played in games:
        (logs / f"{played.log.game_id}.jsonl").write_text("".join(encode_log(played.log)), encoding="utf-8")
    url = f"sqlite:///{root}/store.db"
    store = open_store(url)
    for played in games:
        store_game(store, played)
    # an unfinished earlier attempt of job 0, a game of another experiment, one played outside any
    first = games[0]
    attempt0 = first.result.game_log(game_id="g0-attempt0", seats=first.seats)
    aborted = Played(
        first.result, attempt0, first.seats, experiment_meta(EXPERIMENT, "job-0", 0, "tom2-vs-tom0")
    )
    store_game(store, aborted, status="aborted")
    pilot = experiment_meta("pilot", "job-0", 1, "tom0-vs-tom0")
    other = play(INSTANCES[1], ["tom0", "tom0"], seed=7, game_id="other-exp", meta=pilot)
    store_game(store, other)
    lobby = play(INSTANCES[2], ["planner", "tom0"], seed=8, game_id="lobby")
    store_game(store, lobby)
    store.close()
    experiment_dir = root / "experiment"
    experiment_dir.mkdir()
    (experiment_dir / "manifest.json").write_text(json.dumps({"experiment": EXPERIMENT, "store": url}))
    return {"logs": logs, "url": url, "experiment": experiment_dir, "root": root}


@pytest.fixture(scope="module")
def from_list(games: list[Played]) -> Dataset:
    return load([played.log for played in games])


def assert_same(left: Dataset, right: Dataset, *, skip_games: tuple[str, ...] = ()) -> None:
    for name in TABLES:
        a, b = left.table(name), right.table(name)
        if name == "games":
            keep = [c for c in a.columns if c not in skip_games]
            a, b = a[keep], b[keep]
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), obj=name)


def test_files_a_directory_a_store_and_an_experiment_give_the_same_tables(
    from_list: Dataset, sources: dict[str, Any]
) -> None:
    by_directory = load(sources["logs"])
    assert_same(from_list, by_directory)
    one = load(sources["logs"] / "g1.jsonl")
    assert one.games["game_id"].tolist() == ["g1"]
    g1 = from_list.proposals[from_list.proposals["game_id"] == "g1"].reset_index(drop=True)
    pd.testing.assert_frame_equal(one.proposals, g1)
    # the store says where a game came from and when it was stored; its events, traces and outcomes agree
    stored_meta = ("source", "status", "created_at", "finished_at")
    by_experiment = load(sources["experiment"])
    assert by_experiment.games["game_id"].tolist() == ["g0", "g1", "g2"]
    assert set(by_experiment.games["source"]) == {"experiment"}
    assert_same(from_list, by_experiment, skip_games=stored_meta)


def test_an_experiment_counts_only_its_own_finished_attempts(sources: dict[str, Any]) -> None:
    ds = load(sources["experiment"])
    assert "g0-attempt0" not in set(ds.games["game_id"])  # aborted attempt of job-0
    assert set(ds.games["experiment"]) == {EXPERIMENT}
    assert ds.games.set_index("game_id").loc["g1", "condition"] == "tom1-vs-tom0"
    assert ds.games["attempt"].tolist() == [1, 1, 1]
    # the store itself: every finished game, whatever made it
    whole = load(sources["url"])
    assert sorted(whole.games["game_id"]) == ["g0", "g1", "g2", "lobby", "other-exp"]
    assert whole.games.set_index("game_id")["experiment"].isna().to_dict()["lobby"]


def test_seats_say_who_played_in_which_group(from_list: Dataset) -> None:
    seats = from_list.seats.set_index(["game_id", "seat"])
    assert tuple(seats.columns) == columns("seats")[2:]
    assert seats.loc[("g0", 0), "agent"] == "gpt-4o-2024-08-06"  # the model, for an LLM seat
    assert seats.loc[("g1", 0), "agent"] == "tom1"  # the bot spec otherwise
    assert seats.loc[("g0", 0), "tom_orders"] == (0, 1, 2) and seats.loc[("g0", 0), "group"] == "V0+V1+V2"
    assert seats.loc[("g0", 1), "tom_orders"] == (0,) and seats.loc[("g0", 1), "group"] == "V0"
    assert seats["focal"].tolist() == [True, False] * 3
    assert str(seats["focal"].dtype) == "boolean" and str(seats["won"].dtype) == "boolean"
    assert isinstance(seats.loc[("g0", 0), "target"], dict)
    assert dataset_module.group_of([]) == "none" and dataset_module.group_of([1, 0]) == "V0+V1"


def test_columns_are_typed(from_list: Dataset) -> None:
    proposals = from_list.proposals
    assert len(proposals) > 0
    assert all(isinstance(offer, dict) for offer in proposals["offer"])
    assert str(proposals["proposer"].dtype) == "Int64" and str(proposals["time"].dtype) == "float64"
    assert str(from_list.decisions["accept"].dtype) == "boolean"
    assert from_list.crafts["runs"].dtype == "float64"
    reports = from_list.tom_reports
    assert set(reports["order"]) == {0, 1, 2} and str(reports["value"].dtype) == "Int64"
    values = from_list.tom_values
    assert len(values) == len(reports) and values["reference"].notna().all()
    for name in TABLES:
        assert tuple(from_list.table(name).columns) == columns(name), name


def test_traces_are_tidy_and_carry_no_prompt(games: list[Played], from_list: Dataset) -> None:
    traces = from_list.traces
    assert len(traces) == sum(len(p.log.traces) for p in games)
    calls = traces[traces["kind"] == "llm_call"]
    assert (calls["prompt_tokens"] == 120).all() and (calls["cached_prompt_tokens"] == 40).all()
    assert (calls["prompt_chars"] > 0).all() and (calls["prompt_messages"] == 1).all()
    assert set(calls["model"]) == {"gpt-4o-2024-08-06"} and (calls["latency_s"] == 0.5).all()
    prefix = traces[traces["kind"] == "llm_prefix"]
    assert (prefix["prefix_tokens"] == 300).all() and (prefix["prompt_chars"] > 20).all()
    refused = traces[traces["kind"] == "refused"]
    assert len(refused) == 2 and refused["event_seq"].isna().all()  # one per LLM-like game
    bots = traces[traces["source"] == "bot"]
    assert {"report", "propose"} <= set(bots["kind"]) and bots["policy"].notna().all()
    text = traces.to_json()
    assert "your hand is secret" not in text and "Your target" not in text


def test_progress_bar(games: list[Played], capsys: pytest.CaptureFixture[str]) -> None:
    load([games[1].log], progress=True)
    assert "games" in capsys.readouterr().err


def test_write_csv_and_parquet(from_list: Dataset, tmp_path: Path) -> None:
    written = from_list.write(tmp_path / "out")
    assert {p.name for p in written} == {f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet")}
    seats = pd.read_parquet(tmp_path / "out" / "seats.parquet")
    assert seats["tom_orders"].tolist()[:2] == ["[0,1,2]", "[0]"]
    assert json.loads(seats["target"][0]) == from_list.seats["target"][0]
    proposals = pd.read_csv(tmp_path / "out" / "proposals.csv")
    assert list(proposals.columns) == list(columns("proposals")) and len(proposals) == len(
        from_list.proposals
    )
    with pytest.raises(AnalysisError, match="unknown format") as caught:
        from_list.write(tmp_path / "x", formats=("xlsx",))
    assert caught.value.code == "unknown_format"


def expect(code: str, source: Any, **kwargs: Any) -> AnalysisError:
    with pytest.raises(AnalysisError) as caught:
        load(source, **kwargs)
    assert caught.value.code == code, caught.value.message
    assert code in dataset_module.ANALYSIS_ERROR_CODES
    return caught.value


def test_sources_that_are_none_of_these_say_what_to_do(tmp_path: Path, games: list[Played]) -> None:
    error = expect("unknown_source", tmp_path / "missing.jsonl")
    assert "check the path" in error.message
    (tmp_path / "notes.txt").write_text("hello")
    expect("unknown_source", tmp_path / "notes.txt")
    expect("unknown_source", 42)
    expect("unknown_source", "memory://")
    expect("unknown_source", [games[0].log, "not a log"])
    expect("no_games", tmp_path)  # a directory without logs
    expect("no_games", [])
    expect("no_games", f"sqlite:///{tmp_path}/empty.db")
    expect("store_failed", "sqlite://somehost/x.db")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text(json.dumps({"experiment": "x"}))
    expect("invalid_manifest", bad)
    with pytest.raises(AnalysisError) as caught:
        Dataset(*[pd.DataFrame()] * len(TABLES)).table("players")
    assert caught.value.code == "unknown_table"
    assert isinstance(caught.value, analysis.AnalysisError)


def test_unreadable_logs_say_which_file_and_line(
    tmp_path: Path, games: list[Played], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = list(encode_log(games[1].log))
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:3]) + "{not json\n", encoding="utf-8")
    error = expect("unreadable_log", broken)
    assert "broken.jsonl line 4" in error.message and error.details["code"] == "invalid_json"
    participant = tmp_path / "g1.seat0.jsonl"
    participant.write_text(json.dumps({"record": "header", "export": "participant"}) + "\n")
    assert "participant" in expect("unreadable_log", participant).message
    # a line longer than the bound is never read whole
    monkeypatch.setattr(dataset_module, "MAX_LINE_CHARS", 200)
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(lines), encoding="utf-8")
    assert "longer than 200" in expect("unreadable_log", whole).message
