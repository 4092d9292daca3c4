"""The in-process vector index of one (index, scope): exact below a size, HNSW above.

A :class:`ScopeVectors` holds one scope's vectors of one vector index, L2-normalised, in a
float32 matrix that grows geometrically; each document occupies a position that is never
reused while the index lives (an update of a document moves it to a new position). Below
:attr:`VectorIndexConfig.exact_below` live vectors a query is one matrix-vector product and a
partial sort (exact); at or above it an HNSW graph (``usearch``, cosine, float32) over the same
positions answers instead, with ``expansion_search`` chosen so that recall@50 against the exact
search stays at or above 0.98 (``tests/tape/test_vectors.py``). The graph is dropped again when
the index shrinks below half the threshold.

It is a projection of a projection: the store's plain vector table is the truth, and this
index is rebuilt from it (or from its sidecar, :mod:`veil.tape.sidecar`) whenever in doubt.
``watermark`` is the highest tape ``seq`` of a table row it has applied.

Thread-safe: every public method takes the index's lock, so concurrent searches and updates
from many threads see a consistent index.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from veil.embed.protocol import Vectors

Matrix = NDArray[np.float32]


@dataclass(frozen=True)
class VectorIndexConfig:
    """Sizes and HNSW parameters of the in-process vector indexes (SQLite backend)."""

    exact_below: int = 20_000
    """Live vectors below which a scope is searched exactly (numpy); at or above, HNSW."""
    connectivity: int = 16
    """HNSW edges per node (``M``)."""
    expansion_add: int = 128
    """HNSW build-time search depth (``efConstruction``)."""
    expansion_search: int = 200
    """HNSW query-time search depth (``ef``); a query for ``k`` uses ``max(this, 2k)``."""
    persist_at_least: int = 2_000
    """Only indexes with at least this many live vectors are kept as sidecar files."""
    threads: int = 0
    """Threads for building the graph (0: every CPU)."""

    def __post_init__(self) -> None:
        for name in ("exact_below", "connectivity", "expansion_add", "expansion_search"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"VectorIndexConfig.{name} must be at least 1")
        if self.persist_at_least < 0 or self.threads < 0:
            raise ValueError("VectorIndexConfig.persist_at_least and threads must be >= 0")


@dataclass(frozen=True)
class Snapshot:
    """Everything a :class:`ScopeVectors` needs to be restored: what a sidecar stores."""

    dim: int
    watermark: int
    ids: tuple[str | None, ...]
    """The document at each position (``None``: a dead position)."""
    matrix: Matrix
    """``len(ids)`` rows, L2-normalised."""
    graph: bytes | None
    """The serialised HNSW graph over the live positions, when the index had one."""


def normalised(vectors: Vectors) -> Matrix:
    """Rows scaled to unit length (zero rows stay zero)."""
    m = np.asarray(vectors, dtype=np.float32)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)


class ScopeVectors:
    """One scope's vectors of one index; see the module docstring for the contract."""

    def __init__(self, dim: int, config: VectorIndexConfig, *, watermark: int = 0) -> None:
        if dim < 1:
            raise ValueError("dim must be at least 1")
        self.dim = dim
        self.config = config
        self.watermark = watermark
        self.dirty = False
        """Changed since it was built, loaded or saved (so a sidecar would be stale)."""
        self._lock = threading.RLock()
        self._matrix: Matrix = np.zeros((64, dim), dtype=np.float32)
        self._ids: list[str | None] = []
        self._live: NDArray[np.bool_] = np.zeros(64, dtype=np.bool_)
        self._where: dict[str, int] = {}
        self._graph: Any = None

    # ---- state --------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._where)

    @property
    def approximate(self) -> bool:
        """True while queries are answered by the HNSW graph."""
        with self._lock:
            return self._graph is not None

    def vectors(self) -> dict[str, Matrix]:
        """Every live document's stored (normalised) vector, for comparisons."""
        with self._lock:
            return {doc: self._matrix[pos] for doc, pos in self._where.items()}

    def graph_problems(self) -> list[str]:
        """Ways the HNSW graph disagrees with the live positions (empty when it agrees)."""
        with self._lock:
            graph = self._graph
            if graph is None:
                return []
            problems: list[str] = []
            if len(graph) != len(self._where):
                problems.append(f"graph holds {len(graph)} vectors, the index {len(self._where)}")
            missing = sum(1 for pos in self._where.values() if not graph.contains(pos))
            if missing:
                problems.append(f"{missing} live vectors are missing from the graph")
            return problems

    def snapshot(self) -> Snapshot:
        with self._lock:
            n = len(self._ids)
            graph = None if self._graph is None else bytes(self._graph.save())
            return Snapshot(
                self.dim, self.watermark, tuple(self._ids), self._matrix[:n].copy(), graph
            )

    @classmethod
    def restore(cls, snapshot: Snapshot, config: VectorIndexConfig) -> ScopeVectors:
        """The index a :meth:`snapshot` was taken of (the graph is rebuilt if it is absent
        and needed, or if it does not match the positions)."""
        index = cls(snapshot.dim, config, watermark=snapshot.watermark)
        n = len(snapshot.ids)
        if snapshot.matrix.shape != (n, snapshot.dim):
            raise ValueError("snapshot matrix does not match its ids")
        index._grow(n)
        index._matrix[:n] = snapshot.matrix
        index._ids = list(snapshot.ids)
        for pos, doc in enumerate(snapshot.ids):
            if doc is not None:
                index._live[pos] = True
                index._where[doc] = pos
        if snapshot.graph is not None and len(index._where) >= config.exact_below // 2:
            graph = _restore_graph(snapshot.graph)
            index._graph = graph
            if index.graph_problems():
                index._graph = None
        index._fit_mode()
        index.dirty = False
        return index

    # ---- updates ------------------------------------------------------------------------

    def apply(
        self,
        doc_ids: Sequence[str],
        vectors: Sequence[Vectors | None] | Matrix,
        watermark: int,
    ) -> None:
        """Set each document's vector (``None``, or a zero vector, removes it), in order;
        then record ``watermark`` (the highest tape seq now reflected)."""
        with self._lock:
            if len(doc_ids) != len(vectors):
                raise ValueError("doc_ids and vectors differ in length")
            last: dict[str, Vectors | None] = {}
            for doc, vector in zip(doc_ids, vectors, strict=True):
                last.pop(doc, None)  # only the last value of a document counts
                last[doc] = vector
            removed: list[int] = []
            kept: list[str] = []
            raw: list[Vectors] = []
            for doc, vector in last.items():
                old = self._where.pop(doc, None)
                if old is not None:
                    self._live[old] = False
                    self._ids[old] = None
                    removed.append(old)
                if vector is not None:
                    kept.append(doc)
                    raw.append(vector)
            added_docs: list[str] = []
            rows: Matrix = np.zeros((0, self.dim), dtype=np.float32)
            if raw:
                stacked = normalised(np.vstack([np.asarray(v, dtype=np.float32) for v in raw]))
                if stacked.shape[1] != self.dim:
                    raise ValueError(f"vector has dim {stacked.shape[1]}, expected {self.dim}")
                nonzero = np.flatnonzero(stacked.any(axis=1))
                rows = stacked[nonzero]
                added_docs = [kept[i] for i in nonzero.tolist()]
            start = len(self._ids)
            if added_docs:
                self._grow(start + len(added_docs))
                self._matrix[start : start + len(added_docs)] = rows
                for offset, doc in enumerate(added_docs):
                    self._ids.append(doc)
                    self._live[start + offset] = True
                    self._where[doc] = start + offset
            if self._graph is not None:
                gone = [p for p in removed if self._graph.contains(p)]
                if gone:
                    self._graph.remove(np.asarray(gone, dtype=np.uint64))
                fresh = [p for p in range(start, len(self._ids)) if self._live[p]]
                if fresh:
                    keys = np.asarray(fresh, dtype=np.uint64)
                    self._graph.add(keys, self._matrix[fresh], threads=self._threads())
            self.watermark = max(self.watermark, watermark)
            if added_docs or removed:
                self.dirty = True
                self._fit_mode()

    # ---- search -------------------------------------------------------------------------

    def search(self, query: Vectors, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` live documents by cosine similarity to ``query``, best first (ties: the
        earlier position first). Exact below the threshold, HNSW at or above it."""
        with self._lock:
            live = len(self._where)
            if k <= 0 or live == 0:
                return []
            q = normalised(query)[0]
            if q.shape[0] != self.dim:
                raise ValueError(f"query has dim {q.shape[0]}, expected {self.dim}")
            if self._graph is not None:
                return self._search_graph(q, min(k, live))
            return self._search_exact(q, min(k, live))

    def search_exact(self, query: Vectors, k: int) -> list[tuple[str, float]]:
        """The exact answer whatever the mode (for recall measurements and checks)."""
        with self._lock:
            live = len(self._where)
            if k <= 0 or live == 0:
                return []
            return self._search_exact(normalised(query)[0], min(k, live))

    def _search_exact(self, q: Matrix, k: int) -> list[tuple[str, float]]:
        n = len(self._ids)
        scores = self._matrix[:n] @ q
        scores[~self._live[:n]] = -np.inf
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        order = top[np.lexsort((top, -scores[top]))]
        ids = self._ids
        positions: list[int] = order.tolist()
        return [(str(ids[p]), float(scores[p])) for p in positions if ids[p] is not None][:k]

    def _search_graph(self, q: Matrix, k: int) -> list[tuple[str, float]]:
        graph = self._graph
        graph.expansion_search = max(self.config.expansion_search, 2 * k)
        found = graph.search(q, k)
        keys: list[int] = np.asarray(found.keys, dtype=np.int64).tolist()
        distances: list[float] = np.asarray(found.distances, dtype=np.float64).tolist()
        out: list[tuple[str, float]] = []
        for pos, distance in zip(keys, distances, strict=True):
            doc: str | None = self._ids[pos] if 0 <= pos < len(self._ids) else None
            if doc is not None:
                out.append((doc, 1.0 - distance))
        out.sort(key=lambda hit: -hit[1])
        return out

    # ---- internals ----------------------------------------------------------------------

    def _grow(self, size: int) -> None:
        capacity = self._matrix.shape[0]
        if size <= capacity:
            return
        while capacity < size:
            capacity *= 2
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[: len(self._ids)] = self._matrix[: len(self._ids)]
        live = np.zeros(capacity, dtype=np.bool_)
        live[: len(self._ids)] = self._live[: len(self._ids)]
        self._matrix, self._live = matrix, live

    def _threads(self) -> int:
        return self.config.threads or os.cpu_count() or 1

    def _fit_mode(self) -> None:
        """Build the graph at the threshold, drop it below half of it; compact dead space."""
        live = len(self._where)
        dead = len(self._ids) - live
        if dead > 1024 and dead > live:
            self._compact()
        if self._graph is None and live >= self.config.exact_below:
            self._build_graph()
        elif self._graph is not None and live < self.config.exact_below // 2:
            self._graph = None

    def _compact(self) -> None:
        keep = [p for p in range(len(self._ids)) if self._live[p]]
        matrix = self._matrix[keep]
        ids = [self._ids[p] for p in keep]
        self._matrix = np.zeros((max(64, len(keep)), self.dim), dtype=np.float32)
        self._matrix[: len(keep)] = matrix
        capacity = int(self._matrix.shape[0])
        live: NDArray[np.bool_] = np.zeros(capacity, dtype=np.bool_)
        live[: len(keep)] = True
        self._live = live
        self._ids = ids
        self._where = {str(doc): pos for pos, doc in enumerate(ids)}
        if self._graph is not None:
            self._build_graph()

    def _build_graph(self) -> None:
        from usearch.index import Index  # pyright: ignore[reportMissingTypeStubs]

        graph: Any = Index(
            ndim=self.dim,
            metric="cos",
            dtype="f32",
            connectivity=self.config.connectivity,
            expansion_add=self.config.expansion_add,
            expansion_search=self.config.expansion_search,
        )
        positions = [p for p in range(len(self._ids)) if self._live[p]]
        if positions:
            graph.add(
                np.asarray(positions, dtype=np.uint64),
                self._matrix[positions],
                threads=self._threads(),
            )
        self._graph = graph


def _restore_graph(data: bytes) -> Any:
    from usearch.index import Index  # pyright: ignore[reportMissingTypeStubs]

    index: Any = Index
    return index.restore(bytearray(data))
