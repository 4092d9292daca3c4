"""``provider:model`` → a :class:`Provider`; and a provider → the memory layer's ``complete``.

Specs (from ``--model`` or ``$VEIL_MODEL``; everything after the first ``:`` is the model name, so
``ollama:qwen2.5:7b`` works):

==========================  =====================================================================
``openai:MODEL``            ``OPENAI_API_KEY``; ``OPENAI_BASE_URL`` optional
``anthropic:MODEL``         ``ANTHROPIC_API_KEY``
``ollama:MODEL``            OpenAI-compatible at ``$OLLAMA_HOST/v1`` (default 127.0.0.1:11434)
``openai-compatible:MODEL`` ``VEIL_BASE_URL`` (vLLM, llama.cpp's server, …); ``VEIL_API_KEY`` opt.
``openrouter:VENDOR/MODEL`` ``OPENROUTER_API_KEY``; base https://openrouter.ai/api/v1
``scripted:FILE``           :class:`ScriptedProvider` replaying FILE
==========================  =====================================================================

A missing spec, an unknown provider or a missing key raises :class:`ModelNotConfigured` whose
message says exactly what to set — checked here, before any network call, so ``veil`` can tell
the user at start-up rather than after the first turn.

Each provider's module (and with it its SDK: ``openai``, ``anthropic``) is imported only when
that provider is chosen: a ``scripted:`` run imports neither SDK, which is most of a cold
start's import time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

from veil.llm.configure import (
    HOW_TO_CONFIGURE,
    OPENROUTER_BASE_URL,
    ModelNotConfigured,
    ollama_base_url,
)
from veil.llm.failures import RetryPolicy
from veil.llm.messages import (
    AssistantMessage,
    Done,
    Message,
    Request,
    StreamEvent,
    UserMessage,
)
from veil.llm.provider import Provider
from veil.llm.structured import with_json_instruction

PROVIDERS = ("openai", "anthropic", "ollama", "openai-compatible", "openrouter", "scripted")


def _require(env: Mapping[str, str], name: str, spec: str) -> str:
    value = env.get(name)
    if not value:
        raise ModelNotConfigured(f"{spec} needs {name}. {HOW_TO_CONFIGURE}")
    return value


def provider_from_spec(
    spec: str | None,
    *,
    env: Mapping[str, str] = os.environ,
    retry: RetryPolicy | None = None,
    context_window: int | None = None,
    timeout: float | None = None,
) -> Provider:
    """Build the provider a spec names (``None``: ``$VEIL_MODEL``). See the module doc.

    ``context_window`` overrides the catalog's window (the harness passes ``--window``);
    ``timeout`` is the seconds one model call may take (default 120; a local model's first
    call on a cold CPU needs more).
    """
    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    spec = spec or env.get("VEIL_MODEL")
    if not spec:
        raise ModelNotConfigured(f"no model configured. {HOW_TO_CONFIGURE}")
    kind, sep, model = spec.partition(":")
    if not sep or not model:
        raise ModelNotConfigured(f"{spec!r} is not provider:model. {HOW_TO_CONFIGURE}")
    if kind in ("openai", "ollama", "openai-compatible", "openrouter"):
        return _openai_compatible(kind, model, spec, env, retry, context_window, extra)
    if kind == "anthropic":
        from veil.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            model,
            api_key=_require(env, "ANTHROPIC_API_KEY", spec),
            base_url=env.get("ANTHROPIC_BASE_URL") or None,
            context_window=context_window,
            retry=retry,
            **extra,
        )
    if kind == "scripted":
        from veil.llm.scripted import ScriptedProvider

        if context_window is None:
            return ScriptedProvider(model)
        return ScriptedProvider(model, context_window=context_window)
    raise ModelNotConfigured(
        f"unknown provider {kind!r} (known: {', '.join(PROVIDERS)}). {HOW_TO_CONFIGURE}"
    )


def _openai_compatible(
    kind: str,
    model: str,
    spec: str,
    env: Mapping[str, str],
    retry: RetryPolicy | None,
    context_window: int | None,
    extra: dict[str, Any],
) -> Provider:
    from veil.llm.openai_provider import OpenAIProvider

    if kind == "openai":
        return OpenAIProvider(
            model,
            base_url=env.get("OPENAI_BASE_URL") or None,
            api_key=_require(env, "OPENAI_API_KEY", spec),
            context_window=context_window,
            retry=retry,
            **extra,
        )
    if kind == "ollama":
        return OpenAIProvider(
            model,
            base_url=ollama_base_url(env),
            context_window=context_window,
            retry=retry,
            **extra,
        )
    if kind == "openai-compatible":
        return OpenAIProvider(
            model,
            base_url=_require(env, "VEIL_BASE_URL", spec),
            api_key=env.get("VEIL_API_KEY") or None,
            context_window=context_window,
            retry=retry,
            **extra,
        )
    return OpenAIProvider(
        model,
        base_url=OPENROUTER_BASE_URL,
        api_key=_require(env, "OPENROUTER_API_KEY", spec),
        context_window=context_window,
        retry=retry,
        **extra,
    )


class ExtractionComplete(Protocol):
    """The memory layer's model call: chat messages in, the reply's text out."""

    def __call__(
        self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
    ) -> str: ...


@dataclass(frozen=True)
class ProviderComplete:
    """An :class:`ExtractionComplete` over any :class:`Provider`.

    ``messages`` are OpenAI-style dicts (``role`` system/user/assistant, ``content`` a string or
    a list of ``{"type": "text", "text": ...}`` parts); system messages are joined into the
    request's system prompt. The JSON schema goes where the provider can use it: OpenAI's
    ``response_format`` (constrained decoding on servers that support it), an instruction in
    Anthropic's system prompt; other providers get the instruction too. The caller parses the
    text tolerantly either way — no provider guarantees schema-valid JSON.
    """

    provider: Provider
    max_tokens: int | None = None

    def __call__(
        self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
    ) -> str:
        request = chat_request(messages, max_tokens=self.max_tokens)
        provider = self.provider
        events: Iterator[StreamEvent]
        if getattr(provider, "accepts_json_schema", False):
            events = cast(Any, provider).stream(request, json_schema=json_schema)
        else:
            system = with_json_instruction(request.system, json_schema)
            events = provider.stream(replace(request, system=system))
        for event in events:
            if isinstance(event, Done):
                return event.response.message.content
        raise RuntimeError(f"{provider.model}: the stream ended without a final response")


def chat_request(messages: list[dict[str, Any]], *, max_tokens: int | None = None) -> Request:
    """OpenAI-style chat dicts → a :class:`Request` (system messages → the system prompt)."""
    system: list[str] = []
    out: list[Message] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        text = _text_of(message.get("content"))
        if role == "system":
            system.append(text)
        elif role == "user":
            out.append(UserMessage(text))
        elif role == "assistant":
            out.append(AssistantMessage(text))
        else:
            raise ValueError(f"message {i}: role must be system, user or assistant, not {role!r}")
    return Request("\n\n".join(system), tuple(out), max_tokens=max_tokens)


def _text_of(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = cast(list[object], content)
        return "".join(
            str(cast(dict[str, Any], p).get("text", "")) if isinstance(p, dict) else str(p)
            for p in parts
        )
    return json.dumps(content)


def extraction_complete_from_provider(provider: Provider) -> ExtractionComplete:
    """``complete(messages, *, json_schema=None) -> str`` over ``provider`` (see above)."""
    return ProviderComplete(provider)


def extraction_complete_from_spec(
    spec: str | None = None, *, env: Mapping[str, str] = os.environ
) -> ExtractionComplete:
    """The memory layer's ``complete`` for any spec (``None``: ``$VEIL_MODEL``)."""
    return ProviderComplete(provider_from_spec(spec, env=env))
