"""The store contract: appending and reading the tape (part of
:class:`~veil.tape.contract.StoreContract`)."""

from __future__ import annotations

from datetime import datetime

from veil.clock import FakeClock
from veil.tape.contract_notes import StoreFixture, note_event
from veil.tape.events import Event, EventConflict, InvalidEvent, JSONValue, new_id


class AppendContract(StoreFixture):
    """Appends: seq and recorded_at, scoped reads, exact payloads, idempotency by id, atomic
    batches, the envelope checks, redaction before the write."""

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

    def test_scopes_lists_tenants(self) -> None:
        store = self.open_notes()
        store.append(
            [
                note_event("b", "note.added", note="x", body="1"),
                note_event("a", "note.added", note="y", body="2"),
            ]
        )
        assert store.scopes() == ["a", "b"]

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
