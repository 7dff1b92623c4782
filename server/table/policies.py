"""Which policies may fill bot seats, and how they are built and seeded, without importing them.

Policies (bots, scripted players, LLM agents) are plug-ins. By default the table asks the registry named
by the ``tradecraft.policy_registry`` entry point (``make_policy(spec, seed)`` and ``policy_names()``);
``create_app(policy_factory=...)`` injects another. The contract is :mod:`server.game.policy`; how the table
runs them is :mod:`server.table.bot_seats` (docs/protocol.md, "Bots").

Seeds: one live policy per (game, seat), built with :func:`policy_seed` (the game seed and the seat), kept
across moves and fed the seat's events; a policy rebuilt after a restart gets the same seed and the seat's
whole log, so it plays on as the lost one would have. A retry of a policy that cannot be told why its answer
was refused is asked of a one-move policy built with another seed (:func:`policy_seed` with the move key and
the attempt number), or it would repeat the same move.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from server.game.policy import Policy
from server.table.config import Settings
from server.table.errors import ServerError
from server.table.model_catalog import ModelCatalog, public_spec
from server.table.policy_specs import SpecError, check_no_credentials, model_of, policy_name

POLICY_REGISTRY_GROUP = "tradecraft.policy_registry"


PolicyMaker = Callable[[str, int], Policy]
"""``make_policy(spec, seed)``: a fresh policy for a spec such as ``"random?accept_probability=0.9"`` (the
registry's, over the per-policy :data:`server.game.policy.PolicyMaker` entry points); raises ``ValueError``
(with ``code`` and ``message`` where it can) for a spec it does not know."""


def bot_seed(game_seed: int, seat: int, seq: int | str = 0, attempt: int = 0) -> int:
    """A stable 63-bit seed for the policy of ``seat`` (``seq``/``attempt`` > 0: a rebuilt policy; ``seq`` may
    be a move key (:func:`server.game.views.move_key`))."""
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


def installed_policies() -> tuple[PolicyMaker, Callable[[], list[str]]]:
    """``(make_policy, policy_names)`` of the registry the installed packages name; a clear error if none."""
    found = list(entry_points(group=POLICY_REGISTRY_GROUP, name="default"))
    if not found:
        raise RuntimeError(
            f"No policy registry is installed (entry point group {POLICY_REGISTRY_GROUP!r}): install the "
            "tradecraft package (pip install -e .) or pass create_app(policy_factory=...)."
        )
    registry = found[0].load()
    return registry.make_policy, registry.policy_names


def installed_descriptions() -> Callable[[], list[dict[str, Any]]] | None:
    """The installed registry's ``describe_policies`` (each policy's name, plain name, description and
    strength, as the policies declare them), or None when none is installed."""
    found = list(entry_points(group=POLICY_REGISTRY_GROUP, name="default"))
    describe = getattr(found[0].load(), "describe_policies", None) if found else None
    return describe if callable(describe) else None


#: The order the lobby lists opponents in: LLMs, then built-in bots from the easiest, scripted partners last.
STRENGTH_ORDER = {"easy": 0, "medium": 1, "hard": 2, "varies": 3, "scripted": 4}


def _lobby_order(opponent: dict[str, Any]) -> tuple[bool, bool, int, str]:
    rank = STRENGTH_ORDER.get(opponent["strength"] or "", 3)
    return (opponent["kind"] != "llm", opponent["available"] is False, rank, opponent["name"])


class BotRegistry:
    """The server's view of the policies: check a spec, build a policy, with the server's typed errors.

    ``settings`` says which policies are restricted (``bots.restricted_policies``, e.g. LLM agents, which
    cost money) and which of their specs may be seated (``bots.allowed_specs`` and the halls' own seats);
    without settings every restricted policy is refused in :meth:`require`.
    """

    def __init__(
        self,
        factory: PolicyMaker | None = None,
        names: Callable[[], list[str]] | None = None,
        settings: Settings | None = None,
    ) -> None:
        if factory is None:
            factory, installed_names = installed_policies()
            names = names or installed_names
        self._describe = installed_descriptions()
        self._factory = factory
        self._names = names or (lambda: [])
        self.settings = settings
        # the operator's LLM opponents (bots.models): seatable by anyone while their provider answers
        self.models = ModelCatalog(settings.bots) if settings is not None else None
        self._cards: dict[str, dict[str, Any]] | None = None
        self._cards_lock = threading.Lock()

    def names(self) -> list[str]:
        return sorted(self._names())

    def seatable(self) -> list[str]:
        """What a game's creator may seat as a bot: every installed policy that is not restricted, then the
        restricted specs the operator lists in ``bots.allowed_specs`` (the lobby's and ``GET /api/bots``'
        choices; a restricted name alone, e.g. ``llm``, could never be seated)."""
        free = [name for name in self.names() if self.allowed(name)]
        listed = sorted(self.settings.bots.allowed_specs) if self.settings else []
        models = [self.models.public_id(entry) for entry in self.models.entries] if self.models else []
        return free + [spec for spec in listed + models if spec not in free]

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
            # shown without options: an allowed spec may name the operator's servers (base_url)
            listed = self.settings.bots.allowed_specs if self.settings else []
            allowed = sorted({public_spec(listed_spec) for listed_spec in listed})
            raise ServerError(
                "bot_not_allowed",
                f"Policy {policy_name(spec)!r} costs money or calls outside services, so only the specs the "
                f"operator lists can be seated ({', '.join(allowed) or 'none here'}); pick one of those or a "
                "built-in bot such as random.",
                {"bot": spec[:300], "allowed": allowed},
                status=403,
            )
        if self.models is not None:
            self.models.require_available(spec)  # model_unavailable: a seat that would stall
        self.make(spec, 0)
        return spec

    def allowed(self, spec: str, hall: str | None = None) -> bool:
        """Whether a game's creator may seat ``spec`` (see :meth:`require`)."""
        restricted = {"llm"} if self.settings is None else set(self.settings.bots.restricted_policies)
        if policy_name(spec) not in {name.lower() for name in restricted}:
            return True
        if self.settings is None:
            return False
        if spec in self.settings.bots.allowed_specs or (self.models and self.models.entry(spec)):
            return True
        known_hall = hall is None or hall in self.settings.halls
        return known_hall and spec in self.settings.hall_bot_specs(hall)

    def start_models(self) -> None:
        """At the server's start: refuse a listed model whose spec no policy accepts (:class:`SettingsError`
        naming the entry), then check the providers and describe the policies in the background."""
        if self.models is not None:
            self.models.check(self.make, self.names())
            self.models.start()
        threading.Thread(target=self._policy_cards, name="describe-policies", daemon=True).start()

    def _policy_cards(self) -> dict[str, dict[str, Any]]:
        """Each installed policy's declaration (``describe_policies``), read once: it imports every policy."""
        with self._cards_lock:
            if self._cards is None:
                try:
                    described = self._describe() if self._describe else []
                except Exception:  # plain names are a nicety: the raw ids still work
                    described = []
                self._cards = {entry["name"]: entry for entry in described}
            return self._cards

    def seat_name(self, spec: str) -> str:
        """The one rule naming a bot seat playing ``spec`` (the lobby's default seat name, a rematch's, the
        ratings' and histories' name for the bot): a listed model's name, else ``"<policy spec> bot"``
        without the spec's options (they may name the operator's servers)."""
        entry = self.models.entry(spec) if self.models else None
        return entry.name if entry is not None else f"{public_spec(spec)} bot"

    def full_spec(self, spec: str) -> str:
        """The spec a policy is built from: a listed model's own (players name it by its public id)."""
        entry = self.models.entry(spec) if self.models else None
        return entry.spec if entry is not None else spec

    def opponents(self) -> list[dict[str, Any]]:
        """What the lobby offers as bot seats (:meth:`seatable`), each with a plain ``name``, a one-line
        ``description``, ``strength``, ``cost_note`` and availability (``available`` None: not checked yet;
        built-in bots are always available); policies whose card says ``in_lobby`` False are left out.
        ``kind`` is ``llm`` (calls a model: costs money) or ``bot``."""
        cards = self._policy_cards()
        restricted = {"llm"} if self.settings is None else set(self.settings.bots.restricted_policies)
        out = []
        for spec in self.seatable():
            entry = self.models.entry(spec) if self.models else None
            card = cards.get(policy_name(spec), {})
            if entry is not None:
                status = self.models.availability(spec) if self.models else None
                out.append(
                    {
                        "spec": spec,
                        "kind": "llm",
                        "name": entry.name,
                        "description": entry.description,
                        "strength": card.get("strength"),
                        "cost_note": entry.cost_note,
                        **(status.public() if status else {}),
                    }
                )
                continue
            if card.get("in_lobby") is False:
                continue  # a test stand-in: seatable by its spec, not offered to players
            name = card.get("display_name") or spec
            model = model_of(spec)
            out.append(
                {
                    "spec": spec,
                    "kind": "llm" if policy_name(spec) in {n.lower() for n in restricted} else "bot",
                    "name": f"{name} ({model})" if model else name,
                    "description": card.get("description") or card.get("summary") or "",
                    "strength": card.get("strength"),
                    "cost_note": "",
                    "available": True,
                    "reason": "",
                    "checked_at": None,
                }
            )
        return sorted(out, key=_lobby_order)

    def make(self, spec: str, seed: int) -> Policy:
        try:
            return self._factory(self.full_spec(spec), seed)
        except ValueError as err:
            code = getattr(err, "code", "unknown_bot")
            message = getattr(err, "message", None) or str(err)
            raise ServerError(code, message, {"bot": str(spec)[:300]}) from None
