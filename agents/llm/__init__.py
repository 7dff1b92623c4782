"""LLM agents for TradeCraft: LangChain tools generated from the game's declarations, the agent policy,
its traces, and the ``llm`` policy factory (``llm:<provider>:<model>[?tom=0,1&persona=fair&cot=1]``).

Modules: :mod:`agents.llm.tools` (one tool per action and in-phase query), :mod:`agents.llm.decision`
(the connection a policy's decision plays through), :mod:`agents.llm.prompts` (personas and reasoning
modes), :mod:`agents.llm.tracing` (token counts, redaction), :mod:`agents.llm.agent` (the agent),
:mod:`agents.llm.retries` (provider retries and backoff), :mod:`agents.llm.factory` (the ``llm`` policy
factory, its options and the chat model).
"""
