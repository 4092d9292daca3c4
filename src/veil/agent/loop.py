"""The agent loop as plain functions (after pi-mono): ask the model, run the tools it asked for,
repeat until it answers without tools, a hook stops it, or it runs out of turns.

Everything the memory layer does happens through hooks (:mod:`veil.agent.hooks`): the loop
itself knows nothing about eviction, attempts or memory. It yields events
(:mod:`veil.agent.events`) so a TUI, print mode and ``--json`` all watch the same run.

Tool calls run in three phases (pi-mono's seam), so that hooks never race each other:

1. **prepare**, on the loop's thread, in the model's order: the tool is looked up, its arguments
   validated, ``before_tool_call`` asked, and the permission policy consulted;
2. **execute**: only ``tool.run``; adjacent calls of ``parallel_safe`` tools run concurrently in
   a thread pool, every other call alone;
3. **finalize**, on the loop's thread, in the model's order: ``after_tool_call`` (capture,
   attempt record) and the ``ToolEnd`` event.

A hook that raises is not the end of the run: the call gets an error result the model reads and
the person sees a ``Notice`` naming the hook and the error.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
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
    DrainEvents,
    OnMessage,
    OnOverflow,
    OnResponse,
    OnTurnEnd,
    TransformContext,
    TransformSystem,
)
from veil.agent.tool import Tool, ToolContext, ToolError, ToolResult
from veil.llm.messages import (
    AssistantMessage,
    ContextOverflow,
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
from veil.llm.scripted import ScriptExhausted
from veil.llm.tool_schema import validate_arguments

Decide = Callable[[str, dict[str, Any]], tuple[bool, str | None]]
"""Permission decision for mutating tools: (allowed, reason when refused)."""

MAX_PARALLEL = 4
"""Worker threads for one group of parallel-safe calls."""


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
    drain_events: DrainEvents | None = None
    """Events the hooks produced (evictions, attempts, level changes); the loop yields them
    after each phase, so they reach the same stream as its own."""
    steering: Callable[[], list[UserMessage]] | None = None
    """Messages from the user while the agent works; added before the next model call."""
    follow_up: Callable[[], list[UserMessage]] | None = None
    """Asked when the agent would stop; more messages mean more work."""
    on_response: OnResponse | None = None
    """Each model response with the request it answers (its usage calibrates token counts)."""
    on_overflow: OnOverflow | None = None
    """The provider said the request is too long: evict to fit and return None to retry, or
    return why the run ends (called with the 1-based count of overflows this turn)."""
    abort: threading.Event = field(default_factory=threading.Event)
    """Set from any thread to stop the run: the loop checks it at every turn and the tools
    poll it (it is the tool context's ``abort`` too), so a running command is killed."""
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        self.tool_context.abort = self.abort


def run_agent(
    config: AgentLoopConfig, messages: list[Message], *, session_id: str = ""
) -> Generator[AgentEvent, None, None]:
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
        try:
            request = build_request(config, messages)
        except Exception as exc:  # a context hook failed: nothing sensible can be sent
            yield from _drained(config, turn)
            yield AgentEnd("error", f"building the request failed: {_describe(exc)}", turn)
            return
        yield from _drained(config, turn)
        response: Response | None = None
        overflows = 0
        while response is None:
            try:
                for event in config.provider.stream(request):
                    if isinstance(event, TextDelta):
                        yield MessageUpdate(turn, event.text)
                    elif isinstance(event, Done):
                        response = event.response
            except ContextOverflow as exc:
                overflows += 1
                verdict = _overflowed(config, exc, overflows)
                if verdict is not None:
                    yield from _drained(config, turn)
                    yield AgentEnd("error", verdict, turn)
                    return
                yield Notice(turn, "overflow", f"the model said the request is too long: {exc}")
                try:
                    request = build_request(config, messages)
                except Exception as failure:
                    yield from _drained(config, turn)
                    yield AgentEnd(
                        "error", f"building the request failed: {_describe(failure)}", turn
                    )
                    return
                yield from _drained(config, turn)
                continue
            except ScriptExhausted as exc:
                yield AgentEnd("script_exhausted", str(exc), turn)
                return
            except ProviderError as exc:
                yield AgentEnd("error", str(exc), turn)
                return
            if response is None:
                yield AgentEnd("error", "the provider's stream ended without a response", turn)
                return
        if config.on_response is not None:
            try:
                config.on_response(request, response)
            except Exception as exc:
                yield Notice(turn, "hook_error", f"on_response hook failed: {_describe(exc)}")
        yield RequestSent(turn, request, response)
        assistant = response.message
        messages.append(assistant)
        if config.on_message is not None:
            problem = _call_hook("on_message", config.on_message, assistant)
            if problem:
                yield Notice(turn, "hook_error", problem)
        yield MessageEnd(turn, assistant)
        yield from _drained(config, turn)
        if assistant.tool_calls:
            results: list[ToolResultMessage] = []
            try:
                for event in run_tools(config, tools, assistant.tool_calls, turn):
                    if isinstance(event, ToolEnd):
                        results.append(event.result)
                    yield event
            finally:
                # Whatever stops the run here (Ctrl-C, Esc, a crash, the consumer closing the
                # stream), every call gets a result: the transcript stays a valid conversation.
                messages.extend(results)
                messages.extend(interrupted(assistant.tool_calls, results))
        yield TurnEnd(turn)
        if config.on_turn_end is not None:
            stop = None
            try:
                stop = config.on_turn_end(turn)
            except Exception as exc:
                yield Notice(turn, "hook_error", f"on_turn_end hook failed: {_describe(exc)}")
            yield from _drained(config, turn)
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


INTERRUPTED = "[interrupted: the run stopped before this call finished]"


def interrupted(
    calls: Sequence[ToolCall], results: Sequence[ToolResultMessage]
) -> list[ToolResultMessage]:
    """A recorded result for each of ``calls`` that has none in ``results``."""
    answered = {r.tool_call_id for r in results}
    return [
        ToolResultMessage(c.id, c.name, INTERRUPTED, is_error=True)
        for c in calls
        if c.id not in answered
    ]


def _overflowed(config: AgentLoopConfig, error: ContextOverflow, count: int) -> str | None:
    """None: retry (the hook evicted to fit what the error says); else why the run ends."""
    if config.on_overflow is None:
        return f"the request did not fit the model's context window: {error}"
    try:
        return config.on_overflow(error, count)
    except Exception as exc:
        return f"on_overflow hook failed after {error}: {_describe(exc)}"


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


@dataclass(frozen=True)
class _Prepared:
    """A call after the prepare phase: either runnable (``tool`` set) or already answered."""

    call: ToolCall
    tool: Tool | None
    answer: ToolResult | None = None
    blocked: str | None = None
    blocked_by: str | None = None
    notices: tuple[str, ...] = ()


def run_tools(
    config: AgentLoopConfig, tools: dict[str, Tool], calls: Sequence[ToolCall], turn: int
) -> Iterator[AgentEvent]:
    """Run one turn's tool calls in the three phases of the module docstring. Adjacent calls of
    parallel-safe tools form one group (prepared together, executed concurrently, finalized in
    order); every other call is a group of its own, so a hook before an edit sees what the
    previous call's finalize recorded."""
    index = 0
    while index < len(calls):
        group = _group(tools, calls, index)
        index += len(group)
        for call in group:
            yield ToolStart(turn, call)
        prepared = [_prepare(config, tools, call) for call in group]
        for p in prepared:
            for text in p.notices:
                yield Notice(turn, "hook_error", text)
        yield from _drained(config, turn)
        results = _execute(config, prepared)
        for p, result in zip(prepared, results, strict=True):
            final, problem = _finalize(config, p, result)
            if problem:
                yield Notice(turn, "hook_error", problem)
            yield from _drained(config, turn)
            yield ToolEnd(
                turn,
                p.call,
                final,
                p.blocked,
                exit_code=_exit_code(result),
                blocked_by=p.blocked_by,
            )


def _group(tools: dict[str, Tool], calls: Sequence[ToolCall], start: int) -> list[ToolCall]:
    first = tools.get(calls[start].name)
    group = [calls[start]]
    if first is None or not first.parallel_safe:
        return group
    for call in calls[start + 1 :]:
        tool = tools.get(call.name)
        if tool is None or not tool.parallel_safe:
            break
        group.append(call)
    return group


def _prepare(config: AgentLoopConfig, tools: dict[str, Tool], call: ToolCall) -> _Prepared:
    """Phase 1, on the loop's thread: lookup, arguments, ``before_tool_call``, permission."""

    def answer(text: str, **extra: Any) -> _Prepared:
        return _Prepared(call, None, ToolResult(text, is_error=True), **extra)

    tool = tools.get(call.name)
    if tool is None:
        return answer(f"unknown tool {call.name!r}; available: {', '.join(sorted(tools))}")
    problems = validate_arguments(tool.spec.parameters, call.arguments)
    if problems:
        return answer(f"invalid arguments for {call.name}: {'; '.join(problems)}")
    if config.before_tool_call is not None:
        try:
            block = config.before_tool_call(call)
        except Exception as exc:
            text = f"before_tool_call hook failed on {call.name}: {_describe(exc)}"
            return answer(f"{call.name} was not run: {text}", notices=(text,))
        if block is not None:
            return answer(f"blocked: {block.reason}", blocked=block.reason, blocked_by="hook")
    if tool.mutates:
        try:
            allowed, reason = config.permission(call.name, call.arguments)
        except Exception as exc:
            text = f"the permission check failed on {call.name}: {_describe(exc)}"
            return answer(f"{call.name} was not run: {text}", notices=(text,))
        if not allowed:
            return answer(
                f"not permitted: {reason or 'refused'}",
                blocked=reason or "refused",
                blocked_by="permission",
            )
    return _Prepared(call, tool)


def _execute(config: AgentLoopConfig, prepared: Sequence[_Prepared]) -> list[ToolResult]:
    """Phase 2: only ``tool.run``, concurrently when more than one call is runnable."""
    runnable = [p for p in prepared if p.tool is not None]
    if len(runnable) <= 1:
        return [_run(config, p) for p in prepared]
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=min(MAX_PARALLEL, len(runnable)), thread_name_prefix="veil-tool"
    ) as pool:
        futures = [pool.submit(_run, config, p) for p in prepared]
        return [f.result() for f in futures]


def _run(config: AgentLoopConfig, p: _Prepared) -> ToolResult:
    if p.tool is None:
        assert p.answer is not None
        return p.answer
    try:
        return p.tool.run(p.call.arguments, config.tool_context)
    except ToolError as exc:
        return ToolResult(str(exc), is_error=True)
    except Exception as exc:  # a tool crash is the model's information, not the loop's death
        return ToolResult(f"{p.call.name} failed: {_describe(exc)}", is_error=True)


def _finalize(
    config: AgentLoopConfig, p: _Prepared, result: ToolResult
) -> tuple[ToolResultMessage, str | None]:
    """Phase 3, on the loop's thread: ``after_tool_call`` sees every call that ran."""
    problem: str | None = None
    if config.after_tool_call is not None and p.tool is not None:
        try:
            patched = config.after_tool_call(p.call, result)
        except Exception as exc:
            problem = f"after_tool_call hook failed on {p.call.name}: {_describe(exc)}"
            patched = ToolResult(
                f"{result.content}\n[veil: {problem}]",
                is_error=True,
                full_output=result.full_output,
                details=result.details,
            )
        if patched is not None:
            result = patched
    message = ToolResultMessage(
        p.call.id, p.call.name, result.content, result.is_error, result.item, result.details
    )
    return message, problem


def _exit_code(result: ToolResult) -> int | None:
    code = result.details.get("exit_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _drained(config: AgentLoopConfig, turn: int) -> Iterator[AgentEvent]:
    if config.drain_events is None:
        return
    try:
        found = config.drain_events()
    except Exception as exc:
        yield Notice(turn, "hook_error", f"drain_events hook failed: {_describe(exc)}")
        return
    yield from found


def _call_hook(name: str, hook: Callable[[Any], object], value: object) -> str | None:
    try:
        hook(value)
    except Exception as exc:
        return f"{name} hook failed: {_describe(exc)}"
    return None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


__all__ = ["AgentLoopConfig", "AssistantMessage", "build_request", "run_agent"]
