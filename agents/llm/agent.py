"""The LLM agent: a policy (``act`` / ``observe`` / ``refused`` / ``drain_traces``) that plays one seat with
any LangChain chat model through the tools of :mod:`agents.llm.tools`.

The tool mode (:mod:`agents.llm.modes`: ``native`` function calling, ``json_schema`` constrained JSON,
``prompted`` JSON in the text) is the ``tool_mode`` setting; with ``auto`` (the default) a provider's own
API plays native and an OpenAI-compatible server is probed once per process (:mod:`agents.llm.probe`).

One decision (one ``act`` call):

1. The prompt is the stable prefix — the narrator's rules preamble and the seat's fixed facts
   (:func:`agents.narrator.stable_prefix` without the raw action section, the same for every seat up to
   its ToM duty), the mode's instructions (persona, reasoning mode, how to answer; in prompted mode the
   tool catalogue) — then the dialogue memory of earlier moves, trimmed from the oldest move to
   ``memory_tokens``, then the new observation. In native mode the tools are bound in a fixed order every
   time, so providers' prompt caches hit; in json_schema mode each call's ``response_format`` admits the
   tools allowed now.
2. The model answers with calls (the API's, or written in the text and read leniently). Queries are
   answered at once from what the seat may see (at most ``max_queries`` per decision; nothing advances);
   the first valid action ends the decision. An answer that holds no call, names an unknown tool, has
   malformed JSON or wrong arguments, values outside 0-10 or an action not allowed now gets the same typed
   error a browser gets and the model tries again (a new sampling seed per attempt). So does an action
   the game itself refuses (the runner calls ``refused``). After ``max_invalid`` such errors the agent
   plays a logged fallback: the model's own last readable intent where that is safe, else the safe move.
3. Memory keeps the game's dialogue: when a move ends, its part becomes the observation plus the calls
   that counted, in the mode's canonical form. Within the move a bad answer (cut to 300 characters) and
   the retry message stay, so the model sees what to fix.
4. Generation is bounded: ``max_tokens`` per phase and the mode's stop sequences on every request, a
   time budget per move (``move_seconds``; no new request starts after it) and a warm-up allowance
   (``warmup_seconds``) for the first request and move of a game. An answer a stop sequence cut to
   nothing (a model that opens with an imitated ``<tool_response>``) turns the stops off for the game.
   Provider failures (HTTP 429 / 5xx, timeouts, connection errors) are retried with exponential backoff
   and jitter (honouring ``Retry-After``), up to ``provider_retries`` per call and ``game_retry_budget``
   per game; a call that still fails ends in the fallback. A provider outage therefore ends the decision,
   never hangs the game (:mod:`agents.llm.retries`).

Reasoning (``<think>`` blocks, ``reasoning_content``, chain-of-thought text) goes to the trace only: it
is cut from every message field sent to the game and from the memory. A model's text is bounded
(``extract.MAX_TEXT_CHARS``) before anything reads it, and never executed.

Traces (:meth:`LLMAgent.drain_traces`): ``llm_probe`` (the checks and the mode chosen, or the cached
result), ``llm_prefix`` once per game (the system prompt and tool declarations, their sha256 and o200k
token count, the settings with ``tool_mode``, ``tool_choice``, ``probed``), ``llm_call`` per model call,
the probe's included (the prompt after the prefix, the completion, reasoning, token counts —
provider-reported, else o200k — the call's ``latency_s``, ``provider_retries`` and ``attempts``: each
request's seed, timeout, latency, outcome and tokens), ``tool_results`` / ``tool_error``, ``refused``,
``fallback`` (reason, ``basis``, error codes), ``stop_dropped``, and ``decision`` per finished move (with
the move's total ``latency_s`` and ``attempts``; a probe's requests are its own, with fixed seeds, not the
move's). API keys never appear: credentials come from the environment and every record is redacted.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from agents.llm import prompts
from agents.llm.decision import DecisionConnection
from agents.llm.extract import MAX_TEXT_CHARS
from agents.llm.modes import MODES, TOOL_CHOICES, ToolMode, answer_text
from agents.llm.probe import PROBE_MAX_TOKENS, ProbeResult, endpoint_url, probe
from agents.llm.retries import ProviderRetries
from agents.llm.tools import (
    TOOL_OF_TYPE,
    DeclarationOnly,
    SeatTools,
    ToolSpec,
    error_answer,
    split_reasoning,
    strip_reasoning,
    tool_specs,
)
from agents.llm.tracing import (
    count_message_tokens,
    count_tokens,
    count_tool_tokens,
    json_safe,
    message_record,
    redact,
    secrets_in_environment,
)
from agents.local import derive_seed
from agents.narrator import describe_view, narrate_events, stable_prefix, state_and_news
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from server.game.actions import Action
from server.game.legal import fallback_action

TOOL_MODE_SETTINGS = ("auto", *prompts.TOOL_MODES)
"""``AgentSettings.tool_mode``: ``auto`` probes an OpenAI-compatible server (:mod:`agents.llm.probe`) and
plays native on a provider's own API; the others set the mode."""

DEFAULT_MAX_TOKENS: dict[str, int] = {"report_tom": 800, "propose": 400, "decide": 250, "craft": 300}
"""Completion tokens per answer, by the phase of the move (a ToM report with V1 and V2 is the longest
call; a decision the shortest). ``cot`` adds ``cot_extra_tokens`` for the thinking before the call."""

UNREADABLE = "unreadable_tool_call"
"""The finish reason the agent gives an answer its client could not build (a call's arguments not an
object)."""

BAD_ANSWER_CHARS = 300
"""What memory keeps of an answer that did not count, until the move ends (then it goes)."""

MAX_INTENTS = 16
"""The most recent readable action calls of a move the fallback weighs."""

PROBE_SEED = 0
"""The seed a probe's sampling seeds derive from, whatever the agent's seed."""


MAX_STOP, MAX_STOP_CHARS = 4, 32
"""At most this many stop sequences of at most this many characters (what OpenAI's API accepts)."""


@dataclass
class AgentSettings:
    """How an :class:`LLMAgent` plays and how hard it tries (defaults fit a hosted model)."""

    persona: str = "none"
    reasoning: str = "direct"  # direct | cot
    strict: bool = False
    memory_tokens: int = 1000
    max_steps: int = 8
    max_queries: int = 3
    max_invalid: int = 3
    provider_retries: int = 4
    game_retry_budget: int = 40  # provider retries per game (0: no limit per game)
    backoff_base: float = 1.0
    backoff_cap: float = 30.0
    move_seconds: float = 300.0  # no new model call or retry starts after this long on one move
    tom_orders: tuple[int, ...] | None = None  # what `tradecraft play` asks of this seat (None: the game's)
    tool_mode: str = "auto"  # auto | native | json_schema | prompted (auto: see LLMAgent._choose_mode)
    tool_choice: str | None = None  # native mode's tool_choice; None: what the probe found, else auto
    max_tokens: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS))  # per phase
    cot_extra_tokens: int = 600
    stop: tuple[str, ...] | None = None  # None: the mode's defaults (modes.JSON_MODE_STOP, none for native)
    compact: bool = False  # the compact prompt variant (small context windows)
    warmup_seconds: float = 300.0  # added to the first request's timeout and the first move's budget

    def __post_init__(self) -> None:
        if self.persona not in prompts.PERSONAS:
            raise ValueError(f"persona must be one of {', '.join(prompts.PERSONAS)}, not {self.persona!r}")
        if self.reasoning not in prompts.REASONING_MODES:
            raise ValueError(f"reasoning must be direct or cot, not {self.reasoning!r}")
        if self.tool_mode not in TOOL_MODE_SETTINGS:
            raise ValueError(
                f"tool_mode must be one of {', '.join(TOOL_MODE_SETTINGS)}, not {self.tool_mode!r}"
            )
        if self.tool_choice is not None and self.tool_choice not in TOOL_CHOICES:
            raise ValueError(
                f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, not {self.tool_choice!r}"
            )
        for name in ("max_steps", "max_invalid"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in (
            "memory_tokens",
            "max_queries",
            "provider_retries",
            "game_retry_budget",
            "cot_extra_tokens",
            "warmup_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if any(not isinstance(n, int) or n < 1 for n in self.max_tokens.values()):
            raise ValueError("max_tokens must map phases to whole numbers of at least 1")
        if not self.move_seconds > 0:  # NaN included
            raise ValueError("move_seconds must be more than 0")
        if not self.warmup_seconds >= 0:
            raise ValueError("warmup_seconds must not be negative")
        if self.stop is not None:
            if isinstance(self.stop, str | bytes) or not isinstance(self.stop, Sequence):
                raise ValueError("stop must be a list of strings (None: the mode's defaults)")
            if len(self.stop) > MAX_STOP or any(
                not isinstance(s, str) or not 0 < len(s) <= MAX_STOP_CHARS for s in self.stop
            ):
                raise ValueError(
                    f"stop must hold at most {MAX_STOP} non-empty strings of at most {MAX_STOP_CHARS} "
                    "characters each"
                )
            self.stop = tuple(self.stop)


def move_phase(legal: Sequence[str]) -> str:
    """The phase a move's legal actions belong to (the keys of ``AgentSettings.max_tokens``)."""
    if "report_tom" in legal:
        return "report_tom"
    if "decide" in legal:
        return "decide"
    if "craft" in legal or "finish_crafting" in legal:
        return "craft"
    return "propose"


@dataclass
class _Decision:
    """Book-keeping of the move being decided."""

    key: str
    deadline: float = float("inf")
    invalid: int = 0
    steps: int = 0
    queries: int = 0
    retries: int = 0
    attempts: int = 0  # model requests sent for this move (provider retries included)
    seconds: float = 0.0  # time spent deciding, over every act() of this move
    tokens_in: int = 0
    tokens_out: int = 0
    errors: list[str] = field(default_factory=list)
    readable: bool = False  # some action call named a known action tool with an arguments object
    intents: list[tuple[str, Any]] = field(default_factory=list)  # readable action calls (valid or not)


class LLMAgent:
    """Plays one seat with ``model`` (any LangChain chat model); see the module docstring.

    ``model_name`` is what traces and the log's seat record call the model. ``rules`` defaults to the
    installed rule set the view names.
    """

    name = "llm"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        model_name: str = "",
        settings: AgentSettings | None = None,
        seed: int = 0,
        rules: RuleSet | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.model_name = model_name or getattr(model, "model_name", "") or type(model).__name__
        self.settings = settings or AgentSettings()
        self.seed = seed
        self._provider = ProviderRetries(self.settings, seed=seed, sleep=sleep)
        self._given_rules = rules
        self._rules: RuleSet | None = None
        self._seat: int | None = None
        self._system: SystemMessage | None = None
        self._mode: ToolMode = MODES["native"]
        self._tool_choice: str | None = None
        self._probed = False
        self._declared: list[Any] = []
        self._bound: Any = None
        self._tool_schemas: list[dict[str, Any]] = []
        self.prefix_tokens = 0
        self._memory: list[list[tuple[BaseMessage, int]]] = []  # per move: (message, its o200k tokens)
        self._counted: list[BaseMessage] = []  # the current move's calls that count, in canonical form
        # the warm-up allowance goes to the game's first request and first move, once (answered or not)
        self._warm = False  # the game's first request has been sent
        self._warm_move = False  # the game's first move has begun
        self._stops_dropped = False  # a stop sequence cut an answer to nothing: the game goes without
        self._act_began = time.monotonic()
        self._seat_log: list[dict[str, Any]] = []
        self._unseen: list[dict[str, Any]] = []
        self._decision: _Decision | None = None
        self._pending_note: str | None = None
        self._last_submitted: dict[str, Any] | None = None  # the move act() returned last, as JSON
        self._traces: list[dict[str, Any]] = []
        self.fallbacks = 0
        self._secrets = secrets_in_environment()

    def __repr__(self) -> str:
        return f"LLMAgent(model={self.model_name!r}, seed={self.seed!r})"

    @property
    def retries_used(self) -> int:
        """Provider retries spent in this game (``game_retry_budget`` bounds them)."""
        return self._provider.used

    @property
    def tool_mode(self) -> str:
        """The mode this game is played in (known after the first move)."""
        return self._mode.name

    # --- the policy contract ------------------------------------------------------------------------
    def observe(self, events: list[dict[str, Any]]) -> None:
        """Keep the seat's new events: narrated in the next observation, answered by ``history``.

        A log that starts again at ``n = 0`` is a new game (an environment reusing the agent): everything
        of the last game is forgotten, its prompt prefix included, and the retry budget starts afresh."""
        if events and events[0].get("n") == 0 and self._seat_log:
            self._new_game()
        self._seat_log.extend(dict(e) for e in events)
        self._unseen.extend(dict(e) for e in events)

    def _new_game(self) -> None:
        self._system = None
        self._seat = None
        self._memory = []
        self._counted = []
        self._warm = False
        self._warm_move = False
        self._stops_dropped = False
        self._seat_log = []
        self._unseen = []
        self._decision = None
        self._pending_note = None
        self._last_submitted = None
        self._provider.reset()

    def refused(self, error: Mapping[str, Any]) -> None:
        """The runner's engine refused the action ``act`` returned: tell the model at the next ``act``."""
        decision = self._decision
        if decision is not None:
            decision.invalid += 1
            decision.errors.append(str(error.get("code")))
        submitted = self._last_submitted or {}
        self._pending_note = prompts.refusal_note(str(submitted.get("type", "action")), dict(error))
        self._trace("refused", action=submitted, error=dict(error))

    def drain_traces(self) -> list[dict[str, Any]]:
        """The trace records made since the last call (JSON-safe, credentials redacted)."""
        out, self._traces = self._traces, []
        return out

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any] | Action:
        """The seat's next action: decided by the model through the tools (the action model the engine's
        parser made of its call, which the runner submits as it is), else the fallback."""
        started = time.monotonic()
        key = view["move_key"]
        if self._decision is None or self._decision.key != key:
            # the first move of a game gets the warm-up allowance (a cold model, a cold prompt)
            budget = self.settings.move_seconds + (0.0 if self._warm_move else self.settings.warmup_seconds)
            self._warm_move = True
            self._decision = _Decision(key, deadline=started + budget)
            self._pending_note = None
        elif self._last_submitted is not None and self._pending_note is None:
            # asked again for the same move without a refusal note (a runner without the ``refused``
            # hook): the move it was given did not go through
            self.refused(
                {
                    "code": "not_applied",
                    "message": "The game did not apply it; check the state and choose a legal move.",
                    "details": {},
                }
            )
        decision = self._decision
        self._act_began = started
        try:
            return self._decide(view, legal, decision)
        finally:
            decision.seconds += time.monotonic() - started

    def _decide(self, view: dict[str, Any], legal: list[str], decision: _Decision) -> dict[str, Any] | Action:
        self._start(view, decision)
        self._memory.append([])  # this act's part of the dialogue: the observation first
        self._counted = []
        self._remember(HumanMessage(self._observation(view)))
        if decision.invalid >= self.settings.max_invalid:
            return self._fallback(view, legal, "too_many_invalid_calls")
        if self._provider.budget_spent:
            return self._fallback(view, legal, "provider_budget_spent")
        connection = DecisionConnection(view, self._rules_of(view), self._seat_log)
        tools = SeatTools(connection, strict=self.settings.strict, max_queries=self.settings.max_queries)
        self._last_submitted = None
        while decision.steps < self.settings.max_steps:
            if time.monotonic() >= decision.deadline:
                return self._fallback(view, legal, "move_time_limit")
            decision.steps += 1
            answer = self._call_model(decision, tools, legal)
            if answer is None:
                return self._fallback(view, legal, "provider_failed")
            self._handle(answer, tools, decision, legal)
            if connection.submitted is not None:
                self._last_submitted = connection.submitted.model_dump(mode="json")
                self._close_move()
                self._trace(
                    "decision",
                    decision=decision.key,
                    action=self._last_submitted,
                    steps=decision.steps,
                    queries=tools.queries_asked,
                    invalid=decision.invalid,
                    provider_retries=decision.retries,
                    attempts=decision.attempts,
                    latency_s=self._move_seconds(decision),
                    prompt_tokens=decision.tokens_in,
                    completion_tokens=decision.tokens_out,
                    tool_mode=self._mode.name,
                    tool_choice=self._tool_choice,
                    fallback=False,
                )
                return connection.submitted
            if decision.invalid >= self.settings.max_invalid:
                return self._fallback(view, legal, "too_many_invalid_calls")
        return self._fallback(view, legal, "step_limit")

    def _move_seconds(self, decision: _Decision) -> float:
        """The time spent on this move so far (every act() of it, the current one included)."""
        return round(decision.seconds + time.monotonic() - self._act_began, 4)

    # --- set-up ---------------------------------------------------------------------------------------
    def _rules_of(self, view: Mapping[str, Any]) -> RuleSet:
        if self._given_rules is not None:
            return self._given_rules
        if self._rules is None or self._rules.name != view["ruleset"]:
            self._rules = load_rule_set(view["ruleset"])
        return self._rules

    def _start(self, view: Mapping[str, Any], decision: _Decision) -> None:
        """On the first move: the tool mode (probed unless set), the stable system prompt and, in native
        mode, the bound tools (then fixed for the game)."""
        if self._system is not None and self._seat == view["seat"]:
            return
        self._seat = view["seat"]
        rules = self._rules_of(view)
        settings = self.settings
        self._choose_mode(decision)
        specs = tool_specs()
        instructions = prompts.mode_instructions(
            self._wording(),
            persona=settings.persona,
            reasoning=settings.reasoning,
            max_queries=settings.max_queries,
            strict=settings.strict,
            compact=settings.compact,
        )
        prefix = stable_prefix(view, rules, action_formats=False, compact=settings.compact)
        text = self._mode.system_text(
            prefix, specs, instructions=instructions, strict=settings.strict, compact=settings.compact
        )
        self._system = SystemMessage(text)
        # the tools only shape the schemas here; each decision dispatches through its own connection
        seat_tools = SeatTools(DeclarationOnly(), strict=settings.strict)
        self._declared = seat_tools.tools(compact=True) if settings.compact else seat_tools.tools()
        if self._mode.name == "native":
            self._tool_schemas = [
                convert_to_openai_tool(t, strict=True if settings.strict else None) for t in self._declared
            ]
            self._bound = self._mode.runnable(
                self.model,
                tools=self._declared,
                allowed=specs,
                tool_choice=self._tool_choice,
                strict=settings.strict,
                compact=settings.compact,
            )
        else:
            self._tool_schemas = []  # nothing declared through the API: the schemas are in the text
            self._bound = None
        self.prefix_tokens = count_message_tokens([self._system]) + count_tool_tokens(self._tool_schemas)
        self._trace(
            "llm_prefix",
            model=self.model_name,
            system=text,
            tools=self._tool_schemas,
            sha256=hashlib.sha256(
                (text + json.dumps(self._tool_schemas, sort_keys=True)).encode()
            ).hexdigest(),
            tokens=self.prefix_tokens,
            settings={
                "persona": settings.persona,
                "reasoning": settings.reasoning,
                "strict": settings.strict,
                "memory_tokens": settings.memory_tokens,
                "max_queries": settings.max_queries,
                "max_invalid": settings.max_invalid,
                "tool_mode": self._mode.name,
                "tool_choice": self._tool_choice,
                "probed": self._probed,
                "compact": settings.compact,
                "max_tokens": dict(settings.max_tokens),
                "stop": list(self._stop()),
            },
        )

    def _choose_mode(self, decision: _Decision) -> None:
        """The mode of this game: the setting, else native for a provider's own API, else what the probe
        finds for an OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio, ...)."""
        settings = self.settings
        if settings.tool_mode != "auto":
            self._mode, self._probed = MODES[settings.tool_mode], False
            found = "auto" if settings.tool_mode == "native" else None
        elif not _openai_compatible(self.model) or _hosted_openai(self.model):
            # a provider's own API (OpenAI, Azure, Anthropic, ...) calls tools natively: nothing to probe
            self._mode, self._probed, found = MODES["native"], False, "auto"
        else:
            # the probe's requests are not the move's: their own attempt count (so the move's seeds do not
            # depend on whether the probe was cached), tokens and time, within the move's deadline
            checks = _Decision("probe", deadline=decision.deadline)
            began = time.monotonic()
            result = probe(
                self.model,
                lambda runnable, messages, label: self._probe_send(runnable, messages, label, checks),
            )
            decision.seconds -= time.monotonic() - began
            self._mode, self._probed, found = MODES[result.mode], True, result.tool_choice
            self._trace_probe(result)
        self._tool_choice = (settings.tool_choice or found) if self._mode.name == "native" else None

    def _wording(self) -> str:
        """The mode whose words the instructions and retry messages use: the game's, except native mode
        with ``tool_choice="none"`` (the server is told not to call tools, so the model answers in text
        and is told how, as in prompted mode)."""
        if self._mode.name == "native" and self._tool_choice == "none":
            return "prompted"
        return self._mode.name

    def _trace_probe(self, result: ProbeResult) -> None:
        self._trace(
            "llm_probe",
            model=self.model_name,
            mode=result.mode,
            tool_choice=result.tool_choice,
            cached=result.cached,
            tries=list(result.tries),
        )

    def _observation(self, view: Mapping[str, Any]) -> str:
        rules = self._rules_of(view)
        new, self._unseen = self._unseen, []
        events = narrate_events(new, view["seat"], rules)
        text = state_and_news(describe_view(view, rules), events)
        if self._pending_note:
            text = self._pending_note + "\n\n" + text
            self._pending_note = None
        return text

    # --- memory ---------------------------------------------------------------------------------------
    def _remember(self, message: BaseMessage) -> None:
        self._memory[-1].append((message, count_message_tokens([message])))

    def _close_move(self, *extra: BaseMessage) -> None:
        """The move's memory becomes the game's dialogue: its observation and the calls that counted (in
        the mode's canonical form), plus ``extra``; failed attempts and retry messages go."""
        move = self._memory[-1]
        kept = move[:1] + [(m, count_message_tokens([m])) for m in [*self._counted, *extra]]
        self._memory[-1] = kept
        self._counted = []

    def prompt(self) -> list[BaseMessage]:
        """The messages of the next model call: the system prefix, the memory within its budget (whole
        moves, oldest dropped first), the current move."""
        assert self._system is not None
        kept: list[list[tuple[BaseMessage, int]]] = [self._memory[-1]]
        budget = self.settings.memory_tokens
        for move in reversed(self._memory[:-1]):
            cost = sum(tokens for _, tokens in move)
            if cost > budget:
                break
            budget -= cost
            kept.insert(0, move)
        if len(kept) < len(self._memory):  # forget what no longer fits, for good
            del self._memory[: len(self._memory) - len(kept)]
        return [self._system, *(message for move in kept for message, _ in move)]

    # --- one model call, with provider retries ----------------------------------------------------------
    def _stop(self) -> tuple[str, ...]:
        if self._stops_dropped:
            return ()
        return self.settings.stop if self.settings.stop is not None else self._mode.default_stop

    def _max_tokens(self, legal: Sequence[str]) -> int:
        settings = self.settings
        phase = move_phase(legal)
        tokens = settings.max_tokens.get(phase) or max(settings.max_tokens.values(), default=400)
        return tokens + (settings.cot_extra_tokens if settings.reasoning == "cot" else 0)

    def _allowed(self, tools: SeatTools, legal: Sequence[str]) -> list[ToolSpec]:
        """The tools this move admits now: its legal actions, and the queries while some remain."""
        actions = [tools.specs[TOOL_OF_TYPE[t]] for t in legal if TOOL_OF_TYPE.get(t) in tools.specs]
        actions = [spec for spec in actions if spec.kind == "action"]
        if not actions:  # nothing of the move has a tool (cannot happen in a game): offer every action
            actions = [spec for spec in tools.specs.values() if spec.kind == "action"]
        queries_left = tools.max_queries is None or tools.queries_asked < tools.max_queries
        queries = [spec for spec in tools.specs.values() if spec.kind == "query"] if queries_left else []
        return actions + queries

    def _request_kwargs(self, max_tokens: int, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The per-request options sent with one attempt, and what the trace notes of them."""
        kwargs: dict[str, Any] = {}
        noted: dict[str, Any] = {}
        openai_client = _openai_compatible(self.model)
        if openai_client or "max_tokens" in getattr(type(self.model), "model_fields", {}):
            kwargs["max_tokens"] = max_tokens
            noted["max_tokens"] = max_tokens
            if openai_client and not _hosted_openai(self.model):
                # ChatOpenAI sends max_completion_tokens; servers like llama.cpp and Ollama read max_tokens
                kwargs["extra_body"] = {
                    **(getattr(self.model, "extra_body", None) or {}),
                    "max_tokens": max_tokens,
                }
        stop = self._stop()
        if stop:
            kwargs["stop"] = list(stop)
        if openai_client:
            kwargs["seed"] = noted["seed"] = seed
            timeout = getattr(self.model, "request_timeout", None)
            if not self._warm and isinstance(timeout, int | float):
                kwargs["timeout"] = float(timeout) + self.settings.warmup_seconds
            noted["timeout_s"] = kwargs.get("timeout", timeout if isinstance(timeout, int | float) else None)
        return kwargs, noted

    def _attempt_seed(self, key: str, attempt: int, *, probing: bool = False) -> int:
        """A new sampling seed per attempt, derived from the agent's seed, the move and the attempt. A
        probe's seeds are fixed (:data:`PROBE_SEED`): the mode cached for an endpoint does not depend on
        which agent probed it first."""
        return derive_seed(PROBE_SEED if probing else self.seed, "llm-sample", key, attempt) % 2**31

    def _send(
        self,
        runnable: Runnable[Any, Any],
        messages: Sequence[BaseMessage],
        key: str,
        max_tokens: int,
        decision: _Decision,
        attempts: list[dict[str, Any]],
        *,
        probing: bool = False,
    ) -> Any:
        """One model call with provider retries; each attempt with its own seed (and options noted).
        A probe's short request (``probing``) leaves the warm-up allowance to the game's first request,
        the long cold prompt."""

        def invoke() -> Any:
            number = decision.attempts
            decision.attempts += 1
            kwargs, noted = self._request_kwargs(max_tokens, self._attempt_seed(key, number, probing=probing))
            if not probing:  # the first request had the allowance, whatever comes of it
                self._warm = True
            attempts.append({"attempt": number, **noted})
            try:
                return runnable.bind(**kwargs).invoke(list(messages))
            except openai.LengthFinishReasonError as err:
                # ChatOpenAI parses every answer to a response_format and the OpenAI client raises when it
                # was cut at max_tokens: that is the model's answer, truncated (read and retried as such)
                return _truncated_answer(err)
            except ValidationError as err:
                # the client could not build the answer (a tool call whose arguments are no JSON object):
                # the model's output, not a provider failure, so it is answered, never retried
                return AIMessage(
                    content="",
                    response_metadata={"finish_reason": UNREADABLE, "error": str(err)[:300]},
                )

        outcome = self._provider.call(invoke, decision.deadline)
        decision.retries += outcome.retries
        for noted, record in zip(attempts, outcome.attempts, strict=False):
            noted.update(record)
        answer = outcome.answer
        if answer is not None and not isinstance(answer, AIMessage):
            answer = AIMessage(content=getattr(answer, "content", str(answer)))
        if answer is not None:
            finish = answer.response_metadata.get("finish_reason")
            if finish in ("length", UNREADABLE) and attempts:
                # cut at max_tokens (still read leniently) | a call the client could not build
                attempts[-1]["outcome"] = "truncated" if finish == "length" else "unreadable"
        return outcome, answer

    def _probe_send(
        self, runnable: Runnable[Any, Any], messages: Sequence[BaseMessage], label: str, checks: _Decision
    ) -> tuple[AIMessage | None, dict[str, Any]]:
        """One probe request, booked on the probe's own ``checks`` (not the move's)."""
        attempts: list[dict[str, Any]] = []
        offline_prompt = count_message_tokens(messages)
        outcome, answer = self._send(
            runnable, messages, f"probe:{label}", PROBE_MAX_TOKENS, checks, attempts, probing=True
        )
        self._trace_call(checks, messages, answer, offline_prompt, outcome, attempts, probe=label)
        last = outcome.failures[-1] if outcome.failures else {}
        return answer, {"kind": last.get("kind"), "status": last.get("status")} if answer is None else {}

    def _call_model(self, decision: _Decision, tools: SeatTools, legal: Sequence[str]) -> AIMessage | None:
        messages = self.prompt()
        offline_prompt = self.prefix_tokens + count_message_tokens(messages[1:])
        runnable = self._bound
        if runnable is None:
            runnable = self._mode.runnable(
                self.model,
                tools=self._declared,
                allowed=self._allowed(tools, legal),
                tool_choice=self._tool_choice,
                strict=self.settings.strict,
                compact=self.settings.compact,
            )
        attempts: list[dict[str, Any]] = []
        outcome, answer = self._send(
            runnable, messages, decision.key, self._max_tokens(legal), decision, attempts
        )
        self._trace_call(decision, messages[1:], answer, offline_prompt, outcome, attempts)
        return answer

    def _trace_call(
        self,
        decision: _Decision,
        messages: Sequence[BaseMessage],
        answer: AIMessage | None,
        offline_prompt: int,
        outcome: Any,
        attempts: list[dict[str, Any]],
        probe: str | None = None,
    ) -> None:
        record: dict[str, Any] = {
            "model": self.model_name,
            "decision": None if probe else decision.key,
            "step": None if probe else decision.steps,
            "prompt": [message_record(m) for m in messages],  # the prefix is in llm_prefix
            "prompt_tokens_o200k": offline_prompt,
            "prefix_tokens_o200k": 0 if probe else self.prefix_tokens,
            "latency_s": round(outcome.elapsed, 4),  # the whole call: every attempt and wait
            "provider_retries": outcome.failures,
            "attempts": attempts,
            "tool_mode": probe or self._mode.name,
        }
        if probe:
            record["probe"] = probe
        if answer is None:
            record["completion"] = None
            self._trace("llm_call", **record)
            return
        text = answer_text(answer)
        usage = answer.usage_metadata
        if usage and usage.get("input_tokens") is not None:
            tokens = {
                "prompt_tokens": usage["input_tokens"],
                "completion_tokens": usage.get("output_tokens", 0),
                "source": "provider",
            }
            cached = (usage.get("input_token_details") or {}).get("cache_read")
            if cached is not None:
                tokens["cached_prompt_tokens"] = cached
        else:
            tokens = {
                "prompt_tokens": offline_prompt,
                "completion_tokens": count_tokens(text)
                + count_tokens(json.dumps([c["args"] for c in answer.tool_calls])[:MAX_TEXT_CHARS]),
                "source": "o200k",
            }
        if attempts:
            attempts[-1].update(
                prompt_tokens=tokens["prompt_tokens"], completion_tokens=tokens["completion_tokens"]
            )
        decision.tokens_in += tokens["prompt_tokens"]
        decision.tokens_out += tokens["completion_tokens"]
        record.update(
            completion=message_record(answer, max_chars=MAX_TEXT_CHARS),
            reasoning=_reasoning_of(answer, text) or None,
            tokens=tokens,
            finish_reason=answer.response_metadata.get("finish_reason"),
            provider_model=answer.response_metadata.get("model_name"),  # the model as the provider names it
        )
        self._trace("llm_call", **record)

    # --- the answer -------------------------------------------------------------------------------------
    def _handle(self, answer: AIMessage, tools: SeatTools, decision: _Decision, legal: Sequence[str]) -> None:
        """Answer every call read from ``answer`` (typed errors included) and remember the exchange: calls
        that count in the mode's canonical form; a bad answer cut short, followed by the retry message."""
        mode = self._mode
        reading = mode.read(answer, list(tools.specs))
        allowed = [spec.name for spec in self._allowed(tools, legal)]
        results: list[dict[str, Any]] = []
        failures: list[dict[str, Any] | None] = []
        done = False
        for number, call in enumerate(reading.calls):
            call_id = call.call_id or f"call_{decision.steps}_{number}"
            spec = tools.specs.get(call.name)
            if call.source == "invalid":
                reply = _invalid_call_error(call.name, call.problem, list(tools.specs))
                decision.invalid += 1
                decision.errors.append(str(reply["error"]["code"]))
            elif done:
                reply = error_answer(
                    "one_action_per_move",
                    "Only the first action of a move counts; this call was ignored.",
                    {"tool": call.name},
                )
            else:
                if spec is not None and spec.kind == "action" and isinstance(call.args, Mapping):
                    decision.readable = True  # a query says nothing of the move the model meant
                    decision.intents = [*decision.intents[-MAX_INTENTS + 1 :], (call.name, call.args)]
                reply = tools.call(call.name, call.args)
                if spec is None or (spec.kind == "action" and not reply.get("ok")):
                    decision.invalid += 1
                    decision.errors.append(str(reply.get("error", {}).get("code")))
                done = spec is not None and spec.kind == "action" and bool(reply.get("ok"))
            results.append(
                {
                    "id": call_id,
                    "tool": call.name,
                    "args": call.args,
                    "source": call.source,
                    "written": call.written or None,
                    "answer": reply,
                }
            )
            if reply.get("ok"):
                exchange = mode.call_messages(call, reply, call_id)
                self._counted += exchange
            elif call.source != "text":  # the server's own tool call: the error is its tool result
                exchange = mode.call_messages(call, reply, call_id)
            else:
                failures.append(reply.get("error"))
                continue
            for message in exchange:
                self._remember(message)
        if not reading.calls:
            finish = answer.response_metadata.get("finish_reason")
            if finish == "stop" and self._stop() and not strip_reasoning(reading.text).strip():
                # a model that opens with what a stop sequence marks (an imitated <tool_response>) is cut
                # to nothing every time: later requests go without stops (max_tokens still bounds them)
                self._trace("stop_dropped", decision=decision.key, stop=list(self._stop()))
                self._stops_dropped = True
            code = {"length": "truncated", UNREADABLE: "invalid_action"}.get(finish, "not_a_tool_call")
            decision.invalid += 1
            decision.errors.append(code)
            failures.append(_unread_error(code, reading.problems))
            self._trace(
                "tool_error", decision=decision.key, error={"code": code}, problems=reading.problems[:10]
            )
        if failures:
            # until the move ends: the bad answer (cut short) and what to fix, in this mode's words
            bad = strip_reasoning(reading.text)[:BAD_ANSWER_CHARS]
            self._remember(AIMessage(content=bad))
            self._remember(
                HumanMessage(
                    prompts.retry_message(self._wording(), failures[0], allowed, strict=self.settings.strict)
                )
            )
        decision.queries = tools.queries_asked
        if results:
            self._trace("tool_results", decision=decision.key, step=decision.steps, results=results)

    # --- the fallback -----------------------------------------------------------------------------------
    def _fallback(self, view: Mapping[str, Any], legal: Sequence[str], reason: str) -> dict[str, Any]:
        """A legal move the model did not make, logged with the reason and its ``basis``: the model's own
        last readable intent where that is safe (a decision's accept or reject without its message, a ToM
        report's valid entries with 5 for the rest), else the safe move
        (:func:`server.game.legal.fallback_action`: a ToM report of 5 for every item, reject, finish
        crafting, pass, else the smallest ask)."""
        safe = fallback_action({**view, "legal_actions": list(legal)})
        if safe is None:  # not awaited after all: nothing safe to send, the runner will see it refused
            safe = {"type": "finish_crafting"}
        decision = self._decision
        action, basis = self._intended(view, safe)
        self.fallbacks += 1
        self._trace(
            "fallback",
            decision=decision.key if decision else str(view["move_key"]),
            reason=reason,
            basis=basis,
            action=action,
            errors=list(decision.errors) if decision else [],
            attempts=decision.attempts if decision else 0,
            latency_s=self._move_seconds(decision) if decision else 0.0,
            tool_mode=self._mode.name,
        )
        self._last_submitted = action
        note = f"(No valid action came in time; the game played for you: {json.dumps(action)})"
        self._close_move(HumanMessage(note))
        return action

    def _intended(self, view: Mapping[str, Any], safe: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The fallback that follows the model's newest action call whose intent can be read, if one can
        be made safely. A decision's calls that read as both accept and reject: the safe move
        (``conflicting_intents``)."""
        decision = self._decision
        if decision is None or not decision.readable:
            return safe, "no_readable_answer"
        candidates = [c for name, args in decision.intents if (c := self._candidate(name, args, safe))]
        if not candidates:
            return safe, "safe_default"
        if len({json.dumps(c, sort_keys=True) for c in candidates}) > 1 and safe["type"] == "decide":
            return safe, "conflicting_intents"
        candidate = candidates[-1]
        check = DecisionConnection(view, self._rules_of(view), self._seat_log)
        if not check.act(candidate).get("ok") or check.submitted is None:
            return safe, "safe_default"
        return check.submitted.model_dump(mode="json"), "model_intent"

    def _candidate(self, name: str, args: Any, safe: Mapping[str, Any]) -> dict[str, Any] | None:
        """The safe move one action call stands for: a decision's accept or reject without its message, a
        ToM report's valid entries with the safe report's 5 for the rest; None when it reads as neither."""
        spec = next((s for s in tool_specs(queries=False) if s.name == name), None)
        try:
            request = spec.request(args, self.settings.strict) if spec is not None else None
        except Exception:  # arguments no rendering can read: nothing of the intent is safe to keep
            return None
        if not isinstance(request, Mapping) or request.get("type") != safe["type"]:
            return None
        if safe["type"] == "decide":
            accept = _as_bool(request.get("accept"))
            return None if accept is None else {"type": "decide", "accept": accept, "message": ""}
        if safe["type"] == "report_tom":
            return _merged_report(safe, request)
        return None

    def _trace(self, kind: str, **fields: Any) -> None:
        record = {"source": "llm", "trace": kind, **fields}
        self._traces.append(redact(json_safe(record), self._secrets))


def _truncated_answer(err: openai.LengthFinishReasonError) -> AIMessage:
    """The answer the OpenAI client refused to parse because it was cut at its length limit."""
    completion = err.completion
    content = completion.choices[0].message.content if completion.choices else None
    answer = AIMessage(
        content=(content or "")[:MAX_TEXT_CHARS],
        response_metadata={"finish_reason": "length", "model_name": completion.model},
    )
    if completion.usage is not None:
        answer.usage_metadata = {
            "input_tokens": completion.usage.prompt_tokens,
            "output_tokens": completion.usage.completion_tokens,
            "total_tokens": completion.usage.total_tokens,
        }
    return answer


def _unread_error(code: str, problems: Sequence[str]) -> dict[str, Any] | None:
    """The error told to the model when no call could be read (None: nothing call-like at all)."""
    if code == "truncated":
        return {
            "code": "truncated",
            "message": "Your answer was cut off at its length limit before a complete call; answer with "
            "the call alone.",
            "details": {"problems": list(problems[:5])},
        }
    if code == "invalid_action":
        return {
            "code": "invalid_action",
            "message": "The arguments of your tool call were not a JSON object; send them as one object.",
            "details": {},
        }
    if not problems:
        return None
    return {
        "code": "not_a_tool_call",
        "message": "No call could be read from your answer: " + "; ".join(p[:80] for p in problems[:3]),
        "details": {"problems": [p[:80] for p in problems[:5]]},
    }


_YES = ("true", "yes", "accept", "1")
_NO = ("false", "no", "reject", "0")


def _invalid_call_error(name: str, problem: str, tool_names: Sequence[str]) -> dict[str, Any]:
    """The typed error of an API tool call that could not be used (``name`` is already cut to a safe
    one; the model's own text is not echoed)."""
    if problem == "bad_name":
        return error_answer(
            "unknown_tool",
            f"A tool name is 1 to 64 letters, digits, '_', '.' or '-'; call one of: {', '.join(tool_names)}.",
            {"tool": name},
        )
    if problem == "too_long":
        return error_answer(
            "invalid_action",
            f"The arguments of {name} are longer than {MAX_TEXT_CHARS} characters; send a short JSON object.",
            {"tool": name},
        )
    return error_answer(
        "invalid_action", f"The arguments of {name} are not valid JSON; send a JSON object.", {"tool": name}
    )


def _as_bool(value: Any) -> bool | None:
    """A decision's accept as the model wrote it: a boolean, 1 / 0, or (any case) true / false, yes / no,
    accept / reject; None when it reads as neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and len(value) <= 16:
        word = value.strip().lower()
        if word in _YES or word in _NO:
            return word in _YES
    return None


def _valid_value(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10


def _merged_report(safe: Mapping[str, Any], intent: Mapping[str, Any]) -> dict[str, Any] | None:
    """The safe report (5 everywhere) with the model's valid entries; None when it had none."""
    merged: dict[str, Any] = {"type": "report_tom"}
    taken = 0
    written = intent.get("v0")
    merged["v0"] = {}
    for item, default in safe["v0"].items():
        value = written.get(item) if isinstance(written, Mapping) else None
        taken += _valid_value(value)
        merged["v0"][item] = value if _valid_value(value) else default
    for order in ("v1", "v2"):
        if order not in safe:
            continue
        by_seat = intent.get(order)
        merged[order] = {}
        for seat, values in safe[order].items():
            row = by_seat.get(seat) if isinstance(by_seat, Mapping) else None
            merged[order][seat] = {}
            for item, default in values.items():
                value = row.get(item) if isinstance(row, Mapping) else None
                taken += _valid_value(value)
                merged[order][seat][item] = value if _valid_value(value) else default
    return merged if taken else None


def _openai_compatible(model: BaseChatModel) -> bool:
    """Whether ``model`` is LangChain's OpenAI client (it takes per-request seed, timeout, extra_body)."""
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return False
    return isinstance(model, BaseChatOpenAI)


def _hosted_openai(model: BaseChatModel) -> bool:
    """OpenAI's (or Azure's) own API: it refuses ``max_tokens`` next to ``max_completion_tokens``."""
    base = endpoint_url(model)
    return getattr(model, "azure_endpoint", None) is not None or not base or "api.openai.com" in base


def _reasoning_of(answer: AIMessage, text: str) -> str:
    """Every piece of reasoning in ``answer`` (whose reply ``text``, already cut to its bound, is given):
    think blocks, provider reasoning fields, free text."""
    pieces: list[str] = []
    thoughts, outside = split_reasoning(text)
    pieces += thoughts
    if outside:
        pieces.append(outside)
    extra = answer.additional_kwargs.get("reasoning_content") or answer.additional_kwargs.get("reasoning")
    if isinstance(extra, str) and extra.strip():
        pieces.append(extra.strip()[:MAX_TEXT_CHARS])
    if not isinstance(answer.content, str):
        for block in answer.content:
            if isinstance(block, Mapping) and block.get("type") in ("reasoning", "thinking"):
                pieces.append(str(block.get("reasoning") or block.get("thinking") or ""))
    return "\n\n".join(p for p in pieces if p)
