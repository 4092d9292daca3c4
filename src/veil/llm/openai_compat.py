"""A minimal OpenAI-compatible chat-completions client (stdlib only) for extraction.

Works with OpenAI, vLLM, llama.cpp's server, Ollama's ``/v1`` and OpenRouter. The JSON schema
is passed as ``response_format`` so servers that support structured output constrain decoding;
servers that do not simply ignore it (the memory layer parses tolerantly either way).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast


class ModelNotConfigured(RuntimeError):
    """No usable model: says exactly what to set."""


OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

HOW_TO_CONFIGURE = (
    "Set VEIL_MODEL (or pass --model) to provider:model, for example "
    "openai:gpt-4.1-mini (needs OPENAI_API_KEY), anthropic:claude-sonnet-4-6 (needs "
    "ANTHROPIC_API_KEY), openrouter:VENDOR/MODEL (needs OPENROUTER_API_KEY), ollama:qwen2.5:7b "
    "(a local Ollama at OLLAMA_HOST, default http://127.0.0.1:11434), or openai-compatible:MODEL "
    "with VEIL_BASE_URL=http://127.0.0.1:8000/v1 for vLLM or llama.cpp's server (optional "
    "VEIL_API_KEY); scripted:FILE replays a script of replies."
)


def ollama_base_url(env: Mapping[str, str]) -> str:
    """Ollama's OpenAI-compatible endpoint from ``$OLLAMA_HOST`` (``host:port`` or a URL)."""
    host = env.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
    if not host.startswith("http"):
        host = f"http://{host}"
    return host.rstrip("/") + "/v1"


@dataclass
class OpenAICompatible:
    model: str
    base_url: str
    api_key: str | None = None
    timeout_s: float = 120.0
    temperature: float = 0.0

    def __call__(
        self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
    ) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "extraction", "schema": json_schema},
            }
        request = urllib.request.Request(
            self.base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                data = cast(dict[str, Any], json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode(errors="replace")
            raise RuntimeError(f"{self.base_url} answered {exc.code}: {detail}") from None
        except urllib.error.URLError as exc:
            raise RuntimeError(f"cannot reach {self.base_url}: {exc.reason}") from None
        return str(data["choices"][0]["message"]["content"] or "")


def complete_from_spec(spec: str | None = None) -> OpenAICompatible:
    """A stdlib ``complete`` for ``openai:``, ``ollama:``, ``openai-compatible:``, ``openrouter:``.

    ``spec`` None means ``$VEIL_MODEL``. For any spec, Anthropic and scripted too, use
    :func:`veil.llm.registry.extraction_complete_from_spec`, which has the same call shape.
    """
    spec = spec or os.environ.get("VEIL_MODEL")
    if not spec or ":" not in spec:
        raise ModelNotConfigured(f"no model configured. {HOW_TO_CONFIGURE}")
    provider, model = spec.split(":", 1)
    if provider == "openai":
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ModelNotConfigured(f"{spec} needs OPENAI_API_KEY. {HOW_TO_CONFIGURE}")
        return OpenAICompatible(
            model, os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"), key
        )
    if provider == "ollama":
        return OpenAICompatible(model, ollama_base_url(os.environ))
    if provider == "openai-compatible":
        base = os.environ.get("VEIL_BASE_URL")
        if not base:
            raise ModelNotConfigured(f"{spec} needs VEIL_BASE_URL. {HOW_TO_CONFIGURE}")
        return OpenAICompatible(model, base, os.environ.get("VEIL_API_KEY"))
    if provider == "openrouter":
        key = os.environ.get("OPENROUTER_API_KEY")
        if not key:
            raise ModelNotConfigured(f"{spec} needs OPENROUTER_API_KEY. {HOW_TO_CONFIGURE}")
        return OpenAICompatible(model, OPENROUTER_BASE_URL, key)
    if provider in {"anthropic", "scripted"}:
        raise ModelNotConfigured(
            f"{spec}: this stdlib client speaks only the OpenAI-compatible API; use "
            "veil.llm.registry.extraction_complete_from_spec for any provider."
        )
    raise ModelNotConfigured(f"unknown provider {provider!r}. {HOW_TO_CONFIGURE}")
