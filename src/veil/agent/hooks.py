"""Typed hooks of the agent loop.

- ``transform_context(messages) -> messages``: before every LLM call (the eviction point).
- ``transform_system(prompt) -> prompt``: before every LLM call, after ``transform_context``.
- ``convert_to_llm(request) -> request``: at the provider boundary only.
- ``before_tool_call(call) -> Block | None``: before a tool runs; a Block refuses the call.
- ``after_tool_call(call, result) -> result | None``: after a tool ran; a result replaces it.
- ``on_message(message)``: when an assistant message is complete.
- ``on_turn_end(turn) -> Stop | None``: at every turn boundary; a Stop ends the run.
- ``on_response(request, response)``: after every model response (usage calibrates tokens).
- ``on_overflow(error, count) -> str | None``: the provider refused the request as too long;
  evict and return None to retry once, or return why the run ends.
- ``drain_events() -> events``: what the hooks want shown (evictions, attempts, level changes);
  the loop yields them into its own stream after each phase.

Every hook runs on the loop's thread, in the model's order (tool execution alone is concurrent;
see :mod:`veil.agent.loop`), so a hook may keep state without locks.

The loop never mutates the message list it is given by ``transform_context``; hooks return new
lists, so the transcript keeps every message while the request the model sees shrinks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypedDict

from veil.agent.events import AgentEvent
from veil.agent.tool import ToolResult
from veil.llm.messages import (
    AssistantMessage,
    ContextOverflow,
    Message,
    Request,
    Response,
    ToolCall,
)


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
DrainEvents = Callable[[], Sequence[AgentEvent]]
OnResponse = Callable[[Request, Response], None]
OnOverflow = Callable[[ContextOverflow, int], str | None]


class Hooks(TypedDict, total=False):
    """The keyword arguments ``VeilHarness.hooks()`` returns for ``AgentLoopConfig``."""

    transform_context: TransformContext
    transform_system: TransformSystem
    convert_to_llm: ConvertToLlm
    before_tool_call: BeforeToolCall
    after_tool_call: AfterToolCall
    on_message: OnMessage
    on_turn_end: OnTurnEnd
    drain_events: DrainEvents
    on_response: OnResponse
    on_overflow: OnOverflow
