"""Analysis of TradeCraft games: tidy tables (:func:`load` -> :class:`Dataset`), outcomes, ToM scores.

``analysis.load(SOURCE)`` reads game logs, a store or an experiment directory (:mod:`analysis.dataset`).
The package's names are imported on first use, so a module that needs only a pure-Python part (the server's
``analysis.tom_scores``) does not load pandas (about 150 MB of a server process's memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analysis.dataset import AnalysisError, Dataset, load

__all__ = ["AnalysisError", "Dataset", "load"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from analysis import dataset

        return getattr(dataset, name)
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")
