"""The in-process vector index of one (index, scope): exact below a size, projected above.

A :class:`ScopeVectors` holds one scope's vectors of one vector index, L2-normalised, in a
float32 matrix that grows geometrically; each document occupies a position that is never
reused while the index lives (an update moves a document to a new position; dead positions
are compacted away once they outnumber the live ones). Below
:attr:`VectorIndexConfig.exact_below` live vectors a query is one matrix-vector product and a
partial sort: exact. At or above it the index also keeps every vector projected onto the top
principal directions of the scope's vectors (enough of them to keep
:attr:`~VectorIndexConfig.energy` of the spectrum, a quarter to a half of the dimensions for
sentence embedders): a query scans the projections for its
:attr:`~VectorIndexConfig.candidates` best and ranks those exactly, so results and scores are
exact cosines and only the candidate set is approximate (recall@50 against the exact search
>= 0.98 in ``tests/tape/test_vectors.py``). The directions are fitted on a sample and refitted
whenever the index has doubled; an embedder whose spectrum is flat (no few directions carry
the energy) stays exact. Why not HNSW: see docs/architecture.md ("Vector search").

It is a projection of a projection: the store's plain vector table is the truth, and this
index is rebuilt from it (or from its sidecar, :mod:`veil.tape.sidecar`) whenever in doubt.
``watermark`` is the highest tape ``seq`` of a table row it has applied.

Thread-safe: every public method takes the index's lock, so concurrent searches and updates
from many threads see a consistent index.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from veil.embed.protocol import Vectors
from veil.tape.vector_config import VectorIndexConfig

Matrix = NDArray[np.float32]
_SAMPLE = 50_000
_SEED = 17


@dataclass(frozen=True)
class Snapshot:
    """Everything a :class:`ScopeVectors` needs to be restored: what a sidecar stores."""

    dim: int
    watermark: int
    ids: tuple[str | None, ...]
    """The document at each position (``None``: a dead position)."""
    matrix: Matrix
    """``len(ids)`` rows, L2-normalised."""
    basis: Matrix | None = None
    """``(dim, d)`` principal directions when the index was projected (``None``: exact)."""
    fitted_at: int = 0
    """Live vectors when the basis was fitted (it is refitted at twice as many)."""


_BLAS_FROM = 8_000_000
"""Matrix cells from which a matrix-vector product goes to BLAS. Below it ``einsum`` (one
thread, no BLAS) is used: a multithreaded BLAS ``gemv`` has a floor of several milliseconds
on a busy machine (its threads must be woken), far above what a small product costs."""


def _dot(matrix: Matrix, vector: Matrix) -> Matrix:
    if matrix.size >= _BLAS_FROM:
        return matrix @ vector
    return np.einsum("ij,j->i", matrix, vector)


def normalised(vectors: Vectors) -> Matrix:
    """Rows scaled to unit length (zero rows stay zero)."""
    m = np.asarray(vectors, dtype=np.float32)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)


def fit_basis(sample: Matrix, energy: float) -> Matrix | None:
    """The top principal directions (uncentred: dot products are what is kept) holding
    ``energy`` of ``sample``'s spectrum, as a ``(dim, d)`` matrix with ``d`` a multiple of 8;
    ``None`` when that takes more than half the dimensions (a flat spectrum)."""
    dim = int(sample.shape[1])
    gram = (sample.T.astype(np.float64) @ sample.astype(np.float64)) / max(1, len(sample))
    values, vectors = np.linalg.eigh(gram)
    order = np.argsort(values)[::-1]
    values, vectors = np.clip(values[order], 0.0, None), vectors[:, order]
    total = float(values.sum())
    if total <= 0.0:
        return None
    needed = int(np.searchsorted(np.cumsum(values) / total, energy)) + 1
    d = min(dim, -(-needed // 8) * 8)
    if d > dim // 2:
        return None
    basis: Matrix = np.ascontiguousarray(vectors[:, :d], dtype=np.float32)
    return basis


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
        self._basis: Matrix | None = None
        self._projected: Matrix = np.zeros((64, 0), dtype=np.float32)
        self._fitted_at = 0
        self._flat_at = 0
        """Live vectors when a fit found a flat spectrum (retried at twice as many)."""

    # ---- state --------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._where)

    @property
    def approximate(self) -> bool:
        """True while queries rank projected candidates (above the exact threshold)."""
        with self._lock:
            return self._basis is not None

    def vectors(self) -> dict[str, Matrix]:
        """Every live document's stored (normalised) vector, for comparisons."""
        with self._lock:
            return {doc: self._matrix[pos] for doc, pos in self._where.items()}

    def projection_problems(self) -> list[str]:
        """Ways the projections disagree with the vectors (empty when they agree)."""
        with self._lock:
            if self._basis is None:
                return []
            n = len(self._ids)
            live = self._live[:n]
            expected = self._matrix[:n][live] @ self._basis
            if not np.allclose(self._projected[:n][live], expected, atol=1e-4):
                return ["projected vectors differ from the vectors times the basis"]
            return []

    def snapshot(self) -> Snapshot:
        with self._lock:
            n = len(self._ids)
            basis = None if self._basis is None else self._basis.copy()
            return Snapshot(
                self.dim,
                self.watermark,
                tuple(self._ids),
                self._matrix[:n].copy(),
                basis,
                self._fitted_at,
            )

    @classmethod
    def restore(cls, snapshot: Snapshot, config: VectorIndexConfig) -> ScopeVectors:
        """The index a :meth:`snapshot` was taken of."""
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
        basis = snapshot.basis
        if basis is not None and basis.shape[0] == snapshot.dim and basis.shape[1] > 0:
            index._set_basis(np.ascontiguousarray(basis, dtype=np.float32), snapshot.fitted_at)
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
            changed = False
            kept: list[str] = []
            raw: list[Vectors] = []
            for doc, vector in last.items():
                old = self._where.pop(doc, None)
                if old is not None:
                    self._live[old] = False
                    self._ids[old] = None
                    changed = True
                if vector is not None:
                    kept.append(doc)
                    raw.append(vector)
            if raw:
                stacked = normalised(np.vstack([np.asarray(v, dtype=np.float32) for v in raw]))
                if stacked.shape[1] != self.dim:
                    raise ValueError(f"vector has dim {stacked.shape[1]}, expected {self.dim}")
                nonzero = np.flatnonzero(stacked.any(axis=1))
                if nonzero.size:
                    start = len(self._ids)
                    stop = start + int(nonzero.size)
                    self._grow(stop)
                    self._matrix[start:stop] = stacked[nonzero]
                    self._live[start:stop] = True
                    for offset, i in enumerate(nonzero.tolist()):
                        self._ids.append(kept[i])
                        self._where[kept[i]] = start + offset
                    if self._basis is not None:
                        self._projected[start:stop] = self._matrix[start:stop] @ self._basis
                    changed = True
            self.watermark = max(self.watermark, watermark)
            if changed:
                self.dirty = True
                self._fit_mode()

    # ---- search -------------------------------------------------------------------------

    def search(self, query: Vectors, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` live documents by cosine similarity to ``query``, best first (ties: the
        earlier position first). Exact below the threshold; above it, the exact ranking of
        the best projected candidates."""
        with self._lock:
            live = len(self._where)
            if k <= 0 or live == 0:
                return []
            q = self._query(query)
            n = len(self._ids)
            if self._basis is not None:
                wanted = max(self.config.candidates, 8 * k)
                if wanted < live:
                    scores = _dot(self._projected[:n], _dot(self._basis.T, q))
                    scores[~self._live[:n]] = -np.inf
                    candidates = np.argpartition(-scores, wanted - 1)[:wanted]
                    return self._ranked(candidates, _dot(self._matrix[candidates], q), k)
            return self._search_exact(q, min(k, live))

    def search_exact(self, query: Vectors, k: int) -> list[tuple[str, float]]:
        """The exact answer whatever the mode (for recall measurements and checks)."""
        with self._lock:
            live = len(self._where)
            if k <= 0 or live == 0:
                return []
            return self._search_exact(self._query(query), min(k, live))

    def _query(self, query: Vectors) -> Matrix:
        q = normalised(query)[0]
        if q.shape[0] != self.dim:
            raise ValueError(f"query has dim {q.shape[0]}, expected {self.dim}")
        return q

    def _search_exact(self, q: Matrix, k: int) -> list[tuple[str, float]]:
        n = len(self._ids)
        scores = _dot(self._matrix[:n], q)
        scores[~self._live[:n]] = -np.inf
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        return self._ranked(top, scores[top], k)

    def _ranked(
        self, positions: NDArray[np.intp], scores: NDArray[np.float32], k: int
    ) -> list[tuple[str, float]]:
        """The ``k`` best of ``positions`` by ``scores`` (ties: earlier position), live only."""
        order = np.lexsort((positions, -scores))[:k]
        ids = self._ids
        out: list[tuple[str, float]] = []
        for i in order.tolist():
            pos = int(positions[i])
            doc = ids[pos]
            if doc is not None and np.isfinite(scores[i]):
                out.append((doc, float(scores[i])))
        return out

    # ---- internals ----------------------------------------------------------------------

    def _grow(self, size: int) -> None:
        capacity = int(self._matrix.shape[0])
        if size <= capacity:
            return
        while capacity < size:
            capacity *= 2
        n = len(self._ids)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[:n] = self._matrix[:n]
        live: NDArray[np.bool_] = np.zeros(capacity, dtype=np.bool_)
        live[:n] = self._live[:n]
        projected = np.zeros((capacity, self._projected.shape[1]), dtype=np.float32)
        projected[:n] = self._projected[:n]
        self._matrix, self._live, self._projected = matrix, live, projected

    def _fit_mode(self) -> None:
        """Fit the projection at the threshold (and refit at each doubling), drop it below
        half the threshold; compact dead space."""
        live = len(self._where)
        dead = len(self._ids) - live
        if dead > 1024 and dead > live:
            self._compact()
        threshold = self.config.exact_below
        if live < threshold // 2:
            self._basis = None
            self._projected = np.zeros((self._matrix.shape[0], 0), dtype=np.float32)
            self._fitted_at = 0
            return
        if live < threshold or live < 2 * max(self._fitted_at, self._flat_at):
            return
        rng = np.random.default_rng(_SEED)
        positions = np.flatnonzero(self._live[: len(self._ids)])
        if positions.size > _SAMPLE:
            positions = np.sort(rng.choice(positions, size=_SAMPLE, replace=False))
        basis = fit_basis(self._matrix[positions], self.config.energy)
        if basis is None:
            self._flat_at = live
            return
        self._set_basis(basis, live)

    def _set_basis(self, basis: Matrix, fitted_at: int) -> None:
        n = len(self._ids)
        projected = np.zeros((self._matrix.shape[0], basis.shape[1]), dtype=np.float32)
        for start in range(0, n, 65_536):
            stop = min(n, start + 65_536)
            projected[start:stop] = self._matrix[start:stop] @ basis
        self._basis, self._projected, self._fitted_at = basis, projected, fitted_at

    def _compact(self) -> None:
        keep = np.flatnonzero(self._live[: len(self._ids)])
        count = int(keep.size)
        capacity = max(64, count)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[:count] = self._matrix[keep]
        projected = np.zeros((capacity, self._projected.shape[1]), dtype=np.float32)
        projected[:count] = self._projected[keep]
        live: NDArray[np.bool_] = np.zeros(capacity, dtype=np.bool_)
        live[:count] = True
        self._ids = [self._ids[int(p)] for p in keep]
        self._where = {str(doc): pos for pos, doc in enumerate(self._ids)}
        self._matrix, self._projected, self._live = matrix, projected, live
