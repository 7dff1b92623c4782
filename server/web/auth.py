"""Who is asking: people (display-name login, signed session cookie), bots (API tokens), the admin.

- A person logs in with a display name only; the signed Flask session cookie keeps their user id, so the
  same browser gets its seats back after a reload or a reconnect.
- A bot or remote agent sends an API token (``Authorization: Bearer tc_...`` over HTTP, or
  ``auth={"token": "tc_..."}`` when opening the Socket.IO connection). Tokens are created by an admin
  (``tradecraft admin create-token`` or the admin API); the store keeps only their sha256. Tokens are
  never logged: this module is the only place that reads them and it logs token ids only.
- The admin: the password from ``security.admin_password`` (env ``TRADECRAFT__SECURITY__ADMIN_PASSWORD``),
  given once to ``POST /api/admin/login`` (then the session remembers it) or as HTTP Basic auth on each
  request; or an API token with the ``admin`` scope. No password configured = no admin access at all.

Every error of the web layer is a :class:`ServerError`, shaped like the engine's ``GameError``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from server.names import InvalidName, normalise_name
from server.settings import Settings
from server.store import Store

log = logging.getLogger(__name__)

SECRET_KEY_NAME = "flask_secret_key"
TOKEN_PRINCIPAL_PREFIX = "token:"
SCOPES = ("play", "admin")
#: Longest number text (query arguments, limits) read from a client; checked before conversion.
NUMBER_TEXT_MAX_CHARS = 18


class ServerError(Exception):
    """A request the server refuses: ``code`` for programs, ``message`` (what to do) for people."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None, status: int = 400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.status = status

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


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
    "internal_error": "the server failed; the error is logged (read the game's view before retrying)",
}


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a person (user id) or an API token (``token:<id>``)."""

    id: str
    name: str
    kind: Literal["human", "agent"]
    scopes: frozenset[str] = field(default_factory=lambda: frozenset({"play"}))

    @property
    def is_admin(self) -> bool:
        return "admin" in self.scopes

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "kind": self.kind}


def clean_display_name(raw: Any, what: str = "display name") -> str:
    """A name as stored (display names, bot seat names, token names): the rule of server/names.py, refused as
    ``invalid_name``."""
    try:
        return normalise_name(raw, what)
    except InvalidName as exc:
        raise ServerError("invalid_name", str(exc)) from None


def secret_key(settings: Settings, store: Store) -> str:
    """The configured secret key, else one generated once and shared through the store by every worker."""
    if settings.security.secret_key is not None:
        return settings.security.secret_key.get_secret_value()
    return store.set_value_if_absent(SECRET_KEY_NAME, secrets.token_urlsafe(48))


def principal_for_user(store: Store, user_id: Any) -> Principal | None:
    if not isinstance(user_id, str):
        return None
    user = store.get_user(user_id)
    if user is None:
        return None
    return Principal(id=user["id"], name=user["name"], kind="human")


def principal_for_token(store: Store, plaintext: Any) -> Principal:
    """Verify an API token; raises ``invalid_token`` (the token itself never appears in logs or errors)."""
    record = store.verify_token(plaintext) if isinstance(plaintext, str) and plaintext else None
    if record is None:
        raise ServerError(
            "invalid_token", "The API token is unknown or revoked; ask an admin for a new one.", status=401
        )
    return Principal(
        id=TOKEN_PRINCIPAL_PREFIX + record["id"],
        name=record["name"],
        kind="agent",
        scopes=frozenset(record.get("scopes") or ()),
    )


def bearer_token(headers: Mapping[str, str]) -> str | None:
    value = headers.get("Authorization") or headers.get("authorization") or ""
    scheme, _, credential = value.partition(" ")
    if scheme.lower() == "bearer" and credential.strip():
        return credential.strip()
    return None


def basic_password(headers: Mapping[str, str]) -> str | None:
    value = headers.get("Authorization") or headers.get("authorization") or ""
    scheme, _, credential = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded.partition(":")[2]


def check_admin_password(settings: Settings, candidate: Any) -> bool:
    """Constant-time comparison with the configured password; False when none is configured."""
    configured = settings.security.admin_password
    if configured is None or not isinstance(candidate, str):
        return False
    return hmac.compare_digest(candidate.encode("utf-8"), configured.get_secret_value().encode("utf-8"))


def require_admin_configured(settings: Settings) -> None:
    if settings.security.admin_password is None:
        raise ServerError(
            "admin_disabled",
            "The admin area is disabled: set security.admin_password in settings.yaml "
            "or TRADECRAFT__SECURITY__ADMIN_PASSWORD.",
            status=403,
        )


def resolve_principal(
    store: Store, headers: Mapping[str, str], session: Mapping[str, Any], auth: Any = None
) -> Principal | None:
    """The caller of an HTTP request or a Socket.IO connection: a token wins over the session cookie.

    ``auth`` is the Socket.IO connection's auth payload (``{"token": ...}``). A token that does not verify
    raises ``invalid_token`` rather than silently falling back to the cookie.
    """
    token = None
    if isinstance(auth, Mapping) and auth.get("token") is not None:
        token = auth.get("token")
    else:
        token = bearer_token(headers)
    if token is not None:
        principal = principal_for_token(store, token)
        log.debug("authenticated API token %s", principal.id)
        return principal
    return principal_for_user(store, session.get("user_id"))


def require_principal(principal: Principal | None) -> Principal:
    if principal is None:
        raise ServerError(
            "not_logged_in",
            'Log in first: POST /api/login with {"name": ...}, or send an API token '
            "(Authorization: Bearer ...).",
            status=401,
        )
    return principal
