"""The LLM agent: a policy (``act`` / ``observe`` / ``refused`` / ``drain_traces``) that plays one seat with
any LangChain chat model through the tools of :mod:`agents.llm.tools`.

One decision (one ``act`` call):

1. The prompt is the stable prefix — the narrator's rules preamble and the seat's fixed facts
   (:func:`agents.narrator.stable_prefix`, the same for every seat up to its ToM duty) and the agent's
   instructions (persona, reasoning mode) — then the dialogue memory of earlier moves, trimmed from the
   oldest move to ``memory_tokens``, then the new observation (:func:`~agents.narrator.describe_view` and
   the new events). Tools are bound in a fixed order every time, so providers' prompt caches hit.
2. The model answers with tool calls. Queries are answered at once from what the seat may see (at most
   ``max_queries`` per decision; nothing advances); the first valid action ends the decision. An answer
   that is no tool call, names an unknown tool, has malformed JSON or wrong arguments, values outside
   0-10 or an action not allowed now gets the same typed error a browser gets, as the tool result, and the
   model tries again. So does an action the game itself refuses (the runner calls ``refused``).
   After ``max_invalid`` such errors in one decision the agent plays a logged fallback action.
3. Provider failures (HTTP 429 / 5xx, timeouts, connection errors) are retried with exponential backoff
   and jitter (honouring ``Retry-After``), up to ``provider_retries`` per call and ``game_retry_budget``
   per game, and no new call or retry starts after ``move_seconds`` on one move; a call that still
   fails, or any call once a budget is spent, ends in the fallback. A provider outage therefore ends
   the decision, never hangs the game (:mod:`agents.llm.retries`).

Reasoning (``<think>`` blocks, ``reasoning_content``, chain-of-thought text) goes to the trace only: it
is cut from every message field sent to the game and from the memory.

Traces (:meth:`LLMAgent.drain_traces`): ``llm_prefix`` once (the stable system prompt and tool
declarations, with their sha256 and o200k token count), ``llm_call`` per model call (the prompt after the
prefix, the completion, reasoning, tool calls and answers, token counts — provider-reported, else o200k —
latency, provider retries), ``refused`` and ``fallback`` records, and ``decision`` per finished move. API
keys never appear: credentials come from the environment and every record is redacted.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from agents.llm import prompts
from agents.llm.decision import DecisionConnection
from agents.llm.retries import ProviderRetries
from agents.llm.tools import SeatTools, strip_reasoning
from agents.llm.tracing import (
    count_message_tokens,
    count_tokens,
    count_tool_tokens,
    json_safe,
    message_record,
    redact,
    secrets_in_environment,
)
from agents.narrator import SECTION_EVENTS, describe_view, narrate_events, stable_prefix
from craft_rules.loader import load_rule_set
from craft_rules.model import RuleSet
from server.game.actions import Action
from server.game.legal import fallback_action

_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL | re.IGNORECASE)


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
    game_retry_budget: int = 40
    backoff_base: float = 1.0
    backoff_cap: float = 30.0
    move_seconds: float = 300.0  # no new model call or retry starts after this long on one move
    tom_orders: tuple[int, ...] | None = None  # what `tradecraft play` asks of this seat (None: the game's)

    def __post_init__(self) -> None:
        if self.persona not in prompts.PERSONAS:
            raise ValueError(f"persona must be one of {', '.join(prompts.PERSONAS)}, not {self.persona!r}")
        if self.reasoning not in prompts.REASONING_MODES:
            raise ValueError(f"reasoning must be direct or cot, not {self.reasoning!r}")
        for name in ("max_steps", "max_invalid"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("memory_tokens", "max_queries", "provider_retries", "game_retry_budget"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


@dataclass
class _Decision:
    """Book-keeping of the move being decided."""

    key: str
    deadline: float = float("inf")
    invalid: int = 0
    steps: int = 0
    queries: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    errors: list[str] = field(default_factory=list)


class LLMAgent:
    """Plays one seat with ``model`` (any LangChain chat model with tool calling); see the module docstring.

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
        self._bound: Any = None
        self._tool_schemas: list[dict[str, Any]] = []
        self.prefix_tokens = 0
        self._memory: list[list[tuple[BaseMessage, int]]] = []  # per move: (message, its o200k tokens)
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
        parser made of its tool call, which the runner submits as it is), else the fallback."""
        self._start(view)
        key = view["move_key"]
        if self._decision is None or self._decision.key != key:
            self._decision = _Decision(key, deadline=time.monotonic() + self.settings.move_seconds)
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
        if decision.invalid >= self.settings.max_invalid:
            return self._fallback(view, legal, "too_many_invalid_calls")
        if self._provider.budget_spent:
            return self._fallback(view, legal, "provider_budget_spent")
        self._memory.append([])
        self._remember(HumanMessage(self._observation(view)))
        connection = DecisionConnection(view, self._rules_of(view), self._seat_log)
        tools = SeatTools(connection, strict=self.settings.strict, max_queries=self.settings.max_queries)
        self._last_submitted = None
        while decision.steps < self.settings.max_steps:
            if time.monotonic() >= decision.deadline:
                return self._fallback(view, legal, "move_time_limit")
            decision.steps += 1
            answer = self._call_model(decision)
            if answer is None:
                return self._fallback(view, legal, "provider_failed")
            self._handle(answer, tools, decision)
            if connection.submitted is not None:
                self._last_submitted = connection.submitted.model_dump(mode="json")
                self._trace(
                    "decision",
                    decision=decision.key,
                    action=self._last_submitted,
                    steps=decision.steps,
                    queries=tools.queries_asked,
                    invalid=decision.invalid,
                    provider_retries=decision.retries,
                    prompt_tokens=decision.tokens_in,
                    completion_tokens=decision.tokens_out,
                    fallback=False,
                )
                return connection.submitted
            if decision.invalid >= self.settings.max_invalid:
                return self._fallback(view, legal, "too_many_invalid_calls")
        return self._fallback(view, legal, "step_limit")

    # --- set-up ---------------------------------------------------------------------------------------
    def _rules_of(self, view: Mapping[str, Any]) -> RuleSet:
        if self._given_rules is not None:
            return self._given_rules
        if self._rules is None or self._rules.name != view["ruleset"]:
            self._rules = load_rule_set(view["ruleset"])
        return self._rules

    def _start(self, view: Mapping[str, Any]) -> None:
        """On the first move: the stable system prompt and the bound tools (then fixed for the game)."""
        if self._system is not None and self._seat == view["seat"]:
            return
        self._seat = view["seat"]
        rules = self._rules_of(view)
        text = (
            stable_prefix(view, rules)
            + "\n\n"
            + prompts.instructions(
                persona=self.settings.persona,
                reasoning=self.settings.reasoning,
                max_queries=self.settings.max_queries,
                strict=self.settings.strict,
            )
        )
        self._system = SystemMessage(text)
        # the tools only shape the schemas here; each decision dispatches through its own connection
        declared = SeatTools(_NoConnection(), strict=self.settings.strict).tools()
        self._tool_schemas = [
            convert_to_openai_tool(t, strict=True if self.settings.strict else None) for t in declared
        ]
        self._bound = self.model.bind_tools(declared, **({"strict": True} if self.settings.strict else {}))
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
                "persona": self.settings.persona,
                "reasoning": self.settings.reasoning,
                "strict": self.settings.strict,
                "memory_tokens": self.settings.memory_tokens,
                "max_queries": self.settings.max_queries,
                "max_invalid": self.settings.max_invalid,
            },
        )

    def _observation(self, view: Mapping[str, Any]) -> str:
        rules = self._rules_of(view)
        new, self._unseen = self._unseen, []
        events = narrate_events(new, view["seat"], rules)
        text = describe_view(view, rules) + "\n\n" + SECTION_EVENTS + "\n" + events
        if self._pending_note:
            text = self._pending_note + "\n\n" + text
            self._pending_note = None
        return text

    # --- memory ---------------------------------------------------------------------------------------
    def _remember(self, message: BaseMessage) -> None:
        self._memory[-1].append((message, count_message_tokens([message])))

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
    def _call_model(self, decision: _Decision) -> AIMessage | None:
        messages = self.prompt()
        offline_prompt = self.prefix_tokens + count_message_tokens(messages[1:])
        outcome = self._provider.call(lambda: self._bound.invoke(messages), decision.deadline)
        decision.retries += outcome.retries
        answer = outcome.answer
        if answer is not None and not isinstance(answer, AIMessage):
            answer = AIMessage(content=getattr(answer, "content", str(answer)))
        self._trace_call(decision, messages, answer, offline_prompt, outcome.latency, outcome.failures)
        return answer

    def _trace_call(
        self,
        decision: _Decision,
        messages: Sequence[BaseMessage],
        answer: AIMessage | None,
        offline_prompt: int,
        latency: float,
        retries: list[dict[str, Any]],
    ) -> None:
        record: dict[str, Any] = {
            "model": self.model_name,
            "decision": decision.key,
            "step": decision.steps,
            "prompt": [message_record(m) for m in messages[1:]],  # the prefix is in llm_prefix
            "prompt_tokens_o200k": offline_prompt,
            "prefix_tokens_o200k": self.prefix_tokens,
            "latency_s": round(latency, 4),
            "provider_retries": retries,
        }
        if answer is None:
            record["completion"] = None
            self._trace("llm_call", **record)
            return
        reasoning = _reasoning_of(answer)
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
                "completion_tokens": count_tokens(_content_text(answer.content))
                + count_tokens(json.dumps([c["args"] for c in answer.tool_calls])),
                "source": "o200k",
            }
        decision.tokens_in += tokens["prompt_tokens"]
        decision.tokens_out += tokens["completion_tokens"]
        record.update(
            completion=message_record(answer),
            reasoning=reasoning or None,
            tokens=tokens,
            finish_reason=answer.response_metadata.get("finish_reason"),
            provider_model=answer.response_metadata.get("model_name"),  # the model as the provider names it
        )
        self._trace("llm_call", **record)

    # --- the answer -------------------------------------------------------------------------------------
    def _handle(self, answer: AIMessage, tools: SeatTools, decision: _Decision) -> None:
        """Answer every tool call of ``answer`` (typed errors included) and remember the exchange."""
        calls = list(answer.tool_calls)
        invalid = list(answer.invalid_tool_calls)
        # memory keeps the calls, not the free text: reasoning stays in the trace
        self._remember(
            AIMessage(content="", tool_calls=calls, invalid_tool_calls=invalid, id=answer.id)
            if calls or invalid
            else AIMessage(content=strip_reasoning(_content_text(answer.content))[:2000])
        )
        if not calls and not invalid:
            decision.invalid += 1
            decision.errors.append("not_a_tool_call")
            self._remember(HumanMessage(prompts.NOT_A_TOOL_CALL))
            self._trace("tool_error", decision=decision.key, error={"code": "not_a_tool_call"})
            return
        results: list[dict[str, Any]] = []
        for bad in invalid:
            error = {
                "ok": False,
                "error": {
                    "code": "invalid_action",
                    "message": f"The arguments of {bad.get('name')} are not valid JSON; send a JSON object.",
                    "details": {"tool": bad.get("name")},
                },
            }
            decision.invalid += 1
            decision.errors.append("invalid_action")
            self._answer_call(bad.get("id") or "", error, results, bad.get("name"), bad.get("args"))
        done = False
        for call in calls:
            name, args = call["name"], call["args"]
            if done:
                reply = {
                    "ok": False,
                    "error": {
                        "code": "one_action_per_move",
                        "message": "Only the first action of a move counts; this call was ignored.",
                        "details": {"tool": name},
                    },
                }
            else:
                reply = tools.call(name, args)
                spec = tools.specs.get(name)
                if spec is None or (spec.kind == "action" and not reply.get("ok")):
                    decision.invalid += 1
                    decision.errors.append(str(reply.get("error", {}).get("code")))
                done = done or (spec is not None and spec.kind == "action" and bool(reply.get("ok")))
            self._answer_call(call.get("id") or "", reply, results, name, args)
        decision.queries = tools.queries_asked
        self._trace("tool_results", decision=decision.key, step=decision.steps, results=results)

    def _answer_call(
        self, call_id: str, reply: dict[str, Any], results: list[dict[str, Any]], name: Any, args: Any
    ) -> None:
        text = json.dumps(reply, ensure_ascii=False)
        self._remember(ToolMessage(text, tool_call_id=call_id))
        results.append({"id": call_id, "tool": name, "args": args, "answer": reply})

    # --- the fallback -----------------------------------------------------------------------------------
    def _fallback(self, view: Mapping[str, Any], legal: Sequence[str], reason: str) -> dict[str, Any]:
        """The safe legal move (:func:`server.game.legal.fallback_action`: a ToM report of 5 for every item,
        reject, finish crafting, pass, else the smallest ask), logged with the reason."""
        action = fallback_action({**view, "legal_actions": list(legal)})
        if action is None:  # not awaited after all: nothing safe to send, the runner will see it refused
            action = {"type": "finish_crafting"}
        self.fallbacks += 1
        decision = self._decision
        self._trace(
            "fallback",
            decision=decision.key if decision else str(view["move_key"]),
            reason=reason,
            action=action,
            errors=list(decision.errors) if decision else [],
        )
        self._last_submitted = action
        self._remember_fallback(action)
        return action

    def _remember_fallback(self, action: Mapping[str, Any]) -> None:
        if not self._memory:
            self._memory.append([])
        note = f"(No valid action came in time; the game played for you: {json.dumps(action)})"
        self._remember(HumanMessage(note))

    def _trace(self, kind: str, **fields: Any) -> None:
        record = {"source": "llm", "trace": kind, **fields}
        self._traces.append(redact(json_safe(record), self._secrets))


class _NoConnection:
    """Stands in for a connection where tools are only declared, never called."""

    seat = -1
    finished = False

    def view(self) -> dict[str, Any]:
        return {}

    def events(self) -> list[dict[str, Any]]:
        return []

    def act(self, action: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("declaration-only tools cannot act")

    def query(self, query: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("declaration-only tools cannot query")

    def wait_for_turn(self, timeout: float | None = None) -> bool:
        return True


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _reasoning_of(answer: AIMessage) -> str:
    """Every piece of reasoning in ``answer``: think blocks, provider reasoning fields, free text."""
    pieces: list[str] = []
    text = _content_text(answer.content)
    pieces += [m.strip() for m in _THINK_BLOCK.findall(text) if m.strip()]
    outside = strip_reasoning(text)
    if outside:
        pieces.append(outside)
    extra = answer.additional_kwargs.get("reasoning_content") or answer.additional_kwargs.get("reasoning")
    if isinstance(extra, str) and extra.strip():
        pieces.append(extra.strip())
    if not isinstance(answer.content, str):
        for block in answer.content:
            if isinstance(block, Mapping) and block.get("type") in ("reasoning", "thinking"):
                pieces.append(str(block.get("reasoning") or block.get("thinking") or ""))
    return "\n\n".join(p for p in pieces if p)
