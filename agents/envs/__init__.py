"""Reinforcement-learning environments over the game engine (``docs/environments.md``).

Importing this package registers ``TradeCraft-v0`` with Gymnasium (one seat; the other seats are policies):
``gymnasium.make("TradeCraft-v0", ...)`` takes the arguments of :class:`agents.envs.gym_env.TradeCraftEnv`.
The PettingZoo AEC env for all seats is the versioned module :mod:`agents.envs.tradecraft_v0`
(``tradecraft_v0.env(...)``, ``tradecraft_v0.raw_env(...)``); it loads PettingZoo only when imported.
"""

from __future__ import annotations

import gymnasium

ENV_ID = "TradeCraft-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="agents.envs.gym_env:TradeCraftEnv")


def __getattr__(name: str) -> object:
    # `from agents.envs import tradecraft_v0` imports the submodule by itself; attribute access
    # (agents.envs.tradecraft_v0) works too, without loading PettingZoo for Gymnasium users
    if name == "tradecraft_v0":
        import importlib

        return importlib.import_module("agents.envs.tradecraft_v0")
    raise AttributeError(name)
