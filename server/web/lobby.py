"""The lobby: halls (game modes from settings), creating, listing and joining games.

A game is created "waiting" with one seat per player; a seat is *open* (anyone logged in), reserved
for a *human* (session login) or an *agent* (API token), or a *bot* (filled at once by a built-in bot).
When the last seat is taken the game starts (``Table.seats_changed``). Every "one of" rule is a conditional
write in the store, so it holds across server processes, never a read before a write:

- a seat: ``Store.set_value_if_absent`` on its claim key, so two people racing for the last seat never both
  get it;
- a person's one seat per game: a human first claims :func:`~server.table.live.seat_holder_key` with
  ``replace_value(key, None, ...)`` and releases it if the seat claim then loses (agents, API tokens, may hold
  several seats as before);
- a user's open games: ``limits.open_games_per_user`` slot keys (:func:`~server.table.live.open_game_key`),
  each claimed by one waiting game's id and freed when the game starts or closes; a slot whose game no longer
  waits is taken back with a conditional write, so a crash never locks a user out;
- a waiting game starts or closes (cancelled by its creator, expired after ``limits.waiting_game_expiry_
  minutes``, aborted) once: ``Table.close_waiting``.

Only admins (researchers) set a game's ``seed`` from a client (it drives the bots' policies and the first
proposer); the operator's in-process calls may.

Instances: a hall deals each game a ``generated`` instance (made at creation, see below), or draws it
from instance files: ``fixed`` (always the first id), ``sequential`` (the hall's k-th game gets the k-th
instance; the counter is shared by every worker through the store) or ``random`` (from a seed that is
recorded with the game, derived from the hall's seed and the game's number when the hall sets one, so a
study's sequence of instances is reproducible).

Fresh deals (``generated``): every player sees every starting hand, and the shipped instance files are
public, so a game dealt from them can be looked up by its hands and all its targets read. A generated game
gets an instance made by ``craft_rules.taskgen.generate_instance`` for the hall's rule set, players and
crafting-runs rule, within the creator's difficulty band (or a band drawn evenly), seeded by an HMAC of the
game id under a secret made once per server and kept in the store (like the session key): neither the id
nor anything published reproduces the deal. A draw whose hands or targets repeat a shipped instance is
refused. The instance is stored whole with the game (``instance`` in its record), which the room loader and
the researcher export read; no file holds it. Generation is
bounded: at most ``instances.max_attempts`` draws (then ``deal_failed``), one deal at a time per process
(a creation waits at most :data:`DEAL_WAIT_SECONDS` for its turn, then ``rate_limited``), after the
per-user creation limits.

Who may choose: the shipped instance files are public, so whoever picks an exact instance knows every
player's target. Only admins (researchers) may name an ``instance_id`` (:meth:`Lobby.instance_catalog`
lists a hall's pool with each instance's difficulty for them). Anyone else creating a game in a
``random`` or ``generated`` hall may ask for a difficulty band (``easy`` / ``medium`` / ``hard``). A
``random`` hall draws the instance secretly among the band's instances of its pool and offers a band only
when it holds at least :data:`MIN_BAND_INSTANCES` of them, so the band narrows the creator's guess to no
fewer candidates than that; a ``generated`` hall offers every band (each game's instance is new). The band
is recorded for researchers only: no summary, view or push shows it while the game runs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import secrets
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from craft_rules.difficulty import (
    HallRules,
    band_measures,
    instance_measure,
    measured_difficulty,
    pool_levels,
    pooled_measure,
)
from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.taskgen import GenerationError, generate_instance
from craft_rules.tasks import TC_GAMES_DIR, TaskInstance, instance_set_ids, iter_instances, load_instance
from server.store import Store
from server.table.config import HallSettings, SeatSpec, Settings
from server.table.errors import ServerError, parse_count
from server.table.live import (
    CLOSED_UNSTARTED,
    LiveGame,
    SeatState,
    claim_in_store,
    claim_is_stale,
    open_game_key,
    seat_claim_key,
    seat_holder_key,
    seated_name_key,
    waiting_ended_key,
)
from server.table.master import Table
from server.table.names import NameKind, name_clash, name_key
from server.table.policies import BotRegistry
from server.table.principal import Principal
from server.web.auth import account_halls, clean_display_name
from server.web.limits import RateLimiter, open_games_limited
from server.web.seat_holds import check_hold, held_for

log = logging.getLogger(__name__)

GAME_ID_BYTES = 9
#: An open-game slot naming a game that does not exist yet is a creation in progress for this long (a deal
#: waits up to DEAL_WAIT_SECONDS, then generates); older, its creation crashed and the slot is taken back.
OPEN_SLOT_CREATION_SECONDS = 120.0
#: Difficulty bands a creator may ask for (the ``level`` the instance generator records).
DIFFICULTY_BANDS = ("easy", "medium", "hard")
#: A band is offered only when the hall's pool holds at least this many instances of it: asking for a band
#: must leave the creator that many equally likely candidate instances (and target sets).
MIN_BAND_INSTANCES = 5
#: Most recent games of each status read to find a user's own games ("my games").
MY_GAMES_SCAN = 200
#: Store key of the secret that seeds every fresh deal: made once, shared by every worker, never shown.
DEAL_SECRET_NAME = "deal_secret"
#: Fresh deals made at once in one process (pure-Python work that holds the interpreter): others wait.
MAX_CONCURRENT_DEALS = 1
#: Longest a creation waits for its turn to deal; then it is refused with ``rate_limited``.
DEAL_WAIT_SECONDS = 10.0
#: Largest seed a creator may give: every store keeps it as a signed 64-bit integer (BSON's int64).
MAX_GAME_SEED = 2**63 - 1
#: Prefix of a dealt instance's name (``<ruleset>/<mode>/dealt-<game id>#0``), shown once the game is over.
DEALT_PREFIX = "dealt-"


def new_game_id() -> str:
    return secrets.token_urlsafe(GAME_ID_BYTES)


class Lobby:
    def __init__(self, settings: Settings, store: Store, table: Table, bots: BotRegistry) -> None:
        self.settings = settings
        self.store = store
        self.table = table
        self.bots = bots
        self._next_slot: dict[str, int] = {}
        self._band_cache: dict[int, dict[str, list[str]]] = {}
        self._figures_cache: dict[int, dict[str, dict[str, Any] | None]] = {}
        self._slot_lock = threading.Lock()
        self.limiter = RateLimiter(settings.limits)
        self._deal_gate = threading.BoundedSemaphore(MAX_CONCURRENT_DEALS)
        self._deal_secret: bytes | None = None

    # -------------------------------------------------------------------------------------------- halls
    def hall(self, name: Any) -> HallSettings:
        hall = self.settings.halls.get(name) if isinstance(name, str) else None
        if hall is None:
            # the listed ones: an unlisted hall's name (a study's: its id) is not everyone's to read
            known = ", ".join(sorted(n for n, h in self.settings.halls.items() if h.listed))
            raise ServerError(
                "unknown_hall",
                f"There is no hall {name!r}; choose one of: {known}.",
                {"hall": name},
                status=404,
            )
        return hall

    def halls(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "title": hall.title or name,
                "description": hall.description,
                "ruleset": hall.ruleset,
                "mode": hall.mode_name,
                "players": hall.players,
                "instance_choice": hall.instances.choice,
                "difficulties": self.offered_bands(hall),
                "seats": [spec.kind for spec in hall.seat_specs()],
                # the bot each fixed bot seat gets (null for other seats)
                "seat_bots": [
                    (spec.bot or self.settings.bots.default) if spec.kind == "bot" else None
                    for spec in hall.seat_specs()
                ],
                "allow_custom_seats": hall.allow_custom_seats,
                "settings": hall.game_settings().model_dump(mode="json"),
            }
            for name, hall in self.settings.halls.items()
            if hall.listed
        ]

    def instance_pool(self, hall: HallSettings) -> list[str]:
        """The hall's instance ids in order: its ids, its set's, or every instance of its rule set and
        mode; the first ``instances.first`` of them when set."""
        chosen = hall.instances
        root = self.settings.instance_root(hall) or TC_GAMES_DIR
        if chosen.ids:
            pool = list(chosen.ids)
        elif chosen.set:
            try:
                pool = instance_set_ids(chosen.set, hall.ruleset, hall.mode_name, root=root)
            except KeyError:
                pool = []
        else:
            pool = [
                inst.id
                for inst in iter_instances(hall.ruleset, hall.mode_name, root=root)
                if inst.players == hall.players
            ]
        return pool[: chosen.first] if chosen.first else pool

    @staticmethod
    def hall_rules(hall: HallSettings) -> HallRules:
        """The rules of the hall's games that measured difficulty figures depend on."""
        game = hall.game_settings()
        return HallRules(
            hall.ruleset,
            hall.players,
            game.crafting_runs,
            game.max_turns,
            game.allow_pass,
            game.end_condition,
        )

    def _pool_instances(self, hall: HallSettings) -> list[TaskInstance]:
        root = self.settings.instance_root(hall)
        pool = []
        for instance_id in self.instance_pool(hall):
            try:
                pool.append(load_instance(instance_id, root))
            except KeyError:
                continue  # a pool id without a file: creating a game with it says why
        return pool

    def instance_catalog(self, hall: HallSettings) -> list[dict[str, Any]]:
        """The hall's pool with each instance's difficulty: the admins' list. The level is the measured one
        (craft_rules/difficulty.py), fitted on the pool's own measured costs when the calibrated labels leave
        a band with fewer than MIN_BAND_INSTANCES (``calibrated_level`` then keeps the calibrated one)."""
        pool = self._pool_instances(hall)
        difficulties = {instance.id: measured_difficulty(instance) for instance in pool}
        refitted = pool_levels({i: d.get("measured") for i, d in difficulties.items()}, MIN_BAND_INSTANCES)
        catalog = []
        for instance in pool:
            difficulty = difficulties[instance.id]
            if refitted is not None:
                difficulty = {
                    **difficulty,
                    "level": refitted[instance.id],
                    "calibrated_level": difficulty["level"],
                }
            catalog.append(
                {
                    "instance_id": instance.id,
                    "players": instance.players,
                    "level": difficulty.get("level"),
                    "score": difficulty.get("score"),
                    "difficulty": difficulty,
                }
            )
        return catalog

    def _bands(self, hall: HallSettings) -> dict[str, list[str]]:
        """The hall's pool by difficulty band (instances without a recorded level belong to none)."""
        key = id(hall)
        cached = self._band_cache.get(key)
        if cached is None:
            cached = {band: [] for band in DIFFICULTY_BANDS}
            for entry in self.instance_catalog(hall):
                if entry["level"] in cached:
                    cached[entry["level"]].append(entry["instance_id"])
            self._band_cache[key] = cached
        return cached

    def _figures(self, hall: HallSettings) -> dict[str, dict[str, Any] | None]:
        """Each pool instance's measured record when it was measured under the hall's own rules, else None."""
        key = id(hall)
        cached = self._figures_cache.get(key)
        if cached is None:
            rules = self.hall_rules(hall)
            cached = {inst.id: instance_measure(inst, rules) for inst in self._pool_instances(hall)}
            self._figures_cache[key] = cached
        return cached

    def offered_bands(self, hall: HallSettings) -> list[dict[str, Any]]:
        """The bands an ordinary creator may ask for: every band in ``generated`` halls (``instances`` is
        null: each game is dealt afresh), the big enough ones in ``random`` halls, none otherwise. Beside
        each, what ToM-1 pairs did in it (docs/difficulty.md), only when measured under the hall's rules."""
        if hall.instances.choice == "generated":
            measures = band_measures(self.hall_rules(hall))
            return [
                {"band": band, "instances": None, "measured": measures.get(band)} for band in DIFFICULTY_BANDS
            ]
        if hall.instances.choice != "random":
            return []
        figures = self._figures(hall)
        return [
            {"band": band, "instances": len(ids), "measured": pooled_measure([figures.get(i) for i in ids])}
            for band, ids in self._bands(hall).items()
            if len(ids) >= MIN_BAND_INSTANCES
        ]

    # ------------------------------------------------------------------------------------------ games
    def create_game(
        self,
        hall_name: Any,
        creator: Principal,
        seats: Any = None,
        instance_id: Any = None,
        seed: Any = None,
        join: bool = False,
        address: str | None = None,
        difficulty: Any = None,
        hold: dict[str, Any] | None = None,
        seat_specs: list[SeatSpec] | None = None,
        game_id: str | None = None,
        tom_orders: list[list[int]] | None = None,
    ) -> dict[str, Any]:
        """Create a waiting game in ``hall_name``; with ``join`` the creator takes the first seat it may.

        ``instance_id`` (admins only) names the exact instance; ``difficulty`` (anyone, ``random`` and
        ``generated`` halls) asks for a band, drawn or dealt secretly; neither = the hall's own choice.

        ``address`` is the network address of a client's request: then a hall that is not ``creatable`` (a
        study's) is ``forbidden``, and, unless the creator is an admin, the abuse limits
        (server/web/limits.py) apply before any work: games per user and per address, open games per user.
        ``None`` is an in-process call (the operator's scripts, tests): no abuse limit applies.
        ``hold`` keeps the seats for named people for a while (server/web/seat_holds.py: a rematch's).
        ``seat_specs`` and ``game_id`` are for in-process callers only (the study matcher: its fill-in in a
        participant's seat of a hall whose seats are fixed; the id its participants were matched to). A study
        participant's account creates games in its own halls only (:meth:`check_plays_in`).
        ``tom_orders`` (in-process only): each seat's ToM orders instead of the hall's (the study's fill-in
        reports as a bot or an LLM seat does, not as the participant whose seat it took)."""
        hall = self.hall(hall_name)
        if address is not None and not hall.creatable:
            raise ServerError(
                "forbidden",
                f"Games of hall {hall_name!r} are made by the server only (a study's matcher); choose "
                "another hall.",
                {"hall": hall_name},
                status=403,
            )
        self.check_plays_in(creator, hall_name)
        specs = seat_specs if seat_specs is not None else self._seat_specs(hall, seats)
        if seed is not None and (
            not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_GAME_SEED
        ):
            raise ServerError("invalid_request", f"seed must be a whole number from 0 to {MAX_GAME_SEED}.")
        if seed is not None and address is not None and not creator.is_admin:
            # the seed drives the bots' policies and the first proposer: a player could pick a favourable one
            raise ServerError(
                "forbidden",
                "Only admins (researchers) may set a game's seed; omit seed for a secret random one.",
                status=403,
            )
        seat_states = [
            SeatState(
                seat=i,
                accepts=spec.kind,
                kind="bot" if spec.kind == "bot" else None,
                name=(spec.name or self.bots.seat_name(spec.bot or self.settings.bots.default))
                if spec.kind == "bot"
                else None,
                bot=(spec.bot or self.settings.bots.default) if spec.kind == "bot" else None,
            )
            for i, spec in enumerate(specs)
        ]
        for state in seat_states:
            if state.bot:
                self.bots.require(state.bot, hall=hall_name)
        if join:  # the creator's seat is checked before the game exists: a refused join leaves no game
            check_creator_can_sit(creator, seat_states)
        # every check that costs nothing is made: now the limits, then the instance (a deal costs CPU)
        game_id = game_id or new_game_id()
        open_slot = None
        if address is not None and not creator.is_admin:
            open_slot = self._claim_open_slot(creator, game_id)
        try:
            if address is not None and not creator.is_admin:
                self.limiter.hit("games_per_user", creator.id)
                self.limiter.hit("games_per_address", address)
            return self._create(
                hall_name,
                hall,
                creator,
                seat_states,
                game_id,
                instance_id,
                seed,
                join,
                difficulty,
                open_slot,
                hold,
                tom_orders,
            )
        except BaseException:
            if open_slot is not None and self.store.get_game(game_id) is None:
                self.store.replace_value(open_slot["key"], open_slot["claim"], None)
            raise

    def _create(
        self,
        hall_name: str,
        hall: HallSettings,
        creator: Principal,
        seat_states: list[SeatState],
        game_id: str,
        instance_id: Any,
        seed: int | None,
        join: bool,
        difficulty: Any,
        open_slot: dict[str, str] | None,
        hold: dict[str, Any] | None = None,
        tom_orders: list[list[int]] | None = None,
    ) -> dict[str, Any]:
        choice, instance, root = self._choose_instance(
            hall, hall_name, game_id, instance_id, creator, difficulty
        )
        if instance.players != hall.players:
            raise ServerError(
                "unknown_instance",
                f"Instance {instance.id!r} has {instance.players} players but hall {hall_name!r} seats "
                f"{hall.players}.",
                {"instance_id": instance.id},
            )
        game_seed = seed if seed is not None else secrets.randbits(32)
        game_settings = hall.game_settings()
        if "repetition" in choice:  # repetitions of a sequential pool alternate the first proposer
            game_settings = game_settings.model_copy(
                update={"first_proposer": choice["repetition"] % hall.players}
            )
        if tom_orders is not None:  # validated as the hall's own orders are
            if len(tom_orders) != hall.players:
                raise ServerError(
                    "invalid_request", f"tom_orders lists {len(tom_orders)} seats, not {hall.players}."
                )
            game_settings = type(game_settings).model_validate(
                {**game_settings.model_dump(), "tom_orders": tom_orders}
            )
        meta = {
            "hall": hall_name,
            "title": hall.title or hall_name,
            "mode": hall.mode_name,
            "ruleset": hall.ruleset,
            # game logs record it, so a replay can tell whether the rule set has changed since
            "ruleset_hash": _ruleset_hash(hall.ruleset),
            "instance_id": instance.id,
            "instance_root": root,
            "instance_choice": choice,
            "settings": game_settings.model_dump(mode="json"),
            "seed": game_seed,
            "seats": [s.record() for s in seat_states],
            "status": "waiting",
            "created_by": creator.id,
        }
        if open_slot is not None:  # freed when the game stops waiting (Table.close_waiting, the start)
            meta["open_slot"] = open_slot
        if hold is not None:  # in the first record: no moment the game is open to strangers
            meta["held_for"] = hold
        if choice["choice"] == "generated":  # the whole instance, for replay, recovery and exports
            meta["instance"] = instance.to_json()
        self.store.create_game(game_id, meta)
        joined: int | None = None
        try:
            if join:
                joined = self._claim_or_close(game_id, creator)
        finally:
            # arms the expiry timer whatever happened, so no waiting game is left without one
            live = self.table.seats_changed(game_id)
        with live.lock:
            summary = summarize(live.meta, live.seats)
        if choice["choice"] == "requested":  # the creator's own choice; nobody else is told
            summary["instance_id"] = instance.id
        return {**summary, "your_seat": joined}

    def _claim_or_close(self, game_id: str, creator: Principal) -> int:
        """The creator's seat in the game just created; if the claim fails after all (a race the checks before
        creation could not see), the game is closed unstarted, which frees its open-game slot."""
        try:
            return self._claim(game_id, creator, None)
        except Exception:
            try:
                self.table.close_waiting(game_id, "cancelled")
            except ServerError as err:  # it started or closed meanwhile: nothing is left waiting
                log.info("game %s: not closed after its creator's failed join: %s", game_id, err.code)
            raise

    def _claim_open_slot(self, creator: Principal, game_id: str) -> dict[str, str] | None:
        """One of the creator's ``limits.open_games_per_user`` slots, claimed for ``game_id`` by a conditional
        write (so parallel creations never exceed the bound), or ``too_many_open_games``. A slot whose game
        stopped waiting, or whose creation crashed, is taken back on the way."""
        bound = self.settings.limits.open_games_per_user
        if bound is None:
            return None
        claim = json.dumps({"game_id": game_id, "at": round(time.time(), 3)})
        for slot in range(bound):
            key = open_game_key(creator.id, slot)
            for _ in range(3):
                if self.store.replace_value(key, None, claim):
                    return {"key": key, "claim": claim}
                held = self.store.get_value(key)
                if held is None:
                    continue  # freed meanwhile: try again
                if not self._open_slot_is_free(held):
                    break
                self.store.replace_value(key, held, None)  # only if nobody else has changed it
        raise open_games_limited(bound, bound)

    def _open_slot_is_free(self, held: str) -> bool:
        """Whether a slot's claim no longer stands for a waiting game."""
        try:
            claim = json.loads(held)
            game_id, at = str(claim["game_id"]), float(claim["at"])
        except (ValueError, TypeError, KeyError):
            return True
        meta = self.store.get_game(game_id)
        if meta is None:
            return time.time() - at > OPEN_SLOT_CREATION_SECONDS
        return meta.get("status") != "waiting"

    def _seat_specs(self, hall: HallSettings, seats: Any) -> list[SeatSpec]:
        if seats is None:
            return hall.seat_specs()
        if not hall.allow_custom_seats:
            raise ServerError("invalid_seats", 'This hall\'s seats are fixed by its settings; omit "seats".')
        if not isinstance(seats, list) or len(seats) != hall.players:
            raise ServerError(
                "invalid_seats",
                f'Send "seats" as a list of {hall.players} entries such as {{"kind": "open"}} or '
                '{"kind": "bot", "bot": "random"}.',
            )
        specs = []
        for index, raw in enumerate(seats):
            if isinstance(raw, str):
                raw = {"kind": raw}
            if isinstance(raw, dict) and raw.get("name") is not None:  # the one rule for names, typed
                try:
                    raw = {**raw, "name": clean_display_name(raw["name"], "bot seat name", "bot")}
                except ServerError as err:
                    raise ServerError(err.code, f"Seat {index}: {err.message}", {"seat": index}) from None
            try:
                specs.append(SeatSpec.model_validate(raw))
            except ValueError as exc:
                raise ServerError(
                    "invalid_seats",
                    f"Seat {index}: kind must be open, human, agent or bot (bot seats may name a bot).",
                    {"seat": index, "problem": str(exc).splitlines()[0]},
                ) from None
        return specs

    def _choose_instance(
        self,
        hall: HallSettings,
        hall_name: str,
        game_id: str,
        requested: Any,
        creator: Principal,
        difficulty: Any = None,
    ) -> tuple[dict[str, Any], TaskInstance, str | None]:
        """The game's instance, how it was chosen (recorded for researchers) and the folder it lives in."""
        if hall.instances.choice == "generated" and requested is None:
            return self._deal(hall, hall_name, game_id, difficulty)
        choice = self._choose_from_files(hall, hall_name, game_id, requested, creator, difficulty)
        root = self.settings.instance_root(hall)
        folder = str(root) if root else None
        try:
            return choice, load_instance(choice["instance_id"], folder), folder
        except KeyError as exc:
            raise ServerError(
                "unknown_instance",
                f"Hall {hall_name!r} has no task instance {choice['instance_id']!r}.",
                {"instance_id": choice["instance_id"]},
            ) from exc

    def _choose_from_files(
        self,
        hall: HallSettings,
        hall_name: str,
        game_id: str,
        requested: Any,
        creator: Principal,
        difficulty: Any = None,
    ) -> dict[str, Any]:
        if requested is not None and difficulty is not None:
            raise ServerError(
                "invalid_request", "Send instance_id or difficulty, not both.", {"difficulty": difficulty}
            )
        if requested is not None:
            if not creator.is_admin:
                # whoever picks an exact instance knows every target in it (the files are public)
                raise ServerError(
                    "instance_choice_forbidden",
                    "Only admins pick an exact task instance: it would tell you every player's target. "
                    "Choose a difficulty (easy, medium or hard) or leave it random.",
                    status=403,
                )
            if not isinstance(requested, str) or len(requested) > 300:
                raise ServerError("unknown_instance", "instance_id must be an instance id (text).")
            return {"choice": "requested", "instance_id": requested}
        if difficulty is not None and difficulty != "random":
            return self._draw_from_band(hall, hall_name, difficulty)
        pool = self.instance_pool(hall)
        if not pool:
            raise ServerError(
                "unknown_instance",
                f"Hall {hall_name!r} has no task instances ({hall.ruleset}/{hall.mode_name}); "
                "check its instances settings.",
                status=500,
            )
        kind = hall.instances.choice
        if kind == "fixed":
            return {"choice": "fixed", "instance_id": pool[0]}
        if kind == "sequential":
            slot = self._claim_slot(hall_name, game_id)
            choice = {"choice": "sequential", "slot": slot, "instance_id": pool[slot % len(pool)]}
            if hall.instances.rotate_first_proposer:
                choice["repetition"] = slot // len(pool)
            return choice
        if hall.instances.seed is not None:
            slot = self._claim_slot(hall_name, game_id)
            seed = hall.instances.seed
            index = random.Random(f"{seed}:{slot}").randrange(len(pool))
            return {"choice": "random", "seed": seed, "slot": slot, "instance_id": pool[index]}
        seed = secrets.randbits(32)
        return {
            "choice": "random",
            "seed": seed,
            "instance_id": pool[random.Random(seed).randrange(len(pool))],
        }

    def _check_band(self, hall: HallSettings, hall_name: str, difficulty: Any) -> None:
        offered = [entry["band"] for entry in self.offered_bands(hall)]
        if difficulty not in offered:
            if hall.instances.choice != "random":
                why = f"Hall {hall_name!r} deals its instances in a set order; omit difficulty."
            elif offered:
                why = f"Choose a difficulty from {', '.join(offered)}, or random."
            else:
                why = f"Hall {hall_name!r} offers no difficulty bands; omit difficulty for a random instance."
            shown = difficulty if isinstance(difficulty, str) and len(difficulty) <= 40 else None
            raise ServerError("difficulty_not_offered", why, {"difficulty": shown, "offered": offered})

    def _draw_from_band(self, hall: HallSettings, hall_name: str, difficulty: Any) -> dict[str, Any]:
        self._check_band(hall, hall_name, difficulty)
        band = self._bands(hall)[difficulty]
        seed = secrets.randbits(32)
        return {
            "choice": "band",
            "difficulty": difficulty,
            "seed": seed,
            "instance_id": band[random.Random(seed).randrange(len(band))],
        }

    # ------------------------------------------------------------------------------------- fresh deals
    def deal_seed(self, game_id: str) -> int:
        """The generator seed of a game: an HMAC of its id under the server's secret, so neither a game id
        nor any published seed reproduces a deal."""
        if self._deal_secret is None:
            made = self.store.set_value_if_absent(DEAL_SECRET_NAME, secrets.token_hex(32))
            self._deal_secret = made.encode("utf-8")
        digest = hmac.new(self._deal_secret, f"deal:{game_id}".encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:16], "big")

    def deal_instance(self, hall: HallSettings, game_id: str, band: str) -> tuple[TaskInstance, int]:
        """A fresh instance for game ``game_id`` of ``hall`` in difficulty ``band`` and the draws it took
        (``GenerationError`` when none came within the hall's ``max_attempts``). Deterministic for the
        server's secret and the game id; one deal at a time per process."""
        runs = hall.game_settings().crafting_runs
        if not self._deal_gate.acquire(timeout=DEAL_WAIT_SECONDS):
            raise ServerError(
                "rate_limited",
                "The server is busy dealing other games; try again in a few seconds.",
                {"limit": "concurrent_deals", "retry_after": 2},
                status=429,
            )
        try:
            dealt = generate_instance(
                load_rule_set(hall.ruleset),
                hall.players,
                self.deal_seed(game_id),
                band=band,
                crafting_runs=runs,
                mode=hall.mode_name,
                instance_id=f"{hall.ruleset}/{hall.mode_name}/{DEALT_PREFIX}{game_id}#0",
                max_attempts=hall.instances.max_attempts,
                reject=lambda instance: repeats_published(instance, hall.ruleset),
            )
        finally:
            self._deal_gate.release()
        return dealt.instance, dealt.attempts

    def _deal(
        self, hall: HallSettings, hall_name: str, game_id: str, difficulty: Any
    ) -> tuple[dict[str, Any], TaskInstance, None]:
        if difficulty is not None and difficulty != "random":
            self._check_band(hall, hall_name, difficulty)
            band = str(difficulty)
        else:  # each band equally likely
            band = DIFFICULTY_BANDS[self.deal_seed(game_id) % len(DIFFICULTY_BANDS)]
        started = time.perf_counter()
        try:
            instance, attempts = self.deal_instance(hall, game_id, band)
        except GenerationError as exc:
            raise ServerError(
                "deal_failed",
                f"The server could not deal a {band} game for hall {hall_name!r} this time ({exc}). "
                "Try again, or choose another difficulty.",
                {"difficulty": band},
                status=503,
            ) from None
        seconds = time.perf_counter() - started
        choice = {
            "choice": "generated",
            "difficulty": band,
            "requested": difficulty is not None and difficulty != "random",
            "attempts": attempts,
            "seconds": round(seconds, 4),
        }
        return choice, instance, None  # no file: the game's record holds the whole instance

    def my_games(self, principal: Principal, limit: int = 50) -> list[dict[str, Any]]:
        """The games in which ``principal`` holds a seat, and the waiting games it created without taking one
        (so it can cancel them), newest first, among the latest :data:`MY_GAMES_SCAN` of each status; each
        summary with ``your_seats``."""
        mine = []
        for status in ("waiting", "running", "finished", "aborted"):
            for meta in self.store.list_games(status=status, limit=MY_GAMES_SCAN):
                seats = [SeatState.from_record(r) for r in meta.get("seats", [])]
                if status == "waiting":
                    self._merge_claims(meta["game_id"], seats)
                held = [s.seat for s in seats if s.user_id == principal.id]
                if held or (status == "waiting" and meta.get("created_by") == principal.id):
                    # the caller's own fact (never another's user id): the GUI offers Cancel on it
                    cancellable = status == "waiting" and meta.get("created_by") == principal.id
                    mine.append({**summarize(meta, seats), "your_seats": held, "cancellable": cancellable})
        mine.sort(key=lambda g: g.get("created_at") or 0, reverse=True)
        return mine[:limit]

    def _claim_slot(self, hall_name: str, game_id: str) -> int:
        """The hall's next game number, claimed atomically in the store (shared by every worker)."""
        with self._slot_lock:
            slot = self._next_slot.get(hall_name, int(self.store.get_value(f"hall:{hall_name}:next") or 0))
            while self.store.set_value_if_absent(f"hall:{hall_name}:slot:{slot}", game_id) != game_id:
                slot += 1
            self._next_slot[hall_name] = slot + 1
            # a hint so a restarted worker does not walk every claimed slot (only ever a lower bound)
            if slot % 16 == 0:
                self.store.set_value_if_absent(f"hall:{hall_name}:next", str(slot))
            return slot

    def list_games(self, status: Any = None, limit: Any = 100) -> list[dict[str, Any]]:
        if status is not None and status not in ("waiting", "running", "finished", "aborted"):
            raise ServerError("invalid_request", "status must be waiting, running, finished or aborted.")
        limit = max(1, min(parse_count(limit, "limit"), 1000))
        out = []
        for meta in self.store.list_games(status=status, limit=limit):
            if not self._listed(meta.get("hall")):
                continue  # e.g. practice games: nobody else joins or watches them from the lobby
            if meta.get("status") == "waiting" and held_for(meta) is not None:
                continue  # a rematch keeping its seats for its people (seat_holds.py)
            seats = [SeatState.from_record(r) for r in meta.get("seats", [])]
            if meta.get("status") == "waiting":
                self._merge_claims(meta["game_id"], seats)
            out.append(summarize(meta, seats))
        return out

    def _listed(self, hall_name: Any) -> bool:
        hall = self.settings.halls.get(hall_name) if isinstance(hall_name, str) else None
        return hall is None or hall.listed

    def _merge_claims(self, game_id: str, seats: list[SeatState]) -> None:
        """A waiting game's seats as their claims (the authority) have them: a seat left since the record
        was written is open (server/web/seat_moves.py)."""
        for seat in seats:
            if seat.accepts != "bot":
                claim = self.store.get_value(seat_claim_key(game_id, seat.seat))
                if claim:
                    holder = json.loads(claim)
                    seat.kind, seat.name, seat.user_id = holder["kind"], holder["name"], holder["user_id"]
                else:
                    seat.kind, seat.name, seat.user_id = None, None, None

    def summary(self, game_id: Any) -> dict[str, Any]:
        live = self.table.get(game_id)
        with live.lock:
            return summarize(live.meta, live.seats)

    # ------------------------------------------------------------------------------------------ joining
    def check_plays_in(self, principal: Principal, hall_name: Any) -> None:
        """``forbidden`` for a study participant's account (server/web/auth.py ``account_halls``) in any hall
        but its study's and the practice hall: a participant holds no seat outside the study, which would
        keep them from the game the matcher seats them in (and let them play as "Participant NNNN")."""
        if principal.kind != "human":
            return
        halls = account_halls(self.store, principal.id)
        if halls is not None and hall_name not in halls:
            raise ServerError(
                "forbidden",
                "This account is a study participant's: it plays the study's games only. Go back to the "
                "study's page.",
                {"hall": hall_name},
                status=403,
            )

    def join(
        self,
        game_id: Any,
        principal: Principal,
        seat: Any = None,
        on_claimed: Callable[[int], None] | None = None,
    ) -> int:
        """Take a seat (or get back the one already held): returns the seat number.

        ``on_claimed(seat)`` runs after the claim and before the game may start, so a Socket.IO client can
        enter its seat's room in time for the first pushes.
        """
        live = self.table.get(game_id)
        self.check_plays_in(principal, live.meta.get("hall"))
        with live.lock:
            own = live.seats_of(principal)
        if seat is None and own:
            return own[0]
        if isinstance(seat, int) and not isinstance(seat, bool) and seat in own:
            return seat
        if own and principal.kind == "human":
            raise ServerError(
                "seat_taken",
                "You already hold a seat in this game; a person plays one seat.",
                {"seat": own[0]},
            )
        claimed = self._claim(live.game_id, principal, seat)
        if on_claimed is not None:
            on_claimed(claimed)
        self.table.seats_changed(live.game_id)
        if self.store.get_value(waiting_ended_key(live.game_id)) in CLOSED_UNSTARTED:
            raise game_cancelled()  # a cancel (or expiry) won the race against this join: it never starts
        return claimed

    def _claim(self, game_id: str, principal: Principal, seat: Any) -> int:
        """Claim a seat for ``principal``. Under the game's lock, so the name check and the claim are one
        step in this process (the person's one seat and the seat itself are conditional writes in the
        store, which hold across processes too)."""
        live = self.table.get(game_id)
        with live.lock:
            return self._claim_locked(live, principal, seat)

    def _claim_locked(self, live: LiveGame, principal: Principal, seat: Any) -> int:
        game_id = live.game_id
        self.table.catch_up(live)
        self.table.reload_waiting_status(live)  # another join or worker may have claimed seats, or closed it
        if live.status == "aborted" and live.game is None:
            raise game_cancelled()
        if live.status != "waiting":
            raise ServerError(
                "game_full",
                "The game has started; every seat is taken. Watch it as a spectator.",
                status=409,
            )
        check_hold(live.meta, principal)
        seats = live.seats
        others = [(s.seat, s.name) for s in seats if s.taken and s.name and s.user_id != principal.id]
        if seat is not None:
            if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < len(seats):
                raise ServerError(
                    "invalid_request", f"seat must be a number from 0 to {len(seats) - 1}.", {"seat": seat}
                )
            candidates = [seats[seat]]
        else:
            # seats reserved for the caller's kind first, so an agent does not take a person's open seat
            candidates = sorted(
                (s for s in seats if not s.taken and s.accepts in ("open", principal.kind)),
                key=lambda s: s.accepts != principal.kind,
            )
        check_name_clash(principal.name, others, principal.kind)
        holder = json.dumps({"user_id": principal.id, "name": principal.name, "kind": principal.kind})
        for candidate in candidates:
            if candidate.accepts not in ("open", principal.kind):
                raise ServerError(
                    "seat_kind",
                    f"Seat {candidate.seat} is reserved for {candidate.accepts} players.",
                    {"seat": candidate.seat, "accepts": candidate.accepts},
                    status=403,
                )
            person_claim = None
            if principal.kind == "human":  # a person plays one seat: claim that first, atomically
                person_claim, held = self._claim_person(game_id, principal, candidate.seat)
                if held is not None:
                    if seat is None or seat == held:
                        return held
                    raise ServerError(
                        "seat_taken",
                        "You already hold a seat in this game; a person plays one seat.",
                        {"seat": held},
                        status=409,
                    )
            name_claim = self._claim_name(game_id, principal, candidate.seat)
            if self.store.set_value_if_absent(seat_claim_key(game_id, candidate.seat), holder) == holder:
                return candidate.seat
            if name_claim is not None:
                self.store.replace_value(name_claim[0], name_claim[1], None)
            if person_claim is not None:  # the seat went to someone else: the person holds none
                self.store.replace_value(seat_holder_key(game_id, principal.id), person_claim, None)
            if seat is not None:
                raise ServerError(
                    "seat_taken", f"Seat {seat} is taken; pick another or omit seat.", status=409
                )
        raise ServerError("game_full", "Every seat you may take in this game is taken.", status=409)

    def _claim_name(self, game_id: str, principal: Principal, seat: int) -> tuple[str, str] | None:
        """Claim the seated name's look-alike class in the game: (key, claim) to release if the seat is
        lost, or None when this principal holds it already. ``invalid_name`` when another principal's
        look-alike name holds it (or is taking a seat with it), across processes too; a claim a crash left
        behind (no seat followed) is taken back."""
        key = seated_name_key(game_id, name_key(principal.name))

        def judge(holder: dict[str, Any]) -> bool:
            if holder.get("user_id") == principal.id:
                return False
            held = holder.get("seat")
            held = held if isinstance(held, int) and held >= 0 else None
            seated = held is not None and self.store.get_value(seat_claim_key(game_id, held)) is not None
            if seated or not claim_is_stale(holder):
                raise ServerError(
                    "invalid_name",
                    f"Your name {principal.name!r} could be mistaken for the player's at seat {held} of this "
                    "game; log in with another name to join it.",
                    {"seat": held},
                )
            return True

        claim = {"user_id": principal.id, "seat": seat, "at": round(time.time(), 3)}
        value = claim_in_store(self.store, key, claim, judge)
        return None if value is None else (key, value)

    def _claim_person(self, game_id: str, principal: Principal, seat: int) -> tuple[str | None, int | None]:
        """Claim the person's one seat of the game for ``seat``: ``(claim, None)`` when claimed,
        ``(None, held)`` when the person already holds seat ``held``; ``seat_taken`` while another of their
        joins is taking a seat. A claim a crash left behind (no seat followed) is taken back."""
        held: int | None = None

        def judge(holder: dict[str, Any]) -> bool:
            nonlocal held
            taking = holder.get("seat")
            if isinstance(taking, int) and taking >= 0:
                seat_claim = self.store.get_value(seat_claim_key(game_id, taking))
                if seat_claim is not None and json.loads(seat_claim).get("user_id") == principal.id:
                    held = taking
                    return False
            if not claim_is_stale(holder):
                raise ServerError(
                    "seat_taken",
                    "You are already taking a seat in this game; a person plays one seat.",
                    {"seat": taking},
                    status=409,
                )
            return True

        claim = {"seat": seat, "at": round(time.time(), 3)}
        value = claim_in_store(self.store, seat_holder_key(game_id, principal.id), claim, judge)
        return (value, None) if value is not None else (None, held)

    # -------------------------------------------------------------------------------------- cancelling
    def cancel_game(self, game_id: Any, principal: Principal) -> dict[str, Any]:
        """The creator (or an admin) closes a game that still waits for players: it is aborted with the
        reason ``cancelled``, its seated players are told (``game_cancelled``), its open-game slot is freed.
        ``forbidden`` for anyone else; ``not_waiting`` once it has started (or closed)."""
        live = self.table.get(game_id)
        with live.lock:
            creator = live.meta.get("created_by")
        if not principal.is_admin and (creator is None or creator != principal.id):
            raise ServerError("forbidden", "Only the player who created this game may cancel it.", status=403)
        self.table.close_waiting(live.game_id, "cancelled")
        return self.summary(live.game_id)


def check_creator_can_sit(creator: Principal, seat_states: list[SeatState]) -> None:
    """Refuse a create-with-join whose creator could take no seat: none accepts their kind
    (``invalid_seats``), or their name could be mistaken for a bot seat's or a reserved word
    (``invalid_name``)."""
    if not any(state.accepts in ("open", creator.kind) for state in seat_states):
        raise ServerError(
            "invalid_seats",
            f"With join, at least one seat must be open or reserved for {creator.kind} players.",
            {"accepts": [state.accepts for state in seat_states]},
        )
    check_name_clash(
        creator.name, [(state.seat, state.name) for state in seat_states if state.name], creator.kind
    )


def check_name_clash(name: str, others: list[tuple[int, str]], kind: NameKind) -> None:
    """Refuse a seated name that could be mistaken for another seat's or a reserved word (``invalid_name``,
    naming the seat, never its holder's id); ``kind`` catches a person's name that was stored before the name
    rule and reads as a bot's."""
    clash = name_clash(name, [other for _, other in others], kind)
    if clash is None:
        return
    seat = next((number for number, other in others if other == clash), None)
    where = f"{clash!r} at seat {seat} of this game" if seat is not None else f"the reserved name {clash!r}"
    raise ServerError(
        "invalid_name",
        f"Your name {name!r} could be mistaken for {where}; log in with another name to join it.",
        {"seat": seat},
    )


def game_cancelled() -> ServerError:
    return ServerError(
        "game_cancelled",
        "This game was closed before it started (cancelled by its creator, expired or aborted).",
        status=409,
    )


OVER_STATUSES = ("finished", "aborted")


def summarize(meta: dict[str, Any], seats: list[SeatState]) -> dict[str, Any]:
    """A game as the lobby shows it: no targets, no user ids, and no instance id until the game is over
    (the id names a public task file that holds every target; the seed and the draw stay researcher-only)."""
    over = meta.get("status") in OVER_STATUSES
    return {
        "game_id": meta["game_id"],
        "hall": meta.get("hall"),
        "title": meta.get("title"),
        "ruleset": meta.get("ruleset"),
        "mode": meta.get("mode"),
        "instance_id": meta.get("instance_id") if over else None,
        "status": meta.get("status"),
        "players": len(seats),
        "open_seats": [s.seat for s in seats if not s.taken],
        "seats": [s.public() for s in seats],
        "winners": meta.get("winners"),
        "created_at": meta.get("created_at"),
    }


@lru_cache(maxsize=16)
def published_deals(ruleset: str) -> tuple[frozenset[frozenset[tuple[str, int]]], frozenset[tuple[str, ...]]]:
    """Every hand and every list of targets in the shipped (public) instance files of ``ruleset``."""
    hands: set[frozenset[tuple[str, int]]] = set()
    targets: set[tuple[str, ...]] = set()
    for instance in iter_instances(ruleset):
        hands.update(frozenset(hand.items()) for hand in instance.hands)
        targets.add(_target_key(instance))
    return frozenset(hands), frozenset(targets)


def _target_key(instance: TaskInstance) -> tuple[str, ...]:
    return tuple(f"{count} {item}" for target in instance.targets for item, count in sorted(target.items()))


def repeats_published(instance: TaskInstance, ruleset: str) -> bool:
    """Whether a deal gives away its targets through the public files: one of its hands is a shipped hand,
    or its targets are a shipped instance's (seat by seat)."""
    hands, targets = published_deals(ruleset)
    return (
        any(frozenset(hand.items()) in hands for hand in instance.hands) or _target_key(instance) in targets
    )


def _ruleset_hash(name: str) -> str | None:
    """The content hash of a hall's rule set (None if it cannot be loaded: starting the game says why)."""
    try:
        return load_rule_set(name).content_hash
    except RuleSetError:
        return None
