"""veil.integrations.pydantic_ai inside the real pydantic-ai: an Agent driven by pydantic-ai's
own FunctionModel, the processor installed the documented v2 way (ProcessHistory)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, AgentRunResult
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
from pydantic_ai.models.test import TestModel

from veil.integrations.pydantic_ai import VeilHistory, memory_toolset, veil_history
from veil.memory import Memory
from veil.testing import HashEmbedder, ScriptedModel

POINTER = re.compile(r"veil://(?:warm|cold)/ci_[0-9a-f]+")
LOGS = 20


def log_text(n: int) -> str:
    """A large, distinctive tool output (about 2,600 tokens)."""
    return f"log {n}: " + " ".join(f"worker-{n} step {i} ok" for i in range(700))


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p for m in messages if isinstance(m, ModelRequest) for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]  # fmt: skip


def received_chars(messages: list[ModelMessage]) -> int:
    """Characters of every part the model receives."""
    total = 0
    for message in messages:
        for part in message.parts:
            total += len(str(getattr(part, "content", "") or getattr(part, "args", "") or ""))
    return total


def run(agent: Agent[None, str], prompt: str, **options: Any) -> AgentRunResult[str]:
    """``agent.run`` in a fresh event loop that is closed afterwards (``run_sync`` leaves a
    loop of its own open for the rest of the process, which pytest reports as a leak)."""
    return asyncio.run(agent.run(prompt, **options))


def history(tmp_path: Path, session: str = "s1", window: int = 16_000) -> VeilHistory:
    return veil_history(tmp_path / "context.db", session_id=session, window_tokens=window,
                        embedder=HashEmbedder())  # fmt: skip


def agent_with(
    processor: VeilHistory, model: Callable[[list[ModelMessage], AgentInfo], ModelResponse]
) -> Agent[None, str]:
    agent = Agent(
        FunctionModel(model),
        capabilities=[ProcessHistory(processor)],
        toolsets=[processor.toolset()],
    )

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read one worker's log.

        Args:
            n: the worker's number
        """
        return log_text(n)

    return agent


def test_the_messages_the_model_receives_shrink_and_a_stub_expands(tmp_path: Path) -> None:
    sizes: list[int] = []
    seen: list[list[ModelMessage]] = []
    expanded: dict[str, str] = {}
    stub_before: dict[str, str] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sizes.append(received_chars(messages))
        seen.append(messages)
        step = len(sizes)
        if step <= LOGS:
            return ModelResponse(
                parts=[ToolCallPart("read_log", {"n": step}, tool_call_id=f"r{step}")]
            )
        if step == LOGS + 1:  # the model wants log 1 again: it follows the stub's pointer
            stub = next(p for p in returns(messages) if p.tool_call_id == "r1")
            stub_before["r1"] = str(stub.content)
            found = POINTER.search(str(stub.content))
            assert found is not None, stub.content
            expanded["pointer"] = found.group(0)
            args = {"pointer": found.group(0)}
            return ModelResponse(parts=[ToolCallPart("veil_expand", args, tool_call_id="x1")])
        return ModelResponse(parts=[TextPart("worker 1 was fine")])

    processor = history(tmp_path)
    result = run(agent_with(processor, model), "Which worker failed? Read all the logs.")
    assert result.output == "worker 1 was fine"

    keep_all = sum(len(log_text(n)) for n in range(1, LOGS + 1))
    # what the model received really shrank: bounded by the window, not growing with the run
    assert max(sizes) < 4 * len(log_text(1)) < keep_all / 4
    assert sizes[LOGS] < keep_all / 5
    last_logs = returns(seen[LOGS])
    stubbed = [p for p in last_logs if POINTER.search(str(p.content))]
    assert len(stubbed) >= LOGS - 4
    for part in stubbed:
        assert str(part.content).startswith(f"[veil: read_log {part.tool_call_id[1:]} — ")
        assert "veil_expand" in str(part.content)
    report = processor.reports[LOGS]
    assert report.tokens_rendered < report.tokens_full / 5

    # after veil_expand the full log is back, once: in the expand result, not twice
    final = seen[LOGS + 1]
    full = log_text(1)
    contents = [str(p.content) for p in returns(final)]
    assert contents.count(full) == 1
    assert next(p for p in returns(final) if p.tool_call_id == "x1").content == full
    original = next(p for p in returns(final) if p.tool_call_id == "r1")
    # the original place keeps the stub it showed (the request's prefix does not change)
    assert str(original.content) == str(stub_before["r1"])
    assert processor.engine.resolve_pointer(expanded["pointer"]).tier == "live"


def test_a_new_processor_on_the_same_store_carries_on(tmp_path: Path) -> None:
    def first(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages) + 1
        if step <= 6:
            return ModelResponse(
                parts=[ToolCallPart("read_log", {"n": step}, tool_call_id=f"r{step}")]
            )
        return ModelResponse(parts=[TextPart("read six")])

    processor = history(tmp_path)
    done = run(agent_with(processor, first), "Read six logs.")
    items = len(processor.engine.items())
    processor.close()

    received: list[list[ModelMessage]] = []

    def second(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(messages)
        return ModelResponse(parts=[TextPart("ok")])

    again = history(tmp_path)  # a new process: same store, same session
    run(agent_with(again, second), "And now?", message_history=done.all_messages())
    assert len(again.engine.items()) == items + 2  # nothing captured twice (the new turns)
    parts = returns(received[0])
    assert len(parts) == 6 and any(POINTER.search(str(p.content)) for p in parts)
    pointer = next(POINTER.search(str(p.content)) for p in parts if POINTER.search(str(p.content)))
    assert pointer is not None
    n = int(next(p.tool_call_id for p in parts if pointer.group(0) in str(p.content))[1:])
    assert again.window.expand(pointer.group(0)) == log_text(n)
    again.close()


def test_expanding_a_pointer_that_names_nothing_asks_the_model_again(tmp_path: Path) -> None:
    retried: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest) and any(
            isinstance(p, ToolReturnPart) and p.outcome == "retried" for p in last.parts
        ):
            retried.extend(str(p.content) for p in last.parts if isinstance(p, ToolReturnPart))
            return ModelResponse(parts=[TextPart("giving up")])
        args = {"pointer": "veil://warm/ci_nothing"}
        return ModelResponse(parts=[ToolCallPart("veil_expand", args, tool_call_id="x")])

    processor = history(tmp_path)
    assert run(agent_with(processor, model), "go").output == "giving up"
    assert len(retried) == 1 and "names no item" in retried[0] and "veil://" in retried[0]


def test_memory_tools_recall_and_remember_for_one_user(tmp_path: Path) -> None:
    extraction = {
        "facts": [{"subject": "user", "relation": "prefers", "object": "emacs",
                   "statement": "The user prefers emacs.", "volatility": "durable",
                   "claimant": "user", "supersedes": None}],
        "episodes": [],
    }  # fmt: skip
    memory = Memory(tmp_path / "memory.db", complete=ScriptedModel([extraction]),
                    embedder=HashEmbedder())  # fmt: skip
    answers: list[str] = []
    schemas: dict[str, dict[str, object]] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        schemas.update({t.name: t.parameters_json_schema for t in info.function_tools})
        answers.extend(str(p.content) for p in returns(messages[-1:]))
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step == 0:
            text = {"text": "The user said they prefer emacs."}
            return ModelResponse(parts=[ToolCallPart("veil_remember", text, tool_call_id="m")])
        if step == 1:
            query = {"query": "which editor", "token_budget": 200}
            return ModelResponse(parts=[ToolCallPart("veil_recall", query, tool_call_id="q")])
        return ModelResponse(parts=[TextPart("emacs")])

    agent = Agent(FunctionModel(model), toolsets=[memory_toolset(memory, user_id="u1")])
    assert run(agent, "Remember my editor, then check it.").output == "emacs"
    assert answers == [
        "remembered: 1 fact",
        "## Facts\n- The user prefers emacs. (per assistant; not confirmed by the user)",
    ]
    assert memory.facts("u1")[0].provenance.author_of_evidence == "assistant"
    assert memory.facts("u2") == []
    for name in ("veil_recall", "veil_remember"):
        properties = schemas[name]["properties"]
        assert isinstance(properties, dict) and properties
        for prop in properties.values():
            assert isinstance(prop, dict) and len(str(prop.get("description", ""))) > 10
    assert "user_id" not in schemas["veil_recall"]["properties"]  # type: ignore[operator]
    memory.close()


def test_pydantic_ais_test_model_runs_through_the_processor(tmp_path: Path) -> None:
    """TestModel calls every tool once with generated arguments, then answers."""
    processor = history(tmp_path)
    agent = agent_with(processor, lambda m, i: ModelResponse(parts=[TextPart("unused")]))
    with agent.override(model=TestModel(call_tools=["read_log"])):
        result = run(agent, "Read a log.")
    assert returns(result.all_messages())[0].content == log_text(0)
    assert sum(1 for i in processor.engine.items() if i.tool_call_id) == 1


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="window_tokens must be positive"):
        veil_history(":memory:", window_tokens=0, embedder=HashEmbedder())
