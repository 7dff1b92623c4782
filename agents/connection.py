"""One seat's connection to a game: what environments, LangChain tools and LLM agents play through.

Two implementations share it: a local one that drives :mod:`server.game` in-process, and a remote one that
speaks the server's Socket.IO protocol (``docs/protocol.md``) with an API token, exactly as a browser does.
Everything above this interface (tools, agents, environments) is therefore the same locally and remotely.

Answers have the protocol's one shape (``docs/protocol.md`` §1): ``{"ok": true, ...}`` or
``{"ok": false, "error": {"code", "message", "details"}}``; a refused action or query changes nothing.
"""

from __future__ import annotations

import json
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from craft_rules.errors import TradeCraftError

MAX_ACTION_BYTES = 16 * 1024
"""Largest action or query (as compact JSON) a connection sends; the server's default
``server.max_action_bytes``, checked before anything else so a local game refuses what a server would."""


@runtime_checkable
class SeatConnection(Protocol):
    """What a player at one seat can see and do; the same locally and over the network."""

    @property
    def seat(self) -> int:
        """The seat this connection plays (0-based)."""
        ...

    def view(self) -> dict[str, Any]:
        """The seat's current player view (``PlayerView`` in :mod:`server.game.schemas`)."""
        ...

    def events(self) -> list[dict[str, Any]]:
        """The seat's viewer-log events (``{"n", "type", "actor", "payload", "visibility", "time"?}``) that
        arrived since the last call, in ``n`` order, each exactly once."""
        ...

    def act(self, action: dict[str, Any] | BaseModel) -> dict[str, Any]:
        """Send one action (an :data:`~server.game.actions.ACTION_MODELS` object as JSON, or an action
        model the engine's parser already made, which is not parsed again in-process); the typed answer."""
        ...

    def query(self, query: dict[str, Any]) -> dict[str, Any]:
        """Ask one in-phase query (a :data:`~server.game.queries.QUERY_MODELS` object); ``{"ok": true,
        "answer": ...}`` or a typed error."""
        ...

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        """Block until this seat is awaited (``view()["your_turn"]``) or the game ended; False on timeout."""
        ...

    @property
    def finished(self) -> bool:
        """Whether the game has ended."""
        ...


class ConnectionFailed(TradeCraftError):
    """The connection itself failed (not a refused action, which is an answer): the server cannot be
    reached or refuses the login or the seat. ``code`` is machine-readable (the server's code when it
    sent one, e.g. ``invalid_token``, ``game_full``; ``connection_lost`` when the network stayed down),
    ``message`` says what to do."""


def refusal(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The protocol's refused answer: ``{"ok": false, "error": {"code", "message", "details"}}``."""
    return {"ok": False, "error": {"code": code, "message": message, "details": dict(details or {})}}


def oversized(payload: Any, what: str) -> dict[str, Any] | None:
    """``payload_too_large`` when ``payload`` (a dict or JSON text) exceeds :data:`MAX_ACTION_BYTES`; never
    for a parsed model (its parse was bounded: the parser read JSON of at most that size)."""
    if isinstance(payload, BaseModel):
        return None
    try:
        size = len(payload.encode()) if isinstance(payload, str) else len(json.dumps(payload, default=str))
    except (TypeError, ValueError):
        return None  # not JSON at all: validation refuses it with its own code
    if size <= MAX_ACTION_BYTES:
        return None
    return refusal(
        "payload_too_large",
        f"The {what} is {size} bytes; at most {MAX_ACTION_BYTES} are accepted. Send a smaller one.",
        {"limit": MAX_ACTION_BYTES, "size": size},
    )
