"""Long-term memory (seeds/veracium.txt): facts that change only through evidence."""

from __future__ import annotations

from veil.memory.config import BUILTIN_RELATIONS, MemoryConfig, Relation
from veil.memory.memory import (
    Complete,
    EvidenceTooLarge,
    Memory,
    MemoryError,
    NoModel,
    UnknownFact,
)
from veil.memory.model import Episode, Fact, InvalidItem, Provenance, WriteReport

__all__ = [
    "BUILTIN_RELATIONS",
    "Complete",
    "Episode",
    "EvidenceTooLarge",
    "Fact",
    "InvalidItem",
    "Memory",
    "MemoryConfig",
    "MemoryError",
    "NoModel",
    "Provenance",
    "Relation",
    "UnknownFact",
    "WriteReport",
]
