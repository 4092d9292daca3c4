"""Run every benchmark, then render ``docs/benchmarks.md`` (this is what ``make bench`` runs).

Run from the repository root::

    python -m benchmarks.run            # full runs (minutes)
    python -m benchmarks.run --quick    # quick runs (seconds); results go to NAME-quick.json

Each benchmark in :data:`BENCHMARKS` is a module ``benchmarks.NAME`` with ``main(argv)`` that
writes ``benchmarks/results/NAME.json`` (``NAME-quick.json`` with ``--quick``). Each runs in its
own subprocess — ``python -m benchmarks.NAME [--quick]``, exactly the documented command — so
one benchmark's imports, caches and memory do not influence another's timings. The report is
rendered even when a benchmark fails (from whatever results exist); the exit code is then 1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from benchmarks.lib.paths import REPO, shown
from benchmarks.lib.report import document

BENCHMARKS: tuple[str, ...] = (
    "startup",
    "embedders",
    "write_overhead",
    "recall_latency",
    "recall_profile",
    "vector_search",
    "locomo_retrieval",
    "context_overhead",
    "convergence_replay",
    "server_load",
    "eviction_replay",
    "redaction",
    "hook_latency",
    "proxy_overhead",
    "proxy_fuzz",
)
"""Modules of ``benchmarks/`` that define ``main(argv)`` and are run by ``make bench``."""
EXPLICIT: tuple[str, ...] = ("soak", "real_model", "proxy_peers", "ab")
"""Benchmarks too long for ``make bench``, needing a real model, or a peer from PyPI, or
running the real agents (``ab``: Veil on, off and in shadow on your own key, docs/ab.md) — run
them by hand; the report still shows those it has a section for."""


def command(name: str, *, quick: bool) -> list[str]:
    return [sys.executable, "-m", f"benchmarks.{name}", *(["--quick"] if quick else [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run all benchmarks and render the report.")
    parser.add_argument("--quick", action="store_true", help="quick runs of every benchmark")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    failed: list[str] = []
    for name in BENCHMARKS:
        cmd = command(name, quick=quick)
        print(f"\n=== {' '.join(['python', *cmd[1:]])}", flush=True)
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO, check=False)
        seconds = time.perf_counter() - t0
        print(f"=== {name}: exit {done.returncode} in {seconds:.1f} s", flush=True)
        if done.returncode != 0:
            failed.append(name)
    print(f"\nwrote {shown(document.write())}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
