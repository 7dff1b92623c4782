"""A simulated chat model of fixed latency: a LangChain ``BaseChatModel`` that waits a fixed time per call and
answers with a legal tool call for the current phase, so runner benchmarks and dry runs measure the runner,
not a provider and not an HTTP stack.

It reads the same request an OpenAI-compatible server would (the messages as role/content, the bound tool
schemas) and answers through :class:`~agents.testing.scripted_player.ScriptedPlayer`, the project's scripted
player; so a game with it plays like one against ``agents/testing/openai_server.py``, minus the HTTP
round trip and the JSON (de)serialisation on both sides. Each call sleeps ``latency`` seconds (the
network and the model's time), which releases the GIL as a real request would. Usage is reported as a
provider would (``usage_metadata``), estimated at four characters a token so the simulation itself costs
no tokenizer time.

As a policy (entry point ``simulated_llm``)::

    simulated_llm                      0.5 s per call, reports V0 (or what the game's settings ask)
    simulated_llm?latency=0.05&tom=0,1 a faster model that reports V0 and V1
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from agents.bots.registry import PolicyOptions, card
from agents.llm.agent import AgentSettings, LLMAgent
from agents.llm.factory import TOM_ORDER_SETS, ToMOrderSet
from agents.testing.scripted_player import ScriptedPlayer

CHARS_PER_TOKEN = 4
"""The usage estimate's rate (a real tokenizer would cost the benchmark the time it measures)."""

SIMULATED_MODEL = "simulated-fixed-latency"
"""The model name the simulated provider reports."""


def _role(message: BaseMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ToolMessage):
        return "tool"
    return "user"


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


class SimulatedChatModel(BaseChatModel):
    """Answers every call after ``latency`` seconds with the scripted player's tool call (see the module
    docstring). ``sleep`` is how it waits (a fake clock's in tests)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    latency: float = Field(0.5, ge=0, description="seconds each call takes")
    model_name: str = Field(SIMULATED_MODEL, description="the model name reported with each answer")
    sleep: Callable[[float], None] = Field(default=time.sleep, exclude=True)
    _player: ScriptedPlayer = PrivateAttr(default_factory=ScriptedPlayer)
    _ids: Any = PrivateAttr(default_factory=itertools.count)

    @property
    def _llm_type(self) -> str:
        return "simulated-fixed-latency"

    @property
    def calls(self) -> int:
        """Calls answered so far."""
        return self._player.calls

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        strict = kwargs.pop("strict", None)
        schemas = [convert_to_openai_tool(tool, strict=strict) for tool in tools]
        return self.bind(tools=schemas, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = {
            "model": self.model_name,
            "messages": [{"role": _role(m), "content": _text(m)} for m in messages],
            "tools": kwargs.get("tools") or [],
        }
        name, args = self._player.decide(request)
        self._player.calls += 1
        self.sleep(self.latency)
        prompt_chars = sum(len(m["content"]) for m in request["messages"]) + len(json.dumps(request["tools"]))
        completion_chars = len(name) + len(json.dumps(args))
        usage = {
            "input_tokens": prompt_chars // CHARS_PER_TOKEN,
            "output_tokens": completion_chars // CHARS_PER_TOKEN,
            "total_tokens": (prompt_chars + completion_chars) // CHARS_PER_TOKEN,
        }
        message = AIMessage(
            content="",
            tool_calls=[{"name": name, "args": args, "id": f"call_{next(self._ids)}", "type": "tool_call"}],
            usage_metadata=usage,  # type: ignore[arg-type]
            response_metadata={"model_name": self.model_name, "finish_reason": "tool_calls"},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class SimulatedLLMOptions(PolicyOptions):
    """The options of the ``simulated_llm`` policy."""

    latency: float = Field(0.5, ge=0, le=600, description="seconds each model call takes")
    tom: ToMOrderSet | None = Field(
        None, description="the ToM orders it reports when playing alone (V0, V0+V1, V0+V1+V2)"
    )

    def chat_model(self) -> str:
        return f"simulated:{SIMULATED_MODEL}"


@card(
    "Simulated LLM (test)",
    "A stand-in for an LLM seat with no real model behind it (for load tests and dry runs): plays poorly.",
    "easy",
    in_lobby=False,
)
def simulated_llm_policy(seed: int, options: SimulatedLLMOptions) -> LLMAgent:
    """An LLM seat played by :class:`SimulatedChatModel`: simulated_llm[?latency=0.5&tom=0,1]. Its
    ``model_name`` is ``simulated:<model>``, so per-provider limits know it as the provider ``simulated``."""
    settings = AgentSettings(tom_orders=TOM_ORDER_SETS[options.tom] if options.tom is not None else None)
    chat = SimulatedChatModel(latency=options.latency)
    return LLMAgent(chat, model_name=options.chat_model(), settings=settings, seed=seed)
