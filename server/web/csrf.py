"""No cross-site actions: what a page of another origin can make a logged-in browser send is refused.

Two rules for every POST, PUT, PATCH and DELETE under ``/api`` (admin and login included), checked before
any route runs:

1. The body is JSON (:func:`server.web.errors.require_json_body`): ``Content-Type: application/json`` (a
   charset parameter is fine), else ``unsupported_media_type`` (HTTP 415). A request with no body may omit
   the header; one that names another type never acts, even empty. An HTML form can only send
   ``text/plain``, ``multipart/form-data`` or ``application/x-www-form-urlencoded``, and a cross-origin
   ``fetch`` with JSON needs a CORS preflight that this server never grants.
2. Unless the request carries an API token that verifies (``Authorization: Bearer``, never sent by a browser
   on its own; one that does not verify is ``invalid_token`` here, as routes such as logout and the admin
   area would otherwise act on the cookie), its ``Origin`` (else the origin of its ``Referer``) is the
   server's own host or one of the configured origins (``security.allowed_origins`` and
   ``socketio.cors_allowed_origins`` when a list), else ``cross_site_request`` (HTTP 403). "Own host"
   compares host and port with the request's ``Host`` (not the scheme, which a TLS-terminating proxy
   changes). ``Origin: null`` (sandboxed frames, some redirects) is refused. A request with neither header
   is allowed: browsers send ``Origin`` on every cross-origin POST (and on same-origin ones), so only
   non-browser clients (curl, scripts, the test client) send none.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Flask, Response, request

from server.table.config import Settings
from server.table.errors import ServerError
from server.web.auth import bearer_token, principal_for_token
from server.web.errors import require_json_body, rest_error
from server.web.services import current_services

STATE_CHANGING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
GUARDED_PATH_PREFIX = "/api/"


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of a URL, lower-cased; None when it has no scheme or host."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def allowed_origins(settings: Settings) -> frozenset[str]:
    """The configured origins besides the server's own host (``"*"`` for Socket.IO does not open REST)."""
    configured = list(settings.security.allowed_origins)
    cors = settings.socketio.cors_allowed_origins
    if isinstance(cors, list):
        configured.extend(cors)
    return frozenset(o for o in (origin_of(c) for c in configured) if o is not None)


def require_same_origin(allowed: frozenset[str]) -> None:
    """Rule 2 (see the module's docstring) for the current request."""
    sent = request.headers.get("Origin")
    if sent is None:
        referer = request.headers.get("Referer")
        if referer is None:
            return
        origin = origin_of(referer)
    else:
        origin = origin_of(sent)
    if origin is not None and (urlsplit(origin).netloc == request.host.lower() or origin in allowed):
        return
    raise ServerError(
        "cross_site_request",
        "This request came from a page of another site; use the game's own pages, or an API token "
        "(Authorization: Bearer ...) for programs.",
        status=403,
    )


def install(app: Flask, settings: Settings) -> None:
    """Check both rules before every state-changing request under ``/api``."""
    allowed = allowed_origins(settings)

    @app.before_request
    def refuse_cross_site_requests() -> tuple[Response, int] | None:
        if request.method not in STATE_CHANGING_METHODS or not request.path.startswith(GUARDED_PATH_PREFIX):
            return None
        try:
            require_json_body()
            token = bearer_token(request.headers)
            if token is None:
                require_same_origin(allowed)
            else:
                principal_for_token(current_services().store, token)  # invalid_token, never the cookie
        except ServerError as err:
            return rest_error(err, settings.server.max_payload_bytes)
        return None
