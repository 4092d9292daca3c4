"""Property: for any stream of events, projections maintained incrementally equal the
projections rebuilt from the tape — on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import fresh_pg_database
from veil.tape import Store, open_store
from veil.tape.events import Event, EventConflict, JSONValue
from veil.testing import HashEmbedder, NotesProjection

T0 = datetime(2026, 1, 1, tzinfo=UTC)

notes = st.sampled_from(["a", "b", "c", "d"])
scopes = st.sampled_from(["u1", "u2", "team:x"])
bodies = st.text(min_size=0, max_size=40)


@st.composite
def note_events(draw: st.DrawFn) -> Event:
    kind = draw(st.sampled_from(["note.added", "note.edited", "note.removed", "note.other"]))
    payload: dict[str, JSONValue] = {"note": draw(notes)}
    if kind == "note.added":
        payload |= {"title": draw(st.none() | bodies), "body": draw(bodies)}
    elif kind == "note.edited":
        payload |= {"body": draw(bodies), "edits": draw(st.integers(0, 5))}
    return Event(
        id=f"e{draw(st.integers(0, 30))}",
        scope=draw(scopes),
        kind=kind,
        at=T0 + timedelta(minutes=draw(st.integers(0, 10_000))),
        actor="user",
        payload=payload,
    )  # pyright: ignore[reportArgumentType]


STREAMS = st.lists(st.lists(note_events(), min_size=1, max_size=4), max_size=12)


def check_stream(store: Store, batches: list[list[Event]]) -> None:
    # Each example gets its own ids and scopes, so examples can share one database.
    tag = uuid.uuid4().hex[:8]
    for batch in batches:
        # A reused id with other content rejects its batch; the property must still hold.
        with contextlib.suppress(EventConflict):
            store.append([replace(e, id=f"{tag}-{e.id}", scope=f"{tag}/{e.scope}") for e in batch])
    incremental = store.snapshot()
    store.rebuild()
    assert store.snapshot() == incremental


@pytest.fixture(params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    if request.param == "sqlite":
        target = str(tmp_path_factory.mktemp("prop") / "prop.db")
        cleanup: Iterator[str] | None = None
    else:
        cleanup = fresh_pg_database(request.getfixturevalue("pg_server_dsn"))
        target = next(cleanup)
    opened = open_store(target, embedder=HashEmbedder(dim=32))
    opened.register(NotesProjection())
    yield opened
    opened.close()
    if cleanup is not None:
        for _ in cleanup:
            pass


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=STREAMS)
def test_incremental_equals_rebuilt(store: Store, batches: list[list[Event]]) -> None:
    check_stream(store, batches)
