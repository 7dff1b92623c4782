"""The errors the server refuses a request with, shaped like the engine's ``GameError``.

They are raised by the table (live games, seats, bots) and by the web layer alike; the web layer turns them
into HTTP and Socket.IO answers (``server/web/errors.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from craft_rules.errors import TradeCraftError
from craft_rules.number_text import NUMBER_TEXT_MAX_CHARS, decimal_number, whole_number

__all__ = ["NUMBER_TEXT_MAX_CHARS", "ServerError", "parse_count", "parse_seconds"]


class ServerError(TradeCraftError):
    """A request the server refuses: ``code`` for programs, ``message`` (what to do) for people, ``status``
    the HTTP status of the answer."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None, status: int = 400):
        super().__init__(code, message, details)
        self.status = status


def parse_count(raw: Any, name: str, *, negative: bool = False) -> int:
    """An integer from a client: a JSON number, or its text in the one number grammar
    (craft_rules/number_text.py: ASCII digits, a leading '-' only with ``negative``, at most
    :data:`NUMBER_TEXT_MAX_CHARS` characters, checked before any conversion); else ``invalid_request``."""
    is_int = isinstance(raw, int) and not isinstance(raw, bool)
    if is_int and abs(raw) < 10**NUMBER_TEXT_MAX_CHARS and (raw >= 0 or negative):
        return int(raw)
    value = whole_number(raw, negative=negative) if isinstance(raw, str) else None
    if value is not None:
        return value
    raise ServerError(
        "invalid_request",
        f"{name} must be a whole number written in ASCII digits (at most {NUMBER_TEXT_MAX_CHARS}), like "
        + ("-1, 0 or 12." if negative else "0 or 12."),
        {name: _shown(raw)},
    )


def parse_seconds(raw: Any, name: str) -> float:
    """A duration in seconds from a client's text: ASCII digits with an optional ``.`` fraction (``10``,
    ``0.5``; no sign, exponent, nan or inf), at most :data:`NUMBER_TEXT_MAX_CHARS` characters."""
    value = decimal_number(raw) if isinstance(raw, str) else None
    if value is None:
        raise ServerError(
            "invalid_request",
            f"{name} must be a number of seconds written in ASCII digits, like 10 or 0.5.",
            {name: _shown(raw)},
        )
    return value


def _shown(raw: Any) -> str:
    """What the client sent, for an error's details: the first characters of its text, or its type."""
    return raw[:NUMBER_TEXT_MAX_CHARS] if isinstance(raw, str) else type(raw).__name__


# Machine-readable codes of the web layer (the engine's are in server.game.errors.ERROR_CODES).
SERVER_ERROR_CODES: dict[str, str] = {
    "invalid_request": "the request is not a JSON object with the fields the endpoint needs",
    "payload_too_large": "the request or action is bigger than the server accepts",
    "not_logged_in": "log in with a display name, or send an API token",
    "invalid_token": "the API token is unknown or revoked",
    "forbidden": "you are logged in but may not do this",
    "unsupported_media_type": "POST, PUT and DELETE requests under /api send their body as Content-Type: "
    "application/json (HTTP 415); a body-less request may omit the header",
    "cross_site_request": "a cookie-authenticated request came from a page of another origin (Origin or "
    "Referer not the server's host or security.allowed_origins); HTTP 403",
    "admin_disabled": "no admin password is configured on this server",
    "invalid_name": "a display, bot seat or token name is empty, too long or has control/bidi characters",
    "unknown_hall": "no such hall (game mode)",
    "unknown_game": "no such game",
    "unknown_user": "(admin) no user has that id",
    "unknown_instance": "no such task instance for this hall",
    "instance_choice_forbidden": "only admins pick an exact task instance; choose a difficulty or random",
    "difficulty_not_offered": "this hall offers no such difficulty (or deals its instances in a set order)",
    "deal_failed": "no fresh instance of that difficulty came within the hall's attempts; retry",
    "unknown_bot": "no built-in bot of that name",
    "model_unavailable": "the listed LLM opponent's provider did not answer its last check (or its key is "
    "missing): pick another opponent or retry later (HTTP 503); details.reason says why",
    "invalid_seats": "the seat list does not fit the hall",
    "game_full": "every seat of the game is taken",
    "seat_taken": "someone else holds that seat",
    "seat_kind": "that seat is reserved for another kind of player",
    "seat_held": "the game is a rematch whose seats are kept for the finished game's people for a while "
    "(rooms.rematch_hold_minutes); details.until says when it opens to anyone (HTTP 403)",
    "not_your_seat": "you hold no seat, or not that seat, in this game",
    "seat_required": "you hold several seats in this game: say which one acts",
    "seat_taken_over": "the seat was idle too long and a built-in bot plays it for the rest of the game",
    "spectator": "spectators can watch but not act",
    "not_started": "the game is still waiting for players",
    "conflict": "the game changed under a concurrent request; retry",
    "idempotency_conflict": "the client_action_id was already used for another action in this game",
    "action_in_progress": "another request is applying this client_action_id right now; retry in a moment",
    "unknown_seat": "(admin export) no such seat in the game",
    "game_not_over": "the game is still running (or waiting): its replay opens when it is over",
    "unknown_ruleset": "no hall of this server plays a rule set of that name",
    "replay_failed": "(admin export) the stored log cannot be replayed, so no participant view exists",
    "answer_failed": "the action was applied and stored but its answer could not be built; read the view",
    "rate_limited": "too many requests of this kind (games created, logins, admin passwords, Socket.IO "
    "events); retry after details.retry_after seconds (HTTP 429 + Retry-After)",
    "too_many_open_games": "you created too many games that still wait for players; start or abandon one",
    "not_waiting": "the game has started or closed: only a game still waiting for players can be cancelled "
    "or left (once it runs, a player resigns instead)",
    "game_cancelled": "the game was closed before it started (cancelled by its creator, expired or aborted)",
    "not_an_agent": "only agents connected with an API token send trace records for their seat",
    "too_many_connections": "this network address holds as many open Socket.IO connections "
    "(server.max_sockets_per_address) or TCP connections (server.max_connections_per_address) as the server "
    "allows; close one first (HTTP 429)",
    "too_many_queries": "this connection, user or network address has as many queries in flight as the "
    "server allows (one per connection, server.max_queries_per_user / max_queries_per_address): wait for an "
    "answer (HTTP 429)",
    "request_timeout": "the request's body did not arrive within server.body_timeout_seconds; the connection "
    "is closed (HTTP 408)",
    "unknown_event": "no Socket.IO event of that name exists; see docs/protocol.md for the event list",
    "too_many_waits": "this user or network address holds as many open long polls (events?wait=) as "
    "server.max_waits_per_user / max_waits_per_address allow; poll without wait or close one (HTTP 429)",
    "name_kept": "the display name (or one that looks like it) is kept by a player: log in with its "
    "password or login token, or choose another name (HTTP 409); a session logged in under a name another "
    "player kept later is refused it on every request and socket event: log in again (HTTP 401)",
    "name_not_kept": "a password was sent with a display name nobody keeps: log in without one",
    "wrong_password": "the password or login token does not match the kept name (HTTP 401; counted by "
    "limits.password_failures_per_address and password_failures_per_name)",
    "invalid_password": "a new password is shorter or longer than a kept name's password may be",
    "too_busy": "the server is computing as many answers of this kind as it allows at once (a finished "
    "game's beliefs): ask again after details.retry_after seconds (HTTP 503)",
    "not_a_practice_game": "the game is not a practice game (/practice)",
    "unknown_study": "no study has that id (HTTP 404)",
    "study_exists": "a study with that id exists; a new study needs a new id (ids appear in links, HTTP 409)",
    "study_closed": "the study is closed: it takes no one new and is never reopened (HTTP 409)",
    "study_paused": "the study is paused: it takes no one new for now; come back later (HTTP 503)",
    "study_full": "the study has as many participants as it admits (capacity.participants + overbook)",
    "unknown_participant": "no participant of the study has that id, or the caller is not one (HTTP 404)",
    "invalid_recruitment": "the study link lacks the recruitment id it needs, or the id is malformed",
    "already_participated": "that recruitment id took part in the study already (another session): it "
    "takes part once (HTTP 409)",
    "wrong_step": "the participant is at another step of the study: details.step says which (HTTP 409)",
    "nothing_to_pay": "(study payments) every finished participant with a bonus is in an earlier batch "
    "(HTTP 409)",
    "unknown_batch": "(study payments) the study has no payment batch with that id (HTTP 404)",
    "batch_in_progress": "(study payments) the batch is being made right now; ask again in a moment "
    "(HTTP 409)",
    "internal_error": "the server failed; the error is logged (read the game's view before retrying)",
}
