"""Typed hooks of the agent loop, and how several sets of them combine.

- ``transform_context(messages) -> messages``: before every LLM call (the eviction point);
  chained in order.
- ``transform_system(prompt) -> prompt``: before every LLM call; chained in order.
- ``convert_to_llm(request) -> request``: at the provider boundary only; chained in order.
- ``before_tool_call(call) -> Block | None``: before a tool runs; the first Block wins.
- ``after_tool_call(call, result) -> result | None``: after a tool ran; each hook sees the
  previous hook's patch.
- ``on_message(message)``: when an assistant message is complete; all are called, in order.
- ``on_turn_end(turn) -> Stop | None``: at every turn boundary (the budget check); the first
  Stop wins.

The loop never mutates the message list it is given by ``transform_context``; hooks return new
lists, so the transcript keeps every message while the request the model sees shrinks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from veil.agent.tool import ToolResult
from veil.llm.messages import AssistantMessage, Message, Request, ToolCall


@dataclass(frozen=True)
class Block:
    """Refuse a tool call; ``reason`` is what the model reads instead of a result."""

    reason: str


@dataclass(frozen=True)
class Stop:
    """End the run at this turn boundary and hand back to the user with ``summary``."""

    summary: str


TransformContext = Callable[[list[Message]], list[Message]]
TransformSystem = Callable[[str], str]
ConvertToLlm = Callable[[Request], Request]
BeforeToolCall = Callable[[ToolCall], Block | None]
AfterToolCall = Callable[[ToolCall, ToolResult], ToolResult | None]
OnMessage = Callable[[AssistantMessage], None]
OnTurnEnd = Callable[[int], Stop | None]


class Hooks(TypedDict, total=False):
    """The keyword arguments ``VeilHarness.hooks()`` returns for ``AgentLoopConfig``."""

    transform_context: TransformContext
    transform_system: TransformSystem
    convert_to_llm: ConvertToLlm
    before_tool_call: BeforeToolCall
    after_tool_call: AfterToolCall
    on_message: OnMessage
    on_turn_end: OnTurnEnd


def merge_hooks(*sets: Mapping[str, Any]) -> Hooks:
    """Combine hook sets with the merge rules in the module docstring."""
    merged: Hooks = {}
    transforms: dict[str, list[Callable[[Any], Any]]] = {}
    before: list[BeforeToolCall] = []
    after: list[AfterToolCall] = []
    on_message: list[OnMessage] = []
    on_turn_end: list[OnTurnEnd] = []
    for hooks in sets:
        for name in ("transform_context", "transform_system", "convert_to_llm"):
            if name in hooks:
                transforms.setdefault(name, []).append(hooks[name])
        if "before_tool_call" in hooks:
            before.append(hooks["before_tool_call"])
        if "after_tool_call" in hooks:
            after.append(hooks["after_tool_call"])
        if "on_message" in hooks:
            on_message.append(hooks["on_message"])
        if "on_turn_end" in hooks:
            on_turn_end.append(hooks["on_turn_end"])

    def chain(fns: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
        def run(value: Any) -> Any:
            for fn in fns:
                value = fn(value)
            return value

        return run

    for name, fns in transforms.items():
        merged[name] = chain(fns)  # type: ignore[literal-required]
    if before:

        def before_all(call: ToolCall) -> Block | None:
            for fn in before:
                block = fn(call)
                if block is not None:
                    return block
            return None

        merged["before_tool_call"] = before_all
    if after:

        def after_all(call: ToolCall, result: ToolResult) -> ToolResult | None:
            current = result
            for fn in after:
                patched = fn(call, current)
                if patched is not None:
                    current = patched
            return current

        merged["after_tool_call"] = after_all
    if on_message:

        def message_all(message: AssistantMessage) -> None:
            for fn in on_message:
                fn(message)

        merged["on_message"] = message_all
    if on_turn_end:

        def turn_end_all(turn: int) -> Stop | None:
            for fn in on_turn_end:
                stop = fn(turn)
                if stop is not None:
                    return stop
            return None

        merged["on_turn_end"] = turn_end_all
    return merged
