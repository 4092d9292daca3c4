"""Long-term memory (docs/seeds/veracium.txt): facts that change only through evidence."""

from __future__ import annotations

from veil.memory.config import BUILTIN_RELATIONS, MemoryConfig, Relation
from veil.memory.maintain import MaintainReport
from veil.memory.memory import (
    Complete,
    EvidenceTooLarge,
    Memory,
    MemoryError,
    NoModel,
    UnknownFact,
)
from veil.memory.model import Episode, Fact, InvalidItem, Provenance, WriteReport
from veil.memory.portability import ImportFormatError, ImportReport
from veil.memory.recall import Recall

__all__ = [
    "BUILTIN_RELATIONS",
    "Complete",
    "Episode",
    "EvidenceTooLarge",
    "Fact",
    "ImportFormatError",
    "ImportReport",
    "InvalidItem",
    "MaintainReport",
    "Memory",
    "MemoryConfig",
    "MemoryError",
    "NoModel",
    "Provenance",
    "Recall",
    "Relation",
    "UnknownFact",
    "WriteReport",
]
