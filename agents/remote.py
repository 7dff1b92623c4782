"""Remote connections: one seat of a game on a running server, over the browser's Socket.IO protocol.

:class:`RemoteConnection` is a python-socketio *client* that logs in with an API token (Socket.IO auth
payload ``{"token": ...}``) or a person's session cookie, ``join``\\ s the game and keeps what the server
pushes. It speaks only the protocol (``docs/protocol.md``) and never imports the web layer.

What it does for its user:

- **Events, once each and in order.** Pushes and acks may interleave (§4): every event is kept by its
  number ``n`` in the seat's log (a duplicate is dropped), :meth:`events` hands them out in ``n`` order
  without gaps, and a gap (pushes missed while disconnected) is filled with the ``events`` request. The
  current envelope is the one with the highest ``log_size`` (a later one wins a tie).
- **Idempotent actions.** Every action carries a ``client_action_id`` (a random prefix per connection
  plus a counter); when the answer is lost with the socket, the same action goes out again with the same
  id after reconnecting, and the server answers it from its record instead of applying it twice (§5).
- **Reconnecting by itself.** A dropped socket (noticed at once through the ``disconnect`` event, or
  when a request's answer does not come within ``timeout``) is replaced by a new connection with the same
  credentials, with backoff and jitter, for up to ``reconnect_timeout`` seconds; ``join`` restores the
  seat and its whole history (§6), and the request that was cut off is sent again.

A failure the connection cannot heal (a refused token, a seat someone else holds, the server gone for
longer than ``reconnect_timeout``) raises :class:`~agents.connection.ConnectionFailed` with the server's
code. Refused actions and queries are ordinary answers (``{"ok": false, "error": ...}``), never raised.
"""

from __future__ import annotations

import json
import logging
import random
import secrets
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import socketio
from pydantic import BaseModel

from agents.connection import ConnectionFailed, oversized
from server.table.log_text import log_text

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 15.0
"""Seconds a request waits for its answer before the socket is presumed dead and replaced."""
DEFAULT_RECONNECT_TIMEOUT = 60.0
TRACES_PER_REQUEST = 50
"""Trace records per ``trace`` request (the server's limit)."""
TRACE_REQUEST_BYTES = 500_000
"""Bytes of trace records per request, below the server's default message limit (1 MB)."""
"""Seconds a request keeps trying to reconnect before it gives up with ``connection_lost``."""
POLL_SECONDS = 2.0
"""While waiting for its turn with no push arriving, the connection re-reads the view this often (a
guard against a lost push; each re-read is one small request)."""
SERVER_REFUSALS_THAT_END = {
    "invalid_token",
    "not_logged_in",
    "unknown_game",
    "game_full",
    "seat_taken",
    "seat_kind",
    "not_your_seat",
    "invalid_request",
}
"""Codes of a refused connect or join that no reconnection can change."""


class _Lost(Exception):
    """The socket went away (or stopped answering) while a request was out."""


class RemoteConnection:
    """One seat of game ``game_id`` on the server at ``url``: a :class:`~agents.connection.SeatConnection`.

    Give ``token`` (an API token, ``tc_...``) or ``cookie`` (a person's ``tradecraft_session=...`` cookie,
    see :func:`login_cookie`). ``seat`` picks a seat to join (default: the one the server gives, or the one
    already held). Use it as a context manager, or call :meth:`connect` and :meth:`close`.
    """

    def __init__(
        self,
        url: str,
        game_id: str,
        *,
        token: str | None = None,
        cookie: str | None = None,
        seat: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        reconnect_timeout: float = DEFAULT_RECONNECT_TIMEOUT,
        transports: tuple[str, ...] = ("websocket",),
    ) -> None:
        self.url = url.rstrip("/")
        self.game_id = game_id
        self._token = token
        self._cookie = cookie
        self._wanted_seat = seat
        self.timeout = timeout
        self.reconnect_timeout = reconnect_timeout
        self.transports = list(transports)
        self._cond = threading.Condition()
        self._reconnect_lock = threading.Lock()
        self._client: socketio.Client | None = None
        self._connected = False
        self._joined = False
        self._connect_error: dict[str, Any] | None = None
        self._log: dict[int, dict[str, Any]] = {}
        self._cursor = 0  # the next event number events() hands out
        self._envelope: dict[str, Any] | None = None
        self._changes = 0  # bumped by every absorbed answer or push (wakes wait_for_turn)
        self._action_prefix = secrets.token_hex(6)
        self._action_counter = 0
        self.reconnects = 0
        """How many times the socket was replaced after the first connection (for logs and tests)."""
        self.closed = False

    # ---------------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> RemoteConnection:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> RemoteConnection:
        """Open the socket and join the seat (raises :class:`ConnectionFailed` if that cannot be done)."""
        self._reconnect(time.monotonic() + self.reconnect_timeout, first=True)
        return self

    def close(self) -> None:
        """Leave: disconnect the socket (the seat stays yours; join again to come back)."""
        self.closed = True
        client, self._client = self._client, None
        with self._cond:
            self._connected = self._joined = False
            self._cond.notify_all()
        if client is not None:
            _disconnect_quietly(client)

    @property
    def connected(self) -> bool:
        """Whether a socket is open and the seat joined on it now."""
        return self._connected and self._joined

    # ---------------------------------------------------------------------------- SeatConnection
    @property
    def seat(self) -> int:
        with self._cond:
            if self._envelope is None or self._envelope.get("seat") is None:
                raise ConnectionFailed(
                    "not_connected", "Call connect() first: the seat is known once joined."
                )
            return int(self._envelope["seat"])

    @property
    def finished(self) -> bool:
        with self._cond:
            return _finished(self._envelope)

    @property
    def status(self) -> str | None:
        """The game's status as last heard: ``waiting``, ``running``, ``finished`` or ``aborted``."""
        with self._cond:
            return None if self._envelope is None else self._envelope.get("status")

    def envelope(self) -> dict[str, Any]:
        """The newest envelope received (§1), without its events."""
        with self._cond:
            if self._envelope is None:
                raise ConnectionFailed("not_connected", "Call connect() first.")
            return dict(self._envelope)

    def view(self) -> dict[str, Any]:
        with self._cond:
            view = None if self._envelope is None else self._envelope.get("view")
        if view is None:
            self.refresh()
            with self._cond:
                view = None if self._envelope is None else self._envelope.get("view")
        if view is None:
            raise ConnectionFailed(
                "not_started", "The game has not started yet (seats are free); wait_for_turn() waits for it."
            )
        return view

    def refresh(self) -> dict[str, Any]:
        """Ask the server for the seat's envelope now (the ``view`` request); returns the newest one."""
        answer = self._request("view", {"game_id": self.game_id, "seat": self._seat_or_none()})
        if answer.get("ok"):
            self._absorb(answer)
        return self.envelope()

    def events(self) -> list[dict[str, Any]]:
        with self._cond:
            size = self._log_size()
            missing = self._cursor < size and self._cursor not in self._log
        if missing:
            self._fill_gap()
        with self._cond:
            out = []
            while self._cursor in self._log:
                out.append(self._log.pop(self._cursor))  # handed out once; later copies are dropped
                self._cursor += 1
            return out

    def act(self, action: dict[str, Any] | str | BaseModel) -> dict[str, Any]:
        if isinstance(action, BaseModel):  # a model a policy's tools parsed: the wire carries its JSON
            action = action.model_dump(mode="json")
        too_large = oversized(action, "action")
        if too_large is not None:
            return too_large
        with self._cond:
            self._action_counter += 1
            action_id = f"{self._action_prefix}-{self._action_counter}"
        data = {
            "game_id": self.game_id,
            "action": action,
            "seat": self._seat_or_none(),
            "client_action_id": action_id,
        }
        answer = self._request("act", data)  # resent with the same id after a reconnect: applied once
        if answer.get("ok"):
            self._absorb(answer)
        return answer

    def query(self, query: dict[str, Any] | str) -> dict[str, Any]:
        too_large = oversized(query, "query")
        if too_large is not None:
            return too_large
        return self._request("query", {"game_id": self.game_id, "query": query, "seat": self._seat_or_none()})

    def record_traces(self, traces: list[dict[str, Any]], event_n: int | None = None) -> dict[str, Any]:
        """Keep ``traces`` (what led to a move) with the game on the server, for researchers: sent in
        requests the server accepts (at most :data:`TRACES_PER_REQUEST` records and
        :data:`TRACE_REQUEST_BYTES` bytes each); ``event_n`` is the first event the move produced in this
        seat's log. Only agents with an API token may; the answer counts what was ``stored``."""
        if self._token is None:
            return {
                "ok": False,
                "error": {
                    "code": "not_an_agent",
                    "message": "Trace records need an API token; a person's connection keeps none.",
                    "details": {},
                },
            }
        stored = dropped = 0
        batch: list[dict[str, Any]] = []
        size = 0

        def send() -> dict[str, Any]:
            data = {
                "game_id": self.game_id,
                "traces": batch,
                "seat": self._seat_or_none(),
                "event_n": event_n,
                "batch_id": secrets.token_hex(8),  # a batch resent after a reconnect counts once
            }
            return self._request("trace", data)

        for record in traces:
            record_bytes = len(json.dumps(record, ensure_ascii=False, default=str).encode())
            if record_bytes > TRACE_REQUEST_BYTES:
                log.warning(
                    "game %s: a trace record of %d bytes is too large to send",
                    log_text(self.game_id),
                    record_bytes,
                )
                dropped += 1
                continue
            if batch and (len(batch) >= TRACES_PER_REQUEST or size + record_bytes > TRACE_REQUEST_BYTES):
                answer = send()
                if not answer.get("ok"):
                    return answer
                stored, dropped = stored + answer["stored"], dropped + answer["dropped"]
                batch, size = [], 0
            batch.append(record)
            size += record_bytes
        if batch:
            answer = send()
            if not answer.get("ok"):
                return answer
            stored, dropped = stored + answer["stored"], dropped + answer["dropped"]
        return {"ok": True, "stored": stored, "dropped": dropped}

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                if _finished(self._envelope) or _your_turn(self._envelope):
                    return True
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                if self._connected and self._joined:
                    seen = self._changes
                    wait = POLL_SECONDS if remaining is None else min(POLL_SECONDS, remaining)
                    self._cond.wait_for(lambda seen=seen: self._changes != seen or not self._connected, wait)
                    if self._changes != seen:
                        continue
                    if not self._connected:
                        continue  # reconnect below on the next round
            if self.closed:
                raise ConnectionFailed("closed", "The connection was closed; make a new one to play on.")
            if not (self._connected and self._joined):
                self._reconnect(time.monotonic() + self.reconnect_timeout)
            else:
                self.refresh()  # no push for a while: make sure none was lost

    # ------------------------------------------------------------------------------ plumbing
    def _seat_or_none(self) -> int | None:
        with self._cond:
            if self._envelope is not None and self._envelope.get("seat") is not None:
                return int(self._envelope["seat"])
        return self._wanted_seat

    def _log_size(self) -> int:
        return int(self._envelope.get("log_size") or 0) if self._envelope else 0

    def _absorb(self, answer: dict[str, Any]) -> None:
        """Keep an answer's or a push's events (once each, by ``n``) and its envelope if it is the newest."""
        if answer.get("game_id") != self.game_id:
            return
        with self._cond:
            for event in answer.get("events") or []:
                n = event.get("n")
                if isinstance(n, int) and n >= self._cursor:
                    self._log.setdefault(n, event)
            if "log_size" in answer and (
                self._envelope is None or answer["log_size"] >= self._envelope.get("log_size", 0)
            ):
                self._envelope = {k: v for k, v in answer.items() if k not in ("ok", "events")}
            self._changes += 1
            self._cond.notify_all()

    def _on_seats(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict) or data.get("game_id") != self.game_id:
            return
        with self._cond:
            if self._envelope is not None:
                self._envelope = {**self._envelope, "status": data.get("status"), "seats": data.get("seats")}
            self._changes += 1
            self._cond.notify_all()

    def _fill_gap(self) -> None:
        answer = self._request(
            "events", {"game_id": self.game_id, "after": self._cursor - 1, "seat": self._seat_or_none()}
        )
        if answer.get("ok"):
            self._absorb({"game_id": self.game_id, "events": answer.get("events")})

    def _request(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its answer, reconnecting and resending as often as needed
        within ``reconnect_timeout``."""
        deadline = time.monotonic() + self.reconnect_timeout
        while True:
            if self.closed:
                raise ConnectionFailed("closed", "The connection was closed; make a new one to play on.")
            if not (self._connected and self._joined):
                self._reconnect(deadline)
            client = self._client
            try:
                answer = self._send(client, event, data)
            except _Lost:
                log.info("game %s: the socket dropped during %r; reconnecting", log_text(self.game_id), event)
                self._drop(client)
                if time.monotonic() >= deadline:
                    raise ConnectionFailed(
                        "connection_lost",
                        f"No answer from {self.url} for {self.reconnect_timeout:.0f} s; check that the "
                        "server runs, then connect again (your seat is kept).",
                    ) from None
                continue
            pause = retry_pause(answer)
            if pause is None or time.monotonic() + pause >= deadline:
                return answer
            time.sleep(pause)  # the same request again: a busy server's answer, not a refusal of the move

    def _send(self, client: socketio.Client | None, event: str, data: dict[str, Any]) -> dict[str, Any]:
        if client is None:
            raise _Lost
        box: list[Any] = []

        def answered(*args: Any) -> None:
            with self._cond:
                box.append(args[0] if args else None)
                self._cond.notify_all()

        try:
            client.emit(event, data, callback=answered)
        except (socketio.exceptions.SocketIOError, OSError) as err:
            raise _Lost from err
        deadline = time.monotonic() + self.timeout
        with self._cond:
            while not box:
                if self._client is not client or not self._connected:
                    raise _Lost
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Lost  # a socket that stops answering is as good as gone
                self._cond.wait(min(remaining, 0.5))
        answer = box[0]
        if not isinstance(answer, dict):
            raise ConnectionFailed("invalid_answer", f"The server answered {event!r} with {answer!r}.")
        return answer

    def _drop(self, client: socketio.Client | None) -> None:
        with self._cond:
            if self._client is client:
                self._connected = self._joined = False
                self._cond.notify_all()
        if client is not None:
            _disconnect_quietly(client)

    def _reconnect(self, deadline: float, first: bool = False) -> None:
        """A new socket with the same credentials, joined to the seat; backoff with jitter between tries."""
        with self._reconnect_lock:
            if self._connected and self._joined:
                return  # another thread did it meanwhile
            delay = 0.05
            while True:
                if self.closed and not first:
                    raise ConnectionFailed("closed", "The connection was closed; make a new one to play on.")
                try:
                    self._open_and_join()
                    if not first:
                        self.reconnects += 1
                        log.info(
                            "game %s: reconnected and rejoined seat %s", log_text(self.game_id), self.seat
                        )
                    return
                except _Lost:
                    pass
                if time.monotonic() + delay >= deadline:
                    raise ConnectionFailed(
                        "connection_lost",
                        f"Could not reach {self.url} for {self.reconnect_timeout:.0f} s; check that the "
                        "server runs and the URL is right, then connect again (your seat is kept).",
                    )
                time.sleep(
                    delay * (0.5 + random.random())
                )  # jitter: clients of one crashed server spread out
                delay = min(delay * 2, 2.0)

    def _open_and_join(self) -> None:
        old = self._client
        if old is not None:
            self._client = None
            _disconnect_quietly(old)
        client = socketio.Client(reconnection=False)  # this class reconnects itself (and rejoins)
        self._connect_error = None
        client.on("connect", lambda: self._on_connect(client))
        client.on("disconnect", lambda *reason: self._on_disconnect(client))
        client.on("connect_error", lambda data=None: self._on_connect_error(data))
        client.on("update", lambda data: self._absorb(data) if isinstance(data, dict) else None)
        client.on("seats", self._on_seats)
        headers = {"Cookie": self._cookie} if self._cookie else {}
        auth = {"token": self._token} if self._token else None
        self._client = client
        try:
            client.connect(
                self.url, headers=headers, auth=auth, transports=self.transports, wait_timeout=self.timeout
            )
        except socketio.exceptions.ConnectionError as err:
            self._client = None
            refused = (
                (self._connect_error or {}).get("data") if isinstance(self._connect_error, dict) else None
            )
            if isinstance(refused, dict) and refused.get("code"):
                raise ConnectionFailed(
                    refused["code"], refused.get("message", str(err)), refused.get("details")
                ) from None
            raise _Lost from err
        with self._cond:
            self._connected = client.connected
        answer = self._send(client, "join", {"game_id": self.game_id, "seat": self._wanted_seat_for_join()})
        if not answer.get("ok"):
            error = answer.get("error") or {}
            code = error.get("code", "join_failed")
            if code in SERVER_REFUSALS_THAT_END or not self._envelope:
                self._client = None
                _disconnect_quietly(client)
                raise ConnectionFailed(
                    code, error.get("message", "The server refused to seat you."), error.get("details")
                )
            raise _Lost
        self._absorb(answer)
        with self._cond:
            self._joined = True
            self._cond.notify_all()

    def _wanted_seat_for_join(self) -> int | None:
        with self._cond:
            if self._envelope is not None and self._envelope.get("seat") is not None:
                return int(self._envelope["seat"])  # rejoin exactly the seat held
        return self._wanted_seat

    def _on_connect(self, client: socketio.Client) -> None:
        with self._cond:
            if self._client is client:
                self._connected = True
                self._cond.notify_all()

    def _on_disconnect(self, client: socketio.Client) -> None:
        with self._cond:
            if self._client is client:
                self._connected = self._joined = False
                self._cond.notify_all()

    def _on_connect_error(self, data: Any) -> None:
        self._connect_error = data if isinstance(data, dict) else {"message": str(data)}


def _finished(envelope: dict[str, Any] | None) -> bool:
    if envelope is None:
        return False
    if envelope.get("status") in ("finished", "aborted"):
        return True
    view = envelope.get("view")
    return bool(view and view.get("finished"))


def _your_turn(envelope: dict[str, Any] | None) -> bool:
    view = None if envelope is None else envelope.get("view")
    return bool(view and view.get("your_turn") and envelope and envelope.get("status") == "running")


def _disconnect_quietly(client: socketio.Client) -> None:
    """Close a socket without waiting: websocket-client may block up to 3 s for a close frame from a
    server that already let go, so the wait happens on a daemon thread."""

    def close() -> None:
        try:
            client.disconnect()
        except Exception:  # a socket that is already dead has nothing left to close
            log.debug("closing a dropped socket failed", exc_info=True)

    threading.Thread(target=close, daemon=True).start()


def login_cookie(url: str, name: str, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Log a person in by display name (``POST /api/login``); the ``Cookie`` header value to connect with."""
    request = urllib.request.Request(
        url.rstrip("/") + "/api/login",
        data=json.dumps({"name": name}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            cookies = response.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as err:
        body = json.loads(err.read() or b"{}")
        error = body.get("error") or {}
        raise ConnectionFailed(error.get("code", "login_failed"), error.get("message", str(err))) from None
    except OSError as err:
        raise ConnectionFailed("connection_lost", f"Could not reach {url}: {err}.") from None
    pairs = [c.split(";", 1)[0] for c in cookies]
    if not pairs:
        raise ConnectionFailed("login_failed", f"{url} answered the login without a session cookie.")
    return "; ".join(pairs)


#: Answers that mean "the same request again, in a moment" and how long to wait (seconds) when the server
#: gives no ``retry_after``: an action id another server process is still applying, a rate limit.
RETRYABLE_CODES = {"action_in_progress": 0.2, "rate_limited": 1.0, "too_many_queries": 0.2}


def retry_pause(answer: dict[str, Any]) -> float | None:
    """Seconds to wait before resending the request ``answer`` refused for now, or None (a final answer)."""
    error = answer.get("error") if not answer.get("ok") else None
    code = error.get("code") if isinstance(error, dict) else None
    if code not in RETRYABLE_CODES:
        return None
    details = error.get("details") if isinstance(error, dict) else None
    retry_after = details.get("retry_after") if isinstance(details, dict) else None
    if isinstance(retry_after, int | float) and not isinstance(retry_after, bool) and 0 < retry_after <= 60:
        return float(retry_after)
    return RETRYABLE_CODES[code]
