"""A purge on SQLite leaves no byte of what it removed in any file of the store: the database,
its WAL and shared memory, the vector sidecars (issue 25)."""

from __future__ import annotations

from pathlib import Path

from veil.tape import PurgeSelection
from veil.tape.contract import NotesProjection, note_event
from veil.tape.sqlite import SQLiteStore
from veil.tape.vectors import VectorIndexConfig
from veil.testing import FakeClock, HashEmbedder

CANARY = b"CANARY-7f3a9c"


def files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def test_a_purged_canary_is_in_no_file(tmp_path: Path) -> None:
    store = SQLiteStore(
        tmp_path / "store.db",
        embedder=HashEmbedder(),
        clock=FakeClock(),
        vector_index=VectorIndexConfig(persist_at_least=1),
    )
    store.register(NotesProjection())
    body = CANARY.decode()
    store.append(
        [note_event("u1", "note.added", note=f"n{i}", body=f"{body} note {i}") for i in range(30)]
        + [note_event("u1", "note.added", note="kept", body="an ordinary note")]
    )
    store.close()  # sidecars written
    store = SQLiteStore(
        tmp_path / "store.db",
        embedder=HashEmbedder(),
        clock=FakeClock(),
        vector_index=VectorIndexConfig(persist_at_least=1),
    )
    store.register(NotesProjection())
    assert files_holding(tmp_path, CANARY), "the canary should be stored before the purge"
    receipt = store.purge(PurgeSelection(matching=body))
    assert receipt.events == 30
    store.close()
    assert files_holding(tmp_path, CANARY) == []
    reopened = SQLiteStore(tmp_path / "store.db", embedder=HashEmbedder(), clock=FakeClock())
    reopened.register(NotesProjection())
    assert [r["note"] for r in reopened.fetch("notes", scope="u1")] == ["kept"]
    assert reopened.check().ok
    reopened.close()
