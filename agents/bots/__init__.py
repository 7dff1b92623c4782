"""The built-in bots and the policy plug-in seam.

:mod:`server.game.policy` says what a policy is (the engine declares it, so the server sees it too);
:mod:`agents.bots.registry` finds policies by name through
the ``tradecraft.policies`` entry points (``make_policy("random?accept_probability=0.9", seed)``). New bots
join by naming their factory there in ``pyproject.toml``; nothing else changes.
"""

from __future__ import annotations

from agents.bots.random_bot import RandomBot
from agents.bots.registry import (
    PolicySpecError,
    describe_policies,
    make_policy,
    parse_policy_spec,
    policy_names,
)

__all__ = [
    "PolicySpecError",
    "RandomBot",
    "describe_policies",
    "make_policy",
    "parse_policy_spec",
    "policy_names",
]
