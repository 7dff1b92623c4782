"""Experiment configs: validation errors that name the key and say what to do; the plan a config makes;
the shipped examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from experiment_support import bots_config, validated, write_config

from agents.experiments.cli import example_configs, experiment_group
from agents.experiments.config import ExperimentConfig, ExperimentError, ProviderLimit, load_config
from agents.experiments.manifest import build_manifest, differences, register
from agents.experiments.plan import plan_jobs
from agents.experiments.runner import run_experiment
from server.store import open_store


def _error(raw: dict) -> str:
    with pytest.raises(ExperimentError) as caught:
        validated(raw)
    assert caught.value.code == "invalid_config"
    return caught.value.message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"concurency": 3}, "concurency: is not a config key; remove it or check its spelling"),
        (
            {"focal": {"agents": ["tom1"], "tom_orders": [[1]]}},
            "focal.tom_orders: ToM orders are 0, 1 or 2, each once, always with 0",
        ),
        ({"focal": {"agents": ["nosuchbot"]}}, "there is no policy 'nosuchbot'"),
        ({"focal": {"agents": ["random?accept_probability=7"]}}, "accept_probability=7"),
        ({"focal": {"agents": ["tom1"], "personas": ["fair"]}}, "apply to LLM seats only"),
        (
            {"focal": {"agents": ["simulated_llm"], "personas": ["fair"]}},
            "focal.personas is set, but ['simulated_llm'] take no 'persona' option",
        ),
        (
            {"focal": {"agents": ["tom0"]}, "opponent": {"agent": "simulated_llm", "reasoning": "cot"}},
            "opponent.reasoning is set, but ['simulated_llm'] take no 'cot' option",
        ),
        ({"focal": {"agents": ["simulated_llm?tom=0,1"]}}, "use tom_orders"),
        ({"seeds": [3, 3]}, "seeds: the seed 3 is listed twice; list each once"),
        (
            {"focal": {"agents": ["tom1"], "tom_orders": [[0, 1], [1, 0]]}},
            "focal.tom_orders: the ToM orders [0, 1] is listed twice",
        ),
        ({"focal": {"agents": ["tom1", "tom1"]}}, "focal.agents: the agent 'tom1' is listed twice"),
        (
            {"instances": {"ids": ["minecraft/1p_v_1p/paper.json#0"] * 2}},
            "instances.ids: the instance 'minecraft/1p_v_1p/paper.json#0' is listed twice",
        ),
        (
            {"focal": {"agents": ["llm:openai:gpt-4o"]}, "limits": {"opneai": {"requests_per_minute": 9}}},
            "limits: opneai is not the provider of any LLM seat here, so it would limit nothing; the seats' "
            "providers: openai",
        ),
        ({"limits": {"openai": {"requests_per_minute": 9}}}, "providers: none (every seat is a bot)"),
        (
            {"focal": {"agents": ["simulated_llm"]}, "limits": {"simulated": {}}},
            "limits.simulated: set requests_per_minute, tokens_per_minute or both",
        ),
        ({"focal": {"agents": ["llm:openai:gpt-4o?tom=0,1"]}}, "use tom_orders"),
        (
            {"focal": {"agents": ["llm:openai:gpt-4o"], "personas": ["angry"]}},
            "persona 'angry' is not one of",
        ),
        ({"instances": {"set": "paper", "ids": ["x"]}}, "give either `set`"),
        ({"game": {"max_turns": 0}}, "game: max_turns: Input should be greater than or equal to 1"),
        ({"game": {"tom_orders": [[0], [0]]}}, "set per seat"),
        ({"name": "Has Spaces"}, "name: String should match pattern"),
        ({"max_attempts": 0}, "max_attempts: Input should be greater than or equal to 1"),
    ],
)
def test_config_errors_name_the_key(change: dict, expected: str) -> None:
    assert expected in _error(bots_config(**change))


def test_a_missing_key_says_what_it_is() -> None:
    raw = bots_config()
    del raw["opponent"]
    assert "opponent: is required: the seat the focal seat plays against" in _error(raw)


def test_every_key_is_documented() -> None:
    def walk(model: type) -> None:
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"
            inner = getattr(info.annotation, "model_fields", None)
            if inner is not None:
                walk(info.annotation)

    walk(ExperimentConfig)
    walk(ProviderLimit)


def test_the_plan_is_the_grid_with_seats_swapped() -> None:
    raw = bots_config(
        focal={"agents": ["llm:openai:gpt-4o"], "tom_orders": [[0], [0, 1], [0, 1, 2]], "reasoning": ["cot"]},
        opponent={"agent": "same", "tom_orders": [0]},
        instances={"set": "paper", "first": 2},
        seeds=[1, 2],
    )
    jobs = plan_jobs(validated(raw), "sqlite:///:memory:")
    assert len(jobs) == 3 * 2 * 2 * 2 and len({job.key for job in jobs}) == len(jobs)
    first, swapped = jobs[0], jobs[1]
    assert first.seed == swapped.seed and first.labels["condition"] == "gpt-4o V0 cot vs gpt-4o V0"
    assert [s.focal for s in first.seats] == [True, False] and [s.focal for s in swapped.seats] == [
        False,
        True,
    ]
    assert first.seats[0].spec == "llm:openai:gpt-4o?tom=0&persona=none&cot=1"
    assert first.seats[1].spec == "llm:openai:gpt-4o?tom=0&persona=none"  # the opponent acts directly
    assert first.settings["tom_orders"] == [[0], [0]] and first.settings["max_turns"] == 15
    v2 = next(job for job in jobs if job.labels["condition"].startswith("gpt-4o V0+V1+V2"))
    assert (
        v2.seats[0].metadata()["tom_orders"] == [0, 1, 2]
        and v2.seats[0].metadata()["model"] == "openai:gpt-4o"
    )
    # the analysis compares one agent across ToM groups: its label names persona and reasoning, not orders
    assert v2.seats[0].metadata()["agent"] == "gpt-4o cot" and first.seats[1].metadata()["agent"] == "gpt-4o"
    assert {job.labels["seed"] for job in jobs} == {1, 2}


def test_the_shipped_examples_are_valid(tmp_path: Path) -> None:
    examples = example_configs()
    assert {"bots-only", "paper-tom-orders", "personas", "reasoning-modes"} <= set(examples)
    counts = {
        name: len(plan_jobs(load_config(path)[1], "sqlite:///:memory:")) for name, path in examples.items()
    }
    assert counts["bots-only"] == 3 * 20 * 2 and counts["paper-tom-orders"] == 4 * 3 * 20 * 2
    listed = CliRunner().invoke(experiment_group, ["examples"])
    assert listed.exit_code == 0 and "bots-only" in listed.output


def test_a_resumed_experiment_must_keep_its_config() -> None:
    store = open_store("sqlite:///:memory:")
    raw = bots_config()
    config = validated(raw)
    register(store, build_manifest(raw, config, "sqlite:///:memory:", plan_jobs(config, "x")))
    changed_raw = bots_config(seeds=[0, 1], focal={"agents": ["tom1"], "tom_orders": [[0, 1, 2]]})
    changed = validated(changed_raw)
    with pytest.raises(ExperimentError) as caught:
        register(store, build_manifest(changed_raw, changed, "x", plan_jobs(changed, "x")))
    assert caught.value.code == "config_changed"
    assert "focal.agents" in caught.value.message and "seeds" in caught.value.message
    assert differences({"a": {"b": 1}}, {"a": {"b": 2}, "c": 0}) == ["a.b", "c"]


def test_a_resume_may_change_the_operational_keys_and_records_each_runs_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = open_store("sqlite:///:memory:")
    raw = bots_config()
    config = validated(raw)
    first, changes = register(store, build_manifest(raw, config, "x", plan_jobs(config, "x")))
    assert changes == [] and len(first["runs"]) == 1 and first["runs"][0]["config"]["concurrency"] == 2
    operational = bots_config(concurrency=7, max_attempts=5, description="faster", limits={})
    again = validated(operational)
    resumed, changes = register(store, build_manifest(operational, again, "x", plan_jobs(again, "x")))
    assert resumed["config"]["validated"]["concurrency"] == 2  # the manifest keeps the first config
    assert [run["config"]["max_attempts"] for run in resumed["runs"]] == [3, 5]
    assert resumed["runs"][1]["code"]["git"] == first["runs"][0]["code"]["git"]
    assert resumed["runs"][1]["prompts_version"] == first["prompts"]["version"]
    assert all("commit" in change or "uncommitted" in change for change in changes)
    newer = build_manifest(raw, config, "x", plan_jobs(config, "x"))
    newer["code"] = {**newer["code"], "git": {"commit": "f" * 40, "dirty": False}}
    newer["prompts"] = {**newer["prompts"], "version": "0123456789abcdef"}
    _, changes = register(store, newer)
    assert any(change.startswith("git commit ") for change in changes)
    assert f"prompt version {first['prompts']['version']} -> 0123456789abcdef" in changes


def test_an_in_memory_store_is_refused(tmp_path: Path) -> None:
    raw = bots_config()
    with pytest.raises(ExperimentError) as caught:
        run_experiment(validated(raw), raw, store_url="sqlite:///:memory:", out=tmp_path, progress=False)
    assert caught.value.code == "invalid_store" and "SQLite file" in caught.value.message


def test_the_cli_reports_config_errors(tmp_path: Path) -> None:
    path = write_config(tmp_path, bots_config(swap_seat=False))
    result = CliRunner().invoke(experiment_group, ["run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "swap_seat: is not a config key" in result.output
    missing = CliRunner().invoke(experiment_group, ["run", "no-such-example"])
    assert missing.exit_code == 1 and "bots-only" in missing.output


def test_a_seat_is_an_llm_seat_because_its_policy_plays_through_a_chat_model() -> None:
    # simulated_llm is an LLM seat like llm:...: threads, rate limits, its model's name in the seat record
    raw = bots_config(
        focal={"agents": ["simulated_llm?latency=0", "llm:openai:gpt-4o"], "tom_orders": [[0, 1]]},
        opponent={"agent": "tom0"},
        swap_seats=False,
    )
    seats = {seat.agent: seat for job in plan_jobs(validated(raw), "sqlite:///x.db") for seat in job.seats}
    simulated = seats["simulated_llm?latency=0"]
    assert (
        simulated.is_llm
        and simulated.kind == "agent"
        and simulated.name == "simulated:simulated-fixed-latency"
    )
    assert simulated.spec == "simulated_llm?latency=0&tom=0,1"  # no persona: its options take none
    assert seats["gpt-4o"].spec == "llm:openai:gpt-4o?tom=0,1&persona=none" and seats["gpt-4o"].is_llm
    assert not seats["tom0"].is_llm


def test_models_differing_only_by_provider_keep_it_in_their_labels() -> None:
    raw = bots_config(
        focal={"agents": ["llm:openai:gpt-4o", "llm:vllm:gpt-4o", "llm:openai:mini"], "tom_orders": [[0]]},
        opponent={"agent": "tom0"},
        swap_seats=False,
    )
    jobs = plan_jobs(validated(raw), "sqlite:///x.db")
    assert sorted(job.labels["condition"] for job in jobs) == [
        "mini V0 vs tom0 V0",
        "openai:gpt-4o V0 vs tom0 V0",
        "vllm:gpt-4o V0 vs tom0 V0",
    ]
    focal = {seat.spec.split("?")[0]: seat.agent for job in jobs for seat in job.seats if seat.focal}
    assert focal["llm:vllm:gpt-4o"] == "vllm:gpt-4o" and focal["llm:openai:mini"] == "mini"


def test_list_with_nothing_found_says_how_to_point_it_at_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    said = CliRunner().invoke(experiment_group, ["list"])
    assert said.exit_code == 0 and "no experiments in experiments/*/manifest.json" in said.output
    assert "--store sqlite:///ABS/PATH/experiment.db" in said.output
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    said = CliRunner().invoke(experiment_group, ["list", "--store", empty])
    assert said.exit_code == 0 and f"no experiments in {empty}" in said.output
