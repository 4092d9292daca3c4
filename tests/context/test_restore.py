"""What names an item to bring back (``veil.context.restore``): pointers, bare ids, whether
expanding would restore anything, the restorer over a working memory alone, and the expand tool
stubs name (the caller's; the context layer spells none). The verbs themselves are tested
through the engine (test_engine.py, test_reading.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import veil.context
from tests.context.conftest import MakeEngine
from veil.context import ContextConfig
from veil.context.capture import Origin, new_item
from veil.context.projection import ContextProjection
from veil.context.restore import Restorer, pointer_id, restoring
from veil.context.working_memory import WorkingMemory
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder
from veil.tokens import estimate_tokens


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


def test_the_restorer_needs_only_the_working_memory(tmp_path: Path, clock: FakeClock) -> None:
    """The engine's parts are objects given what they use: a :class:`Restorer` over a
    :class:`WorkingMemory` built alone brings an item back, and the memory records the regret."""
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder(), clock=clock)
    store.register(ContextProjection())
    memory = WorkingMemory(
        store,
        session_id="s1",
        scope="project:test",
        config=ContextConfig(),
        embedder=None,
        clock=clock,
        token_counter=estimate_tokens,
    )
    origin = Origin(memory.tick, clock.now(), "s1", memory.config, estimate_tokens)
    item = memory.add(new_item("tool_output", "x = 1\n", origin, tool_name="read", target="a.py"))
    memory.move(item, "warm", stage=0, reason="test")
    restored = Restorer(memory).expand(item.pointer)
    assert restored.tier == "live" and restored.content == "x = 1\n"
    assert memory.expansions == 1
    memory.close()
    store.close()


@pytest.mark.parametrize(
    ("expand_tool", "stub_says", "manifest_says"),
    [
        ("my_expand", "my_expand veil://warm/", "(my_expand restores a pointer)"),
        (None, "; no expand tool here: run the call again", "(no expand tool: run a call again)"),
    ],
)
def test_stubs_and_the_manifest_name_the_expand_tool_the_caller_configured(
    make_engine: MakeEngine, expand_tool: str | None, stub_says: str, manifest_says: str
) -> None:
    engine = make_engine(expand_tool=expand_tool)
    item = engine.capture_tool_result(tool_call_id="c1", tool_name="read", output="x = 1\n")
    engine.evict(item.id)
    assert stub_says in engine.stub(item.id)
    assert manifest_says in engine.manifest()


def test_the_context_layer_spells_no_surface_s_tool_name() -> None:
    """Which tool restores a pointer is the surface's to say (the harness, the adapters, the
    proxy set ``ContextConfig.expand_tool``); ``veil.context`` spells none."""
    context = Path(veil.context.__file__).parent
    for path in sorted(context.glob("*.py")):
        text = path.read_text()
        for name in ("veil_expand", "mcp__veil"):
            assert name not in text, f"{path.name} spells {name!r}"
    assert ContextConfig().expand_tool is None
