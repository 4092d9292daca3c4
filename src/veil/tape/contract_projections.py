"""The store contract: projections and the scoped reads over them (part of
:class:`~veil.tape.contract.StoreContract`)."""

from __future__ import annotations

from veil.clock import FakeClock
from veil.embed.hashing import HashEmbedder
from veil.tape.contract_notes import NotesProjection, StoreFixture, note_event
from veil.tape.events import InvalidEvent, TapeError
from veil.tape.store import ProjectionMismatch, UnknownName


class ProjectionContract(StoreFixture):
    """Projections kept in step with the tape: scoped rows, fetch, patches and removals,
    rebuild, reopening, backfill, re-embedding, idempotent register, read-only attach."""

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


class SearchContract(StoreFixture):
    """Full-text and vector search, scoped; one consistent read of a scope."""

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
