"""Server-side login sessions: the cookie holds only an unguessable session id; the store holds the session.

A session is the store value ``session:<sha256 of the id>`` (a stolen store file names no usable cookie):
``{"user": user id or null, "admin": fingerprint or null, "epoch": n, "created": t, "seen": t}``. Each request
that carries the cookie reads it (and the user's epoch): so logout, admin logout, a changed admin password
and an admin's "end this user's sessions" act at once, over REST and on open Socket.IO connections.

- Logout deletes the record. Login (display name or admin) starts a new id, so an id planted in a browser
  before a login never becomes a logged-in one.
- Admin rights are the HMAC of the admin password under the secret key, recorded at admin login and compared
  on every request: another ``security.admin_password`` voids every admin session. A login with an admin API
  token records ``token:<its id>`` instead, checked on every request too: the session is admin only while
  that token is unrevoked and has the ``admin`` scope.
- ``sessions_epoch:<user id>`` (absent = 0) is raised to end every session of a user: a session whose epoch
  differs is ended. The raise is a conditional write, so no concurrent login survives it unnoticed.
- A session ends ``security.session_idle_hours`` after its last use and ``session_lifetime_hours`` after
  it began. Its last use is written at most once per :data:`SEEN_REFRESH_MAX_SECONDS`, not per request.
- Open sockets are checked on every event (:meth:`Sessions.check_socket`); the sockets of this process are
  disconnected at once when their session ends here.

API tokens are not sessions: they are revoked as before (``DELETE /api/admin/tokens/<id>``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
import weakref
from dataclasses import asdict, dataclass, replace
from typing import Any, cast

from flask import Flask, Request, current_app, request
from flask.sessions import SessionInterface, SessionMixin
from flask.wrappers import Response
from flask_socketio import SocketIO

from server.store import Store, UserRecord
from server.table.config import Settings
from server.table.errors import ServerError
from server.table.principal import Principal
from server.web.auth import USER_CHECKS

log = logging.getLogger(__name__)

SESSION_KEY_PREFIX = "session:"
#: A session's ``admin`` when an admin API token (not the password) granted it: this prefix + the token id.
TOKEN_ADMIN_PREFIX = "token:"
EPOCH_KEY_PREFIX = "sessions_epoch:"
#: Longest gap between two writes of a session's last use (shorter for short idle limits, see ``refresh``).
SEEN_REFRESH_MAX_SECONDS = 60.0
#: Stored sessions the periodic sweep looks at per round (every security.socket_session_check_seconds).
RECORDS_PER_SWEEP = 200
#: The cookie's session id: 32 random bytes, URL-safe base64 (43 characters).
SESSION_ID_BYTES = 32
SESSION_ID_MAX_CHARS = 64
#: How long a socket whose session ended stays connected so that its refusal reaches it (it is in no room
#: meanwhile, and every event it sends is refused).
ANSWER_GRACE_SECONDS = 2.0
#: Where the connect request of a socket keeps the session id it was opened with.
ENVIRON_SESSION_ID = "tradecraft.session_id"
#: Set by Flask-SocketIO (``manage_session``) on a socket's environ once it copied the connect-time session:
#: every later event replaces the session Flask opens, so opening it would be two wasted store reads.
SOCKETIO_SAVED_SESSION = "saved_session"


def session_key(session_id: str) -> str:
    return SESSION_KEY_PREFIX + hashlib.sha256(session_id.encode("ascii")).hexdigest()


def epoch_key(user_id: str) -> str:
    return EPOCH_KEY_PREFIX + user_id


def admin_fingerprint(settings: Settings, secret: str) -> str | None:
    """What an admin session records of the password it logged in with (None: no admin password)."""
    password = settings.security.admin_password
    if password is None:
        return None
    message = b"tradecraft admin password\0" + password.get_secret_value().encode("utf-8")
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SessionRecord:
    user: str | None
    admin: str | None
    epoch: int
    created: float
    seen: float

    def dumps(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @staticmethod
    def loads(raw: str) -> SessionRecord | None:
        try:
            data = json.loads(raw)
            return SessionRecord(
                user=data["user"],
                admin=data["admin"],
                epoch=int(data["epoch"]),
                created=float(data["created"]),
                seen=float(data["seen"]),
            )
        except (ValueError, TypeError, KeyError):
            return None


class StoredSession(dict[str, Any], SessionMixin):
    """The request's view of its session: ``user_id`` and ``admin`` (True only while the recorded password
    fingerprint matches today's). Read-only by convention: logins and logouts go through :class:`Sessions`,
    which says what the response does to the cookie."""

    def __init__(
        self, session_id: str | None = None, record: SessionRecord | None = None, admin: bool = False
    ) -> None:
        super().__init__()
        if record is not None and record.user is not None:
            self["user_id"] = record.user
        if admin:
            self["admin"] = True
        self.session_id = session_id
        self.record = record
        self.had_cookie = False
        #: a new session id to send (login), or "" to delete the cookie (logout, ended session)
        self.cookie_change: str | None = None


@dataclass
class BoundSocket:
    session_id: str
    user: str | None
    #: its session ended: every event is refused until the socket is gone
    ended: bool = False
    #: the user's name when it connected (a user's name never changes), for auth.USER_CHECKS without a read
    name: str | None = None


class Sessions(SessionInterface):
    """Flask's session interface over the store, and the registry of this process's sockets per session."""

    def __init__(self, settings: Settings, store: Store, secret: str, socketio: SocketIO) -> None:
        self.store = store
        self.socketio = socketio
        security = settings.security
        self.lifetime = security.session_lifetime_hours * 3600
        self.idle = security.session_idle_hours * 3600
        self.refresh = min(SEEN_REFRESH_MAX_SECONDS, self.idle / 10)
        self.fingerprint = admin_fingerprint(settings, secret)
        self._lock = threading.Lock()
        self._sockets: dict[str, BoundSocket] = {}  # Socket.IO client id -> its session
        self.stopped = threading.Event()  # set by stop(): the socket sweep ends
        self._records_swept_to = ""  # the last session key the record sweep looked at

    def stop(self) -> None:
        """End the periodic socket sweep (the app is closing)."""
        self.stopped.set()

    # ---------------------------------------------------------------- the store side
    def load(self, session_id: Any, *, use: bool = True) -> SessionRecord | None:
        """The live session of a cookie value, else None (unknown, ended or expired: expired ones are
        removed). ``use``: this counts as the session's use (its idle time starts again)."""
        if not isinstance(session_id, str) or not 0 < len(session_id) <= SESSION_ID_MAX_CHARS:
            return None
        if not session_id.isascii():
            return None
        key = session_key(session_id)
        raw = self.store.get_value(key)
        record = self._live(key, raw) if raw is not None else None
        if raw is None or record is None:
            return None
        now = time.time()
        if use and now - record.seen > self.refresh:
            # a lost race means another request of this session wrote its last use just now
            self.store.replace_value(key, raw, replace(record, seen=now).dumps())
        return record

    def _live(self, key: str, raw: str) -> SessionRecord | None:
        """The record stored as ``raw`` under ``key`` if its session lives; an expired or ended one (its
        user's sessions were ended since) is removed."""
        record = SessionRecord.loads(raw)
        now = time.time()
        live = record is not None and now - record.created <= self.lifetime and now - record.seen <= self.idle
        # the epoch costs a store read: only for a record alive so far
        if live and record is not None and (record.user is None or record.epoch == self.epoch(record.user)):
            return record
        self.store.replace_value(key, raw, None)  # lost race: it was used or removed just now
        return None

    def sweep_records(self, limit: int = RECORDS_PER_SWEEP) -> int:
        """Look at up to ``limit`` stored sessions, going on from where the last sweep stopped, and remove the
        dead ones (a browser that dropped its cookie never presents it again); returns how many."""
        keys = self.store.list_keys(SESSION_KEY_PREFIX, after=self._records_swept_to, limit=limit)
        self._records_swept_to = keys[-1] if len(keys) == limit else ""  # back to the start at the end
        removed = 0
        for key in keys:
            raw = self.store.get_value(key)
            if raw is not None and self._live(key, raw) is None:
                removed += 1
        return removed

    def epoch(self, user_id: str) -> int:
        raw = self.store.get_value(epoch_key(user_id))
        return int(raw) if raw is not None and raw.isdigit() else 0

    def is_admin(self, record: SessionRecord | None) -> bool:
        if record is None or record.admin is None:
            return False
        if record.admin.startswith(TOKEN_ADMIN_PREFIX):
            return self._token_grants_admin(record.admin.removeprefix(TOKEN_ADMIN_PREFIX))
        return self.fingerprint is not None and hmac.compare_digest(record.admin, self.fingerprint)

    def _token_grants_admin(self, token_id: str) -> bool:
        """Whether the API token ``token_id`` is unrevoked and has the admin scope (one read of the tokens:
        admins create them by hand, so the list stays short)."""
        return any(
            token["id"] == token_id and token["revoked_at"] is None and "admin" in token["scopes"]
            for token in self.store.list_tokens()
        )

    def _create(self, user: str | None, admin: str | None) -> str:
        now = time.time()
        epoch = self.epoch(user) if user is not None else 0
        record = SessionRecord(user=user, admin=admin, epoch=epoch, created=now, seen=now)
        while True:
            session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
            if self.store.replace_value(session_key(session_id), None, record.dumps()):
                return session_id

    def _delete(self, session_id: str | None) -> None:
        if session_id is None:
            return
        key = session_key(session_id)
        for _ in range(3):  # a concurrent refresh of its last use changes the value under us
            raw = self.store.get_value(key)
            if raw is None or self.store.replace_value(key, raw, None):
                break
        self._disconnect(lambda bound: bound.session_id == session_id)

    # ---------------------------------------------------------------- what routes do
    def log_in(self, user_id: str) -> None:
        """The current request's browser becomes ``user_id`` under a new session id (admin rights end)."""
        current = _current_session()
        self._delete(current.session_id)
        current.cookie_change = self._create(user_id, None)

    def log_out(self) -> None:
        current = _current_session()
        self._delete(current.session_id)
        current.cookie_change = ""

    def grant_admin(self, token_id: str | None = None) -> None:
        """Admin rights for this browser, under a new session id: by the password (checked), or while the
        admin API token ``token_id`` (verified, with the admin scope) stays valid."""
        current = _current_session()
        record = current.record
        user = record.user if record is not None else None
        self._delete(current.session_id)
        admin = self.fingerprint if token_id is None else TOKEN_ADMIN_PREFIX + token_id
        current.cookie_change = self._create(user, admin)

    def revoke_admin(self) -> None:
        """This session's admin rights end; its display-name login, if any, stays."""
        current = _current_session()
        if current.session_id is None or current.record is None:
            return
        if current.record.user is None:
            self.log_out()
            return
        key = session_key(current.session_id)
        for _ in range(3):
            raw = self.store.get_value(key)
            record = SessionRecord.loads(raw) if raw is not None else None
            if record is None:
                return
            if self.store.replace_value(key, raw, replace(record, admin=None).dumps()):
                return

    def end_user_sessions(self, user_id: str) -> int:
        """Every session of ``user_id`` ends now (its sockets in this process are disconnected); answers
        the user's new epoch."""
        key = epoch_key(user_id)
        while True:
            raw = self.store.get_value(key)
            epoch = int(raw) if raw is not None and raw.isdigit() else 0
            if self.store.replace_value(key, raw, str(epoch + 1)):
                break
        self._disconnect(lambda bound: bound.user == user_id)
        return epoch + 1

    # ---------------------------------------------------------------- sockets
    def bind_socket(self, socket_id: str, principal: Principal | None) -> None:
        """Remember the session a Socket.IO connection was opened with, when its cookie logged it in (call
        from the connect handler; a socket opened with an API token has no session)."""
        session_id = request.environ.get(ENVIRON_SESSION_ID)
        if not isinstance(session_id, str) or principal is None or principal.kind != "human":
            return
        record = self.load(session_id)
        if record is None or record.user != principal.id:
            return
        with self._lock:
            self._sockets[socket_id] = BoundSocket(session_id, record.user, name=principal.name)

    def unbind_socket(self, socket_id: str) -> None:
        with self._lock:
            self._sockets.pop(socket_id, None)

    def check_socket(self, socket_id: str, socket_session: dict[str, Any]) -> None:
        """Before each event of a cookie-opened socket: its session must still be live (else the event is
        refused ``not_logged_in`` and the socket disconnected), and so must its user (``auth.USER_CHECKS``:
        refused as the check says, disconnected too); its admin rights follow the session's."""
        with self._lock:
            bound = self._sockets.get(socket_id)
        if bound is None:
            return
        record = None if bound.ended else self.load(bound.session_id)
        if record is None:
            self._end_socket(socket_id, bound)
            raise _session_ended()
        if record.user is not None and bound.name is not None:
            user = UserRecord(id=record.user, name=bound.name, created_at=0.0)
            try:
                for check in USER_CHECKS:
                    check(self.store, user)
            except ServerError:  # e.g. another player kept this user's name since the socket opened
                self._end_socket(socket_id, bound)
                raise
        if self.is_admin(record):
            socket_session["admin"] = True
        else:
            socket_session.pop("admin", None)

    def _end_socket(self, socket_id: str, bound: BoundSocket) -> None:
        if not bound.ended:
            bound.ended = True
            self._leave_rooms(socket_id)  # no more pushes of its seats
            # later, so that this refusal reaches the client first (no harm if it does not)
            self.socketio.start_background_task(self._disconnect_socket, socket_id, ANSWER_GRACE_SECONDS)

    def sweep_sockets(self) -> int:
        """End this process's sockets whose session has ended anywhere (a logout or end-sessions handled by
        another worker reaches them only through the store); returns how many were ended. An open socket is
        not a use of its session: the sweep leaves its idle time alone."""
        with self._lock:
            live = [(sid, bound) for sid, bound in self._sockets.items() if not bound.ended]
        ended = {id(bound) for _, bound in live if self.load(bound.session_id, use=False) is None}
        if ended:
            self._disconnect(lambda bound: id(bound) in ended)
        return len(ended)

    def _disconnect(self, which: Any) -> None:
        with self._lock:
            ended = [sid for sid, bound in self._sockets.items() if which(bound)]
            for sid in ended:
                self._sockets[sid].ended = True  # an event racing the disconnect is refused too
        for sid in ended:
            self._disconnect_socket(sid)

    def _leave_rooms(self, socket_id: str) -> None:
        server = self.socketio.server
        for room in server.rooms(socket_id, namespace="/"):
            if room != socket_id:
                server.leave_room(socket_id, room, namespace="/")

    def _disconnect_socket(self, socket_id: str, after_seconds: float = 0) -> None:
        if after_seconds:
            self.socketio.sleep(after_seconds)
        try:
            self.socketio.server.disconnect(socket_id, namespace="/")
        except Exception:  # already gone
            log.debug("socket %s was gone before its session ended", socket_id)

    # ---------------------------------------------------------------- Flask's session interface
    def open_session(self, app: Flask, request: Request) -> StoredSession:
        if SOCKETIO_SAVED_SESSION in request.environ:
            return StoredSession()
        cookie = request.cookies.get(self.get_cookie_name(app))
        if cookie is None:
            return StoredSession()
        record = self.load(cookie)
        session = StoredSession(cookie if record else None, record, self.is_admin(record))
        session.had_cookie = True
        if record is not None:
            request.environ[ENVIRON_SESSION_ID] = cookie
        return session

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        if not isinstance(session, StoredSession):
            return
        stored = session
        name = self.get_cookie_name(app)
        domain = self.get_cookie_domain(app)
        path = self.get_cookie_path(app)
        if stored.had_cookie or stored.cookie_change is not None:
            response.vary.add("Cookie")
        if stored.cookie_change:
            response.set_cookie(
                name,
                stored.cookie_change,
                max_age=int(self.lifetime),
                domain=domain,
                path=path,
                httponly=self.get_cookie_httponly(app),
                secure=self.get_cookie_secure(app),
                samesite=self.get_cookie_samesite(app),
            )
        elif stored.cookie_change == "":
            # logged out: the browser forgets it. A cookie whose session ended is NOT cleared: the answer may
            # be a late one to a request sent before a login gave this browser a new id, and clearing "the"
            # cookie would erase the new one (a dead id is refused on every request anyway)
            response.delete_cookie(
                name,
                domain=domain,
                path=path,
                secure=self.get_cookie_secure(app),
                httponly=self.get_cookie_httponly(app),
                samesite=self.get_cookie_samesite(app),
            )


def _current_session() -> StoredSession:
    from flask import session

    current = session._get_current_object()  # type: ignore[attr-defined]
    if not isinstance(current, StoredSession):
        raise RuntimeError("log in and out over HTTP requests only")
    return current


def _session_ended() -> ServerError:
    return ServerError(
        "not_logged_in",
        "Your session ended (logout, expiry or an admin ended it): log in again and reconnect.",
        status=401,
    )


def current_sessions() -> Sessions:
    """The session interface of the current app (installed by :func:`install`)."""
    return cast(Sessions, current_app.session_interface)


def install(app: Flask, settings: Settings, store: Store, socketio: SocketIO) -> Sessions:
    sessions = Sessions(settings, store, str(app.config["SECRET_KEY"]), socketio)
    app.session_interface = sessions
    interval = settings.security.socket_session_check_seconds
    socketio.start_background_task(_sweep_until_stopped, weakref.ref(sessions), sessions.stopped, interval)
    return sessions


def _sweep_until_stopped(sessions: weakref.ref[Sessions], stopped: threading.Event, interval: float) -> None:
    """Sweep the sockets of ``sessions`` every ``interval`` seconds until :meth:`Sessions.stop` (the app's
    ``Services.close``). It holds neither the app nor its Socket.IO server, only a weak reference."""
    while not stopped.wait(interval):
        alive = sessions()
        if alive is None:
            return
        try:
            alive.sweep_sockets()
            alive.sweep_records()
        except Exception:  # a store that does not answer now may answer at the next sweep
            log.warning("could not check the stored sessions", exc_info=True)
        del alive
