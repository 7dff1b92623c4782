"""The typed error answers of the web layer: every refusal or failure becomes ``{"ok": false, "error":
{"code", "message", "details"}}`` with an HTTP status, whether it came from the engine (``GameError``), the
table (``ServerError``), the store or a bug; and the reading of a request body as a bounded JSON object.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from flask import Response, jsonify, request, session
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from server.game.errors import GameError
from server.store import StoreError
from server.table.errors import ServerError
from server.table.log_text import RefusalLog, log_text
from server.table.principal import Principal
from server.web.auth import resolve_principal
from server.web.limits import retry_after_of
from server.web.services import current_services

log = logging.getLogger(__name__)

#: Refusals of this process, summarised per connection (Socket.IO) or network address (REST).
REFUSALS = RefusalLog(log)

#: Engine error codes that mean the request itself is malformed (HTTP 400); the others conflict with the
#: game's state (409).
BAD_INPUT_CODES = frozenset({"invalid_action", "invalid_query"})
JSON_MIMETYPE = "application/json"


def error_body(err: BaseException) -> dict[str, Any]:
    if isinstance(err, GameError | ServerError):
        return err.to_dict()
    if isinstance(err, StoreError):
        log.error("store error: %s", err.message)
        return ServerError(
            "internal_error", "The game store failed; try again shortly.", {"store": err.code}
        ).to_dict()
    # no claim that nothing changed: a failure after a stored change is answered answer_failed by Table,
    # but only the caller's view can tell what this request did
    return ServerError(
        "internal_error", "The server failed and logged the error; read the game's view before retrying."
    ).to_dict()


def http_status(err: BaseException) -> int:
    if isinstance(err, ServerError):
        return err.status
    if isinstance(err, GameError):
        return 400 if err.code in BAD_INPUT_CODES else 409
    return 500


def log_refusal(where: str, who: Callable[[], str], key: str, err: BaseException) -> None:
    """Log a refused request (its error code) or a failed one (with its trace), at most one line per
    caller ``key`` and minute (the others are counted: :class:`RefusalLog`). ``where`` may hold client text
    (a path, an event name): it is escaped and bounded; ``who()`` names the caller."""
    if isinstance(err, GameError | ServerError):
        # refusals and failures are counted apart: a flood of refusals must not hide a bug's first trace
        caller = REFUSALS.should_log(f"{key} refused", who)
        if caller is not None:
            log.info("refused %s from %s: %s", log_text(where), caller, log_text(err.code))
    else:
        caller = REFUSALS.should_log(f"{key} failed", who)
        if caller is not None:
            log.exception("failed %s from %s", log_text(where), caller)


def forget_caller(key: str) -> None:
    """The caller ``key`` of :func:`log_refusal` went away: write its pending summaries now."""
    REFUSALS.forget(f"{key} refused")
    REFUSALS.forget(f"{key} failed")


def principal_label(principal: Principal | None, address: str | None) -> str:
    """Who made a request, for a log line: the user or token id (never a secret) and the address."""
    who = log_text(principal.id) if principal is not None else "anonymous"
    return f"{who} at {log_text(address or 'unknown address')}"


def rest_caller_label() -> str:
    """The caller of the current HTTP request, for a log line: user or API token, admin session, address.
    Called only when a line is written; never raises."""
    try:
        principal = resolve_principal(current_services().store, request.headers, session)
        unknown = "anonymous"
    except Exception:  # an unknown or revoked token: the refusal being logged may well be about it
        principal, unknown = None, "an invalid token"
    label = principal_label(principal, request.remote_addr)
    if principal is None:
        label = unknown + label.removeprefix("anonymous")
    return f"admin session, {label}" if session.get("admin") is True else label


def as_object(data: Any, limit: int) -> dict[str, Any]:
    """The request payload as a dict: a JSON object, or a string holding one, within the size limit."""
    if isinstance(data, str | bytes):
        if len(data) > limit:
            raise _too_large(len(data), limit)
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ServerError(
                "invalid_request",
                f"The message is not valid JSON ({exc.msg} at position {exc.pos}).",
            ) from None
        except (ValueError, RecursionError):
            # undecodable bytes, a number beyond Python's int digit limit, nesting deeper than the parser goes
            raise ServerError(
                "invalid_request",
                "The message is not readable JSON: send UTF-8 text, numbers of at most a few digits and "
                "objects nested a few levels deep.",
            ) from None
    if data is None:
        return {}
    # one pass over the object: its size, and text that is not Unicode (a lone surrogate such as "\ud800",
    # which JSON can spell but no store, log or UTF-8 answer can hold)
    try:
        size = len(json.dumps(data, ensure_ascii=False).encode("utf-8"))
    except UnicodeEncodeError:
        raise ServerError(
            "invalid_request", "The message holds text that is not Unicode (a lone surrogate); send UTF-8."
        ) from None
    except (TypeError, ValueError, RecursionError):
        raise ServerError("invalid_request", "The message is not JSON.") from None
    if size > limit:
        raise _too_large(size, limit)
    if not isinstance(data, dict):
        raise ServerError("invalid_request", f"Send a JSON object, not a {type(data).__name__}.")
    return data


def _too_large(size: int, limit: int) -> ServerError:
    return ServerError(
        "payload_too_large",
        f"The message has {size} bytes; the server accepts at most {limit}. Send a shorter one.",
        {"size": size, "limit": limit},
        status=413,
    )


def require_json_body() -> None:
    """The current request's body is JSON: ``Content-Type: application/json`` (any charset parameter), or
    no body and no Content-Type at all; else ``unsupported_media_type`` (415). A form or ``text/plain``
    body, the only kinds a page of another site can make a browser POST without a CORS preflight, never
    reaches a route."""
    content_type = request.headers.get("Content-Type")
    if content_type is None:
        has_body = bool(request.content_length) or "chunked" in request.headers.get("Transfer-Encoding", "")
        if not has_body:
            return
    elif request.mimetype == JSON_MIMETYPE:
        return
    raise ServerError(
        "unsupported_media_type",
        "Send the request body as JSON with the header Content-Type: application/json.",
        {"content_type": (content_type or "")[:100]},
        status=415,
    )


def request_object(limit: int) -> dict[str, Any]:
    """The body of the current HTTP request as a JSON object (empty body: ``{}``), read under ``limit``
    bytes; anything the JSON parser refuses (bad UTF-8, deep nesting, huge numbers) is ``invalid_request``,
    a body that is not ``application/json`` is ``unsupported_media_type``."""
    require_json_body()
    if request.content_length and request.content_length > limit:
        raise _too_large(request.content_length, limit)
    raw = request.get_data(cache=True)
    if not raw:
        return {}
    return as_object(raw, limit)


def rest_error(err: BaseException, max_payload_bytes: int) -> tuple[Response, int]:
    """The typed JSON answer of a failed REST request (``Retry-After`` on ``rate_limited``); HTTP errors
    of the routing layer (404, 405, ...) become ``invalid_request``; only unexpected failures log a trace."""
    if isinstance(err, HTTPException) and not isinstance(err, RequestEntityTooLarge):
        typed = ServerError("invalid_request", err.description or err.name, status=err.code or 400)
        return jsonify({"ok": False, "error": typed.to_dict()}), typed.status
    if isinstance(err, RequestEntityTooLarge):
        err = _too_large(request.content_length or 0, max_payload_bytes)
    address = request.remote_addr or "unknown"
    log_refusal(f"{request.method} {request.path}", rest_caller_label, f"address {address}", err)
    response = jsonify({"ok": False, "error": error_body(err)})
    retry_after = retry_after_of(err)
    if isinstance(retry_after, int) and not isinstance(retry_after, bool):  # a header takes no other text
        response.headers["Retry-After"] = str(retry_after)
    return response, http_status(err)
