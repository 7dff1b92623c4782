"""The pure steps of the table's action pipeline: parse a seat's action once, digest it for idempotency, and
the paced retries of an append that lost a race with another worker."""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from server.game.actions import parse_action
from server.game.errors import GameError

APPLY_RETRY_SECONDS = 2.0
"""How long an action whose append lost a race with another worker keeps being retried (each try after a
catch-up and a backoff). A budget of time, not of tries: a worker that keeps writing the same game (one
client's burst of crafts) wins race after race while the burst lasts, since the loser must catch up before
each try; 8 tries (~0.13 s) could run out within such a burst."""


def race_attempts() -> Iterator[int]:
    """Numbered tries at an action that may lose append races: the first at once, each later one after a
    jittered, doubling wait (up to 1, 2, 4 .. 64 ms, so two workers that keep writing the same game stop
    colliding in lockstep), until APPLY_RETRY_SECONDS have passed."""
    deadline = time.monotonic() + APPLY_RETRY_SECONDS
    attempt = 0
    while True:
        yield attempt
        if time.monotonic() >= deadline:
            return
        time.sleep(random.uniform(0, 0.001 * 2 ** min(attempt, 6)))
        attempt += 1


def parse_player_action(action: Any) -> BaseModel:
    """A seat's action (a client's or a bot's) validated by the engine's action models (a model a policy's
    tools already parsed is taken as it is); a seat may not send what only the server sends (a timeout)."""
    parsed = parse_action(action)
    if parsed.type == "timeout":
        raise GameError(
            "not_allowed",
            "Timeouts are submitted by the server when a deadline expires, not by players.",
        )
    return parsed


def action_digest(seat: int, action: BaseModel) -> str:
    """sha256 of the seat and the validated action: equal for a retry of the same request, whatever its
    spelling (field order, a run amount sent as 0.5 or "0.5")."""
    canonical = json.dumps(
        {"seat": seat, "action": action.model_dump(mode="json")}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
