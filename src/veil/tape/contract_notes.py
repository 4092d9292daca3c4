"""What the store contract suite (:mod:`veil.tape.contract`) runs on: the small ``notes``
projection, the ``note.*`` event kinds it reads, and :class:`StoreFixture`, the one method a
backend implements to be tested.

The ``note.*`` kinds are the contract's own (the tape knows no layer's kinds): they are
registered when this module is imported, which every process running the suite or the demo
does. ``note.added``, ``note.edited`` and ``note.removed`` keep extra keys (the suite stores
arbitrary JSON through them); ``note.tagged`` refuses them and is what the suite checks
validation with.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from veil.clock import FakeClock
from veil.embed.hashing import HashEmbedder
from veil.embed.protocol import Embedder
from veil.tape.codec import Ident, TimeText
from veil.tape.events import Event, JSONValue, new_id
from veil.tape.kinds import EventKind, catalogue
from veil.tape.projection import (
    Column,
    IndexText,
    IndexVector,
    Op,
    Patch,
    Put,
    Remove,
    Table,
    TextIndex,
    VectorIndex,
)
from veil.tape.store import Store

NoteKind = Literal[
    "note.added", "note.edited", "note.removed", "note.other", "note.boom", "note.tagged"
]


@dataclass(frozen=True)
class NoteAdded:
    note: str = ""
    title: str | None = None
    body: str = ""


@dataclass(frozen=True)
class NoteEdited:
    note: str = ""
    body: str = ""
    edits: int = 1


@dataclass(frozen=True)
class NoteNamed:
    """``note.removed``, ``note.other`` (no projection reads it) and ``note.boom`` (the
    projection raises, for atomicity tests)."""

    note: str = ""


@dataclass(frozen=True)
class NoteTagged:
    """A strict payload: every key declared, each typed."""

    note: Ident
    tags: tuple[str, ...]
    weight: float = 1.0
    due: TimeText | None = None
    level: Literal[1, 2, 3] = 1


NOTE_ADDED = EventKind("note.added", NoteAdded, extra="keep")
NOTE_EDITED = EventKind("note.edited", NoteEdited, extra="keep")
NOTE_REMOVED = EventKind("note.removed", NoteNamed, extra="keep")
NOTE_OTHER = EventKind("note.other", NoteNamed, extra="keep")
NOTE_BOOM = EventKind("note.boom", NoteNamed, extra="keep")
NOTE_TAGGED = EventKind("note.tagged", NoteTagged)
NOTE_KINDS = catalogue(
    NoteKind, NOTE_ADDED, NOTE_EDITED, NOTE_REMOVED, NOTE_OTHER, NOTE_BOOM, NOTE_TAGGED
)


class NotesProjection:
    """Notes with a title and body: a table, a full-text index and a vector index.

    Events: ``note.added`` {note, title, body}, ``note.edited`` {note, body},
    ``note.removed`` {note}. Pure: every op is computed from the event alone.
    """

    name = "notes"
    version = 1
    tables = (
        Table(
            "notes",
            (
                Column("note", "text", nullable=False),
                Column("title", "text"),
                Column("body", "text"),
                Column("edits", "int"),
                Column("created_at", "time"),
                Column("meta", "json"),
                Column("archived", "bool"),
                Column("weight", "real"),
            ),
            key=("note",),
            indexes=(("created_at",),),
        ),
    )
    text_indexes = (TextIndex("notes_text"),)
    vector_indexes = (VectorIndex("notes_vec"),)

    def apply(self, event: Event) -> list[Op]:
        p = event.payload
        note = str(p.get("note", ""))
        scope = event.scope
        if event.kind == NOTE_ADDED.name:
            body = str(p.get("body", ""))
            return [
                Put(
                    "notes",
                    {
                        "scope": scope,
                        "note": note,
                        "title": p.get("title"),
                        "body": body,
                        "edits": 0,
                        "created_at": event.at.isoformat(),
                        "meta": {"seq": event.seq, "actor": event.actor},
                        "archived": False,
                        "weight": float(len(body)) / 7.0,
                    },
                ),
                IndexText("notes_text", scope, note, body),
                IndexVector("notes_vec", scope, note, body),
            ]
        if event.kind == NOTE_EDITED.name:
            body = str(p.get("body", ""))
            edits = p.get("edits", 1)
            return [
                Patch("notes", {"scope": scope, "note": note}, {"body": body, "edits": edits}),
                IndexText("notes_text", scope, note, body),
                IndexVector("notes_vec", scope, note, body),
            ]
        if event.kind == NOTE_REMOVED.name:
            return [
                Remove("notes", {"scope": scope, "note": note}),
                IndexText("notes_text", scope, note, ""),
                IndexVector("notes_vec", scope, note, ""),
            ]
        if event.kind == NOTE_BOOM.name:
            raise RuntimeError("projection failure (deliberate, for atomicity tests)")
        return []


def note_event(
    scope: str,
    kind: str,
    *,
    at: datetime | None = None,
    id: str | None = None,
    actor: str = "user",
    **payload: JSONValue,
) -> Event:
    """Build a ``note.*`` event for tests and the demo (any payload: the suite also builds
    events the tape must refuse)."""
    return Event(
        id=id or new_id(),
        scope=scope,
        kind=kind,
        at=at or datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
        actor=actor,
        payload=dict(payload),
    )


class StoreFixture:
    """What every part of the contract suite needs from a backend: :meth:`make_store`.

    It must return a store on a fresh, empty database for each ``name`` and reopen the same
    database when called again with the same ``name`` (pytest's ``tmp_path`` is set on
    ``self`` by an autouse fixture in your test module or conftest).
    """

    def make_store(
        self,
        name: str = "main",
        *,
        embedder: Embedder | None = None,
        clock: FakeClock | None = None,
    ) -> Store:
        raise NotImplementedError

    def open_notes(self, name: str = "main", clock: FakeClock | None = None) -> Store:
        store = self.make_store(name, embedder=HashEmbedder(), clock=clock or FakeClock())
        store.register(NotesProjection())
        return store
