"""Four processes append to one store at once (a SQLite file, a PostgreSQL database): nothing
lost, nothing duplicated, seq strictly increasing, projections equal to a rebuild afterwards."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import fresh_pg_database
from veil.tape import open_store
from veil.testing import HashEmbedder, NotesProjection

WRITER = textwrap.dedent(
    """
    import sys
    from veil.tape import open_store
    from veil.testing import HashEmbedder, NotesProjection, note_event
    path, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = open_store(path, embedder=HashEmbedder())
    store.register(NotesProjection())
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for i in range(count):
        store.append([note_event(f"scope{i % 3}", "note.added", id=f"w{worker}-{i}",
                                 note=f"w{worker}-{i}", body=f"worker {worker} item {i}")])
    store.close()
    """
)


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "shared.db")
    else:
        yield from fresh_pg_database(request.getfixturevalue("pg_server_dsn"))


def test_four_processes_append_concurrently(target: str) -> None:
    path = target
    setup = open_store(path, embedder=HashEmbedder())
    setup.register(NotesProjection())
    setup.close()
    count = 1000
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(w), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.close()
    for p in procs:
        assert p.wait(timeout=300) == 0
        assert p.stdout is not None
        p.stdout.close()

    store = open_store(path, embedder=HashEmbedder())
    store.register(NotesProjection())
    events = store.scan()
    ids = [e.id for e in events]
    assert len(ids) == 4 * count
    assert set(ids) == {f"w{w}-{i}" for w in range(4) for i in range(count)}
    seqs = [e.seq or 0 for e in events]
    assert all(a < b for a, b in itertools.pairwise(seqs))
    # Interleaving really happened (otherwise the test proves little).
    workers_in_order = [e.id.split("-")[0] for e in events]
    switches = sum(1 for a, b in itertools.pairwise(workers_in_order) if a != b)
    assert switches > 10
    rows = sum(len(store.fetch("notes", scope=f"scope{s}")) for s in range(3))
    assert rows == 4 * count
    assert store.check().ok
    store.close()
