"""The game: a mutable, single-threaded state machine driven by actions and recorded as events.

``Game.new(instance, settings, rules, seed)`` starts a game; ``game.apply(actor, action)`` validates
the action completely, then appends its events and returns them; ``Game.replay(...)`` rebuilds the
exact state from a log. Every state change goes through one function per event type, so the live
path and the replay path cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance
from server.game.actions import Action
from server.game.events import Event
from server.game.settings import GameSettings


class Game:
    """One game. Not thread-safe: the server holds a lock per game around :meth:`apply`."""

    instance: TaskInstance
    settings: GameSettings
    rules: RuleSet
    seed: int

    # --- construction ------------------------------------------------------------------------------
    @classmethod
    def new(cls, instance: TaskInstance, settings: GameSettings, rules: RuleSet, seed: int) -> Game:
        """Start a game: emits ``game_started`` and the first ``phase_started``.

        Raises ``GameError("invalid_settings")`` when settings and instance do not fit together
        (tom_orders for the wrong number of seats, first_proposer out of range, unknown items).
        """
        raise NotImplementedError

    @classmethod
    def replay(
        cls,
        instance: TaskInstance,
        settings: GameSettings,
        rules: RuleSet,
        seed: int,
        events: Iterable[Event | dict[str, Any]],
    ) -> Game:
        """Rebuild a game from its log (events or their dicts). Raises ``GameError("invalid_log")``."""
        raise NotImplementedError

    # --- playing -----------------------------------------------------------------------------------
    def apply(self, actor: int | None, action: Action | dict[str, Any] | str) -> list[Event]:
        """Validate ``action`` by ``actor`` (a seat, or None for the system) and apply it.

        Returns the new events (already appended to :attr:`events`). On an illegal action raises
        :class:`~server.game.errors.GameError` and the game is unchanged.
        """
        raise NotImplementedError

    # --- reading -----------------------------------------------------------------------------------
    @property
    def events(self) -> list[Event]:
        """Every event so far (do not mutate)."""
        raise NotImplementedError

    @property
    def players(self) -> int:
        raise NotImplementedError

    @property
    def phase(self) -> str:
        """tom_report | trade_propose | trade_decide | craft | finished"""
        raise NotImplementedError

    @property
    def turn(self) -> int:
        """The current turn, 1-based (turn 1 is the first trade + craft)."""
        raise NotImplementedError

    @property
    def proposer(self) -> int:
        raise NotImplementedError

    @property
    def finished(self) -> bool:
        raise NotImplementedError

    @property
    def winners(self) -> list[int]:
        raise NotImplementedError

    @property
    def hands(self) -> list[dict[str, int]]:
        """Public (floored) hands, one per seat. During crafting: the hands at the phase's start."""
        raise NotImplementedError

    def waiting_for(self) -> set[int]:
        """Seats whose action is awaited now (empty when the game is over)."""
        raise NotImplementedError

    def state_digest(self) -> str:
        """sha256 of the canonical JSON of the whole state (equal states <=> equal digests)."""
        raise NotImplementedError

    def log_digest(self) -> str:
        """sha256 of the canonical JSON lines of the event log (same seed + actions -> same digest)."""
        raise NotImplementedError
