"""The one error type of the game engine: a machine-readable code plus a sentence saying what to do.

Every illegal action raises :class:`GameError` *before* the engine changes anything, so a caller can
always answer the player with ``error.to_dict()`` and keep the game as it was.
"""

from __future__ import annotations

from typing import Any

from craft_rules.crafting import CraftError
from craft_rules.errors import TradeCraftError

# Every code the engine raises, with what it means. Clients may switch on these strings.
ERROR_CODES: dict[str, str] = {
    "invalid_action": "the action is not valid JSON or does not match its schema",
    "invalid_query": "the query is not valid JSON or does not match its schema",
    "invalid_settings": "the game settings or task instance cannot start a game",
    "invalid_log": "an event log cannot be replayed (gap, unknown event type, wrong game)",
    "wrong_phase": "this action is not allowed in the current phase",
    "not_your_turn": "another player's action is awaited, not yours",
    "not_a_player": "the actor is not a seat of this game (or a system action came from a player)",
    "player_left": "the seat (actor or addressee) has resigned and left the game",
    "unknown_item": "no such item in the game's rule set",
    "query_too_expensive": "the query needs more planning than a query may use (its CPU backstop); ask "
    "for fewer units or a simpler item",
    "item_not_held": "a trade names more of an item than its side holds",
    "proposal_to_self": "a proposer cannot trade with themselves",
    "unknown_player": "no such seat in this game",
    "empty_trade": "a proposal must offer or request at least one item",
    "same_item_both_sides": "an item cannot be both offered and requested",
    "message_too_long": "the message exceeds the game's message_max_chars",
    "invalid_tom_report": "a ToM report misses items, has extra items, or values outside 0-10",
    "tom_not_requested": "this game does not ask this seat for that ToM order (or any report)",
    "already_reported": "the seat has already reported its ToM values this turn",
    "game_over": "the game has ended; no more actions are accepted",
    "already_finished": "the seat has already finished crafting this phase",
    "not_allowed": "the action is disabled by the game settings or reserved for the system",
    "insufficient_items": "the crafting hand lacks ingredients or fuel for this craft",
    "unknown_recipe": "no such recipe in the rule set",
    "invalid_runs": "the run amount is not a positive rational like 1, 0.25 or 1/4 (at most 10^6, in steps "
    "of at least 1/10^6, written in at most 40 characters)",
    "too_finely_divided": "the craft would leave a quantity finer than 1/10^18 in the crafting hand",
    "whole_runs_only": "the game crafts whole runs only: run a recipe 1, 2, 3, ... times, not a fraction",
    "invalid_choice": "a tag/fuel choice names an item that cannot fill that slot",
    "no_fuel": "the recipe burns fuel and the crafting hand holds none",
}


class GameError(TradeCraftError):
    """An illegal action or unusable input. Nothing in the game changed when this is raised.

    ``code`` is one of :data:`ERROR_CODES`; ``message`` says what is wrong and what to do instead.
    """

    @classmethod
    def from_craft_error(cls, err: CraftError) -> GameError:
        """Wrap a crafting error, keeping its code (insufficient_items, no_fuel, ...)."""
        details = {k: _json_safe(v) for k, v in err.details.items()}
        message = err.message[0].upper() + err.message[1:]
        if not message.endswith("."):
            message += "."
        return cls(err.code, message, details)


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
