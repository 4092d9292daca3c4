"""Bring your own loop: Veil's memory layer as hooks of a minimal agent loop.

The same hooks the ``veil`` command installs: ``AgentLoopConfig(..., **harness.hooks())``. Here
the model is scripted so the example runs offline; swap in
``veil.llm.registry.provider_from_spec("openai:gpt-4.1-mini")`` for a real one::

    python examples/custom_loop.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext
from veil.agent.tools import coding_tools
from veil.context import ContextConfig
from veil.llm.messages import Message, UserMessage
from veil.llm.scripted import ScriptedProvider


def main() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "hello.py").write_text("print('hello')\n" * 200)
        harness = VeilHarness(
            db_path=root / ".veil" / "context.db",
            project_root=root,
            config=ContextConfig(window_tokens=3_000, reserve_tokens=500),
        )
        provider = ScriptedProvider(
            {
                "turns": [
                    {
                        "content": "Reading.",
                        "tool_calls": [{"name": "read", "arguments": {"path": "hello.py"}}],
                    },
                    {
                        "content": "Checking.",
                        "tool_calls": [
                            {"name": "bash", "arguments": {"command": "python hello.py | wc -l"}}
                        ],
                    },
                    {"content": "hello.py prints hello 200 times."},
                ]
            }
        )
        task = "What does hello.py do?"
        harness.start(task)
        tools = [*coding_tools(), *harness.tools()]
        harness.use_tools(tools, system_prompt="You are a helpful coding agent.")
        config = AgentLoopConfig(
            provider=provider,
            tools=tools,
            system_prompt="You are a helpful coding agent.",
            tool_context=ToolContext(cwd=root),
            **harness.hooks(),
        )
        messages: list[Message] = [UserMessage(task)]
        answer = ""
        for event in run_agent(config, messages):
            print(event.kind, getattr(event, "message", "") or "")
            if event.kind == "agent_end":
                answer = event.message
        print(harness.engine.manifest())
        harness.store.close()
        return answer


if __name__ == "__main__":
    main()
