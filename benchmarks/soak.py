"""Soak: a steady mixed load for a long time, watching memory (RSS) and latency for drift.

Run from the repository root::

    python -m benchmarks.soak                 # 10 minutes in-process + 10 minutes on veil serve
    python -m benchmarks.soak --quick         # 30 s + 30 s
    python -m benchmarks.soak --minutes 3     # 3 + 3
    python -m benchmarks.soak --steady        # the same with bounded data (soak-steady.json)

Phase 1 (library, one process): at a steady rate (default 20 operations/s) a mix of
``Memory.remember`` (scripted instant extraction, 2 facts), ``Memory.recall`` and a context
engine tool-call capture + step (window small enough that eviction runs continuously). Every
10 s the process RSS (``/proc/self/status``) and the p50/p95 latency of each operation in that
window are recorded. Phase 2 (server): a real ``veil serve`` subprocess with 32 client threads
sending remember/recall as fast as they can; the server's RSS (``/proc/<pid>/status``) and the
request latency per 10 s window. The report fits a least-squares line to RSS (MB/min) and to
p95 latency (ms/min) after the first minute (warm-up: caches, first page allocations) and says
whether either grows. Every window also records the database size on disk (MB), so a latency
slope can be read against the growth of the data it works over.

``--steady`` keeps the data bounded: every ``ROTATE_S`` seconds the scope is erased
(``Memory.forget`` in the library phase, ``DELETE /v1/scopes/{scope}`` with an admin key on
the server) and the context engine starts a new session, so the memory oscillates around a
fixed size instead of growing for the whole run. A leak or a drift that is not explained by
data growth shows up there; the erasure itself is timed separately (``forget``), not mixed
into the other operations' latencies. Not in ``make bench`` (too long); run it explicitly.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.lib.machine import describe
from benchmarks.lib.report.soak import render_section
from benchmarks.lib.results import save
from benchmarks.lib.serve import SCOPE, extraction, start_server
from benchmarks.lib.timing import summary

WINDOW_S = 10.0
ROTATE_S = 60.0
"""--steady: erase the scope and start a new context session this often."""


def db_mb(*paths: Path) -> float:
    """Size on disk of SQLite databases with their -wal and -shm files."""
    total = 0
    for path in paths:
        for suffix in ("", "-wal", "-shm"):
            f = Path(f"{path}{suffix}")
            if f.exists():
                total += f.stat().st_size
    return round(total / 1e6, 1)


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentiles(samples: dict[str, list[float]], key: str) -> dict[str, float]:
    """``{"<op>_<key>": value}`` (ms, two decimals) for each operation with samples."""
    return {f"{op}_{key}": summary(v, (key,), digits=2)[key] for op, v in samples.items() if v}


def slope_per_min(t: list[float], y: list[float], skip_s: float) -> float | None:
    points = [(a, b) for a, b in zip(t, y, strict=True) if a >= skip_s]
    if len(points) < 3:
        return None
    xs, ys = np.array([p[0] for p in points]) / 60.0, np.array([p[1] for p in points])
    return round(float(np.polyfit(xs, ys, 1)[0]), 3)


def library_phase(seconds: float, rate: float, work: Path, steady: bool = False) -> dict[str, Any]:
    from veil.agent.memory_tools import EXPAND_TOOL
    from veil.context import ContextConfig, ContextEngine
    from veil.embed import default_embedder
    from veil.memory import Memory
    from veil.tape.sqlite import SQLiteStore

    embedder = default_embedder()
    counter = {"n": 0}

    def complete(messages: list[dict[str, Any]], *, json_schema: Any = None) -> str:
        counter["n"] += 1
        return json.dumps(extraction(counter["n"]))

    memory = Memory(work / "soak-memory.db", complete=complete, embedder=embedder)
    stores: list[SQLiteStore] = []

    def session(n: int) -> ContextEngine:
        # A new session opens the context database afresh, as a new `veil` run would.
        if stores:
            stores.pop().close()
        store = SQLiteStore(work / "soak-context.db", embedder=embedder, synchronous="normal")
        stores.append(store)
        engine = ContextEngine(
            store,
            session_id=f"soak-{n}",
            scope=f"project:soak-{n}" if steady else "project:soak",
            embedder=embedder,
            # as a `veil` run's engine: its stubs name the harness's expand tool
            config=ContextConfig(
                window_tokens=20_000, reserve_tokens=2_000, expand_tool=EXPAND_TOOL
            ),
        )
        engine.capture_turn("user", "Keep the service healthy under load")
        return engine

    engine = session(0)
    windows: list[dict[str, Any]] = []
    lat: dict[str, list[float]] = {"remember": [], "recall": [], "capture": [], "forget": []}
    started = time.perf_counter()
    next_window = WINDOW_S
    next_rotation = ROTATE_S
    rotations = 0
    i = 0
    while (now := time.perf_counter() - started) < seconds:
        if steady and now >= next_rotation:
            t0 = time.perf_counter()
            memory.forget(SCOPE)
            lat["forget"].append((time.perf_counter() - t0) * 1000)
            rotations += 1
            engine = session(rotations)
            next_rotation += ROTATE_S
        op = ("remember", "recall", "capture")[i % 3]
        t0 = time.perf_counter()
        if op == "remember":
            memory.remember(f"Contact {i % 500} works as role {i % 37}.", user_id=SCOPE)
        elif op == "recall":
            memory.recall(f"what does contact {i % 500} do", user_id=SCOPE, token_budget=500)
        else:
            engine.capture_tool_result(
                tool_call_id=f"c{i}",
                tool_name="bash",
                arguments={"command": f"pytest -k case_{i % 97}"},
                output=f"{'.' * (i % 50)}F\n1 failed, {i % 50} passed",
            )
            engine.step()
        lat[op].append((time.perf_counter() - t0) * 1000)
        i += 1
        if now >= next_window:
            windows.append(
                {
                    "t": round(now, 1),
                    "rss_mb": round(rss_mb(), 1),
                    "db_mb": db_mb(work / "soak-memory.db", work / "soak-context.db"),
                    "ops": i,
                    **percentiles(lat, "p50"),
                    **percentiles(lat, "p95"),
                }
            )
            lat = {k: [] for k in lat}
            next_window += WINDOW_S
        sleep = (i / rate) - (time.perf_counter() - started)
        if sleep > 0:
            time.sleep(sleep)
    memory.close()
    for store in stores:
        store.close()
    name = "library, steady (scope erased every minute)" if steady else "library"
    return summarise(name, windows, ("remember", "recall", "capture"))


def server_phase(
    seconds: float, clients: int, work: Path, steady: bool = False, turns: int = 200_000
) -> dict[str, Any]:
    """``turns``: scripted extraction replies the server can give (one per remember)."""
    db_path = work / "soak-server.db"
    db = f"sqlite:///{db_path}"
    server, base, key = start_server(db, work / "soak-script.json", turns, admin=steady)
    stop = threading.Event()
    samples: list[tuple[float, str, float]] = []
    lock = threading.Lock()
    started = time.perf_counter()

    def client(c: int) -> None:
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as http:
            j = 0
            while not stop.is_set():
                op = "remember" if (c + j) % 3 == 0 else "recall"
                body: dict[str, Any] = (
                    {"text": f"Contact {j % 500} works as a role."}
                    if op == "remember"
                    else {"query": f"contact {j % 500}", "token_budget": 400}
                )
                t0 = time.perf_counter()
                http.post(f"/v1/scopes/{SCOPE}/{op}", json=body).raise_for_status()
                with lock:
                    samples.append(
                        (time.perf_counter() - started, op, (time.perf_counter() - t0) * 1000)
                    )
                j += 1

    windows: list[dict[str, Any]] = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
            futures = [pool.submit(client, c) for c in range(clients)]
            next_window = WINDOW_S
            next_rotation = ROTATE_S
            while time.perf_counter() - started < seconds:
                time.sleep(0.5)
                now = time.perf_counter() - started
                if steady and now >= next_rotation:
                    t0 = time.perf_counter()
                    httpx.delete(
                        f"{base}/v1/scopes/{SCOPE}",
                        headers={"Authorization": f"Bearer {key}"},
                        timeout=120,
                    ).raise_for_status()
                    with lock:
                        samples.append((now, "forget", (time.perf_counter() - t0) * 1000))
                    next_rotation += ROTATE_S
                if now >= next_window:
                    with lock:
                        recent = [s for s in samples if next_window - WINDOW_S <= s[0] < now]
                    row: dict[str, Any] = {
                        "t": round(now, 1),
                        "rss_mb": round(rss_mb(server.pid), 1),
                        "db_mb": db_mb(db_path),
                        "requests": len(recent),
                    }
                    ops = ("remember", "recall")
                    by_op = {op: [s[2] for s in recent if s[1] == op] for op in ops}
                    row |= percentiles(by_op, "p50") | percentiles(by_op, "p95")
                    windows.append(row)
                    next_window += WINDOW_S
            stop.set()
            for f in futures:
                f.result()
    finally:
        server.terminate()
        server.wait(timeout=30)
    name = f"server ({clients} clients" + (", steady)" if steady else ")")
    result = summarise(name, windows, ("remember", "recall"))
    result["requests"] = len(samples)
    return result


def summarise(name: str, windows: list[dict[str, Any]], ops: tuple[str, ...]) -> dict[str, Any]:
    t = [w["t"] for w in windows]
    out: dict[str, Any] = {
        "phase": name,
        "windows": windows,
        "rss_slope_mb_per_min": slope_per_min(t, [w["rss_mb"] for w in windows], 60.0),
        "db_slope_mb_per_min": slope_per_min(t, [w.get("db_mb", 0.0) for w in windows], 60.0),
    }
    for op in ops:
        ys = [w.get(f"{op}_p95") for w in windows]
        pts = [(a, b) for a, b in zip(t, ys, strict=True) if b is not None]
        out[f"{op}_p95_slope_ms_per_min"] = slope_per_min(
            [p[0] for p in pts], [p[1] for p in pts], 60.0
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Soak: steady load, RSS and latency drift.")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument(
        "--steady",
        action="store_true",
        help="run both phases with the scope erased every minute (bounded data); "
        "writes soak-steady.json",
    )
    parser.add_argument(
        "--only", choices=("library", "server"), help="run one phase (writes -<phase> results)"
    )
    args = parser.parse_args(argv)
    seconds = 30.0 if args.quick else args.minutes * 60
    started = time.perf_counter()
    phases: list[dict[str, Any]] = []
    modes = (True,) if args.steady else (False,)
    for steady in modes:
        if args.only != "server":
            with tempfile.TemporaryDirectory(prefix="veil-soak-") as tmp:
                work = Path(tmp)
                phases.append(library_phase(seconds, args.rate, work, steady=steady))
        if args.only != "library":
            with tempfile.TemporaryDirectory(prefix="veil-soak-") as tmp:
                work = Path(tmp)
                phases.append(server_phase(seconds, 32, work, steady=steady))
    data = {
        "benchmark": "soak",
        "quick": args.quick,
        "steady": args.steady,
        "seconds_per_phase": seconds,
        "total_seconds": round(time.perf_counter() - started, 1),
        "machine": describe(),
        "phases": phases,
    }
    print(render_section(data))
    name = ("soak-steady" if args.steady else "soak") + (f"-{args.only}" if args.only else "")
    save(data, name, quick=args.quick, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
