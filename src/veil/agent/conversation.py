"""The harness's transcript in the renderer's terms and back, and in working memory.

:func:`found` describes each message for :class:`veil.context.transcript.Transcript`: a tool
result names the item its message carries (``ToolResultMessage.item``, set when the result was
captured; an expansion names the item it brought back and says whether it did,
``details["restored"]``), an assistant message its calls (each acting or looking, from its
tool's declaration). :func:`messages` turns the renderer's parts back into the messages the
provider is sent. Nothing here decides what the model sees (:mod:`veil.context.window` does).

:class:`Conversation` is one session's transcript in working memory: each message described
once (the transcript only grows), each assistant turn captured as soon as it is complete —
before its tools run, so that their results know it (a turn and its results leave the prompt
together) — and each tool result captured as an item under that turn, with what its tool
declares the call touched (:mod:`veil.agent.capture`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from veil.agent.capture import Capture
from veil.agent.memory_tools import EXPAND_TOOL
from veil.agent.tool import ToolResult, Touches
from veil.context import ContextEngine
from veil.context.items import ContextItem
from veil.context.transcript import Call, Found, Transcript
from veil.context.window import Entry, Rendered
from veil.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


class Conversation:
    def __init__(self, engine: ContextEngine, tools: Mapping[str, object]) -> None:
        """``tools``: the tools by name, as the harness keeps them (their declarations say
        whether a call acts and what it touches)."""
        self.engine = engine
        self.tools = tools
        self.transcript = Transcript(engine, expand_tools=(EXPAND_TOOL,))
        """Which item each message of the transcript is."""
        self._described: list[tuple[Message, Found]] = []
        """Each transcript message and how it was described."""
        self._call_turn: dict[str, str] = {}
        """Tool-call id → the turn item of the message that made the call."""
        self._seen = 0

    def entries(self, messages: Sequence[Message]) -> list[Entry]:
        """The transcript as the renderer's entries, capturing the turns not seen yet (user
        messages, resumed ones; an assistant message is captured by :meth:`assistant`)."""
        known = self._described
        same = (i for i, (m, _) in enumerate(known) if i >= len(messages) or messages[i] is not m)
        del known[next(same, len(known)) :]
        for message in messages[len(known) :]:
            known.append((message, found(message, self.tools)))
        self._seen = len(messages)
        return self.transcript.entries([f for _, f in known])

    def assistant(self, message: AssistantMessage) -> None:
        """A complete assistant message with tool calls becomes its turn item now (the loop
        appended it right after the last request was built)."""
        index = self._seen
        if message.tool_calls and self.transcript.turn_item(index) is None:
            item_id = self.transcript.turn(index, found(message, self.tools))
            for call in message.tool_calls:
                self._call_turn[call.id] = item_id

    def result(self, call: ToolCall, result: ToolResult, what: Capture | None) -> ContextItem:
        """A tool call's result as an item under its turn; ``what`` the call touched (None:
        nothing a tool declares, a memory tool's answer)."""
        touched = what.touches if what is not None else Touches()
        return self.engine.capture_tool_result(
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            output=result.content,
            full_output=result.full_output,
            is_error=result.is_error,
            target=what.target if what is not None else None,
            reads=touched.reads,
            partial=touched.partial,
            writes=touched.writes,
            parent=self._call_turn.get(call.id),
        )


def found(message: Message, tools: Mapping[str, object]) -> Found:
    """One message as the transcript's identity sees it."""
    if isinstance(message, ToolResultMessage):
        return Found(
            "tool",
            message.content,
            call_id=message.tool_call_id,
            is_error=message.is_error,
            item=message.item,
            restores=bool(message.details.get("restored")),
        )
    if isinstance(message, AssistantMessage):
        calls = tuple(
            Call(c.id, c.name, c.arguments, acts=bool(getattr(tools.get(c.name), "mutates", False)))
            for c in message.tool_calls
        )
        return Found("assistant", message.content, calls)
    if isinstance(message, UserMessage):
        return Found("user", message.content)
    return Found("system", message.content)


def messages(transcript: Sequence[Message], rendered: Rendered) -> list[Message]:
    """The messages to send: each part of the rendering as a message of the transcript with
    its new text, or a message the renderer added (a note, a missing result, the tail)."""
    names = {
        c.id: c.name for m in transcript if isinstance(m, AssistantMessage) for c in m.tool_calls
    }
    out: list[Message] = []
    for part in rendered.parts:
        if part.entry is None:
            if part.kind == "missing" and part.call_id is not None:
                name = names.get(part.call_id, "")
                out.append(ToolResultMessage(part.call_id, name, part.text, is_error=True))
            else:
                out.append(SystemMessage(part.text))
            continue
        message = transcript[part.entry]
        if part.kind == "shown":
            out.append(message)
        elif part.kind == "orphan":
            out.append(SystemMessage(part.text))
        elif isinstance(message, UserMessage):
            out.append(UserMessage(part.text))
        elif isinstance(message, AssistantMessage):  # a stubbed turn: calls kept, arguments not
            calls = tuple(ToolCall(c.id, c.name, {}) for c in message.tool_calls)
            out.append(replace(message, content=part.text, tool_calls=calls))
        else:
            out.append(replace(message, content=part.text))
    return out
