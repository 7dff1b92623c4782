"""One seat's connection to a game: what environments, LangChain tools and LLM agents play through.

Two implementations share it: a local one that drives :mod:`server.game` in-process, and a remote one that
speaks the server's Socket.IO protocol (``docs/protocol.md``) with an API token, exactly as a browser does.
Everything above this interface (tools, agents, environments) is therefore the same locally and remotely.

Answers have the protocol's one shape (``docs/protocol.md`` §1): ``{"ok": true, ...}`` or
``{"ok": false, "error": {"code", "message", "details"}}``; a refused action or query changes nothing.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


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

    def act(self, action: dict[str, Any]) -> dict[str, Any]:
        """Send one action (an :data:`~server.game.actions.ACTION_MODELS` object); the typed answer."""
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
