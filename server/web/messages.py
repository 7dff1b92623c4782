"""The fields of a client's request, read alike from a Socket.IO event and a REST call: an action and its
envelope, a ``create_game`` request, a ``cancel_game`` request (and who acts in it when an admin does)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from flask import request, session

from server.game.actions import ACTION_MODELS
from server.table.errors import ServerError
from server.table.principal import Principal
from server.web.admin import password_accepted
from server.web.auth import basic_password, require_principal
from server.web.services import Services

#: Who acts for an admin with no player login (an admin session alone, or the admin password over HTTP
#: Basic): an id no user or token has (neither a user id nor "token:..."), so no creator check matches it.
OPERATOR = Principal(id="admin:operator", name="admin", kind="human", scopes=frozenset({"admin"}))

#: Envelope fields a client sends next to an action's own fields.
ENVELOPE_FIELDS = ("game_id", "seat", "client_action_id")
for _model in ACTION_MODELS.values():
    assert not set(_model.model_fields) & set(ENVELOPE_FIELDS), f"{_model.__name__} shadows an envelope field"


def flag(data: dict[str, Any], name: str) -> bool:
    """A true/false field (absent or null: false). Text such as "false" is refused rather than read as
    true, as ``bool("false")`` would."""
    value = data.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ServerError("invalid_request", f"{name} must be true or false (JSON booleans).", {name: value})
    return value


def split_action(data: dict[str, Any], action_type: str | None) -> tuple[dict[str, Any], Any]:
    """(envelope fields, action) from a request: ``{"action": {...}}`` or a per-type event's flat fields."""
    envelope = {key: data.get(key) for key in ENVELOPE_FIELDS}
    if action_type is None:
        if "action" not in data:
            raise ServerError("invalid_request", 'Send {"game_id": ..., "action": {"type": ...}}.')
        return envelope, data["action"]
    action = {k: v for k, v in data.items() if k not in ENVELOPE_FIELDS}
    action["type"] = action_type
    return envelope, action


def create_game_request(
    services: Services, data: dict[str, Any], principal: Principal | None
) -> dict[str, Any]:
    """A ``create_game`` request, read alike from Socket.IO and REST (fields in docs/protocol.md §3)."""
    return services.lobby.create_game(
        data.get("hall"),
        with_admin_session(require_principal(principal), session),
        data.get("seats"),
        data.get("instance_id"),
        data.get("seed"),
        flag(data, "join"),
        address=request.remote_addr or "unknown",
        difficulty=data.get("difficulty"),
    )


def with_admin_session(principal: Principal, browser_session: Any) -> Principal:
    """``principal`` with the admin scope when its browser session logged in to the admin area (a person
    who is also the operator may then create games with an exact instance)."""
    if browser_session.get("admin") is True and not principal.is_admin:
        return replace(principal, scopes=principal.scopes | {"admin"})
    return principal


def cancel_game_request(services: Services, game_id: Any, principal: Principal | None) -> dict[str, Any]:
    """A ``cancel_game`` request, read alike from Socket.IO and REST: by the creator or an admin."""
    return services.lobby.cancel_game(game_id, admin_or_principal(principal, session, request.headers))


def admin_or_principal(
    principal: Principal | None, browser_session: Any, headers: Mapping[str, str]
) -> Principal:
    """The caller of a request an admin may make on anyone's game: ``principal`` with the admin scope when
    its browser session logged in to the admin area or it sends the admin password (HTTP Basic, throttled
    like the admin area's); an admin with no player login acts as :data:`OPERATOR`; anyone else must be
    logged in (``not_logged_in``). The password is checked only for a caller who is nobody else: a
    logged-in player's stray Basic header must not count admin failures against their own address."""
    password = basic_password(headers) if principal is None else None
    admin = browser_session.get("admin") is True or (password is not None and password_accepted(password))
    if not admin:
        return require_principal(principal)
    if principal is None:
        return OPERATOR
    return principal if principal.is_admin else replace(principal, scopes=principal.scopes | {"admin"})
