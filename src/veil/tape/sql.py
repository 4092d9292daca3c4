"""The SQL implementation of the store contract that both backends share.

:class:`SqlStore` implements :class:`~veil.tape.store.Store` once over a handful of dialect
primitives, so the SQLite and PostgreSQL backends differ only in SQL text, locking and search.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol, cast

import numpy as np

from veil.clock import Clock, SystemClock, format_time, parse_time
from veil.embed.protocol import Embedder, Vectors
from veil.tape.events import (
    Event,
    EventConflict,
    InvalidEvent,
    JSONValue,
    Sealed,
    TapeError,
    canonical_json,
    new_id,
    seal,
    validate_scope,
)
from veil.tape.migrations import Migration, pending
from veil.tape.projection import (
    Hit,
    IndexText,
    IndexVector,
    Op,
    Patch,
    Projection,
    ProjectionSet,
    Put,
    Remove,
    Row,
    Table,
)
from veil.tape.store import (
    MAX_PAYLOAD_BYTES,
    RESERVED_PREFIXES,
    CheckReport,
    Dialect,
    ErasureReceipt,
    ProjectionMismatch,
    Range,
    RebuildReport,
    UnknownName,
    check_identifier,
    fts_query,
)

_PLAIN = frozenset({"text", "int", "real"})
_CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00\Z")
"""What :func:`~veil.clock.format_time` writes; such text is stored as it is."""


class Cursor(Protocol):
    """The slice of a DB-API cursor the shared code uses."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...
    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def fetchmany(self, size: int) -> list[Any]: ...
    def fetchone(self) -> Any: ...


class SqlStore(ABC):
    """Contract implementation over dialect primitives. Subclasses: SQLite, PostgreSQL."""

    dialect: Dialect
    url: str

    def __init__(self, *, embedder: Embedder | None, clock: Clock | None) -> None:
        self._embedder = embedder
        self._clock: Clock = clock or SystemClock()
        self._projections = ProjectionSet()
        self._closed = False
        self._codecs: dict[Table, TableCodec] = {}
        self._reading = threading.local()
        self._writes = False
        """Set by :meth:`register`: a handle that only :meth:`attach`-ed writes nothing, not
        even derived files (``veil admin check`` never writes)."""

    COLUMN_TYPES: Mapping[str, str]
    """Portable column type → the dialect's SQL type."""
    MIGRATIONS: Sequence[Migration]
    """The backend's named migrations, applied in order and recorded in ``tape_migrations``."""
    INDEX_LAYOUT: int = 1
    """Version of the backend's full-text and vector index layout. It is part of the
    signature of every projection with such indexes, so a new layout makes ``register``
    rebuild them from the tape (and ``attach`` refuse them) instead of reading the old one."""

    def _migrate(self) -> None:
        """Apply pending named migrations, each recorded in the same transaction."""
        with self._write() as cur:
            cur.execute(
                "CREATE TABLE IF NOT EXISTS tape_migrations "
                "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            cur.execute("SELECT name FROM tape_migrations")
            applied = {str(r[0]) for r in cur.fetchall()}
            for migration in pending(applied, self.MIGRATIONS):
                migration.apply(cur)
                cur.execute(
                    self._sql("INSERT INTO tape_migrations (name, applied_at) VALUES (?, ?)"),
                    (migration.name, format_time(self._clock.now())),
                )

    def _insert_event(self, cur: Cursor, sealed: Sealed, recorded_at: str) -> int:
        cur.execute(
            self._sql(
                "INSERT INTO tape_events (id, scope, kind, at, recorded_at, actor, payload, "
                "provenance, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq"
            ),
            self._event_row(sealed, recorded_at),
        )
        return int(cur.fetchone()[0])

    def _insert_events(self, cur: Cursor, rows: Sequence[tuple[Sealed, str]]) -> list[int]:
        """Insert ``(sealed, recorded_at)`` in order; their seqs, increasing. One statement
        per event here; a backend may batch it."""
        return [self._insert_event(cur, sealed, recorded_at) for sealed, recorded_at in rows]

    @staticmethod
    def _event_row(sealed: Sealed, recorded_at: str) -> tuple[Any, ...]:
        event = sealed.event
        return (
            event.id,
            event.scope,
            event.kind,
            format_time(event.at),
            recorded_at,
            event.actor,
            sealed.payload_json,
            sealed.provenance_json,
            sealed.digest,
        )

    def _table_ddl(self, table: Table) -> list[str]:
        cols = ["scope TEXT NOT NULL"]
        for c in table.columns:
            cols.append(f"{c.name} {self.COLUMN_TYPES[c.type]}{'' if c.nullable else ' NOT NULL'}")
        cols.append(f"PRIMARY KEY (scope, {', '.join(table.key)})")
        ddl = [f"CREATE TABLE IF NOT EXISTS {table.name} ({', '.join(cols)})"]
        for i, idx in enumerate(table.indexes):
            ddl.append(
                f"CREATE INDEX IF NOT EXISTS {table.name}_ix{i} ON {table.name} "
                f"(scope, {', '.join(idx)})"
            )
        return ddl

    # ---- dialect primitives -------------------------------------------------------------

    @abstractmethod
    def _write(self) -> Any:
        """Context manager: one write transaction holding the store's single-writer lock."""

    @abstractmethod
    def _read(self) -> Any:
        """Context manager: a cursor for a consistent read."""

    @abstractmethod
    def _sql(self, sql: str) -> str:
        """Adapt ``?`` placeholders and portable SQL to the dialect."""

    @abstractmethod
    def _text_index_ddl(self, name: str) -> list[str]: ...

    @abstractmethod
    def _vector_index_ddl(self, name: str, dim: int) -> list[str]: ...

    @abstractmethod
    def _drop_ddl(self, kind: Literal["table", "text", "vector"], name: str) -> list[str]: ...

    @abstractmethod
    def _put_sql(self, table: Table, keep_existing: bool = False) -> str: ...

    def _no_index(self, column: str) -> str:
        """An ORDER BY term that does not steer index choice (dialect-specific)."""
        return column

    @abstractmethod
    def _write_texts(self, cur: Cursor, index: str, items: Sequence[tuple[str, str, str]]) -> None:
        """Index ``(scope, doc_id, text)`` in order; empty text removes the document."""

    @abstractmethod
    def _write_vectors(
        self, cur: Cursor, index: str, items: Sequence[tuple[int, str, str, Vectors | None]]
    ) -> None:
        """Store ``(seq, scope, doc_id, vector)`` in order (``seq``: the tape seq of the event
        the write comes from); ``None`` removes the document's vector."""

    @abstractmethod
    def _search_text(
        self, cur: Cursor, index: str, scope: str, query: str, limit: int
    ) -> list[Hit]: ...

    @abstractmethod
    def _search_vector(
        self, cur: Cursor, index: str, scope: str, vector: Vectors, limit: int
    ) -> list[Hit]: ...

    @abstractmethod
    def _dump_text(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _dump_vector(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _erase_text(self, cur: Cursor, index: str, scope: str) -> None: ...

    @abstractmethod
    def _erase_vector(self, cur: Cursor, index: str, scope: str) -> None: ...

    @abstractmethod
    def _after_erase(self) -> None:
        """Backend clean-up after an erasure commits: reclaim the space of removed rows."""

    @abstractmethod
    def _integrity(self, cur: Cursor) -> list[str]:
        """Backend-level integrity problems (empty when healthy)."""

    def _index_problems(self, cur: Cursor) -> list[str]:
        """Problems of index structures kept outside the projection tables (in-process
        indexes, sidecar files); reads only. None by default."""
        return []

    @abstractmethod
    def close(self) -> None: ...

    # ---- registration -------------------------------------------------------------------

    def register(self, *projections: Projection) -> None:
        """Add projections; create their schema, and rebuild any whose version changed."""
        self._check_new(projections)
        stale: list[Projection] = []
        with self._write() as cur:
            for projection in projections:
                signature = self._signature(projection)
                cur.execute(
                    self._sql("SELECT signature FROM tape_projections WHERE name = ?"),
                    (projection.name,),
                )
                found = cur.fetchone()
                if found is None or found[0] != signature:
                    if found is not None:
                        self._drop_projection(cur, projection)
                    self._create_projection(cur, projection)
                    stale.append(projection)
                    self._record_signature(cur, projection.name, signature, found is None)
            # The replay commits with the new schema and signature, or nothing does: a crash
            # in between would leave an empty projection marked current, never rebuilt.
            if stale:
                self._replay(cur, ProjectionSet(list(stale)))
        self._projections.projections.extend(projections)
        self._writes = True
        if stale:
            self._after_rebuild([i for p in stale for i in _vector_names(p)])

    def attach(self, *projections: Projection) -> None:
        """Add projections that this database already holds, for reading and checking, and
        write nothing: the read-only twin of :meth:`register`. Each must be recorded with the
        signature it has here (same version, schema and embedder), else
        :class:`~veil.tape.store.ProjectionMismatch` says what differs."""
        self._check_new(projections)
        with self._read() as cur:
            cur.execute("SELECT name, signature FROM tape_projections")
            recorded = {str(r[0]): str(r[1]) for r in cur.fetchall()}
        for projection in projections:
            signature = self._signature(projection)
            found = recorded.get(projection.name)
            if found == signature:
                continue
            if found is None:
                raise ProjectionMismatch(
                    projection.name, "", "", f"projection {projection.name!r} is not in this store"
                )
            ours, theirs = _embedder_of(signature), _embedder_of(found)
            what = (
                f"its vector indexes were built with embedder {theirs}, not {ours}"
                if ours != theirs
                else "it was built by another version of its schema"
            )
            raise ProjectionMismatch(
                projection.name, theirs, ours, f"projection {projection.name!r}: {what}"
            )
        self._projections.projections.extend(projections)

    def _check_new(self, projections: Sequence[Projection]) -> None:
        """Names and tables of projections about to join this handle: valid and not taken."""
        known = {p.name for p in self._projections.projections}
        tables = self._projections.tables()
        for projection in projections:
            check_identifier(projection.name)
            if projection.name in known:
                raise ValueError(f"projection {projection.name!r} registered twice")
            for table in projection.tables:
                self._check_table(table)
                if table.name in tables:
                    raise ValueError(f"table {table.name!r} declared by two projections")
                tables[table.name] = table
            for index in (*projection.text_indexes, *projection.vector_indexes):
                check_identifier(index.name)
            if projection.vector_indexes and self._embedder is None:
                raise ValueError(
                    f"projection {projection.name!r} has vector indexes: open the store "
                    "with an embedder"
                )
            known.add(projection.name)

    def _check_table(self, table: Table) -> None:
        check_identifier(table.name)
        if table.name.startswith(RESERVED_PREFIXES):
            raise ValueError(f"table name {table.name!r} uses a reserved prefix")
        names = [c.name for c in table.columns]
        for name in names:
            check_identifier(name)
        if "scope" in names or len(set(names)) != len(names):
            raise ValueError(f"table {table.name!r}: duplicate or reserved column names")
        if not table.key or any(k not in names for k in table.key):
            raise ValueError(f"table {table.name!r}: key must name declared columns")

    def _signature(self, projection: Projection) -> str:
        dim = self._embedder.dim if self._embedder and projection.vector_indexes else 0
        name = self._embedder.name if self._embedder and projection.vector_indexes else ""
        spec: dict[str, JSONValue] = {
            "version": projection.version,
            "tables": [repr(t) for t in projection.tables],
            "text": [i.name for i in projection.text_indexes],
            "vector": [i.name for i in projection.vector_indexes],
            "embedder": f"{name}:{dim}",
        }
        if self.INDEX_LAYOUT > 1 and (projection.text_indexes or projection.vector_indexes):
            spec["layout"] = self.INDEX_LAYOUT
        return canonical_json(spec)

    def _record_signature(self, cur: Cursor, name: str, signature: str, new: bool) -> None:
        if new:
            cur.execute(
                self._sql("INSERT INTO tape_projections (name, signature) VALUES (?, ?)"),
                (name, signature),
            )
        else:
            cur.execute(
                self._sql("UPDATE tape_projections SET signature = ? WHERE name = ?"),
                (signature, name),
            )

    def _create_projection(self, cur: Cursor, projection: Projection) -> None:
        for table in projection.tables:
            for ddl in self._table_ddl(table):
                cur.execute(ddl)
        for index in projection.text_indexes:
            for ddl in self._text_index_ddl(index.name):
                cur.execute(ddl)
        for index in projection.vector_indexes:
            assert self._embedder is not None
            for ddl in self._vector_index_ddl(index.name, self._embedder.dim):
                cur.execute(ddl)

    def _drop_projection(self, cur: Cursor, projection: Projection) -> None:
        for table in projection.tables:
            for ddl in self._drop_ddl("table", table.name):
                cur.execute(ddl)
        for index in projection.text_indexes:
            for ddl in self._drop_ddl("text", index.name):
                cur.execute(ddl)
        for index in projection.vector_indexes:
            for ddl in self._drop_ddl("vector", index.name):
                cur.execute(ddl)

    # ---- the tape -----------------------------------------------------------------------

    def append(self, events: Sequence[Event], *, keep_recorded_at: bool = False) -> list[Event]:
        """Append a batch atomically; idempotent by event id. Returns the stored events.

        ``keep_recorded_at`` keeps each event's own ``recorded_at`` (restoring an export);
        otherwise the store's clock stamps the batch.

        An id already on the tape with the same content returns the stored event unchanged;
        with different content the whole batch fails with :class:`EventConflict` and nothing
        is written. Projections are applied in the same transaction.
        """
        self._ensure_open()
        batch: list[Sealed] = []
        seen: dict[str, str] = {}
        for raw in events:
            sealed = seal(raw)
            event = sealed.event
            if event.id in seen:
                if seen[event.id] != sealed.digest:
                    raise EventConflict(f"event {event.id} appears twice with different content")
                continue
            size = len(sealed.payload_json) + len(sealed.provenance_json)
            if size > MAX_PAYLOAD_BYTES:
                raise InvalidEvent(f"event {event.id} is {size} bytes; the limit is 16 MiB")
            seen[event.id] = sealed.digest
            batch.append(sealed)
        if not batch:
            return []
        stored: list[Event] = []
        with self._write() as cur:
            existing = self._existing(cur, [s.event.id for s in batch])
            recorded_at = self._clock.now()
            ops: list[tuple[int, Op]] = []
            fresh: list[tuple[Sealed, datetime]] = []
            for sealed in batch:
                event = sealed.event
                if event.id in existing:
                    seq, digest, at = existing[event.id]
                    if digest != sealed.digest:
                        raise EventConflict(
                            f"event {event.id} is already on the tape with different content"
                        )
                    stored.append(replace(event, seq=seq, recorded_at=parse_time(at)))
                    continue
                stamp = event.recorded_at if keep_recorded_at and event.recorded_at else recorded_at
                fresh.append((sealed, stamp))
            seqs = self._insert_events(cur, [(s, format_time(t)) for s, t in fresh])
            for (sealed, stamp), seq in zip(fresh, seqs, strict=True):
                on_tape = replace(sealed.event, seq=seq, recorded_at=stamp)
                ops.extend((seq, op) for op in self._projections.ops_for(on_tape))
                stored.append(on_tape)
            # One pass over the batch's ops: vectors of the whole batch embed in one call.
            self._apply(cur, ops)
        return stored

    def bulk_append(
        self, batches: Iterable[Sequence[Event]], *, keep_recorded_at: bool = False
    ) -> int:
        """Append many batches, each atomically in its own transaction exactly as
        :meth:`append` (through the tape and the projections: batched inserts, one embedding
        call per batch), then bring the derived indexes up to date so the first search after
        an import does not pay for them. Returns the number of events appended."""
        count = 0
        for events in batches:
            count += len(self.append(events, keep_recorded_at=keep_recorded_at))
        self._after_bulk()
        return count

    def _after_rebuild(self, vector_indexes: Sequence[str]) -> None:
        """Backend hook after these vector indexes were rebuilt and committed."""
        return None

    def _after_bulk(self) -> None:
        """Backend hook after :meth:`bulk_append` (SQLite: build and save vector indexes)."""
        return None

    def _existing(self, cur: Cursor, ids: list[str]) -> dict[str, tuple[int, str, str]]:
        found: dict[str, tuple[int, str, str]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            cur.execute(
                self._sql(
                    f"SELECT id, seq, digest, recorded_at FROM tape_events WHERE id IN ({marks})"
                ),
                chunk,
            )
            for row in cur.fetchall():
                found[row[0]] = (int(row[1]), str(row[2]), str(row[3]))
        return found

    _EVENT_COLUMNS = "seq, id, scope, kind, at, recorded_at, actor, payload, provenance"

    def read(
        self,
        scope: str,
        *,
        after: int = 0,
        kinds: Collection[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """Events of one scope with ``seq > after``, in ``seq`` order."""
        self._ensure_open()
        validate_scope(scope)
        self._check_reading(scope)
        sql = f"SELECT {self._EVENT_COLUMNS} FROM tape_events WHERE scope = ? AND seq > ?"
        params: list[Any] = [scope, after]
        if kinds is not None:
            kind_list = sorted(set(kinds))
            if not kind_list:
                return []
            sql += f" AND kind IN ({', '.join('?' for _ in kind_list)})"
            params.extend(kind_list)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        with self._read() as cur:
            cur.execute(self._sql(sql), params)
            return [self._event(row) for row in cur.fetchall()]

    def scan(self, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """Administrative: events of every scope, in ``seq`` order (rebuild, export, checks)."""
        self._ensure_open()
        sql = f"SELECT {self._EVENT_COLUMNS} FROM tape_events WHERE seq > ? ORDER BY seq"
        params: list[Any] = [after]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        with self._read() as cur:
            cur.execute(self._sql(sql), params)
            return [self._event(row) for row in cur.fetchall()]

    def head(self) -> int:
        """The highest ``seq`` on the tape (0 when empty)."""
        self._ensure_open()
        with self._read() as cur:
            cur.execute("SELECT COALESCE(MAX(seq), 0) FROM tape_events")
            return int(cur.fetchone()[0])

    def scopes(self) -> list[str]:
        """Administrative: every scope that has events."""
        with self._read() as cur:
            cur.execute("SELECT DISTINCT scope FROM tape_events ORDER BY scope")
            return [str(r[0]) for r in cur.fetchall()]

    def recorded_projections(self) -> list[str]:
        """Administrative: names of every projection this database has ever had registered."""
        with self._read() as cur:
            cur.execute("SELECT name FROM tape_projections ORDER BY name")
            return [str(r[0]) for r in cur.fetchall()]

    def _event(self, row: Sequence[Any]) -> Event:
        return Event(
            seq=int(row[0]),
            id=str(row[1]),
            scope=str(row[2]),
            kind=str(row[3]),
            at=parse_time(str(row[4])),
            recorded_at=parse_time(str(row[5])),
            actor=str(row[6]),
            payload=json.loads(row[7]),
            provenance=json.loads(row[8]),
        )

    # ---- projections --------------------------------------------------------------------

    def _apply(self, cur: Cursor, ops: Sequence[tuple[int, Op]]) -> None:
        """Execute a batch's ops, each with the seq of the event it comes from.

        Ops on different targets (a table, a text index, a vector index) commute, so the batch
        is split by target, keeping each target's order, and each target's ops run as a few
        ``executemany`` statements; every vector of the batch is embedded in one call."""
        tables = self._projections.tables()
        pending = [op for _, op in ops if isinstance(op, IndexVector) and op.text]
        vectors: dict[int, Vectors] = {}
        if pending:
            assert self._embedder is not None
            matrix = self._embedder.embed([op.text for op in pending])
            # Text with no known token embeds to zeros: such a document has no direction, so
            # it is not indexed (cosine against it is undefined).
            nonzero = np.abs(np.asarray(matrix)).sum(axis=1) > 0.0
            vectors = {id(op): matrix[i] for i, op in enumerate(pending) if nonzero[i]}
        by_target: dict[tuple[str, str], list[tuple[int, Op]]] = {}
        for seq, op in ops:
            if isinstance(op, IndexText):
                target = ("text", op.index)
            elif isinstance(op, IndexVector):
                target = ("vector", op.index)
            else:
                target = ("table", op.table)
            by_target.setdefault(target, []).append((seq, op))
        text_names = self._projections.text_indexes()
        vector_names = self._projections.vector_indexes()
        for (kind, name), items in by_target.items():
            if kind == "table":
                self._apply_table(cur, self._table(tables, name), [op for _, op in items])
            elif kind == "text":
                self._known_index(name, text_names)
                texts = [cast(IndexText, op) for _, op in items]
                self._write_texts(cur, name, [(o.scope, o.doc_id, o.text) for o in texts])
            else:
                self._known_index(name, vector_names)
                self._write_vectors(
                    cur,
                    name,
                    [
                        (seq, o.scope, o.doc_id, vectors.get(id(o)))
                        for seq, o in ((seq, cast(IndexVector, op)) for seq, op in items)
                    ],
                )

    def _apply_table(self, cur: Cursor, table: Table, ops: Sequence[Op]) -> None:
        """One table's ops in order; runs of puts become one ``executemany``."""
        run: list[list[Any]] = []
        run_keep: bool | None = None
        for op in ops:
            if isinstance(op, Put) and (run_keep is None or op.keep_existing == run_keep):
                run.append(self._encode_row(table, op.row))
                run_keep = op.keep_existing
                continue
            if run:
                cur.executemany(self._put_sql(table, bool(run_keep)), run)
                run, run_keep = [], None
            if isinstance(op, Put):
                run.append(self._encode_row(table, op.row))
                run_keep = op.keep_existing
            elif isinstance(op, Patch):
                self._patch(cur, table, op)
            elif isinstance(op, Remove):
                where, params = self._key_clause(table, op.key)
                cur.execute(self._sql(f"DELETE FROM {table.name} WHERE {where}"), params)
        if run:
            cur.executemany(self._put_sql(table, bool(run_keep)), run)

    def _patch(self, cur: Cursor, table: Table, op: Patch) -> None:
        types = {c.name: c.type for c in table.columns}
        sets: list[str] = []
        params: list[Any] = []
        for name, value in op.values.items():
            if name not in types or name in table.key:
                raise UnknownName(f"{table.name}.{name} is not a patchable column")
            sets.append(f"{name} = ?")
            params.append(self._encode(types[name], value))
        if not sets:
            return
        where, key_params = self._key_clause(table, op.key)
        cur.execute(
            self._sql(f"UPDATE {table.name} SET {', '.join(sets)} WHERE {where}"),
            [*params, *key_params],
        )

    def _key_clause(self, table: Table, key: Row) -> tuple[str, list[Any]]:
        types = {c.name: c.type for c in table.columns}
        if set(key) != {"scope", *table.key}:
            raise UnknownName(f"{table.name}: key must be exactly scope + {table.key}")
        clause = " AND ".join(f"{k} = ?" for k in ("scope", *table.key))
        params = [key["scope"], *(self._encode(types[k], key[k]) for k in table.key)]
        return clause, params

    def _encode_row(self, table: Table, row: Row) -> list[Any]:
        codec = self._codec(table)
        if not row.keys() <= codec.names:
            unknown = set(row) - codec.names
            raise UnknownName(f"{table.name}: unknown columns {sorted(unknown)}")
        out: list[Any] = list(map(row.get, codec.ordered))
        if not isinstance(out[0], str):
            raise InvalidEvent(f"{table.name}: every row needs a scope")
        for i, type_ in codec.encoded:
            value = out[i]
            if value is None:
                continue
            if type_ == "time" and isinstance(value, str) and _CANONICAL_TIME.match(value):
                continue  # already fixed-width UTC text
            out[i] = self._encode(type_, value)
        return out

    def _codec(self, table: Table) -> TableCodec:
        codec = self._codecs.get(table)
        if codec is None:
            codec = TableCodec.of(table)
            self._codecs[table] = codec
        return codec

    def _encode(self, type_: str, value: JSONValue) -> Any:
        if value is None:
            return None
        if type_ == "json":
            return canonical_json(value)
        if type_ == "bool":
            return 1 if value else 0
        if type_ == "time" and isinstance(value, str):
            return format_time(parse_time(value))
        return value

    @staticmethod
    def _table(tables: dict[str, Table], name: str) -> Table:
        try:
            return tables[name]
        except KeyError:
            raise UnknownName(f"no registered projection declares table {name!r}") from None

    @staticmethod
    def _known_index(name: str, names: list[str]) -> None:
        if name not in names:
            raise UnknownName(f"no registered projection declares index {name!r}")

    def _replay(self, cur: Cursor, projections: ProjectionSet, batch: int = 2000) -> int:
        """Feed the whole tape through ``projections`` (inside the caller's transaction)."""
        saved = self._projections
        self._projections = projections
        try:
            count = 0
            after = 0
            sql = self._sql(
                f"SELECT {self._EVENT_COLUMNS} FROM tape_events WHERE seq > ? ORDER BY seq LIMIT ?"
            )
            while True:
                cur.execute(sql, (after, batch))
                rows = cur.fetchall()
                if not rows:
                    return count
                ops: list[tuple[int, Op]] = []
                for row in rows:
                    event = self._event(row)
                    ops.extend((event.seq or 0, op) for op in projections.ops_for(event))
                self._apply(cur, ops)
                count += len(rows)
                after = int(rows[-1][0])
        finally:
            self._projections = saved

    def rebuild(self) -> RebuildReport:
        """Drop and recreate every projection from the tape, atomically."""
        self._ensure_open()
        with self._write() as cur:
            count = self._rebuild_in(cur)
        self._after_rebuild([i for p in self._projections.projections for i in _vector_names(p)])
        snapshot = self.snapshot()
        return RebuildReport(
            events=count,
            projections=tuple(p.name for p in self._projections.projections),
            rows={name: len(rows) for name, rows in snapshot.items()},
        )

    def _rebuild_in(self, cur: Cursor) -> int:
        for projection in self._projections.projections:
            self._drop_projection(cur, projection)
            self._create_projection(cur, projection)
        return self._replay(cur, self._projections)

    # ---- scoped reads -------------------------------------------------------------------

    def fetch(
        self,
        table: str,
        *,
        scope: str,
        where: Mapping[str, object] | None = None,
        order_by: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[Row]:
        """Rows of one scope, filtered by column equality (a list value means "one of");
        ``order_by`` names columns (prefix ``-`` for descending)."""
        names = self._table(self._projections.tables(), table).column_names()
        return [
            dict(zip(names, values, strict=True))
            for values in self.fetch_values(
                table, scope=scope, where=where, order_by=order_by, limit=limit
            )
        ]

    def fetch_values(
        self,
        table: str,
        *,
        scope: str,
        where: Mapping[str, object] | None = None,
        order_by: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[tuple[JSONValue, ...]]:
        """:meth:`fetch` by position: each row is a tuple in ``Table.column_names()`` order
        (``scope`` first), decoded by the table's codec. For callers that build values by
        position and do not need a dict per row."""
        self._ensure_open()
        validate_scope(scope)
        self._check_reading(scope)
        spec = self._table(self._projections.tables(), table)
        types = {c.name: c.type for c in spec.columns}
        clauses = ["scope = ?"]
        params: list[Any] = [scope]
        for name, value in (where or {}).items():
            if name not in types:
                raise UnknownName(f"{table}.{name}")
            if value is None:
                clauses.append(f"{name} IS NULL")
            elif isinstance(value, Range):
                for op, bound in ((">=", value.low), ("<=", value.high)):
                    if bound is not None:
                        clauses.append(f"{name} {op} ?")
                        params.append(self._encode(types[name], bound))
            elif isinstance(value, (list, tuple, set, frozenset)):
                values = sorted(cast(Collection[JSONValue], value), key=repr)
                if not values:
                    return []
                clauses.append(f"{name} IN ({', '.join('?' for _ in values)})")
                params.extend(self._encode(types[name], v) for v in values)
            else:
                clauses.append(f"{name} = ?")
                params.append(self._encode(types[name], cast(JSONValue, value)))
        order: list[str] = []
        for item in order_by:
            name = item.removeprefix("-")
            if name not in types:
                raise UnknownName(f"{table}.{name}")
            order.append(f"{name} {'DESC' if item.startswith('-') else 'ASC'}")
        # The key tiebreak must not make the planner walk the primary key instead of the
        # filter's index (a full scope scan): SQLite's unary + hides it from the planner.
        order.extend(f"{self._no_index(k)} ASC" for k in spec.key)
        sql = (
            f"SELECT {', '.join(spec.column_names())} FROM {table} "
            f"WHERE {' AND '.join(clauses)} ORDER BY {', '.join(order)}"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        with self._read() as cur:
            cur.execute(self._sql(sql), params)
            rows = cur.fetchall()
        return self._codec(spec).decode_rows(rows)

    @contextmanager
    def reading(self, scope: str) -> Generator[None, None, None]:
        """One consistent read of ``scope``: the scoped reads made inside (``fetch``,
        ``fetch_values``, ``search_text``, ``search_vector``, ``read``) share one read
        transaction, so they see one snapshot of the store and pay for one transaction.
        Reads of another scope inside are refused (PostgreSQL's row-level security is set
        for ``scope``); writes inside are not allowed."""
        self._ensure_open()
        validate_scope(scope)
        outer = getattr(self._reading, "scope", None)
        self._check_reading(scope)
        self._reading.scope = scope
        try:
            with self._scoped(scope), self._read():
                yield
        finally:
            self._reading.scope = outer

    def _check_reading(self, scope: str) -> None:
        current = getattr(self._reading, "scope", None)
        if current is not None and current != scope:
            raise TapeError(
                f"a read of another scope inside Store.reading({current!r}): a reading is "
                "one scope's snapshot"
            )

    @contextmanager
    def _scoped(self, scope: str) -> Generator[None, None, None]:
        """Backend hook: mark the reads this thread makes inside as scoped to ``scope``."""
        yield

    def search_text(self, index: str, *, scope: str, query: str, limit: int = 10) -> list[Hit]:
        """Full-text search in one scope; the query is free text (operators are neutralised)."""
        self._ensure_open()
        validate_scope(scope)
        self._check_reading(scope)
        self._known_index(index, self._projections.text_indexes())
        if not fts_query(query) or limit <= 0:
            return []
        with self._read() as cur:
            return self._search_text(cur, index, scope, query, limit)

    def search_vector(
        self, index: str, *, scope: str, query: str | Vectors, limit: int = 10
    ) -> list[Hit]:
        """Nearest neighbours in one scope by cosine; ``score`` is the cosine similarity."""
        self._ensure_open()
        validate_scope(scope)
        self._check_reading(scope)
        self._known_index(index, self._projections.vector_indexes())
        if self._embedder is None:
            raise ValueError("this store has no embedder")
        if limit <= 0:
            return []
        if isinstance(query, str):
            if not query.strip():
                return []
            vector = self._embedder.embed([query])[0]
        else:
            vector = np.asarray(query, dtype=np.float32).reshape(-1)
            if vector.shape[0] != self._embedder.dim:
                raise ValueError(
                    f"query vector has dim {vector.shape[0]}, expected {self._embedder.dim}"
                )
        if not float(np.abs(vector).sum()) > 0.0:
            return []
        with self._read() as cur:
            return self._search_vector(cur, index, scope, vector, limit)

    # ---- administration -----------------------------------------------------------------

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every projection's content in a canonical order, for equality checks."""
        self._ensure_open()
        with self._read() as cur:
            return self._snapshot(cur)

    def _snapshot(self, cur: Cursor) -> dict[str, list[tuple[Any, ...]]]:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for table in self._projections.tables().values():
            cols = ", ".join(table.column_names())
            cur.execute(f"SELECT {cols} FROM {table.name}")
            out[f"table:{table.name}"] = sorted(
                (tuple(row) for row in cur.fetchall()), key=canonical_sort_key
            )
        for index in self._projections.text_indexes():
            out[f"text:{index}"] = sorted(self._dump_text(cur, index), key=canonical_sort_key)
        for index in self._projections.vector_indexes():
            out[f"vector:{index}"] = sorted(self._dump_vector(cur, index), key=canonical_sort_key)
        return out

    def check(self) -> CheckReport:
        """Integrity of the file/server, of the tape, and projections equal to a rebuild.

        The rebuild runs inside a transaction that is rolled back, so checking changes nothing.
        """
        self._ensure_open()
        problems: list[str] = []
        details: dict[str, str] = {}
        with self._read() as cur:
            problems.extend(self._integrity(cur))
            cur.execute(
                "SELECT COUNT(*), COALESCE(MAX(seq), 0), COUNT(DISTINCT id) FROM tape_events"
            )
            count, head, distinct = (int(x) for x in cur.fetchone())
        if distinct != count:
            problems.append(f"{count - distinct} duplicate event ids")
        before, after = self._rebuild_and_discard()
        for name in sorted(set(before) | set(after)):
            if before.get(name) != after.get(name):
                problems.append(f"projection {name} differs from a rebuild from the tape")
        with self._read() as cur:
            problems.extend(self._index_problems(cur))
        details["projections"] = ", ".join(p.name for p in self._projections.projections)
        return CheckReport(
            ok=not problems, events=count, head=head, problems=tuple(problems), details=details
        )

    def erase(self, scope: str) -> ErasureReceipt:
        """Compliance erasure, the single exception to append-only: physically remove every
        event and projection row of ``scope`` and keep a content-free receipt."""
        self._ensure_open()
        validate_scope(scope)
        rows: dict[str, int] = {}
        with self._write() as cur:
            cur.execute(self._sql("SELECT COUNT(*) FROM tape_events WHERE scope = ?"), (scope,))
            events = int(cur.fetchone()[0])
            cur.execute(self._sql("DELETE FROM tape_events WHERE scope = ?"), (scope,))
            for table in self._projections.tables().values():
                cur.execute(
                    self._sql(f"SELECT COUNT(*) FROM {table.name} WHERE scope = ?"), (scope,)
                )
                rows[table.name] = int(cur.fetchone()[0])
                cur.execute(self._sql(f"DELETE FROM {table.name} WHERE scope = ?"), (scope,))
            for index in self._projections.text_indexes():
                self._erase_text(cur, index, scope)
            for index in self._projections.vector_indexes():
                self._erase_vector(cur, index, scope)
            at = format_time(self._clock.now())
            receipt_id = new_id("er")
            digest = hashlib.sha256(f"{receipt_id}:{scope}".encode()).hexdigest()
            cur.execute(
                self._sql(
                    "INSERT INTO tape_erasures (id, scope_hash, at, events, rows) "
                    "VALUES (?, ?, ?, ?, ?)"
                ),
                (receipt_id, digest, at, events, canonical_json(dict(rows))),
            )
        self._after_erase()
        return ErasureReceipt(receipt_id, digest, at, events, rows)

    def erasures(self) -> list[ErasureReceipt]:
        """Every erasure receipt, oldest first (administrative)."""
        with self._read() as cur:
            cur.execute("SELECT id, scope_hash, at, events, rows FROM tape_erasures ORDER BY at")
            return [
                ErasureReceipt(str(r[0]), str(r[1]), str(r[2]), int(r[3]), json.loads(r[4]))
                for r in cur.fetchall()
            ]

    def _rebuild_and_discard(
        self,
    ) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[tuple[Any, ...]]]]:
        """Snapshots before and after a rebuild run in a transaction that is rolled back."""
        snapshots: list[dict[str, list[tuple[Any, ...]]]] = []
        try:
            with self._write() as cur:
                snapshots.append(self._snapshot(cur))
                self._rebuild_in(cur)
                snapshots.append(self._snapshot(cur))
                raise _RollBack
        except _RollBack:
            pass
        return snapshots[0], snapshots[1]

    def _ensure_open(self) -> None:
        if self._closed:
            raise TapeError("store is closed")

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class TableCodec:
    """How one table's values cross the SQL boundary, computed once per table.

    Both backends return ``text``, ``time``, ``int`` and ``real`` columns as the Python value
    itself (SQLite's column affinity and PostgreSQL's column types see to it), so only
    ``json`` (parsed) and ``bool`` (0/1 → False/True) columns are decoded per cell."""

    names: frozenset[str]
    columns: tuple[tuple[str, str], ...]
    """``(name, type)`` in ``Table.column_names()`` order, ``scope`` first."""
    decoded: tuple[tuple[int, str], ...]
    """Positions and types of the columns that need decoding."""
    ordered: tuple[str, ...]
    """Column names in order."""
    encoded: tuple[tuple[int, str], ...]
    """Positions and types of the columns whose values are encoded on the way in."""

    @classmethod
    def of(cls, table: Table) -> TableCodec:
        columns = (("scope", "text"), *((c.name, str(c.type)) for c in table.columns))
        decoded = tuple((i, t) for i, (_, t) in enumerate(columns) if t in ("json", "bool"))
        encoded = tuple((i, t) for i, (_, t) in enumerate(columns) if t not in _PLAIN)
        names = tuple(n for n, _ in columns)
        return cls(frozenset(names), columns, decoded, names, encoded)

    def decode_rows(self, rows: Sequence[Sequence[Any]]) -> list[tuple[JSONValue, ...]]:
        if not self.decoded:
            return [tuple(row) for row in rows]
        out: list[tuple[JSONValue, ...]] = []
        for row in rows:
            values = list(row)
            for i, type_ in self.decoded:
                value = values[i]
                if value is None:
                    continue
                if type_ == "bool":
                    values[i] = bool(value)
                elif value == "[]":
                    values[i] = []
                else:
                    values[i] = json.loads(value)
            out.append(tuple(values))
        return out


class _RollBack(Exception):
    """Raised inside a write transaction to discard it on purpose."""


def _vector_names(projection: Projection) -> list[str]:
    return [i.name for i in projection.vector_indexes]


def _embedder_of(signature: str) -> str:
    """The ``name:dim`` of the embedder a projection signature records (``""``: none)."""
    try:
        value = json.loads(signature).get("embedder", "")
    except (ValueError, AttributeError):
        return ""
    return "" if value in ("", ":0") else str(value)


def canonical_sort_key(row: tuple[Any, ...]) -> str:
    return repr(tuple(_normalise(v) for v in row))


def _normalise(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()  # pyright: ignore[reportUnknownArgumentType]
    return value
