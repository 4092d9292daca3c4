"""Long-term memory (docs/seeds/veracium.txt): facts that change only through evidence."""

from __future__ import annotations

from veil.memory.config import BUILTIN_RELATIONS, MemoryConfig, Relation
from veil.memory.maintain import MaintainReport
from veil.memory.memory import (
    Complete,
    EvidenceTooLarge,
    FactNotCurrent,
    Memory,
    NoModel,
    UnknownFact,
    VeilMemoryError,
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
    "FactNotCurrent",
    "ImportFormatError",
    "ImportReport",
    "InvalidItem",
    "MaintainReport",
    "Memory",
    "MemoryConfig",
    "NoModel",
    "Provenance",
    "Recall",
    "Relation",
    "UnknownFact",
    "VeilMemoryError",
    "WriteReport",
]
