"""How a model is configured: the error that says what to set, and the endpoints' defaults."""

from __future__ import annotations

from collections.abc import Mapping


class ModelNotConfigured(RuntimeError):
    """No usable model: says exactly what to set."""


OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

HOW_TO_CONFIGURE = (
    "Set VEIL_MODEL (or pass --model) to provider:model, for example "
    "openai:gpt-4.1-mini (needs OPENAI_API_KEY), anthropic:claude-sonnet-4-5 (needs "
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
