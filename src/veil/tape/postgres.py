"""The PostgreSQL backend: the same contract for deployments that outgrow one file.

Appends serialise on a transaction-scoped advisory lock, so ``seq`` (an identity column) is
assigned and committed in order and a reader following ``after=seq`` never skips an event
that commits late. Full-text search uses a stored ``tsvector`` with a GIN index; vectors use
pgvector with an HNSW cosine index and iterative scans, so a scope filter does not starve the
result list. Text projected into tables has NUL characters replaced by U+FFFD (PostgreSQL text
cannot hold NUL); the tape keeps the exact JSON.

Row-level security (defence in depth beside the SQL filters): ``tape_events`` and every
projection, full-text and vector table carry the policy ``scope_isolation`` with ``ENABLE`` and
``FORCE ROW LEVEL SECURITY`` (so the owning role is subject to it too). The policy admits a row
when the transaction-local setting ``veil.scope`` is unset or empty, or equals the row's scope.
Scoped reads (``fetch``, ``search_text``, ``search_vector``, ``read``) set it with
``set_config('veil.scope', scope, true)`` — local to their read transaction — so even a query
that forgot its ``WHERE scope = …`` cannot return another scope's rows. Writes and the
administrative paths (``scan``, ``snapshot``, ``rebuild``, ``check``, ``erase``) leave it unset
and see every row, which is what they need. The empty-string case matters: once a session has
set a custom setting, ``current_setting(…, true)`` returns ``''`` (not NULL) after the
transaction ends, and pooled connections are reused. Superusers and ``BYPASSRLS`` roles skip
every policy: deploy with an ordinary role owning the tables (docs/deploy.md).

Needs the ``postgres`` extra (psycopg 3, psycopg-pool) and the ``vector`` extension.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

import numpy as np

from veil.clock import Clock
from veil.embed.protocol import Embedder, Vectors
from veil.extras import install_command
from veil.redaction import RedactionConfig
from veil.tape.events import Event, JSONValue
from veil.tape.migrations import Migration
from veil.tape.projection import Hit, Table
from veil.tape.sql import SqlStore
from veil.tape.sql_tape import Cursor
from veil.tape.store import BackendUnavailable, Dialect, bounded_terms, fts_terms

try:
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # tests/tape/test_missing_extras.py simulates this
    _why = (
        f"{exc.name.replace('_', '-')} is not installed"
        if exc.name
        else f"psycopg does not load: {exc}"
    )
    raise BackendUnavailable(
        f"the PostgreSQL backend needs the `postgres` extra ({_why}): "
        f"{install_command('postgres')}",
        name=exc.name,
    ) from exc

_TYPES = {
    "text": "TEXT",
    "int": "BIGINT",
    "real": "DOUBLE PRECISION",
    "json": "TEXT",
    "time": "TEXT",
    "bool": "SMALLINT",
}
_WRITE_LOCK_KEY = 0x7665696C  # "veil"
_Item = TypeVar("_Item", bound=tuple[Any, ...])


def _m001_tape(cur: Any) -> None:
    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    cur.execute(
        """CREATE TABLE tape_events (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            scope TEXT NOT NULL,
            kind TEXT NOT NULL,
            at TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            actor TEXT NOT NULL,
            payload TEXT NOT NULL,
            provenance TEXT NOT NULL,
            digest TEXT NOT NULL
        )"""
    )
    cur.execute("CREATE INDEX tape_events_scope_seq ON tape_events (scope, seq)")
    cur.execute("CREATE INDEX tape_events_scope_kind_seq ON tape_events (scope, kind, seq)")
    cur.execute("CREATE TABLE tape_projections (name TEXT PRIMARY KEY, signature TEXT NOT NULL)")
    cur.execute(
        """CREATE FUNCTION tape_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'tape events are append-only'; END $$"""
    )
    cur.execute(
        "CREATE TRIGGER tape_events_no_update BEFORE UPDATE ON tape_events "
        "FOR EACH ROW EXECUTE FUNCTION tape_refuse_update()"
    )


def _m002_erasures(cur: Any) -> None:
    cur.execute(
        "CREATE TABLE tape_erasures (id TEXT PRIMARY KEY, scope_hash TEXT NOT NULL, "
        "at TEXT NOT NULL, events BIGINT NOT NULL, rows TEXT NOT NULL)"
    )


SCOPE_POLICY = "scope_isolation"
SCOPE_SETTING = "veil.scope"


def rls_ddl(table: str) -> list[str]:
    """Row-level security on ``table`` (which has a ``scope`` column): see the module doc.
    Idempotent (the policy is dropped and recreated), so it can run on existing tables."""
    setting = f"current_setting('{SCOPE_SETTING}', true)"
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {SCOPE_POLICY} ON {table}",
        f"CREATE POLICY {SCOPE_POLICY} ON {table} USING "
        f"(COALESCE({setting}, '') = '' OR scope = {setting})",
    ]


def _m003_row_level_security(cur: Any) -> None:
    """RLS on the tape and on every table that already has a ``scope`` column (projection
    tables created before this migration); tables created later get it in their DDL."""
    cur.execute(
        "SELECT c.table_name FROM information_schema.columns c "
        "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
        "AND t.table_name = c.table_name "
        "WHERE c.table_schema = current_schema() AND c.column_name = 'scope' "
        "AND t.table_type = 'BASE TABLE' ORDER BY c.table_name"
    )
    for (name,) in cur.fetchall():
        for ddl in rls_ddl(str(name)):
            cur.execute(ddl)


MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_tape", _m001_tape),
    Migration("0002_erasures", _m002_erasures),
    Migration("0003_row_level_security", _m003_row_level_security),
)


def _clean(value: Any) -> Any:
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


class _Cursor:
    """Adapts psycopg's cursor to the shared code: ``?`` placeholders, NUL-safe text."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self._cur.execute(sql, [_clean(p) for p in params] if params else None)

    def executemany(self, sql: str, params: Any) -> Any:
        return self._cur.executemany(sql, [[_clean(p) for p in row] for row in params])

    def fetchall(self) -> list[Any]:
        return list(self._cur.fetchall())

    def fetchmany(self, size: int) -> list[Any]:
        return list(self._cur.fetchmany(size))

    def fetchone(self) -> Any:
        return self._cur.fetchone()


class PostgresStore(SqlStore):
    dialect: Dialect = "postgresql"
    COLUMN_TYPES = _TYPES
    MIGRATIONS = MIGRATIONS

    def __init__(
        self,
        dsn: str,
        *,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        pool_size: int = 4,
        redaction: RedactionConfig | None = None,
    ) -> None:
        super().__init__(embedder=embedder, clock=clock, redaction=redaction)
        self.url = dsn
        self._pool: Any = ConnectionPool(
            dsn, min_size=1, max_size=pool_size, open=True, kwargs={"autocommit": True}
        )
        self._local = threading.local()
        self._term_counts = _TermCounts()
        self._migrate()

    # ---- transactions -------------------------------------------------------------------

    @contextmanager
    def _transaction(self, write: bool) -> Generator[Cursor, None, None]:
        current = getattr(self._local, "cursor", None)
        if current is not None:  # nested use inside one transaction (e.g. check())
            yield current
            return
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as raw:
            cur = _Cursor(raw)
            if write:
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK_KEY,))
            scope = getattr(self._local, "scope", None)
            if scope is not None and not write:
                raw.execute(
                    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                    f"set_config('{SCOPE_SETTING}', %s, true)",
                    (_clean(scope),),
                )
            else:
                raw.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            self._local.cursor = cur
            try:
                yield cur
            finally:
                self._local.cursor = None

    @contextmanager
    def _scoped(self, scope: str) -> Generator[None, None, None]:
        """Mark the read transactions this thread opens inside as scoped to ``scope`` (RLS).
        A read nested in an already open transaction keeps that transaction's setting."""
        previous = getattr(self._local, "scope", None)
        self._local.scope = scope
        try:
            yield
        finally:
            self._local.scope = previous

    def read(
        self,
        scope: str,
        *,
        after: int = 0,
        kinds: Collection[str] | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        with self._scoped(scope):
            return super().read(scope, after=after, kinds=kinds, limit=limit)

    def fetch_values(
        self,
        table: str,
        *,
        scope: str,
        where: Mapping[str, object] | None = None,
        order_by: Sequence[str] = (),
        limit: int | None = None,
    ) -> list[tuple[JSONValue, ...]]:
        with self._scoped(scope):
            return super().fetch_values(
                table, scope=scope, where=where, order_by=order_by, limit=limit
            )

    def search_text(self, index: str, *, scope: str, query: str, limit: int = 10) -> list[Hit]:
        with self._scoped(scope):
            return super().search_text(index, scope=scope, query=query, limit=limit)

    def search_vector(
        self, index: str, *, scope: str, query: str | Vectors, limit: int = 10
    ) -> list[Hit]:
        with self._scoped(scope):
            return super().search_vector(index, scope=scope, query=query, limit=limit)

    def _write(self) -> Any:
        return self._transaction(True)

    def _read(self) -> Any:
        return self._transaction(False)

    def _sql(self, sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    def _json_text(self, column: str, field: str) -> str:
        return f"({column}::jsonb ->> '{field}')"

    # ---- schema -------------------------------------------------------------------------

    def _table_ddl(self, table: Table) -> list[str]:
        return [*super()._table_ddl(table), *rls_ddl(table.name)]

    def _text_index_ddl(self, name: str) -> list[str]:
        return [
            f"CREATE TABLE IF NOT EXISTS fts_{name} (scope TEXT NOT NULL, doc_id TEXT NOT NULL, "
            "body TEXT NOT NULL, tsv tsvector GENERATED ALWAYS AS "
            "(to_tsvector('english', body)) STORED, PRIMARY KEY (scope, doc_id))",
            f"CREATE INDEX IF NOT EXISTS fts_{name}_tsv ON fts_{name} USING GIN (tsv)",
            *rls_ddl(f"fts_{name}"),
        ]

    def _vector_index_ddl(self, name: str, dim: int) -> list[str]:
        return [
            f"CREATE TABLE IF NOT EXISTS vec_{name} (scope TEXT NOT NULL, doc_id TEXT NOT NULL, "
            f"embedding vector({dim}) NOT NULL, PRIMARY KEY (scope, doc_id))",
            f"CREATE INDEX IF NOT EXISTS vec_{name}_hnsw ON vec_{name} "
            "USING hnsw (embedding vector_cosine_ops)",
            *rls_ddl(f"vec_{name}"),
        ]

    def _drop_ddl(self, kind: Literal["table", "text", "vector"], name: str) -> list[str]:
        prefix = {"table": "", "text": "fts_", "vector": "vec_"}[kind]
        return [f"DROP TABLE IF EXISTS {prefix}{name}"]

    def _put_sql(self, table: Table, keep_existing: bool = False) -> str:
        names = table.column_names()
        key = ("scope", *table.key)
        updates = [f"{n} = EXCLUDED.{n}" for n in names if n not in key]
        conflict = (
            f"DO UPDATE SET {', '.join(updates)}" if updates and not keep_existing else "DO NOTHING"
        )
        return (
            f"INSERT INTO {table.name} ({', '.join(names)}) "
            f"VALUES ({', '.join('%s' for _ in names)}) "
            f"ON CONFLICT ({', '.join(key)}) {conflict}"
        )

    # ---- indexes ------------------------------------------------------------------------

    def _write_texts(self, cur: Cursor, index: str, items: Sequence[tuple[str, str, str]]) -> None:
        documents = [(scope, doc_id, text or None) for scope, doc_id, text in _last_per_doc(items)]
        _write_documents(cur, f"fts_{index}", "body", "%s", documents)

    def _write_vectors(
        self, cur: Cursor, index: str, items: Sequence[tuple[int, str, str, Vectors | None]]
    ) -> None:
        documents = [
            (scope, doc_id, None if vector is None else _vector_literal(vector))
            for _, scope, doc_id, vector in _last_per_doc(items)
        ]
        _write_documents(cur, f"vec_{index}", "embedding", "%s::vector", documents)

    def _search_text(
        self, cur: Cursor, index: str, scope: str, query: str, limit: int
    ) -> list[Hit]:
        """``ts_rank_cd`` top-k over the query's bounded terms (as SQLite: the rarest term of
        the scope, then others while the ranked postings stay within twice its count)."""
        terms = [t for t in fts_terms(query) if t.replace("'", "")]
        if not terms:
            return []
        counts = self._term_counts.of(cur, index, scope, terms)
        kept = bounded_terms(terms, counts)
        if not kept:
            return []
        tsquery = " | ".join(_lexeme(t) for t in kept)
        cur.execute(
            f"SELECT doc_id, ts_rank_cd(tsv, q) AS rank FROM fts_{index}, "
            "to_tsquery('english', %s) AS q WHERE scope = %s AND tsv @@ q "
            "ORDER BY rank DESC, doc_id LIMIT %s",
            (tsquery, scope, limit),
        )
        return [Hit(str(r[0]), float(r[1])) for r in cur.fetchall()]

    def _search_vector(
        self, cur: Cursor, index: str, scope: str, vector: Vectors, limit: int
    ) -> list[Hit]:
        """pgvector's HNSW with a search depth of at least twice ``limit`` and an iterative
        scan (so the scope filter cannot starve the list); the relaxed order of the scan is
        re-sorted exactly by the outer query."""
        cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(100, 2 * limit)),))
        cur.execute(
            f"WITH nearest AS MATERIALIZED (SELECT doc_id, embedding <=> %s::vector AS distance "
            f"FROM vec_{index} WHERE scope = %s ORDER BY distance LIMIT %s) "
            "SELECT doc_id, distance FROM nearest ORDER BY distance, doc_id",
            (_vector_literal(vector), scope, limit),
        )
        return [Hit(str(r[0]), 1.0 - float(r[1])) for r in cur.fetchall()]

    def _dump_text(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]:
        cur.execute(f"SELECT scope, doc_id, body FROM fts_{index}")
        return [tuple(r) for r in cur.fetchall()]

    def _dump_vector(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]:
        cur.execute(f"SELECT scope, doc_id, embedding::text FROM vec_{index}")
        return [
            (
                r[0],
                r[1],
                tuple(
                    np.round(np.array(r[2].strip("[]").split(","), dtype=np.float32), 5).tolist()
                ),
            )
            for r in cur.fetchall()
        ]

    def _erase_text(self, cur: Cursor, index: str, scope: str) -> None:
        cur.execute(f"DELETE FROM fts_{index} WHERE scope = %s", (scope,))

    def _erase_vector(self, cur: Cursor, index: str, scope: str) -> None:
        cur.execute(f"DELETE FROM vec_{index} WHERE scope = %s", (scope,))

    def _after_erase(self, *, full: bool = False) -> None:
        # VACUUM cannot run inside a transaction; the pool's connections are autocommit.
        # FULL rewrites each table, so removed rows leave no bytes behind (a purge, vacuum);
        # plain VACUUM only marks their space reusable (erasure keeps the shorter lock).
        names = [
            "tape_events",
            *self._projections.tables(),
            *(f"fts_{i}" for i in self._projections.text_indexes()),
            *(f"vec_{i}" for i in self._projections.vector_indexes()),
        ]
        with self._pool.connection() as conn:
            for name in names:
                conn.execute(f"VACUUM {'FULL ' if full else ''}{name}")

    def _integrity(self, cur: Cursor) -> list[str]:
        cur.execute("SELECT 1")
        return []

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.close()


def _last_per_doc(items: Sequence[_Item]) -> list[_Item]:
    """Each (scope, doc_id)'s last write only, in the order of those last writes: a batch
    that indexes a document twice must not upsert the same row twice in one statement."""
    last: dict[tuple[str, str], _Item] = {}
    for item in items:
        key = (str(item[-3]), str(item[-2]))
        last.pop(key, None)
        last[key] = item
    return list(last.values())


def _write_documents(
    cur: Cursor,
    table: str,
    column: str,
    placeholder: str,
    documents: Sequence[tuple[str, str, str | None]],
) -> None:
    """Write ``(scope, doc_id, value)`` to an index table keyed by ``(scope, doc_id)``, in
    order: a value upserts the document's ``column`` (bound through ``placeholder``, e.g.
    ``%s::vector``), ``None`` deletes the document. Consecutive upserts run as one
    ``executemany``; each ``(scope, doc_id)`` may appear once (see :func:`_last_per_doc`)."""
    upsert = (
        f"INSERT INTO {table} (scope, doc_id, {column}) VALUES (%s, %s, {placeholder}) "
        f"ON CONFLICT (scope, doc_id) DO UPDATE SET {column} = EXCLUDED.{column}"
    )
    delete = f"DELETE FROM {table} WHERE scope = %s AND doc_id = %s"
    run: list[tuple[str, str, str]] = []
    for scope, doc_id, value in documents:
        if value is not None:
            run.append((scope, doc_id, value))
            continue
        if run:
            cur.executemany(upsert, run)
            run = []
        cur.execute(delete, (scope, doc_id))
    if run:
        cur.executemany(upsert, run)


def _lexeme(term: str) -> str:
    """A term as a quoted ``to_tsquery`` operand (stemmed by the english configuration)."""
    return "'" + term.replace("'", "") + "'"


class _TermCounts:
    """Per (index, scope) document frequencies of terms, recounted after 1,000 uses (a stale
    count only changes which terms a query keeps). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], tuple[int, dict[str, int]]] = {}

    def of(self, cur: Cursor, index: str, scope: str, terms: Sequence[str]) -> list[int]:
        key = (index, scope)
        with self._lock:
            uses, counts = self._counts.get(key, (0, {}))
            if uses >= 1_000 or len(counts) > 20_000:
                uses, counts = 0, {}
            self._counts[key] = (uses + 1, counts)
            missing = [t for t in terms if t not in counts]
        found: dict[str, int] = {}
        for term in missing:
            cur.execute(
                f"SELECT COUNT(*) FROM fts_{index} WHERE scope = %s "
                "AND tsv @@ to_tsquery('english', %s)",
                (scope, _lexeme(term)),
            )
            found[term] = int(cur.fetchone()[0])
        with self._lock:
            counts.update(found)
            return [counts.get(t, found.get(t, 0)) for t in terms]


def _vector_literal(vector: Vectors) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


__all__ = ["PostgresStore", "psycopg"]
