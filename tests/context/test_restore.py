"""What names an item to bring back (``veil.context.restore``): pointers, bare ids, and whether
expanding would restore anything. The verbs themselves are tested through the engine
(test_engine.py, test_reading.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.context.conftest import MakeEngine
from veil.context.restore import pointer_id, restoring


@pytest.mark.parametrize(
    ("text", "item_id"),
    [
        ("veil://warm/ci_0a1b", "ci_0a1b"),
        ("veil://cold/ci_0a1b", "ci_0a1b"),
        (" veil://live/ci_0a1b\n", "ci_0a1b"),
        ("ci_0a1b", "ci_0a1b"),
        ("call_3_1", "call_3_1"),
        ("veil://hot/ci_0a1b", "veil://hot/ci_0a1b"),  # not a pointer: taken as an id
        ("veil://warm/ci 0a1b", "veil://warm/ci 0a1b"),
    ],
)
def test_a_pointer_names_its_item_and_anything_else_is_an_id(text: str, item_id: str) -> None:
    assert pointer_id(text) == item_id


def test_expanding_restores_an_item_out_of_the_prompt_or_shown_truncated(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine()
    item = engine.capture_tool_result(tool_call_id="c1", tool_name="read", output="x = 1\n")
    assert not restoring(item)
    assert restoring(replace(item, tier="warm"))
    assert restoring(replace(item, partial=True))
    assert engine.restores(item.pointer) is False
    engine.evict(item.id)
    assert engine.restores(item.pointer) is True
