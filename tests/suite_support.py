"""What the suite knows about the package it tests: the shipped rule sets, asked for by name.

(A helper module, not conftest.py: test modules import from here, and ``import conftest`` is ambiguous
when several conftest.py files exist, see pytest's docs.)
"""

from __future__ import annotations

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
