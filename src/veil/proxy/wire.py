"""A model request as the proxy reads and rewrites it: the Anthropic Messages API (Claude
Code), the OpenAI Responses API (Codex) and Chat Completions. Pure.

Reading: :func:`parse` finds, in order, the conversation's messages as the context layer's
:class:`~veil.context.transcript.Found` values — tool calls with their ids, names and
arguments, tool results with the text the model is given — plus which conversation the request
continues (:func:`conversation_key`).

Rewriting: :func:`splice` replaces the content of chosen tool results and changes no other
byte of the request — the system prompt, the tools, thinking blocks and their signatures,
ids, order, ``cache_control`` markers and the JSON layout itself stay as the client sent
them, so a provider's prompt cache sees the same prefix. Each result's content is found in
the raw body as the client serialised it (compact JSON, as Claude Code's ``JSON.stringify`` and
Codex's ``serde_json`` write it), next to its call id; a result that cannot be found that way
makes :func:`splice` fall back to serialising the whole body compactly (still the same request,
only the layout may differ) — :class:`Spliced.exact` says which happened.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import orjson

from veil.context.transcript import Call, Found

Api = Literal["anthropic", "responses", "chat"]

ROUTES: Mapping[str, Api] = {
    "/v1/messages": "anthropic",
    "/v1/responses": "responses",
    "/v1/chat/completions": "chat",
}


class WireError(ValueError):
    """A body that is not the API's request (not JSON, not an object, no messages)."""


@dataclass(frozen=True)
class Result:
    """A tool result in the request: its position among the results, its call, the text the
    model is given and the JSON value that carries it (what :func:`splice` replaces)."""

    index: int
    call_id: str
    value: Any
    field: str
    """The key holding ``value`` (``content`` or ``output``)."""


@dataclass(frozen=True)
class Request:
    api: Api
    body: dict[str, Any]
    found: tuple[Found, ...]
    results: tuple[Result, ...]
    """The tool results, in order; ``found`` holds them too (role ``tool``)."""
    key: str
    model: str
    stream: bool


def loads(raw: bytes) -> dict[str, Any]:
    try:
        data: object = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"the request body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise WireError(f"the request body is a JSON {type(data).__name__}, not an object")
    return cast(dict[str, Any], data)


def parse(api: Api, raw: bytes, headers: Mapping[str, str]) -> Request:
    body = loads(raw)
    if api == "anthropic":
        found, results = _anthropic(body)
    elif api == "responses":
        found, results = _responses(body)
    else:
        found, results = _chat(body)
    return Request(
        api,
        body,
        tuple(found),
        tuple(results),
        conversation_key(api, body, headers, found),
        str(body.get("model") or ""),
        body.get("stream") is True,
    )


# ---- conversation identity ------------------------------------------------------------------


def conversation_key(
    api: Api, body: Mapping[str, Any], headers: Mapping[str, str], found: Sequence[Found]
) -> str:
    """Which conversation a request continues: the client's session (Claude Code's
    ``metadata.user_id`` ``session_id``; Codex's ``prompt_cache_key``) and a digest of the
    conversation's first message, so that a subagent or a side request of the same session is
    a conversation of its own."""
    session = ""
    if api == "anthropic":
        user_id = _dict(body.get("metadata")).get("user_id")
        if isinstance(user_id, str) and user_id:
            try:
                parsed: object = json.loads(user_id)
            except ValueError:
                parsed = None
            session = str(_dict(parsed).get("session_id") or user_id)
        session = session or headers.get("x-claude-code-session-id", "")
    else:
        session = str(
            body.get("prompt_cache_key") or headers.get("session-id") or body.get("user") or ""
        )
    first = next((f.text for f in found if f.role == "user"), "")
    digest = hashlib.sha256(first.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{session or 'anonymous'}:{digest}"


# ---- the three formats ---------------------------------------------------------------------


def _dict(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def text_of(value: object) -> str:
    """The text a content value gives the model (a string, or blocks with ``text``; an image
    as ``[image]``)."""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    for block in _list(value):
        b = _dict(block)
        kind = b.get("type")
        if isinstance(b.get("text"), str):
            parts.append(str(b["text"]))
        elif kind in ("image", "input_image", "image_url"):
            parts.append("[image]")
        elif isinstance(block, str):
            parts.append(block)
    return "\n".join(parts)


def _arguments(value: object) -> dict[str, Any]:
    if isinstance(value, dict):
        return cast(dict[str, Any], value)
    if isinstance(value, str):
        try:
            parsed: object = json.loads(value)
        except ValueError:
            return {"input": value}
        return cast(dict[str, Any], parsed) if isinstance(parsed, dict) else {"input": value}
    return {}


def _anthropic(body: Mapping[str, Any]) -> tuple[list[Found], list[Result]]:
    found: list[Found] = []
    results: list[Result] = []
    messages = _list(body.get("messages"))
    if not messages and "messages" not in body:
        raise WireError("no messages in the request")
    for message in messages:
        m = _dict(message)
        role = m.get("role")
        content = m.get("content")
        if role == "assistant":
            texts: list[str] = []
            calls: list[Call] = []
            for block in _list(content) if not isinstance(content, str) else []:
                b = _dict(block)
                if b.get("type") == "tool_use":
                    calls.append(
                        Call(
                            str(b.get("id") or ""), str(b.get("name") or ""), _dict(b.get("input"))
                        )
                    )
                elif isinstance(b.get("text"), str):
                    texts.append(str(b["text"]))
                elif isinstance(b.get("thinking"), str):
                    texts.append(str(b["thinking"]))
            text = content if isinstance(content, str) else "\n".join(texts)
            found.append(Found("assistant", text, tuple(calls)))
            continue
        if isinstance(content, str):
            found.append(Found("user", content))
            continue
        texts = []
        for block in _list(content):
            b = _dict(block)
            if b.get("type") == "tool_result":
                call_id = str(b.get("tool_use_id") or "")
                value = b.get("content", "")
                results.append(Result(len(results), call_id, value, "content"))
                found.append(
                    Found(
                        "tool", text_of(value), call_id=call_id, is_error=b.get("is_error") is True
                    )
                )
            elif isinstance(b.get("text"), str):
                texts.append(str(b["text"]))
        if texts:
            found.append(Found("user", "\n".join(texts)))
    return found, results


def _responses(body: Mapping[str, Any]) -> tuple[list[Found], list[Result]]:
    found: list[Found] = []
    results: list[Result] = []
    raw_input = body.get("input")
    if isinstance(raw_input, str):
        return [Found("user", raw_input)], []
    if not isinstance(raw_input, list):
        raise WireError("no input in the request")
    pending: list[Call] = []

    def flush() -> None:
        if pending:
            found.append(Found("assistant", "", tuple(pending)))
            pending.clear()

    for item in cast(list[Any], raw_input):
        it = _dict(item)
        kind = it.get("type") or ("message" if "role" in it else "")
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            name = str(it.get("name") or kind)
            if it.get("namespace"):
                name = f"{it['namespace']}.{name}"
            args = _arguments(it.get("arguments") if kind == "function_call" else it.get("input"))
            if kind == "local_shell_call":
                args = _dict(it.get("action"))
            pending.append(Call(str(it.get("call_id") or ""), name, args))
            continue
        if kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            flush()
            call_id = str(it.get("call_id") or "")
            value = it.get("output", "")
            results.append(Result(len(results), call_id, value, "output"))
            found.append(Found("tool", text_of(value), call_id=call_id))
            continue
        flush()
        role = str(it.get("role") or "")
        text = text_of(it.get("content"))
        if kind == "reasoning":
            continue
        if role == "assistant":
            found.append(Found("assistant", text))
        elif role in ("user", "developer", "system"):
            found.append(Found("user" if role == "user" else "system", text))
    flush()
    return found, results


def _chat(body: Mapping[str, Any]) -> tuple[list[Found], list[Result]]:
    found: list[Found] = []
    results: list[Result] = []
    messages = _list(body.get("messages"))
    if not messages and "messages" not in body:
        raise WireError("no messages in the request")
    for message in messages:
        m = _dict(message)
        role = m.get("role")
        if role == "tool":
            call_id = str(m.get("tool_call_id") or "")
            value = m.get("content", "")
            results.append(Result(len(results), call_id, value, "content"))
            found.append(Found("tool", text_of(value), call_id=call_id))
        elif role == "assistant":
            calls = tuple(
                Call(
                    str(_dict(c).get("id") or ""),
                    str(_dict(_dict(c).get("function")).get("name") or ""),
                    _arguments(_dict(_dict(c).get("function")).get("arguments")),
                )
                for c in _list(m.get("tool_calls"))
            )
            found.append(Found("assistant", text_of(m.get("content")), calls))
        elif role in ("user", "system", "developer"):
            found.append(Found("user" if role == "user" else "system", text_of(m.get("content"))))
    return found, results


# ---- rewriting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Spliced:
    body: bytes
    exact: bool
    """Every other byte of the request is as the client sent it."""


def dumps(value: object) -> bytes:
    """Compact JSON, as the clients write it."""
    return orjson.dumps(value)


_CALL_KEY: Mapping[Api, bytes] = {
    "anthropic": b'"tool_use_id":',
    "responses": b'"call_id":',
    "chat": b'"tool_call_id":',
}


def splice(request: Request, raw: bytes, texts: Mapping[int, str]) -> Spliced:
    """``raw`` with result ``i``'s content replaced by ``texts[i]`` (a JSON string)."""
    if not texts:
        return Spliced(raw, True)
    pieces: list[bytes] = []
    at = 0
    for index in sorted(texts):
        result = request.results[index]
        span = _span(request.api, raw, result, at)
        if span is None:
            return Spliced(_reserialised(request, texts), False)
        start, end = span
        pieces += [raw[at:start], dumps(texts[index])]
        at = end
    pieces.append(raw[at:])
    return Spliced(b"".join(pieces), True)


NEAR = 256
"""Bytes between a result's call id and its content key (other short keys: ``type``,
``is_error``, ``cache_control``); a content further away is not this result's."""


def _span(api: Api, raw: bytes, result: Result, after: int) -> tuple[int, int] | None:
    """Where ``result``'s content value is in ``raw`` (at or after ``after``): in the same
    object as its call id, just after it or just before it."""
    call = _CALL_KEY[api] + dumps(result.call_id)
    value = dumps(result.value)
    key = b'"' + result.field.encode() + b'":'
    needle = key + value
    anchor = raw.find(call, after)
    while anchor >= 0:
        end = anchor + len(call)
        forward = raw.find(key, end, end + NEAR + len(key))
        if forward >= 0 and raw.startswith(needle, forward):
            start = forward + len(key)
            return start, start + len(value)
        back = raw.rfind(needle, max(after, anchor - len(needle) - NEAR), anchor)
        if back >= 0 and anchor - (back + len(needle)) <= NEAR:
            start = back + len(key)
            return start, start + len(value)
        anchor = raw.find(call, end)
    return None


_IS_RESULT: Mapping[Api, tuple[str, frozenset[str]]] = {
    "anthropic": ("type", frozenset({"tool_result"})),
    "responses": (
        "type",
        frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"}),
    ),
    "chat": ("role", frozenset({"tool"})),
}


def _reserialised(request: Request, texts: Mapping[int, str]) -> bytes:
    """The body with the results replaced, serialised whole (the n-th result object in
    document order is ``request.results[n]``, as :func:`parse` found them)."""
    key, kinds = _IS_RESULT[request.api]
    seen = 0

    def walk(value: Any) -> Any:
        nonlocal seen
        if isinstance(value, dict):
            d = cast(dict[str, Any], value)
            if d.get(key) in kinds:
                index = seen
                seen += 1
                if index in texts:
                    field = request.results[index].field
                    return {k: (texts[index] if k == field else v) for k, v in d.items()}
                return d
            return {k: walk(v) for k, v in d.items()}
        if isinstance(value, list):
            return [walk(v) for v in cast(list[Any], value)]
        return value

    return dumps(walk(request.body))
