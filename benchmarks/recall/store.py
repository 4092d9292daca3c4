"""The stores the recall workload is imported into, with the raw access the floor needs, and
the import itself (:func:`populate`).

SQLite: one file in a temp dir, default ``synchronous`` (FULL), WAL. PostgreSQL 18 + pgvector:
a database of its own on :mod:`benchmarks.lib.postgres`'s server. The import goes through the
store's bulk path, ``Store.bulk_append``, in batches of :data:`~benchmarks.recall.corpus.BATCH`:
each batch is one transaction through the tape and the projections (events and rows inserted
with ``executemany``, the batch's vectors embedded in one call), then the in-process vector
indexes are built and saved as sidecar files.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.recall.corpus import SCOPE, Corpus
from veil.embed.protocol import Embedder
from veil.memory.memory import Memory
from veil.tape import Event, Store
from veil.testing import FakeClock

TOP = 50
"""The floor's full-text and vector queries return the top 50, as recall's candidate lists."""


class Backend:
    """One populated store plus the raw access the references need."""

    name: str

    def open(self, embedder: Embedder, clock: FakeClock) -> Memory:
        raise NotImplementedError

    def size_bytes(self) -> int:
        raise NotImplementedError

    def fact_vectors(self) -> NDArray[np.float32]:
        raise NotImplementedError

    def term_count(self, term: str) -> int:
        """How many fact documents contain ``term`` (its document frequency)."""
        raise NotImplementedError

    def term_fts(self, term: str) -> Callable[[], int]:
        """A zero-argument callable running one raw full-text query for the single ``term``,
        ranked, top 50; returns the hit count."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: Any = None
        self._store: Store | None = None

    def open(self, embedder: Embedder, clock: FakeClock) -> Memory:
        memory = Memory(f"sqlite:///{self.path}", embedder=embedder, clock=clock)
        self._store = memory.store
        return memory

    def _raw(self) -> Any:
        if self._conn is None:
            from veil.tape.sqlite_driver import connect

            self._conn = connect(str(self.path), timeout_s=30.0)
        return self._conn

    def size_bytes(self) -> int:
        self._raw().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )

    def fact_vectors(self) -> NDArray[np.float32]:
        rows = (
            self._raw()
            .execute(
                "SELECT embedding FROM vec_mem_facts_vec WHERE scope = ? AND embedding IS NOT NULL",
                (SCOPE,),
            )
            .fetchall()
        )
        return np.vstack([np.frombuffer(r[0], dtype=np.float32) for r in rows])

    def term_count(self, term: str) -> int:
        sql = "SELECT COUNT(*) FROM fts_mem_facts_text WHERE fts_mem_facts_text MATCH ?"
        return int(self._raw().execute(sql, (f'body : "{term}"',)).fetchone()[0])

    def term_fts(self, term: str) -> Callable[[], int]:
        conn = self._raw()
        sql = (
            "SELECT rowid FROM fts_mem_facts_text WHERE fts_mem_facts_text MATCH ? "
            "ORDER BY rank LIMIT ?"
        )
        match = f'body : "{term}"'
        return lambda: len(conn.execute(sql, (match, TOP)).fetchall())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class PostgresBackend(Backend):
    name = "postgresql"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: Any = None
        self._store: Any = None

    def open(self, embedder: Embedder, clock: FakeClock) -> Memory:
        from veil.tape.postgres import PostgresStore

        self._store = PostgresStore(self.dsn, embedder=embedder, clock=clock)
        return Memory(self._store, embedder=embedder, clock=clock)

    def _raw(self) -> Any:
        if self._conn is None:
            import psycopg

            self._conn = psycopg.connect(self.dsn, autocommit=True)
        return self._conn

    def size_bytes(self) -> int:
        return int(self._raw().execute("SELECT pg_database_size(current_database())").fetchone()[0])

    def fact_vectors(self) -> NDArray[np.float32]:
        rows = (
            self._raw()
            .execute("SELECT embedding::text FROM vec_mem_facts_vec WHERE scope = %s", (SCOPE,))
            .fetchall()
        )
        return np.vstack(
            [np.array(str(r[0]).strip("[]").split(","), dtype=np.float32) for r in rows]
        )

    def term_count(self, term: str) -> int:
        sql = (
            "SELECT COUNT(*) FROM fts_mem_facts_text "
            "WHERE scope = %s AND tsv @@ to_tsquery('english', %s)"
        )
        return int(self._raw().execute(sql, (SCOPE, term)).fetchone()[0])

    def term_fts(self, term: str) -> Callable[[], int]:
        conn = self._raw()
        sql = (
            "SELECT doc_id FROM fts_mem_facts_text, to_tsquery('english', %s) AS q "
            "WHERE scope = %s AND tsv @@ q ORDER BY ts_rank_cd(tsv, q) DESC LIMIT %s"
        )
        return lambda: len(conn.execute(sql, (term, SCOPE, TOP)).fetchall())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._store is not None:
            self._store.close()
            self._store = None


def populate(memory: Memory, corpus: Corpus) -> dict[str, Any]:
    """Import the corpus with the store's bulk path (``Store.bulk_append``: one transaction
    per batch through the tape and the projections, then the vector indexes built and saved);
    returns counts and seconds. The time the benchmark spends generating its synthetic events
    is measured apart (``generate_s``) and not counted as import time."""
    counts = {"facts": 0, "episodes": 0}
    generating = [0.0]
    t0 = time.perf_counter()
    last_print = [t0]

    def batches() -> Iterator[list[Event]]:
        source = corpus.batches()
        while True:
            g0 = time.perf_counter()
            events = next(source, None)
            generating[0] += time.perf_counter() - g0
            if events is None:
                return
            yield events
            counts["facts"] += sum(1 for e in events if e.kind == "memory.fact")
            counts["episodes"] += sum(1 for e in events if e.kind == "memory.episode")
            now = time.perf_counter()
            if now - last_print[0] > 30:
                done = counts["facts"] + counts["episodes"]
                print(f"  {done:,}/{corpus.n:,} items, {done / (now - t0):,.0f}/s", flush=True)
                last_print[0] = now

    appended = memory.store.bulk_append(batches())
    seconds = time.perf_counter() - t0 - generating[0]
    assert appended == corpus.n, (appended, corpus.n)
    return {
        **counts,
        "seconds": round(seconds, 2),
        "generate_s": round(generating[0], 2),
        "items_per_s": round(corpus.n / seconds, 1),
    }
