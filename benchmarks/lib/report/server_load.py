"""The server-load section: requests/s and latency of ``veil serve`` at 1, 8 and 32 clients."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.results import Loaded


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


def section(loaded: Loaded, other: Loaded | None) -> str:
    return render_section(loaded.data)
