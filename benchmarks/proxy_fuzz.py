"""Never break a session: a seeded fuzz through the real ``veil proxy``, longer than the one in
``make test`` (``tests/proxy/test_fuzz.py``).

Run from the repository root::

    python -m benchmarks.proxy_fuzz          # 3 seeds x 4 dialects x 300 requests; 16 x 60 at once
    python -m benchmarks.proxy_fuzz --quick  # 1 seed x 4 dialects x 30 requests, 16 x 8 at once

``veil proxy --window 12000`` (a window small enough that it evicts all along) runs as a
subprocess in front of a recording upstream on 127.0.0.1. Random valid conversations in each
wire dialect — Anthropic Messages, OpenAI Responses, Chat Completions, Gemini; parallel tool calls,
errors, images and documents in results, thinking and redacted thinking, server tools,
``cache_control`` markers, results of 10–60 KB, emoji and lone surrogates, gzip and zstd bodies,
token counts, retries and rewinds — grow request by request through it, one conversation per
seed and dialect; then sixteen conversations run at once. Every body the upstream receives is
checked against the one the client sent (:class:`benchmarks.lib.proxy_fuzz.Checker`: valid
JSON, calls paired with results, nothing changed but evicted results' content, each stub the
same in every later request, the client's bytes elsewhere); conversations run at once must not
see each other's text; the proxy's stderr must hold no traceback. Requests that went out ahead of
Veil's bookkeeping (:mod:`veil.proxy.conversation`) are counted from the proxy's own records;
the bookkeeping must have come to the bytes each was sent as (``ahead.diverged`` and
``ahead.logged`` 0: the run exits 1 otherwise).

Results: ``benchmarks/results/proxy_fuzz.json`` (``proxy_fuzz-quick.json``): per dialect the
requests, bodies checked, bodies forwarded untouched, stubs seen, results stubbed and
violations (which must be 0: the run exits 1 otherwise), with examples of any.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.lib.machine import describe, load_average, source_state
from benchmarks.lib.proxy_fuzz import (
    DIALECTS,
    ZSTD,
    RecordingUpstream,
    Run,
    VeilProxy,
    run_concurrently,
    run_sequentially,
)
from benchmarks.lib.report.proxy_fuzz import table
from benchmarks.lib.results import save

WINDOW = 12_000
FULL = {"seeds": (1, 2, 3), "requests": 300, "together": 16, "together_requests": 60}
QUICK = {"seeds": (8,), "requests": 30, "together": 16, "together_requests": 8}
TOGETHER_SEED = 7
Json = dict[str, Any]


def run(*, quick: bool) -> Json:
    size = QUICK if quick else FULL
    seeds: tuple[int, ...] = size["seeds"]
    started = time.perf_counter()
    machine = describe(load_average=load_average())
    sequential = Run()
    with RecordingUpstream() as upstream, VeilProxy(upstream.url, window=WINDOW) as proxy:
        seconds: dict[str, float] = {}
        for dialect in DIALECTS:
            t0 = time.perf_counter()
            done = run_sequentially(proxy.url, upstream, dialect, seeds, size["requests"])
            sequential.driven += done.driven
            seconds[dialect] = round(time.perf_counter() - t0, 1)
            print(f"{dialect}: {done.total().as_json(keep=3)}", flush=True)
        t0 = time.perf_counter()
        together = run_concurrently(
            proxy.url, upstream, TOGETHER_SEED, size["together"], size["together_requests"]
        )
        seconds["together"] = round(time.perf_counter() - t0, 1)
        stderr = proxy.stderr
        rss_mb = proxy.rss_mb()
    recorded = proxy.requests
    total = sequential.total()
    total.add(together.total())
    isolation = together.isolation()
    return {
        "quick": quick,
        "window": WINDOW,
        "seeds": list(seeds),
        "requests_per_conversation": size["requests"],
        "together": {
            "conversations": size["together"],
            "requests_per_conversation": size["together_requests"],
            "seed": TOGETHER_SEED,
            "by_dialect": {d: t.as_json() for d, t in together.by_dialect().items()},
            "isolation_violations": isolation,
        },
        "by_dialect": {d: t.as_json() for d, t in sequential.by_dialect().items()},
        "total": total.as_json(),
        "violations": len(total.violations) + len(isolation),
        "zstd": ZSTD,
        "ahead": {
            "recorded": len(recorded),
            "went_ahead": sum(1 for r in recorded if r.get("ahead")),
            "diverged": sum(1 for r in recorded if r.get("diverged")),
            "logged": sum(
                1
                for line in stderr.splitlines()
                if "ahead of Veil's bookkeeping" in line or "bookkeeping failed" in line
            ),
        },
        "proxy_stderr": {
            "traceback": "Traceback" in stderr,
            "lines": len(stderr.splitlines()),
            "head": stderr.splitlines()[:10],
        },
        "proxy_rss_mb": rss_mb,
        "phase_seconds": seconds,
        "machine": machine,
        "source": source_state(),
        "load_after": load_average(),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A seeded fuzz through the real veil proxy.")
    parser.add_argument("--quick", action="store_true", help="a small size (inside make test)")
    args = parser.parse_args(argv)
    data = run(quick=args.quick)
    save(data, "proxy_fuzz", quick=args.quick)
    print(table(data))
    ahead = data["ahead"]
    broken = (
        data["violations"]
        or data["proxy_stderr"]["traceback"]
        or ahead["diverged"]
        or ahead["logged"]
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
