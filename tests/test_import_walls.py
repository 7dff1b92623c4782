"""DESIGN.md's import walls, enforced by import-linter contracts in pyproject.toml.

`make test` runs ``lint-imports`` itself; these tests show that every contract holds on the real tree,
that each one breaks on a deliberately wrong import (in a throw-away copy of the sources), and that the
contracts' list of web-layer modules names every module of ``server`` except ``server.game`` (so a new
server module cannot slip past the walls).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("craft_rules", "server", "agents", "analysis")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {contract["id"]: contract for contract in config["tool"]["importlinter"]["contracts"]}


def run_lint_imports(cwd: Path, *contract_ids: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages found first in ``cwd`` (before the editable install)."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    selected = [arg for contract_id in contract_ids for arg in ("--contract", contract_id)]
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", *selected],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def web_layer_modules() -> set[str]:
    """Every direct child of ``server`` except the engine: modules and subpackages."""
    names = set()
    for path in (ROOT / "server").iterdir():
        if path.name.startswith(("_", ".")) or path.name == "game":
            continue
        if path.suffix == ".py":
            names.add(f"server.{path.stem}")
        elif path.is_dir() and (path / "__init__.py").exists():
            names.add(f"server.{path.name}")
    return names


def test_the_real_tree_keeps_every_wall() -> None:
    result = run_lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(contracts())} kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("contract_id", "key"),
    [
        ("engine-pure", "forbidden_modules"),
        ("agents-no-web", "forbidden_modules"),
        ("analysis-no-web", "forbidden_modules"),
        ("server-no-agents", "source_modules"),
    ],
)
def test_contracts_name_the_whole_web_layer(contract_id: str, key: str) -> None:
    listed = {name for name in contracts()[contract_id][key] if name.startswith("server.")}
    assert listed == web_layer_modules(), (
        f"contract {contract_id}: add the new server modules to its {key} (and to every WEB_LAYER list)"
    )


#: One deliberately wrong import per contract: (existing module it is appended to, the import).
BREACHES: dict[str, tuple[str, str]] = {
    "craft-rules-bottom": ("craft_rules/model.py", "import server.game"),
    "engine-pure": ("server/game/events.py", "import server.rooms"),
    "agents-no-web": ("agents/local.py", "import server.app"),
    "analysis-no-web": ("analysis/__init__.py", "import flask"),
    "server-no-agents": ("server/timers.py", "import agents.local"),
}


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four packages' Python files (no data) and pyproject.toml, in a temporary directory."""
    copy = tmp_path_factory.mktemp("walls")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package,
            copy / package,
            ignore=lambda folder, names: [
                n for n in names if not n.endswith(".py") and not (Path(folder) / n).is_dir()
            ],
        )
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def test_breaches_cover_every_contract() -> None:
    assert set(BREACHES) == set(contracts())


@pytest.mark.parametrize("contract_id", sorted(BREACHES))
def test_a_wrong_import_breaks_the_contract(source_copy: Path, contract_id: str) -> None:
    # the copy keeps the wall (so a failure below is the breach's doing, not the copy's) ...
    clean = run_lint_imports(source_copy, contract_id)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    relative, wrong_import = BREACHES[contract_id]
    module = source_copy / relative
    original = module.read_text(encoding="utf-8")
    module.write_text(f"{original}\n{wrong_import}\n", encoding="utf-8")
    try:
        broken = run_lint_imports(source_copy, contract_id)
    finally:
        module.write_text(original, encoding="utf-8")
    # ... and breaks on one wrong import, naming the importer
    assert broken.returncode != 0
    assert "BROKEN" in broken.stdout
    importer = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    assert f"{importer} -> {wrong_import.removeprefix('import ')}" in broken.stdout
