"""Numpy columns over the engine's items: the hot path scores every item in one pass."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FLOAT_COLUMNS = (
    "stability",
    "last_tick",
    "access",
    "relevance",
    "structure",
    "cognitive",
    "durable_stability",
    "last_wall",
    "tokens",
    "turn_weight",
    "turn_index",
    "manual_tick",
    "stub_tokens",
    "created_tick",
    "rate",
    "rest",
    "multiplier",
    "boost",
)
BOOL_COLUMNS = (
    "result",
    "procedural",
    "manual",
    "pinned",
    "never",
    "live",
    "warm",
    "is_turn",
    "clipped",
    "superseded",
    "stub_shorter",
)
"""``rate``, ``rest``, ``multiplier``, ``boost``: the parts of an item's score that do not move
with the clock (``score.static_part``, ``fsrs.decay_rate``), kept per row by the working
set; ``clipped``: a result shown as its head and tail (it has an excerpt); ``superseded``: a
result a later call repeated (the same command run again, the same file or range read again);
``stub_shorter``: the item's stub is shorter than its content (no other is ever evicted)."""


class Columns:
    """Growable parallel arrays, one row per item (rows are never removed: nothing is)."""

    def __init__(self, capacity: int = 256) -> None:
        self.size = 0
        self._capacity: int = capacity
        self.f: dict[str, NDArray[np.float64]] = {
            n: np.zeros(capacity, dtype=np.float64) for n in FLOAT_COLUMNS
        }
        self.b: dict[str, NDArray[np.bool_]] = {
            n: np.zeros(capacity, dtype=np.bool_) for n in BOOL_COLUMNS
        }

    def add(self) -> int:
        if self.size == self._capacity:
            self._capacity *= 2
            for name, col in self.f.items():
                grown = np.zeros(self._capacity, dtype=np.float64)
                grown[: self.size] = col[: self.size]
                self.f[name] = grown
            for name, col in self.b.items():
                grown_b = np.zeros(self._capacity, dtype=np.bool_)
                grown_b[: self.size] = col[: self.size]
                self.b[name] = grown_b
        row = self.size
        self.size += 1
        return row

    def view(self, name: str) -> NDArray[np.float64]:
        return self.f[name][: self.size]

    def flag(self, name: str) -> NDArray[np.bool_]:
        return self.b[name][: self.size]
