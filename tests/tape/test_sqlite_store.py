from __future__ import annotations

from pathlib import Path

import pytest

from veil.embed.protocol import Embedder
from veil.tape import open_store
from veil.tape.contract import (
    CONCERNS,
    AdminContract,
    AppendContract,
    KindsContract,
    ProjectionContract,
    SearchContract,
)
from veil.tape.sqlite import SQLiteStore
from veil.tape.sqlite_driver import driver, driver_name
from veil.testing import FakeClock, HashEmbedder, NotesProjection, note_event


class TestSQLiteStore(
    AppendContract, KindsContract, ProjectionContract, SearchContract, AdminContract
):
    """The whole contract suite (every concern of :data:`veil.tape.contract.CONCERNS`)."""

    @pytest.fixture(autouse=True)
    def _dir(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.opened: list[SQLiteStore] = []

    def make_store(
        self,
        name: str = "main",
        *,
        embedder: Embedder | None = None,
        clock: FakeClock | None = None,
    ) -> SQLiteStore:
        store = SQLiteStore(self.dir / f"{name}.db", embedder=embedder, clock=clock)
        self.opened.append(store)
        return store


def test_driver_is_the_bundled_sqlite_with_fts5_and_no_extension() -> None:
    # sqlean's SQLite on every platform: FTS5 and RETURNING (3.35) whatever the stdlib has.
    # No extension is loaded (vectors are searched in process), so sqlite-vec's functions
    # do not exist on a store's connection.
    store = SQLiteStore(":memory:")
    with store._read() as cur:  # pyright: ignore[reportPrivateUsage]
        cur.execute("SELECT sqlite_version()")
        version = tuple(int(part) for part in cur.fetchone()[0].split("."))
        assert version >= (3, 35)
        cur.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')")
        assert cur.fetchone()[0] == 1
        with pytest.raises(driver().OperationalError, match="no such function"):
            cur.execute("SELECT vec_version()")
    assert driver_name().startswith("sqlean (SQLite ")
    store.close()


def test_wal_mode_and_migrations_recorded(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    with store._read() as cur:  # pyright: ignore[reportPrivateUsage]
        cur.execute("PRAGMA journal_mode")
        assert cur.fetchone()[0] == "wal"
        cur.execute("SELECT name FROM tape_migrations")
        assert [r[0] for r in cur.fetchall()] == ["0001_tape", "0002_erasures"]
    store.close()
    # Reopening applies nothing twice.
    again = SQLiteStore(tmp_path / "m.db")
    with again._read() as cur:  # pyright: ignore[reportPrivateUsage]
        cur.execute("SELECT COUNT(*) FROM tape_migrations")
        assert cur.fetchone()[0] == 2


def test_raw_update_of_an_event_is_refused(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db", embedder=HashEmbedder())
    store.register(NotesProjection())
    store.append([note_event("u1", "note.added", note="a", body="alpha")])
    with pytest.raises(Exception, match="append-only"), store._write() as cur:  # pyright: ignore[reportPrivateUsage]
        cur.execute("UPDATE tape_events SET payload = '{}'")
    assert store.read("u1")[0].payload["body"] == "alpha"


def test_check_detects_a_tampered_projection(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db", embedder=HashEmbedder())
    store.register(NotesProjection())
    store.append([note_event("u1", "note.added", note="a", body="alpha")])
    with store._write() as cur:  # pyright: ignore[reportPrivateUsage]
        cur.execute("UPDATE notes SET body = 'tampered'")
    report = store.check()
    assert not report.ok
    assert any("notes" in p for p in report.problems)
    store.rebuild()
    assert store.check().ok
    assert store.fetch("notes", scope="u1")[0]["body"] == "alpha"


def test_open_store_accepts_paths_and_urls(tmp_path: Path) -> None:
    for target in (
        tmp_path / "a.db",
        str(tmp_path / "b.db"),
        f"sqlite:///{tmp_path}/c.db",
        f"sqlite:///{tmp_path}/d.db?synchronous=normal",
    ):
        store = open_store(target)
        assert store.dialect == "sqlite"
        store.close()
    with pytest.raises(ValueError, match="unsupported"):
        open_store("mysql://x")


def test_a_handle_that_just_imported_ranks_by_rowid_and_has_statistics(tmp_path: Path) -> None:
    """After ``bulk_append`` the same handle must plan like a fresh one: table statistics are
    gathered at once (not at the next close), and the lookup of ranked full-text hits goes by
    rowid whatever the statistics — without them the planner took the scope's index and read
    every document of the scope (20x slower at 30k documents)."""
    from veil.tape import sqlite_text

    store = SQLiteStore(tmp_path / "bulk.db", embedder=HashEmbedder())
    store.register(NotesProjection())
    with store._read() as cur:  # pyright: ignore[reportPrivateUsage]
        # the plan before any statistics exist: still by rowid
        cur.execute("EXPLAIN QUERY PLAN " + sqlite_text.docs_sql("notes_text", 3), ("u1", 1, 2, 3))
        plan = " ".join(str(row[-1]) for row in cur.fetchall())
    assert "INTEGER PRIMARY KEY" in plan and "idx" not in plan.lower(), plan
    batches = [
        [note_event("u1", "note.added", note=f"n{b}-{i}", body=f"alpha {i}") for i in range(50)]
        for b in range(4)
    ]
    assert store.bulk_append(batches) == 200
    with store._read() as cur:  # pyright: ignore[reportPrivateUsage]
        cur.execute("SELECT COUNT(*) FROM sqlite_stat1")
        assert cur.fetchone()[0] > 0
    hits = store.search_text("notes_text", scope="u1", query="alpha", limit=5)
    assert len(hits) == 5
    store.close()


def test_every_concern_of_the_contract_runs_on_this_backend() -> None:
    assert set(CONCERNS) <= set(TestSQLiteStore.__mro__)
