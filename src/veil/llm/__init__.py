"""LLM providers: ``complete`` callables for the memory layer and (later) the agent loop.

Only this package talks to model APIs. :func:`complete_from_spec` turns ``provider:model`` into a
``complete(messages, *, json_schema=None) -> str`` callable.
"""

from __future__ import annotations

from veil.llm.openai_compat import ModelNotConfigured, OpenAICompatible, complete_from_spec

__all__ = ["ModelNotConfigured", "OpenAICompatible", "complete_from_spec"]
