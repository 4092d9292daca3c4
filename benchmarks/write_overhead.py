"""Measure what ``Memory.remember`` costs beside its one LLM call.

Run from the repository root (``veil`` must be importable, e.g. installed with ``make``)::

    python -m benchmarks.write_overhead            # 10,000 existing facts, 200 measured calls
    python -m benchmarks.write_overhead --quick    # 1,000 existing facts, 50 measured calls

Why: ``remember`` always makes exactly one ``complete`` call, and a real model takes hundreds of
milliseconds to seconds. What Veil adds around that call — recording the evidence on the tape,
building the prompt (entity lookup, current facts), validating the output, deciding
supersession, embedding and indexing each new fact, committing — is the part Veil controls. This
script isolates it.

What is measured, exactly:

- ``complete`` is an instant callable that returns a precomputed extraction JSON (1-3 facts)
  and times itself from entry to return. For each ``remember``, **overhead = wall time of
  remember - time inside complete**. The thread hop ``remember`` uses to call ``complete`` with
  a timeout (a worker thread per call) is therefore counted as overhead, as it should be.
- The store is a SQLite file in a temp dir, the embedder is the real default
  (``veil.embed.default_embedder()``, packaged static model), the clock a ``FakeClock`` moved one
  minute per call. The OS file cache is warm. The databases live in a temp dir (``--dir`` to
  choose where); its path and file-system type are recorded in the JSON, because the cost of
  ``synchronous=FULL`` is the cost of that device's fsync (tmpfs makes it free).
- The scope is pre-populated with N existing facts (10,000; 1,000 with ``--quick``) by calling
  ``remember`` itself with a scripted model that returns 20 facts per call: 6 new contacts x 3
  facts (``works_as``, ``located_at``, ``has_pet``) + 2 facts about the user (``uses_tool``,
  ``works_on``, non-functional, so the user accumulates N/10 current facts). This goes through
  the real write path, so the projections are exactly what production would have. It is done
  once with ``synchronous=normal``; the file is then copied so both modes start identical.
- Then, per mode, 5 unmeasured warm-up calls followed by M measured calls (200; 50 with
  ``--quick``) cycling through three kinds: ``new`` (1-3 facts about new subjects), ``supersede``
  (the user's ``prefers`` and ``located_at``: functional, so each closes the current value) and
  ``reinforce`` (restates an existing contact's job and one of the user's tools).
- Modes: ``synchronous=FULL`` (the default: a commit survives power loss) and
  ``?synchronous=normal`` (survives a process crash only). Both in WAL mode. ``remember`` commits
  twice (the evidence first, then the outcome batch).
- Floor: the wall time of one ``store.append`` of a single small event that no projection
  handles (``bench.ping``), on the same store — one transaction and one commit, nothing else.
- Per fact: each call's overhead divided by the number of facts the model returned in it.
- Percentiles are numpy's linear interpolation over the per-call samples (p99 of 200 samples is
  essentially the 2nd-worst call; of 50 samples, the worst).

The number of ``complete`` calls per ``remember`` is counted and asserted to be exactly 1.

Results are printed as a markdown table and written as JSON to
``benchmarks/results/write_overhead.json`` (``write_overhead-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmarks.lib.machine import describe, filesystem_of, source_state, sqlite_version
from benchmarks.lib.report.write_overhead import write_overhead_kind_table, write_overhead_table
from benchmarks.lib.results import save
from benchmarks.lib.timing import MS, summary
from veil.embed import default_embedder
from veil.embed.protocol import Embedder
from veil.memory.memory import Memory
from veil.memory.projection import ENTITIES, FACTS
from veil.tape import Event, new_id
from veil.tape.codec import NoPayload
from veil.tape.kinds import EventKind, register
from veil.testing import FakeClock

register(EventKind("bench.ping", NoPayload, extra="keep"))  # the floor: a bare append

USER = "bench-user"
FACTS_PER_POPULATE_CALL = 20
WARMUP_CALLS = 5
Mode = Literal["full", "normal"]
Kind = Literal["new", "supersede", "reinforce"]
KINDS: tuple[Kind, ...] = ("new", "supersede", "reinforce")


class TimedModel:
    """An instant ``complete(messages, *, json_schema=None) -> str`` that times itself.

    Set :attr:`response` before each ``remember``; every call returns it. :attr:`inside_s` is
    the total time spent inside this callable, :attr:`calls` the number of calls.
    """

    def __init__(self) -> None:
        self.response = '{"facts": [], "episodes": []}'
        self.calls = 0
        self.inside_s = 0.0

    def __call__(
        self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
    ) -> str:
        t0 = time.perf_counter()
        self.calls += 1
        out = self.response
        self.inside_s += time.perf_counter() - t0
        return out


@dataclass(frozen=True)
class Fact:
    subject: str
    relation: str
    object: str

    def statement(self) -> str:
        verb = self.relation.replace("_", " ")
        return f"{self.subject} {verb} {self.object}."

    def item(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "relation": self.relation,
            "object": self.object,
            "statement": self.statement(),
            "claimant": "user",
            "supersedes": None,
        }


@dataclass(frozen=True)
class Step:
    """One ``remember``: the evidence text and the model's precomputed answer."""

    kind: str
    text: str
    response: str
    facts: int


def step(kind: str, facts: Sequence[Fact]) -> Step:
    text = " ".join(f.statement() for f in facts)
    response = json.dumps({"facts": [f.item() for f in facts], "episodes": []})
    return Step(kind, text, response, len(facts))


def contact(i: int, j: int) -> str:
    return f"Contact {i}-{j}"


def populate_steps(n_facts: int) -> list[Step]:
    """``n_facts / 20`` steps of 20 facts: 6 new contacts x 3 facts + 2 user facts."""
    steps: list[Step] = []
    for i in range(max(1, n_facts // FACTS_PER_POPULATE_CALL)):
        facts: list[Fact] = []
        for j in range(6):
            name = contact(i, j)
            facts += [
                Fact(name, "works_as", f"engineer grade {i}-{j}"),
                Fact(name, "located_at", f"City {i}-{j}"),
                Fact(name, "has_pet", f"dog {i}-{j}"),
            ]
        if i == 0:  # the functional slots the measured calls supersede
            facts += [Fact("user", "prefers", "editor-start"), Fact("user", "located_at", "Home")]
        else:
            facts += [Fact("user", "uses_tool", f"tool-{i}"), Fact("user", "works_on", f"p-{i}")]
        steps.append(step("populate", facts))
    return steps


def measured_steps(count: int, populate_calls: int, tag: str) -> list[Step]:
    """``count`` steps cycling new / supersede / reinforce (see the module docstring)."""
    steps: list[Step] = []
    for k in range(count):
        kind = KINDS[k % 3]
        if kind == "new":
            n = (k // 3) % 3 + 1
            facts = [Fact(f"Newcomer {tag}{k}-{j}", "works_as", f"pilot {k}-{j}") for j in range(n)]
        elif kind == "supersede":
            facts = [
                Fact("user", "prefers", f"editor-{tag}{k}"),
                Fact("user", "located_at", f"Town {tag}{k}"),
            ]
        else:
            i = (k * 7919) % populate_calls
            facts = [
                Fact(contact(i, k % 6), "works_as", f"engineer grade {i}-{k % 6}"),
                Fact("user", "uses_tool", f"tool-{max(1, i)}"),
            ]
        steps.append(step(kind, facts))
    return steps


def percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    """Median, p95, p99, mean and max of samples in seconds, returned in milliseconds."""
    return summary(samples_s, ("median", "p95", "p99", "mean", "max"), scale=MS)


def populate(path: Path, n_facts: int, embedder: Embedder, clock: FakeClock) -> dict[str, Any]:
    """Fill ``path`` with ``n_facts`` facts through ``remember``; returns what was built."""
    model = TimedModel()
    steps = populate_steps(n_facts)
    t0 = time.perf_counter()
    with Memory(
        f"sqlite:///{path}?synchronous=normal", complete=model, embedder=embedder, clock=clock
    ) as memory:
        for s in steps:
            clock.advance(minutes=1)
            model.response = s.response
            report = memory.remember(s.text, user_id=USER)
            if report.error:
                raise RuntimeError(f"populate failed: {report.error}")
        seconds = time.perf_counter() - t0
        all_facts = memory.store.fetch(FACTS, scope=USER)
        user_current = memory.store.fetch(
            FACTS, scope=USER, where={"subject_key": "user", "state": "current"}
        )
        entities = memory.store.fetch(ENTITIES, scope=USER)
    return {
        "method": (
            f"Memory.remember with a scripted model, {FACTS_PER_POPULATE_CALL} facts per call "
            "(6 new contacts x works_as/located_at/has_pet + 2 user facts), synchronous=normal, "
            "then the file copied once per mode"
        ),
        "calls": len(steps),
        "seconds": round(seconds, 2),
        "facts": len(all_facts),
        "user_current_facts": len(user_current),
        "entities": len(entities),
    }


@dataclass
class ModeResult:
    mode: str
    url_suffix: str
    per_remember_ms: dict[str, float]
    per_fact_ms: dict[str, float]
    wall_ms: dict[str, float]
    complete_ms: dict[str, float]
    by_kind_median_ms: dict[str, float]
    append_floor_ms: dict[str, float]
    llm_calls_per_remember: list[int]
    outcomes: dict[str, int] = field(default_factory=dict[str, int])


def measure_mode(
    db: Path, mode: Mode, steps: list[Step], warmup: list[Step], floor_n: int, start: datetime
) -> ModeResult:
    """Time ``steps`` on ``db`` opened with ``synchronous=<mode>``, then the append floor."""
    suffix = "" if mode == "full" else "?synchronous=normal"
    model = TimedModel()
    clock = FakeClock(start)
    overhead: list[float] = []
    per_fact: list[float] = []
    wall: list[float] = []
    inside: list[float] = []
    by_kind: dict[str, list[float]] = {k: [] for k in KINDS}
    calls: list[int] = []
    outcomes = {"facts_returned": 0, "added": 0, "superseded": 0, "reinforced": 0}
    with Memory(
        f"sqlite:///{db}{suffix}", complete=model, embedder=default_embedder(), clock=clock
    ) as memory:
        for s in warmup:
            clock.advance(minutes=1)
            model.response = s.response
            memory.remember(s.text, user_id=USER)
        for s in steps:
            clock.advance(minutes=1)
            model.response = s.response
            calls_before, inside_before = model.calls, model.inside_s
            t0 = time.perf_counter()
            report = memory.remember(s.text, user_id=USER)
            elapsed = time.perf_counter() - t0
            in_model = model.inside_s - inside_before
            n_calls = model.calls - calls_before
            if n_calls != 1 or report.llm_calls != 1 or report.error:
                raise AssertionError(
                    f"remember made {n_calls} complete calls (report: {report.llm_calls}, "
                    f"error: {report.error}); expected exactly 1"
                )
            calls.append(n_calls)
            wall.append(elapsed)
            inside.append(in_model)
            overhead.append(elapsed - in_model)
            per_fact.append((elapsed - in_model) / s.facts)
            by_kind[s.kind].append(elapsed - in_model)
            outcomes["facts_returned"] += s.facts
            outcomes["added"] += len(report.facts)
            outcomes["superseded"] += len(report.superseded)
            outcomes["reinforced"] += len(report.reinforced)
        floor: list[float] = []
        for i in range(floor_n):
            event = Event(
                id=new_id("ev"),
                scope=USER,
                kind="bench.ping",
                at=clock.now(),
                actor="bench",
                payload={"i": i},
            )
            t0 = time.perf_counter()
            memory.store.append([event])
            floor.append(time.perf_counter() - t0)
    return ModeResult(
        mode=mode,
        url_suffix=suffix,
        per_remember_ms=percentiles(overhead),
        per_fact_ms=percentiles(per_fact),
        wall_ms=percentiles(wall),
        complete_ms=percentiles(inside),
        by_kind_median_ms={k: round(float(np.median(v)) * 1e3, 3) for k, v in by_kind.items()},
        append_floor_ms=percentiles(floor),
        llm_calls_per_remember=sorted(set(calls)),
        outcomes=outcomes,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure Memory.remember's write overhead.")
    parser.add_argument(
        "--quick", action="store_true", help="1,000 existing facts, 50 measured calls"
    )
    parser.add_argument("--out", type=Path, help="JSON output path")
    parser.add_argument(
        "--dir", type=Path, help="where to create the temporary databases (default: system temp)"
    )
    args = parser.parse_args(argv)
    quick: bool = args.quick
    n_existing = 1_000 if quick else 10_000
    n_measured = 50 if quick else 200
    floor_n = 50 if quick else 200

    embedder = default_embedder()
    embedder.embed(["warm up"])  # load the weights outside every timed region
    results: list[ModeResult] = []
    with tempfile.TemporaryDirectory(prefix="veil-bench-", dir=args.dir) as tmp:
        base = Path(tmp) / "populated.db"
        clock = FakeClock()
        print(f"populating {n_existing:,} facts ...", flush=True)
        built = populate(base, n_existing, embedder, clock)
        print(
            f"populated {built['facts']:,} facts, {built['entities']:,} entities in "
            f"{built['seconds']:.1f} s ({built['calls']} remember calls)",
            flush=True,
        )
        start = clock.now() + timedelta(days=1)
        for mode in ("full", "normal"):
            db = Path(tmp) / f"{mode}.db"
            for suffix in ("", "-wal"):
                src = Path(f"{base}{suffix}")
                if src.exists():
                    shutil.copyfile(src, f"{db}{suffix}")
            warmup = measured_steps(WARMUP_CALLS, built["calls"], tag="w")
            steps = measured_steps(n_measured, built["calls"], tag="m")
            result = measure_mode(db, mode, steps, warmup, floor_n, start)
            print(
                f"{mode}: median {result.per_remember_ms['median']:.2f} ms per remember",
                flush=True,
            )
            results.append(result)
        tmpdir = tmp

    report: dict[str, Any] = {
        "quick": quick,
        "existing_facts": n_existing,
        "measured_calls": n_measured,
        "warmup_calls": WARMUP_CALLS,
        "floor_appends": floor_n,
        "embedder": embedder.name,
        "populate": built,
        "workload": (
            "calls cycle new (1-3 facts about new subjects, works_as) / supersede (user prefers "
            "+ located_at, functional) / reinforce (a contact's works_as + a user uses_tool, "
            "same values); overhead = remember wall time - time inside complete"
        ),
        "source": source_state(),
        "temp_dir": str(Path(tmpdir).parent),
        "temp_fs": filesystem_of(Path(tmpdir).parent),
        "machine": describe(sqlite=sqlite_version()),
        "results": [r.__dict__ for r in results],
    }
    print()
    print(write_overhead_table(report))
    print()
    print(write_overhead_kind_table(report))
    calls = sorted({c for r in results for c in r.llm_calls_per_remember})
    print(f"\nLLM calls per remember: {calls} over {2 * n_measured} measured calls (must be [1])")
    print(f"existing facts: {built['method']}")
    print(f"databases on {report['temp_dir']} ({report['temp_fs']})")
    print()
    save(report, "write_overhead", quick=quick, out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
