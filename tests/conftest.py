"""Fixtures shared by the whole suite, and the one rule about rule sets: the suite tests what the package
ships, never what this machine happens to have.

- Rule sets a user imported (``tradecraft rules import`` writes under ``$XDG_DATA_HOME``) or named in
  ``TRADECRAFT_RULE_SETS`` would add worlds to the property tests or even shadow a shipped rule set of the
  same name (a later folder wins in :func:`craft_rules.loader.rule_set_dirs`). This file points both at
  nothing before any test module is imported (module-level worlds are built at collection time), and
  server processes started by the tests inherit that.
- The shipped rule sets are part of the package: a missing one is a failure, not a skip.
  :func:`suite_support.shipped_rule_set` is the one way for a test to ask for one by name.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="tradecraft-tests-data-")
os.environ.pop("TRADECRAFT_RULE_SETS", None)

from e2e_helpers import Client
from suite_support import shipped_rule_set
from test_crafting import MINI_FUELS, MINI_RECIPES, MINI_TAGS, write_rule_set

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
def clients() -> Iterator[list[Client]]:
    """Socket.IO/REST clients a test opens (append them); closed when the test ends."""
    made: list[Client] = []
    yield made
    for client in made:
        client.close()
