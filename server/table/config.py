"""Server settings: one validated pydantic model, read from ``settings.yaml`` and the environment.

Precedence (later wins): the defaults declared below, the YAML file (``--config FILE``, env
``TRADECRAFT_CONFIG``, else ``settings.yaml`` next to ``run_server.py``), environment variables
``TRADECRAFT__SECTION__KEY=value`` (any depth; names are case-insensitive; the value is read as YAML when
it is a list, a mapping or ``null``, otherwise as a plain string that pydantic converts), then explicit
overrides (``--host``/``--port``). Unknown keys are errors, so a typo never silently does nothing.

Every key is documented where it is declared (``Field(description=...)``) and, for users, in the
comments of ``settings.yaml``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from craft_rules.errors import TradeCraftError
from server.game.settings import GameSettings
from server.table.names import normalise_name
from server.table.policy_specs import SpecError, check_no_credentials, policy_name

ENV_PREFIX = "TRADECRAFT__"
CONFIG_ENV_VAR = "TRADECRAFT_CONFIG"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG_PATH = PROJECT_ROOT / "settings.yaml"


class SettingsError(TradeCraftError, ValueError):
    """The settings cannot be used; the message names the key and where its value came from."""

    code = "invalid_server_settings"

    def __init__(self, message: str) -> None:
        super().__init__(self.code, message)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ServerSection(_Section):
    host: str = Field("127.0.0.1", description="interface to listen on (0.0.0.0 = every interface)")
    port: int = Field(5000, ge=0, le=65535, description="TCP port to listen on (0 = any free port)")
    data_dir: Path = Field(
        Path("data"), description="folder for the embedded database; relative to the settings file's folder"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="logging threshold")
    max_payload_bytes: int = Field(
        1_000_000,
        ge=1024,
        description="largest HTTP body or Socket.IO message accepted; bigger ones are refused outright",
    )
    max_action_bytes: int = Field(
        16_384,
        ge=256,
        description="largest single action (as JSON) accepted; bigger ones get the error payload_too_large",
    )
    # Bounds of the production deployment (docs/deployment.md). An address is the TCP peer's: behind a
    # proxy every client has the proxy's address, so raise these there (no forwarded header is trusted).
    max_connections: int = Field(
        10_000,
        ge=10,
        description="open TCP connections one gunicorn worker serves at once (gunicorn worker_connections); "
        "keep the process's open-file limit above it",
    )
    header_timeout_seconds: float = Field(
        10,
        gt=0,
        description="seconds a client has to send a request line and its headers, and the longest idle time "
        "between requests on a kept-alive connection; then the connection is closed (slow clients)",
    )
    max_sockets_per_address: int = Field(
        100,
        ge=1,
        description="Socket.IO connections (WebSocket or long-polling) one network address may hold open; "
        "one more is refused with too_many_connections",
    )
    max_waits_per_address: int = Field(
        50,
        ge=1,
        description="REST long polls (GET /api/games/<id>/events?wait=) one network address may hold open; "
        "one more is refused with too_many_waits",
    )
    max_waits_per_user: int = Field(
        8, ge=1, description="REST long polls one user (or API token) may hold open; one more: too_many_waits"
    )
    max_connections_per_address: int = Field(
        200,
        ge=1,
        description="open TCP connections (of any kind) one network address may hold on a gunicorn worker; "
        "one more is answered too_many_connections and closed",
    )
    body_timeout_seconds: float = Field(
        30,
        gt=0,
        description="seconds a client has to send a request's whole body once its headers arrived (gevent "
        "worker); then it is answered request_timeout and the connection is closed (slow clients)",
    )
    query_threads: int = Field(
        2,
        ge=1,
        description="OS threads that answer queries under the gevent worker, off its event loop; more "
        "queries wait for one",
    )
    max_queries_per_user: int = Field(
        2, ge=1, description="queries one user (or API token) may have in flight; one more: too_many_queries"
    )
    max_queries_per_address: int = Field(
        8,
        ge=1,
        description="queries one network address may have in flight (logged in or not); one more: "
        "too_many_queries",
    )


class DatabaseSection(_Section):
    uri: str | None = Field(
        None,
        description="store URL: sqlite:///ABS/PATH.db or mongodb://HOST:PORT/DB; "
        "null = sqlite:///<data_dir>/tradecraft.db",
    )


class SecuritySection(_Section):
    secret_key: SecretStr | None = Field(
        None,
        description="key that signs session cookies; null = generated once and kept in the store "
        "so every worker shares it",
    )
    admin_password: SecretStr | None = Field(
        None, description="password of the admin area and admin API; null = admin area disabled"
    )
    session_cookie_name: str = Field(
        "tradecraft_session", description="name of the session cookie (it holds a session id only)"
    )
    session_cookie_secure: bool = Field(
        False, description="send the cookie over HTTPS only (set in production)"
    )
    session_lifetime_hours: float = Field(
        720, gt=0, description="how long a login session lasts at most, however active (absolute lifetime)"
    )
    session_idle_hours: float = Field(
        72, gt=0, description="a login session unused this long ends (REST requests and socket events use it)"
    )
    socket_session_check_seconds: float = Field(
        5,
        gt=0,
        description="how often each server process checks the sessions of its open cookie sockets, so a "
        "logout or end-sessions done in another process (several workers) ends them within this time",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="origins (scheme://host[:port]) besides the server's own host whose pages may send "
        "cookie-authenticated POST/PUT/DELETE requests to /api; socketio.cors_allowed_origins (a list) "
        "counts too",
    )


class SocketIOSection(_Section):
    message_queue: str | None = Field(
        None, description="redis://HOST:PORT/DB shared by several server processes; null = one process"
    )
    channel: str = Field("tradecraft", description="channel name on the message queue")
    cors_allowed_origins: list[str] | Literal["*"] = Field(
        default_factory=list, description="origins allowed to open a Socket.IO connection; [] = same origin"
    )
    ping_interval: float = Field(20, gt=0, description="seconds between Socket.IO heartbeats")
    ping_timeout: float = Field(
        20, gt=0, description="seconds without a heartbeat before a client is dropped"
    )


class ListedModel(_Section):
    """An LLM opponent the operator offers in the lobby (``bots.models``; server/table/model_catalog.py)."""

    name: str = Field(..., description="what the lobby and the seat show, e.g. GPT-4o mini")
    description: str = Field("", max_length=300, description="one line for players: what it is, how it plays")
    spec: str = Field(
        ...,
        max_length=300,
        description="the llm policy spec it plays with, e.g. llm:openai:gpt-4o-mini?tom=0; keys come from "
        "the environment, never from a spec",
    )
    cost_note: str = Field(
        "", max_length=120, description="what a game costs, for players: about $0.01 a game"
    )

    @field_validator("name")
    @classmethod
    def _seat_name(cls, name: str) -> str:
        return normalise_name(name, "model name", kind="bot")

    @field_validator("spec")
    @classmethod
    def _spec_without_credentials(cls, spec: str) -> str:
        try:
            return check_no_credentials(spec)
        except SpecError as err:
            raise ValueError(err.message) from None


class BotsSection(_Section):
    """Bot and LLM-agent seats the server plays itself (server/table/bot_seats.py and bot_executor.py)."""

    default: str = Field("random", description="built-in bot used for bot seats that name none")
    move_delay_seconds: float = Field(
        0.5, ge=0, description="pause before a built-in bot acts, so people can follow the game"
    )
    max_failures: int = Field(
        3, ge=1, description="illegal moves a bot may make in a row before its seat resigns"
    )
    workers: int = Field(
        16,
        ge=1,
        le=512,
        description="threads deciding bot moves (apart from the deadline timers): at most this many policies "
        "think at once, the others wait their turn",
    )
    move_time_limit_seconds: float = Field(
        360,
        gt=0,
        description="longest a policy may take over one move (waiting for a thread included); then the move "
        "is abandoned and the fallback policy plays it. Keep it above an LLM agent's own move_seconds "
        "(300 by default), so the agent's own, traced fallback comes first",
    )
    fallback: str = Field(
        "random",
        description="fast built-in policy that plays a move whose policy ran out of time (then the seat's "
        "own policy is rebuilt for the next move)",
    )
    max_abandoned_threads: int = Field(
        64,
        ge=0,
        description="threads of abandoned (still running) moves replaced by fresh ones; past it, a hung "
        "policy keeps its thread and the others share the rest",
    )
    restricted_policies: list[str] = Field(
        default_factory=lambda: ["llm"],
        description="policy names that cost money or call outside services: a game's creator may seat one "
        "only with a spec listed in allowed_specs or in a hall's seats",
    )
    allowed_specs: list[str] = Field(
        default_factory=list,
        description="exact specs of restricted policies any game creator may seat, e.g. "
        "llm:openai:gpt-4o-mini?tom=0; provider keys come from the environment, never from a spec",
    )
    models: list[ListedModel] = Field(
        default_factory=list,
        max_length=50,
        description="LLM opponents a game's creator may pick in the lobby (name, description, spec, "
        "cost_note); seatable without listing their specs in allowed_specs",
    )
    model_probe_timeout_seconds: float = Field(
        3.0,
        gt=0,
        le=30,
        description="longest one availability check of a listed model's provider may take (GET <base "
        "URL>/models: no tokens spent); slower = unavailable",
    )
    model_probe_interval_seconds: float = Field(
        300.0,
        ge=5,
        description="how long a listed model's availability is trusted before it is checked again (in the "
        "background, when the lobby next asks)",
    )
    trace_max_bytes: int = Field(
        65_536,
        ge=1024,
        le=1_000_000,
        description="largest trace record kept (JSON bytes); longer strings in a record are cut, marked "
        "truncated",
    )
    traces_per_game: int = Field(
        2_000,
        ge=0,
        le=100_000,
        description="trace records kept per game; later ones are dropped (logged once per game). A game's "
        "traces take at most traces_per_game x trace_max_bytes (128 MB with the defaults)",
    )

    @field_validator("default", "fallback", "allowed_specs")
    @classmethod
    def _no_credentials(cls, value: Any) -> Any:
        for spec in value if isinstance(value, list) else [value]:
            try:
                check_no_credentials(spec)
            except SpecError as err:
                raise ValueError(err.message) from None
        return value

    @model_validator(mode="after")
    def _models_unique(self) -> BotsSection:
        for what in ("name", "spec"):
            seen: set[str] = set()
            for index, entry in enumerate(self.models):
                value = getattr(entry, what)
                if value in seen:
                    raise ValueError(f"bots.models[{index}] ({entry.name!r}) repeats the {what} {value!r}")
                seen.add(value)
        return self

    @model_validator(mode="after")
    def _fallback_is_free(self) -> BotsSection:
        if policy_name(self.fallback) in {name.lower() for name in self.restricted_policies}:
            raise ValueError(
                f"bots.fallback {self.fallback!r} is a restricted policy; the fallback must be a fast "
                "built-in bot such as random"
            )
        return self


class RoomsSection(_Section):
    keep_finished_games: int = Field(
        200, ge=0, description="finished games kept in memory (older ones reload from the store on demand)"
    )
    long_poll_max_seconds: float = Field(
        30, ge=0, description="longest wait a REST client may ask for when polling for new events"
    )
    rematch_hold_minutes: float = Field(
        10,
        ge=0,
        le=1440,
        description="a rematch keeps its seats for the finished game's people this long: unlisted in the "
        "lobby, a stranger's join refused (seat_held); then it opens to anyone like any waiting game",
    )


class RatingsSection(_Section):
    """Players' ratings and the leaderboard (server/table/ratings.py, docs/ratings.md)."""

    min_games: int = Field(
        5,
        ge=1,
        le=1000,
        description="rated games a player needs to be ranked on the leaderboard (fewer: listed apart)",
    )


class RateRule(_Section):
    """At most ``count`` events per ``seconds`` (a fixed window; see server/web/limits.py)."""

    count: int = Field(..., ge=1, description="events allowed per window")
    seconds: float = Field(..., gt=0, le=86_400, description="window length in seconds")


class LimitsSection(_Section):
    """Abuse limits (server/web/limits.py). A rule set to null is not enforced."""

    storage: str | None = Field(
        None,
        description="where counters live: null = in this process (each worker counts alone, so W workers "
        "allow up to W times a limit); redis://HOST:PORT/DB = shared by every worker",
    )
    games_per_user: RateRule | None = Field(
        RateRule(count=60, seconds=600), description="games one user or API token may create per window"
    )
    games_per_address: RateRule | None = Field(
        RateRule(count=600, seconds=600), description="games one network address may create per window"
    )
    logins_per_address: RateRule | None = Field(
        RateRule(count=600, seconds=600), description="display-name logins from one address per window"
    )
    admin_failures_per_address: RateRule | None = Field(
        RateRule(count=10, seconds=600),
        description="wrong admin passwords from one address per window; then every admin password from it is "
        "refused until the window ends",
    )
    password_failures_per_address: RateRule | None = Field(
        RateRule(count=20, seconds=600),
        description="wrong passwords or login tokens for kept names from one address per window; then every "
        "password login from it is refused until the window ends",
    )
    password_failures_per_name: RateRule | None = Field(
        RateRule(count=10, seconds=600),
        description="wrong passwords or login tokens for one kept name per window, from any address",
    )
    open_games_per_user: int | None = Field(
        10, ge=1, description="games waiting for players that one user may have created; null = unbounded"
    )
    socket_events_per_connection: RateRule | None = Field(
        RateRule(count=100, seconds=2),
        description="Socket.IO events one connection may send per window (counted in each process: a "
        "connection lives in one); a fast bot game sends about 10 per second per seat",
    )
    socket_events_per_user: RateRule | None = Field(
        RateRule(count=400, seconds=2),
        description="Socket.IO events one user or API token may send per window over all its connections "
        "(a bot runner playing many games with one token shares it)",
    )
    waiting_game_expiry_minutes: float | None = Field(
        60,
        gt=0,
        description="a game still waiting for players this long after its creation is closed (aborted, "
        "reason expired), freeing its creator's open-game slot; null = never",
    )

    @field_validator("storage")
    @classmethod
    def _redis_only(cls, storage: str | None) -> str | None:
        if storage is not None and not storage.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("limits.storage is null (in-process) or a redis:// URL")
        return storage


InstanceChoice = Literal["fixed", "sequential", "random", "generated"]
SeatKindSpec = Literal["open", "human", "agent", "bot"]


#: Instance keys that only make sense with instance files.
_FILE_KEYS = ("ids", "seed", "root", "set", "first")


class InstanceSection(_Section):
    choice: InstanceChoice = Field(
        "generated",
        description="generated (a fresh instance made for each game from the server's secret seed), fixed "
        "(always ids[0]), sequential (in order, shared by every worker) or random (drawn from the files)",
    )
    ids: list[str] = Field(
        default_factory=list,
        description="task instance ids to draw from; [] = every instance of ruleset/mode",
    )
    seed: int | None = Field(
        None, description="seed of the random choice; null = a fresh seed per game (always recorded)"
    )
    root: Path | None = Field(
        None, description="folder of task instances (<ruleset>/<mode>/*.json); null = craft_rules/TC_GAMES"
    )
    set: str | None = Field(
        None,
        description="only the instances of this set (the file <ruleset>/<mode>/<set>.json), in file order; "
        "null = every file (or ids)",
    )
    first: int | None = Field(None, ge=1, description="only the first N instances of the pool; null = all")
    rotate_first_proposer: bool = Field(
        False,
        description="sequential: the r-th pass through the pool starts its games with seat r mod players "
        "(repetitions alternate who proposes first); the game's first_proposer is overridden",
    )
    max_attempts: int = Field(
        150,
        ge=1,
        le=1000,
        description="generated: draws the generator may make for one game (each about 20-50 ms); then "
        "creating the game fails with deal_failed",
    )

    @model_validator(mode="before")
    @classmethod
    def _files_mean_random(cls, data: Any) -> Any:
        """A section naming instance files but no choice draws from them at random (the former default)."""
        if isinstance(data, dict) and "choice" not in data and any(data.get(key) for key in _FILE_KEYS):
            return {**data, "choice": "random"}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> InstanceSection:
        if self.choice == "generated":
            from_files = [key for key in _FILE_KEYS if getattr(self, key)]
            if from_files:
                raise ValueError(
                    f"choice generated makes a fresh instance for each game: remove instances."
                    f"{', instances.'.join(from_files)} (or choose fixed, sequential or random to use files)"
                )
        if self.ids and self.set:
            raise ValueError("give instances.ids or instances.set, not both")
        if self.rotate_first_proposer and self.choice != "sequential":
            raise ValueError("rotate_first_proposer needs choice: sequential (repetitions are passes)")
        return self


class SeatSpec(_Section):
    """Who may take a seat: anyone logged in (open), a person, an API-token client (agent), or a bot."""

    kind: SeatKindSpec = Field("open", description="open | human | agent | bot")
    bot: str | None = Field(
        None,
        description="policy spec for kind bot, e.g. random, tom1 or llm:openai:gpt-4o?tom=0,1 (a hall may "
        "seat any installed policy; keys come from the environment); null = bots.default",
    )
    name: str | None = Field(None, description="display name of a bot seat")

    @field_validator("name")
    @classmethod
    def _name_rule(cls, name: str | None) -> str | None:
        return None if name is None else normalise_name(name, "bot seat name", kind="bot")

    @model_validator(mode="after")
    def _bot_only_for_bots(self) -> SeatSpec:
        if self.bot is not None and self.kind != "bot":
            raise ValueError(f"a seat of kind {self.kind!r} cannot name a bot; use kind: bot")
        return self


class HallSettings(_Section):
    """A game mode: which rule set, how many players, which instances, which game rules."""

    title: str = Field("", description="name shown in the lobby")
    description: str = Field("", description="one or two sentences shown in the lobby")
    ruleset: str = Field("minecraft", description="rule set name or folder")
    mode: str | None = Field(None, description="task-instance mode folder; null = 1p_v_1p style for players")
    players: int = Field(2, ge=2, le=8, description="seats per game")
    instances: InstanceSection = Field(default_factory=InstanceSection, description="instance choice")
    seats: list[SeatSpec] = Field(default_factory=list, description="per-seat kinds; [] = every seat open")
    allow_custom_seats: bool = Field(True, description="creators may choose seat kinds (e.g. add bots)")
    rated: bool = Field(True, description="finished games count for ratings (false: study, paper halls)")
    listed: bool = Field(
        True, description="shown in the lobby (its form and game lists); false: a page's own hall (practice)"
    )
    creatable: bool = Field(
        True, description="players may create games here; false: only the server itself (a study's matcher)"
    )
    game: dict[str, Any] = Field(
        default_factory=dict, description="GameSettings fields (server/game/settings.py) except ruleset"
    )

    @model_validator(mode="after")
    def _consistent(self) -> HallSettings:
        if self.seats and len(self.seats) != self.players:
            raise ValueError(f"seats lists {len(self.seats)} seats but players is {self.players}")
        if "ruleset" in self.game:
            raise ValueError("set the hall's ruleset, not game.ruleset")
        for seat in self.seats:  # a game creator's seats are checked by the lobby (BotRegistry.require)
            try:
                check_no_credentials(seat.bot or "")
            except SpecError as err:
                raise ValueError(err.message) from None
        self.game_settings()  # validates the game block now rather than at the first game
        return self

    @property
    def mode_name(self) -> str:
        return self.mode or "_v_".join(["1p"] * self.players)

    def seat_specs(self) -> list[SeatSpec]:
        return list(self.seats) if self.seats else [SeatSpec() for _ in range(self.players)]

    def game_settings(self) -> GameSettings:
        settings = GameSettings.model_validate({**self.game, "ruleset": self.ruleset})
        orders = getattr(settings, "tom_orders", None)
        if orders and len(orders) not in (0, self.players):
            raise ValueError(f"game.tom_orders has {len(orders)} entries but players is {self.players}")
        return settings


def _default_halls() -> dict[str, HallSettings]:
    return {"duel": HallSettings(title="Duel", description="Two players, minecraft rules.")}


class ModelPrice(_Section):
    """What one model costs, in US dollars per million tokens (server/table/costs.py applies it)."""

    input: float = Field(..., ge=0, description="USD per million input (prompt) tokens not served from cache")
    cached_input: float | None = Field(
        None, ge=0, description="USD per million cached input tokens; null = the input price"
    )
    output: float = Field(..., ge=0, description="USD per million output (completion) tokens")


class PricesSection(_Section):
    """The price table the experiment runner and the analysis cost LLM calls with."""

    as_of: str | None = Field(None, description="when these prices were read from the providers' pages")
    models: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="model name as the provider reports it (or its stem: gpt-4o prices gpt-4o-2024-08-06)",
    )


class Settings(_Section):
    server: ServerSection = Field(default_factory=ServerSection)
    database: DatabaseSection = Field(default_factory=DatabaseSection)
    security: SecuritySection = Field(default_factory=SecuritySection)
    socketio: SocketIOSection = Field(default_factory=SocketIOSection)
    bots: BotsSection = Field(default_factory=BotsSection)
    rooms: RoomsSection = Field(default_factory=RoomsSection)
    limits: LimitsSection = Field(default_factory=LimitsSection)
    halls: dict[str, HallSettings] = Field(default_factory=_default_halls)
    prices: PricesSection = Field(default_factory=PricesSection)
    ratings: RatingsSection = Field(default_factory=RatingsSection)

    # Where the YAML came from: relative paths are resolved against its folder. Not a settings key.
    base_dir: Path = Field(default=PROJECT_ROOT, exclude=True)

    @field_validator("halls")
    @classmethod
    def _some_hall(cls, halls: dict[str, HallSettings]) -> dict[str, HallSettings]:
        if not halls:
            raise ValueError("define at least one hall (game mode)")
        return halls

    @property
    def data_dir(self) -> Path:
        path = self.server.data_dir.expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    @property
    def database_uri(self) -> str:
        return self.database.uri or f"sqlite:///{self.data_dir / 'tradecraft.db'}"

    def hall_bot_specs(self, hall_name: str | None = None) -> set[str]:
        """The bot specs the operator wrote into a hall's seats (every hall's when ``hall_name`` is None)."""
        halls = self.halls.values() if hall_name is None else [self.halls[hall_name]]
        return {seat.bot for hall in halls for seat in hall.seats if seat.bot}

    def instance_root(self, hall: HallSettings) -> Path | None:
        root = hall.instances.root
        if root is None:
            return None
        root = root.expanduser()
        return root if root.is_absolute() else (self.base_dir / root).resolve()

    def public_dict(self) -> dict[str, Any]:
        """The settings without secrets (for logs and the admin page)."""
        data = self.model_dump(mode="json")
        data["security"].pop("secret_key", None)
        data["security"].pop("admin_password", None)
        if data["database"]["uri"]:
            data["database"]["uri"] = _without_credentials(data["database"]["uri"])
        if data["limits"]["storage"]:
            data["limits"]["storage"] = _without_credentials(data["limits"]["storage"])
        return data


def _without_credentials(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('@', 1)[-1]}" if sep else url


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _env_value(raw: str) -> Any:
    """Lists, mappings and null come as YAML; scalars stay strings (pydantic converts "5" or "true")."""
    if raw.strip() in ("", "null", "~"):
        return None
    if raw.lstrip().startswith(("[", "{")):
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise SettingsError(f"environment value {raw[:40]!r} is not valid YAML: {exc}") from exc
    return raw


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """``TRADECRAFT__SOCKETIO__MESSAGE_QUEUE=redis://...`` -> {"socketio": {"message_queue": "redis://..."}}."""
    tree: dict[str, Any] = {}
    for name, raw in sorted(environ.items()):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        path = [part.lower() for part in name[len(ENV_PREFIX) :].split("__") if part]
        if not path:
            continue
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SettingsError(f"environment variable {name} conflicts with another one")
        node[path[-1]] = _env_value(raw)
    return tree


def _explain(exc: ValidationError, source: str) -> str:
    lines = [f"invalid settings ({source}):"]
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        lines.append(f"  {where}: {err['msg']}")
    lines.append(f"fix the key in the settings file or its {ENV_PREFIX}SECTION__KEY environment variable")
    return "\n".join(lines)


def load_settings(
    path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Read, merge and validate the settings (see the module docstring for precedence)."""
    environ = os.environ if environ is None else environ
    if path is None and environ.get(CONFIG_ENV_VAR):
        path = environ[CONFIG_ENV_VAR]
    config_path = Path(path).expanduser().resolve() if path is not None else DEFAULT_CONFIG_PATH
    data: dict[str, Any] = {}
    if config_path.exists():
        try:
            loaded = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise SettingsError(f"{config_path}: not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise SettingsError(f"{config_path}: the settings file must be a mapping of sections")
        data = loaded
    elif path is not None:
        raise SettingsError(f"settings file {config_path} does not exist")
    if "base_dir" in data:
        raise SettingsError(f"{config_path}: base_dir is not a settings key (paths are relative to the file)")
    data = _deep_merge(data, env_overrides(environ))
    if overrides:
        data = _deep_merge(data, overrides)
    source = f"{config_path if config_path.exists() else 'defaults'} + environment"
    try:
        return Settings.model_validate({**data, "base_dir": config_path.parent})
    except ValidationError as exc:
        raise SettingsError(_explain(exc, source)) from exc
