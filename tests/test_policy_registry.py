"""Policies as plug-ins: the spec grammar, entry-point discovery, typed errors, and a CLI that starts cold."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.bots import RandomBot, registry
from agents.bots.registry import (
    PolicySpecError,
    describe_policies,
    make_policy,
    parse_policy_spec,
    policy_names,
)
from agents.cli import split_players
from server.table.errors import ServerError
from server.table.policies import BotRegistry

ROOT = Path(__file__).resolve().parents[1]


def test_spec_grammar() -> None:
    assert parse_policy_spec("random").name == "random" and parse_policy_spec("random").options == {}
    spec = parse_policy_spec("random?accept_probability=0.9&max_crafts=2")
    assert spec.options == {"accept_probability": "0.9", "max_crafts": "2"}
    llm = parse_policy_spec("llm:openai:gpt-4o?tom=0,1")
    assert llm.name == "llm" and llm.options == {"model_spec": "openai:gpt-4o", "tom": "0,1"}
    assert llm.text == "llm:openai:gpt-4o?tom=0,1"


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "Random",
        "random?",
        "random?x",
        "random?a=1&a=2",
        "random?a=b c",
        "random;rm -rf",
        "x" * 400,
        "9lives",
    ],
)
def test_malformed_specs_are_refused_with_a_typed_error(spec: str) -> None:
    with pytest.raises(PolicySpecError) as info:
        make_policy(spec, 0)
    assert info.value.code == "invalid_bot_spec"
    assert info.value.message.endswith(".")


def test_unknown_names_and_options_say_what_exists() -> None:
    with pytest.raises(PolicySpecError) as info:
        make_policy("grandmaster", 1)
    assert info.value.code == "unknown_bot" and "random" in info.value.message
    with pytest.raises(PolicySpecError) as info:
        make_policy("random?temperature=3", 1)
    assert info.value.code == "invalid_bot_spec"
    assert "temperature" in info.value.message and "accept_probability" in info.value.message
    with pytest.raises(PolicySpecError, match="from 0 to 1"):
        make_policy("random?accept_probability=2", 1)


def test_installed_policies_are_listed_and_described() -> None:
    assert "random" in policy_names()
    bot = make_policy("random?accept_probability=1&max_crafts=0", 5)
    assert isinstance(bot, RandomBot) and bot.accept_probability == 1.0 and bot.max_crafts == 0
    described = {d["name"]: d for d in describe_policies()}
    assert described["random"]["factory"] == "agents.bots.random_bot:random_policy"
    options = {o["names"][0]: o for o in described["random"]["options"]}
    assert described["random"]["summary"] and options["accept_probability"]["default"] == 0.5
    assert options["accept_probability"]["allowed"] == "a number from 0 to 1"


@pytest.fixture
def plugin_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Another installed distribution offering a policy through the entry point group, as pip would lay
    it out (a module plus a .dist-info with entry_points.txt) on sys.path."""
    (tmp_path / "echo_policy.py").write_text(
        textwrap.dedent(
            '''
            class Echo:
                """Finishes crafting, or passes; remembers what it observed."""

                def __init__(self, seed, model_spec="none", greeting="hi"):
                    self.seed, self.model_spec, self.greeting, self.seen = seed, model_spec, greeting, []

                def observe(self, events):
                    self.seen.extend(events)

                def act(self, view, legal):
                    return {"type": "finish_crafting" if "finish_crafting" in legal else "pass"}
            '''
        )
    )
    info = tmp_path / "echo_policy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-policy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tradecraft.policies]\necho = echo_policy:Echo\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._entry_points.cache_clear()
    registry.load_factory.cache_clear()
    yield
    registry._entry_points.cache_clear()
    registry.load_factory.cache_clear()
    sys.modules.pop("echo_policy", None)


def test_a_policy_of_another_distribution_plugs_in_through_its_entry_point(plugin_distribution: None) -> None:
    assert {"echo", "random"} <= set(policy_names())
    echo = make_policy("echo:local:tiny?greeting=hello", 4)
    assert (echo.seed, echo.model_spec, echo.greeting) == (4, "local:tiny", "hello")  # type: ignore[attr-defined]
    assert echo.act({}, ["finish_crafting", "resign"]) == {"type": "finish_crafting"}
    # the server finds it too, through the registry entry point, without importing it by name
    assert BotRegistry().require("echo?greeting=yo") == "echo?greeting=yo"


def test_the_server_turns_policy_errors_into_its_typed_errors() -> None:
    bots = BotRegistry()
    with pytest.raises(ServerError) as info:
        bots.require("grandmaster")
    assert info.value.code == "unknown_bot"
    with pytest.raises(ServerError) as info:
        bots.require("random?accept_probability=nope")
    assert info.value.code == "invalid_bot_spec"
    built: list[tuple[str, int]] = []

    def injected(spec: str, seed: int) -> RandomBot:
        built.append((spec, seed))
        return RandomBot(seed)

    assert isinstance(BotRegistry(injected).make("anything", 9), RandomBot) and built == [("anything", 9)]


def test_players_split_at_seat_commas_not_option_commas() -> None:
    assert split_players("random,random") == ["random", "random"]
    assert split_players("random?max_crafts=1,random") == ["random?max_crafts=1", "random"]
    assert split_players("llm:x?tom=0,1,random") == ["llm:x?tom=0,1", "random"]


# the language API's packages: only what runs an LLM agent or an environment may load them
LANGUAGE_API = ("langchain", "langchain_core", "langchain_openai", "openai", "gymnasium", "pettingzoo")
LANGUAGE_API += ("bpe_openai", "tiktoken")
WATCHED_IMPORTS = ("flask", "flask_socketio", "socketio", "engineio", "scipy", "numpy", "server", "pymongo")
WATCHED_IMPORTS += LANGUAGE_API


def _imported_by(argv: list[str]) -> set[str]:
    """Top-level modules a `tradecraft` command imports, run as its own process."""
    script = (
        "import sys, json\n"
        "from tradecraft.cli import main\n"
        f"sys.argv = ['tradecraft', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"names = {{m for m in sys.modules if m.split('.')[0] in {WATCHED_IMPORTS!r}}}\n"
        "sys.stderr.write(json.dumps(sorted(names)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.slow
def test_commands_that_need_no_server_import_neither_flask_nor_what_they_do_not_use() -> None:
    possible = _imported_by(
        ["craft", "possible", "--ruleset", "alchemy", "--hand", '{"water": 2, "fire": 1}']
    )
    assert not {m for m in possible if m.split(".")[0] in ("flask", "socketio", "scipy", "numpy", "server")}
    play = _imported_by(["play", "--ruleset", "alchemy"])
    # a game needs the solver since every view says whether its target is still within reach of the pooled
    # hands (server/game/reach.py), but never the web layer or a database driver
    assert not {m for m in play if m.split(".")[0] in ("flask", "flask_socketio", "socketio", "pymongo")}
    assert "server.game" in play and "server.web.app" not in play  # the engine, not the web layer
    helped = _imported_by(["--help"])
    assert not {m for m in helped if m.split(".")[0] in ("flask", "scipy", "server")}
    for store_command in (["admin", "list-tokens", "--help"], ["export", "--help"]):  # the store, no server
        imported = _imported_by(store_command)
        assert not {m for m in imported if m.split(".")[0] in ("flask", "flask_socketio", "socketio")}
    # nor the language API (LangChain, OpenAI, gymnasium, PettingZoo): they cost cold start, and none of
    # these commands runs an LLM or an environment
    for imported in (possible, play, helped, _imported_by(["tasks", "list", "--json"])):
        assert not {m for m in imported if m.split(".")[0] in LANGUAGE_API}, sorted(imported)


def test_planning_still_loads_the_solver_when_it_solves() -> None:
    planned = _imported_by(
        [
            "craft",
            "plan",
            "--ruleset",
            "alchemy",
            "--hand",
            '{"water": 2, "fire": 2}',
            "--target",
            '{"steam": 1}',
        ]
    )
    assert "scipy.optimize" in planned


@pytest.mark.slow
def test_the_server_package_never_imports_agents() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "server").rglob("*.py")
        if any(
            line.strip().startswith(("import agents", "from agents"))
            for line in path.read_text().splitlines()
        )
    ]
    assert offenders == []
    script = (
        "import sys, server.web.app, server.table.master, server.table.bot_seats\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'agents'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"
