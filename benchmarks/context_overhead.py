"""Measure the context hook's overhead per tool call: capture + score + evict + render (+ persist).

Run from the repository root::

    python -m benchmarks.context_overhead            # 100, 2,000 and 20,000 items
    python -m benchmarks.context_overhead --quick    # 100 and 2,000 items, fewer calls

What is measured, exactly: a ``ContextEngine`` on a SQLite tape in a temp dir
(``synchronous=normal``: the context store is a cache of the session, see docs), the real default
embedder, a ``FakeClock``, persistence deferred as the harness runs it. The engine is filled with
N items — tool results of realistic size (reads of source files, test runs, greps; 40-400
tokens) and the assistant turns between them — and the window is set to 60% of their tokens so
eviction is active in the steady state. Then, for M measured tool calls:

- the hook: ``capture_tool_result`` + ``window`` — ``step`` (scoring every item, the three
  stages, the threshold update, the events buffered) and rendering the request's conversation
  (one entry per message: the renderer re-renders only what changed since the last request),
  as the harness runs them at each turn boundary — as wall time and as this thread's CPU time;
- the deferred work, separately: ``persist_in_background`` + ``wait`` (indexing demoted items,
  embedding them, appending the buffered events in one transaction), which the harness runs
  while the model request is in flight. It is waited for before the next call, as a model
  request of a second or more would, so it never overlaps the next hook here.

Turn captures between tool calls are not timed.

References in the same run, same N: (a) ``score_many`` alone over N items (the numpy
brute-force scorer: the physical floor of scoring everything each call), (b) the same scores
computed with the scalar ``score()`` in a plain Python loop (what the hot path would cost
without vectorising), (c) one bare ``store.append`` of one small event (the floor of
persisting anything). Ratios are Veil's hook p95 over each reference's median.

Target: hook p95 ≤ 1 ms of CPU time and ≤ 2 ms wall at 2,000 items.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.lib.machine import describe
from benchmarks.lib.report.context_overhead import profile_table, render_table
from benchmarks.lib.results import save
from benchmarks.lib.timing import MS, summary
from veil.agent.memory_tools import EXPAND_TOOL
from veil.clock import SystemClock
from veil.context import ContextConfig, ContextEngine
from veil.context.score import score, score_many
from veil.context.window import Entry
from veil.embed import default_embedder
from veil.tape import Event, new_id
from veil.tape.codec import NoPayload
from veil.tape.kinds import EventKind, register
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock

register(EventKind("bench.ping", NoPayload, extra="keep"))  # the floor: a bare append


def output_for(i: int) -> tuple[str, dict[str, Any], str]:
    kind = i % 3
    if kind == 0:
        path = f"src/pkg/module_{i % 97}.py"
        body = "\n".join(
            f"def function_{i}_{k}(arg):\n    return arg * {k}" for k in range(i % 20 + 2)
        )
        return "read", {"path": path}, body
    if kind == 1:
        return (
            "bash",
            {"command": f"pytest tests/test_{i % 53}.py -x -q"},
            f"{'.' * (i % 40)}F\nFAILED tests/test_{i % 53}.py::test_case_{i} - AssertionError\n"
            f"1 failed, {i % 40} passed in 0.{i % 90:02d}s",
        )
    return (
        "grep",
        {"pattern": f"symbol_{i % 31}", "path": "src"},
        "\n".join(f"src/pkg/module_{k}.py:{k * 7}: symbol_{i % 31}()" for k in range(i % 12 + 1)),
    )


def percentiles(samples: list[float]) -> dict[str, float]:
    """Median, p95, p99 and mean of samples in seconds, in milliseconds (four decimals)."""
    return summary(samples, ("median", "p95", "p99", "mean"), scale=MS, digits=4)


def call(engine: ContextEngine, entries: list[Entry], call_id: str, i: int) -> None:
    """One tool call as the harness makes it: the assistant entry that calls it, the result
    captured, its entry."""
    tool, args, out = output_for(i)
    entries.append(Entry("assistant", "", calls=(call_id,)))
    item = engine.capture_tool_result(
        tool_call_id=call_id, tool_name=tool, arguments=args, output=out
    )
    entries.append(Entry("tool", out, item=item.id, call_id=call_id))


def turn(engine: ContextEngine, entries: list[Entry], text: str) -> None:
    item = engine.capture_turn("assistant", text, calls=["look"])
    entries.append(Entry("assistant", text, item=item.id))


def filled_engine(
    n_items: int, workdir: Path
) -> tuple[ContextEngine, SQLiteStore, float, list[Entry]]:
    """An engine holding ``n_items`` items and the conversation they came from, its window at
    60% of their tokens (eviction active in the steady state), and how long filling it
    took."""
    embedder = default_embedder()
    clock = FakeClock()
    store = SQLiteStore(
        workdir / f"ctx-{n_items}.db", embedder=embedder, clock=clock, synchronous="normal"
    )
    engine = ContextEngine(
        store,
        session_id="bench",
        scope="project:bench",
        # the harness's engine: its stubs name the harness's expand tool
        config=ContextConfig(window_tokens=10**12, reserve_tokens=0, expand_tool=EXPAND_TOOL),
        embedder=embedder,
        clock=clock,
        deferred=True,
    )
    task = "Fix the failing tests in src/pkg and keep the API stable"
    entries = [Entry("user", task, item=engine.capture_turn("user", task).id)]
    started = time.perf_counter()
    for i in range(n_items - 1):
        if i % 4 == 3:
            turn(engine, entries, f"Looking at module_{i % 97} next")
            continue
        call(engine, entries, f"p{i}", i)
    engine.window(entries, fixed_tokens=0)
    engine.flush()
    populate_s = time.perf_counter() - started
    total = engine.live_tokens
    engine.config = replace(engine.config, window_tokens=int(total * 0.6))
    engine.window(entries, fixed_tokens=0)  # settle into the steady state
    engine.flush()
    return engine, store, populate_s, entries


def measure(n_items: int, calls: int, workdir: Path) -> dict[str, Any]:
    engine, store, populate_s, entries = filled_engine(n_items, workdir)
    samples: list[float] = []
    cpu: list[float] = []
    capture_cpu: list[float] = []
    step_cpu: list[float] = []
    deferred: list[float] = []
    evicting: list[float] = []
    moves = 0
    for j in range(calls):
        t0 = time.perf_counter()
        c0 = time.thread_time()
        call(engine, entries, f"m{j}", n_items + j)
        c1 = time.thread_time()
        report = engine.window(entries, fixed_tokens=0).report
        c2 = time.thread_time()
        cpu.append(c2 - c0)
        capture_cpu.append(c1 - c0)
        step_cpu.append(c2 - c1)
        samples.append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        engine.persist_in_background()
        engine.wait()
        deferred.append(time.perf_counter() - t1)
        moves += len(report.moves)
        if report.moves:
            evicting.append(samples[-1])
        if j % 4 == 3:
            turn(engine, entries, f"Step {j} done")
    engine.close()
    n = len(engine.items())
    # (a) numpy brute-force scorer over the same items
    c = engine.memory.working_set.cols
    vec: list[float] = []
    for _ in range(50):
        t0 = time.perf_counter()
        score_many(
            stability=c.view("stability"),
            last_tick=c.view("last_tick"),
            access=c.view("access"),
            relevance=c.view("relevance"),
            structure_signal=c.view("structure"),
            cognitive_weight=c.view("cognitive"),
            procedural=c.flag("procedural"),
            manual=c.flag("manual"),
            pinned=c.flag("pinned"),
            tick=engine.tick,
            config=engine.config,
        )
        vec.append(time.perf_counter() - t0)
    # (b) the scalar scorer in a plain loop
    items = engine.items()
    loop: list[float] = []
    for _ in range(5 if n > 5000 else 20):
        t0 = time.perf_counter()
        for it in items:
            score(it, engine.task, engine.tick, engine.config)
        loop.append(time.perf_counter() - t0)
    # (c) one bare append
    floor: list[float] = []
    for _ in range(100):
        event = Event(
            id=new_id("bp"),
            scope="bench:floor",
            kind="bench.ping",
            at=SystemClock().now(),
            actor="bench",
            payload={},
        )
        t0 = time.perf_counter()
        store.append([event])
        floor.append(time.perf_counter() - t0)
    store.close()
    hook = percentiles(samples)
    hook_cpu = percentiles(cpu)
    refs = {
        "numpy_score_many": percentiles(vec),
        "python_loop_score": percentiles(loop),
        "store_append": percentiles(floor),
    }
    return {
        "items": n,
        "calls": calls,
        "populate_s": round(populate_s, 2),
        "moves": moves,
        "hook_ms": hook,
        "hook_cpu_ms": hook_cpu,
        # Where the hook's CPU goes: the capture and the window (step + render), timed apart.
        "capture_cpu_ms": percentiles(capture_cpu),
        "step_cpu_ms": percentiles(step_cpu),
        "deferred_ms": percentiles(deferred),
        "evicting_calls": len(evicting),
        "evicting_wall_ms": percentiles(evicting) if evicting else None,
        "references_ms": refs,
        "ratios_p95_over_reference_median": {
            k: round(hook["p95"] / v["median"], 2) if v["median"] else None for k, v in refs.items()
        },
        "threshold_end": round(engine.threshold, 4),
    }


PARTS: tuple[tuple[str, str, str], ...] = (
    # (phase, "module:qualified name", what it is)
    ("capture", "veil.context.engine:ContextEngine._touch_referenced", "re-reference touch"),
    ("capture", "veil.context.engine:ContextEngine._regret_if_returning", "regret check"),
    ("capture", "veil.context.capture:tags_of", "tags (regex scan)"),
    ("capture", "veil.context.engine:call_effect", "code refs (path scan)"),
    ("capture", "veil.context.workingset:WorkingSet.add", "working-set row"),
    ("step", "veil.context.workingset:WorkingSet._score_all", "scores (all items)"),
    ("step", "veil.context.workingset:WorkingSet.protected", "protection masks"),
    ("step", "veil.context.pressure:plan", "the three stages' plan"),
    ("step", "veil.context.workingset:WorkingSet.live_tokens", "working-set estimate"),
    ("render", "veil.context.window:Renderer.render", "rendering the request"),
    ("step", "veil.context.working_memory:WorkingMemory.move", "applying moves"),
    ("both", "veil.context.working_memory:WorkingMemory.emit", "buffering events"),
)
"""The parts of the hook the instrumented run times (each a function the hook calls)."""


def profile(n_items: int, calls: int, workdir: Path) -> dict[str, Any]:
    """Where the hook's CPU goes: the same workload with each of :data:`PARTS` wrapped in a
    CPU timer (so the total here is a little above the plain run's). Per part: microseconds
    per hook call and calls per hook call."""
    import importlib

    engine, store, _, entries = filled_engine(n_items, workdir)
    spent: dict[str, float] = {}
    count: dict[str, int] = {}
    on = [False]
    restore: list[tuple[Any, str, Any]] = []
    for _, target, _ in PARTS:
        module_name, qualified = target.split(":")
        owner: Any = importlib.import_module(module_name)
        *path, attr = qualified.split(".")
        for name in path:
            owner = getattr(owner, name)
        original = getattr(owner, attr)

        def timed(*a: Any, _f: Any = original, _k: str = target, **kw: Any) -> Any:
            t0 = time.thread_time_ns()
            try:
                return _f(*a, **kw)
            finally:
                if on[0]:
                    spent[_k] = spent.get(_k, 0.0) + (time.thread_time_ns() - t0) / 1e3
                    count[_k] = count.get(_k, 0) + 1

        restore.append((owner, attr, original))
        setattr(owner, attr, timed)
    total = 0.0
    try:
        for j in range(calls):
            on[0] = True
            c0 = time.thread_time_ns()
            call(engine, entries, f"m{j}", n_items + j)
            engine.window(entries, fixed_tokens=0)
            total += (time.thread_time_ns() - c0) / 1e3
            on[0] = False
            engine.persist_in_background()
            engine.wait()
            if j % 4 == 3:
                turn(engine, entries, f"Step {j} done")
    finally:
        for owner, attr, original in restore:
            setattr(owner, attr, original)
        engine.close()
        store.close()
    return {
        "items": n_items,
        "calls": calls,
        "hook_cpu_us_mean": round(total / calls, 1),
        "parts": [
            {
                "phase": phase,
                "part": what,
                "function": target,
                "us_per_call": round(spent.get(target, 0.0) / calls, 1),
                "calls_per_call": round(count.get(target, 0) / calls, 2),
            }
            for phase, target, what in PARTS
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    sizes = [100, 2_000] if args.quick else [100, 2_000, 20_000]
    calls = 60 if args.quick else 300
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="veil-ctx-bench-") as tmp:
        for n in sizes:
            results.append(measure(n, calls, Path(tmp)))
            print(f"measured {n:,} items", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="veil-ctx-prof-") as tmp:
        prof = profile(500 if args.quick else 2_000, calls, Path(tmp))
    data = {
        "benchmark": "context_overhead",
        "quick": args.quick,
        "machine": describe(),
        "results": results,
        "profile": prof,
        "median_of_medians_ms": statistics.median(r["hook_ms"]["median"] for r in results),
    }
    print(render_table(results))
    print(profile_table(prof))
    print()
    save(data, "context_overhead", quick=args.quick, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
