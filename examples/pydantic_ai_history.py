"""Veil's working memory inside a pydantic-ai agent, offline.

The model is pydantic-ai's own FunctionModel playing a scripted agent: it reads twelve large
logs, then follows the pointer in the first log's stub with ``veil_expand``. Each request
prints how many tokens of tool results the model received against what keeping everything
would have sent. Swap ``FunctionModel(scripted)`` for a real model (``"openai:gpt-4.1-mini"``)
to use it for real.

    python examples/pydantic_ai_history.py [STORE_DIR]
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from veil.integrations.pydantic_ai import veil_history

LOGS = 12
POINTER = re.compile(r"veil://\w+/ci_[0-9a-f]+")


def log_text(n: int) -> str:
    return f"log {n}: " + " ".join(f"worker-{n} step {i} ok" for i in range(600))


def main(store: Path) -> str:
    history = veil_history(store / "context.db", session_id="example", window_tokens=16_000)

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """The agent: read every log, then look at log 1 again through its stub."""
        results = [
            p for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]  # fmt: skip
        if len(results) < LOGS:
            n = len(results) + 1
            return ModelResponse(parts=[ToolCallPart("read_log", {"n": n}, tool_call_id=f"r{n}")])
        if len(results) == LOGS:
            stub = str(results[0].content)
            print(f"the model sees log 1 as: {stub}")
            found = POINTER.search(stub)
            assert found is not None, "log 1 was not evicted"
            args = {"pointer": found.group(0)}
            return ModelResponse(parts=[ToolCallPart("veil_expand", args, tool_call_id="x1")])
        restored = str(results[-1].content)
        print(f"veil_expand gave back log 1 in full: {restored == log_text(1)}")
        return ModelResponse(parts=[TextPart("Every worker finished; log 1 is clean.")])

    agent = Agent(
        FunctionModel(scripted),
        capabilities=[ProcessHistory(history)],  # pydantic-ai 1.x: history_processors=[history]
        toolsets=[history.toolset()],
    )

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read one worker's log.

        Args:
            n: the worker's number
        """
        return log_text(n)

    result = agent.run_sync("Did any worker fail? Read all the logs.")
    for number, report in enumerate(history.reports, 1):
        print(
            f"request {number:2}: {report.results:2} tool results, "
            f"{report.tokens_rendered:6,} tokens sent ({report.tokens_full:6,} in full)"
        )
    history.close()
    print(result.output)
    return result.output


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
