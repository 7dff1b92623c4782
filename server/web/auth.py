"""Who is asking: people (display-name login, session cookie), bots (API tokens), the admin.

- A person logs in with a display name only; their server-side session (``server/web/sessions.py``, the
  cookie holds its id) keeps their user id, so the same browser gets its seats back after a reload or a
  reconnect, until logout, expiry or an admin ends it.
- A bot or remote agent sends an API token (``Authorization: Bearer tc_...`` over HTTP, or
  ``auth={"token": "tc_..."}`` when opening the Socket.IO connection). Tokens are created by an admin
  (``tradecraft admin create-token`` or the admin API); the store keeps only their sha256. Tokens are
  never logged: this module is the only place that reads them and it logs token ids only.
- The admin: the password from ``security.admin_password`` (env ``TRADECRAFT__SECURITY__ADMIN_PASSWORD``),
  given once to ``POST /api/admin/login`` (then the session remembers it until admin logout or a password
  change) or as HTTP Basic auth on each request; or an API token with the ``admin`` scope. No password
  configured = no admin access at all.

Refusals are :class:`server.table.errors.ServerError`, shaped like the engine's ``GameError``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from server.store import Store, UserRecord
from server.table.config import Settings
from server.table.errors import ServerError
from server.table.names import InvalidName, NameKind, name_key, normalise_name
from server.table.principal import Principal

log = logging.getLogger(__name__)

SECRET_KEY_NAME = "flask_secret_key"
TOKEN_PRINCIPAL_PREFIX = "token:"
SCOPES = ("play", "admin")


def clean_display_name(raw: Any, what: str = "display name", kind: NameKind = "human") -> str:
    """A name as stored (display names, bot seat names, token names): the rule of server/table/names.py,
    refused as ``invalid_name``."""
    try:
        return normalise_name(raw, what, kind=kind)
    except InvalidName as exc:
        raise ServerError("invalid_name", str(exc)) from None


def secret_key(settings: Settings, store: Store) -> str:
    """The configured secret key, else one generated once and shared through the store by every worker."""
    if settings.security.secret_key is not None:
        return settings.security.secret_key.get_secret_value()
    return store.set_value_if_absent(SECRET_KEY_NAME, secrets.token_urlsafe(48))


#: What a logged-in person's session must still pass on every request and Socket.IO connect (each raises a
#: ServerError). Registered by the module that owns the rule, which imports this one: server/web/accounts.py
#: refuses a session whose name another player has kept since.
USER_CHECKS: list[Callable[[Store, UserRecord], None]] = []

#: The look-alike key (server/table/names.py ``name_key``: "1" reads as "i", "0" as "o") of the names the
#: study link gives participants' accounts (server/web/study/flow.py ``arrive``): "Participant 1234".
#: Nobody else may log in with or keep such a name (server/web/accounts.py refuses it ``name_kept``).
PARTICIPANT_NAME = re.compile(r"participant[oi2-9]{4}")


def account_halls_key(user_id: str) -> str:
    """Store key marking a study participant's account: a JSON list of the halls it may play in (its study's
    hall and the practice hall), written by the study link before the account can act. The lobby refuses
    such an account a game or a seat of any other hall; kept-name checks never lock it out. Here (not in the
    study package) because the lobby and the accounts read it and neither may import the study package."""
    return f"account_halls:{user_id}"


def account_halls(store: Store, user_id: str) -> list[str] | None:
    """The halls a participant's account may play in; None for every other account (no limit)."""
    raw = store.get_value(account_halls_key(user_id))
    if raw is None:
        return None
    try:
        halls = json.loads(raw)
    except ValueError:
        return []  # an unreadable marker still marks a participant: it plays nowhere rather than anywhere
    return [hall for hall in halls if isinstance(hall, str)] if isinstance(halls, list) else []


def is_participant_name(name: str) -> bool:
    """Whether ``name`` reads as a study participant's name ("Participant 1234", look-alikes included)."""
    return PARTICIPANT_NAME.fullmatch(name_key(name)) is not None


def principal_for_user(store: Store, user_id: Any) -> Principal | None:
    if not isinstance(user_id, str):
        return None
    user = store.get_user(user_id)
    if user is None:
        return None
    for check in USER_CHECKS:
        check(store, user)
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
