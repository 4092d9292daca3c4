"""The store contract: every append is checked against the registered event kinds
(:mod:`veil.tape.kinds`); reads never are (part of :class:`~veil.tape.contract.StoreContract`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from veil.clock import FakeClock
from veil.tape.codec import Ident
from veil.tape.contract_notes import NOTE_TAGGED, NoteTagged, StoreFixture, note_event
from veil.tape.events import Event, InvalidEvent
from veil.tape.kinds import EventKind, register, unregister
from veil.tape.recorder import Recorder
from veil.tape.store import Store


@dataclass(frozen=True)
class NoteTaggedByOwner:
    """A later declaration of ``note.tagged`` that needs a key earlier events lack."""

    note: Ident
    tags: tuple[str, ...]
    owner: Ident


def _refused(store: Store, events: Sequence[Event]) -> str:
    """The message of the :class:`InvalidEvent` appending ``events`` raises."""
    try:
        store.append(events)
    except InvalidEvent as exc:
        return str(exc)
    raise AssertionError(f"the store accepted {[e.payload for e in events]!r}")


class KindsContract(StoreFixture):
    """Appends are checked against the registered kinds; reads return what was stored."""

    def test_an_unregistered_kind_is_refused_and_nothing_is_written(self) -> None:
        store = self.open_notes()
        good = note_event("u1", "note.added", note="a", body="alpha")
        unknown = note_event("u1", "note.unheard_of", note="x")
        message = _refused(store, [good, unknown])
        assert "unknown event kind 'note.unheard_of'" in message and unknown.id in message
        assert store.head() == 0 and store.fetch("notes", scope="u1") == []

    def test_a_payload_its_kind_refuses_is_invalid_and_nothing_is_written(self) -> None:
        store = self.open_notes()
        cases: list[tuple[str, dict[str, object]]] = [
            ("payload.note: missing", {"tags": []}),
            ("payload.note: null", {"note": None, "tags": []}),
            ("payload.note: must not be empty", {"note": "  ", "tags": []}),
            ("payload.tags: expected a list", {"note": "n", "tags": "a,b"}),
            ("payload.tags[1]: expected a string", {"note": "n", "tags": ["a", 2]}),
            ("payload.weight: expected a number", {"note": "n", "tags": [], "weight": True}),
            ("payload.due: expected an ISO-8601 time", {"note": "n", "tags": [], "due": "soon"}),
            ("payload.level: expected one of 1, 2, 3", {"note": "n", "tags": [], "level": 4}),
            ("payload: unknown keys 'colour'", {"note": "n", "tags": [], "colour": "red"}),
        ]
        for expected, payload in cases:
            good = note_event("u1", "note.added", note="a", body="alpha")
            bad = note_event("u1", "note.tagged", **payload)  # type: ignore[arg-type]
            message = _refused(store, [good, bad])
            assert f"event {bad.id}: a note.tagged payload does not decode" in message, message
            assert expected in message, (expected, message)
        assert store.head() == 0 and store.fetch("notes", scope="u1") == []

    def test_a_declared_payload_round_trips_through_its_codec(self) -> None:
        store = self.open_notes()
        value = NoteTagged("n1", ("a", "b"), weight=2.5, due="2026-01-05T09:00:00.000000+00:00")
        written = Recorder(store, "u1", "user", FakeClock()).record(NOTE_TAGGED, value)
        (back,) = store.read("u1", kinds=["note.tagged"])
        assert (
            back.payload
            == written.payload
            == {
                "note": "n1",
                "tags": ["a", "b"],
                "weight": 2.5,
                "due": "2026-01-05T09:00:00.000000+00:00",
                "level": 1,
            }
        )
        assert NOTE_TAGGED.decode(back.payload) == value

    def test_validation_is_on_append_never_on_read(self) -> None:
        """Events on the tape are read, replayed and checked as stored even when their kind's
        declaration no longer accepts them; only appending such an event again is refused."""
        store = self.open_notes()
        old = note_event("u1", "note.tagged", note="n1", tags=["a"])
        store.append([old, note_event("u1", "note.added", note="a", body="alpha")])
        unregister(NOTE_TAGGED.name)
        register(EventKind(NOTE_TAGGED.name, NoteTaggedByOwner))
        try:
            assert [e.id for e in store.read("u1")][:1] == [old.id]
            assert store.rebuild().events == 2 and store.check().ok
            assert "payload.owner: missing" in _refused(store, [old])
        finally:
            unregister(NOTE_TAGGED.name)
            register(NOTE_TAGGED)
        assert store.append([old])[0].id == old.id  # the declaration it was written under
