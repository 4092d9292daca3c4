"""LLM providers: streaming providers for the agent loop and ``complete`` callables for memory.

Only this package talks to model APIs. :func:`veil.llm.registry.provider_from_spec` turns
``provider:model`` into a :class:`~veil.llm.provider.Provider` (OpenAI-compatible, Anthropic,
Ollama, OpenRouter, scripted); :func:`veil.llm.registry.extraction_complete_from_spec` into the
memory layer's ``complete(messages, *, json_schema=None) -> str``. The SDK-backed modules
are not imported here, so ``import veil.llm`` stays cheap.
"""

from __future__ import annotations

from veil.llm.configure import ModelNotConfigured

__all__ = ["ModelNotConfigured"]
