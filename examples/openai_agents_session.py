"""Veil's session for the OpenAI Agents SDK, offline.

The model is the SDK's own ScriptedModel (``agents.testing``): ten runs, each reading one
large log, then a run that follows a stub's pointer with ``veil_expand``. The session keeps
every item on Veil's tape; what it hands back to each run has the older logs stubbed. A
second ``VeilSession`` on the same store — as after a restart — sees the same items. Use a
real model by dropping ``model=`` (and setting ``OPENAI_API_KEY``).

    python examples/openai_agents_session.py [STORE_DIR]
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from veil.integrations.openai_agents import VeilSession

RUNS = 10
POINTER = re.compile(r"veil://\w+/ci_[0-9a-f]+")


def log_text(n: int) -> str:
    return f"log {n}: " + " ".join(f"worker-{n} step {i} ok" for i in range(600))


@function_tool
def read_log(n: int) -> str:
    """Read one worker's log.

    Args:
        n: the worker's number
    """
    return log_text(n)


def outputs(items: list[Any]) -> list[str]:
    return [str(i["output"]) for i in items if i.get("type") == "function_call_output"]


def texts(items: list[Any]) -> list[str]:
    """Tool outputs and Veil's notes (a run of whole steps out of the prompt is one note)."""
    notes = [str(i["content"]) for i in items if i.get("role") == "system"]
    return [*outputs(items), *notes]


async def main(store: Path) -> int:
    set_tracing_disabled(True)  # offline: no trace export
    session = VeilSession("example", db=store / "context.db", window_tokens=16_000)
    model = ScriptedModel()
    agent = Agent(name="reader", model=model, tools=[read_log, session.expand_tool()])
    for n in range(1, RUNS + 1):
        model.extend([[function_call("read_log", {"n": n}, call_id=f"r{n}")],
                      [assistant_message(f"log {n} read")]])  # fmt: skip
        await Runner.run(agent, f"Read log {n}.", session=session)
        sent = len(json.dumps(model.calls[-1].input))
        full = len(json.dumps(session.raw_items()))
        print(f"run {n:2}: the model's last request had {sent:7,} characters "
              f"(keeping everything: {full:7,})")  # fmt: skip

    def follow_stub(call: ModelCall) -> list[Any]:
        stub = next(o for o in texts(call.input) if POINTER.search(o))
        print(f"the model sees old logs as: {stub}")
        found = POINTER.search(stub)
        assert found is not None
        return [function_call("veil_expand", {"pointer": found.group(0)}, call_id="x1")]

    model.extend([ModelStep.respond(follow_stub), [assistant_message("done")]])
    await Runner.run(agent, "Show me an old log again.", session=session)
    restored = outputs(model.calls[-1].input)[-1]
    print(f"veil_expand gave back the log in full: {restored.startswith('log ')}")
    session.close()

    again = VeilSession("example", db=store / "context.db", window_tokens=16_000)
    count = len(again.raw_items())
    print(f"a new session object on the same store holds {count} items")
    again.close()
    return count


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp)))
