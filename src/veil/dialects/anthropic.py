"""Anthropic Messages (``POST /v1/messages``, ``/v1/messages/count_tokens``): Claude Code's API.

A body is ``{"model", "system", "tools", "messages": [...], "metadata", ...}``; a message is
``{"role", "content"}`` with content a string or a list of blocks. An assistant's blocks hold
its text, ``thinking`` and ``tool_use`` (``id``, ``name``, ``input``); a user's hold text and
``tool_result`` blocks (``tool_use_id``, ``content``, ``is_error``). Claude Code's session is
``metadata.user_id`` (a JSON text holding ``session_id``) or its ``x-claude-code-session-id``
header. The prompt cache reaches only up to the last ``cache_control`` mark, 5 minutes or the
``ttl`` a mark asks for. Usage: ``input_tokens`` counts only what the cache neither read nor
wrote (``cache_read_input_tokens``, ``cache_creation_input_tokens``); a stream states it in
``message_start`` (``message.usage``) and ``message_delta`` (``usage``). Errors are
``{"type": "error", "error": {"type", "message"}}``. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from veil.dialects.base import (
    CACHE_TTL_S,
    JSON,
    TTL_S,
    Dialect,
    InputAt,
    Message,
    Piece,
    ResultAt,
    ToolCall,
    dumps,
    json_array,
    json_object,
    positive,
    text_of,
)


def piece(message: object) -> Piece:
    """One message: an assistant's text (thinking included) and calls; a user's text, and its
    ``tool_result`` blocks as role ``tool`` messages before that text."""
    m = json_object(message)
    role = m.get("role")
    content = m.get("content")
    if role == "assistant":
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in json_array(content) if not isinstance(content, str) else []:
            b = json_object(block)
            if b.get("type") == "tool_use":
                calls.append(
                    ToolCall(
                        str(b.get("id") or ""),
                        str(b.get("name") or ""),
                        json_object(b.get("input")),
                    )
                )
            elif isinstance(b.get("text"), str):
                texts.append(str(b["text"]))
            elif isinstance(b.get("thinking"), str):
                texts.append(str(b["thinking"]))
        text = content if isinstance(content, str) else "\n".join(texts)
        return Piece((Message("assistant", text, tuple(calls)),))
    if isinstance(content, str):
        return Piece((Message("user", content),))
    found: list[Message] = []
    results: list[ResultAt] = []
    texts = []
    for index, block in enumerate(json_array(content)):
        b = json_object(block)
        if b.get("type") == "tool_result":
            call_id = str(b.get("tool_use_id") or "")
            value = b.get("content", "")
            results.append(ResultAt(index, call_id, "content", value, dumps(value)))
            found.append(
                Message("tool", text_of(value), call_id=call_id, is_error=b.get("is_error") is True)
            )
        elif isinstance(b.get("text"), str):
            texts.append(str(b["text"]))
    if texts:
        found.append(Message("user", "\n".join(texts)))
    return Piece(tuple(found), (), tuple(results))


def call_inputs(message: object) -> tuple[InputAt, ...]:
    """An assistant message's ``tool_use`` blocks: ``input`` next to ``id``."""
    m = json_object(message)
    content = m.get("content")
    if m.get("role") != "assistant" or isinstance(content, str):
        return ()
    blocks = (json_object(b) for b in json_array(content))
    return tuple(
        InputAt(str(b.get("id") or ""), "id", "input", b.get("input"))
        for b in blocks
        if b.get("type") == "tool_use" and "input" in b
    )


def is_result(value: Mapping[str, Any]) -> bool:
    """A ``tool_result`` block."""
    return value.get("type") == "tool_result"


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """The ``name`` of each tool (client and server tools alike)."""
    names = (json_object(tool).get("name") for tool in json_array(body.get("tools")))
    return [name for name in names if isinstance(name, str) and name]


def session_of(body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """``metadata.user_id``'s ``session_id`` when it is a JSON object (as Claude Code sends),
    else ``user_id`` itself, else the ``x-claude-code-session-id`` header, else opencode's
    ``x-session-id``."""
    user_id = json_object(body.get("metadata")).get("user_id")
    session = ""
    if isinstance(user_id, str) and user_id:
        try:
            parsed: object = json.loads(user_id)
        except ValueError:
            parsed = None
        session = str(json_object(parsed).get("session_id") or user_id)
    return session or headers.get("x-claude-code-session-id") or headers.get("x-session-id", "")


CACHE_MARKER = '"cache_control"'
_MARKER = CACHE_MARKER.encode()


def cache_ttl(body: Mapping[str, Any], raw: bytes) -> float:
    """The longest ``ttl`` a ``cache_control`` mark asks for (``1h``), else 5 minutes.

    Read from the raw body: each ``"cache_control"`` key and the object after it (the key
    written inside a string would be escaped, ``\\"``, and is not found). A walk of the parsed
    body cost 11–20 ms a request at 1,000 results; the byte search costs microseconds."""
    longest = CACHE_TTL_S
    at = raw.find(_MARKER)
    while at >= 0:
        end = raw.find(b"}", at)
        marker = raw[at + len(_MARKER) : end if end >= 0 else len(raw)]
        for name, seconds in TTL_S.items():
            if b'"' + name.encode() + b'"' in marker:
                longest = max(longest, seconds)
        at = raw.find(_MARKER, at + 1)
    return longest


_USAGE = (
    ("input_tokens", "input_tokens"),
    ("cache_read_input_tokens", "cache_read"),
    ("cache_creation_input_tokens", "cache_write"),
    ("output_tokens", "output_tokens"),
)


def usage(event: Mapping[str, Any]) -> dict[str, int]:
    """The usage of a JSON answer (``usage``) or a stream event (``message_start``'s
    ``message.usage``, ``message_delta``'s ``usage``)."""
    out: dict[str, int] = {}
    for holder in (event.get("message"), event):
        found = json_object(json_object(holder).get("usage"))
        if found:
            out.update(positive(found, _USAGE))
    return out


def usage_block(prompt: int, output: int, cached: int, written: int) -> JSON:
    """``input_tokens`` is what the cache neither read nor wrote."""
    return {
        "input_tokens": max(0, prompt - cached - written),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
        "output_tokens": output,
    }


def error_body(
    message: str,
    kind: str | None = None,
    *,
    param: str | None = None,
    code: str | None = None,
    request_id: str | None = None,
) -> JSON:
    """``{"type": "error", "error": {"type", "message"}, "request_id"}`` (``api_error`` by
    default; the shape has no ``param`` nor ``code``; ``request_id`` only when given)."""
    body: JSON = {"type": "error", "error": {"type": kind or "api_error", "message": message}}
    if request_id is not None:
        body["request_id"] = request_id
    return body


def error_of(body: object) -> tuple[str, str | None] | None:
    """``(message, type)`` of an error body."""
    error = json_object(body).get("error")
    if not isinstance(error, dict):
        return None
    fields = json_object(cast(object, error))
    kind = fields.get("type")
    return str(fields.get("message", "")), None if kind is None else str(kind)


def overflow_body(limit: int, counted: int, *, request_id: str | None = None) -> JSON:
    """``prompt is too long: M tokens > N maximum`` (``invalid_request_error``)."""
    text = f"prompt is too long: {counted} tokens > {limit} maximum"
    return error_body(text, "invalid_request_error", request_id=request_id)


def stub_value(original: object, text: str) -> object:
    """A stubbed result's content: the stub's text, as one text block carrying the last
    ``cache_control`` the original content's blocks carried (a breakpoint the client placed
    inside a result stays where it was: the request keeps all its breakpoints)."""
    blocks = cast(list[object], original) if isinstance(original, list) else []
    markers: list[object] = [
        cast(dict[str, object], block)["cache_control"]
        for block in blocks
        if isinstance(block, dict) and "cache_control" in block
    ]
    if not markers:
        return text
    return [{"type": "text", "text": text, "cache_control": markers[-1]}]


DIALECT = Dialect(
    stub_value=stub_value,
    api="anthropic",
    paths=("/v1/messages",),
    count_suffix="/count_tokens",
    client_headers=("anthropic-version",),
    messages_key="messages",
    text_input=False,
    system_key="system",
    fixed_keys=("system", "tools"),
    call_key="tool_use_id",
    is_result=is_result,
    piece=piece,
    call_inputs=call_inputs,
    tool_names=tool_names,
    session_of=session_of,
    cache_ttl=cache_ttl,
    cache_marker=CACHE_MARKER,
    usage=usage,
    usage_block=usage_block,
    input_counts_cache=False,
    error_body=error_body,
    error_of=error_of,
    overflow_body=overflow_body,
    request_id_header="request-id",
)
