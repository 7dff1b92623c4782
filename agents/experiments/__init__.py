"""Experiments: a config file's grid of games, run concurrently into a store, resumable, costed.

``tradecraft experiment run CONFIG.yaml`` (:mod:`agents.experiments.cli`); see docs/experiments.md.
Modules: ``config`` (the validated config), ``plan`` (config -> jobs), ``jobs`` (one game: GameJob,
play_job, JobOutcome), ``executors`` (where games run), ``runner`` (resume, retries, progress),
``manifest`` (what was run, with which code, prompts and models).
"""
