"""Token counting shared by the memory layers. Pluggable: pass an exact counter where it
matters; the default is an estimate that never needs a tokenizer."""

from __future__ import annotations

import math
from collections.abc import Callable

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """About four characters per token, never below the number of words."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), len(text.split()))


class TokenMemo:
    """A counter that remembers the counts of texts it has seen (the renderer counts the same
    transcript texts on every request). Bounded: it forgets everything past ``limit`` texts."""

    def __init__(self, count: TokenCounter, limit: int = 20_000) -> None:
        self._count = count
        self._limit = limit
        self._seen: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self._seen.get(text)
        if found is None:
            found = self._count(text)
            if len(self._seen) >= self._limit:
                self._seen.clear()
            self._seen[text] = found
        return found
