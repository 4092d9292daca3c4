"""Vector indexes of the SQLite backend: a plain table, served by in-process indexes.

The truth is a plain table per vector index, ``vec_<name> (scope, doc_id, seq, embedding)``,
written in the append transaction like every projection: ``seq`` is the tape seq of the event
that last wrote the row, and a removed document keeps its row with a NULL embedding (a
tombstone), so "what changed since seq W" is one indexed range read. ``tape_vector_epochs``
holds a token per index that is renewed whenever its table is (re)created, so a rebuild in any
process invalidates every in-process index and sidecar built before it.

Queries are answered by a :class:`~veil.tape.vectors.ScopeVectors` per (index, scope), kept in
this process and caught up before each search: when neither ``PRAGMA data_version`` (another
connection committed) nor this handle's own commit counter moved since the last search, no SQL
runs at all; otherwise the rows with ``seq`` above the index's watermark are applied, and a new
erasure receipt for the scope or a new epoch resets it. An index with at least
``persist_at_least`` vectors is saved as a sidecar (:mod:`veil.tape.sidecar`) when the store
closes, after a bulk import and after a rebuild, and loaded (then caught up) the next time the
scope is searched, so a large scope is not re-read from its table on every start.

Why not sqlite-vec (``python -m benchmarks.vector_search``, the same rows in one run): its best
search, a ``vec0`` table partitioned by scope, is exact like this index below 20,000 vectors
and has the same recall@10 above it, but a warm query takes several times as long (10 to 15x
at 50,000 vectors in a scope) and it needs a second copy of every vector, written on every
append. It answers a fresh handle's first query sooner, since it has no index to load; a
handle pays that back within a few dozen searches of the scope (fewer the larger it is).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from veil.embed.protocol import Embedder, Vectors
from veil.tape import sidecar
from veil.tape.projection import Hit
from veil.tape.vectors import ScopeVectors, VectorIndexConfig, normalised

_CHUNK = 20_000


@dataclass
class _Entry:
    """One in-process index and what it was last caught up against."""

    vectors: ScopeVectors
    epoch: str
    erasures: int
    seen: Hashable = None


class SQLiteVectors:
    """The vector indexes of one SQLite store handle. Methods taking a cursor run inside the
    store's transaction (its lock held); the registry has its own lock."""

    def __init__(self, db_path: str, config: VectorIndexConfig, embedder: Embedder | None) -> None:
        self.config = config
        self._embedder = embedder
        self.root = sidecar.root_of(db_path)
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.RLock()

    # ---- schema -------------------------------------------------------------------------

    @staticmethod
    def ddl(name: str) -> list[str]:
        return [
            f"CREATE TABLE IF NOT EXISTS vec_{name} (scope TEXT NOT NULL, doc_id TEXT NOT NULL, "
            "seq INTEGER NOT NULL, embedding BLOB, UNIQUE (scope, doc_id))",
            f"CREATE INDEX IF NOT EXISTS vec_{name}_seq ON vec_{name} (scope, seq)",
            "CREATE TABLE IF NOT EXISTS tape_vector_epochs (name TEXT PRIMARY KEY, "
            "epoch TEXT NOT NULL)",
        ]

    @staticmethod
    def drop_ddl(name: str) -> list[str]:
        return [f"DROP TABLE IF EXISTS vec_{name}"]

    # ---- writes (inside the append transaction) -----------------------------------------

    @staticmethod
    def write(cur: Any, index: str, items: Sequence[tuple[int, str, str, Vectors | None]]) -> None:
        """Upsert ``(seq, scope, doc_id, vector)`` in order; ``None`` turns an existing row
        into a tombstone (NULL embedding) stamped with ``seq``. Runs of upserts are one
        ``executemany``."""
        upsert = (
            f"INSERT INTO vec_{index} (scope, doc_id, seq, embedding) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, doc_id) DO UPDATE SET seq = excluded.seq, "
            "embedding = excluded.embedding"
        )
        tombstone = (
            f"UPDATE vec_{index} SET seq = ?, embedding = NULL WHERE scope = ? AND doc_id = ?"
        )
        run: list[tuple[str, str, int, bytes]] = []
        for seq, scope, doc_id, vector in items:
            if vector is not None:
                run.append((scope, doc_id, seq, np.asarray(vector, dtype=np.float32).tobytes()))
                continue
            if run:
                cur.executemany(upsert, run)
                run = []
            cur.execute(tombstone, (seq, scope, doc_id))
        if run:
            cur.executemany(upsert, run)

    @staticmethod
    def erase(cur: Any, index: str, scope: str) -> None:
        cur.execute(f"DELETE FROM vec_{index} WHERE scope = ?", (scope,))

    @staticmethod
    def dump(cur: Any, index: str) -> list[tuple[Any, ...]]:
        cur.execute(f"SELECT scope, doc_id, embedding FROM vec_{index} WHERE embedding IS NOT NULL")
        return [
            (r[0], r[1], tuple(np.round(np.frombuffer(r[2], dtype=np.float32), 5).tolist()))
            for r in cur.fetchall()
        ]

    # ---- reads --------------------------------------------------------------------------

    def search(
        self,
        cur: Any,
        index: str,
        scope: str,
        vector: Vectors,
        limit: int,
        *,
        seen: Hashable,
    ) -> list[Hit]:
        """The ``limit`` nearest documents of ``scope`` by cosine, from the in-process index
        caught up to what ``cur`` sees (``seen`` identifies that state)."""
        entry = self.sync(cur, index, scope, seen=seen)
        return [Hit(doc, score) for doc, score in entry.vectors.search(vector, limit)]

    def sync(self, cur: Any, index: str, scope: str, *, seen: Hashable) -> _Entry:
        """The entry of (index, scope), caught up to what ``cur`` sees."""
        with self._lock:
            entry = self._entries.get((index, scope))
            if entry is not None and seen is not None and entry.seen == seen:
                return entry
            epoch = _epoch(cur, index)
            erasures = _erasure_head(cur)
            if entry is not None and (
                entry.epoch != epoch or _erased_since(cur, scope, entry.erasures)
            ):
                entry = None
            if entry is None:
                entry = self._open(cur, index, scope, epoch, erasures)
                self._entries[(index, scope)] = entry
            entry.erasures = erasures
            _catch_up(cur, index, scope, entry.vectors)
            entry.seen = seen
            return entry

    def _open(
        self,
        cur: Any,
        index: str,
        scope: str,
        epoch: str,
        erasures: int,
    ) -> _Entry:
        """A sidecar if a valid one exists (caught up by the caller), else an empty index."""
        embedder, dim = self._identity
        if self.root is not None:
            path = sidecar.path_of(self.root, index, scope)
            found = sidecar.read_header(path)
            if found is not None and not _erased_since(cur, scope, found[0].erasures):
                snapshot = sidecar.load(path, sidecar.Header(epoch, 0, embedder, dim))
                if snapshot is not None:
                    vectors = ScopeVectors.restore(snapshot, self.config)
                    return _Entry(vectors, epoch, erasures)
        return _Entry(ScopeVectors(dim, self.config), epoch, erasures)

    # ---- lifecycle ----------------------------------------------------------------------

    def forget_scope(self, scope: str) -> None:
        """After an erasure commits: drop the scope's indexes and delete its sidecars."""
        with self._lock:
            for key in [k for k in self._entries if k[1] == scope]:
                del self._entries[key]
            if self.root is not None and self.root.is_dir():
                name = f"{sidecar.scope_hash(scope)}.npz"
                for folder in self.root.iterdir():
                    sidecar.remove(folder / name)

    def reset(self, indexes: Sequence[str]) -> None:
        """After a rebuild commits: every in-process index and sidecar is stale."""
        with self._lock:
            self._entries.clear()
            if self.root is not None:
                for index in indexes:
                    sidecar.remove_index(self.root, index)

    def persist(self, *, only_dirty: bool = True) -> int:
        """Save every index with at least ``persist_at_least`` vectors as a sidecar (only
        those changed since they were loaded or saved, unless ``only_dirty`` is false);
        returns how many files were written."""
        if self.root is None:
            return 0
        written = 0
        with self._lock:
            for (index, scope), entry in self._entries.items():
                vectors = entry.vectors
                if len(vectors) < max(1, self.config.persist_at_least):
                    continue
                if only_dirty and not vectors.dirty:
                    continue
                header = sidecar.Header(entry.epoch, entry.erasures, *self._identity)
                sidecar.save(sidecar.path_of(self.root, index, scope), header, vectors.snapshot())
                vectors.dirty = False
                written += 1
        return written

    @property
    def _identity(self) -> tuple[str, int]:
        """The embedder whose vectors these are (recorded in sidecar headers)."""
        if self._embedder is None:
            return ("", 0)
        return (self._embedder.name, self._embedder.dim)

    def sync_all(self, cur: Any, indexes: Sequence[str], *, seen: Hashable) -> None:
        """Bring the index of every (index, scope) with vectors up to date (bulk import,
        rebuild), so the next search does not pay for building it."""
        for index in indexes:
            cur.execute(
                f"SELECT scope, COUNT(*) FROM vec_{index} WHERE embedding IS NOT NULL "
                "GROUP BY scope"
            )
            for scope, count in cur.fetchall():
                if int(count) >= max(1, self.config.persist_at_least):
                    self.sync(cur, index, str(scope), seen=seen)

    # ---- checks -------------------------------------------------------------------------

    def problems(self, cur: Any, indexes: Sequence[str]) -> list[str]:
        """Ways the in-process indexes and the sidecar files disagree with the vector tables.
        Reads only (an in-process index may be caught up; no file is written)."""
        out: list[str] = []
        embedder, dim = self._identity
        for index in indexes:
            cur.execute(f"SELECT DISTINCT scope FROM vec_{index}")
            scopes = {sidecar.scope_hash(str(r[0])): str(r[0]) for r in cur.fetchall()}
            epoch = _epoch(cur, index)
            with self._lock:
                entries = [(s, e) for (i, s), e in self._entries.items() if i == index]
            for scope, entry in entries:
                self.sync(cur, index, scope, seen=None)
                where = f"the in-process index {index} of scope #{sidecar.scope_hash(scope)[:8]}"
                out.extend(f"{where}: {p}" for p in _differences(cur, index, scope, entry.vectors))
            if self.root is None:
                continue
            for path in sidecar.files(self.root, index):
                where = f"sidecar {path.name} of {index}"
                scope = scopes.get(path.stem)
                if scope is None:
                    out.append(f"{where}: no scope of this store has vectors under it")
                    continue
                snapshot = sidecar.load(path, sidecar.Header(epoch, 0, embedder, dim))
                if snapshot is None:
                    continue  # stale (older epoch or embedder): ignored by every reader
                restored = ScopeVectors.restore(snapshot, self.config)
                _catch_up(cur, index, scope, restored)
                out.extend(f"{where}: {p}" for p in _differences(cur, index, scope, restored))
        return out


def _epoch(cur: Any, index: str) -> str:
    cur.execute("SELECT epoch FROM tape_vector_epochs WHERE name = ?", (index,))
    row = cur.fetchone()
    return "" if row is None else str(row[0])


def _erasure_head(cur: Any) -> int:
    cur.execute("SELECT COALESCE(MAX(rowid), 0) FROM tape_erasures")
    return int(cur.fetchone()[0])


def _erased_since(cur: Any, scope: str, after: int) -> bool:
    """Whether a receipt newer than ``after`` is the erasure of ``scope`` (receipts hash the
    scope with their own id, so this is the only way to tell)."""
    cur.execute("SELECT id, scope_hash FROM tape_erasures WHERE rowid > ?", (after,))
    return any(
        hashlib.sha256(f"{rid}:{scope}".encode()).hexdigest() == str(digest)
        for rid, digest in cur.fetchall()
    )


def _catch_up(cur: Any, index: str, scope: str, vectors: ScopeVectors) -> None:
    """Apply the table rows of ``scope`` with ``seq`` above the index's watermark."""
    cur.execute(
        f"SELECT doc_id, seq, embedding FROM vec_{index} WHERE scope = ? AND seq > ? ORDER BY seq",
        (scope, vectors.watermark),
    )
    while True:
        rows = cur.fetchmany(_CHUNK)
        if not rows:
            return
        docs = [str(r[0]) for r in rows]
        found = [None if r[2] is None else np.frombuffer(r[2], dtype=np.float32) for r in rows]
        vectors.apply(docs, found, watermark=int(rows[-1][1]))


def _differences(cur: Any, index: str, scope: str, vectors: ScopeVectors) -> list[str]:
    cur.execute(
        f"SELECT doc_id, embedding FROM vec_{index} WHERE scope = ? AND embedding IS NOT NULL",
        (scope,),
    )
    table: dict[str, Any] = {}
    for doc, blob in cur.fetchall():
        row = normalised(np.frombuffer(blob, dtype=np.float32))[0]
        if row.any():
            table[str(doc)] = row
    held = vectors.vectors()
    problems: list[str] = []
    missing = len(set(table) - set(held))
    extra = len(set(held) - set(table))
    differ = sum(
        1 for doc in set(table) & set(held) if not np.allclose(table[doc], held[doc], atol=1e-5)
    )
    if missing or extra or differ:
        problems.append(f"{missing} vectors missing, {extra} not in the table, {differ} different")
    problems.extend(vectors.projection_problems())
    return problems


__all__ = ["SQLiteVectors"]
