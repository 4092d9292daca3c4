"""k-NN search over the SQLite store's vectors: sqlite-vec against the in-process index.

Run from the repository root::

    python -m benchmarks.vector_search            # 1,000, 10,000 and 50,000 vectors, 200 queries
    python -m benchmarks.vector_search --quick    # 1,000 vectors, 20 queries

A real ``SQLiteStore`` (a file, WAL) with the real default embedder holds notes in two scopes of
N each: ``bench`` (searched) and ``other`` (only there so the scope filter has work to do). The
store writes each note's vector to its table ``vec_notes_vec (scope, doc_id, seq, embedding)``.
Over those same rows, in the same run, k=10 nearest by cosine within the scope ``bench``:

- ``in-process``: ``store.search_vector`` — what recall calls: the store's in-process index
  (exact below 20,000 live vectors, projected candidates ranked exactly above).
- ``sqlite-vec vec0``: a ``vec0`` virtual table (``scope`` a partition key, cosine metric, the
  document id an auxiliary column) filled from the store's table; ``MATCH ... AND k = 10 AND
  scope = ?``. sqlite-vec 0.1 has no approximate index: this is its best exact search.
- ``sqlite-vec scan``: ``vec_distance_cosine`` over the store's own blob column, ``WHERE scope =
  ?`` (its index), ``ORDER BY ... LIMIT 10`` — sqlite-vec without a second copy of the vectors.

Per method: p50/p95/max per query (warm: 10 unmeasured queries first), the first query on a
fresh handle (median of 3; opening it not counted: a new store, whose index is loaded from the
sidecar the import saved or, below 2,000 vectors, from the table, vs a new connection with the
extension loaded), and recall@10 against exact numpy cosine in float64 (a returned document
counts when its exact cosine is at least the 10th best's, so ties are not misses). For
``vec0``, also the time to fill it from the store's table: a second copy of every vector, which
the store would write on every append besides its own table. Also: what loading the extension
costs per connection, and the import time of each SQLite module. sqlite-vec runs on the SQLite
that can load it (stdlib ``sqlite3`` if it was built with extension loading, else ``sqlean.py``);
both are installed by ``veil[dev]`` (the store itself loads no extension).

Results are printed as a markdown table and written to ``benchmarks/results/vector_search.json``
(``vector_search-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.lib import timing
from benchmarks.lib.machine import describe, load_average
from benchmarks.lib.report.vector_search import table
from benchmarks.lib.results import save
from veil.embed import default_embedder
from veil.tape.events import Event
from veil.tape.sqlite import SQLiteStore
from veil.testing import NotesProjection, note_event

K = 10
WARMUP = 10
COLD = 3
SCOPE, OTHER = "bench", "other"
METHODS = ("in-process", "sqlite-vec vec0", "sqlite-vec scan")

_WHO = ["Alice", "Bob", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun"]
_DID = [
    "prefers", "deployed", "fixed a bug in", "reviewed", "wrote tests for", "asked about",
    "benchmarked", "migrated", "documented", "paired on", "rolled back", "profiled",
]  # fmt: skip
_WHAT = [
    "the postgres backend", "the retry policy", "the billing service", "dark mode",
    "the search index", "the login page", "the nightly backup", "the vector store",
    "the CI pipeline", "the rate limiter", "the mobile app", "the onboarding flow",
    "the cache layer", "the audit log", "the payment webhook", "the export to CSV",
]  # fmt: skip
_WHEN = [
    "on Monday", "after the outage", "before the release", "with the new intern",
    "during the offsite", "for the Berlin customer", "in the hotfix branch", "last sprint",
]  # fmt: skip


def texts(n: int, seed: int) -> list[str]:
    """``n`` template sentences (a person, an action, a thing, a moment, a ticket number)."""
    rng = np.random.default_rng(seed)
    pick = [rng.integers(len(words), size=n) for words in (_WHO, _DID, _WHAT, _WHEN)]
    tickets = rng.integers(10_000, size=n)
    return [
        f"{_WHO[a]} {_DID[b]} {_WHAT[c]} {_WHEN[d]}, ticket {t}"
        for a, b, c, d, t in zip(*(p.tolist() for p in pick), tickets.tolist(), strict=True)
    ]


def vec_module() -> Any:
    """The DB-API module whose SQLite can load extensions: stdlib ``sqlite3`` or sqlean."""
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    import sqlean  # pyright: ignore[reportMissingTypeStubs]

    return sqlean


def vec_connect(path: str) -> Any:
    """A connection with sqlite-vec loaded."""
    import sqlite_vec  # pyright: ignore[reportMissingTypeStubs]

    conn: Any = vec_module().connect(path, isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    return conn


def open_store(path: Path) -> SQLiteStore:
    store = SQLiteStore(path, embedder=default_embedder(), synchronous="normal")
    store.register(NotesProjection())
    return store


def populate(store: SQLiteStore, n: int) -> float:
    def batch(scope: str, seed: int) -> list[Event]:
        return [
            note_event(scope, "note.added", note=f"n{i}", title="", body=body)
            for i, body in enumerate(texts(n, seed))
        ]

    t0 = time.perf_counter()
    store.bulk_append([batch(SCOPE, 1), batch(OTHER, 2)])
    return time.perf_counter() - t0


def exact_top(matrix: NDArray[np.float64], ids: list[str], q: NDArray[np.float64]) -> Any:
    scores = matrix @ (q / np.linalg.norm(q))
    return dict(zip(ids, scores.tolist(), strict=True)), float(np.sort(scores)[-K])


def summary(ms: list[float]) -> dict[str, float]:
    """p50, p95, max (not rounded) and n of per-query milliseconds."""
    return timing.summary(ms, ("p50", "p95", "max", "n"), digits=None)


def timed(fn: Callable[[], list[str]]) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def measure(tmp: Path, n: int, queries: list[NDArray[np.float32]]) -> dict[str, Any]:
    path = tmp / f"n{n}.db"
    store = open_store(path)
    populate_s = populate(store, n)
    conn = vec_connect(str(path))
    rows = conn.execute(
        "SELECT doc_id, embedding FROM vec_notes_vec WHERE scope = ? AND embedding IS NOT NULL",
        (SCOPE,),
    ).fetchall()
    ids = [str(r[0]) for r in rows]
    matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows]).astype(np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    dim = matrix.shape[1]

    t0 = time.perf_counter()
    conn.execute(
        f"CREATE VIRTUAL TABLE knn USING vec0(scope TEXT PARTITION KEY, "
        f"embedding float[{dim}] distance_metric=cosine, +doc_id TEXT)"
    )
    conn.execute(
        "INSERT INTO knn (scope, embedding, doc_id) SELECT scope, embedding, doc_id "
        "FROM vec_notes_vec WHERE embedding IS NOT NULL"
    )
    vec0_build_s = time.perf_counter() - t0

    vec0_sql = "SELECT doc_id FROM knn WHERE embedding MATCH ? AND k = ? AND scope = ?"
    scan_sql = (
        "SELECT doc_id FROM vec_notes_vec WHERE scope = ? AND embedding IS NOT NULL "
        "ORDER BY vec_distance_cosine(embedding, ?) LIMIT ?"
    )

    def searches(db: SQLiteStore, c: Any) -> dict[str, Callable[[NDArray[np.float32]], list[str]]]:
        return {
            "in-process": lambda q: [
                h.doc_id for h in db.search_vector("notes_vec", scope=SCOPE, query=q, limit=K)
            ],
            "sqlite-vec vec0": lambda q: [
                r[0] for r in c.execute(vec0_sql, (q.tobytes(), K, SCOPE)).fetchall()
            ],
            "sqlite-vec scan": lambda q: [
                r[0] for r in c.execute(scan_sql, (SCOPE, q.tobytes(), K)).fetchall()
            ],
        }

    run = searches(store, conn)
    samples: dict[str, list[float]] = {m: [] for m in METHODS}
    recall: dict[str, list[float]] = {m: [] for m in METHODS}
    for i, q in enumerate(queries):
        truth, kth = exact_top(matrix, ids, q.astype(np.float64))
        for m in METHODS:  # interleaved, so load changes hit every method alike
            ms, got = timed(lambda m=m, q=q: run[m](q))
            if i < WARMUP:
                continue
            samples[m].append(ms)
            recall[m].append(sum(truth.get(d, -2.0) >= kth - 1e-5 for d in got) / K)

    # The first query on a fresh handle (opening it not counted; median of COLD handles): a
    # new store, whose index comes from the sidecar the closing store wrote (2,000 vectors or
    # more) or from the table, vs a new connection with the extension loaded.
    store.close()
    conn.close()
    q = queries[-1]
    cold: dict[str, list[float]] = {m: [] for m in METHODS}
    for _ in range(COLD):
        fresh = open_store(path)
        cold["in-process"].append(timed(lambda f=fresh: searches(f, None)["in-process"](q))[0])
        for m in METHODS[1:]:
            c = vec_connect(str(path))
            cold[m].append(timed(lambda m=m, c=c: searches(store, c)[m](q))[0])
            c.close()
        fresh.close()
    build = {"sqlite-vec vec0": vec0_build_s}
    return {
        "vectors": n,
        "vectors_all_scopes": 2 * n,
        "dim": dim,
        "populate_s": populate_s,
        "methods": {
            m: {
                "per_query_ms": summary(samples[m]),
                "recall_at_10": float(np.mean(recall[m])),
                "cold_first_query_ms": statistics.median(cold[m]),
                **({"build_s": build[m]} if m in build else {}),
            }
            for m in METHODS
        },
    }


def extension_cost(tmp: Path, reps: int) -> dict[str, Any]:
    """Per connection: open and close a file database, with and without loading sqlite-vec,
    on the SQLite that can load it; import times of the modules in fresh interpreters."""
    import sqlite3

    path = str(tmp / "conn.db")
    sqlite3.connect(path).close()
    module = vec_module()
    plain = module.__name__

    def plain_open() -> None:
        module.connect(path, isolation_level=None).close()

    def stdlib_open() -> None:
        sqlite3.connect(path, isolation_level=None).close()

    out: dict[str, Any] = {"driver": f"{plain} (SQLite {module.sqlite_version})"}
    for name, fn in (
        ("stdlib sqlite3 connect", stdlib_open),
        (f"{plain} connect", plain_open),
        (f"{plain} connect + load sqlite-vec", lambda: vec_connect(path).close()),
    ):
        fn()
        ms: list[float] = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t0) * 1000)
        out[name] = {"median_ms": statistics.median(ms), "n": reps}
    for mod in ("sqlite3", "sqlean"):
        us: list[int] = []
        for _ in range(3):
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", f"import {mod}"],
                capture_output=True,
                text=True,
                check=True,
            )
            last = [ln for ln in done.stderr.splitlines() if ln.rstrip().endswith(f"| {mod}")]
            us.append(int(last[-1].split("|")[1]))
        out[f"import {mod}"] = {"median_ms": statistics.median(us) / 1000, "n": 3}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", help="comma-separated vectors per scope")
    args = parser.parse_args(argv)
    sizes = (1_000,) if args.quick else (1_000, 10_000, 50_000)
    if args.sizes:
        sizes = tuple(int(s) for s in args.sizes.split(","))
    n_queries = 20 if args.quick else 200
    embedder = default_embedder()
    queries = [
        np.asarray(v, dtype=np.float32) for v in embedder.embed(texts(n_queries + WARMUP, 99))
    ]
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="veil-vector-search-") as tmp:
        results = []
        for n in sizes:
            results.append(measure(Path(tmp), n, queries))
            print(f"{n}: done", file=sys.stderr)
        extension = extension_cost(Path(tmp), 10 if args.quick else 50)
    import sqlite_vec  # pyright: ignore[reportMissingTypeStubs]

    data: dict[str, Any] = {
        "benchmark": "vector_search",
        "quick": args.quick,
        "k": K,
        "queries": n_queries,
        "warmup": WARMUP,
        "embedder": embedder.name,
        "sqlite_vec": str(sqlite_vec.__version__),  # pyright: ignore[reportUnknownMemberType]
        "load_before": load_before,
        "load_after": load_average(),
        "machine": describe(),
        "results": results,
        "extension": extension,
    }
    print(table(data))
    save(data, "vector_search", quick=args.quick, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
