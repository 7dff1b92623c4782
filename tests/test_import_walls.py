"""DESIGN.md's import walls, enforced by import-linter contracts in pyproject.toml.

`make test` runs ``lint-imports`` itself; these tests show that every contract holds on the real tree, that
each one breaks on a deliberately wrong import (in a throw-away copy of the sources), and that the layers
contract names every subpackage of ``server`` (so a new server package cannot slip past the walls).
"""

from __future__ import annotations

import json
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


def server_children() -> set[str]:
    """Every direct child of ``server``: subpackages and modules."""
    names = set()
    for path in (ROOT / "server").iterdir():
        if path.name.startswith(("_", ".")):
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


def test_the_layers_name_every_server_package() -> None:
    layers = {name.strip() for layer in contracts()["layers"]["layers"] for name in layer.split("|")}
    assert server_children() == {name for name in layers if name.startswith("server.")}, (
        "a module or package directly under server/ must be one of the layers in pyproject.toml"
    )


#: Deliberately wrong imports, at least one per contract: (contract, module it is appended to, the import).
#: The layers contract gets one per wall it keeps; lint-imports reports each as "importer -> imported".
BREACHES: list[tuple[str, str, str]] = [
    ("layers", "craft_rules/model.py", "import server.game"),
    ("layers", "server/game/events.py", "import server.table.master"),
    ("layers", "server/store/base.py", "import server.table.config"),
    ("layers", "server/table/timers.py", "import server.web.app"),
    ("layers", "agents/local.py", "import server.web.app"),
    ("layers", "analysis/__init__.py", "import server.web.export"),
    ("layers", "analysis/__init__.py", "import agents"),
    # a cycle inside one package, then one inside server.web (the factory imported back by what it wires)
    ("no-cycles", "server/table/errors.py", "import server.table.master"),
    ("no-cycles", "server/web/services.py", "import server.web.app"),
    ("server-no-agents", "server/table/timers.py", "import agents.local"),
    ("engine-pure", "server/game/events.py", "import click"),
    ("table-no-web", "server/table/master.py", "import flask"),
    ("agents-no-web", "agents/local.py", "import flask"),
    ("analysis-no-web", "analysis/__init__.py", "import flask"),
]

#: What the cycle check reports for its breaches: the import to remove, relative to the package.
CYCLE_REPORTS = {
    "server/table/errors.py": ("No cycles are allowed in server.table", "- .errors -> .master"),
    "server/web/services.py": ("No cycles are allowed in server.web", "- .services -> .app"),
}


def reported(contract_id: str, relative: str, wrong_import: str) -> tuple[str, ...]:
    if contract_id == "no-cycles":
        return CYCLE_REPORTS[relative]
    importer = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return (f"{importer} -> {wrong_import.removeprefix('import ')}",)


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
    assert {contract_id for contract_id, _, _ in BREACHES} == set(contracts())


@pytest.mark.parametrize(("contract_id", "relative", "wrong_import"), BREACHES)
def test_a_wrong_import_breaks_the_contract(
    source_copy: Path, contract_id: str, relative: str, wrong_import: str
) -> None:
    # the copy keeps the wall (so a failure below is the breach's doing, not the copy's) ...
    clean = run_lint_imports(source_copy, contract_id)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    module = source_copy / relative
    original = module.read_text(encoding="utf-8")
    module.write_text(f"{original}\n{wrong_import}\n", encoding="utf-8")
    try:
        broken = run_lint_imports(source_copy, contract_id)
    finally:
        module.write_text(original, encoding="utf-8")
    # ... and breaks on one wrong import, naming it
    assert broken.returncode != 0
    assert "BROKEN" in broken.stdout
    for text in reported(contract_id, relative, wrong_import):
        assert text in broken.stdout, broken.stdout


def module_cycles(root: Path) -> list[list[str]]:
    """Every group of modules of the four packages under ``root`` that import each other in a circle
    (strongly connected components of the import graph, function-level imports included), sorted."""
    probe = (
        "import grimp, json, sys\n"
        f"graph = grimp.build_graph(*{PACKAGES!r}, cache_dir=None)\n"
        "modules = set(graph.modules)\n"
        "order, low, stack, on, groups = {}, {}, [], set(), []\n"
        "sys.setrecursionlimit(20000)\n"
        "def visit(module):\n"
        "    order[module] = low[module] = len(order)\n"
        "    stack.append(module); on.add(module)\n"
        "    for other in graph.find_modules_directly_imported_by(module) & modules:\n"
        "        if other not in order:\n"
        "            visit(other); low[module] = min(low[module], low[other])\n"
        "        elif other in on:\n"
        "            low[module] = min(low[module], order[other])\n"
        "    if low[module] == order[module]:\n"
        "        group = []\n"
        "        while True:\n"
        "            other = stack.pop(); on.discard(other); group.append(other)\n"
        "            if other == module: break\n"
        "        if len(group) > 1: groups.append(sorted(group))\n"
        "for module in sorted(modules):\n"
        "    if module not in order: visit(module)\n"
        "print(json.dumps(sorted(groups)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_no_module_is_in_an_import_cycle() -> None:
    """Stricter than the sibling contract: no two modules anywhere import each other, even inside a
    function (a function-level import that hides a cycle is still a cycle)."""
    assert module_cycles(ROOT) == []


def test_a_function_level_import_that_closes_a_circle_is_found(source_copy: Path) -> None:
    module = source_copy / "server" / "table" / "live.py"
    original = module.read_text(encoding="utf-8")
    module.write_text(
        f"{original}\n\ndef _late() -> None:\n    import server.table.master\n", encoding="utf-8"
    )
    try:
        cycles = module_cycles(source_copy)
    finally:
        module.write_text(original, encoding="utf-8")
    assert any({"server.table.live", "server.table.master"} <= set(group) for group in cycles), cycles
