"""Ratings and play histories from finished games (docs/ratings.md has the rules for players).

When a game finishes, :func:`record_finished_game` turns it into a :class:`GameResult` (who sat, who won,
who resigned, the points) and settles it exactly once, whichever worker process saw the finish and however
many did:

1. the result is parked under :func:`pending_key` (``set_value_if_absent``: the first writer's copy stays);
2. under the one ratings lock (a store claim, :data:`RATINGS_LOCK_KEY`) each pending result not yet marked
   done (:func:`settled_key`) is rated: the players' current ratings are read, OpenSkill's Plackett-Luce
   model gives the new ones, and the whole write set (new ratings, history entries, the done mark) is first
   written into the lock's own value as a journal, then applied, then the pending copy is removed;
3. a process that finds the lock left by a crash (older than ``CLAIM_STALE_SECONDS``) re-applies the
   journal it holds (absolute values computed under the lock, so applying twice changes nothing) before
   it rates anything itself.

Who is rated: every human user (``user:<id>``), every built-in bot spec and LLM seat spec (``bot:<spec>``)
and every API-token agent (``agent:<token id>``). A seat an idle person left to a bot counts for the person.

Ranks (lower is better; OpenSkill takes ties): winners 0, the other seats still playing 1, resigned seats 2;
so a sole win puts the winner above everyone else, a shared win puts the sharers together on top, and a game
without a winner is a draw among the seats that played it out, above those that resigned. A player holding
several seats of one game (two seats of the same bot spec) is rated once, at its best seat's rank; a game
with fewer than two distinct players is not rated (nothing to compare). Games are rated only when their hall
says ``rated`` (study and paper halls do not) and never when they did not come from a hall (experiment
runner games), unless their metadata carries ``rated: true`` itself.

No Flask here: the web layer reads the stored values (:func:`leaderboard`, :func:`history_page`).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openskill.models import PlackettLuce

from server.game.state import Game
from server.store import Store
from server.table.config import Settings
from server.table.live import claim_is_stale
from server.table.model_catalog import public_spec
from server.table.policy_specs import policy_name

log = logging.getLogger(__name__)

PlayerKind = Literal["human", "bot", "llm", "agent"]

RATING_PREFIX = "rating:"
HISTORY_PREFIX = "history:"
PENDING_PREFIX = "ratings:pending:"
RATINGS_LOCK_KEY = "ratings:lock"

#: Pending results one finished game settles besides its own (older ones left by a crash or a busy lock).
PENDING_PER_SETTLE = 8
#: How long a finish waits for the ratings lock before leaving its result pending for the next one.
LOCK_WAIT_SECONDS = 2.0
#: History entries keep this many opponents' names (halls seat at most 8 players).
MAX_OPPONENTS = 8
#: Rated players the leaderboard reads at most (one store read each, cached for CACHE_SECONDS).
MAX_LEADERBOARD_PLAYERS = 5000
LEADERBOARD_CACHE_SECONDS = 5.0
#: Sort key offset making newer history entries sort first (list_keys pages in ascending key order).
_TIME_FLIP = 10**13

MODEL = PlackettLuce()


@dataclass(frozen=True)
class Participant:
    """One rated player of one game: its best seat, rank and result."""

    key: str  # rating key suffix: user:<id>, bot:<spec>, agent:<token id>
    name: str
    kind: PlayerKind
    seat: int
    rank: int
    won: bool
    resigned: bool
    points: int | None
    user_id: str | None  # a human's user id: their history is kept under it
    # the name the seat played under, as the other people saw it (a hall's named partner, e.g. the practice's
    # "Sam"): their histories show it; the leaderboard keeps ``name``
    seat_name: str | None = None


def player_identity(seat: Mapping[str, Any]) -> tuple[str, PlayerKind, str | None] | None:
    """``(key, kind, user_id)`` of the player a stored seat record stands for, or None (an empty seat)."""
    user_id = seat.get("user_id")
    bot = seat.get("bot")
    if isinstance(user_id, str) and user_id:
        if user_id.startswith("token:"):
            return "agent:" + user_id.removeprefix("token:"), "agent", None
        return "user:" + user_id, "human", user_id
    if seat.get("kind") == "bot" and isinstance(bot, str) and bot:
        return "bot:" + bot, "llm" if policy_name(bot) == "llm" else "bot", None
    return None


BotNamer = Callable[[str], str]
"""``name(spec)``: the name a bot seat playing ``spec`` gets (``BotRegistry.seat_name``, the one rule)."""


def _player_name(seat: Mapping[str, Any], kind: PlayerKind, bot_name: BotNamer | None) -> str:
    """The name a player is listed under: a person's or an agent's own name; a bot's by ``bot_name`` (the
    lobby's rule, so a seat name a game's creator chose never renames the bot on the leaderboard), or
    without one by the seat's recorded name (the lobby gave it by the same rule)."""
    if kind in ("bot", "llm") and bot_name is not None:
        return bot_name(str(seat.get("bot")))
    return str(seat.get("name") or "?")


def ranks(winners: Sequence[int], active: Sequence[int], seats: int) -> list[int]:
    """Each seat's rank (0 best): winners 0, the others still active 1, resigned 2; renumbered so the
    best rank present is 0 (a game without a winner is then a draw among the active seats)."""
    raw = [0 if s in winners else 1 if s in active else 2 for s in range(seats)]
    present = sorted(set(raw))
    return [present.index(r) for r in raw]


def participants(
    seat_records: Sequence[Mapping[str, Any]],
    winners: Sequence[int],
    active: Sequence[int],
    scores: Sequence[int] | None,
    bot_name: BotNamer | None = None,
) -> list[Participant]:
    """The distinct players of a finished game, each at its best seat (see the module's text)."""
    seat_ranks = ranks(winners, active, len(seat_records))
    best: dict[str, Participant] = {}
    for index, record in enumerate(seat_records):
        identity = player_identity(record)
        if identity is None:
            continue
        key, kind, user_id = identity
        candidate = Participant(
            key=key,
            name=_player_name(record, kind, bot_name),
            kind=kind,
            seat=index,
            rank=seat_ranks[index],
            won=index in winners,
            resigned=index not in active,
            points=int(scores[index]) if scores is not None and index < len(scores) else None,
            user_id=user_id,
            seat_name=str(record["name"]) if isinstance(record.get("name"), str) and record["name"] else None,
        )
        held = best.get(key)
        if held is None or candidate.rank < held.rank:
            best[key] = candidate
    return list(best.values())


def hall_rated(meta: Mapping[str, Any], hall_rated_setting: Callable[[str], bool | None]) -> bool:
    """Whether a finished game counts for ratings: its own ``rated`` flag when it has one, else its hall's
    setting; a game from no known hall (an experiment runner's) is unrated."""
    own = meta.get("rated")
    if isinstance(own, bool):
        return own
    hall = meta.get("hall")
    setting = hall_rated_setting(hall) if isinstance(hall, str) else None
    return bool(setting)


@dataclass(frozen=True)
class GameResult:
    """What settling a finished game needs, JSON-safe: parked in the store until it is settled."""

    game_id: str
    rated: bool
    hall: str | None
    title: str | None
    finished_at: float
    players: list[Participant]

    def to_json(self) -> str:
        return json.dumps(
            {
                "game_id": self.game_id,
                "rated": self.rated,
                "hall": self.hall,
                "title": self.title,
                "finished_at": self.finished_at,
                "players": [p.__dict__ for p in self.players],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> GameResult:
        data = json.loads(text)
        return cls(
            game_id=data["game_id"],
            rated=bool(data["rated"]),
            hall=data.get("hall"),
            title=data.get("title"),
            finished_at=float(data["finished_at"]),
            players=[Participant(**p) for p in data["players"]],
        )


def game_result(
    meta: Mapping[str, Any],
    seat_records: Sequence[Mapping[str, Any]],
    winners: Sequence[int],
    active: Sequence[int],
    scores: Sequence[int] | None,
    hall_rated_setting: Callable[[str], bool | None],
    finished_at: float,
    bot_name: BotNamer | None = None,
) -> GameResult:
    players = participants(seat_records, winners, active, scores, bot_name)
    return GameResult(
        game_id=str(meta["game_id"]),
        rated=hall_rated(meta, hall_rated_setting) and len(players) >= 2,
        hall=meta.get("hall"),
        title=meta.get("title"),
        finished_at=finished_at,
        players=players,
    )


# ----------------------------------------------------------------------------------------- store keys
def rating_key(player_key: str) -> str:
    return RATING_PREFIX + player_key


def pending_key(game_id: str) -> str:
    return PENDING_PREFIX + game_id


def settled_key(game_id: str) -> str:
    """Written once a game's result is in the ratings and histories (its value: ``rated`` or ``unrated``)."""
    return f"game:{game_id}:settled"


def history_prefix(user_id: str) -> str:
    return f"{HISTORY_PREFIX}{user_id}:"


def history_key(user_id: str, finished_at: float, game_id: str) -> str:
    """Newest first in key order: the finish time in milliseconds, counted down from :data:`_TIME_FLIP`."""
    flipped = _TIME_FLIP - int(finished_at * 1000)
    return f"{history_prefix(user_id)}{flipped:014d}:{game_id}"


# ------------------------------------------------------------------------------------------- settling
def record_table_game(
    store: Store,
    settings: Settings,
    meta: Mapping[str, Any],
    seat_records: Sequence[Mapping[str, Any]],
    game: Game,
    clock: Callable[[], float] = time.time,
    bot_name: BotNamer | None = None,
) -> None:
    """The table's game-finished hook: record the game's result (ratings, the players' histories). A
    failure is logged, never raised: the game itself is over and stored whatever happens here."""
    try:

        def hall_setting(hall: str) -> bool | None:
            return settings.halls[hall].rated if hall in settings.halls else None

        result = game_result(
            meta,
            seat_records,
            list(game.winners),
            game.active_seats,
            game.scores,
            hall_setting,
            float(meta.get("finished_at") or clock()),
            bot_name,
        )
        if not result.rated and not any(p.user_id for p in result.players):
            return  # nothing to keep: an unrated game without people (an experiment's, a self-play run)
        record_finished_game(store, result, clock)
    except Exception:
        log.exception("ratings: game %s could not be recorded", meta.get("game_id"))


def record_finished_game(store: Store, result: GameResult, clock: Callable[[], float] = time.time) -> bool:
    """Park ``result`` and settle it (and a few older pending ones); True if this call settled it now.
    Never raises for a busy lock: the result stays pending and the next finished game settles it."""
    store.set_value_if_absent(pending_key(result.game_id), result.to_json())
    return result.game_id in settle_pending(store, clock, first=result.game_id)


def settle_pending(
    store: Store, clock: Callable[[], float] = time.time, first: str | None = None
) -> list[str]:
    """Settle ``first`` and up to :data:`PENDING_PER_SETTLE` other pending results under the ratings lock;
    the ids settled by this call."""
    lock = _acquire_lock(store, clock)
    if lock is None:
        log.warning("ratings lock busy for %.0f s: results stay pending", LOCK_WAIT_SECONDS)
        return []
    settled: list[str] = []
    ids = [first] if first else []
    ids += [k.removeprefix(PENDING_PREFIX) for k in store.list_keys(PENDING_PREFIX, limit=PENDING_PER_SETTLE)]
    for game_id in dict.fromkeys(ids):
        text = store.get_value(pending_key(game_id))
        if text is None:
            continue
        if store.get_value(settled_key(game_id)) is None:
            try:
                result = GameResult.from_json(text)
            except (ValueError, KeyError, TypeError):
                log.error("ratings: unreadable pending result of game %s dropped", game_id)
                store.replace_value(pending_key(game_id), text, None)
                continue
            try:
                writes = _plan(store, result, clock)
            except Exception:
                store.replace_value(RATINGS_LOCK_KEY, lock, None)
                raise
            # from here a failure leaves the journal in the lock: the next settle after it goes stale
            # applies it, so the game counts once
            lock = _write_journal(store, lock, writes, clock)
            _apply(store, writes)
            lock = _write_journal(store, lock, None, clock)
            settled.append(game_id)
        store.replace_value(pending_key(game_id), text, None)
    store.replace_value(RATINGS_LOCK_KEY, lock, None)
    return settled


def _acquire_lock(store: Store, clock: Callable[[], float]) -> str | None:
    """The ratings lock's value once this process holds it, or None after :data:`LOCK_WAIT_SECONDS`.
    A stale lock's journal is applied before it is taken over."""
    mine = {"holder": secrets.token_hex(8), "at": clock(), "journal": None}
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    pause = 0.005
    while True:
        value = json.dumps(mine)
        if store.replace_value(RATINGS_LOCK_KEY, None, value):
            return value
        current = store.get_value(RATINGS_LOCK_KEY)
        if current is not None:
            try:
                holder = json.loads(current)
            except ValueError:
                holder = {}
            holder = holder if isinstance(holder, dict) else {}
            if claim_is_stale(holder, clock()) and store.replace_value(RATINGS_LOCK_KEY, current, value):
                journal = holder.get("journal")
                if isinstance(journal, dict):
                    log.warning("ratings: finishing the journal of a crashed settle")
                    _apply(store, journal)
                return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _write_journal(
    store: Store, lock: str, writes: dict[str, str | None] | None, clock: Callable[[], float]
) -> str:
    """The lock's value with ``writes`` as its journal (refreshing its time); raises if the lock was lost."""
    holder = json.loads(lock)
    holder["journal"] = writes
    holder["at"] = clock()
    value = json.dumps(holder)
    if not store.replace_value(RATINGS_LOCK_KEY, lock, value):
        raise RuntimeError("the ratings lock was taken over while held: this settle stops")
    return value


def _apply(store: Store, writes: Mapping[str, str | None]) -> None:
    """Make every key hold its value (absolute writes: applying twice is applying once)."""
    for key, value in writes.items():
        for _ in range(10):
            current = store.get_value(key)
            if current == value or store.replace_value(key, current, value):
                break
        else:  # only a writer ignoring the lock could race it ten times
            raise RuntimeError(f"ratings: {key} kept changing under the ratings lock")


def _plan(store: Store, result: GameResult, clock: Callable[[], float]) -> dict[str, str | None]:
    """Every write settling ``result`` needs: new ratings (rated games), history entries, the done mark."""
    writes: dict[str, str | None] = {}
    if result.rated:
        stored = {p.key: _load_rating(store, p.key) for p in result.players}
        teams = [[MODEL.rating(mu=stored[p.key]["mu"], sigma=stored[p.key]["sigma"])] for p in result.players]
        new_teams = MODEL.rate(teams, ranks=[p.rank for p in result.players])
        for player, (rating,) in zip(result.players, new_teams, strict=True):
            before = stored[player.key]
            after = {
                "key": player.key,
                "name": player.name,
                "kind": player.kind,
                "mu": rating.mu,
                "sigma": rating.sigma,
                "games": int(before["games"]) + 1,
                "wins": int(before["wins"]) + (1 if player.won else 0),
                "updated_at": clock(),
            }
            writes[rating_key(player.key)] = json.dumps(after, sort_keys=True)
    for player in result.players:
        if player.user_id is None:
            continue
        entry = {
            "game_id": result.game_id,
            "hall": result.hall,
            "title": result.title,
            "finished_at": result.finished_at,
            "rated": result.rated,
            "seat": player.seat,
            "won": player.won,
            "resigned": player.resigned,
            "points": player.points,
            "result": _result_word(player, result.players),
            "opponents": [
                {"name": p.seat_name or p.name, "kind": p.kind, "won": p.won}
                for p in result.players
                if p.key != player.key
            ][:MAX_OPPONENTS],
        }
        key = history_key(player.user_id, result.finished_at, result.game_id)
        writes[key] = json.dumps(entry, sort_keys=True)
    writes[settled_key(result.game_id)] = "rated" if result.rated else "unrated"
    return writes


def _result_word(player: Participant, players: Sequence[Participant]) -> str:
    """``won`` / ``shared win`` / ``draw`` (nobody won) / ``lost`` / ``resigned``: the history's word."""
    winners = sum(1 for p in players if p.won)
    if player.won:
        return "won" if winners == 1 else "shared win"
    if player.resigned:
        return "resigned"
    return "draw" if winners == 0 else "lost"


def _load_rating(store: Store, player_key: str) -> dict[str, Any]:
    text = store.get_value(rating_key(player_key))
    if text is not None:
        try:
            data = json.loads(text)
            if isinstance(data, dict) and {"mu", "sigma", "games", "wins"} <= data.keys():
                return data
        except ValueError:
            log.warning("ratings: unreadable rating of %s reset", player_key)
    prior = MODEL.rating()
    return {"mu": prior.mu, "sigma": prior.sigma, "games": 0, "wins": 0}


# -------------------------------------------------------------------------------------------- reading
def public_rating(data: Mapping[str, Any]) -> dict[str, Any]:
    """One leaderboard row: no user id (a human is shown by name only; a bot by its spec without options,
    which may name the operator's servers). ``rating`` is the low end of ``interval``: the skill estimate
    ``mu`` minus three times its uncertainty, the range ``mu`` ± 3 ``sigma``."""
    mu, sigma = float(data["mu"]), float(data["sigma"])
    key = str(data.get("key", ""))
    return {
        "name": data.get("name"),
        "kind": data.get("kind"),
        "spec": public_spec(key.removeprefix("bot:")) if key.startswith("bot:") else None,
        "rating": round(mu - 3 * sigma, 2),  # OpenSkill's ordinal: a conservative estimate
        "mu": round(mu, 2),
        "sigma": round(sigma, 2),
        "interval": [round(mu - 3 * sigma, 2), round(mu + 3 * sigma, 2)],
        "games": int(data["games"]),
        "wins": int(data["wins"]),
    }


class Leaderboard:
    """Every rated player's public row, sorted best first, read from the store at most once per
    :data:`LEADERBOARD_CACHE_SECONDS` per process (so a request costs a sort of a cached list)."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.clock = clock
        self._rows: list[dict[str, Any]] = []
        self._read_at = -float("inf")
        self._lock = threading.Lock()

    def rows(self) -> list[dict[str, Any]]:
        with self._lock:
            if self.clock() - self._read_at >= LEADERBOARD_CACHE_SECONDS:
                self._rows = self._read()
                self._read_at = self.clock()
            return self._rows

    def invalidate(self) -> None:
        with self._lock:
            self._read_at = -float("inf")

    def _read(self) -> list[dict[str, Any]]:
        rows, after = [], ""
        while len(rows) < MAX_LEADERBOARD_PLAYERS:
            keys = self.store.list_keys(RATING_PREFIX, after=after, limit=min(1000, MAX_LEADERBOARD_PLAYERS))
            if not keys:
                break
            for key in keys:
                text = self.store.get_value(key)
                if text is None:
                    continue
                try:
                    rows.append(public_rating(json.loads(text)))
                except (ValueError, KeyError, TypeError):
                    log.warning("ratings: unreadable rating %s skipped", key)
            after = keys[-1]
        rows.sort(key=lambda r: (-r["rating"], -r["games"], str(r["name"])))
        return rows

    def page(self, min_games: int, provisional: bool, offset: int, limit: int) -> dict[str, Any]:
        """One page of the ranked players (``games >= min_games``) or of the provisional ones."""
        rows = [r for r in self.rows() if (r["games"] < min_games) == provisional]
        chosen = rows[offset : offset + limit]
        first_place = offset + 1
        return {
            "players": [
                {**row, "place": None if provisional else first_place + i} for i, row in enumerate(chosen)
            ],
            "total": len(rows),
            "offset": offset,
            "limit": limit,
            "min_games": min_games,
            "provisional": provisional,
        }


def player_rating(store: Store, player_key: str) -> dict[str, Any] | None:
    text = store.get_value(rating_key(player_key))
    return public_rating(json.loads(text)) if text else None


def history_page(
    store: Store, user_id: str, after: str, limit: int
) -> tuple[list[dict[str, Any]], str | None]:
    """A user's finished games, newest first: ``(entries, cursor of the next page or None)``. ``after`` is
    a cursor this function gave (an opaque key suffix); anything else starts from the top."""
    prefix = history_prefix(user_id)
    start = prefix + after if after else ""
    keys = store.list_keys(prefix, after=start, limit=limit + 1)
    entries = []
    for key in keys[:limit]:
        text = store.get_value(key)
        if text is not None:
            entries.append(json.loads(text))
    cursor = keys[limit - 1].removeprefix(prefix) if len(keys) > limit else None
    return entries, cursor
