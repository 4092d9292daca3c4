"""``veil demo``: an offline tour of what exists so far — the tape and the embedder.

Nothing here is scripted or faked: real SQLite with FTS5 and sqlite-vec in a temporary
directory, real embeddings from the weights packaged with Veil, no network.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from veil.embed import default_embedder
from veil.tape.sqlite import SQLiteStore
from veil.tape.sqlite_driver import driver_name
from veil.testing import NotesProjection, note_event

SENTENCES = [
    ("pets", "I adore my two puppies, they sleep on the sofa."),
    ("taxes", "The tax return has to be filed before the end of April."),
    ("deploy", "Deploying to staging failed because the migration locked the users table."),
    ("editor", "I switched from vim to emacs last week."),
    ("travel", "Our flight to Lisbon leaves on Friday morning."),
]


def run_demo() -> int:
    print("Veil demo — the tape and the embedder (offline; nothing scripted)\n")
    with tempfile.TemporaryDirectory(prefix="veil-demo-") as tmp:
        path = Path(tmp) / "demo.db"
        started = time.perf_counter()
        embedder = default_embedder()
        embedder.embed(["warm up"])
        print(
            f"embedder: {embedder.name} ({embedder.dim}-d, in-process, loaded in "
            f"{time.perf_counter() - started:.2f} s)"
        )
        store = SQLiteStore(path, embedder=embedder)
        print(f"store:    {path.name} on {driver_name()}, WAL, sqlite-vec loaded")
        store.register(NotesProjection())

        at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
        events = [
            note_event(
                "user:alice",
                "note.added",
                note=key,
                title=key,
                body=text,
                at=at + timedelta(minutes=i),
            )
            for i, (key, text) in enumerate(SENTENCES)
        ]
        events.append(
            note_event(
                "user:bob",
                "note.added",
                note="bob-secret",
                title="secret",
                body="Bob's puppies are called Rex and Fido.",
            )
        )
        stored = store.append(events)
        print(
            f"\n1. appended {len(stored)} events (seq {stored[0].seq}..{stored[-1].seq}) "
            "in one atomic batch, two scopes"
        )
        edit = note_event(
            "user:alice",
            "note.edited",
            note="editor",
            body="I switched from emacs back to vim.",
            edits=1,
            at=at + timedelta(hours=1),
        )
        store.append([edit])
        print("2. appended an edit; the tape keeps both versions:")
        for event in store.read("user:alice", kinds=["note.added", "note.edited"]):
            if event.payload.get("note") == "editor":
                print(f"     seq {event.seq} {event.kind}: {event.payload['body']}")
        row = store.fetch("notes", scope="user:alice", where={"note": "editor"})[0]
        print(f"   the projection shows the current value: {row['body']!r}")

        before = store.snapshot()
        report = store.rebuild()
        same = store.snapshot() == before
        print(
            f"3. rebuilt every projection from the tape ({report.events} events): "
            f"{'identical' if same else 'DIFFERENT'} to the incrementally maintained one"
        )

        print("4. semantic search in scope user:alice (sqlite-vec, cosine):")
        for query in ("dogs", "when is the tax deadline", "which text editor"):
            hits = store.search_vector("notes_vec", scope="user:alice", query=query, limit=2)
            shown = ", ".join(f"{h.doc_id} ({h.score:.2f})" for h in hits)
            print(f"     {query!r:30} -> {shown}")
        hits = store.search_text("notes_text", scope="user:alice", query="staging migration")
        print(f"5. keyword search (FTS5/BM25) 'staging migration' -> {[h.doc_id for h in hits]}")
        bob = store.search_vector("notes_vec", scope="user:alice", query="Rex and Fido", limit=6)
        print(
            f"6. scope isolation: alice searching for Bob's note finds "
            f"{'no bob note' if all(h.doc_id != 'bob-secret' for h in bob) else 'A LEAK'}"
        )
        check = store.check()
        print(f"7. admin check: {'ok' if check.ok else check.problems}")
        store.close()
    print("\nLater issues add long-term memory, working memory and the agent harness to this tour.")
    return 0 if same and check.ok else 1
