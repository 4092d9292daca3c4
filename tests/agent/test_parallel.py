"""Parallel tool calls through the real loop and ``VeilHarness`` (issue: six parallel reads per
turn for 20 turns crashed about 3 runs in 8, because capture and eviction ran on the tools'
worker threads). The three phases keep every hook on the loop's thread; only ``run`` is
concurrent — and that is checked too, with a barrier two calls can only pass together."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from veil.agent.events import AgentEnd, Evicted, Notice, ToolEnd, ToolStart
from veil.agent.harness import VeilHarness
from veil.agent.hooks import Block
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext, ToolResult
from veil.agent.tools import coding_tools
from veil.context import ContextConfig
from veil.llm.messages import Message, ToolCall, ToolSpec, UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder

FILES = 24
TURNS = 20
PER_TURN = 6


def make_repo(root: Path) -> None:
    for n in range(FILES):
        body = "".join(f"def f{n}_{i}(x):\n    return x + {i}  # module {n}\n" for i in range(60))
        (root / f"m{n}.py").write_text(body)


def script() -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    for t in range(TURNS):
        calls: list[dict[str, Any]] = [
            {"name": "read", "arguments": {"path": f"m{(t * PER_TURN + k) % FILES}.py"}}
            for k in range(PER_TURN)
        ]
        if t % 5 == 4:
            calls.append({"name": "grep", "arguments": {"pattern": f"module {t % FILES}"}})
            calls.append({"name": "ls", "arguments": {}})
        turns.append({"content": f"Reading batch {t}.", "tool_calls": calls})
    turns.append({"content": "Read everything."})
    return {"turns": turns}


def test_many_parallel_reads_through_the_harness(tmp_path: Path) -> None:
    make_repo(tmp_path)
    clock = FakeClock()
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder(), clock=clock)
    harness = VeilHarness(
        store=store,
        scope="project:parallel",
        embedder=HashEmbedder(),
        clock=clock,
        config=ContextConfig(window_tokens=32_000, reserve_tokens=4_000),
    )
    tools = [*coding_tools(), *harness.tools()]
    harness.use_tools(tools, system_prompt="You read code.")
    loop_thread = threading.get_ident()
    hook_threads: set[int] = set()
    hooks = harness.hooks()
    after, before = harness.after_tool_call, harness.before_tool_call

    def watched_after(call: ToolCall, result: ToolResult) -> ToolResult | None:
        hook_threads.add(threading.get_ident())
        return after(call, result)

    def watched_before(call: ToolCall) -> Block | None:
        hook_threads.add(threading.get_ident())
        return before(call)

    hooks["after_tool_call"] = watched_after
    hooks["before_tool_call"] = watched_before
    provider = ScriptedProvider(script())
    config = AgentLoopConfig(
        provider=provider,
        tools=tools,
        system_prompt="You read code.",
        tool_context=ToolContext(cwd=tmp_path),
        max_turns=TURNS + 5,
        **hooks,
    )
    messages: list[Message] = [UserMessage("Read the whole package")]
    harness.start("Read the whole package", messages)
    events = list(run_agent(config, messages))

    end = events[-1]
    assert isinstance(end, AgentEnd) and end.reason == "done", end
    assert not [e for e in events if isinstance(e, Notice) and e.topic == "hook_error"]
    # Every call ended, in the order the model asked for them, each after its start.
    asked = [c.id for r in provider.replies for c in r.message.tool_calls]
    ended = [e.call.id for e in events if isinstance(e, ToolEnd)]
    assert ended == asked
    assert all(not e.result.is_error for e in events if isinstance(e, ToolEnd))
    started = [e.call.id for e in events if isinstance(e, ToolStart)]
    assert started == asked
    # Hooks ran on the loop's thread only.
    assert hook_threads == {loop_thread}
    # Every result was captured exactly once, and the window really forced evictions.
    captured = [i for i in harness.engine.items() if i.tool_call_id in set(asked)]
    assert sorted(i.tool_call_id or "" for i in captured) == sorted(asked)
    assert any(isinstance(e, Evicted) for e in events)
    sent = provider.requests[-1]
    total = sum(len(getattr(m, "content", "")) for m in messages)
    assert sum(len(getattr(m, "content", "")) for m in sent.messages) < total / 2
    assert harness.engine.live_tokens <= harness.engine.budget
    store.close()


class BarrierTool:
    """A parallel-safe tool whose calls wait for each other: two of them can only finish when
    they run at the same time."""

    def __init__(self, name: str, barrier: threading.Barrier) -> None:
        self.spec = ToolSpec(name, "waits", {"type": "object", "properties": {}})
        self.barrier = barrier
        self.mutates = False
        self.parallel_safe = True
        self.threads: list[int] = []

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.threads.append(threading.get_ident())
        self.barrier.wait(timeout=10)
        return ToolResult("met")


def test_parallel_safe_calls_really_run_concurrently_and_hooks_stay_on_the_loop(
    tmp_path: Path,
) -> None:
    barrier = threading.Barrier(2)
    a, b = BarrierTool("a", barrier), BarrierTool("b", barrier)
    order: list[str] = []
    loop_thread = threading.get_ident()
    threads: set[int] = set()

    def before(call: ToolCall) -> Block | None:
        threads.add(threading.get_ident())
        order.append(f"before {call.name}")
        return None

    def after(call: ToolCall, result: ToolResult) -> ToolResult | None:
        threads.add(threading.get_ident())
        order.append(f"after {call.name}")
        return None

    provider = ScriptedProvider(
        {
            "turns": [
                {
                    "content": "",
                    "tool_calls": [{"name": "a", "arguments": {}}] * 1
                    + [{"name": "b", "arguments": {}}],
                },
                {"content": "ok"},
            ]
        }
    )
    config = AgentLoopConfig(
        provider=provider,
        tools=[a, b],
        system_prompt="",
        tool_context=ToolContext(cwd=tmp_path),
        before_tool_call=before,
        after_tool_call=after,
    )
    events = list(run_agent(config, [UserMessage("go")]))
    ends = [e for e in events if isinstance(e, ToolEnd)]
    assert [e.result.content for e in ends] == ["met", "met"]
    assert order == ["before a", "before b", "after a", "after b"]
    assert threads == {loop_thread}
    assert a.threads[0] != b.threads[0]  # two worker threads, at the same time


def test_a_hook_that_raises_is_an_error_result_and_a_notice_not_the_end(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A = 1\n")

    def after(call: ToolCall, result: ToolResult) -> ToolResult | None:
        raise RuntimeError("capture broke")

    def before(call: ToolCall) -> Block | None:
        if call.arguments.get("path") == "b.py":
            raise KeyError("no such rule")
        return None

    provider = ScriptedProvider(
        {
            "turns": [
                {
                    "content": "",
                    "tool_calls": [
                        {"name": "read", "arguments": {"path": "a.py"}},
                        {"name": "read", "arguments": {"path": "b.py"}},
                    ],
                },
                {"content": "still here"},
            ]
        }
    )
    config = AgentLoopConfig(
        provider=provider,
        tools=coding_tools(),
        system_prompt="",
        tool_context=ToolContext(cwd=tmp_path),
        before_tool_call=before,
        after_tool_call=after,
    )
    events = list(run_agent(config, [UserMessage("go")]))
    end = events[-1]
    assert isinstance(end, AgentEnd) and (end.reason, end.message) == ("done", "still here")
    first, second = (e for e in events if isinstance(e, ToolEnd))
    assert first.result.is_error and "A = 1" in first.result.content
    assert (
        "after_tool_call hook failed on read: RuntimeError: capture broke" in first.result.content
    )
    assert second.result.is_error and "was not run" in second.result.content
    notices = [e.text for e in events if isinstance(e, Notice) and e.topic == "hook_error"]
    assert any("before_tool_call hook failed on read: KeyError" in n for n in notices)
    assert any("after_tool_call hook failed" in n for n in notices)
    # The model was told: the next request carries both error results.
    results = [m for m in provider.requests[-1].messages if getattr(m, "is_error", False)]
    assert len(results) == 2
