"""The long-term memory's errors (re-exported by :mod:`veil.memory`).

Every error the memory raises on purpose is a :class:`VeilMemoryError`; each kind also derives
from the builtin a caller would expect (a bad value is a ``ValueError``, a missing fact a
``LookupError``), so generic handlers keep working. The base is not called ``MemoryError``:
that name is Python's out-of-memory builtin, and shadowing it would hide one behind the other.
"""

from __future__ import annotations


class VeilMemoryError(Exception):
    """Base class of long-term memory errors."""


class EvidenceTooLarge(VeilMemoryError, ValueError):
    """Evidence longer than ``MemoryConfig.max_evidence_chars``; nothing was written."""


class UnknownFact(VeilMemoryError, LookupError):
    """A fact id that does not exist in this user's memory (a ``LookupError``, printed as its
    message — not a ``KeyError``, whose ``str`` quotes it in every log line and error body)."""


class FactNotCurrent(VeilMemoryError):
    """An operation on a fact that its state does not allow (confirming a superseded or
    quarantined value): the HTTP API's 409."""


class NoModel(VeilMemoryError):
    """``remember`` needs a ``complete`` callable: there is no LLM-free extraction mode."""
