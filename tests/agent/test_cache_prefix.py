"""Cache-friendly requests: between two batches of evictions a request is the previous one's
bytes plus what is new — the manifest (as of the last batch) and the convergence note ride at
the end, after the new messages — so provider prompt caches (OpenAI, Anthropic, llama.cpp)
re-process only what is new. A batch turns results into stubs with pointers, nothing else.
Checked on the wire format the OpenAI-compatible provider sends."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext
from veil.agent.tools import coding_tools
from veil.context import ContextConfig
from veil.context.manifest import MANIFEST_OPEN
from veil.llm.messages import Message, Request, UserMessage
from veil.llm.openai_provider import OpenAIProvider
from veil.llm.scripted import ScriptedProvider
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder


def wire(request: Request) -> list[str]:
    """The request as sent, one canonical JSON string per message (tools first)."""
    tools = json.dumps(OpenAIProvider.wire_tools(request), sort_keys=True)
    messages = OpenAIProvider.wire_messages(request)
    return [tools, *(json.dumps(m, sort_keys=True) for m in messages)]


def run(tmp_path: Path, window: int, files: int) -> list[Request]:
    for n in range(files):
        (tmp_path / f"f{n}.py").write_text(f"# file {n}\n" + "value = 1  # padding\n" * 120)
    turns: list[dict[str, Any]] = [
        {
            "content": f"Reading {n}.",
            "tool_calls": [{"name": "read", "arguments": {"path": f"f{n}.py"}}],
        }
        for n in range(files)
    ] + [{"content": "Done."}]
    clock = FakeClock()
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder(), clock=clock)
    harness = VeilHarness(
        store=store,
        scope="project:cache",
        embedder=HashEmbedder(),
        clock=clock,
        config=ContextConfig(window_tokens=window, reserve_tokens=500),
    )
    tools = [*coding_tools(), *harness.tools()]
    harness.use_tools(tools, system_prompt="You read files.")
    provider = ScriptedProvider({"turns": turns})
    config = AgentLoopConfig(
        provider=provider,
        tools=tools,
        system_prompt="You read files.",
        tool_context=ToolContext(cwd=tmp_path),
        **harness.hooks(),
    )
    messages: list[Message] = [UserMessage("Read the files")]
    harness.start("Read the files", messages)
    list(run_agent(config, messages))
    harness.engine.close()  # its background writes land before the store closes
    store.close()
    return list(provider.requests)


def test_without_eviction_each_request_extends_the_previous_one(tmp_path: Path) -> None:
    requests = run(tmp_path, window=200_000, files=6)
    assert len(requests) == 7
    for before, after in itertools.pairwise(requests):
        a, b = wire(before), wire(after)
        assert MANIFEST_OPEN not in a[-1]  # nothing evicted yet: no manifest to carry
        assert b[: len(a)] == a, "the prefix changed without an eviction"
        assert len(b) > len(a)


def test_a_batch_changes_only_results_into_stubs(tmp_path: Path) -> None:
    requests = run(tmp_path, window=6_000, files=8)
    batches = 0
    manifests: list[str] = []
    for before, after in itertools.pairwise(requests):
        a, b = wire(before), wire(after)
        if MANIFEST_OPEN in a[-1]:
            manifests.append(a[-1])
            a = a[:-1]  # the manifest rides after the new messages
        changed = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
        if not changed:
            continue
        batches += 1
        # What changed is a tool result that became a stub with a pointer, or the note of a
        # run of whole steps that left (after which the messages shift: a run is one note);
        # everything before it (tools, system prompt, earlier messages) was kept byte for byte.
        assert changed[0] > 1
        assert "veil://" in b[changed[0]], b[changed[0]][:200]
    assert 1 <= batches < len(requests) - 1
    assert len(set(manifests)) < len(manifests)  # as of the last batch: not new every turn
