"""Messages as JSON (sessions on the tape, ``--trace``, ``--json``) and back."""

from __future__ import annotations

from typing import Any, cast

from veil.llm.messages import (
    AssistantMessage,
    Message,
    Request,
    Response,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def message_to_dict(message: Message) -> dict[str, Any]:
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
            ]
        return out
    if isinstance(message, ToolResultMessage):
        out = {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "content": message.content,
            "is_error": message.is_error,
        }
        if message.item is not None:
            out["item"] = message.item
        if message.details:
            out["details"] = dict(message.details)
        return out
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    return {"role": "user", "content": message.content}


def message_from_dict(data: dict[str, Any]) -> Message:
    role = data.get("role")
    if role == "assistant":
        calls = tuple(
            ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}))
            for c in cast(list[dict[str, Any]], data.get("tool_calls") or [])
        )
        return AssistantMessage(str(data.get("content") or ""), calls)
    if role == "tool":
        item = data.get("item")
        details = data.get("details")
        return ToolResultMessage(
            str(data["tool_call_id"]),
            str(data.get("name") or ""),
            str(data.get("content") or ""),
            bool(data.get("is_error")),
            str(item) if item else None,
            cast(dict[str, Any], details) if isinstance(details, dict) else {},
        )
    if role == "system":
        return SystemMessage(str(data.get("content") or ""))
    if role == "user":
        return UserMessage(str(data.get("content") or ""))
    raise ValueError(f"unknown message role {role!r}")


def repair(messages: list[Message], text: str) -> list[ToolResultMessage]:
    """Results for the calls of the transcript's last assistant message that have none, when
    nothing but its results follows it (a run stopped between a call and its result): appended
    to ``messages`` and returned. A gap earlier in a transcript is not rewritten — the renderer
    answers such calls in every request (:mod:`veil.context.window`)."""
    last = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if not isinstance(messages[i], ToolResultMessage)
        ),
        None,
    )
    if last is None:
        return []
    message = messages[last]
    if not isinstance(message, AssistantMessage) or not message.tool_calls:
        return []
    answered = {m.tool_call_id for m in messages[last + 1 :] if isinstance(m, ToolResultMessage)}
    added = [
        ToolResultMessage(c.id, c.name, text, is_error=True)
        for c in message.tool_calls
        if c.id not in answered
    ]
    messages.extend(added)
    return added


def trace_record(request: Request, response: Response) -> dict[str, Any]:
    """One ``--trace`` line: exactly what was sent (after eviction and rendering) and the
    reply."""
    return {
        "system": request.system,
        "messages": [message_to_dict(m) for m in request.messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ],
        "response": {
            **message_to_dict(response.message),
            "stop_reason": response.stop_reason,
            "model": response.model,
            "usage": {
                "input_tokens": response.usage.input_tokens,
                "output_tokens": response.usage.output_tokens,
            },
        },
    }
