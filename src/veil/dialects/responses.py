"""OpenAI Responses (``POST …/responses``: ``/v1/responses``, ``/responses``, Codex's
ChatGPT-login ``/backend-api/codex/responses``): Codex's API.

A body is ``{"model", "instructions", "tools", "input": [...], "prompt_cache_key", ...}``;
``input`` is a string (one user message) or a list of items: messages (``role``, ``content``
parts), ``reasoning``, and tool calls and their outputs as items of their own —
``function_call``/``custom_tool_call``/``local_shell_call`` (``call_id``, ``name``, possibly a
``namespace``, ``arguments`` or ``input`` or ``action``) and ``…_output`` (``call_id``,
``output``). A ``namespace`` tool holds tools of its own (Codex's MCP servers). Usage:
``input_tokens`` counts every input token, ``input_tokens_details.cached_tokens`` those the
cache served; a stream states it in ``response.completed`` (``response.usage``). The session,
the cache's retention and the error shape are OpenAI's (:mod:`veil.dialects.openai_common`). Pure.
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

CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def piece(item: object) -> Piece:
    """One input item: a call (added to the next assistant message; its name
    ``NAMESPACE.NAME`` when it carries a namespace), an output (a role ``tool`` message), a
    message (``developer`` and ``system`` are role ``system``); reasoning gives nothing."""
    it = json_object(item)
    kind = it.get("type") or ("message" if "role" in it else "")
    if kind in CALLS:
        name = str(it.get("name") or kind)
        if it.get("namespace"):
            name = f"{it['namespace']}.{name}"
        args = arguments_of(it.get("arguments") if kind == "function_call" else it.get("input"))
        if kind == "local_shell_call":
            args = json_object(it.get("action"))
        return Piece(calls=(ToolCall(str(it.get("call_id") or ""), name, args),))
    if kind in OUTPUTS:
        call_id = str(it.get("call_id") or "")
        value = it.get("output", "")
        return Piece(
            (Message("tool", text_of(value), call_id=call_id),),
            (),
            (ResultAt(-1, call_id, "output", value, dumps(value)),),
        )
    role = str(it.get("role") or "")
    if kind == "reasoning":
        return EMPTY
    text = text_of(it.get("content"))
    if role == "assistant":
        return Piece((Message("assistant", text),))
    if role in ("user", "developer", "system"):
        return Piece((Message("user" if role == "user" else "system", text),))
    return EMPTY


def call_inputs(item: object) -> tuple[InputAt, ...]:
    """A ``function_call`` item's ``arguments`` (JSON text), a ``custom_tool_call``'s
    ``input`` (its own text: Codex's ``apply_patch``), each next to ``call_id``; a
    ``local_shell_call``'s action is not one (its command is short)."""
    it = json_object(item)
    kind = it.get("type")
    key = "arguments" if kind == "function_call" else "input" if kind == "custom_tool_call" else ""
    if not key or key not in it:
        return ()
    return (InputAt(str(it.get("call_id") or ""), "call_id", key, it[key]),)


def is_result(value: Mapping[str, Any]) -> bool:
    """A ``…_output`` item."""
    return value.get("type") in OUTPUTS


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Each tool's ``name``; a ``namespace`` tool's own tools follow it as ``NAMESPACE.TOOL``."""
    names: list[str] = []
    for tool in json_array(body.get("tools")):
        t = json_object(tool)
        name = t.get("name")
        if not isinstance(name, str) or not name:
            continue
        names.append(name)
        for inner in json_array(t.get("tools")):
            names.append(f"{name}.{json_object(inner).get('name')}")
    return names


_USAGE = (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"))


def usage(event: Mapping[str, Any]) -> dict[str, int]:
    """The usage of a JSON answer (``usage``) or of ``response.completed`` (``response.usage``;
    also ``response.failed`` and ``response.incomplete``)."""
    out: dict[str, int] = {}
    for holder in (event.get("response"), event):
        found = json_object(json_object(holder).get("usage"))
        if found:
            out.update(positive(found, _USAGE))
            out.update(positive(json_object(found.get("input_tokens_details")),
                                (("cached_tokens", "cache_read"),)))  # fmt: skip
    return out


def usage_block(prompt: int, output: int, cached: int, written: int) -> JSON:
    """``input_tokens`` is every input token (the cache has no writes to report)."""
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }


OVERFLOW_TEXT = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)


def overflow_body(limit: int, counted: int, *, request_id: str | None = None) -> JSON:
    """``context_length_exceeded`` on ``input`` (the text states neither figure)."""
    return openai.error_body(
        OVERFLOW_TEXT, "invalid_request_error", param="input", code="context_length_exceeded"
    )


DIALECT = Dialect(
    api="responses",
    paths=("/responses",),
    count_suffix=None,
    client_headers=(),
    messages_key="input",
    text_input=True,
    system_key="instructions",
    fixed_keys=("tools", "instructions"),
    call_key="call_id",
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
