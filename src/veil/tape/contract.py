"""The store contract suite (shipped through :mod:`veil.testing`) and the small ``notes``
projection it exercises. Every backend subclasses :class:`StoreContract`."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from veil.clock import FakeClock
from veil.embed.hashing import HashEmbedder
from veil.embed.protocol import Embedder
from veil.tape.events import Event, EventConflict, InvalidEvent, JSONValue, TapeError, new_id
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
from veil.tape.store import (
    ProjectionMismatch,
    PurgeRefused,
    PurgeSelection,
    Store,
    UnknownName,
)

# ---- a small projection used by the contract suite and the demo ---------------------------


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
        if event.kind == "note.added":
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
        if event.kind == "note.edited":
            body = str(p.get("body", ""))
            edits = p.get("edits", 1)
            return [
                Patch("notes", {"scope": scope, "note": note}, {"body": body, "edits": edits}),
                IndexText("notes_text", scope, note, body),
                IndexVector("notes_vec", scope, note, body),
            ]
        if event.kind == "note.removed":
            return [
                Remove("notes", {"scope": scope, "note": note}),
                IndexText("notes_text", scope, note, ""),
                IndexVector("notes_vec", scope, note, ""),
            ]
        if event.kind == "note.boom":
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
    """Build a ``note.*`` event for tests and the demo."""
    return Event(
        id=id or new_id(),
        scope=scope,
        kind=kind,
        at=at or datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
        actor=actor,
        payload=dict(payload),
    )


# ---- the store contract -------------------------------------------------------------------


class StoreContract:
    """The behaviour every :class:`~veil.tape.store.Store` backend must have.

    Subclass it as ``TestMyStore(StoreContract)`` and implement :meth:`make_store`, which
    must return a store on a fresh, empty database for each ``name`` and reopen the same
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

    # -- appending and reading --

    def test_append_assigns_increasing_seq_and_recorded_at(self) -> None:
        clock = FakeClock()
        store = self.open_notes(clock=clock)
        first = store.append([note_event("u1", "note.added", note="a", body="alpha")])
        clock.advance(seconds=5)
        second = store.append(
            [
                note_event("u1", "note.added", note="b", body="beta"),
                note_event("u2", "note.added", note="c", body="gamma"),
            ]
        )
        seqs = [e.seq or 0 for e in [*first, *second]]
        assert all(s > 0 for s in seqs)
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert first[0].recorded_at == FakeClock().now()
        assert second[0].recorded_at == clock.now()
        assert store.head() == seqs[-1]

    def test_read_is_scoped_ordered_and_filtered(self) -> None:
        store = self.open_notes()
        store.append([note_event("u1", "note.added", note=f"n{i}", body=f"b{i}") for i in range(5)])
        store.append([note_event("u2", "note.added", note="x", body="secret")])
        store.append([note_event("u1", "note.edited", note="n1", body="b1!")])
        events = store.read("u1")
        assert [e.scope for e in events] == ["u1"] * 6
        assert [e.seq for e in events] == sorted(e.seq or 0 for e in events)
        assert [e.kind for e in store.read("u1", kinds=["note.edited"])] == ["note.edited"]
        assert store.read("u1", kinds=[]) == []
        third = events[2].seq or 0
        assert [e.seq for e in store.read("u1", after=third, limit=2)] == [
            e.seq for e in events[3:5]
        ]
        assert store.read("nobody") == []
        assert all(e.scope == "u2" for e in store.read("u2"))

    def test_payload_round_trips_exactly(self) -> None:
        store = self.open_notes()
        payload: dict[str, JSONValue] = {
            "note": "p",
            "body": "naïve café — 日本語 🙂 \x00 nul and\ttab",
            "nested": {"list": [1, 2.5, None, True, "x"], "deep": {"k": [[], {}]}},
            "big": 2**53 + 1,
        }
        event = Event(
            id=new_id(),
            scope="u1",
            kind="note.added",
            at=FakeClock().now(),
            actor="user",
            payload=payload,
            provenance={"source": "test", "ids": ["a"]},
        )
        store.append([event])
        (back,) = store.read("u1")
        assert back.payload == payload
        assert back.provenance == {"source": "test", "ids": ["a"]}
        assert back.at == event.at and back.id == event.id and back.actor == "user"

    def test_append_is_idempotent_by_id(self) -> None:
        store = self.open_notes()
        event = note_event("u1", "note.added", note="a", body="alpha")
        (one,) = store.append([event])
        (two,) = store.append([event])
        assert one.seq == two.seq
        assert len(store.read("u1")) == 1
        assert len(store.fetch("notes", scope="u1")) == 1
        store.append([event, event])
        assert len(store.read("u1")) == 1

    def test_same_id_with_other_content_conflicts_and_writes_nothing(self) -> None:
        store = self.open_notes()
        event = note_event("u1", "note.added", note="a", body="alpha")
        store.append([event])
        changed = Event(
            id=event.id,
            scope="u1",
            kind="note.added",
            at=event.at,
            actor="user",
            payload={"note": "a", "body": "tampered"},
        )
        fresh = note_event("u1", "note.added", note="b", body="beta")
        try:
            store.append([fresh, changed])
        except EventConflict:
            pass
        else:
            raise AssertionError("a conflicting id was accepted")
        assert [e.id for e in store.read("u1")] == [event.id]
        assert [r["note"] for r in store.fetch("notes", scope="u1")] == ["a"]

    def test_batch_is_atomic_when_a_projection_fails(self) -> None:
        store = self.open_notes()
        good = note_event("u1", "note.added", note="a", body="alpha")
        boom = note_event("u1", "note.boom")
        try:
            store.append([good, boom])
        except RuntimeError:
            pass
        else:
            raise AssertionError("the failing projection did not surface")
        assert store.read("u1") == []
        assert store.fetch("notes", scope="u1") == []
        assert store.search_text("notes_text", scope="u1", query="alpha") == []

    def test_invalid_events_are_rejected_before_writing(self) -> None:
        store = self.open_notes()
        bad_inputs = [
            Event(id=new_id(), scope="", kind="note.added", at=FakeClock().now(), actor="u"),
            Event(id=new_id(), scope="u1", kind="Bad Kind", at=FakeClock().now(), actor="u"),
            Event(id=new_id(), scope="u1", kind="note.added", at=datetime(2026, 1, 1), actor="u"),
            Event(id="", scope="u1", kind="note.added", at=FakeClock().now(), actor="u"),
            Event(id=new_id(), scope="u\x01", kind="note.added", at=FakeClock().now(), actor="u"),
        ]
        for bad in bad_inputs:
            try:
                store.append([note_event("u1", "note.added", note="ok", body="x"), bad])
            except InvalidEvent:
                pass
            else:
                raise AssertionError(f"accepted invalid event {bad!r}")
        assert store.head() == 0

    # -- projections --

    def test_projection_rows_are_scoped(self) -> None:
        store = self.open_notes()
        store.append([note_event("u1", "note.added", note="a", title="T", body="alpha")])
        store.append([note_event("u2", "note.added", note="a", title="T2", body="other")])
        (row,) = store.fetch("notes", scope="u1")
        assert row["scope"] == "u1" and row["title"] == "T" and row["body"] == "alpha"
        assert row["archived"] is False and row["edits"] == 0
        assert isinstance(row["meta"], dict) and row["meta"]["actor"] == "user"
        assert [r["title"] for r in store.fetch("notes", scope="u2")] == ["T2"]
        assert store.fetch("notes", scope="u3") == []

    def test_fetch_filters_orders_and_limits(self) -> None:
        clock = FakeClock()
        store = self.open_notes(clock=clock)
        for i in range(6):
            store.append(
                [
                    note_event(
                        "u1",
                        "note.added",
                        note=f"n{i}",
                        title="even" if i % 2 == 0 else "odd",
                        body=f"body {i}",
                        at=clock.advance(minutes=1),
                    )
                ]
            )
        evens = store.fetch("notes", scope="u1", where={"title": "even"})
        assert [r["note"] for r in evens] == ["n0", "n2", "n4"]
        newest = store.fetch("notes", scope="u1", order_by=["-created_at"], limit=2)
        assert [r["note"] for r in newest] == ["n5", "n4"]
        for bad in ({"nope": 1},):
            try:
                store.fetch("notes", scope="u1", where=bad)
            except UnknownName:
                pass
            else:
                raise AssertionError("unknown column accepted")
        try:
            store.fetch("no_such_table", scope="u1")
        except UnknownName:
            pass
        else:
            raise AssertionError("unknown table accepted")
        try:
            store.fetch("notes", scope="")
        except InvalidEvent:
            pass
        else:
            raise AssertionError("empty scope accepted")

    def test_patch_and_remove(self) -> None:
        store = self.open_notes()
        store.append([note_event("u1", "note.added", note="a", body="apple pie")])
        store.append([note_event("u1", "note.edited", note="a", body="banana bread", edits=1)])
        (row,) = store.fetch("notes", scope="u1")
        assert row["body"] == "banana bread" and row["edits"] == 1
        assert store.search_text("notes_text", scope="u1", query="apple") == []
        assert [h.doc_id for h in store.search_text("notes_text", scope="u1", query="banana")] == [
            "a"
        ]
        store.append([note_event("u1", "note.removed", note="a")])
        assert store.fetch("notes", scope="u1") == []
        assert store.search_text("notes_text", scope="u1", query="banana") == []
        assert store.search_vector("notes_vec", scope="u1", query="banana bread") == []
        assert len(store.read("u1")) == 3  # the tape keeps everything

    def test_search_text_is_scoped_ranked_and_injection_safe(self) -> None:
        store = self.open_notes()
        store.append(
            [
                note_event(
                    "u1", "note.added", note="a", body="the deploy script failed on staging"
                ),
                note_event("u1", "note.added", note="b", body="lunch was pasta"),
                note_event("u1", "note.added", note="c", body="deploy deploy deploy to staging"),
                note_event("u2", "note.added", note="z", body="deploy secrets of another tenant"),
            ]
        )
        hits = store.search_text("notes_text", scope="u1", query="deploy staging")
        assert {h.doc_id for h in hits} == {"a", "c"}
        assert hits[0].score >= hits[-1].score
        assert all(h.doc_id != "z" for h in hits)
        for nasty in [
            '"',
            "AND",
            "deploy OR",
            "NEAR(",
            "*",
            "body:",
            "scopekey:x",
            "'; DROP",
            "",
            "   ",
            "😀",
        ]:
            store.search_text("notes_text", scope="u1", query=nasty)  # must not raise
        assert store.search_text("notes_text", scope="u1", query="deploy", limit=1)[0].doc_id in {
            "a",
            "c",
        }

    def test_search_vector_is_scoped(self) -> None:
        store = self.open_notes()
        store.append(
            [
                note_event("u1", "note.added", note="a", body="the cat sat on the mat"),
                note_event("u1", "note.added", note="b", body="quarterly tax filing deadline"),
                note_event("u2", "note.added", note="z", body="the cat sat on the mat"),
            ]
        )
        hits = store.search_vector("notes_vec", scope="u1", query="a cat on a mat", limit=5)
        assert [h.doc_id for h in hits][:1] == ["a"]
        assert {h.doc_id for h in hits} <= {"a", "b"}
        assert hits[0].score > hits[-1].score or len(hits) == 1
        assert store.search_vector("notes_vec", scope="u3", query="cat") == []

    def test_rebuild_recreates_identical_projections(self) -> None:
        store = self.open_notes()
        store.append(
            [
                note_event(f"u{i % 3}", "note.added", note=f"n{i}", body=f"text {i}")
                for i in range(30)
            ]
        )
        store.append([note_event("u1", "note.edited", note="n1", body="edited", edits=2)])
        store.append([note_event("u2", "note.removed", note="n2")])
        before = store.snapshot()
        report = store.rebuild()
        assert report.events == 32
        assert store.snapshot() == before
        assert store.check().ok

    def test_reopen_keeps_everything(self) -> None:
        store = self.open_notes("persist")
        store.append([note_event("u1", "note.added", note="a", body="alpha")])
        before = store.snapshot()
        store.close()
        again = self.open_notes("persist")
        assert len(again.read("u1")) == 1
        assert again.snapshot() == before

    def test_new_projection_backfills_from_the_tape(self) -> None:
        store = self.make_store("late", embedder=HashEmbedder(), clock=FakeClock())
        store.append([note_event("u1", "note.added", note="a", body="alpha")])
        store.register(NotesProjection())
        assert [r["note"] for r in store.fetch("notes", scope="u1")] == ["a"]

    def test_changed_embedder_reembeds_vectors(self) -> None:
        store = self.make_store("emb", embedder=HashEmbedder(dim=64), clock=FakeClock())
        store.register(NotesProjection())
        store.append([note_event("u1", "note.added", note="a", body="alpha beta")])
        store.close()
        again = self.make_store("emb", embedder=HashEmbedder(dim=32), clock=FakeClock())
        again.register(NotesProjection())
        hits = again.search_vector("notes_vec", scope="u1", query="alpha beta")
        assert [h.doc_id for h in hits] == ["a"]
        assert again.check().ok

    def test_registering_once_again_is_a_no_op(self) -> None:
        """``register`` is idempotent per handle, the way Veil's writers rely on:
        again on the same handle it writes nothing and the projection is applied once."""
        store = self.make_store("once", embedder=HashEmbedder(), clock=FakeClock())
        store.register(NotesProjection())
        store.append([note_event("u1", "note.added", note="a", body="alpha")])
        before = (store.snapshot(), store.head(), store.recorded_projections())
        store.register(NotesProjection())
        store.register(NotesProjection(), NotesProjection())
        assert (store.snapshot(), store.head(), store.recorded_projections()) == before
        store.append([note_event("u1", "note.added", note="b", body="beta")])
        assert [r["note"] for r in store.fetch("notes", scope="u1", order_by=["note"])] == [
            "a",
            "b",
        ]
        assert [h.doc_id for h in store.search_text("notes_text", scope="u1", query="beta")] == [
            "b"
        ]
        assert store.check().ok

        class Changed(NotesProjection):
            version = NotesProjection.version + 1

        try:  # the same name with another signature is refused, not skipped
            store.register(Changed())
        except ValueError as e:
            assert "already registered" in str(e)
        else:
            raise AssertionError("a changed projection under a registered name was accepted")
        kept = store.snapshot()
        store.close()
        again = self.make_store("once", embedder=HashEmbedder(), clock=FakeClock())
        again.register(NotesProjection())  # a new handle registers (per handle)
        again.register(NotesProjection())
        assert again.snapshot() == kept and again.check().ok

    def test_attach_reads_and_checks_without_writing(self) -> None:
        store = self.make_store("attach", embedder=HashEmbedder(dim=64), clock=FakeClock())
        store.register(NotesProjection())
        store.append([note_event("u1", "note.added", note="a", body="alpha beta")])
        before = store.snapshot()
        store.close()
        same = self.make_store("attach", embedder=HashEmbedder(dim=64), clock=FakeClock())
        same.attach(NotesProjection())
        assert [r["note"] for r in same.fetch("notes", scope="u1")] == ["a"]
        assert same.check().ok and same.snapshot() == before
        same.close()
        other = self.make_store("attach", embedder=HashEmbedder(dim=32), clock=FakeClock())
        try:
            other.attach(NotesProjection())
        except ProjectionMismatch as exc:
            assert (exc.recorded_embedder, exc.embedder) == ("hash-64:64", "hash-32:32")
        else:
            raise AssertionError("attach accepted vectors built with another embedder")
        other.register(NotesProjection())  # the writing twin re-embeds
        assert other.snapshot() != before

    def test_check_passes_on_a_healthy_store(self) -> None:
        store = self.open_notes()
        store.append([note_event("u1", "note.added", note="a", body="alpha")])
        report = store.check()
        assert report.ok, report.problems
        assert report.events == 1 and report.head == store.head()
        assert len(store.fetch("notes", scope="u1")) == 1  # the check rolled back its rebuild

    def test_erase_removes_a_scope_and_keeps_a_receipt(self) -> None:
        store = self.open_notes()
        store.append(
            [
                note_event("u1", "note.added", note="a", body="CANARY-erase alpha"),
                note_event("u1", "note.added", note="b", body="CANARY-erase beta"),
                note_event("u2", "note.added", note="c", body="CANARY-erase gamma"),
            ]
        )
        receipt = store.erase("u1")
        assert receipt.events == 2 and receipt.rows["notes"] == 2
        assert "u1" not in repr(receipt) and "CANARY" not in repr(receipt)
        assert store.read("u1") == [] and store.fetch("notes", scope="u1") == []
        assert store.search_text("notes_text", scope="u1", query="CANARY erase") == []
        assert store.search_vector("notes_vec", scope="u1", query="CANARY-erase alpha") == []
        assert [e.payload["note"] for e in store.read("u2")] == ["c"]
        assert [h.doc_id for h in store.search_text("notes_text", scope="u2", query="gamma")] == [
            "c"
        ]
        assert store.erasures() == [receipt]
        assert store.check().ok
        store.rebuild()
        assert store.fetch("notes", scope="u1") == []

    def test_reading_is_one_scope(self) -> None:
        store = self.open_notes()
        store.append([note_event("u1", "note.added", note="a", body="alpha beta")])
        store.append([note_event("u2", "note.added", note="b", body="alpha gamma")])
        with store.reading("u1"):
            assert [r["note"] for r in store.fetch("notes", scope="u1")] == ["a"]
            assert [
                h.doc_id for h in store.search_text("notes_text", scope="u1", query="alpha")
            ] == ["a"]
            assert [
                h.doc_id for h in store.search_vector("notes_vec", scope="u1", query="alpha")
            ] == ["a"]
            try:
                store.fetch("notes", scope="u2")
            except TapeError:
                pass
            else:
                raise AssertionError("a read of another scope inside reading() was allowed")
        assert [r["note"] for r in store.fetch("notes", scope="u2")] == ["b"]

    def test_scopes_lists_tenants(self) -> None:
        store = self.open_notes()
        store.append(
            [
                note_event("b", "note.added", note="x", body="1"),
                note_event("a", "note.added", note="y", body="2"),
            ]
        )
        assert store.scopes() == ["a", "b"]

    # -- no secret on the tape; purge --

    def test_append_redacts_every_secret_before_it_is_written(self) -> None:
        store = self.open_notes()
        key = "AKIA" + "QX7RTV2M9WPLKD3N"  # a canary, not a key
        stored = store.append(
            [note_event("u1", "note.added", note="a", body=f"export AWS_ACCESS_KEY_ID={key} done")]
        )
        assert key not in repr(stored) and "[secret:aws-access-key" in str(stored[0].payload)
        assert key not in repr(store.read("u1")) and key not in repr(store.snapshot())
        assert store.search_text("notes_text", scope="u1", query=key) == []
        assert store.fetch("notes", scope="u1")[0]["body"].endswith("done")  # type: ignore[union-attr]
        again = note_event(
            "u1",
            "note.added",
            id=stored[0].id,
            note="a",
            body=f"export AWS_ACCESS_KEY_ID={key} done",
        )
        assert store.append([again]) == stored  # idempotent: the same redacted event

    def test_purge_removes_what_it_names_and_keeps_the_rest(self) -> None:
        clock = FakeClock()
        store = self.open_notes(clock=clock)
        old = clock.now()
        store.append(
            [
                note_event("u1", "note.added", note="a", body="CANARY-purge alpha", at=old),
                replace(
                    note_event("u1", "note.added", note="b", body="session beta"),
                    provenance={"session_id": "s1"},
                ),
                note_event("u2", "note.added", note="c", body="CANARY-purge gamma"),
                note_event("u2", "note.added", note="d", body="kept delta"),
            ]
        )
        by_session = store.purge(PurgeSelection(sessions=("s1",)))
        assert by_session.events == 1 and by_session.rows["notes"] == 1
        matching = store.purge(PurgeSelection(matching=r"CANARY-\w+"))
        assert (
            matching.events == 2 and "CANARY" not in repr(matching) and "s1" not in repr(by_session)
        )
        assert [e.payload["note"] for e in store.read("u2")] == ["d"]
        assert store.read("u1") == [] and store.fetch("notes", scope="u1") == []
        assert store.search_text("notes_text", scope="u2", query="CANARY purge") == []
        assert (
            store.search_vector("notes_vec", scope="u2", query="CANARY-purge gamma")[0].doc_id
            == "d"
        )
        assert "CANARY" not in repr(store.snapshot())
        assert store.check().ok  # projections equal a rebuild
        assert store.erasures()[-2:] == [by_session, matching]
        clock.advance(days=2)
        store.append([note_event("u2", "note.added", note="e", body="new", at=clock.now())])
        before = store.purge(PurgeSelection(scope="u2", before=clock.now() - timedelta(days=1)))
        assert before.events == 1 and [e.payload["note"] for e in store.read("u2")] == ["e"]
        nothing = store.purge(PurgeSelection(sessions=("no-such-session",)))
        assert nothing.events == 0 and store.check().ok

    def test_sizes_group_a_scopes_bytes_by_a_field(self) -> None:
        store = self.open_notes()
        store.append(
            [
                replace(
                    note_event("u1", "note.added", note="a", body="x" * 500),
                    provenance={"session_id": "s1"},
                ),
                note_event("u1", "note.added", note="b", body="y" * 50, session_id="s2"),
                note_event("u1", "note.added", note="c", body="z"),
                note_event("u2", "note.added", note="d", body="w" * 900, session_id="s1"),
            ]
        )
        sizes = store.sizes("u1", field="session_id")
        assert set(sizes) == {"s1", "s2", None}
        assert sizes["s1"] > 500 > sizes["s2"] > 50 and sizes[None] < sizes["s2"]

    def test_purge_refuses_when_a_projection_is_not_registered(self) -> None:
        store = self.open_notes("purge-refused")
        store.append([note_event("u1", "note.added", note="a", body="alpha")])
        store.close()
        bare = self.make_store("purge-refused", embedder=HashEmbedder(), clock=FakeClock())
        try:
            bare.purge(PurgeSelection(matching="alpha"))
        except PurgeRefused as exc:
            assert "notes" in str(exc)
        else:
            raise AssertionError("a purge left a recorded projection's rows behind")
        bare.register(NotesProjection())
        assert bare.fetch("notes", scope="u1")  # nothing was removed
        try:
            PurgeSelection()
        except ValueError as exc:
            assert "sessions, before or matching" in str(exc)
        else:
            raise AssertionError("a purge of everything was accepted")
