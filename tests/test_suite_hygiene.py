"""The suite tests what the package ships: a missing shipped rule set fails (never skips), and rule sets this
machine imported neither add worlds to the property tests nor shadow a shipped rule set. Oracle data
outside the package skips its tests only where shared/ is absent, never because a path went stale."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from engine_support import property_worlds
from mini_rules import MINI_FUELS, MINI_RECIPES, MINI_TAGS, write_rule_set
from suite_support import ORACLES, SHARED_DATA, SHIPPED_RULE_SETS, shipped_rule_set

from craft_rules.loader import RULE_SETS_DIR, rule_set_dirs

TESTS = Path(__file__).resolve().parent


def test_the_shipped_rule_sets_are_exactly_the_ones_the_suite_names() -> None:
    shipped = sorted(p.name for p in RULE_SETS_DIR.iterdir() if (p / "recipes").is_dir())
    assert tuple(shipped) == SHIPPED_RULE_SETS
    for name in SHIPPED_RULE_SETS:
        assert shipped_rule_set(name).name == name


def test_the_suite_runs_with_a_data_home_of_its_own() -> None:
    assert Path(os.environ["XDG_DATA_HOME"]).name.startswith("tradecraft-tests-data-")
    assert "TRADECRAFT_RULE_SETS" not in os.environ


def test_a_missing_or_shadowed_shipped_rule_set_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an imported rule set of the same name wins in rule_set_dirs(): the suite must notice, not test it
    fake = write_rule_set(tmp_path / "minecraft", MINI_RECIPES, MINI_TAGS, MINI_FUELS)
    monkeypatch.setenv("TRADECRAFT_RULE_SETS", str(fake.parent))
    assert rule_set_dirs()["minecraft"] == fake
    with pytest.raises(AssertionError, match="shipped rule set minecraft is missing"):
        shipped_rule_set("minecraft")
    with pytest.raises(AssertionError, match="not a shipped rule set"):
        shipped_rule_set("mini")


def test_property_worlds_ignore_rule_sets_the_machine_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = [(rules.name, inst.id) for rules, inst in property_worlds()]
    assert {name for name, _ in before} == {"small", *SHIPPED_RULE_SETS}
    # a user's imported rule set (the folder `tradecraft rules import` writes to) changes nothing
    user_dir = Path(os.environ["XDG_DATA_HOME"]) / "tradecraft" / "rule_sets"
    write_rule_set(user_dir / "imported_by_a_user", MINI_RECIPES, MINI_TAGS, MINI_FUELS)
    try:
        assert "imported_by_a_user" in rule_set_dirs()
        assert [(rules.name, inst.id) for rules, inst in property_worlds()] == before
    finally:
        shutil.rmtree(user_dir / "imported_by_a_user")


def test_no_test_skips_because_a_shipped_rule_set_is_missing() -> None:
    """Skips are for what the package does not ship (oracle data, Redis, MongoDB), never rule sets."""
    skip_call = re.compile(r"pytest\.skip\((?:[^()]|\([^()]*\))*\)|skipif\((?:[^()]|\([^()]*\))*\)", re.S)
    offenders = [
        f"{path.name}: {' '.join(call.split())[:100]}"
        for path in sorted(TESTS.rglob("*.py"))
        for call in skip_call.findall(path.read_text(encoding="utf-8"))
        if re.search(r"rule.?set", call, re.I)
    ]
    assert not offenders, offenders


def test_where_shared_data_is_present_every_oracle_the_suite_reads_is_there() -> None:
    """CI lays shared/ beside the checkout: there the oracle tests (the original problems, vanilla, Little
    Alchemy 2) must run. A moved or renamed oracle file would otherwise turn them into silent skips."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no shared data at {SHARED_DATA}: the oracle tests skip too (set TRADECRAFT_SHARED_DIR)")
    missing = [str(path) for path in ORACLES if not path.exists()]
    assert not missing, f"oracle paths the suite names are missing under {SHARED_DATA}: {missing}"


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in helper modules (e2e_helpers, in_process, engine_support, ...): importing a test
    module runs its collection-time work again and ties one test file's refactors to another's."""
    importing = re.compile(r"^\s*(?:from\s+test_\w+\s+import|import\s+test_\w+)", re.M)
    offenders = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("*.py"))
        if importing.search(path.read_text())
    ]
    assert not offenders, offenders
