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
    without the ``postgres`` extra). The message names the missing package and the command
    that installs it (:func:`veil.extras.install_command`); ``name`` is the module that failed
    to import, when Python says."""


class StoreUnreadable(TapeError):
    """A SQLite store file that cannot be opened as one: not a database, corrupt, a directory,
    or not readable. The message is one line naming ``path`` and what to do; nothing was
    written to it."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path


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
    """The backend contract every store passes (``veil.testing.StoreContract`` runs it).

    Common to every method: a closed store raises :class:`TapeError` (``store is closed``);
    a scope that is empty, longer than 256 characters or holds control characters raises
    :class:`~veil.tape.events.InvalidEvent`; a table or index no projection registered (or
    attached) on this handle declares raises :class:`UnknownName`. Scoped reads inside
    :meth:`reading` of another scope raise :class:`TapeError`. Methods documented as
    *administrative* read or write every scope: only rebuild, export, checks and the admin
    commands call them.
    """

    dialect: Dialect
    """``"sqlite"`` or ``"postgresql"``."""
    url: str
    """Where the store is: ``sqlite:///path``, or the PostgreSQL connection string."""
    redactor: Redactor
    """What every event passes through before it is written (no secret reaches the tape);
    layers that keep text in memory redact it with the same one."""

    def register(self, *projections: Projection) -> None:
        """Maintain ``projections`` on this handle from now on: create their tables and
        indexes when the database has none, and when the recorded signature (version, schema,
        the embedder of its vector indexes) differs, drop and rebuild the projection from the
        whole tape — in one transaction, so a crash leaves the old projection or the new one.

        Idempotent per handle: a projection already held with the same signature is skipped
        (writes nothing). Raises ``ValueError`` for the same name with another signature on
        this handle, a table another projection declares, a bad or reserved name, or vector
        indexes on a store opened without an embedder."""
        ...

    def attach(self, *projections: Projection) -> None:
        """The read-only twin of :meth:`register`: hold ``projections`` the database already
        records with the same signature, for reads and :meth:`check`, writing nothing. Raises
        :class:`ProjectionMismatch` (nothing attached) for a projection not in the database or
        recorded with another version, schema or embedder; ``ValueError`` as ``register``."""
        ...

    def append(self, events: Sequence[Event], *, keep_recorded_at: bool = False) -> list[Event]:
        """Append ``events`` as one transaction; returns them as stored (``seq``,
        ``recorded_at``, payload after redaction), in the order given, a duplicate within the
        batch once.

        Every event is redacted, then checked: its envelope (id, scope, kind, actor, an
        aware ``at``, JSON payload and provenance of at most 16 MiB) and its payload against
        the kind registered under its name (:func:`veil.tape.kinds.check`: an unregistered
        kind, or a payload its codec refuses, is an :class:`~veil.tape.events.InvalidEvent`
        naming the event, the kind and the key). Idempotent by id: an id already on the tape
        with the same content returns the stored event and writes nothing more; with other
        content (or twice in the batch with different content) it is an
        :class:`~veil.tape.events.EventConflict`. Any error — these, or an exception from a
        projection's ``apply`` — leaves nothing of the batch written.

        New events get increasing ``seq`` values, never reused, committed in ``seq`` order
        across processes, and one ``recorded_at`` for the batch from the store's clock
        (``keep_recorded_at``: each event's own, when it has one — restoring an export).
        Registered projections apply the new events inside the same transaction."""
        ...

    def bulk_append(
        self, batches: Iterable[Sequence[Event]], *, keep_recorded_at: bool = False
    ) -> int:
        """:meth:`append` for each batch in order, each its own transaction (a failure
        raises; earlier batches stay written), then derived indexes brought up to date (so the
        first search after an import does not pay for them). Returns the number of events
        the appends returned (an id already on the tape counts, a duplicate within a batch
        once)."""
        ...

    def read(
        self,
        scope: str,
        *,
        after: int = 0,
        kinds: Collection[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """``scope``'s events with ``seq > after``, in ``seq`` order, at most ``limit``;
        only those whose kind is in ``kinds`` when given (an empty collection: none). Events
        are returned as stored; nothing is validated on the way out."""
        ...

    def scan(self, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """Administrative: events of every scope with ``seq > after``, in ``seq`` order, at
        most ``limit``."""
        ...

    def head(self) -> int:
        """The highest ``seq`` on the tape; 0 when it is empty."""
        ...

    def scopes(self) -> list[str]:
        """Administrative: every scope that has events, sorted."""
        ...

    def recorded_projections(self) -> list[str]:
        """Administrative: the names of every projection this database has ever had
        registered (on any handle), sorted."""
        ...

    def rebuild(self) -> RebuildReport:
        """Drop every projection held by this handle and replay the whole tape through them,
        in one transaction (the old projections stay until it commits), then rebuild derived
        files (vector sidecars). Returns the events replayed and the rows of each table and
        index. Afterwards :meth:`snapshot` equals the one before when nothing had drifted."""
        ...

    def fetch(
        self,
        table: str,
        *,
        scope: str,
        where: Mapping[str, object] | None = None,
        order_by: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[Row]:
        """``scope``'s rows of ``table`` as dicts (``scope`` included), decoded by column type
        (``json`` parsed, ``bool`` as ``True``/``False``, ``time`` as fixed-width UTC text).
        ``where``: column equality, a list/tuple/set value meaning "one of" (empty: no rows),
        ``None`` meaning null, a :class:`Range` an inclusive range. ``order_by``: column names,
        ``-`` prefix for descending; ties, and an empty ``order_by``, follow the table's key.
        An unknown column in either raises :class:`UnknownName`."""
        ...

    def fetch_values(
        self,
        table: str,
        *,
        scope: str,
        where: Mapping[str, object] | None = None,
        order_by: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[tuple[JSONValue, ...]]:
        """:meth:`fetch` by position: each row a tuple in ``Table.column_names()`` order
        (``scope`` first), for callers that build values by position."""
        ...

    def reading(self, scope: str) -> AbstractContextManager[None]:
        """One consistent read of ``scope``: the scoped reads made inside on this thread
        (``read``, ``fetch``, ``fetch_values``, ``search_text``, ``search_vector``) share one
        read transaction and see one snapshot. A read of another scope inside raises
        :class:`TapeError`; writes inside are not allowed."""
        ...

    def search_text(self, index: str, *, scope: str, query: str, limit: int = 10) -> list[Hit]:
        """Full-text search of ``index`` in ``scope``: at most ``limit`` hits, best first
        (``score`` larger is better). ``query`` is free text: operators and quotes are
        neutralised, stop words dropped unless nothing else is left; a query with no term, or
        ``limit <= 0``, returns ``[]``. Never returns another scope's documents."""
        ...

    def search_vector(
        self, index: str, *, scope: str, query: str | Vectors, limit: int = 10
    ) -> list[Hit]:
        """Nearest neighbours in ``index`` within ``scope`` by cosine, at most ``limit``, best
        first; ``score`` is the cosine similarity. ``query`` is text (embedded with the
        store's embedder; blank text returns ``[]``) or a vector of the embedder's dimension
        (another dimension raises ``ValueError``). A query embedding to zeros, or ``limit <=
        0``, returns ``[]``; a store without an embedder raises ``ValueError``."""
        ...

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Administrative: the content of every table and index held by this handle, each
        sorted canonically (``table:``, ``text:`` and ``vector:`` keys), for equality checks."""
        ...

    def check(self) -> CheckReport:
        """Administrative, writes nothing: the database's integrity check, duplicate event
        ids, every held projection compared with a rebuild done in a transaction that is
        rolled back, and the derived indexes (in-process vector indexes, sidecars) compared
        with their tables. ``ok`` when no problem was found."""
        ...

    def erase(self, scope: str) -> ErasureReceipt:
        """Compliance erasure, the one exception to append-only: remove every event of
        ``scope``, its rows in every held projection, its text and vector index entries and
        derived files, in one transaction, and keep a content-free receipt (a salted hash of
        the scope, counts, time). Erasing a scope with no events still writes a receipt."""
        ...

    def purge(self, selection: PurgeSelection) -> ErasureReceipt:
        """Remove the events ``selection`` names (of every scope it covers), rebuild every
        projection from what is left, reclaim the space, and keep a content-free receipt.
        Raises :class:`PurgeRefused` (nothing removed) when a projection this database
        records is not registered on this handle. A selection matching nothing still writes
        a receipt (0 events)."""
        ...

    def purge_counts(self, selection: PurgeSelection) -> dict[str, int]:
        """How many events of each kind :meth:`purge` would remove for ``selection`` (the
        same rule, :meth:`PurgeSelection.matches`); reads only."""
        ...

    def sizes(self, scope: str, *, field: str) -> dict[str | None, int]:
        """Administrative: bytes of ``scope``'s events (payload and provenance JSON) grouped
        by the top-level ``field`` of their provenance, else of their payload; ``None`` groups
        events without it. ``field`` must be a plain name (else ``ValueError``)."""
        ...

    def vacuum(self) -> None:
        """Give the space of deleted rows back (SQLite: VACUUM and the WAL truncated;
        PostgreSQL: VACUUM of every table). Changes no content."""
        ...

    def erasures(self) -> list[ErasureReceipt]:
        """Administrative: every erasure and purge receipt, oldest first."""
        ...

    def close(self) -> None:
        """Persist derived files (a handle that only attached writes none) and release the
        connection(s). Idempotent; appends and reads raise :class:`TapeError` after it."""
        ...


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
