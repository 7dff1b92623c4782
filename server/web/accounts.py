"""Kept names: a person who logged in with a display name may keep it, so that the name, its history and its
rating stay theirs across browsers and sessions (docs/ratings.md "Accounts").

- ``POST /api/account/keep`` with ``{"password": "..."}`` sets (or changes) the name's password; with
  ``{"token": true}`` it makes a login token, shown in that answer only. Only the logged-in owner of a
  name, or anyone for a name nobody keeps yet, may do it.
- ``POST /api/login`` with ``{"name", "password"}`` (the password or a login token) logs in as the SAME user
  who kept the name. A plain login (no password) with a kept name, or with a name that looks like one
  (:func:`server.table.names.name_key`: "ADA", "Ada" and a Cyrillic "Аda" are one name), is refused
  ``name_kept``; a wrong password ``wrong_password``, counted by ``limits.password_failures_per_address``
  and ``limits.password_failures_per_name`` and refused ``rate_limited`` once either is used up (checked
  before the slow key derivation runs, so a flood costs nothing). A study participant's name ("Participant
  1234" and its look-alikes) is the study link's only: logging in with one or keeping one is ``name_kept``.
- ``GET /api/account``: whether the logged-in user's name is kept, and how.

The store keeps one value per kept name (key: a hash of the name's look-alike key): the user id, the name
as kept, the password's scrypt hash with its own salt (the standard library's ``hashlib.scrypt``), and the
login token's sha256 (a random token needs no slow hash). Neither secret is logged or ever sent back.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from typing import Any

from flask import Blueprint, Response, jsonify, request, session

from server.store import Store, UserRecord
from server.table.errors import ServerError
from server.table.names import name_key
from server.table.principal import Principal
from server.web.auth import (
    USER_CHECKS,
    account_halls,
    clean_display_name,
    is_participant_name,
    require_principal,
    resolve_principal,
)
from server.web.errors import request_object, rest_error
from server.web.limits import RateLimiter
from server.web.services import current_services

ACCOUNT_PREFIX = "account:"
PASSWORD_MIN_CHARS = 8
PASSWORD_MAX_CHARS = 200  # bounds the key derivation's input
LOGIN_TOKEN_PREFIX = "tcl_"
#: scrypt cost: about 50 ms and 16 MB per derivation (RFC 7914's interactive-login parameters).
SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_BYTES = 2**14, 8, 1, 32

accounts = Blueprint("accounts", __name__, url_prefix="/api/account")


def account_key(name: str) -> str:
    """Store key of a kept name: hashed from its look-alike key, so look-alike names share one key."""
    return ACCOUNT_PREFIX + hashlib.sha256(name_key(name).encode("utf-8")).hexdigest()[:40]


def derive(password: str, salt: bytes, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=SCRYPT_BYTES, maxmem=64 * 1024 * 1024
    )


def password_record(password: Any) -> dict[str, Any]:
    """The stored form of a new password, or ``invalid_password``."""
    if not isinstance(password, str) or not PASSWORD_MIN_CHARS <= len(password) <= PASSWORD_MAX_CHARS:
        raise ServerError(
            "invalid_password",
            f"A password has {PASSWORD_MIN_CHARS} to {PASSWORD_MAX_CHARS} characters; choose another one.",
        )
    salt = secrets.token_bytes(16)
    return {
        "salt": salt.hex(),
        "hash": derive(password, salt).hex(),
        "n": SCRYPT_N,
        "r": SCRYPT_R,
        "p": SCRYPT_P,
    }


def secret_matches(account: dict[str, Any], secret: str) -> bool:
    """Whether ``secret`` is the account's password or its login token (constant-time comparisons)."""
    token_hash = account.get("token_sha256")
    if secret.startswith(LOGIN_TOKEN_PREFIX) and isinstance(token_hash, str):
        digest = hashlib.sha256(secret.encode("utf-8")).hexdigest()
        if hmac.compare_digest(digest, token_hash):
            return True
    stored = account.get("password")
    if not isinstance(stored, dict):
        return False
    candidate = derive(secret, bytes.fromhex(stored["salt"]), stored["n"], stored["r"], stored["p"])
    return hmac.compare_digest(candidate.hex(), stored["hash"])


def read_account(store: Store, name: str) -> tuple[str | None, dict[str, Any] | None]:
    """The stored value of the kept name ``name`` (or a look-alike) and its account, or ``(None, None)``."""
    raw = store.get_value(account_key(name))
    if raw is None:
        return None, None
    account = json.loads(raw)
    return raw, account if isinstance(account, dict) else None


def name_kept(name: str, kept_as: str) -> ServerError:
    looks = "" if name.casefold() == kept_as.casefold() else f" (it looks like the kept name “{kept_as}”)"
    return ServerError(
        "name_kept",
        f"The name “{name}” is kept by the player who chose it{looks}. If it is yours, enter its password "
        "or login token; otherwise choose another name.",
        status=409,
    )


def check_name_still_theirs(store: Store, user: UserRecord) -> None:
    """``name_kept`` (HTTP 401) when ANOTHER user now keeps ``user``'s name or a look-alike of it: a plain
    login made a new user each time, so people who typed a name before it was kept still hold sessions under
    it. Every request and socket event of such a session is refused this way (registered in
    ``auth.USER_CHECKS``), so whatever carries the kept name from then on (games, seats, ratings) is the
    keeper's. A study participant's account is never refused: its name is the study's to give, and nobody
    else can keep it (:func:`participant_name_reserved`)."""
    _, account = read_account(store, user["name"])
    if account is None or account.get("user_id") == user["id"]:
        return
    if account_halls(store, user["id"]) is not None:  # a participant's (read only for a name someone keeps)
        return
    raise ServerError(
        "name_kept",
        f"Another player now keeps the name “{account.get('name')}”, so this session can no longer play "
        "as it: log in again with another name.",
        status=401,
    )


USER_CHECKS.append(check_name_still_theirs)


def participant_name_reserved(name: str) -> ServerError:
    return ServerError(
        "name_kept",
        f"Names like “{name}” belong to study participants; choose another name.",
        {"reserved": "participant"},
        status=409,
    )


def keep_name(store: Store, principal: Principal, data: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Keep the principal's name with a new password (``data["password"]``) or a new login token
    (``data["token"] is True``); the account's public facts and the token's plaintext (None: a password)."""
    if principal.kind != "human":
        raise ServerError("forbidden", "Only people logged in with a display name keep names.", status=403)
    user = store.get_user(principal.id)
    if user is None:
        raise ServerError("not_logged_in", "Log in with a display name first.", status=401)
    if account_halls(store, user["id"]) is not None or is_participant_name(user["name"]):
        # a participant's account lives for its study (the link logs it in); a "Participant NNNN" name kept
        # by anyone would look like, and could be mistaken for, a participant in their games
        raise participant_name_reserved(user["name"])
    wants_token = data.get("token") is True
    if "password" not in data and not wants_token:
        raise ServerError(
            "invalid_request",
            'Send {"password": "..."} to keep your name with a password, or {"token": true}.',
        )
    raw, account = read_account(store, user["name"])
    if account is not None and account.get("user_id") != user["id"]:
        raise name_kept(user["name"], str(account.get("name")))
    updated = dict(account or {"user_id": user["id"], "name": user["name"], "kept_at": time.time()})
    plaintext = None
    if wants_token:
        plaintext = LOGIN_TOKEN_PREFIX + secrets.token_urlsafe(24)
        updated["token_sha256"] = hashlib.sha256(plaintext.encode("utf-8")).hexdigest()
    else:
        updated["password"] = password_record(data.get("password"))
    if not store.replace_value(account_key(user["name"]), raw, json.dumps(updated, sort_keys=True)):
        raise ServerError(
            "conflict", "Someone kept this name at the same moment; reload and try again.", status=409
        )
    return public_account(updated), plaintext


def public_account(account: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "kept": account is not None,
        "password": bool(account and account.get("password")),
        "login_token": bool(account and account.get("token_sha256")),
    }


def log_in_by_name(
    store: Store, limiter: RateLimiter, raw_name: Any, secret: Any, address: str
) -> UserRecord:
    """The user a login names: a new one for a name nobody keeps, the keeper for a kept name and its
    password or token; else ``name_kept``, ``name_not_kept``, ``wrong_password`` or ``rate_limited``."""
    # every attempt counts before anything is looked up: a refusal (name_kept, name_not_kept) tells whether a
    # name is kept, so probing names costs logins like any other login
    limiter.hit("logins_per_address", address)
    if secret is not None and not isinstance(secret, str):
        raise ServerError("invalid_request", 'The "password" is a string (or left out to play a free name).')
    name = clean_display_name(raw_name)
    if is_participant_name(name):  # only the study link logs in as a participant
        raise participant_name_reserved(name)
    raw, account = read_account(store, name)
    given = isinstance(secret, str) and secret != ""
    if account is None:
        if given:
            raise ServerError(
                "name_not_kept",
                f"Nobody keeps the name “{name}”, so it has no password: leave the password empty to play "
                "as it, then keep it from the lobby.",
            )
        return store.create_user(name)
    if not given:
        raise name_kept(name, str(account.get("name")))
    name_counter = account_key(name)
    limiter.check("password_failures_per_address", address)
    limiter.check("password_failures_per_name", name_counter)
    if len(secret) > PASSWORD_MAX_CHARS or not secret_matches(account, secret):
        limiter.hit("password_failures_per_address", address)
        limiter.hit("password_failures_per_name", name_counter)
        raise ServerError(
            "wrong_password",
            f"That is not the password or login token of “{account.get('name')}”. Try again, or choose "
            "another name.",
            status=401,
        )
    user = store.get_user(str(account.get("user_id")))
    if user is None:  # an admin removed the user: the name is free again
        store.replace_value(account_key(name), raw, None)
        return store.create_user(name)
    return user


# ------------------------------------------------------------------------------------------------ routes
@accounts.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int]:
    return rest_error(err, current_services().settings.server.max_payload_bytes)


def _caller() -> Principal:
    return require_principal(resolve_principal(current_services().store, request.headers, session))


@accounts.get("")
def account() -> tuple[Response, int]:
    principal = _caller()
    store = current_services().store
    _, held = read_account(store, principal.name)
    mine = held if held is not None and held.get("user_id") == principal.id else None
    return jsonify({"ok": True, "name": principal.name, **public_account(mine)}), 200


@accounts.post("/keep")
def keep() -> tuple[Response, int]:
    services = current_services()
    data = request_object(services.settings.server.max_action_bytes)
    public, plaintext = keep_name(services.store, _caller(), data)
    answer: dict[str, Any] = {"ok": True, **public}
    if plaintext is not None:
        answer["token"] = plaintext  # shown once: the store keeps its sha256 only
    return jsonify(answer), 200
