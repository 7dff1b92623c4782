"""A live game as the table keeps it in memory: its seats, its engine state and what the table tracks.

Every field of a :class:`LiveGame` is guarded by its ``lock``; seat ownership and takeovers live in the store
as ``set_value_if_absent`` claims (atomic across processes) under the keys named here.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from craft_rules.model import RuleSet
from craft_rules.tasks import TaskInstance
from server.game.policy import Policy
from server.game.settings import GameSettings
from server.game.state import Game
from server.store import Store
from server.table.errors import ServerError
from server.table.policy_specs import model_of, policy_name
from server.table.principal import Principal


def seat_claim_key(game_id: str, seat: int) -> str:
    """Store key whose first writer owns the seat (``set_value_if_absent`` is atomic across processes)."""
    return f"seat:{game_id}:{seat}"


#: A claim (a seat holder, a seated name, an action id) whose work has not followed for this long was left
#: by a crash, and may be taken over.
CLAIM_STALE_SECONDS = 30.0


def claim_is_stale(holder: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether a claim (with its time ``at``) is older than :data:`CLAIM_STALE_SECONDS`, or unreadable."""
    at = holder.get("at")
    if not isinstance(at, int | float) or isinstance(at, bool):
        return True
    return (time.time() if now is None else now) - at > CLAIM_STALE_SECONDS


def claim_in_store(
    store: Store, key: str, claim: dict[str, Any], judge: Callable[[dict[str, Any]], bool]
) -> str | None:
    """Claim ``key`` for ``claim`` (a JSON object) with the store's conditional write, across processes: the
    written value when claimed (release it with ``replace_value(key, value, None)``), or None when
    ``judge`` finds the current holder is the caller's own. ``judge(holder)`` sees the claim holding the key
    (``{}`` if unreadable) and answers True to take it over (a crash left it) or False (it is the caller's),
    or raises the refusal. The one "check, then act" of every claim: a seat holder, a seated name, an
    action id."""
    value = json.dumps(claim)
    for _ in range(3):
        if store.replace_value(key, None, value):
            return value
        current = store.get_value(key)
        if current is None:
            continue  # released meanwhile: claim again
        try:
            holder = json.loads(current)
        except ValueError:
            holder = None
        if not judge(holder if isinstance(holder, dict) else {}):
            return None
        if store.replace_value(key, current, value):
            return value
    raise ServerError(
        "conflict", "Requests for the same thing raced each other; send yours again.", status=409
    )


def seated_name_key(game_id: str, name_key: str) -> str:
    """Store key of the seat whose holder's name reads as ``name_key`` (:func:`server.table.names.name_key`),
    claimed before the seat so two look-alike names never both sit, whichever worker serves each (hashed:
    the key is user text)."""
    return f"game:{game_id}:name:{hashlib.sha256(name_key.encode()).hexdigest()[:32]}"


def seat_holder_key(game_id: str, user_id: str) -> str:
    """Store key of the one seat a person (a human principal) holds in a game (``{"seat", "at"}`` JSON),
    claimed with ``replace_value(key, None, ...)`` before the seat itself, so two parallel joins of one person
    never both get a seat, whichever worker process serves them."""
    return f"game:{game_id}:holder:{user_id}"


def waiting_ended_key(game_id: str) -> str:
    """Store key written once when a waiting game stops waiting: ``started``, or why it closed unstarted
    (:data:`CLOSED_UNSTARTED`). The conditional write decides a start racing a cancel or an expiry."""
    return f"game:{game_id}:waiting_ended"


def open_game_key(user_id: str, slot: int) -> str:
    """Store key of one of a user's open-game slots (``limits.open_games_per_user`` of them), claimed by
    the id of a waiting game the user created and released when that game stops waiting."""
    return f"open:{user_id}:{slot}"


#: Why a waiting game closed before it started (its ``abort_reason`` and :func:`waiting_ended_key` value).
CLOSED_UNSTARTED = ("cancelled", "expired", "aborted")

#: Prefix of the :func:`waiting_ended_key` value a player's leave holds while it frees their seat (then the
#: key is emptied again): a start that meets it does not start (a seat is being freed), a close waits for it.
LEAVING_PREFIX = "leaving:"


def leaving_marker(now: float | None = None) -> str:
    """The :func:`waiting_ended_key` value a leave holds for a moment (timed: a crash's goes stale)."""
    return f"{LEAVING_PREFIX}{(time.time() if now is None else now):.3f}"


def leaving_is_stale(value: str, now: float | None = None) -> bool:
    """Whether a leave's marker was left by a crash (older than :data:`CLAIM_STALE_SECONDS`)."""
    try:
        at = float(value[len(LEAVING_PREFIX) :])
    except ValueError:
        return True
    return (time.time() if now is None else now) - at > CLAIM_STALE_SECONDS


def overdue_key(game_id: str, seat: int) -> str:
    """Scheduler key of the watchdog that abandons a bot move past its time limit."""
    return f"botlimit:{game_id}:{seat}"


def takeover_key(game_id: str, seat: int) -> str:
    """Store key set once when an idle seat is handed to a built-in bot for the rest of the game."""
    return f"takeover:{game_id}:{seat}"


@dataclass
class SeatState:
    """Who sits where. ``accepts`` is what the seat was created for; the rest is filled by a claim."""

    seat: int
    accepts: str  # open | human | agent | bot
    kind: str | None = None  # human | agent | bot, once taken
    name: str | None = None
    user_id: str | None = None
    bot: str | None = None
    takeover: str | None = None  # built-in bot playing for an idle human/agent

    @property
    def taken(self) -> bool:
        return self.kind is not None

    @property
    def bot_controlled(self) -> bool:
        return self.kind == "bot" or self.takeover is not None

    def record(self) -> dict[str, Any]:
        """The seat as stored in the game's metadata (server.store.base.SeatRecord + our extra keys); an LLM
        seat's model is recorded on its own too, so exports list it among the game's models."""
        record = {
            "seat": self.seat,
            "accepts": self.accepts,
            "kind": self.kind,
            "name": self.name,
            "user_id": self.user_id,
            "bot": self.bot,
            "takeover": self.takeover,
        }
        if self.bot and policy_name(self.bot) == "llm" and model_of(self.bot):
            record["model"] = model_of(self.bot)
        return record

    def public(self, online: bool | None = None) -> dict[str, Any]:
        """The seat as everyone may see it (no user id); ``online`` only where presence is known."""
        record = {
            "seat": self.seat,
            "accepts": self.accepts,
            "kind": self.kind,
            "name": self.name,
            "bot": self.bot or self.takeover,
            "taken": self.taken,
        }
        if online is not None:
            record["online"] = online or self.bot_controlled
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SeatState:
        return cls(
            seat=int(record["seat"]),
            accepts=str(record.get("accepts") or record.get("kind") or "open"),
            kind=record.get("kind") if record.get("user_id") or record.get("kind") == "bot" else None,
            name=record.get("name"),
            user_id=record.get("user_id"),
            bot=record.get("bot"),
            takeover=record.get("takeover"),
        )


@dataclass
class LiveGame:
    """One game in memory. Every field is guarded by ``lock``."""

    game_id: str
    meta: dict[str, Any]
    settings: GameSettings
    instance: TaskInstance
    rules: RuleSet
    seed: int
    seats: list[SeatState]
    game: Game | None = None
    records: list[dict[str, Any]] = field(default_factory=list)  # stored events, parallel to game.events
    lock: threading.RLock = field(default_factory=threading.RLock)
    online: dict[int, int] = field(default_factory=dict)  # seat -> open connections in this process
    bot_failures: dict[int, int] = field(default_factory=dict)  # failed attempts at the seat's current move
    bot_refused: dict[int, int] = field(default_factory=dict)  # failed bot attempts, all moves together
    bot_overdue: dict[int, int] = field(default_factory=dict)  # moves abandoned past the time limit
    policies: dict[int, LivePolicy] = field(default_factory=dict)  # bot seat -> its live policy
    fallbacks: set[int] = field(default_factory=set)  # bot seats whose overdue move the fallback is playing
    refusals: dict[int, dict[str, Any]] = field(
        default_factory=dict
    )  # bot seat -> why its answer was refused
    deadline: float | None = None
    # seat (None = spectator) -> (last_seq, view): a view is a pure function of the log, so each change
    # computes each seat's view at most once for the ack and every push
    views: dict[int | None, tuple[int, dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    @property
    def last_seq(self) -> int:
        return self.records[-1]["seq"] if self.records else -1

    @property
    def status(self) -> str:
        return str(self.meta.get("status", "waiting"))

    def seats_of(self, principal: Principal) -> list[int]:
        return [s.seat for s in self.seats if s.user_id is not None and s.user_id == principal.id]

    def public_seats(self) -> list[dict[str, Any]]:
        return [s.public(self.online.get(s.seat, 0) > 0) for s in self.seats]


def phase_anchor(records: list[dict[str, Any]], phase: str) -> float | None:
    """Server time at which the current phase began (a decision starts with the private ``proposed``)."""
    for record in reversed(records):
        kind = record.get("type")
        if phase == "trade_decide" and kind == "proposed":
            return float(record["time"])
        if kind == "phase_started" and record.get("payload", {}).get("phase") == phase:
            return float(record["time"])
    return float(records[-1]["time"]) if records else None


# ------------------------------------------------------------------------------------------- bot seats
@dataclass
class LivePolicy:
    """A seat's policy as the server keeps it between moves (guarded by the game's lock, except ``policy``
    itself, which only the thread deciding the seat's move in flight touches).

    ``delivered`` counts the game's events already looked at for this seat and ``observed`` the seat's own
    events handed to ``observe`` (the ``n`` of the next one), so each is handed over exactly once, in order.
    """

    spec: str
    seed: int
    policy: Policy | None = None  # built on the bot executor at its first move
    delivered: int = 0
    observed: int = 0
    in_flight: BotMove | None = None


@dataclass
class BotMove:
    """One decision handed to the bot executor: everything the policy may see, copied under the lock."""

    game_id: str
    seat: int
    spec: str
    move_key: str
    attempt: int
    seed: int
    view: dict[str, Any]
    legal: list[str]
    events: list[dict[str, Any]]  # the seat's new viewer events (its whole log for a new policy)
    live: LivePolicy | None  # None: a retry's one-move policy, built and dropped with the move
    submitted: float
    refusal: dict[str, Any] | None = None  # the engine's error for the policy's last answer, told first
    abandoned: threading.Event = field(default_factory=threading.Event)
    thread: int | None = None  # the worker thread's ident while it decides
