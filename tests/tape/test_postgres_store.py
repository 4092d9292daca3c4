"""The store contract on a real PostgreSQL 18 + pgvector server (never skipped)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import fresh_pg_database
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
from veil.tape.postgres import PostgresStore
from veil.testing import FakeClock, HashEmbedder, NotesProjection, note_event


class TestPostgresStore(
    AppendContract, KindsContract, ProjectionContract, SearchContract, AdminContract
):
    """The whole contract suite (every concern of :data:`veil.tape.contract.CONCERNS`)."""

    @pytest.fixture(autouse=True)
    def _server(self, pg_server_dsn: str) -> Iterator[None]:
        self.server = pg_server_dsn
        self.databases: dict[str, str] = {}
        self.cleanups: list[Iterator[str]] = []
        self.opened: list[PostgresStore] = []
        yield
        for store in self.opened:
            store.close()
        for gen in self.cleanups:
            for _ in gen:
                pass

    def make_store(
        self,
        name: str = "main",
        *,
        embedder: Embedder | None = None,
        clock: FakeClock | None = None,
    ) -> PostgresStore:
        if name not in self.databases:
            gen = fresh_pg_database(self.server)
            self.databases[name] = next(gen)
            self.cleanups.append(gen)
        store = PostgresStore(self.databases[name], embedder=embedder, clock=clock)
        self.opened.append(store)
        return store


def test_raw_update_of_an_event_is_refused(pg_database: str) -> None:
    store = PostgresStore(pg_database, embedder=HashEmbedder())
    try:
        store.register(NotesProjection())
        store.append([note_event("u1", "note.added", note="a", body="alpha")])
        with pytest.raises(Exception, match="append-only"), store._write() as cur:  # pyright: ignore[reportPrivateUsage]
            cur.execute("UPDATE tape_events SET payload = '{}'")
        assert store.read("u1")[0].payload["body"] == "alpha"
    finally:
        store.close()


def test_open_store_dispatches_to_postgres(pg_database: str) -> None:
    store = open_store(pg_database)
    try:
        assert store.dialect == "postgresql"
    finally:
        store.close()


def test_every_concern_of_the_contract_runs_on_this_backend() -> None:
    assert set(CONCERNS) <= set(TestPostgresStore.__mro__)
