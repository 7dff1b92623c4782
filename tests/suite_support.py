"""What the suite knows about the package it tests: the shipped rule sets, asked for by name; and where
the test oracles outside the package are (``../shared/data``: read, never copied into the project).

(A helper module, not conftest.py: test modules import from here, and ``import conftest`` is ambiguous
when several conftest.py files exist, see pytest's docs.)
"""

from __future__ import annotations

import os
from pathlib import Path

from craft_rules.loader import RULE_SETS_DIR, load_rule_set, rule_set_dirs
from craft_rules.model import RuleSet

SHIPPED_RULE_SETS = ("alchemy", "minecraft")
"""The rule sets the package ships (``craft_rules/rule_sets``); tests that cover "every shipped rule set"
loop over this, not over whatever :func:`rule_set_dirs` finds on the machine."""


def shipped_rule_set(name: str) -> RuleSet:
    """A shipped rule set; fails (never skips) when it is missing, as a broken install should."""
    assert name in SHIPPED_RULE_SETS, f"{name} is not a shipped rule set ({', '.join(SHIPPED_RULE_SETS)})"
    folder = rule_set_dirs().get(name)
    assert folder == RULE_SETS_DIR / name, (
        f"the shipped rule set {name} is missing from {RULE_SETS_DIR} (found: {folder}); reinstall it"
    )
    return load_rule_set(name)


def shared_dir() -> Path:
    """``$TRADECRAFT_SHARED_DIR``, else ``shared/`` beside the checkout (where CI lays it)."""
    return Path(os.environ.get("TRADECRAFT_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")


SHARED_DATA = shared_dir() / "data"
ORIGINAL_PROBLEMS = SHARED_DATA / "original-tradecraft-problems" / "minecraft_1p_v_1p.json"
"""The original game's 10 public 1-vs-1 problems (issue 12's oracle for the crafting-runs rule)."""
VANILLA_REFERENCE = SHARED_DATA / "minecraft-1.20.1-reference"
"""Vanilla 1.20.1's recipes and tags (the oracle for the minecraft rule set and the importers)."""
LA2_REFERENCE = SHARED_DATA / "little-alchemy-2-reference" / "alchemy.json"
"""A Little Alchemy 2 table (the oracle for its importer)."""
ORACLES = (ORIGINAL_PROBLEMS, VANILLA_REFERENCE, LA2_REFERENCE)
"""Every oracle path the suite reads; tests needing one skip where shared/ is absent, and
tests/test_suite_hygiene.py fails where shared/ is present but one of them is not (a moved folder would
otherwise turn its tests into silent skips)."""
