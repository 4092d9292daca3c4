"""Projections: tables derived from the tape by pure functions.

A :class:`Projection` declares its tables and search indexes (a portable schema that each
backend renders into its own DDL) and a pure ``apply(event)`` that returns :data:`Op` values —
row writes and index writes. Backends execute the ops in the same transaction as the append,
so the tape and its projections never disagree, and ``rebuild()`` replays the whole tape
through the same ``apply`` to recreate every projection from nothing.

Every table's first column is ``scope`` and is part of its primary key: there is no row, and
so no read path, without a tenant key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from veil.tape.events import Event, JSONValue

ColumnType = Literal["text", "int", "real", "json", "time", "bool"]
"""Portable column types. ``time`` is fixed-width ISO-8601 UTC text in every backend, so it
sorts chronologically and compares equal across backends; ``json`` is canonical JSON text."""


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    """A projection table. ``scope`` is added as the first column and key part automatically."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...] = ()

    def column_names(self) -> tuple[str, ...]:
        return ("scope", *(c.name for c in self.columns))


@dataclass(frozen=True)
class TextIndex:
    """A full-text index (SQLite FTS5 / PostgreSQL tsvector) of documents keyed by ``doc_id``."""

    name: str


@dataclass(frozen=True)
class VectorIndex:
    """A vector index (in process over a SQLite table / pgvector) whose vectors come from the
    store's embedder."""

    name: str


Row: TypeAlias = dict[str, JSONValue]


@dataclass(frozen=True)
class Put:
    """Insert or replace the row with this key (``keep_existing``: insert only if absent)."""

    table: str
    row: Row
    keep_existing: bool = False


@dataclass(frozen=True)
class Patch:
    """Set some columns of an existing row (no-op when the row does not exist)."""

    table: str
    key: Row
    values: Row


@dataclass(frozen=True)
class Remove:
    """Delete the row with this key from a projection (the tape keeps the history)."""

    table: str
    key: Row


@dataclass(frozen=True)
class IndexText:
    """Index (or re-index) ``text`` under ``doc_id``; empty text removes the document."""

    index: str
    scope: str
    doc_id: str
    text: str


@dataclass(frozen=True)
class IndexVector:
    """Embed ``text`` with the store's embedder and index it under ``doc_id``; empty removes."""

    index: str
    scope: str
    doc_id: str
    text: str


Op: TypeAlias = Put | Patch | Remove | IndexText | IndexVector


class Projection(Protocol):
    """A named, versioned, pure view of the tape.

    ``version`` must change whenever the schema or ``apply`` changes meaning; a store that
    finds a different version recorded rebuilds the projection from the tape.
    """

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def tables(self) -> Sequence[Table]: ...
    @property
    def text_indexes(self) -> Sequence[TextIndex]: ...
    @property
    def vector_indexes(self) -> Sequence[VectorIndex]: ...

    def apply(self, event: Event) -> Sequence[Op]:
        """Pure: the ops this event implies. Must not read the clock, the store or randomness."""
        ...


@dataclass(frozen=True)
class Hit:
    """A search result: the document id and a backend score (higher is better)."""

    doc_id: str
    score: float


@dataclass
class ProjectionSet:
    """The projections a store maintains, with lookups used by the backends."""

    projections: list[Projection] = field(default_factory=lambda: [])

    def names(self) -> list[str]:
        return [p.name for p in self.projections]

    def tables(self) -> dict[str, Table]:
        return {t.name: t for p in self.projections for t in p.tables}

    def text_indexes(self) -> list[str]:
        return [i.name for p in self.projections for i in p.text_indexes]

    def vector_indexes(self) -> list[str]:
        return [i.name for p in self.projections for i in p.vector_indexes]

    def ops_for(self, event: Event) -> list[Op]:
        ops: list[Op] = []
        for projection in self.projections:
            ops.extend(projection.apply(event))
        return ops
