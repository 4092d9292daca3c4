"""OpenAI Chat Completions (``POST …/chat/completions``, an Azure deployment's included): the
API of most OpenAI-compatible servers (vLLM, llama.cpp, Ollama, OpenRouter).

A body is ``{"model", "tools", "messages": [...], ...}``; the system prompt is a ``system`` (or
``developer``) message. An assistant message carries ``tool_calls`` (``id``, ``function``:
``name``, ``arguments`` as JSON text); a result is a ``tool`` message (``tool_call_id``,
``content``). Tools are ``{"type": "function", "function": {"name", ...}}``. Usage:
``prompt_tokens`` counts every input token, ``prompt_tokens_details.cached_tokens`` those the
cache served; a stream states it in its last chunk (``stream_options.include_usage``). The
session, the cache's retention and the error shape are OpenAI's
(:mod:`veil.dialects.openai_common`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from veil.dialects import openai_common as openai
from veil.dialects.base import (
    EMPTY,
    JSON,
    Dialect,
    InputAt,
    Message,
    Piece,
    ResultAt,
    ToolCall,
    arguments_of,
    dumps,
    json_array,
    json_object,
    positive,
    text_of,
)


def piece(message: object) -> Piece:
    """One message: a ``tool`` message is a result; an assistant's text and calls; ``system``
    and ``developer`` are role ``system``."""
    m = json_object(message)
    role = m.get("role")
    if role == "tool":
        call_id = str(m.get("tool_call_id") or "")
        value = m.get("content", "")
        return Piece(
            (Message("tool", text_of(value), call_id=call_id),),
            (),
            (ResultAt(-1, call_id, "content", value, dumps(value)),),
        )
    if role == "assistant":
        calls = tuple(
            ToolCall(
                str(json_object(c).get("id") or ""),
                str(json_object(json_object(c).get("function")).get("name") or ""),
                arguments_of(json_object(json_object(c).get("function")).get("arguments")),
            )
            for c in json_array(m.get("tool_calls"))
        )
        return Piece((Message("assistant", text_of(m.get("content")), calls),))
    if role in ("user", "system", "developer"):
        return Piece((Message("user" if role == "user" else "system", text_of(m.get("content"))),))
    return EMPTY


def call_inputs(message: object) -> tuple[InputAt, ...]:
    """An assistant message's ``tool_calls``: each ``function``'s ``arguments`` (JSON text),
    after the call's ``id``."""
    m = json_object(message)
    if m.get("role") != "assistant":
        return ()
    out: list[InputAt] = []
    for call in json_array(m.get("tool_calls")):
        c = json_object(call)
        function = json_object(c.get("function"))
        if "arguments" in function:
            out.append(InputAt(str(c.get("id") or ""), "id", "arguments", function["arguments"]))
    return tuple(out)


def is_result(value: Mapping[str, Any]) -> bool:
    """A ``tool`` message."""
    return value.get("role") == "tool"


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Each tool's ``function.name`` (a bare ``name`` where a server accepts one)."""
    names: list[str] = []
    for tool in json_array(body.get("tools")):
        t = json_object(tool)
        name = json_object(t.get("function")).get("name") or t.get("name")
        if isinstance(name, str) and name:
            names.append(name)
    return names


_USAGE = (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"))


def usage(event: Mapping[str, Any]) -> dict[str, int]:
    """The usage of a JSON answer or of a stream's last chunk (``usage``)."""
    found = json_object(event.get("usage"))
    if not found:
        return {}
    out = positive(found, _USAGE)
    out.update(positive(json_object(found.get("prompt_tokens_details")),
                        (("cached_tokens", "cache_read"),)))  # fmt: skip
    return out


def usage_block(prompt: int, output: int, cached: int, written: int) -> JSON:
    """``prompt_tokens`` is every input token (the cache has no writes to report)."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def overflow_body(limit: int, counted: int, *, request_id: str | None = None) -> JSON:
    """``context_length_exceeded`` on ``messages``: ``This model's maximum context length is N
    tokens. However, your messages resulted in M tokens. …``"""
    text = (
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {counted} tokens. Please reduce the length of the messages."
    )
    return openai.error_body(
        text, "invalid_request_error", param="messages", code="context_length_exceeded"
    )


DIALECT = Dialect(
    api="chat",
    paths=("/chat/completions",),
    count_suffix=None,
    client_headers=(),
    messages_key="messages",
    text_input=False,
    system_key=None,
    fixed_keys=("tools",),
    call_key="tool_call_id",
    is_result=is_result,
    piece=piece,
    call_inputs=call_inputs,
    tool_names=tool_names,
    session_of=openai.session_of,
    cache_ttl=openai.cache_ttl,
    cache_marker=None,
    usage=usage,
    usage_block=usage_block,
    input_counts_cache=True,
    error_body=openai.error_body,
    error_of=openai.error_of,
    overflow_body=overflow_body,
    request_id_header=openai.REQUEST_ID_HEADER,
)
