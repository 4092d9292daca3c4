"""The store contract: administration — check, erasure, purge, sizes (part of
:class:`~veil.tape.contract.StoreContract`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from veil.clock import FakeClock
from veil.embed.hashing import HashEmbedder
from veil.tape.contract_notes import NotesProjection, StoreFixture, note_event
from veil.tape.store import PurgeRefused, PurgeSelection


class AdminContract(StoreFixture):
    """The administrative methods: a healthy check, compliance erasure with a content-free
    receipt, purge (and its refusal), sizes per session."""

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
