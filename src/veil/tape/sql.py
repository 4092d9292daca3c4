"""The SQL store both backends subclass: the administration on top of the shared layers.

:class:`SqlStore` implements :class:`~veil.tape.store.Store` once for SQLite and PostgreSQL.
It is three layers, each a module: the reads and writes (:mod:`veil.tape.sql_tape`: append,
read, fetch, search, replay), the schema (:mod:`veil.tape.sql_schema`: migrations, register,
attach) and, here, the administration: the reads of every scope (``scan``, ``scopes``,
``recorded_projections``, ``snapshot``, ``erasures``), ``check``, ``erase``, ``purge`` and
``rebuild``.
A backend implements the dialect primitives each layer declares; it differs from the other
only in SQL text, locking and search.
"""

from __future__ import annotations

import hashlib
import json
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any

from veil.clock import format_time
from veil.tape.events import Event, canonical_json, new_id, validate_scope
from veil.tape.sql_schema import SqlSchema
from veil.tape.sql_tape import Cursor
from veil.tape.store import (
    CheckReport,
    ErasureReceipt,
    PurgeRefused,
    PurgeSelection,
    RebuildReport,
)


class SqlStore(SqlSchema):
    """The store contract over dialect primitives: :class:`~veil.tape.sql_tape.SqlTape`'s
    reads and writes, :class:`~veil.tape.sql_schema.SqlSchema`'s registration, and the
    administration here. Subclasses: SQLite, PostgreSQL."""

    # ---- dialect primitives -------------------------------------------------------------

    @abstractmethod
    def _dump_text(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _dump_vector(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _erase_text(self, cur: Cursor, index: str, scope: str) -> None: ...

    @abstractmethod
    def _erase_vector(self, cur: Cursor, index: str, scope: str) -> None: ...

    @abstractmethod
    def _json_text(self, column: str, field: str) -> str:
        """SQL for the text of a top-level field of a JSON column (NULL when absent)."""

    @abstractmethod
    def _after_erase(self, *, full: bool = False) -> None:
        """Backend clean-up after an erasure commits: reclaim the space of removed rows
        (``full``: rewrite the tables, so no byte of them is left in the files)."""

    @abstractmethod
    def _integrity(self, cur: Cursor) -> list[str]:
        """Backend-level integrity problems (empty when healthy)."""

    def _index_problems(self, cur: Cursor) -> list[str]:
        """Problems of index structures kept outside the projection tables (in-process
        indexes, sidecar files); reads only. None by default."""
        return []

    # ---- reads of every scope (administrative) ----------------------------------------

    def scan(self, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """Administrative: events of every scope, in ``seq`` order (rebuild, export, checks)."""
        self._ensure_open()
        sql = f"SELECT {self._EVENT_COLUMNS} FROM tape_events WHERE seq > ? ORDER BY seq"
        return self._events(sql, [after], limit)

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

    def purge(self, selection: PurgeSelection) -> ErasureReceipt:
        """Physically remove the events ``selection`` names, of every scope it covers, and
        rebuild every projection from what is left (so projections equal a rebuild, and no
        full-text row, vector or sidecar derived from a removed event survives); then reclaim
        the space (VACUUM, WAL truncated). The receipt is content-free: a salted hash of the
        selection, how many events went and how many projection rows each table lost.

        Every projection this database has ever recorded must be registered on this handle
        (a projection left out would keep rows derived from removed events): otherwise
        :class:`~veil.tape.store.PurgeRefused` names it and nothing changes."""
        self._ensure_open()
        missing = sorted(set(self.recorded_projections()) - set(self._projections.names()))
        if missing:
            raise PurgeRefused(
                f"purge needs every projection registered; not registered here: "
                f"{', '.join(missing)}"
            )
        doomed = [e.seq for e in self._purge_scan(selection) if e.seq is not None]
        receipt_id = new_id("er")
        digest = hashlib.sha256(f"{receipt_id}:{selection.describe()}".encode()).hexdigest()
        at = format_time(self._clock.now())
        with self._write() as cur:
            before = self._row_counts(cur)
            for start in range(0, len(doomed), 500):
                chunk = doomed[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                cur.execute(self._sql(f"DELETE FROM tape_events WHERE seq IN ({marks})"), chunk)
            if doomed:
                self._rebuild_in(cur)
            after = self._row_counts(cur)
            rows = {name: before[name] - after.get(name, 0) for name in before}
            cur.execute(
                self._sql(
                    "INSERT INTO tape_erasures (id, scope_hash, at, events, rows) "
                    "VALUES (?, ?, ?, ?, ?)"
                ),
                (receipt_id, digest, at, len(doomed), canonical_json(dict(rows))),
            )
        if doomed:
            self._after_rebuild(self._projections.vector_indexes())
        self._after_erase(full=True)
        return ErasureReceipt(receipt_id, digest, at, len(doomed), rows)

    def purge_counts(self, selection: PurgeSelection) -> dict[str, int]:
        """How many events of each kind :meth:`purge` would remove (reads only)."""
        self._ensure_open()
        counts: dict[str, int] = {}
        for event in self._purge_scan(selection):
            counts[event.kind] = counts.get(event.kind, 0) + 1
        return counts

    def _purge_scan(self, selection: PurgeSelection) -> Iterator[Event]:
        """The events ``selection`` names, read in pages of the tape."""
        after = 0
        while True:
            page = (
                self.read(selection.scope, after=after, limit=2_000)
                if selection.scope is not None
                else self.scan(after=after, limit=2_000)
            )
            if not page:
                return
            for event in page:
                if selection.matches(event):
                    yield event
            after = page[-1].seq or after

    def _row_counts(self, cur: Cursor) -> dict[str, int]:
        counts: dict[str, int] = {}
        for table in self._projections.tables().values():
            cur.execute(f"SELECT COUNT(*) FROM {table.name}")
            counts[table.name] = int(cur.fetchone()[0])
        return counts

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system (SQLite: VACUUM and the WAL
        truncated; PostgreSQL: VACUUM of every table)."""
        self._ensure_open()
        self._after_erase(full=True)

    def sizes(self, scope: str, *, field: str) -> dict[str | None, int]:
        """Administrative: bytes of ``scope``'s events (payload and provenance) grouped by a
        top-level field they carry in their provenance, else their payload (``session_id``:
        what each session takes); None groups the events without it."""
        self._ensure_open()
        validate_scope(scope)
        if not field.isidentifier():
            raise ValueError(f"field must be a plain name: {field!r}")
        key = (
            f"COALESCE({self._json_text('provenance', field)}, {self._json_text('payload', field)})"
        )
        sql = (
            f"SELECT {key}, SUM(LENGTH(payload) + LENGTH(provenance)) FROM tape_events "
            f"WHERE scope = ? GROUP BY {key}"
        )
        with self._read() as cur:
            cur.execute(self._sql(sql), (scope,))
            return {None if r[0] is None else str(r[0]): int(r[1]) for r in cur.fetchall()}

    def erasures(self) -> list[ErasureReceipt]:
        """Every erasure receipt, oldest first (administrative)."""
        with self._read() as cur:
            cur.execute("SELECT id, scope_hash, at, events, rows FROM tape_erasures ORDER BY at")
            return [
                ErasureReceipt(str(r[0]), str(r[1]), str(r[2]), int(r[3]), json.loads(r[4]))
                for r in cur.fetchall()
            ]

    def rebuild(self) -> RebuildReport:
        """Drop and recreate every projection from the tape, atomically."""
        self._ensure_open()
        with self._write() as cur:
            count = self._rebuild_in(cur)
        self._after_rebuild(self._projections.vector_indexes())
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

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _RollBack(Exception):
    """Raised inside a write transaction to discard it on purpose."""


def canonical_sort_key(row: tuple[Any, ...]) -> str:
    """The order of a :meth:`SqlStore.snapshot` row: rows of equal content sort alike on both
    backends (floats rounded to six places, bytes compared as hex)."""
    return repr(tuple(_normalise(v) for v in row))


def _normalise(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()  # pyright: ignore[reportUnknownArgumentType]
    return value
