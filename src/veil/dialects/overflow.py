"""How providers say a request did not fit the model's context window, in every wire dialect:
whether an error says so, and what limit and size it states. Pure.

The one copy of these texts: the providers (:mod:`veil.llm.failures`) and the proxy
(:mod:`veil.proxy.server`) both read refusals through it.
"""

from __future__ import annotations

import re

# Texts by which servers say "the prompt does not fit". OpenAI and OpenRouter: "maximum context
# length"; vLLM: the same, or "longer than the maximum model length"; llama.cpp's server:
# "exceeds the available context size" (type exceed_context_size_error); Anthropic: "prompt is
# too long" and "input length and `max_tokens` exceed context limit"; Gemini: "The input token
# count (M) exceeds the maximum number of tokens allowed (N)."
OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"context_length_exceeded",
        r"maximum context length",
        r"context length exceeded",
        r"maximum model length",
        r"exceeds? the available context size",
        r"exceed_context_size",
        r"context window",
        r"prompt is too long",
        r"exceed context limit",
        r"too many tokens in (the )?(prompt|input)",
        r"input token count \(?\d+\)? exceeds the maximum",
    )
)


def is_overflow_text(text: str) -> bool:
    """True when an error text or code says the request did not fit the context window."""
    return any(p.search(text) for p in OVERFLOW_PATTERNS)


_LIMIT = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"maximum context length is (\d+)",
        r"tokens? > (\d+) maximum",
        r"n_ctx['\"]?\s*[:=]\s*(\d+)",
        r"context (?:length|window|size) (?:of|is) (\d+)",
        r"maximum (?:model|input) length (?:of|is) (\d+)",
        r"maximum number of tokens allowed \((\d+)\)",
    )
)
_SENT = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\((\d+) in the messages",
        r"resulted in (\d+) tokens",
        r"prompt is too long: (\d+) tokens",
        r"n_prompt_tokens['\"]?\s*[:=]\s*(\d+)",
        r"you requested (\d+) tokens",
        r"(\d+) input tokens",
        r"input token count \((\d+)\)",
    )
)


def overflow_limits(text: str) -> tuple[int | None, int | None]:
    """What an overflow error states, when it states it: (the model's limit, the tokens the
    request had), each None when the text does not say. OpenAI and vLLM ("maximum context
    length is N tokens. However, your messages resulted in M"), Anthropic ("prompt is too
    long: M tokens > N maximum") and llama.cpp's server (``n_prompt_tokens``, ``n_ctx``)."""

    def first(patterns: tuple[re.Pattern[str], ...]) -> int | None:
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return int(found.group(1))
        return None

    return first(_LIMIT), first(_SENT)


__all__ = ["OVERFLOW_PATTERNS", "is_overflow_text", "overflow_limits"]
