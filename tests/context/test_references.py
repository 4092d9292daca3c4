from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.context.conftest import MakeEngine
from veil.context.references import ReferenceIndex, names


def test_names_are_paths_dotted_names_and_compound_identifiers() -> None:
    found = names(
        "File django/db/models/base.py line 12 in _check_ordering: "
        "models.Field raised for getFieldName; the value was wrong print self"
    )
    assert {"django/db/models/base.py", "_check_ordering", "models.Field", "getFieldName"} <= set(
        found
    )
    assert not {"File", "line", "value", "wrong", "print", "self"} & set(found)


def test_named_by_skips_names_that_many_items_carry() -> None:
    index = ReferenceIndex()
    for n in range(6):
        index.add(f"i{n}", f"common_helper used here {n}")
    index.add("special", "defines parse_duration_iso")
    assert index.named_by("call common_helper", max_items=5) == []
    assert index.named_by("fix parse_duration_iso and common_helper", max_items=5) == ["special"]


def test_an_action_naming_what_a_result_printed_touches_it(make_engine: MakeEngine) -> None:
    engine = make_engine()
    engine.capture_turn("user", "Fix the ordering check", target="turn:1")
    found = engine.capture_tool_result(
        tool_call_id="c1",
        tool_name="grep",
        arguments={"pattern": "ordering"},
        output="django/db/models/base.py:1692:    def _check_ordering(cls):",
    )
    other = engine.capture_tool_result(
        tool_call_id="c2", tool_name="ls", arguments={"path": "."}, output="setup.py\nREADME"
    )
    base = engine.item(found.id).access_count
    other_base = engine.item(other.id).access_count
    engine.capture_tool_result(
        tool_call_id="c3",
        tool_name="read",
        arguments={"path": "django/db/models/base.py"},
        output="...",
    )
    assert engine.item(found.id).access_count == base + 1
    assert engine.item(other.id).access_count == other_base
    engine.capture_turn("assistant", "The bug is in _check_ordering.", calls=["act"])
    assert engine.item(found.id).access_count == base + 2


def test_reference_touches_can_be_turned_off(make_engine: MakeEngine) -> None:
    engine = make_engine(touch_on_reference=False)
    found = engine.capture_tool_result(
        tool_call_id="c1", tool_name="grep", arguments={"pattern": "x"}, output="a/b/c.py: x"
    )
    base = engine.item(found.id).access_count
    engine.capture_turn("assistant", "Open a/b/c.py next.", calls=["look"])
    assert engine.item(found.id).access_count == base


_TIES = """
import json
from veil.context.references import ReferenceIndex
index = ReferenceIndex()
for n in range(12):
    index.add(f"i{n}", f"defines helper_{n:02d} and parse_{n:02d}_value")
text = " ".join(f"helper_{n:02d}" for n in range(12))
print(json.dumps(index.named_by(text, max_items=5)[:8]))
"""


def test_which_items_a_text_touches_does_not_depend_on_the_hash_seed() -> None:
    """Touches are capped (``reference_max_touches``), so the order of equally specific names
    decides which items are touched; it must be the text's order, not a set's, or the same
    trajectory scores differently from one process to the next."""
    runs = {
        seed: subprocess.run(
            [sys.executable, "-c", _TIES],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(set(runs.values())) == 1, runs
    assert json.loads(runs["1"]) == [f"i{n}" for n in range(8)]


def test_names_prepared_on_another_thread_match_names_scanned_inline() -> None:
    """``add`` only queues; ``prepare`` (the writer thread's job) scans; ``named_by`` files the
    queue with whatever was prepared and scans the rest itself. A thread preparing while items
    are added and matched must give the same answers as an index that never prepares."""
    import threading

    inline, raced = ReferenceIndex(), ReferenceIndex()
    stop = threading.Event()

    def keep_preparing() -> None:
        while not stop.is_set():
            raced.prepare()

    worker = threading.Thread(target=keep_preparing)
    worker.start()
    try:
        for i in range(300):
            text = f"src/mod_{i % 7}.py defines handler_{i} and parse_{i % 13}_value"
            inline.add(f"i{i}", text)
            raced.add(f"i{i}", text)
            query = f"edit handler_{i // 2} and parse_{i % 13}_value in src/mod_{i % 7}.py"
            assert raced.named_by(query, max_items=5) == inline.named_by(query, max_items=5)
    finally:
        stop.set()
        worker.join()
    assert raced.named_by("handler_299", max_items=5) == ["i299"]


def test_the_engine_scans_new_results_for_names_while_persisting(make_engine: MakeEngine) -> None:
    """The name scan runs in the deferred persistence, not in the capture: after
    ``persist_in_background`` every queued result is prepared, and a later turn that names
    one still touches it."""
    engine = make_engine()
    found = engine.capture_tool_result(
        tool_call_id="c1",
        tool_name="grep",
        arguments={"pattern": "ordering"},
        output="django/db/models/base.py:1692:    def _check_ordering(cls):",
    )
    index = engine.memory.working_set.references
    assert index._queued and not index._prepared  # pyright: ignore[reportPrivateUsage]
    engine.step()
    engine.persist_in_background()
    engine.wait()
    assert found.id in index._prepared  # pyright: ignore[reportPrivateUsage]
    base = engine.item(found.id).access_count
    engine.capture_turn("assistant", "The bug is in _check_ordering.", calls=["act"])
    assert engine.item(found.id).access_count == base + 1
