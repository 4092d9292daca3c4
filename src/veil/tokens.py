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
