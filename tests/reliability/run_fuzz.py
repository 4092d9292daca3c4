"""Bounded-time coverage-guided fuzzing of the three untrusted-text parsers with atheris.

Run from the repository root::

    python -m tests.reliability.run_fuzz                       # 300 s per target (the full run)
    python -m tests.reliability.run_fuzz --seconds 20          # a short run
    python -m tests.reliability.run_fuzz --runs 5000 --targets extraction,fingerprint
    python -m tests.reliability.run_fuzz --keep /tmp/fuzz      # keep corpora and failing inputs

The targets and what counts as a failure are in ``tests/reliability/fuzz_targets.py``
(docs/reliability.md, "Fuzzing"). Each target runs in its own subprocess (``--child``: atheris
instruments ``veil`` at import, then libFuzzer mutates the seed corpus for the time or run
budget). A failing input does not stop the run: the harness records every distinct failure with
its smallest input, so the figures say how many distinct failures a run found. A hang past
libFuzzer's ``-timeout`` or a crash of the interpreter itself ends the child and is counted too.

Results (runs, seconds, exec/s, corpus, coverage, failures with their inputs) are printed as a
table and written as JSON to ``benchmarks/results/fuzz.json`` (``--out``; ``--out -`` writes
nothing). The exit code is 1 when any target failed.

This module imports no ``veil`` code at the top level: the child must import it inside
``atheris.instrument_imports`` for coverage feedback.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "fuzz.json"
TARGET_NAMES = ("extraction", "fingerprint", "importer")
DEFAULT_SECONDS = 300
TIMEOUT_S = 60
"""libFuzzer's per-input timeout: an input still running after this is a hang (the child dies)."""
ARTIFACTS = ("crash-", "timeout-", "oom-", "leak-", "slow-unit-")


def child(argv: list[str]) -> None:
    """``--child TARGET WORKDIR SLOW_S [libFuzzer flags…]``: seed the corpus, fuzz."""
    name, workdir, slow_s, *flags = argv
    atheris: Any = importlib.import_module("atheris")  # its native API has no type information

    # No "RegEx" hook: its proxy of a compiled pattern takes no position argument
    # (``pattern.match(text, pos)``), which the redactor's scanners use on every text.
    atheris.enabled_hooks.add("str")
    with atheris.instrument_imports(include=["veil"]):
        from tests.reliability import fuzz_targets

    target = fuzz_targets.TARGETS[name]
    work = Path(workdir)
    corpus = work / "corpus"
    if not corpus.exists():
        seeds = fuzz_targets.write_seeds(target, corpus, work)
        print(f"[fuzz] {name}: {seeds} seeds", file=sys.stderr, flush=True)
    harness = fuzz_targets.Harness(target, work, slow_s=float(slow_s) or None)
    harness.save()
    atheris.Setup(
        [sys.argv[0], f"-max_len={target.max_len}", *flags, str(corpus)],
        harness,
    )
    atheris.Fuzz()


def _last_int(pattern: str, text: str) -> int | None:
    found = re.findall(pattern, text)
    return int(found[-1]) if found else None


def run_target(
    name: str,
    workdir: Path,
    *,
    seconds: int | None = None,
    runs: int | None = None,
    seed: int = 1,
    slow_s: float | None = None,
) -> dict[str, Any]:
    """Fuzz one target in a subprocess for ``seconds`` (or ``runs`` executions); the figures."""
    if name not in TARGET_NAMES:
        raise ValueError(f"unknown target {name!r}; targets: {', '.join(TARGET_NAMES)}")
    workdir.mkdir(parents=True, exist_ok=True)
    artifacts = workdir / "artifacts"
    artifacts.mkdir(exist_ok=True)
    flags = [
        f"-seed={seed}",
        f"-timeout={TIMEOUT_S}",
        "-rss_limit_mb=4096",
        "-print_final_stats=1",
        f"-artifact_prefix={artifacts}/",
    ]
    if seconds is not None:
        flags.append(f"-max_total_time={seconds}")
    if runs is not None:
        flags.append(f"-runs={runs}")
    cmd = [
        sys.executable,
        "-m",
        "tests.reliability.run_fuzz",
        "--child",
        name,
        str(workdir),
        str(slow_s or 0),
        *flags,
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = workdir / "fuzz.log"
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(
            cmd,
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=(seconds or 0) + 600 + TIMEOUT_S,
            check=False,
        )
    wall = time.perf_counter() - started
    text = log.read_text(errors="replace")
    status_file = workdir / "status.json"
    status: dict[str, Any] = json.loads(status_file.read_text()) if status_file.exists() else {}
    executed = _last_int(r"stat::number_of_executed_units: (\d+)", text)
    fuzz_seconds = _last_int(r"Done \d+ runs in (\d+) second", text)
    failures: list[dict[str, Any]] = []
    for entry in status.get("failures", {}).values():
        data = Path(entry["input"]).read_bytes() if Path(entry["input"]).exists() else b""
        failures.append({**entry, "input_b64": base64.b64encode(data).decode()})
    crashes = sorted(p.name for p in artifacts.iterdir() if p.name.startswith(ARTIFACTS))
    result = {
        "target": name,
        "runs": executed if executed is not None else int(status.get("runs", 0)),
        "seconds": fuzz_seconds if fuzz_seconds is not None else round(wall),
        "wall_s": round(wall, 1),
        "corpus": _last_int(r"corp: (\d+)/", text),
        "coverage": _last_int(r"cov: (\d+)", text),
        "seeds": _last_int(r"\[fuzz\] \w+: (\d+) seeds", text),
        "exit": done.returncode,
        "failures": failures,
        "crashes": crashes,
    }
    result["exec_per_s"] = round(result["runs"] / max(1, result["seconds"]), 1)
    if done.returncode != 0 and not crashes:
        result["crashes"] = [f"exit {done.returncode}: {text[-2000:]}"]
    return result


def table(results: list[dict[str, Any]]) -> str:
    rows = [
        f"{'target':<12} {'runs':>10} {'seconds':>8} {'exec/s':>8} {'corpus':>7} {'cov':>6} "
        f"{'failures':>8}"
    ]
    for r in results:
        rows.append(
            f"{r['target']:<12} {r['runs']:>10,} {r['seconds']:>8} {r['exec_per_s']:>8,.0f} "
            f"{r['corpus'] or 0:>7} {r['coverage'] or 0:>6} "
            f"{len(r['failures']) + len(r['crashes']):>8}"
        )
        for f in r["failures"]:
            rows.append(f"  - {f['key']} ×{f['count']} (smallest input {f['bytes']} bytes)")
        for c in r["crashes"]:
            rows.append(f"  - libFuzzer: {c[:200]}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=int, help=f"per target (default {DEFAULT_SECONDS})")
    parser.add_argument("--runs", type=int, help="executions per target instead of a time")
    parser.add_argument("--targets", default=",".join(TARGET_NAMES))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("VEIL_FUZZ_SEED", "1")))
    parser.add_argument("--keep", type=Path, help="keep corpora, logs and failures here")
    parser.add_argument("--out", default=str(RESULTS), help="results JSON ('-': none)")
    args = parser.parse_args(argv)
    seconds: int | None = args.seconds
    runs: int | None = args.runs
    if seconds is None and runs is None:
        seconds = DEFAULT_SECONDS
    names = [n.strip() for n in str(args.targets).split(",") if n.strip()]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="veil-fuzz-") as tmp:
        base: Path = args.keep or Path(tmp)
        for name in names:
            print(f"fuzzing {name} ({seconds} s)" if seconds else f"fuzzing {name} ({runs} runs)")
            results.append(
                run_target(name, base / name, seconds=seconds, runs=runs, seed=args.seed)
            )
    print(table(results))
    data = {
        "fuzzer": f"atheris {metadata.version('atheris')} (libFuzzer)",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "budget": {"seconds_per_target": seconds} if seconds else {"runs_per_target": runs},
        "seed": args.seed,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "targets": results,
        "total": {
            "runs": sum(r["runs"] for r in results),
            "failures": sum(len(r["failures"]) + len(r["crashes"]) for r in results),
        },
    }
    if args.out != "-":
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {out}")
    return 1 if data["total"]["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
