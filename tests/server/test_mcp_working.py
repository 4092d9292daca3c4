"""``veil mcp --project``'s working memory: recall lists the project's evicted results that
match (with the pointer ``expand`` takes), and ``expand`` gives them back byte for byte — read
from the store another process (the harness, the proxy) wrote."""

from __future__ import annotations

from pathlib import Path

from veil.context import ContextEngine
from veil.memory import Memory
from veil.server.mcp_expand import ProjectWorkingMemory
from veil.server.mcp_server import Binding, verb_tools
from veil.tape import open_store
from veil.testing import HashEmbedder
from veil.verbs import Services

TEXT = "database migration failed on the users table: duplicate key value violates constraint"


def test_recall_lists_evicted_results_and_expand_restores_them(tmp_path: Path) -> None:
    writer = open_store(str(tmp_path / "context.db"), embedder=HashEmbedder())
    engine = ContextEngine(writer, session_id="s1", scope="project:x", embedder=HashEmbedder())
    item = engine.add("tool_output", TEXT)
    engine.evict(item.id)
    engine.search("migration", limit=1)  # the engine indexes what it demoted
    engine.flush()
    writer.close()

    store = open_store(str(tmp_path / "context.db"), embedder=HashEmbedder())
    with Memory(tmp_path / "memory.db", embedder=HashEmbedder()) as memory:
        services = Services(memory=memory, working=ProjectWorkingMemory(store, "project:x"))
        tools = {t.name: t for t in verb_tools(services, Binding("project:x", "user"))}
        recalled = tools["recall"].handler({"query": "database migration users"})
        assert [e["pointer"] for e in recalled["earlier"]] == [item.pointer]
        unrelated = tools["recall"].handler({"query": "zebra giraffe savanna"})
        assert unrelated["earlier"] == []
        restored = tools["expand"].handler({"pointer": item.pointer})
        assert restored["content"] == TEXT
    store.close()
