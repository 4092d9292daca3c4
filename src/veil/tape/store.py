"""The store contract and the SQL machinery both backends share.

A store is a few methods (:class:`Store`): append events, read them back per scope, keep the
registered projections in step with the tape inside the same transaction, rebuild them from the
tape, and answer scoped reads (``fetch``, ``search_text``, ``search_vector``). Every read takes
a scope; there is no unscoped read path except the administrative ``scan``/``snapshot`` used by
rebuild, export and checks.

:class:`veil.tape.sql.SqlStore` implements it once for both SQL backends.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, cast

from veil.embed.protocol import Vectors
from veil.redaction import Redactor
from veil.tape.events import (
    Event,
    JSONValue,
    TapeError,
)
from veil.tape.projection import (
    Hit,
    Projection,
    Row,
)

Dialect = Literal["sqlite", "postgresql"]
_IDENT = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
RESERVED_PREFIXES = ("tape_", "veil_", "fts_", "vec_", "pg_", "sqlite_")
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024


class UnknownName(TapeError, KeyError):
    """A table, column or index name that no registered projection declares."""


class ProjectionMismatch(TapeError):
    """:meth:`Store.attach` found a projection recorded differently from how this handle
    would build it: another version or schema, or vector indexes built with another embedder.
    ``recorded_embedder`` / ``embedder`` are the ``name:dim`` of each side (``""`` when the
    projection has no vector index); nothing was written."""

    def __init__(self, projection: str, recorded_embedder: str, embedder: str, message: str):
        super().__init__(message)
        self.projection = projection
        self.recorded_embedder = recorded_embedder
        self.embedder = embedder


class BackendUnavailable(TapeError, ImportError):
    """The store URL names a backend whose optional extra is not installed (``postgresql://``
    without ``veil[postgres]``). The message names the missing package and the ``pip install``
    that fixes it; ``name`` is the module that failed to import, when Python says."""


@dataclass(frozen=True)
class RebuildReport:
    events: int
    projections: tuple[str, ...]
    rows: dict[str, int]


@dataclass(frozen=True)
class CheckReport:
    ok: bool
    events: int
    head: int
    problems: tuple[str, ...] = ()
    details: dict[str, str] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class ErasureReceipt:
    """Proof that a scope was erased, without its content: a salted hash of the scope, what
    was removed, and when. Kept in ``tape_erasures``; the scope's events are gone."""

    id: str
    scope_hash: str
    at: str
    events: int
    rows: dict[str, int]


class PurgeRefused(TapeError):
    """A purge that would leave derived rows behind (a recorded projection is not registered
    on this handle); nothing was removed."""


@dataclass(frozen=True)
class PurgeSelection:
    """Which events a purge removes: every condition given must hold, and at least one of
    ``sessions``, ``before`` and ``matching`` must be given (a purge never means
    "everything").

    ``scope``: only this scope's events (None: every scope). ``sessions``: events whose
    payload or provenance names one of these sessions (``session_id``). ``before``: events
    that happened (``at``) before this time. ``matching``: a regular expression searched in
    every string of the payload and the provenance (for a secret found after it was stored).
    ``kinds``: only events whose kind starts with one of these prefixes."""

    scope: str | None = None
    sessions: tuple[str, ...] = ()
    before: datetime | None = None
    matching: str | None = None
    kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.sessions and self.before is None and self.matching is None:
            raise ValueError("a purge needs sessions, before or matching")
        if self.matching is not None:
            try:
                re.compile(self.matching)
            except re.error as exc:
                raise ValueError(f"matching: not a regular expression: {exc}") from None

    def describe(self) -> str:
        """The selection as one string (hashed into the receipt, never stored)."""
        when = self.before.isoformat() if self.before else ""
        return (
            f"{self.scope}|{','.join(self.sessions)}|{when}|{self.matching}|{','.join(self.kinds)}"
        )

    def matches(self, event: Event) -> bool:
        if self.kinds and not event.kind.startswith(self.kinds):
            return False
        if self.before is not None and event.at >= self.before:
            return False
        if self.sessions and not (
            event.payload.get("session_id") in self.sessions
            or event.provenance.get("session_id") in self.sessions
        ):
            return False
        if self.matching is not None:
            pattern = re.compile(self.matching)
            if not any(
                pattern.search(text) for text in _strings((event.payload, event.provenance))
            ):
                return False
        return True


def _strings(value: object) -> Iterator[str]:
    """Every string inside a JSON value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in cast(Mapping[object, object], value).items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in cast(Sequence[object], value):
            yield from _strings(item)


class Store(Protocol):
    """The backend contract every store passes (see ``veil.testing.StoreContract``)."""

    dialect: Dialect
    url: str
    redactor: Redactor
    """What every event passes through before it is written (no secret reaches the tape);
    layers that keep text in memory redact it with the same one."""

    def register(self, *projections: Projection) -> None: ...
    def attach(self, *projections: Projection) -> None: ...
    def append(self, events: Sequence[Event], *, keep_recorded_at: bool = False) -> list[Event]: ...
    def bulk_append(
        self, batches: Iterable[Sequence[Event]], *, keep_recorded_at: bool = False
    ) -> int: ...
    def read(
        self,
        scope: str,
        *,
        after: int = 0,
        kinds: Collection[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]: ...
    def scan(self, *, after: int = 0, limit: int | None = None) -> list[Event]: ...
    def head(self) -> int: ...
    def scopes(self) -> list[str]: ...
    def recorded_projections(self) -> list[str]: ...
    def rebuild(self) -> RebuildReport: ...
    def fetch(
        self,
        table: str,
        *,
        scope: str,
        where: Mapping[str, object] | None = None,
        order_by: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[Row]: ...
    def fetch_values(
        self,
        table: str,
        *,
        scope: str,
        where: Mapping[str, object] | None = None,
        order_by: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[tuple[JSONValue, ...]]: ...
    def reading(self, scope: str) -> AbstractContextManager[None]: ...
    def search_text(self, index: str, *, scope: str, query: str, limit: int = 10) -> list[Hit]: ...
    def search_vector(
        self, index: str, *, scope: str, query: str | Vectors, limit: int = 10
    ) -> list[Hit]: ...
    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]: ...
    def check(self) -> CheckReport: ...
    def erase(self, scope: str) -> ErasureReceipt: ...
    def purge(self, selection: PurgeSelection) -> ErasureReceipt: ...
    def sizes(self, scope: str, *, field: str) -> dict[str | None, int]: ...
    def vacuum(self) -> None: ...
    def erasures(self) -> list[ErasureReceipt]: ...
    def close(self) -> None: ...


def check_identifier(name: str) -> str:
    if not _IDENT.match(name):
        raise ValueError(f"bad SQL identifier {name!r}: use lower_snake_case, <= 63 chars")
    return name


_STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    }
)


def fts_terms(text: str) -> list[str]:
    """The search terms of free text: lower-cased word tokens (at most 64, each at most 64
    characters), stop words dropped (an OR over "where", "does", "the" matches most of a large
    index and ranks nothing) unless nothing else is left, duplicates removed."""
    terms = [t[:64] for t in re.findall(r"[^\W_]+", text.lower()) if len(t) > 1 or t.isdigit()]
    content = [t for t in terms if t not in _STOP_WORDS] or terms
    return list(dict.fromkeys(content))[:64]


POSTINGS_FLOOR = 1_000
"""Postings a full-text query may always rank, however rare its rarest term."""


def bounded_terms(terms: Sequence[str], counts: Sequence[int]) -> list[str]:
    """The terms a query ranks: the rarest present one, then others from rarer to commoner
    while the kept postings stay within ``max(2 x the rarest's, POSTINGS_FLOOR)``."""
    present = sorted(
        ((c, i, t) for i, (t, c) in enumerate(zip(terms, counts, strict=True)) if c > 0)
    )
    if not present:
        return []
    budget = max(2 * present[0][0], POSTINGS_FLOOR)
    kept: list[tuple[int, str]] = []
    total = 0
    for count, i, term in present:
        if kept and total + count > budget:
            break
        kept.append((i, term))
        total += count
    return [term for _, term in sorted(kept)]


def fts_query(text: str) -> str:
    """Turn free text into a safe OR-of-terms full-text query (no operator injection)."""
    return " OR ".join(f'"{t}"' for t in fts_terms(text))


@dataclass(frozen=True)
class Range:
    """A ``fetch`` filter value: ``low <= column <= high`` (either bound may be None)."""

    low: JSONValue = None
    high: JSONValue = None
