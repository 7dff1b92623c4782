"""A study's definition: one YAML file, validated here, every key documented by its ``description``.

``tradecraft study create FILE`` stores a definition (``docs/studies.md`` explains each key; ``studies/``
holds examples). The definition is the whole protocol a participant goes through:

    link (recruitment ids) -> consent -> instructions -> practice game -> comprehension check
      -> waiting room (presence check; after max_wait: fill in with a bot / LLM agent, or exit and pay)
      -> game(s) -> exit questionnaire -> completion code and earnings

Its games are played in the study's own hall (:meth:`StudyDefinition.hall_settings`): an unlisted, unrated
hall built from ``hall`` (a settings hall by name, or one written inline) with the study's seats, ToM orders
and deadlines. Text fields (consent, instructions, questions) are plain text: pages render them as text, with
blank lines as paragraph breaks, never as markup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from server.game.settings import PhaseDeadlines
from server.table.config import HallSettings, InstanceSection, SeatSpec, Settings
from server.table.errors import ServerError

#: What a study id may hold: it appears in links (``/study/<id>``), store keys and file names.
STUDY_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")
#: Longest text field (consent, one instructions page): bounded so a page's size is known.
MAX_TEXT_CHARS = 20_000
MAX_SHORT_CHARS = 500

Outcome = Literal["completed", "screened_out", "no_partner", "dropped"]
#: Every way a participant's flow ends with a code, in the order the docs list them.
OUTCOMES: tuple[Outcome, ...] = ("completed", "screened_out", "no_partner", "dropped")


class StudyDefinitionError(ValueError):
    """A definition file that cannot be used; the message names the key and what to write instead."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ShortText = Annotated[str, Field(min_length=1, max_length=MAX_SHORT_CHARS)]
LongText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]


class Recruitment(_Part):
    """Where participants come from: the link's query-string names of their recruitment ids."""

    participant_param: str = Field(
        "PROLIFIC_PID",
        description="query-string name of the participant's recruitment id (Prolific's default)",
    )
    study_param: str | None = Field("STUDY_ID", description="query-string name of the platform's study id")
    session_param: str | None = Field(
        "SESSION_ID",
        description="query-string name of the platform's session id; when given, a returning link must carry "
        "the same one (another session of the same participant id is refused: it already took part)",
    )
    id_pattern: str = Field(
        r"[A-Za-z0-9_-]{1,64}",
        description="regular expression a recruitment id must match whole (Prolific ids: [0-9a-f]{24}); a "
        "forged or malformed id is refused before anything is stored",
    )
    required: bool = Field(
        True,
        description="false: a link without a participant id gets a fresh anonymous one (pilots, lab)",
    )
    completion_url: str | None = Field(
        None,
        description="where the final page sends participants, with {code} replaced by their completion code "
        "(e.g. https://app.prolific.com/submissions/complete?cc={code}); null = the code is shown to copy",
    )

    @field_validator("participant_param", "study_param", "session_param")
    @classmethod
    def _param_name(cls, name: str | None) -> str | None:
        if name is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,39}", name):
            raise ValueError(f"{name!r} is not a query-string name (letters, digits, _)")
        return name

    @field_validator("id_pattern")
    @classmethod
    def _pattern(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as err:
            raise ValueError(f"id_pattern is not a regular expression: {err}") from None
        return pattern


class Question(_Part):
    """One multiple-choice comprehension question."""

    id: str = Field(..., pattern=r"^[a-z0-9_]{1,32}$", description="short id used in records and exports")
    prompt: ShortText = Field(..., description="the question, as plain text")
    choices: list[ShortText] = Field(..., min_length=2, max_length=8, description="the answers offered")
    answer: int = Field(..., ge=0, description="index (from 0) of the right choice in choices")
    explanation: str = Field(
        "", max_length=MAX_SHORT_CHARS, description="shown after a wrong try: why the right answer is right"
    )

    @model_validator(mode="after")
    def _answer_offered(self) -> Question:
        if self.answer >= len(self.choices):
            raise ValueError(f"question {self.id}: answer {self.answer} but only {len(self.choices)} choices")
        return self


class Comprehension(_Part):
    """The comprehension check after the practice game: every question right within ``attempts`` tries."""

    questions: list[Question] = Field(default_factory=list, max_length=20, description="[] = no check")
    attempts: int = Field(
        2, ge=1, le=10, description="tries allowed; failing the last ends with screened_out"
    )

    @model_validator(mode="after")
    def _unique_ids(self) -> Comprehension:
        ids = [q.id for q in self.questions]
        if len(ids) != len(set(ids)):
            raise ValueError("comprehension question ids must be unique")
        return self


class SurveyItem(_Part):
    """One exit-questionnaire item."""

    id: str = Field(..., pattern=r"^[a-z0-9_]{1,32}$", description="short id used in records and exports")
    prompt: ShortText = Field(..., description="the question, as plain text")
    kind: Literal["text", "choice", "scale"] = Field(
        "text", description="text (free answer), choice (one of choices) or scale (1 .. scale_points)"
    )
    choices: list[ShortText] = Field(default_factory=list, max_length=12, description="for kind choice")
    scale_points: int = Field(7, ge=2, le=11, description="for kind scale: the answers are 1 .. scale_points")
    scale_labels: tuple[str, str] | None = Field(None, description="for kind scale: words at its two ends")
    required: bool = Field(False, description="must be answered to finish")
    max_chars: int = Field(1000, ge=1, le=5000, description="for kind text: longest answer")

    @model_validator(mode="after")
    def _choices_for_choice(self) -> SurveyItem:
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"questionnaire item {self.id}: choices go with kind choice, and only with it")
        return self


class Codes(_Part):
    """The completion codes the recruitment platform expects, one per outcome."""

    completed: ShortText = Field(..., description="finished every step")
    screened_out: ShortText = Field(..., description="failed the comprehension check")
    no_partner: ShortText = Field(..., description="waited the maximum time and nobody came (exit rule)")
    dropped: ShortText = Field(..., description="left mid-study or was booted by the researcher")

    def for_outcome(self, outcome: Outcome) -> str:
        return str(getattr(self, outcome))


class Payment(_Part):
    """What a participant earns: a base pay (paid by the platform on approving the code) and a bonus (paid
    through the payments CSV). Amounts in ``currency`` with two decimals."""

    currency: str = Field("GBP", pattern=r"^[A-Z]{3}$", description="ISO 4217 code, shown on the final page")
    base: float = Field(0, ge=0, le=1000, description="the study's reward, paid on approving the code")
    base_paid_for: list[Outcome] = Field(
        default_factory=lambda: ["completed", "no_partner"],
        description="the outcomes whose code is approved (base paid); others are asked to return the study",
    )
    bonus_per_win: float = Field(0, ge=0, le=1000, description="bonus per game won")
    bonus_per_point: float = Field(0, ge=0, le=1000, description="bonus per point scored (game scoring)")
    no_partner_pay: float = Field(
        0, ge=0, le=1000, description="bonus paid to whoever exits a waiting room with nobody to play"
    )
    screened_out_pay: float = Field(
        0, ge=0, le=1000, description="bonus paid on failing the comprehension check"
    )
    dropped_keeps_bonus: bool = Field(
        True, description="a dropped participant is still paid the bonuses of the games they finished"
    )
    max_bonus: float = Field(100, ge=0, le=10_000, description="no one's bonus exceeds this (a typo guard)")


class Capacity(_Part):
    """How many take part: admissions stop at ``participants`` + ``overbook``, counting those still in the
    flow and those who completed (a dropout, a screened-out or a no-partner exit frees its place)."""

    participants: int = Field(100, ge=1, le=100_000, description="completions wanted")
    overbook: int = Field(
        0, ge=0, le=10_000, description="extra admissions beyond participants, to cover expected dropouts"
    )


class FillIn(_Part):
    """A bot or LLM agent that takes a human seat nobody came for (or a dropout's seat)."""

    kind: Literal["bot", "llm"] = Field("bot", description="bot (a built-in policy) or llm (a listed model)")
    bot: str | None = Field("tom1", description="for kind bot: its policy spec (bots list them)")
    model: str | None = Field(None, description="for kind llm: the name of an entry of bots.models")
    name: str | None = Field(None, description="the seat's display name; null = the bot's own seat name")

    @model_validator(mode="after")
    def _one_source(self) -> FillIn:
        if self.kind == "llm" and not self.model:
            raise ValueError("a fill-in of kind llm names its model (an entry of bots.models)")
        if self.kind == "bot" and not self.bot:
            raise ValueError("a fill-in of kind bot names its bot spec, e.g. tom1")
        return self


class WaitingRoom(_Part):
    """Matching participants into games: only those who confirmed their presence recently are matched."""

    max_wait_seconds: float = Field(
        180, gt=0, le=3600, description="longest wait for a partner before the on_timeout rule applies"
    )
    presence_check_seconds: float = Field(
        30,
        ge=5,
        le=600,
        description="how often the waiting page asks the participant to confirm they are there",
    )
    presence_timeout_seconds: float = Field(
        15, ge=3, le=300, description="time to confirm; a participant who has not confirmed is not matched"
    )
    on_timeout: Literal["fill", "exit"] = Field(
        "fill",
        description="fill = play with the fill-in; exit = leave with the no_partner code (and its pay)",
    )
    fill_in: FillIn = Field(default_factory=FillIn, description="who fills the seats nobody came for")


class Dropout(_Part):
    """What happens to a participant who leaves a game: their seat goes to the study's fill-in (so the other
    players are never stuck) and their flow ends with the dropped code."""

    disconnect_grace_seconds: float = Field(
        90, ge=5, le=3600, description="a participant disconnected from their game this long has dropped out"
    )
    idle_timeouts: int | None = Field(
        2, ge=1, le=50, description="deadlines missed in a row that count as dropping out; null = never"
    )
    waiting_grace_seconds: float = Field(
        300, ge=10, le=86_400, description="a participant silent this long in any step before the game drops"
    )


class StudySeat(_Part):
    """One seat of the study's games."""

    kind: Literal["human", "bot", "llm"] = Field(..., description="human (a participant), bot or llm")
    bot: str | None = Field(None, description="for kind bot: its policy spec")
    model: str | None = Field(None, description="for kind llm: the name of an entry of bots.models")
    name: str | None = Field(None, description="display name of a bot or llm seat")

    @model_validator(mode="after")
    def _source(self) -> StudySeat:
        if (self.kind == "bot") != (self.bot is not None) or (self.kind == "llm") != (self.model is not None):
            raise ValueError("a bot seat names its bot, an llm seat its model, a human seat neither")
        return self


class TomOrders(_Part):
    """Which value reports each kind of seat gives at every turn (0 = V0, 1 = V1, 2 = V2)."""

    human: list[int] = Field(default_factory=list, description="participants' reports ([] = none)")
    bot: list[int] = Field(default_factory=lambda: [0, 1, 2], description="built-in bots' reports")
    llm: list[int] = Field(default_factory=lambda: [0, 1, 2], description="LLM agents' reports")

    @field_validator("human", "bot", "llm")
    @classmethod
    def _orders(cls, orders: list[int]) -> list[int]:
        if any(order not in (0, 1, 2) for order in orders) or len(set(orders)) != len(orders):
            raise ValueError("ToM orders are distinct values among 0, 1, 2")
        if orders and 0 not in orders:  # the game's rule: a seat that reports always reports V0
            raise ValueError("a seat that reports always reports order 0 (V0): write [0, ...] or []")
        return sorted(orders)

    def for_kind(self, kind: str) -> list[int]:
        return list(getattr(self, kind))


class StudyDefinition(_Part):
    """A whole study (see the module's docstring and docs/studies.md)."""

    id: str = Field(..., description="short id: lower-case letters, digits, - and _; appears in the link")
    title: ShortText = Field(..., description="shown to participants at the top of every page")
    researcher: str = Field("", max_length=MAX_SHORT_CHARS, description="who runs it (shown on the consent)")
    hall: str | HallSettings = Field(
        "duel",
        description="the game mode: a hall of the settings by name, or a hall written inline (settings keys)",
    )
    instances: InstanceSection | None = Field(
        None,
        description="which task instances in which order (settings' instances keys); null = the hall's. "
        "choice sequential deals them in file order across the whole study",
    )
    seats: list[StudySeat] = Field(
        default_factory=lambda: [StudySeat(kind="human"), StudySeat(kind="human")],
        min_length=2,
        max_length=8,
        description="the seat composition; the number of human seats is the waiting room's group size",
    )
    tom_orders: TomOrders = Field(default_factory=TomOrders, description="value reports per seat kind")
    deadlines: PhaseDeadlines = Field(
        default_factory=lambda: PhaseDeadlines(trade_propose=120, trade_decide=90, craft=180, tom_report=120),
        description="seconds per phase before the server acts for the seat (pass / reject / finish crafting)",
    )
    games_per_participant: int = Field(1, ge=1, le=20, description="games each participant plays")
    consent: LongText = Field(..., description="the consent text (plain text; blank lines = paragraphs)")
    instructions: list[LongText] = Field(
        default_factory=list, max_length=20, description="instruction pages, read before the practice game"
    )
    practice: bool = Field(True, description="the guided practice game after the instructions")
    comprehension: Comprehension = Field(default_factory=Comprehension, description="the check")
    questionnaire: list[SurveyItem] = Field(default_factory=list, max_length=40, description="exit questions")
    codes: Codes = Field(..., description="the completion codes")
    payment: Payment = Field(default_factory=Payment, description="base pay and bonus")
    capacity: Capacity = Field(default_factory=Capacity, description="participant cap and overbooking")
    recruitment: Recruitment = Field(default_factory=Recruitment, description="recruitment ids in the link")
    waiting_room: WaitingRoom = Field(default_factory=WaitingRoom, description="matching rule")
    dropout: Dropout = Field(default_factory=Dropout, description="dropout policy")

    @field_validator("id")
    @classmethod
    def _study_id(cls, study_id: str) -> str:
        if not STUDY_ID.fullmatch(study_id):
            raise ValueError(
                "a study id is 1-48 lower-case letters, digits, - or _, starting with a letter/digit"
            )
        return study_id

    @model_validator(mode="after")
    def _consistent(self) -> StudyDefinition:
        if not any(seat.kind == "human" for seat in self.seats):
            raise ValueError("a study seats at least one participant (kind: human)")
        if isinstance(self.hall, HallSettings) and self.hall.players != len(self.seats):
            raise ValueError(
                f"the inline hall seats {self.hall.players} players but seats lists {len(self.seats)}"
            )
        codes = [self.codes.for_outcome(outcome) for outcome in OUTCOMES]
        if len(set(codes)) != len(codes):
            raise ValueError(
                "codes: each outcome needs its own completion code (the platform tells them apart by it)"
            )
        return self

    @property
    def group_size(self) -> int:
        """Participants per game: the human seats."""
        return sum(seat.kind == "human" for seat in self.seats)

    @property
    def hall_name(self) -> str:
        """The lobby's name of the study's own hall."""
        return f"study-{self.id}"

    def hall_settings(self, settings: Settings) -> HallSettings:
        """The study's own hall: ``hall`` with the study's seats, ToM orders, deadlines and instances;
        unlisted, unrated, not creatable by players, seats fixed (participants are seated by the matcher, bots
        by the lobby)."""
        if isinstance(self.hall, HallSettings):
            base = self.hall
        else:
            if self.hall not in settings.halls:
                raise StudyDefinitionError(
                    f"hall {self.hall!r} is not a hall of the settings "
                    f"({', '.join(sorted(settings.halls))}); name one of them or write the hall inline"
                )
            base = settings.halls[self.hall]
        if base.players != len(self.seats):
            raise StudyDefinitionError(
                f"hall {self.hall if isinstance(self.hall, str) else 'inline'} seats {base.players} players "
                f"but the study's seats list {len(self.seats)}"
            )
        game = dict(base.game)
        game["tom_orders"] = [self.tom_orders.for_kind(seat.kind) for seat in self.seats]
        game["deadlines"] = self.deadlines.model_dump()
        if self.dropout.idle_timeouts is not None:
            game["idle_timeouts_before_bot"] = self.dropout.idle_timeouts
        try:
            return self._hall(base, settings, game)
        except ValidationError as err:
            problems = "; ".join(str(error["msg"]) for error in err.errors())
            raise StudyDefinitionError(f"the study's games cannot be set up: {problems}") from None

    def _hall(self, base: HallSettings, settings: Settings, game: dict[str, Any]) -> HallSettings:
        return HallSettings(
            title=self.title,
            description=base.description,
            ruleset=base.ruleset,
            mode=base.mode,
            players=base.players,
            instances=self.instances or base.instances,
            seats=[self.seat_spec(seat, settings) for seat in self.seats],
            allow_custom_seats=False,
            rated=False,
            listed=False,
            creatable=False,  # its games are the matcher's: one made through the lobby no study record knows
            game=game,
        )

    def seat_spec(self, seat: StudySeat | FillIn, settings: Settings) -> SeatSpec:
        """The lobby's seat for a study seat (a participant's seat is ``human``) or for a fill-in."""
        if seat.kind == "human":
            return SeatSpec(kind="human")
        if seat.kind == "llm":
            return SeatSpec(kind="bot", bot=model_spec(settings, seat.model or ""), name=seat.name)
        return SeatSpec(kind="bot", bot=seat.bot, name=seat.name)


def model_spec(settings: Settings, model_name: str) -> str:
    """The policy spec of the listed model named ``model_name`` (settings ``bots.models``)."""
    for model in settings.bots.models:
        if model.name == model_name:
            return model.spec
    listed = ", ".join(model.name for model in settings.bots.models) or "none are listed"
    raise StudyDefinitionError(f"no model named {model_name!r} in the settings' bots.models ({listed})")


def parse_definition(data: Any, source: str = "the definition") -> StudyDefinition:
    """A validated definition from parsed YAML/JSON, or :class:`StudyDefinitionError` naming every problem."""
    if not isinstance(data, dict):
        raise StudyDefinitionError(f"{source} must be a mapping of keys (id, title, consent, codes, ...)")
    try:
        return StudyDefinition.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(top)'}: {error['msg']}"
            for error in err.errors()
        )
        raise StudyDefinitionError(f"{source} is not a valid study: {problems}") from None


def load_definition(path: str | Path) -> StudyDefinition:
    """Read and validate a study file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as err:
        raise StudyDefinitionError(f"cannot read {file}: {err.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise StudyDefinitionError(f"{file} is not YAML: {err}") from None
    return parse_definition(data, str(file))


def check_against_settings(
    definition: StudyDefinition, settings: Settings, require_bot: Callable[[str, str], object] | None = None
) -> None:
    """Everything the definition names exists in these settings (its hall, its models) and, with
    ``require_bot(spec, hall name)`` (server.table.policies.BotRegistry.require), every bot it seats or
    fills in with can be built: checked when a study is created, so a typo is found before the first
    participant arrives (a fill-in nobody can build would leave its waiting room hanging)."""
    hall = definition.hall_settings(settings)
    fill = definition.waiting_room.fill_in
    if fill.kind == "llm":
        model_spec(settings, fill.model or "")
    if require_bot is None:
        return
    specs = [seat.bot for seat in hall.seats if seat.bot] + [str(definition.seat_spec(fill, settings).bot)]
    installed = definition.hall_name not in settings.halls
    if installed:  # the hall's own seats may allow a restricted spec: check against the study's hall
        settings.halls[definition.hall_name] = hall
    try:
        for spec in dict.fromkeys(specs):
            try:
                require_bot(spec, definition.hall_name)
            except ServerError as err:
                raise StudyDefinitionError(
                    f"the bot {spec.split('?')[0]!r} cannot be seated: {err.message}"
                ) from None
    finally:
        if installed:
            del settings.halls[definition.hall_name]
