"""The errors the server refuses a request with, shaped like the engine's ``GameError``.

They are raised by the table (live games, seats, bots) and by the web layer alike; the web layer turns them
into HTTP and Socket.IO answers (``server/web/errors.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from craft_rules.errors import TradeCraftError

#: Longest number text (query arguments, limits) read from a client; checked before conversion.
NUMBER_TEXT_MAX_CHARS = 18


class ServerError(TradeCraftError):
    """A request the server refuses: ``code`` for programs, ``message`` (what to do) for people, ``status``
    the HTTP status of the answer."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None, status: int = 400):
        super().__init__(code, message, details)
        self.status = status


def parse_count(raw: Any, name: str) -> int:
    """An integer from a client (a JSON number or its text), refused as ``invalid_request`` unless it has at
    most :data:`NUMBER_TEXT_MAX_CHARS` characters: the text is checked before any conversion."""
    if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) < 10**NUMBER_TEXT_MAX_CHARS:
        return raw
    if isinstance(raw, str) and len(raw) <= NUMBER_TEXT_MAX_CHARS:
        try:
            return int(raw)
        except ValueError:
            pass
    shown = raw[:NUMBER_TEXT_MAX_CHARS] if isinstance(raw, str) else type(raw).__name__
    raise ServerError(
        "invalid_request",
        f"{name} must be a whole number of at most {NUMBER_TEXT_MAX_CHARS} digits.",
        {name: shown},
    )


# Machine-readable codes of the web layer (the engine's are in server.game.errors.ERROR_CODES).
SERVER_ERROR_CODES: dict[str, str] = {
    "invalid_request": "the request is not a JSON object with the fields the endpoint needs",
    "payload_too_large": "the request or action is bigger than the server accepts",
    "not_logged_in": "log in with a display name, or send an API token",
    "invalid_token": "the API token is unknown or revoked",
    "forbidden": "you are logged in but may not do this",
    "admin_disabled": "no admin password is configured on this server",
    "invalid_name": "a display, bot seat or token name is empty, too long or has control/bidi characters",
    "unknown_hall": "no such hall (game mode)",
    "unknown_game": "no such game",
    "unknown_instance": "no such task instance for this hall",
    "instance_choice_forbidden": "only admins pick an exact task instance; choose a difficulty or random",
    "difficulty_not_offered": "this hall offers no such difficulty (or deals its instances in a set order)",
    "deal_failed": "no fresh instance of that difficulty came within the hall's attempts; retry",
    "unknown_bot": "no built-in bot of that name",
    "invalid_seats": "the seat list does not fit the hall",
    "game_full": "every seat of the game is taken",
    "seat_taken": "someone else holds that seat",
    "seat_kind": "that seat is reserved for another kind of player",
    "not_your_seat": "you hold no seat, or not that seat, in this game",
    "seat_required": "you hold several seats in this game: say which one acts",
    "seat_taken_over": "the seat was idle too long and a built-in bot plays it for the rest of the game",
    "spectator": "spectators can watch but not act",
    "not_started": "the game is still waiting for players",
    "conflict": "the game changed under a concurrent request; retry",
    "idempotency_conflict": "the client_action_id was already used for another action in this game",
    "unknown_seat": "(admin export) no such seat in the game",
    "game_not_over": "the game is still running (or waiting): its replay opens when it is over",
    "unknown_ruleset": "no hall of this server plays a rule set of that name",
    "replay_failed": "(admin export) the stored log cannot be replayed, so no participant view exists",
    "answer_failed": "the action was applied and stored but its answer could not be built; read the view",
    "rate_limited": "too many requests of this kind (games created, logins, admin passwords); retry after "
    "details.retry_after seconds (HTTP 429 + Retry-After)",
    "too_many_open_games": "you created too many games that still wait for players; start or abandon one",
    "not_an_agent": "only agents connected with an API token send trace records for their seat",
    "too_many_connections": "this network address holds as many open Socket.IO connections as "
    "server.max_sockets_per_address allows; close one first (HTTP 429)",
    "too_many_waits": "this user or network address holds as many open long polls (events?wait=) as "
    "server.max_waits_per_user / max_waits_per_address allow; poll without wait or close one (HTTP 429)",
    "internal_error": "the server failed; the error is logged (read the game's view before retrying)",
}
