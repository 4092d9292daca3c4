"""The Recorder, the one builder of a writer's events, and the rule that writers use it."""

from __future__ import annotations

import ast
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from veil.tape import Event, open_store
from veil.tape.contract import NOTE_ADDED
from veil.tape.contract_notes import NoteAdded
from veil.tape.recorder import Recorder
from veil.testing import FakeClock, HashEmbedder

SRC = Path(__file__).resolve().parents[2] / "src" / "veil"
COPIES_EVENTS = {"memory/portability.py"}
"""Modules that append events another tape recorded (an import keeps their ids and times)."""


def test_an_event_carries_the_writers_scope_actor_provenance_prefix_and_time(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    store = open_store(tmp_path / "t.db", embedder=HashEmbedder())
    rec = Recorder(store, "u1", "veil", clock, id_prefix="cx", provenance={"session_id": "s1"})
    event = rec.event(NOTE_ADDED, NoteAdded("a", None, "alpha"))
    payload = {"note": "a", "title": None, "body": "alpha"}
    assert event == Event(
        event.id, "u1", "note.added", clock.now(), "veil", payload, {"session_id": "s1"}
    )
    assert event.id.startswith("cx_")
    assert store.head() == 0  # built, not appended
    store.close()


def test_an_id_and_a_time_decided_before_are_kept(tmp_path: Path) -> None:
    clock = FakeClock()
    store = open_store(tmp_path / "t.db", embedder=HashEmbedder())
    rec = Recorder(store, "u1", "harness", clock)
    then = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    event = rec.record(NOTE_ADDED, NoteAdded("a"), id="att_1", at=then)
    (stored,) = store.read("u1")
    assert (event.id, event.at) == ("att_1", then)
    assert (stored.id, stored.at, stored.actor, stored.provenance) == ("att_1", then, "harness", {})
    rec.record(NOTE_ADDED, NoteAdded("a"), id="att_1", at=then)  # the same event again: a no-op
    assert store.head() == 1
    store.close()


def test_another_writer_is_another_recorder(tmp_path: Path) -> None:
    store = open_store(tmp_path / "t.db", embedder=HashEmbedder())
    rec = Recorder(store, "u1", "library", FakeClock())
    by_user = replace(rec, actor="user", provenance={"evidence_id": "ev_1"})
    event = by_user.event(NOTE_ADDED, NoteAdded())
    assert (event.scope, event.actor, event.provenance) == ("u1", "user", {"evidence_id": "ev_1"})
    assert rec.event(NOTE_ADDED, NoteAdded()).provenance == {}
    store.close()


def _builds_events(tree: ast.Module) -> list[int]:
    """Lines that call the ``Event`` class imported from the tape."""
    names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("veil.tape")
        for alias in node.names
        if alias.name == "Event"
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    ]


def test_writers_build_their_events_through_a_recorder() -> None:
    found: dict[str, list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name.startswith("tape/") or name in COPIES_EVENTS:
            continue
        lines = _builds_events(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[name] = lines
    assert found == {}, f"events built by hand instead of through a Recorder: {found}"


def test_the_rule_sees_a_hand_built_event() -> None:
    tree = ast.parse(
        "from veil.tape import Event as E\nimport threading\n"
        "threading.Event()\nE('i', 's', 'k', at, 'a')\n"
    )
    assert _builds_events(tree) == [4]


def test_a_payload_of_another_kind_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    store = open_store(tmp_path / "t.db", embedder=HashEmbedder())
    rec = Recorder(store, "u1", "veil", FakeClock())
    try:
        rec.event(NOTE_ADDED, {"note": "a"})  # type: ignore[arg-type]
    except TypeError as exc:
        assert "a note.added event carries a NoteAdded, not a dict" in str(exc)
    else:
        raise AssertionError("a dict was accepted as a NoteAdded")
    store.close()
