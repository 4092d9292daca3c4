"""The SQLite backend: the embedded default.

One file in WAL mode; writers serialise on ``BEGIN IMMEDIATE`` with a busy timeout, so many
processes can append to the same file safely while readers never block. ``seq`` is an
``AUTOINCREMENT`` key: strictly increasing and never reused. Full-text search is FTS5 (a
contentless index whose rows carry a hashed scope token, so the scope filter runs inside the
index), vectors live in sqlite-vec ``vec0`` tables partitioned by scope.

Durability: ``synchronous=FULL`` by default — a write acknowledged by ``append`` survives a
process crash and a power loss. ``?synchronous=normal`` in the URL trades the power-loss
guarantee for speed (still safe against process crashes).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlparse

import numpy as np

from veil.clock import Clock
from veil.embed.protocol import Embedder, Vectors
from veil.tape.migrations import Migration
from veil.tape.projection import Hit, Table
from veil.tape.sql import Cursor, SqlStore
from veil.tape.sqlite_driver import connect
from veil.tape.store import Dialect, fts_query

_TYPES = {
    "text": "TEXT",
    "int": "INTEGER",
    "real": "REAL",
    "json": "TEXT",
    "time": "TEXT",
    "bool": "INTEGER",
}


def _m001_tape(cur: Any) -> None:
    cur.execute(
        """CREATE TABLE tape_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
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
    # Appending is the only write; make any UPDATE of an event a hard error.
    cur.execute(
        """CREATE TRIGGER tape_events_no_update BEFORE UPDATE ON tape_events
           BEGIN SELECT RAISE(ABORT, 'tape events are append-only'); END"""
    )


def _m002_erasures(cur: Any) -> None:
    cur.execute(
        "CREATE TABLE tape_erasures (id TEXT PRIMARY KEY, scope_hash TEXT NOT NULL, "
        "at TEXT NOT NULL, events INTEGER NOT NULL, rows TEXT NOT NULL)"
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_tape", _m001_tape),
    Migration("0002_erasures", _m002_erasures),
)


def scope_token(scope: str) -> str:
    """A single FTS token standing for a scope (scopes may contain any characters)."""
    return "s" + hashlib.sha256(scope.encode()).hexdigest()[:24]


class SQLiteStore(SqlStore):
    """The embedded store. ``path`` may be ``":memory:"`` for throwaway use."""

    dialect: Dialect = "sqlite"
    COLUMN_TYPES = _TYPES
    MIGRATIONS = MIGRATIONS

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        synchronous: Literal["full", "normal"] = "full",
        busy_timeout_s: float = 30.0,
    ) -> None:
        super().__init__(embedder=embedder, clock=clock)
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn: Any = connect(self.path, timeout_s=busy_timeout_s)
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        self._conn.execute("PRAGMA foreign_keys = ON")
        # Freed content is overwritten, so an erased scope leaves no bytes in free pages.
        self._conn.execute("PRAGMA secure_delete = ON")
        self._migrate()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> SQLiteStore:
        parsed = urlparse(url)
        path = parsed.path
        if url.startswith("sqlite:///"):
            path = url[len("sqlite:///") :].split("?", 1)[0]
        query = parse_qs(parsed.query)
        if "synchronous" in query:
            value = query["synchronous"][0].lower()
            if value not in ("full", "normal"):
                raise ValueError("synchronous must be full or normal")
            kwargs.setdefault("synchronous", value)
        return cls(path or ":memory:", **kwargs)

    # ---- transactions -------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Generator[Cursor, None, None]:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    @contextmanager
    def _read(self) -> Generator[Cursor, None, None]:
        with self._lock:
            cur = self._conn.cursor()
            in_txn = self._conn.in_transaction
            if not in_txn:
                cur.execute("BEGIN")
            try:
                yield cur
            finally:
                if not in_txn:
                    cur.execute("COMMIT")
                cur.close()

    def _sql(self, sql: str) -> str:
        return sql

    # ---- schema -------------------------------------------------------------------------

    def _text_index_ddl(self, name: str) -> list[str]:
        return [
            f"CREATE TABLE IF NOT EXISTS fts_{name}_docs (id INTEGER PRIMARY KEY, "
            "scope TEXT NOT NULL, doc_id TEXT NOT NULL, body TEXT NOT NULL, "
            "UNIQUE (scope, doc_id))",
            f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{name} USING fts5(body, scopekey, "
            "content='', tokenize='porter unicode61 remove_diacritics 2')",
        ]

    def _vector_index_ddl(self, name: str, dim: int) -> list[str]:
        return [
            f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_{name} USING vec0(key TEXT PRIMARY KEY, "
            f"scope TEXT PARTITION KEY, embedding float[{dim}] distance_metric=cosine, "
            "+doc_id TEXT)"
        ]

    def _drop_ddl(self, kind: Literal["table", "text", "vector"], name: str) -> list[str]:
        if kind == "table":
            return [f"DROP TABLE IF EXISTS {name}"]
        if kind == "text":
            return [f"DROP TABLE IF EXISTS fts_{name}", f"DROP TABLE IF EXISTS fts_{name}_docs"]
        return [f"DROP TABLE IF EXISTS vec_{name}"]

    def _no_index(self, column: str) -> str:
        return f"+{column}"

    def _put_sql(self, table: Table, keep_existing: bool = False) -> str:
        names = table.column_names()
        verb = "INSERT OR IGNORE" if keep_existing else "INSERT OR REPLACE"
        return (
            f"{verb} INTO {table.name} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' for _ in names)})"
        )

    # ---- indexes ------------------------------------------------------------------------

    def _write_text(self, cur: Cursor, index: str, scope: str, doc_id: str, text: str) -> None:
        cur.execute(
            f"SELECT id, body FROM fts_{index}_docs WHERE scope = ? AND doc_id = ?",
            (scope, doc_id),
        )
        old = cur.fetchone()
        token = scope_token(scope)
        if old is not None:
            cur.execute(
                f"INSERT INTO fts_{index} (fts_{index}, rowid, body, scopekey) "
                "VALUES ('delete', ?, ?, ?)",
                (old[0], old[1], token),
            )
            cur.execute(f"DELETE FROM fts_{index}_docs WHERE id = ?", (old[0],))
        if not text:
            return
        cur.execute(
            f"INSERT INTO fts_{index}_docs (scope, doc_id, body) VALUES (?, ?, ?) RETURNING id",
            (scope, doc_id, text),
        )
        rowid = int(cur.fetchone()[0])
        cur.execute(
            f"INSERT INTO fts_{index} (rowid, body, scopekey) VALUES (?, ?, ?)",
            (rowid, text, token),
        )

    def _write_vector(
        self, cur: Cursor, index: str, scope: str, doc_id: str, vector: Vectors | None
    ) -> None:
        key = f"{scope}\n{doc_id}"
        cur.execute(f"DELETE FROM vec_{index} WHERE key = ?", (key,))
        if vector is None:
            return
        cur.execute(
            f"INSERT INTO vec_{index} (key, scope, embedding, doc_id) VALUES (?, ?, ?, ?)",
            (key, scope, np.asarray(vector, dtype=np.float32).tobytes(), doc_id),
        )

    def _search_text(
        self, cur: Cursor, index: str, scope: str, query: str, limit: int
    ) -> list[Hit]:
        match = f"scopekey : {scope_token(scope)} AND body : ({fts_query(query)})"
        cur.execute(
            f"SELECT d.doc_id, bm25(fts_{index}, 1.0, 0.0) AS rank FROM fts_{index} "
            f"JOIN fts_{index}_docs d ON d.id = fts_{index}.rowid "
            f"WHERE fts_{index} MATCH ? AND d.scope = ? ORDER BY rank LIMIT ?",
            (match, scope, limit),
        )
        return [Hit(str(r[0]), -float(r[1])) for r in cur.fetchall()]

    def _search_vector(
        self, cur: Cursor, index: str, scope: str, vector: Vectors, limit: int
    ) -> list[Hit]:
        cur.execute(
            f"SELECT doc_id, distance FROM vec_{index} WHERE embedding MATCH ? AND k = ? "
            "AND scope = ? ORDER BY distance",
            (np.asarray(vector, dtype=np.float32).tobytes(), min(limit, 4096), scope),
        )
        return [Hit(str(r[0]), 1.0 - float(r[1])) for r in cur.fetchall()]

    def _dump_text(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]:
        cur.execute(f"SELECT scope, doc_id, body FROM fts_{index}_docs")
        return [tuple(r) for r in cur.fetchall()]

    def _dump_vector(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]:
        cur.execute(f"SELECT scope, doc_id, embedding FROM vec_{index}")
        return [
            (r[0], r[1], tuple(np.round(np.frombuffer(r[2], dtype=np.float32), 5).tolist()))
            for r in cur.fetchall()
        ]

    def _erase_text(self, cur: Cursor, index: str, scope: str) -> None:
        cur.execute(f"SELECT id, body FROM fts_{index}_docs WHERE scope = ?", (scope,))
        token = scope_token(scope)
        for rowid, body in cur.fetchall():
            cur.execute(
                f"INSERT INTO fts_{index} (fts_{index}, rowid, body, scopekey) "
                "VALUES ('delete', ?, ?, ?)",
                (rowid, body, token),
            )
        cur.execute(f"DELETE FROM fts_{index}_docs WHERE scope = ?", (scope,))
        # Merge segments so deleted terms are dropped from the index, not just masked.
        cur.execute(f"INSERT INTO fts_{index} (fts_{index}) VALUES ('optimize')")

    def _erase_vector(self, cur: Cursor, index: str, scope: str) -> None:
        cur.execute(f"DELETE FROM vec_{index} WHERE scope = ?", (scope,))

    def _after_erase(self) -> None:
        if self.path == ":memory:":
            return
        with self._lock:
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _integrity(self, cur: Cursor) -> list[str]:
        cur.execute("PRAGMA integrity_check")
        result = [str(r[0]) for r in cur.fetchall()]
        return [] if result == ["ok"] else [f"integrity_check: {'; '.join(result)}"]

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                with contextlib.suppress(Exception):  # statistics are an optimisation only
                    self._conn.execute("PRAGMA optimize")
                self._conn.close()
