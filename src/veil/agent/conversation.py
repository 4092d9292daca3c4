"""The harness's transcript in the renderer's terms and back.

:func:`found` describes each message for :class:`veil.context.transcript.Transcript`: a tool
result names the item its message carries (``ToolResultMessage.item``, set when the result was
captured; an expansion names the item it brought back and says whether it did,
``details["restored"]``), an assistant message its calls (each acting or looking, from its
tool's declaration). :func:`messages` turns the renderer's parts back into the messages the
provider is sent. Nothing here decides what the model sees (:mod:`veil.context.window` does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from veil.context.transcript import Call, Found
from veil.context.window import Rendered
from veil.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
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
