"""Analysis of TradeCraft games: tidy tables (:func:`load` -> :class:`Dataset`), outcomes, ToM scores.

``analysis.load(SOURCE)`` reads game logs, a store or an experiment directory (:mod:`analysis.dataset`).
"""

from analysis.dataset import AnalysisError, Dataset, load

__all__ = ["AnalysisError", "Dataset", "load"]
