"""LLM agents for TradeCraft: LangChain tools generated from the game's declarations, the agent policy,
its tool modes and traces, and the ``llm`` policy factory
(``llm:<provider>:<model>[?tom=0,1&persona=fair&cot=1&tool_mode=auto&compact=1]``).

Modules: :mod:`agents.llm.tools` (one tool per action and in-phase query), :mod:`agents.llm.decision`
(the connection a policy's decision plays through), :mod:`agents.llm.modes` (the three tool modes:
``native``, ``json_schema``, ``prompted``), :mod:`agents.llm.probe` (the connection check that picks a
mode, once per endpoint and model), :mod:`agents.llm.extract` (lenient, bounded reading of calls written
as text), :mod:`agents.llm.prompts` (instructions per mode, personas, reasoning modes, retry messages),
:mod:`agents.llm.tracing` (token counts, redaction), :mod:`agents.llm.agent` (the agent: prompt, memory,
bounded generation, fallback), :mod:`agents.llm.retries` (provider retries and backoff),
:mod:`agents.llm.factory` (the ``llm`` policy factory, its options and the chat model).

Docs: ``docs/llm-agents.md``; open models on local servers: ``docs/open-models.md``.
"""
