"""Veil inside agent frameworks it does not run: adapters that only their users import.

- :mod:`veil.integrations.pydantic_ai` — a history processor over the context engine and the
  memory tools, for ``pydantic_ai.Agent`` (extra ``veil[pydantic-ai]``).
- :mod:`veil.integrations.openai_agents` — a ``Session`` on the tape with eviction applied to
  what it returns, and the memory tools, for the OpenAI Agents SDK (extra ``veil[agents]``).
- :mod:`veil.integrations.window` and :mod:`veil.integrations.long_term` — what both share,
  free of any framework.

Nothing else in Veil imports this package, and only these modules import the frameworks
(``tests/test_architecture.py``); it uses the memory layers, never ``agent/``, ``cli/`` or
``server/``. Importing a framework adapter without its framework installed raises an
``ImportError`` that names the extra to install.
"""
