"""The long-term memory's errors (re-exported by :mod:`veil.memory`)."""

from __future__ import annotations


class MemoryError(Exception):
    """Base class of long-term memory errors."""


class EvidenceTooLarge(MemoryError, ValueError):
    """Evidence longer than ``MemoryConfig.max_evidence_chars``; nothing was written."""


class UnknownFact(MemoryError, KeyError):
    """A fact id that does not exist in this user's memory.

    A ``KeyError`` (lookups by id), but printed as its message: ``KeyError.__str__`` would
    quote it (``'no fact …'``) in every log line, error body and CLI message."""

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class NoModel(MemoryError):
    """``remember`` needs a ``complete`` callable: there is no LLM-free extraction mode."""
