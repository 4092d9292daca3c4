"""Crash safety (docs/reliability.md, "Durability").

Writers run in forked children of a fork server (tests/reliability/crash_worker.py) and are
killed with SIGKILL at seeded random moments: while opening the database, mid-append, between
the evidence and the extraction outcome of a ``remember``, inside ``maintain`` and ``forget``.
After every kill the database is reopened and must pass ``PRAGMA integrity_check`` and
``store.check()`` (projections equal to a rebuild from the tape), every event must re-seal to
its stored digest (no partial event), and every write the child acknowledged before it died
must be there. ``maintain`` leaves the old state or the new one; ``forget`` removes all of a
scope or nothing.

Default: a short sample. ``VEIL_RELIABILITY_FULL=1``: at least 500 kills.
"""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.crash_worker import MEMORY_SCOPE, PROJECT_SCOPE, prepare_old_state
from tests.reliability.support import (
    SEED,
    event_digest_problems,
    open_all,
    record_figures,
    size,
)
from veil.agent.sessions import Sessions
from veil.context.engine import ContextEngine
from veil.context.projection import ITEMS
from veil.memory.projection import ENTITIES, EPISODES, EVIDENCE, FACTS, FACTS_TEXT, WIKI
from veil.tape import Store

REPO = Path(__file__).resolve().parents[2]
KILLS_PER_DB = 10
"""A fresh database every few kills keeps each ``check()`` (a full rebuild) cheap."""


@dataclass
class Run:
    acks: list[dict[str, Any]] = field(default_factory=lambda: [])
    killed: bool = False
    finished: bool = False
    errors: list[str] = field(default_factory=lambda: [])
    seconds: float = 0.0


class ForkServer:
    """Talks to ``crash_worker``: start a child with a command, kill it after a delay."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.crash_worker"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def _next(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def run(self, command: dict[str, Any], kill_after_s: float | None) -> Run:
        """Start a child; SIGKILL it ``kill_after_s`` after it reported its pid (None: let
        it finish). Returns what it acknowledged before it died."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        run = Run()
        first = self._next(60)
        assert first is not None and first.startswith("pid "), f"fork server said {first!r}"
        pid = int(first.split()[1])
        started = time.monotonic()
        deadline = None if kill_after_s is None else started + kill_after_s
        while True:
            timeout = 120.0 if deadline is None else deadline - time.monotonic()
            line = self._next(timeout)
            if line is None:
                if deadline is None:
                    raise AssertionError("child hung")
                try:  # a short bounded wait elapsed: kill now
                    os.kill(pid, signal.SIGKILL)
                    run.killed = True
                except ProcessLookupError:
                    pass  # it finished (and was reaped) just before; "dead" follows
                deadline = None
                continue
            if self._take(line, run, pid):
                break
        run.seconds = time.monotonic() - started
        return run

    @staticmethod
    def _take(line: str, run: Run, pid: int) -> bool:
        if line.startswith("ack "):
            run.acks.append(json.loads(line[4:]))
        elif line == "done":
            run.finished = True
        elif line.startswith("error "):
            run.errors.append(json.loads(line[6:]))
        elif line.startswith("dead "):
            assert int(line.split()[1]) == pid
            return True
        return False

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    server = ForkServer()
    try:
        yield server
    finally:
        server.close()


def integrity_problems(store: Store, path: Path) -> list[str]:
    report = store.check()
    return [*report.problems, *event_digest_problems(path)]


def missing_acks(store: Store, acks: list[dict[str, Any]]) -> list[str]:
    """Every acknowledged write must be on the tape and in its projection."""
    missing: list[str] = []
    evidence = {e.id for e in store.read(MEMORY_SCOPE, kinds=["memory.evidence"])}
    facts = {str(r["fact_id"]) for r in store.fetch(FACTS, scope=MEMORY_SCOPE)}
    items = {str(r["item_id"]) for r in store.fetch(ITEMS, scope=PROJECT_SCOPE)}
    sessions = Sessions(store, scope=PROJECT_SCOPE, register=False)
    lengths: dict[str, int] = {}
    for ack in acks:
        kind = ack["kind"]
        if kind == "remember":
            if ack["evidence"] not in evidence:
                missing.append(f"evidence {ack['evidence']}")
            missing.extend(f"fact {f}" for f in ack["facts"] if f not in facts)
        elif kind == "capture":
            if ack["item"] not in items:
                missing.append(f"context item {ack['item']}")
        elif kind == "session":
            sid = str(ack["session"])
            if sid not in lengths:
                lengths[sid] = len(sessions.messages(sid))
            if lengths[sid] <= int(ack["idx"]):
                missing.append(f"session {sid} message {ack['idx']}")
    return missing


def test_kill_writers_at_random_points(forks: ForkServer, tmp_path: Path) -> None:
    kills = size(20, 400)
    rng = random.Random(SEED)
    acked: list[dict[str, Any]] = []
    killed = completed = 0
    modes: Counter[str] = Counter()
    db = tmp_path / "db0" / "crash.db"
    for n in range(kills):
        if n % KILLS_PER_DB == 0:
            db = tmp_path / f"db{n}" / "crash.db"
            acked = []
        seed = rng.randrange(1 << 30)
        # every other database in synchronous=NORMAL, as the harness opens context.db
        mode = "full" if (n // KILLS_PER_DB) % 2 == 0 else "normal"
        modes[mode] += 1
        run = forks.run(
            {"op": "mix", "db": str(db), "seed": seed, "ops": 10_000, "synchronous": mode},
            kill_after_s=rng.uniform(0.0, 0.6),
        )
        assert not run.errors, run.errors
        killed += run.killed
        completed += len(run.acks)
        acked.extend(run.acks)
        store = open_all(db)
        try:
            assert integrity_problems(store, db) == [], f"after kill {n} (seed {seed})"
            assert missing_acks(store, acked) == [], f"after kill {n} (seed {seed})"
            # working memory resumes from the killed session
            ContextEngine(store, session_id=f"ctx{seed}", scope=PROJECT_SCOPE, register=False)
        finally:
            store.close()
    assert killed == kills
    record_figures(
        "crash.writers",
        kills=killed,
        acknowledged_writes=completed,
        by_mode=dict(modes),
        lost=0,
        check_failures=0,
    )


def _copy_db(template: Path, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for f in template.parent.iterdir():
        shutil.copy(f, target / f.name)
    return target / template.name


def _scope_state(store: Store) -> dict[str, int]:
    state = {
        f"table:{t}": len(store.fetch(t, scope=MEMORY_SCOPE))
        for t in (FACTS, EPISODES, EVIDENCE, ENTITIES, WIKI)
    }
    state["events"] = len(store.read(MEMORY_SCOPE))
    state["fts"] = len(store.search_text(FACTS_TEXT, scope=MEMORY_SCOPE, query="user", limit=1000))
    return state


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("template") / "crash.db"
    prepare_old_state(str(db), SEED, 8)
    return db


@pytest.mark.parametrize("op", ["maintain", "forget"])
def test_kill_maintain_and_forget_midway(
    op: str, forks: ForkServer, template: Path, tmp_path: Path
) -> None:
    kills = size(3, 60)
    rng = random.Random(f"{SEED}:{op}")
    # A reference run to completion: what "new state" looks like, and how long it takes.
    reference_db = _copy_db(template, tmp_path / "reference")
    store = open_all(reference_db)
    head = store.head()
    before = _scope_state(store)
    store.close()
    reference = forks.run({"op": op, "db": str(reference_db), "seed": 0}, kill_after_s=None)
    assert reference.finished and not reference.errors, reference.errors
    store = open_all(reference_db)
    new_kinds = Counter(e.kind for e in store.scan(after=head))
    after = _scope_state(store)
    store.close()
    if op == "maintain":
        assert new_kinds["memory.wiki"] == 1 and new_kinds["memory.consolidated"] >= 2
    else:
        assert after["events"] == 0 and before["events"] > 0
    outcomes: Counter[str] = Counter()
    killed = 0
    for n in range(kills):
        db = _copy_db(template, tmp_path / f"k{n}")
        run = forks.run(
            {"op": op, "db": str(db), "seed": n},
            kill_after_s=rng.uniform(0.0, reference.seconds),
        )
        assert not run.errors, run.errors
        store = open_all(db)
        try:
            assert integrity_problems(store, db) == [], f"{op} kill {n}"
            kinds = Counter(e.kind for e in store.scan(after=head))
            state = _scope_state(store)
            if op == "maintain":
                old = not kinds and state == before
                new = kinds == new_kinds and state == after
            else:
                old = state == before and not store.erasures()
                new = state == after and len(store.erasures()) == 1
            assert old or new, f"{op} kill {n}: neither old nor new state: {kinds} {state}"
            assert not (run.acks and old), f"{op} acknowledged but not applied"
            assert store.read("user:bystander"), "another scope was touched"
            outcomes["old" if old else "new"] += 1
            killed += run.killed
        finally:
            store.close()
    assert killed >= kills // 2, f"only {killed} of {kills} kills landed before the end"
    record_figures(
        f"crash.{op}",
        kills=killed,
        attempts=kills,
        old_state=outcomes["old"],
        new_state=outcomes["new"],
        mixed=0,
    )
