"""Policies that fill bot seats, found without importing them: the server knows only the policy contract.

Policies (bots, scripted players, LLM agents) are plug-ins. By default the server asks the registry named
by the ``tradecraft.policy_registry`` entry point (``make_policy(spec, seed)`` and ``policy_names()``);
``create_app(policy_factory=...)`` injects another. A policy has ``act(view, legal) -> dict`` and
optionally ``observe(events)`` and ``drain_traces()`` (the contract: ``server/game/policy.py``; how the server
runs them: docs/protocol.md, "Bots"); whatever it answers is validated like a client's action.

Seeds: one live policy per (game, seat), built with :func:`policy_seed` (the game seed and the seat), kept
across moves and fed the seat's events; a policy rebuilt after a restart gets the same seed and the seat's
whole log, so it plays on as the lost one would have. After a refused move a policy with a ``refused(error)``
hook (an LLM agent) is told the engine's typed error and asked again; any other policy's retry is asked of a
one-move policy built with another seed (:func:`policy_seed` with the move key and the attempt number), or it
would repeat the same move.

This module also holds the thread pool bot moves are decided on (:class:`BotExecutor`), who may seat which
policy (:meth:`BotRegistry.require`), and the bounds on trace records (:func:`bound_trace`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import queue
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol

from server.game import Game
from server.table.config import Settings
from server.table.errors import ServerError
from server.table.policy_specs import SpecError, check_no_credentials, policy_name

log = logging.getLogger(__name__)

POLICY_REGISTRY_GROUP = "tradecraft.policy_registry"


class SeatPolicy(Protocol):
    """What the server needs of a policy (``observe(events)`` and ``drain_traces()`` are optional)."""

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]: ...


PolicyFactory = Callable[[str, int], SeatPolicy]
"""``factory(spec, seed)``: a fresh policy for a spec such as ``"random"``; raises ``ValueError``
(with ``code`` and ``message`` where it can) for a spec it does not know."""


def bot_move_key(game: Game, seat: int) -> str:
    """Where ``seat`` is in its own play: the turn, the phase and its crafts so far in this phase.

    It names one move of the seat: the retry seeds and the client action id of a bot's move are keyed by it
    (not by the log position: in the craft phase every seat acts at once, so the log position of a seat's
    move depends on how the server's threads interleaved the seats).
    """
    return f"{game.turn}:{game.phase}:{len(game.crafts_this_phase(seat))}"


def bot_seed(game_seed: int, seat: int, seq: int | str = 0, attempt: int = 0) -> int:
    """A stable 63-bit seed for the policy of ``seat`` (``seq``/``attempt`` > 0: a rebuilt policy; ``seq`` may
    be a :func:`bot_move_key`)."""
    key = f"{game_seed}:{seat}:{seq}" + (f":{attempt}" if attempt else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def policy_seed(game_seed: int, seat: int, move_key: str = "", attempt: int = 0) -> int:
    """The seed the server builds a seat's policy with: :func:`bot_seed` of the game seed and the seat for
    the seat's live policy (``attempt`` 0), of the move key and the attempt for a retry's one-move policy."""
    return bot_seed(game_seed, seat) if attempt == 0 else bot_seed(game_seed, seat, move_key, attempt)


def bot_action_id(seat: int, move_key: str) -> str:
    """The client action id a bot's move is submitted with: a second answer to the same move (another
    worker's, a late one) is recognised and dropped instead of applied twice."""
    return f"bot:{seat}:{move_key}"


def installed_policies() -> tuple[PolicyFactory, Callable[[], list[str]]]:
    """``(make_policy, policy_names)`` of the registry the installed packages name; a clear error if none."""
    found = list(entry_points(group=POLICY_REGISTRY_GROUP, name="default"))
    if not found:
        raise RuntimeError(
            f"No policy registry is installed (entry point group {POLICY_REGISTRY_GROUP!r}): install the "
            "tradecraft package (pip install -e .) or pass create_app(policy_factory=...)."
        )
    registry = found[0].load()
    return registry.make_policy, registry.policy_names


class BotRegistry:
    """The server's view of the policies: check a spec, build a policy, with the server's typed errors.

    ``settings`` says which policies are restricted (``bots.restricted_policies``, e.g. LLM agents, which
    cost money) and which of their specs may be seated (``bots.allowed_specs`` and the halls' own seats);
    without settings every restricted policy is refused in :meth:`require`.
    """

    def __init__(
        self,
        factory: PolicyFactory | None = None,
        names: Callable[[], list[str]] | None = None,
        settings: Settings | None = None,
    ) -> None:
        if factory is None:
            factory, installed_names = installed_policies()
            names = names or installed_names
        self._factory = factory
        self._names = names or (lambda: [])
        self.settings = settings

    def names(self) -> list[str]:
        return sorted(self._names())

    def seatable(self) -> list[str]:
        """What a game's creator may seat as a bot: every installed policy that is not restricted, then the
        restricted specs the operator lists in ``bots.allowed_specs`` (the lobby's and ``GET /api/bots``'
        choices; a restricted name alone, e.g. ``llm``, could never be seated)."""
        free = [name for name in self.names() if self.allowed(name)]
        listed = sorted(self.settings.bots.allowed_specs) if self.settings else []
        return free + [spec for spec in listed if spec not in free]

    def require(self, spec: str, hall: str | None = None) -> str:
        """``spec`` if it may be seated and a policy can be built from it, else a typed error:
        ``credentials_in_spec``, ``bot_not_allowed`` (a restricted policy whose exact spec is not listed in
        ``bots.allowed_specs`` nor in the seats of hall ``hall``, or of any hall when ``hall`` is None),
        ``unknown_bot`` or ``invalid_bot_spec``."""
        if not isinstance(spec, str) or not spec:
            raise ServerError("invalid_bot_spec", "Name the bot with a policy spec such as 'random'.")
        try:
            check_no_credentials(spec)
        except SpecError as err:
            raise ServerError(err.code, err.message, {"bot": spec.split("?", 1)[0][:100]}) from None
        if not self.allowed(spec, hall):
            allowed = sorted(self.settings.bots.allowed_specs) if self.settings else []
            raise ServerError(
                "bot_not_allowed",
                f"Policy {policy_name(spec)!r} costs money or calls outside services, so only the specs the "
                f"operator lists can be seated ({', '.join(allowed) or 'none here'}); pick one of those or a "
                "built-in bot such as random.",
                {"bot": spec[:300], "allowed": allowed},
                status=403,
            )
        self.make(spec, 0)
        return spec

    def allowed(self, spec: str, hall: str | None = None) -> bool:
        """Whether a game's creator may seat ``spec`` (see :meth:`require`)."""
        restricted = {"llm"} if self.settings is None else set(self.settings.bots.restricted_policies)
        if policy_name(spec) not in {name.lower() for name in restricted}:
            return True
        if self.settings is None:
            return False
        if spec in self.settings.bots.allowed_specs:
            return True
        known_hall = hall is None or hall in self.settings.halls
        return known_hall and spec in self.settings.hall_bot_specs(hall)

    def make(self, spec: str, seed: int) -> SeatPolicy:
        try:
            return self._factory(spec, seed)
        except ValueError as err:
            code = getattr(err, "code", "unknown_bot")
            message = getattr(err, "message", None) or str(err)
            raise ServerError(code, message, {"bot": str(spec)[:300]}) from None


# ------------------------------------------------------------------------------------------- live policies
@dataclass
class LivePolicy:
    """A seat's policy as the server keeps it between moves (guarded by the game's lock, except ``policy``
    itself, which only the thread deciding the seat's move in flight touches).

    ``delivered`` counts the game's events already looked at for this seat and ``observed`` the seat's own
    events handed to ``observe`` (the ``n`` of the next one), so each is handed over exactly once, in order.
    """

    spec: str
    seed: int
    policy: SeatPolicy | None = None  # built on the bot executor at its first move
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


# --------------------------------------------------------------------------------------------- the executor
class BotExecutor:
    """A bounded pool of threads for bot decisions, apart from the deadline timers.

    A slow policy (an LLM call, a deep search) only holds one of these threads. A move abandoned past its time
    limit cannot be stopped (Python threads cannot be killed), so its thread is written off: a fresh one
    takes its place, up to ``max_abandoned`` at a time, and the stuck one ends when the policy returns.
    """

    def __init__(self, workers: int, max_abandoned: int = 64) -> None:
        self._workers = workers
        self._max_abandoned = max_abandoned
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._written_off: set[int] = set()  # idents of threads whose move was abandoned
        self._threads: list[threading.Thread] = []
        self._closed = False
        for _ in range(workers):
            self._start_thread()

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                return
        self._tasks.put(task)

    def write_off(self, thread_ident: int | None) -> None:
        """The move running on ``thread_ident`` was abandoned: replace its thread (within the bound)."""
        with self._lock:
            if self._closed or thread_ident is None or thread_ident in self._written_off:
                return
            if len(self._written_off) >= self._max_abandoned:
                log.error(
                    "%d bot moves hang past their time limit; no more threads are added for them",
                    len(self._written_off),
                )
                return
            self._written_off.add(thread_ident)
            self._start_thread()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._tasks.put(None)

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._work, name="tc-bot", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _work(self) -> None:
        me = threading.get_ident()
        while True:
            task = self._tasks.get()
            if task is None:
                return
            try:
                task()
            except Exception:
                log.exception("a bot move failed outside its own error handling")
            with self._lock:
                if me in self._written_off:  # a replacement took this thread's place meanwhile
                    self._written_off.discard(me)
                    return


# ---------------------------------------------------------------------------------------------- traces
#: Environment variables whose values are credentials: their values are cut out of any trace text.
_SECRET_ENV = re.compile(r"(_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_TRUNCATION_MARK = "…[truncated]"


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the credential-like environment variables (8+ characters), longest first."""
    environ = os.environ if environ is None else environ
    found = {v for k, v in environ.items() if _SECRET_ENV.search(k) and len(v) >= 8}
    return sorted(found, key=len, reverse=True)


def bound_trace(
    record: Mapping[str, Any], max_bytes: int, secrets: list[str] | tuple[str, ...] = ()
) -> dict[str, Any]:
    """``record`` made safe to store: JSON-safe (``repr`` for what JSON cannot hold), no provider key in any
    string (a credential the server's environment holds becomes ``[redacted]``), and at most ``max_bytes``
    of JSON: long strings are cut (``…[truncated]``) and the record gets ``"truncated": true`` and its
    original size ``"original_bytes"``; a record still too big keeps only its scalar fields."""
    text = json.dumps(_finite(record), default=repr, ensure_ascii=False, separators=(",", ":"))
    for secret in secrets:
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]  # as the secret appears inside JSON text
        if escaped in text:
            text = text.replace(escaped, "[redacted]")
    bounded: dict[str, Any] = json.loads(text)
    size = len(text.encode("utf-8"))
    if size <= max_bytes:
        return bounded
    limit = max(64, max_bytes // 8)
    while True:
        cut = _cut_strings(bounded, limit)
        cut.update(truncated=True, original_bytes=size)
        if len(json.dumps(cut, ensure_ascii=False).encode("utf-8")) <= max_bytes or limit <= 16:
            break
        limit //= 2
    if len(json.dumps(cut, ensure_ascii=False).encode("utf-8")) > max_bytes:
        cut = {k: v for k, v in cut.items() if isinstance(v, int | float | bool) or v is None}
        cut.update(truncated=True, original_bytes=size)
    if len(json.dumps(cut, ensure_ascii=False).encode("utf-8")) > max_bytes:
        # thousands of scalar fields: only the log's own keys and the note of what was dropped are kept
        cut = {k: cut[k] for k in ("seat", "event_seq", "time") if k in cut}
        cut.update(truncated=True, original_bytes=size)
    return cut


def _finite(value: Any) -> Any:
    """NaN and infinities (which JSON cannot hold) become None; containers are copied, dict keys as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + _TRUNCATION_MARK
    if isinstance(value, list):
        kept = [_cut_strings(v, limit) for v in value[: max(1, limit // 4)]]
        return kept + ([_TRUNCATION_MARK] if len(value) > len(kept) else [])
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    return value
