"""The reads and writes of the SQL store, shared by both backends.

:class:`SqlTape` appends events to the tape and applies the registered projections' ops in
the same transaction (:meth:`~SqlTape.append`, :meth:`~SqlTape.bulk_append`), and answers the
scoped reads: events of a scope (:meth:`~SqlTape.read`), projection rows
(:meth:`~SqlTape.fetch`), full-text and vector search, and one consistent read of a scope
(:meth:`~SqlTape.reading`). It also replays the tape through projections (``_replay``), which
registration and rebuild use. It is written over the dialect primitives declared here, which
each backend implements: transactions, placeholder syntax, upserts, and the writes and
searches of its full-text and vector indexes.

The schema (:mod:`veil.tape.sql_schema`) and the administration (:mod:`veil.tape.sql`) are
layers on top of this one; a backend subclasses :class:`veil.tape.sql.SqlStore`.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol, cast

from veil.clock import Clock, SystemClock, format_time, parse_time
from veil.embed.protocol import Embedder, Vectors
from veil.redaction import RedactionConfig, Redactor
from veil.tape.events import (
    Event,
    EventConflict,
    InvalidEvent,
    JSONValue,
    Sealed,
    TapeError,
    seal,
    validate_scope,
)
from veil.tape.kinds import check
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
from veil.tape.redacting import redacted
from veil.tape.sql_codec import TableCodec, encode_value
from veil.tape.sql_fetch import select_rows
from veil.tape.store import MAX_PAYLOAD_BYTES, Dialect, UnknownName, fts_query


class Cursor(Protocol):
    """The slice of a DB-API cursor the shared code uses."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...
    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def fetchmany(self, size: int) -> list[Any]: ...
    def fetchone(self) -> Any: ...


class SqlTape(ABC):
    """The tape and the projections' reads and writes over dialect primitives."""

    dialect: Dialect
    url: str

    def __init__(
        self,
        *,
        embedder: Embedder | None,
        clock: Clock | None,
        redaction: RedactionConfig | None = None,
    ) -> None:
        self.redactor = Redactor(redaction or RedactionConfig())
        """Every event's payload and provenance pass through it before they are written
        (the one place no secret gets past, whichever layer wrote the event)."""
        self._embedder = embedder
        self._clock: Clock = clock or SystemClock()
        self._projections = ProjectionSet()
        self._signature_memo: dict[int, tuple[Projection, str]] = {}
        self._closed = False
        self._codecs: dict[str, tuple[Table, TableCodec]] = {}
        """By table name (hashing a Table hashes every column: this runs per row)."""
        self._reading = threading.local()
        self._writes = False
        """Set by :meth:`~veil.tape.sql_schema.SqlSchema.register`: a handle that only
        ``attach``-ed writes nothing, not even derived files (``veil admin check`` never
        writes)."""

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

    @contextmanager
    def _scoped(self, scope: str) -> Generator[None, None, None]:
        """Backend hook: mark the reads this thread makes inside as scoped to ``scope``."""
        yield

    def _after_bulk(self) -> None:
        """Backend hook after :meth:`bulk_append` (SQLite: build and save vector indexes)."""
        return None

    @abstractmethod
    def close(self) -> None: ...

    # ---- the tape -----------------------------------------------------------------------

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

    def append(self, events: Sequence[Event], *, keep_recorded_at: bool = False) -> list[Event]:
        """Append a batch atomically; idempotent by event id. Returns the stored events.

        ``keep_recorded_at`` keeps each event's own ``recorded_at`` (restoring an export);
        otherwise the store's clock stamps the batch.

        An id already on the tape with the same content returns the stored event unchanged;
        with different content the whole batch fails with :class:`EventConflict` and nothing
        is written. Every event is checked against its registered kind
        (:func:`veil.tape.kinds.check`) after redaction. Projections are applied in the same
        transaction.
        """
        self._ensure_open()
        batch: list[Sealed] = []
        seen: dict[str, str] = {}
        for raw in events:
            sealed = seal(redacted(raw, self.redactor))
            event = sealed.event
            check(event)
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
            texts: dict[datetime, str] = {}  # the batch shares one stamp: format it once
            seqs = self._insert_events(
                cur, [(s, texts.get(t) or texts.setdefault(t, format_time(t))) for s, t in fresh]
            )
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
        return self._events(sql + " ORDER BY seq", params, limit)

    def _events(self, sql: str, params: Sequence[Any], limit: int | None) -> list[Event]:
        """The events ``sql`` selects (:attr:`_EVENT_COLUMNS` of ``tape_events``, ``?``
        placeholders for ``params``, in its order), at most ``limit`` of them."""
        if limit is not None:
            sql += " LIMIT ?"
            params = [*params, max(0, int(limit))]
        with self._read() as cur:
            cur.execute(self._sql(sql), params)
            return [self._event(row) for row in cur.fetchall()]

    def head(self) -> int:
        """The highest ``seq`` on the tape (0 when empty)."""
        self._ensure_open()
        with self._read() as cur:
            cur.execute("SELECT COALESCE(MAX(seq), 0) FROM tape_events")
            return int(cur.fetchone()[0])

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
            import numpy as np  # only where vectors are made (a store without any needs none)

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
                run.append(self._codec(table).encode_row(op.row))
                run_keep = op.keep_existing
                continue
            if run:
                cur.executemany(self._put_sql(table, bool(run_keep)), run)
                run, run_keep = [], None
            if isinstance(op, Put):
                run.append(self._codec(table).encode_row(op.row))
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
            params.append(encode_value(types[name], value))
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
        params = [key["scope"], *(encode_value(types[k], key[k]) for k in table.key)]
        return clause, params

    def _codec(self, table: Table) -> TableCodec:
        cached = self._codecs.get(table.name)
        if cached is not None and (cached[0] is table or cached[0] == table):
            return cached[1]
        codec = TableCodec.of(table)
        self._codecs[table.name] = (table, codec)
        return codec

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
        query = select_rows(
            spec, scope=scope, where=where, order_by=order_by, limit=limit, no_index=self._no_index
        )
        if query is None:
            return []
        sql, params = query
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
        import numpy as np

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

    def _ensure_open(self) -> None:
        if self._closed:
            raise TapeError("store is closed")
