"""Fixtures shared by the whole suite, and the one rule about rule sets: the suite tests what the package
ships, never what this machine happens to have.

- Rule sets a user imported (``tradecraft rules import`` writes under ``$XDG_DATA_HOME``) or named in
  ``TRADECRAFT_RULE_SETS`` would add worlds to the property tests or even shadow a shipped rule set of the
  same name (a later folder wins in :func:`craft_rules.loader.rule_set_dirs`). This file points both at
  nothing before any test module is imported (module-level worlds are built at collection time), and
  server processes started by the tests inherit that.
- The shipped rule sets are part of the package: a missing one is a failure, not a skip.
  :func:`suite_support.shipped_rule_set` is the one way for a test to ask for one by name.
- Servers: ``make_server`` starts real server processes (for tests of the process and its sockets),
  ``make_app`` / ``app_client`` build the app in-process (for tests of what it answers); both write the test
  settings with :func:`e2e_helpers.write_config` and shut down all they started when the module ends.
- MongoDB: ``mongo_uri`` starts one real MongoDB wire-protocol server per session (per xdist worker), only
  when a test asks for it (tests/mongo_server.py).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="tradecraft-tests-data-")
os.environ.pop("TRADECRAFT_RULE_SETS", None)

from e2e_helpers import MakeServer, Participant, ServerProcess, write_config
from in_process import InProcessApp, MakeApp
from mini_rules import MINI_FUELS, MINI_RECIPES, MINI_TAGS, write_rule_set
from mongo_server import INSTALL_HINT, SERVER_COMMAND, URI_VARIABLE, MongoWireServer, server_required
from suite_support import shipped_rule_set

from craft_rules.loader import load_rule_set_from
from craft_rules.model import RuleSet

atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], ignore_errors=True)


@pytest.fixture(scope="session")
def minecraft() -> RuleSet:
    return shipped_rule_set("minecraft")


@pytest.fixture(scope="session")
def alchemy() -> RuleSet:
    return shipped_rule_set("alchemy")


@pytest.fixture(scope="session")
def mini(tmp_path_factory: pytest.TempPathFactory) -> RuleSet:
    """The small hand-written rule set of tests/test_crafting.py (tags, fuels, every recipe kind)."""
    folder = write_rule_set(tmp_path_factory.mktemp("mini") / "mini", MINI_RECIPES, MINI_TAGS, MINI_FUELS)
    rules, report = load_rule_set_from(folder, strict=True)
    assert not report.problems
    return rules


@pytest.fixture
def clients() -> Iterator[list[Participant]]:
    """Participants a test opens, network or in-process (append them); closed when the test ends."""
    made: list[Participant] = []
    yield made
    for client in made:
        client.close()


@pytest.fixture(scope="module")
def make_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeServer]:
    """``make_server(config=None, *, port=None, env=None, script=None, **write_config_options)``: a started
    ``run_server.py`` process (or ``script``) over ``config``, else over a fresh test settings file. Every
    server it started is stopped when the module ends (a test may stop or kill one sooner)."""
    started: list[ServerProcess] = []

    def make(
        config: Path | None = None,
        *,
        port: int | None = None,
        env: dict[str, str] | None = None,
        script: Path | None = None,
        **options: Any,
    ) -> ServerProcess:
        if config is None:
            config = write_config(tmp_path_factory.mktemp("server"), **options)
        server = ServerProcess(config, port=port, env=env, **({"script": script} if script else {}))
        started.append(server)
        return server.start()

    yield make
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    """The module's real server process over the default test settings; a module needing other settings
    overrides this fixture with one call of ``make_server``."""
    return make_server()


@pytest.fixture(scope="module")
def make_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeApp]:
    """``make_app(config=None, **write_config_options)``: the app built in-process (its own settings file,
    SQLite file and data dir); closed when the module ends."""
    made: list[InProcessApp] = []

    def make(config: Path | None = None, **options: Any) -> InProcessApp:
        app = InProcessApp(config or write_config(tmp_path_factory.mktemp("app"), **options))
        made.append(app)
        return app

    yield make
    for app in made:
        app.close()


@pytest.fixture(scope="module")
def app_client(make_app: MakeApp) -> InProcessApp:
    """The module's in-process app over the default test settings: ``app_client.client("Ada").connect()``."""
    return make_app()


@pytest.fixture(scope="session")
def mongo_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mongodb://127.0.0.1:PORT`` of a MongoDB wire-protocol server started for this session (each xdist
    worker starts its own on a free port, so no locks), or ``$TRADECRAFT_TEST_MONGO_URI`` when set. Skips
    when the server is not installed, but fails under ``make test`` (``TRADECRAFT_TEST_MONGO=require``)."""
    given = os.environ.get(URI_VARIABLE)
    if given:
        yield given
        return
    if not SERVER_COMMAND.exists():
        message = f"no MongoDB test server at {SERVER_COMMAND}: {INSTALL_HINT}"
        if server_required():
            pytest.fail(message)
        pytest.skip(message)
    server = MongoWireServer(tmp_path_factory.mktemp("mongo")).start()
    os.environ[URI_VARIABLE] = server.uri  # processes the tests start find the same server
    try:
        yield server.uri
    finally:
        os.environ.pop(URI_VARIABLE, None)
        server.stop()
