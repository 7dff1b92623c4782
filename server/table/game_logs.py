"""Stored games as game logs: read a game, its events and traces from a store, replay it, build its log.

The researcher game-log format (:mod:`server.game.gamelog`) is the same whether a game was played on the
server, headless or by the experiment runner; this module builds it from any :class:`~server.store.Store`.
The web layer's exports and ``tradecraft export`` write these logs; the analysis and the experiment runner
read them (neither may import the web layer).

Logs never carry credentials: keys that look like tokens, passwords, secrets or cookies are dropped from
any stored metadata before it is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from craft_rules.errors import TradeCraftError
from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.model import RuleSet
from craft_rules.provenance import package_versions
from craft_rules.tasks import TaskInstance, referenced_instance
from server.game import Game, GameError, GameSettings
from server.game.events import Event
from server.game.gamelog import (
    GameLog,
    GameLogError,
    InstanceRecord,
    LogHeader,
    LogSummary,
    RuleSetRef,
    TraceRecord,
    replay_with_latencies,
)
from server.store import Store

#: Metadata keys whose values are never exported (matched anywhere in the key, case-insensitively).
CREDENTIAL_KEY = re.compile(r"token|passw|secret|api_?key|auth|cookie|session|credential|hash", re.IGNORECASE)

#: Seat metadata describing an agent's model and prompts, gathered into the header's ``models`` list.
MODEL_KEYS = (
    "model",
    "model_version",
    "provider",
    "prompt_version",
    "prompt_id",
    "persona",
    "reasoning",
    "agent",
)


class ExportError(TradeCraftError):
    """An export that cannot be made (unknown game or seat). ``code`` is machine-readable."""


# ------------------------------------------------------------------------------------------ loading a game
@dataclass
class StoredGame:
    """One stored game as a game log, and the replayed Game (None if replay failed, with the reason)."""

    log: GameLog
    game: Game | None
    replay_error: dict[str, Any] | None

    @property
    def game_id(self) -> str:
        return self.log.game_id


#: Stored metadata with a place of its own in the log header (the rest goes under ``meta``).
_HEADER_OWN_META = frozenset(
    ("game_id", "status", "created_at", "finished_at", "settings", "ruleset", "ruleset_hash", "instance",
     "instance_id", "instance_root", "seed", "seats", "source")
)  # fmt: skip

_REPLAY_ERRORS = (
    GameError,
    GameLogError,
    RuleSetError,
    ValidationError,
    KeyError,
    ValueError,
    TypeError,
    OSError,
)


def load_game_log(
    store: Store,
    game_id: str,
    *,
    rules: RuleSet | Callable[[str], RuleSet] | None = None,
    traces: bool = True,
) -> StoredGame:
    """Read a game and its events, replay them and build its game log (with response latencies).

    ``rules`` overrides how the rule set is found (a RuleSet, or a function of its name); by default it is
    ``craft_rules.loader.load_rule_set``. ``traces=False`` leaves the policies' trace records out (they can
    be large, and only the researcher log carries them). A game that cannot be replayed (missing instance or
    rule set, a log from another version) still gets a log with its events; ``replay_error`` then says why.
    """
    meta = store.get_game(game_id)
    if meta is None:
        raise ExportError(
            "unknown_game",
            f"there is no game {game_id!r} in the store; list them with --status",
            {"game_id": game_id},
        )
    ruleset_hash = meta.get("ruleset_hash")  # before scrubbing: "hash" looks like a credential key
    meta = _scrub(dict(meta))
    # traces before events: the table stores a move's events before its traces, so every trace read here
    # links to an event the log read next holds, even while the game goes on
    kept = _traces(store, game_id) if traces else []
    records = list(store.load_events(game_id))
    events = [Event.from_dict(record) for record in records]
    times = [_stamp(record.get("time")) for record in records]
    latencies: list[float | None] = [None] * len(events)
    game: Game | None = None
    replay_error: dict[str, Any] | None = None
    instance: TaskInstance | None = None
    rule_set: RuleSet | None = None
    raw_settings = meta.get("settings") or {}
    ruleset = str(raw_settings.get("ruleset") or meta.get("ruleset") or "")
    try:
        settings = GameSettings.model_validate(raw_settings)
        ruleset = settings.ruleset or ruleset
        instance = referenced_instance({**meta, "ruleset": ruleset})
        rule_set = rules if isinstance(rules, RuleSet) else (rules or load_rule_set)(ruleset)
        game, latencies = replay_with_latencies(instance, settings, rule_set, _game_seed(meta), events, times)
    except _REPLAY_ERRORS as exc:
        code = exc.code if isinstance(exc, GameError | GameLogError) else type(exc).__name__
        replay_error = {"code": code, "message": str(exc)}
        latencies = [None] * len(events)
        game = None
    seats = [s for s in meta.get("seats") or [] if isinstance(s, Mapping)]
    header = LogHeader(
        game_id=game_id,
        source=str(meta.get("source") or "server"),  # e.g. "experiment" for the runner's games
        status=meta.get("status"),
        created_at=meta.get("created_at"),
        finished_at=meta.get("finished_at"),
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        settings=raw_settings,
        ruleset=RuleSetRef(
            name=ruleset,
            # recorded when the game was created; else the rule set it replays with now
            content_hash=ruleset_hash or (rule_set.content_hash if game is not None else None),
        ),
        instance=InstanceRecord.of(instance) if instance is not None else None,
        seeds=_seeds(meta),
        versions=package_versions(),
        seats=seats,
        models=_models(seats),
        meta={k: v for k, v in meta.items() if k not in _HEADER_OWN_META},
    )
    summary = (
        LogSummary.of(game) if game is not None else LogSummary.unreplayable(len(events), replay_error or {})
    )
    log = GameLog(header, events, times, latencies, traces=kept, summary=summary)
    return StoredGame(log, game, replay_error)


def _traces(store: Store, game_id: str) -> list[TraceRecord]:
    """The game's trace records as log records (the store keeps them bounded, credentials cut out)."""
    return [TraceRecord.model_validate({**record, "kind": "trace"}) for record in store.load_traces(game_id)]


# -------------------------------------------------------------------------------------------------- helpers
def _scrub(value: Any) -> Any:
    """Drop credential-like keys at any depth."""
    if isinstance(value, Mapping):
        return {k: _scrub(v) for k, v in value.items() if not CREDENTIAL_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _stamp(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _game_seed(meta: Mapping[str, Any]) -> int:
    seed = meta.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def _seeds(meta: Mapping[str, Any]) -> dict[str, Any]:
    seeds: dict[str, Any] = {"game": meta.get("seed")}
    for key, value in meta.items():
        if key.endswith("_seed"):
            seeds[key[: -len("_seed")]] = value
    if isinstance(meta.get("seeds"), Mapping):
        seeds.update(meta["seeds"])
    return seeds


def _models(seats: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    models = []
    for seat in seats:
        found = {key: seat[key] for key in MODEL_KEYS if seat.get(key) is not None}
        if found:
            models.append({"seat": seat.get("seat"), **found})
    return models
