"""Sizes of the in-process vector indexes (SQLite backend), apart from the indexes themselves so
that a store can be configured without importing numpy (see :mod:`veil.tape.vectors`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VectorIndexConfig:
    """Sizes of the in-process vector indexes (SQLite backend)."""

    exact_below: int = 20_000
    """Live vectors below which a scope is searched exactly; at or above, projected."""
    energy: float = 0.8
    """Share of the spectrum the projection keeps (chooses how many directions)."""
    candidates: int = 1_000
    """Projected candidates ranked exactly per query (at least ``8 * k``)."""
    persist_at_least: int = 2_000
    """Only indexes with at least this many live vectors are kept as sidecar files."""

    def __post_init__(self) -> None:
        if self.exact_below < 1 or self.candidates < 1:
            raise ValueError("VectorIndexConfig.exact_below and candidates must be at least 1")
        if not 0.0 < self.energy < 1.0:
            raise ValueError("VectorIndexConfig.energy must be between 0 and 1")
        if self.persist_at_least < 0:
            raise ValueError("VectorIndexConfig.persist_at_least must be >= 0")
