"""The SQL store's schema: the tape's migrations and the projections' tables and indexes.

:class:`SqlSchema` applies the backend's named migrations (``_migrate``, once per open) and
registers projections: :meth:`~SqlSchema.register` creates a projection's tables, full-text
and vector indexes, records its signature (version, schema, embedder, index layout) and, when
the recorded signature differs, drops and rebuilds it from the tape in the same transaction;
:meth:`~SqlSchema.attach` adds projections the database already holds and writes nothing.
Dropping and creating a projection (``_drop_projection``, ``_create_projection``) is also what
a rebuild does (:mod:`veil.tape.sql`). The DDL comes from the dialect primitives declared
here; the reads and writes below this layer are :mod:`veil.tape.sql_tape`.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Literal

from veil.clock import format_time
from veil.tape.events import JSONValue, canonical_json
from veil.tape.migrations import Migration, pending
from veil.tape.projection import Projection, ProjectionSet, Table
from veil.tape.sql_tape import Cursor, SqlTape
from veil.tape.store import RESERVED_PREFIXES, ProjectionMismatch, check_identifier


class SqlSchema(SqlTape):
    """Migrations and projection registration over the dialect's DDL."""

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

    def _table_ddl(self, table: Table) -> list[str]:
        """The statements that create a projection table (``scope`` first in its key) and
        its declared indexes, if absent. A backend may add to them."""
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
    def _text_index_ddl(self, name: str) -> list[str]: ...

    @abstractmethod
    def _vector_index_ddl(self, name: str, dim: int) -> list[str]: ...

    @abstractmethod
    def _drop_ddl(self, kind: Literal["table", "text", "vector"], name: str) -> list[str]: ...

    def _after_rebuild(self, vector_indexes: Sequence[str]) -> None:
        """Backend hook after these vector indexes were rebuilt and committed."""
        return None

    # ---- registration -------------------------------------------------------------------

    def register(self, *projections: Projection) -> None:
        """Add projections; create their schema, and rebuild any whose version changed.

        Idempotent per handle: a projection this handle already maintains with the same
        signature (version, schema, embedder) is skipped, so every writer sharing a handle
        registers what it needs without knowing who came first. The same name with another
        signature is refused."""
        projections = self._not_yet_registered(projections)
        if not projections:
            return
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

    def _not_yet_registered(self, projections: Sequence[Projection]) -> tuple[Projection, ...]:
        signatures = {p.name: self._held_signature(p) for p in self._projections.projections}
        fresh: dict[str, Projection] = {}
        for projection in projections:
            signature = self._signature(projection)
            have = signatures.get(projection.name)
            if have is not None and have != signature:
                raise ValueError(
                    f"projection {projection.name!r} is already registered on this store "
                    "with another version or schema"
                )
            if have is None:
                signatures[projection.name] = signature
                fresh[projection.name] = projection
        return tuple(fresh.values())

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

    def _held_signature(self, projection: Projection) -> str:
        """The signature of a projection this handle holds, computed once: every short-lived
        writer (a hook's attempt log) registers its projections again, and the signatures of
        all held projections would otherwise be rebuilt each time."""
        memo = self._signature_memo
        held = memo.get(id(projection))
        if held is None or held[0] is not projection:
            held = (projection, self._signature(projection))
            memo[id(projection)] = held
        return held[1]

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


def _vector_names(projection: Projection) -> list[str]:
    return [i.name for i in projection.vector_indexes]


def _embedder_of(signature: str) -> str:
    """The ``name:dim`` of the embedder a projection signature records (``""``: none)."""
    try:
        value = json.loads(signature).get("embedder", "")
    except (ValueError, AttributeError):
        return ""
    return "" if value in ("", ":0") else str(value)
