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
from dataclasses import dataclass
from typing import Any, cast


class ModelNotConfigured(RuntimeError):
    """No usable model: says exactly what to set."""


HOW_TO_CONFIGURE = (
    "Set VEIL_MODEL (or pass --model) to provider:model, for example "
    "openai:gpt-4.1-mini (needs OPENAI_API_KEY), ollama:qwen2.5:7b (a local Ollama at "
    "OLLAMA_HOST, default http://127.0.0.1:11434), or openai-compatible:MODEL with "
    "VEIL_BASE_URL=http://127.0.0.1:8000/v1 for vLLM or llama.cpp's server."
)


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
    """``openai:MODEL``, ``ollama:MODEL`` or ``openai-compatible:MODEL`` (default: $VEIL_MODEL)."""
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
        host = os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434")
        if not host.startswith("http"):
            host = f"http://{host}"
        return OpenAICompatible(model, host.rstrip("/") + "/v1")
    if provider == "openai-compatible":
        base = os.environ.get("VEIL_BASE_URL")
        if not base:
            raise ModelNotConfigured(f"{spec} needs VEIL_BASE_URL. {HOW_TO_CONFIGURE}")
        return OpenAICompatible(model, base, os.environ.get("VEIL_API_KEY"))
    raise ModelNotConfigured(f"unknown provider {provider!r}. {HOW_TO_CONFIGURE}")
