"""The SQLite backend: the embedded default.

One file in WAL mode; writers serialise on ``BEGIN IMMEDIATE`` with a busy timeout, so many
processes can append to the same file safely while readers never block. ``seq`` is an
``AUTOINCREMENT`` key: strictly increasing and never reused. Full-text search is FTS5 with
each scope a rowid range (:mod:`veil.tape.sqlite_text`); vectors live in a plain table and are
searched through in-process indexes (exact, or projected candidates ranked exactly), persisted as
sidecar files (:mod:`veil.tape.sqlite_vectors`); no SQLite extension is loaded.

Durability: ``synchronous=FULL`` by default — a write acknowledged by ``append`` survives a
process crash and a power loss. ``?synchronous=normal`` in the URL trades the power-loss
guarantee for speed (still safe against process crashes).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Generator, Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlparse

from veil.clock import Clock
from veil.embed.protocol import Embedder, Vectors
from veil.redaction import RedactionConfig
from veil.tape import sqlite_text
from veil.tape.events import Event, Sealed, new_id
from veil.tape.migrations import Migration
from veil.tape.projection import Hit, Table
from veil.tape.sql import SqlStore
from veil.tape.sql_tape import Cursor
from veil.tape.sqlite_driver import connect, driver
from veil.tape.store import Dialect, ErasureReceipt, StoreUnreadable

if TYPE_CHECKING:
    from veil.tape.sqlite_vectors import SQLiteVectors
from veil.tape.vector_config import VectorIndexConfig

_TYPES = {
    "text": "TEXT",
    "int": "INTEGER",
    "real": "REAL",
    "json": "TEXT",
    "time": "TEXT",
    "bool": "INTEGER",
}


_CACHE_PAGES = -65536  # negative: KiB, so 64 MiB


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


_UNREADABLE = {3: "not permitted", 11: "corrupt", 14: "cannot be opened", 26: "not a database"}
"""SQLite's primary result codes that mean the file cannot serve as a store (PERM, CORRUPT,
CANTOPEN, NOTADB), with how the message says it."""


def _unreadable(path: str, exc: Exception) -> StoreUnreadable | None:
    """The :class:`StoreUnreadable` ``exc`` means for the store at ``path``, or None when it is
    something else (a locked database, a full disk: the caller re-raises it)."""
    code = getattr(exc, "sqlite_errorcode", None)
    what = _UNREADABLE.get(code & 0xFF) if isinstance(code, int) else None
    if what is None:
        return None
    where = Path(path)
    if where.is_dir():
        return StoreUnreadable(
            path, f"{path} is a directory, not a Veil store: move it aside and run again"
        )
    if what in ("not permitted", "cannot be opened"):
        return StoreUnreadable(
            path, f"cannot open the store {path} ({exc}): check its permissions and its directory's"
        )
    return StoreUnreadable(
        path,
        f"{path} is not a readable Veil store ({what}: {exc}): move it aside (Veil then starts "
        "an empty one there) or restore it from a backup",
    )


class SQLiteStore(SqlStore):
    """The embedded store. ``path`` may be ``":memory:"`` for throwaway use."""

    dialect: Dialect = "sqlite"
    COLUMN_TYPES = _TYPES
    MIGRATIONS = MIGRATIONS
    INDEX_LAYOUT = 2  # 2: FTS5 scoped by rowid range; vectors in a plain table

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        synchronous: Literal["full", "normal"] = "full",
        busy_timeout_s: float = 30.0,
        vector_index: VectorIndexConfig | None = None,
        redaction: RedactionConfig | None = None,
    ) -> None:
        super().__init__(embedder=embedder, clock=clock, redaction=redaction)
        self.path = str(path)
        self._commits = 0
        self._term_counts = sqlite_text.TermCounts()
        self._vector_config = vector_index or VectorIndexConfig()
        self._vector_indexes: SQLiteVectors | None = None
        self.url = f"sqlite:///{self.path}"
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._conn: Any = connect(self.path, timeout_s=busy_timeout_s)
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            # 64 MiB of page cache (the default is 2 MiB): large scopes' indexes stay in memory.
            self._conn.execute(f"PRAGMA cache_size = {_CACHE_PAGES}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            # Freed content is overwritten, so an erased scope leaves no bytes in free pages.
            self._conn.execute("PRAGMA secure_delete = ON")
            self._migrate()
        except driver().DatabaseError as exc:
            with contextlib.suppress(Exception):
                self._conn.close()
            unreadable = _unreadable(self.path, exc)
            if unreadable is None:
                raise
            raise unreadable from exc

    @property
    def _vectors(self) -> SQLiteVectors:
        """The in-process vector indexes, made on first use: a store whose projections have
        no vector index (a hook's) never imports numpy."""
        if self._vector_indexes is None:
            from veil.tape.sqlite_vectors import SQLiteVectors

            self._vector_indexes = SQLiteVectors(self.path, self._vector_config, self._embedder)
        return self._vector_indexes

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
                self._commits += 1
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

    def _json_text(self, column: str, field: str) -> str:
        return f"json_extract({column}, '$.{field}')"

    def _insert_events(self, cur: Cursor, rows: Sequence[tuple[Sealed, str]]) -> list[int]:
        """One ``executemany`` with explicit seqs: inside ``BEGIN IMMEDIATE`` this handle is
        the only writer, so the next seqs are the AUTOINCREMENT counter's next values (which
        the insert advances, so a seq is still never reused)."""
        if not rows:
            return []
        cur.execute(
            "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'tape_events'), 0),"
            " COALESCE((SELECT MAX(seq) FROM tape_events), 0))"
        )
        start = int(cur.fetchone()[0]) + 1
        seqs = list(range(start, start + len(rows)))
        cur.executemany(
            "INSERT INTO tape_events (seq, id, scope, kind, at, recorded_at, actor, payload, "
            "provenance, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(seq, *self._event_row(s, at)) for seq, (s, at) in zip(seqs, rows, strict=True)],
        )
        return seqs

    # ---- schema -------------------------------------------------------------------------

    def _text_index_ddl(self, name: str) -> list[str]:
        return sqlite_text.ddl(name)

    def _vector_index_ddl(self, name: str, dim: int) -> list[str]:
        return [
            *_vector_tables().ddl(name),
            # A new epoch: every in-process index and sidecar of the old table is stale.
            "INSERT OR REPLACE INTO tape_vector_epochs (name, epoch) "
            f"VALUES ('{name}', '{new_id('ve')}')",
        ]

    def _drop_ddl(self, kind: Literal["table", "text", "vector"], name: str) -> list[str]:
        if kind == "table":
            return [f"DROP TABLE IF EXISTS {name}"]
        if kind == "text":
            return sqlite_text.drop_ddl(name)
        return _vector_tables().drop_ddl(name)

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

    def _write_texts(self, cur: Cursor, index: str, items: Sequence[tuple[str, str, str]]) -> None:
        sqlite_text.write(cur, index, items)

    def _write_vectors(
        self, cur: Cursor, index: str, items: Sequence[tuple[int, str, str, Vectors | None]]
    ) -> None:
        _vector_tables().write(cur, index, items)

    def _search_text(
        self, cur: Cursor, index: str, scope: str, query: str, limit: int
    ) -> list[Hit]:
        return sqlite_text.search(cur, index, scope, query, limit, self._term_counts)

    def _search_vector(
        self, cur: Cursor, index: str, scope: str, vector: Vectors, limit: int
    ) -> list[Hit]:
        return self._vectors.search(cur, index, scope, vector, limit, seen=self._seen(cur))

    def _seen(self, cur: Cursor) -> tuple[int, int]:
        """What this handle has seen of the file: another connection's commit changes
        ``PRAGMA data_version``, this handle's own commits its counter."""
        cur.execute("PRAGMA data_version")
        return int(cur.fetchone()[0]), self._commits

    def _dump_text(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]:
        return sqlite_text.dump(cur, index)

    def _dump_vector(self, cur: Cursor, index: str) -> list[tuple[Any, ...]]:
        return _vector_tables().dump(cur, index)

    def _erase_text(self, cur: Cursor, index: str, scope: str) -> None:
        sqlite_text.erase(cur, index, scope)

    def _erase_vector(self, cur: Cursor, index: str, scope: str) -> None:
        _vector_tables().erase(cur, index, scope)

    def erase(self, scope: str) -> ErasureReceipt:
        receipt = super().erase(scope)
        self._vectors.forget_scope(scope)
        return receipt

    def _after_rebuild(self, vector_indexes: Sequence[str]) -> None:
        self._vectors.reset(vector_indexes)
        with self._read() as cur:
            self._vectors.sync_all(cur, vector_indexes, seen=self._seen(cur))
        self._vectors.persist(only_dirty=False)

    def bulk_append(
        self, batches: Iterable[Sequence[Event]], *, keep_recorded_at: bool = False
    ) -> int:
        """:meth:`SqlStore.bulk_append` with a 1 GiB page cache and checkpoints every 64 MiB
        of WAL for the import (a large scope's secondary indexes then stay in memory instead
        of being re-read from the file for every batch), restored afterwards."""
        with self._lock:
            self._conn.execute("PRAGMA cache_size = -1048576")
            self._conn.execute("PRAGMA wal_autocheckpoint = 16384")
        try:
            return super().bulk_append(batches, keep_recorded_at=keep_recorded_at)
        finally:
            with self._lock:
                self._conn.execute(f"PRAGMA cache_size = {_CACHE_PAGES}")
                self._conn.execute("PRAGMA wal_autocheckpoint = 1000")

    def _after_bulk(self) -> None:
        """After a successful import: the vector indexes caught up, the import's WAL folded
        back into the file (up to 64 MiB of it, which every read would otherwise look pages up
        in), and table statistics gathered now rather than at the next close — without them
        this handle plans its reads as for an empty database. ``analysis_limit`` samples each
        index, so this costs milliseconds whatever the size."""
        with self._read() as cur:
            self._vectors.sync_all(cur, self._projections.vector_indexes(), seen=self._seen(cur))
        self._vectors.persist()
        with self._lock:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.execute("PRAGMA analysis_limit = 400")
            self._conn.execute("ANALYZE")

    def _index_problems(self, cur: Cursor) -> list[str]:
        return self._vectors.problems(cur, self._projections.vector_indexes())

    def _after_erase(self, *, full: bool = False) -> None:
        """VACUUM rewrites the whole file whatever ``full`` says (secure_delete is on too)."""
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
                if self._writes and self._vector_indexes is not None:
                    self._vector_indexes.persist()
                with contextlib.suppress(Exception):  # statistics are an optimisation only
                    self._conn.execute("PRAGMA optimize")
                self._conn.close()


def _vector_tables() -> type[SQLiteVectors]:
    """The vector tables' SQL (imported where a vector index is created, written or read)."""
    from veil.tape.sqlite_vectors import SQLiteVectors

    return SQLiteVectors
