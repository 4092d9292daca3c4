"""What we know about common models: context windows, output limits and list prices.

Providers ask this table for a model's ``context_window`` (the harness's ``--window`` overrides
it) and for the cost of a reply. Names are matched after normalisation — lower case, any
``vendor/`` prefix dropped (OpenRouter's ``openai/gpt-4o``), ``-``, ``_`` and ``:`` removed (so
``llama-3.1``, ``llama3.1`` and Ollama's ``llama3.1:8b`` agree) — by the longest known prefix, so a
dated snapshot such as ``gpt-4.1-mini-2025-04-14`` finds ``gpt-4.1-mini`` before ``gpt-4.1``.

Unknown models get :data:`DEFAULT_CONTEXT_WINDOW` and cost 0: we would rather report no cost
than a made-up one. Prices are USD per million tokens as listed by the vendor; they are an
estimate (cached input is billed at the full input price for OpenAI — an upper bound).

A local server's window is whatever it was started with (vLLM's ``--max-model-len``, llama.cpp's
``-c``, Ollama's ``num_ctx``), which may be smaller than the model's native window listed here;
use ``--window`` when it is.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT_TOKENS = 8_192


@dataclass(frozen=True)
class ModelInfo:
    """Facts about one model family; prices in USD per million tokens (0 = unknown/free)."""

    context_window: int
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS


# Keys are written naturally and normalised once at import time (see ``normalise``).
_KNOWN: dict[str, ModelInfo] = {
    # OpenAI
    "gpt-5": ModelInfo(400_000, 1.25, 10.0, 128_000),
    "gpt-5-mini": ModelInfo(400_000, 0.25, 2.0, 128_000),
    "gpt-5-nano": ModelInfo(400_000, 0.05, 0.40, 128_000),
    "gpt-4.1": ModelInfo(1_047_576, 2.0, 8.0, 32_768),
    "gpt-4.1-mini": ModelInfo(1_047_576, 0.40, 1.60, 32_768),
    "gpt-4.1-nano": ModelInfo(1_047_576, 0.10, 0.40, 32_768),
    "gpt-4o": ModelInfo(128_000, 2.50, 10.0, 16_384),
    "gpt-4o-mini": ModelInfo(128_000, 0.15, 0.60, 16_384),
    "gpt-4-turbo": ModelInfo(128_000, 10.0, 30.0, 4_096),
    "gpt-4": ModelInfo(8_192, 30.0, 60.0, 4_096),
    "gpt-3.5-turbo": ModelInfo(16_385, 0.50, 1.50, 4_096),
    "o1": ModelInfo(200_000, 15.0, 60.0, 100_000),
    "o1-mini": ModelInfo(128_000, 1.10, 4.40, 65_536),
    "o3": ModelInfo(200_000, 2.0, 8.0, 100_000),
    "o3-mini": ModelInfo(200_000, 1.10, 4.40, 100_000),
    "o4-mini": ModelInfo(200_000, 1.10, 4.40, 100_000),
    # Anthropic: every Claude model has a 200k window; prices only where published and stable.
    "claude": ModelInfo(200_000),
    "claude-3-haiku": ModelInfo(200_000, 0.25, 1.25, 4_096),
    "claude-3-opus": ModelInfo(200_000, 15.0, 75.0, 4_096),
    "claude-3-sonnet": ModelInfo(200_000, 3.0, 15.0, 4_096),
    "claude-3-5-haiku": ModelInfo(200_000, 0.80, 4.0, 8_192),
    "claude-3.5-haiku": ModelInfo(200_000, 0.80, 4.0, 8_192),
    "claude-3-5-sonnet": ModelInfo(200_000, 3.0, 15.0, 8_192),
    "claude-3.5-sonnet": ModelInfo(200_000, 3.0, 15.0, 8_192),
    "claude-3-7-sonnet": ModelInfo(200_000, 3.0, 15.0, 8_192),
    "claude-3.7-sonnet": ModelInfo(200_000, 3.0, 15.0, 8_192),
    "claude-sonnet-4": ModelInfo(200_000, 3.0, 15.0, 8_192),
    "claude-haiku-4-5": ModelInfo(200_000, 1.0, 5.0, 8_192),
    "claude-haiku-4.5": ModelInfo(200_000, 1.0, 5.0, 8_192),
    "claude-opus-4-0": ModelInfo(200_000, 15.0, 75.0, 8_192),
    "claude-opus-4-1": ModelInfo(200_000, 15.0, 75.0, 8_192),
    "claude-opus-4.1": ModelInfo(200_000, 15.0, 75.0, 8_192),
    "claude-opus-4-2025": ModelInfo(200_000, 15.0, 75.0, 8_192),
    "claude-opus-4-5": ModelInfo(200_000, 5.0, 25.0, 8_192),
    "claude-opus-4.5": ModelInfo(200_000, 5.0, 25.0, 8_192),
    # Open-weight families (local servers, OpenRouter): windows only, no price.
    "qwen2.5": ModelInfo(32_768),
    "qwen-2.5": ModelInfo(32_768),
    "qwen3": ModelInfo(40_960),
    "llama3": ModelInfo(8_192),
    "llama3.1": ModelInfo(131_072),
    "llama3.2": ModelInfo(131_072),
    "llama3.3": ModelInfo(131_072),
    "llama-3": ModelInfo(8_192),
    "llama-3.1": ModelInfo(131_072),
    "llama-3.2": ModelInfo(131_072),
    "llama-3.3": ModelInfo(131_072),
    "mistral": ModelInfo(32_768),
    "mistral-nemo": ModelInfo(131_072),
    "gemma2": ModelInfo(8_192),
    "gemma3": ModelInfo(131_072),
    "phi3": ModelInfo(4_096),
    "phi4": ModelInfo(16_384),
    "deepseek-r1": ModelInfo(131_072),
    "deepseek-v3": ModelInfo(131_072),
    "deepseek-coder-v2": ModelInfo(163_840),
}


def normalise(model: str) -> str:
    """Lower-cased, vendor prefix dropped, ``-``/``_``/``:`` removed (see the module doc)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.replace("-", "").replace("_", "").replace(":", "")


_TABLE: dict[str, ModelInfo] = {normalise(name): info for name, info in _KNOWN.items()}


def lookup(model: str) -> ModelInfo | None:
    """The entry with the longest normalised prefix of ``model``, or None when none matches."""
    name = normalise(model)
    best: str | None = None
    for key in _TABLE:
        if name.startswith(key) and (best is None or len(key) > len(best)):
            best = key
    return None if best is None else _TABLE[best]


def context_window(model: str, default: int = DEFAULT_CONTEXT_WINDOW) -> int:
    """The model's context window in tokens; ``default`` when the model is unknown."""
    info = lookup(model)
    return default if info is None else info.context_window


def max_output_tokens(model: str) -> int:
    """A safe ``max_tokens`` for APIs that require one (Anthropic)."""
    info = lookup(model)
    return DEFAULT_MAX_OUTPUT_TOKENS if info is None else info.max_output_tokens


def cost_usd(
    model: str,
    input_tokens: int,
    output_tokens: int,
    *,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
) -> float:
    """List-price cost of one reply; 0.0 when the model has no known price.

    ``input_tokens`` excludes the cache counts, which are billed at 1.25x (writes) and 0.1x
    (reads) of the input price — Anthropic's published multipliers.
    """
    info = lookup(model)
    if info is None:
        return 0.0
    per_token_in = info.input_usd_per_mtok / 1e6
    return (
        input_tokens * per_token_in
        + cache_write_tokens * per_token_in * 1.25
        + cache_read_tokens * per_token_in * 0.1
        + output_tokens * info.output_usd_per_mtok / 1e6
    )
