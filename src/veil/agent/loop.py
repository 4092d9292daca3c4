"""The agent loop as plain functions (after pi-mono): ask the model, run the tools it asked for,
repeat until it answers without tools, a hook stops it, or it runs out of turns.

Everything the memory layer does happens through hooks (:mod:`veil.agent.hooks`): the loop
itself knows nothing about eviction, attempts or memory. It yields events
(:mod:`veil.agent.events`) so a TUI, print mode and ``--json`` all watch the same run.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from veil.agent.events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageUpdate,
    Notice,
    RequestSent,
    ToolEnd,
    ToolStart,
    TurnEnd,
    TurnStart,
)
from veil.agent.hooks import (
    AfterToolCall,
    BeforeToolCall,
    ConvertToLlm,
    OnMessage,
    OnTurnEnd,
    TransformContext,
    TransformSystem,
)
from veil.agent.schema import validate_arguments
from veil.agent.tool import Tool, ToolContext, ToolError, ToolResult
from veil.llm.messages import (
    AssistantMessage,
    Done,
    Message,
    ProviderError,
    Request,
    Response,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from veil.llm.provider import Provider

Decide = Callable[[str, dict[str, Any]], tuple[bool, str | None]]
"""Permission decision for mutating tools: (allowed, reason when refused)."""


def allow_all(tool_name: str, arguments: dict[str, Any]) -> tuple[bool, str | None]:
    return True, None


@dataclass
class AgentLoopConfig:
    provider: Provider
    tools: Sequence[Tool]
    system_prompt: str
    tool_context: ToolContext
    permission: Decide = allow_all
    max_turns: int = 50
    transform_context: TransformContext | None = None
    transform_system: TransformSystem | None = None
    convert_to_llm: ConvertToLlm | None = None
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    on_message: OnMessage | None = None
    on_turn_end: OnTurnEnd | None = None
    steering: Callable[[], list[UserMessage]] | None = None
    """Messages from the user while the agent works; added before the next model call."""
    follow_up: Callable[[], list[UserMessage]] | None = None
    """Asked when the agent would stop; more messages mean more work."""
    abort: threading.Event = field(default_factory=threading.Event)
    max_tokens: int | None = None


def run_agent(
    config: AgentLoopConfig, messages: list[Message], *, session_id: str = ""
) -> Iterator[AgentEvent]:
    """Run until done; ``messages`` (the transcript) is appended to in place."""
    yield AgentStart(session_id)
    turn = 0
    tools = {t.spec.name: t for t in config.tools}
    while True:
        if config.abort.is_set():
            yield AgentEnd("aborted", "aborted by the user", turn)
            return
        if turn >= config.max_turns:
            yield AgentEnd("max_turns", f"stopped after {turn} turns (max_turns)", turn)
            return
        turn += 1
        yield TurnStart(turn)
        if config.steering is not None:
            messages.extend(config.steering())
        request = build_request(config, messages)
        response: Response | None = None
        try:
            for event in config.provider.stream(request):
                if isinstance(event, TextDelta):
                    yield MessageUpdate(turn, event.text)
                elif isinstance(event, Done):
                    response = event.response
        except ProviderError as exc:
            reason = "script_exhausted" if type(exc).__name__ == "ScriptExhausted" else "error"
            yield AgentEnd(reason, str(exc), turn)
            return
        if response is None:
            yield AgentEnd("error", "the provider's stream ended without a response", turn)
            return
        yield RequestSent(turn, request, response)
        assistant = response.message
        messages.append(assistant)
        if config.on_message is not None:
            config.on_message(assistant)
        yield MessageEnd(turn, assistant)
        if assistant.tool_calls:
            results: list[ToolResultMessage] = []
            for event in run_tools(config, tools, assistant.tool_calls, turn):
                if isinstance(event, ToolEnd):
                    results.append(event.result)
                yield event
            messages.extend(results)
        yield TurnEnd(turn)
        if config.on_turn_end is not None:
            stop = config.on_turn_end(turn)
            if stop is not None:
                yield Notice(turn, "stop", stop.summary)
                yield AgentEnd("stopped", stop.summary, turn)
                return
        if not assistant.tool_calls:
            more = config.follow_up() if config.follow_up is not None else []
            if more:
                messages.extend(more)
                continue
            yield AgentEnd("done", assistant.content, turn)
            return


def build_request(config: AgentLoopConfig, messages: list[Message]) -> Request:
    """What the provider receives: hooks transform a *copy* of the transcript."""
    view = list(messages)
    if config.transform_context is not None:
        view = config.transform_context(view)
    system = config.system_prompt
    if config.transform_system is not None:
        system = config.transform_system(system)
    request = Request(
        system=system,
        messages=tuple(view),
        tools=tuple(t.spec for t in config.tools),
        max_tokens=config.max_tokens,
    )
    if config.convert_to_llm is not None:
        request = config.convert_to_llm(request)
    return request


def run_tools(
    config: AgentLoopConfig, tools: dict[str, Tool], calls: Sequence[ToolCall], turn: int
) -> Iterator[AgentEvent]:
    """Run one turn's tool calls: parallel-safe neighbours concurrently, results in the order
    the model asked for them."""
    index = 0
    while index < len(calls):
        group = [calls[index]]
        tool = tools.get(calls[index].name)
        if tool is not None and tool.parallel_safe:
            while index + len(group) < len(calls):
                nxt = tools.get(calls[index + len(group)].name)
                if nxt is None or not nxt.parallel_safe:
                    break
                group.append(calls[index + len(group)])
        for call in group:
            yield ToolStart(turn, call)
        if len(group) == 1:
            outcomes = [run_one(config, tools, group[0])]
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(4, len(group))) as pool:

                def one(c: ToolCall) -> tuple[ToolResultMessage, str | None]:
                    return run_one(config, tools, c)

                outcomes = list(pool.map(one, group))
        for call, (result, blocked) in zip(group, outcomes, strict=True):
            yield ToolEnd(turn, call, result, blocked)
        index += len(group)


def run_one(
    config: AgentLoopConfig, tools: dict[str, Tool], call: ToolCall
) -> tuple[ToolResultMessage, str | None]:
    def error(text: str) -> ToolResultMessage:
        return ToolResultMessage(call.id, call.name, text, is_error=True)

    tool = tools.get(call.name)
    if tool is None:
        return error(f"unknown tool {call.name!r}; available: {', '.join(sorted(tools))}"), None
    problems = validate_arguments(tool.spec.parameters, call.arguments)
    if problems:
        return error(f"invalid arguments for {call.name}: {'; '.join(problems)}"), None
    if config.before_tool_call is not None:
        block = config.before_tool_call(call)
        if block is not None:
            return error(f"blocked: {block.reason}"), block.reason
    if tool.mutates:
        allowed, reason = config.permission(call.name, call.arguments)
        if not allowed:
            return error(f"not permitted: {reason or 'refused'}"), reason
    try:
        result = tool.run(call.arguments, config.tool_context)
    except ToolError as exc:
        result = ToolResult(str(exc), is_error=True)
    except Exception as exc:  # a tool crash is the model's information, not the loop's death
        result = ToolResult(f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True)
    if config.after_tool_call is not None:
        patched = config.after_tool_call(call, result)
        if patched is not None:
            result = patched
    return ToolResultMessage(call.id, call.name, result.content, result.is_error), None


__all__ = ["AgentLoopConfig", "AssistantMessage", "build_request", "run_agent"]
