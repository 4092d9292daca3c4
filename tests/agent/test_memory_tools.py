"""Each of the twelve memory tools, called by a (scripted) model through the real loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veil.agent.events import ToolEnd
from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext
from veil.agent.tools import coding_tools
from veil.context import ContextConfig
from veil.llm.messages import Message, UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.memory import Memory
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder, ScriptedModel

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_every_memory_tool_through_the_loop(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "b.py").write_text("B = 2\n")
    clock = FakeClock()
    extraction = ScriptedModel(
        [
            {
                "facts": [
                    {
                        "subject": "project",
                        "relation": "uses_tool",
                        "object": "pytest",
                        "statement": "The project uses pytest.",
                        "claimant": "user",
                    }
                ],
                "episodes": [],
            }
        ]
    )
    memory = Memory(
        tmp_path / "memory.db", complete=extraction, embedder=HashEmbedder(), clock=clock
    )
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder(), clock=clock)
    harness = VeilHarness(
        store=store,
        scope="project:t",
        memory=memory,
        embedder=HashEmbedder(),
        clock=clock,
        config=ContextConfig(window_tokens=50_000),
    )
    harness.engine.add("fact", "API base is /v1", belief=("api", "base", "/v1"))
    harness.engine.add("fact", "API base is /v2", belief=("api", "base", "/v2"))
    (conflict,) = harness.engine.conflicts()
    script = {
        "turns": [
            {"content": "", "tool_calls": [call("read", path="a.py"), call("read", path="b.py")]},
            {"content": "", "tool_calls": [call("veil_manifest")]},
            {"content": "", "tool_calls": [call("veil_pin", id="call_1_1")]},
            {"content": "", "tool_calls": [call("veil_pin", id="call_1_1", pinned=False)]},
            {"content": "", "tool_calls": [call("veil_evict", id="call_1_2")]},
            {"content": "", "tool_calls": [call("veil_expand", pointer="call_1_2")]},
            {"content": "", "tool_calls": [call("veil_evict", id="call_1_2")]},
            {"content": "", "tool_calls": [call("veil_load", pointer="call_1_2")]},
            {"content": "", "tool_calls": [call("veil_remember", text="We use pytest here.")]},
            {"content": "", "tool_calls": [call("veil_recall", query="which test tool")]},
            {
                "content": "",
                "tool_calls": [call("veil_history", subject="project", relation="uses_tool")],
            },
            {"content": "", "tool_calls": [call("veil_attempts")]},
            {"content": "", "tool_calls": [call("veil_conflicts")]},
            {
                "content": "",
                "tool_calls": [
                    call(
                        "veil_resolve",
                        conflict_id=conflict.id,
                        keep=conflict.b.item_id,
                        reason="v2 is current",
                    )
                ],
            },
            {"content": "", "tool_calls": [call("veil_mark_turn", id="nope", kind="decision")]},
            {"content": "", "tool_calls": [call("veil_expand", pointer="veil://warm/ci_missing")]},
            {"content": "done"},
        ]
    }
    provider = ScriptedProvider(script)
    harness.start("Inspect a.py and b.py")
    tools = [*coding_tools(), *harness.tools()]
    config = AgentLoopConfig(
        provider=provider,
        tools=tools,
        system_prompt="test",
        tool_context=ToolContext(cwd=tmp_path),
        **harness.hooks(),
    )
    messages: list[Message] = [UserMessage("Inspect a.py and b.py")]
    results = {
        e.call.name + ":" + e.call.id: e.result
        for e in run_agent(config, messages)
        if isinstance(e, ToolEnd)
    }
    text = {
        f"{k.split(':')[0]}:{k.split(':')[1].split('_')[1]}": v.content for k, v in results.items()
    }
    assert "<veil-manifest>" in text["veil_manifest:2"]
    assert text["veil_pin:3"].startswith("pinned") and text["veil_pin:4"].startswith("unpinned")
    assert "evicted" in text["veil_evict:5"] and "veil://warm/" in text["veil_evict:5"]
    assert text["veil_expand:6"] == "B = 2\n"
    assert text["veil_load:8"].endswith("B = 2\n")
    assert "remembered: 1 fact" in text["veil_remember:9"]
    assert "The project uses pytest." in text["veil_recall:10"]
    assert "pytest (current)" in text["veil_history:11"]
    assert "goal" in text["veil_attempts:12"]
    assert conflict.id in text["veil_conflicts:13"]
    assert "resolved" in text["veil_resolve:14"] and harness.engine.conflicts() == []
    mark = results[next(k for k in results if k.startswith("veil_mark_turn"))]
    expand_missing = results[next(k for k in results if k.endswith("call_16_1"))]
    assert mark.is_error and expand_missing.is_error
    # The assistant's memory has assistant authority: below the user's.
    (fact,) = memory.facts("project:t")
    assert fact.provenance.author_of_evidence == "assistant"
    store.close()
    memory.close()


def test_docs_list_every_tool(tmp_path: Path) -> None:
    text = DOCS.read_text()
    store = SQLiteStore(":memory:", embedder=HashEmbedder())
    memory = Memory(tmp_path / "m.db", complete=ScriptedModel([]), embedder=HashEmbedder())
    harness = VeilHarness(store=store, memory=memory, embedder=HashEmbedder())
    names = [t.spec.name for t in (*coding_tools(), *harness.tools())]
    assert len(names) == 19  # long-term memory on: every tool is offered
    for name in names:
        assert f"### `{name}`" in text
    memory.close()


def test_recall_lists_earlier_context_only_when_it_is_relevant(tmp_path: Path) -> None:
    """Nearest neighbours always exist; ``veil_recall`` lists only those above a similarity
    floor (and full-text matches), so an unrelated query lists no earlier context."""
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder())
    harness = VeilHarness(store=store, embedder=HashEmbedder())
    item = harness.engine.add("tool_output", "database migration failed on the users table")
    harness.engine.evict(item.id)
    recall = next(t for t in harness.tools() if t.spec.name == "veil_recall")
    ctx = ToolContext(cwd=tmp_path)
    related = recall.run({"query": "database migration users"}, ctx).content
    assert item.pointer in related
    unrelated = recall.run({"query": "zebra giraffe savanna"}, ctx).content
    assert item.pointer not in unrelated and unrelated == "nothing found"
    store.close()


def test_docs_tools_md_is_rendered_from_the_code() -> None:
    from veil.agent.tool_docs import render

    text = DOCS.read_text()
    start, end = text.index("## Coding tools"), text.index("## Behaviour notes")
    assert text[start:end] == render(), "stale: python -m veil.agent.tool_docs, paste it in"
