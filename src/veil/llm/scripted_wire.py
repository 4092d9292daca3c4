"""The wire formats of :mod:`veil.llm.scripted_server`: how each API writes a reply, a stream,
a usage block and an error. What a request holds, costs and may be refused for is in
:mod:`veil.llm.scripted_requests`.

Four APIs, named by :data:`Api`:

- ``"anthropic"``: Anthropic Messages (``POST /v1/messages``, ``/v1/messages/count_tokens``);
- ``"responses"``: OpenAI Responses (``POST /v1/responses``);
- ``"chat"``: OpenAI Chat Completions (``POST /v1/chat/completions``);
- ``"gemini"``: Gemini ``POST /v1beta/models/M:generateContent``, ``:streamGenerateContent``
  (``?alt=sse``) and ``:countTokens``.

Everything here is a pure function of a scripted :class:`Turn` and a :class:`ReplyContext`. The
shapes follow the public SDK types (``anthropic.types``, ``openai.types.responses``,
``openai.types.chat``, ``@google/genai``) and what Claude Code 2.1.332, Codex 0.171.0 and Gemini
CLI 0.61.0 accept.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from veil.dialects import DIALECTS, Api  # Api: the wire API of a request

JSON = dict[str, Any]


def dumps(value: object) -> str:
    """Compact JSON, as the counts and the cache prefixes see a request (key order kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list."""
    return cast(list[Any], value) if isinstance(value, list) else []


def as_dict(value: object) -> JSON:
    """``value`` if it is a JSON object, else an empty dict."""
    return cast(JSON, value) if isinstance(value, dict) else {}


# ---- a scripted reply ------------------------------------------------------------------


@dataclass(frozen=True)
class ToolUse:
    """A tool call the scripted model makes: the client's tool name and its arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class Turn:
    """One scripted assistant reply (the SPEC 7.1 script entry).

    ``usage``: ``(input_tokens, output_tokens)`` to report instead of the counted ones.
    ``stop_reason``: ``stop``, ``tool_calls`` or ``length`` (mapped to each API's own word;
    another value is passed through as is); ``None`` means ``tool_calls`` when the turn calls
    tools, else ``stop``.
    """

    content: str = ""
    tool_calls: tuple[ToolUse, ...] = ()
    usage: tuple[int, int] | None = None
    stop_reason: str | None = None

    @property
    def stop(self) -> str:
        return self.stop_reason or ("tool_calls" if self.tool_calls else "stop")


@dataclass(frozen=True)
class Usage:
    """The token counts a reply reported.

    ``prompt_tokens`` is every input token counted (cached or not); ``cached_tokens`` those
    served from the (simulated) prompt cache — Anthropic's ``cache_read_input_tokens``,
    OpenAI's ``cached_tokens``; ``cache_creation_tokens`` Anthropic's
    ``cache_creation_input_tokens`` (always 0 for OpenAI). Anthropic's wire ``input_tokens`` is
    what is left: :attr:`uncached_tokens`.
    """

    prompt_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    cache_creation_tokens: int = 0

    @property
    def uncached_tokens(self) -> int:
        return max(0, self.prompt_tokens - self.cached_tokens - self.cache_creation_tokens)

    def block(self, api: Api) -> JSON:
        """The usage object as ``api`` writes it
        (:attr:`veil.dialects.base.Dialect.usage_block`)."""
        return DIALECTS[api].usage_block(
            self.prompt_tokens, self.output_tokens, self.cached_tokens, self.cache_creation_tokens
        )

    def anthropic(self) -> JSON:
        return self.block("anthropic")

    def responses(self) -> JSON:
        return self.block("responses")

    def chat(self) -> JSON:
        return self.block("chat")


# ---- HTTP replies and the APIs' error bodies ----------------------------------------------


@dataclass(frozen=True)
class Reply:
    """An HTTP reply: status, content type, body pieces (one HTTP chunk each when streamed)
    and extra headers."""

    status: int
    content_type: str
    pieces: tuple[bytes, ...]
    streamed: bool = False
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def body(self) -> bytes:
        return b"".join(self.pieces)


def json_reply(status: int, body: object, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(status, "application/json", (json.dumps(body).encode(),), False, headers)


def api_error(api: Api, status: int, kind: str, message: str, *, request_id: str) -> Reply:
    """An error in the API's own shape (:attr:`veil.dialects.base.Dialect.error_body`).
    Anthropic: ``{"type": "error", "error": {"type", "message"}, "request_id"}``; OpenAI:
    ``{"error": {"message", "type", "param", "code"}}``; the request's id in the API's
    header."""
    return error_reply(api, status, DIALECTS[api].error_body(message, kind, request_id=request_id),
                       request_id=request_id)  # fmt: skip


def error_reply(api: Api, status: int, body: JSON, *, request_id: str) -> Reply:
    """An error ``body`` as the API's service answers it: with the request's id in its header
    (:attr:`veil.dialects.base.Dialect.request_id_header`)."""
    return json_reply(status, body, ((DIALECTS[api].request_id_header, request_id),))


# ---- replies ---------------------------------------------------------------------------------

SSE = "text/event-stream; charset=utf-8"
TEXT_PIECES = 3
"""Text and argument JSON are streamed in (up to) this many deltas, like a real model."""


def pieces(text: str, n: int = TEXT_PIECES) -> list[str]:
    """``text`` cut into at most ``n`` non-empty pieces that join back to it."""
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {dumps(data)}\n\n".encode()


@dataclass(frozen=True)
class ReplyContext:
    """What a reply needs besides its turn: the request's model, an id (``n``, unique per
    server), whether it streams, the usage to report and the turn number for call ids."""

    model: str
    n: int
    stream: bool
    usage: Usage
    turn: int
    tool_kinds: Mapping[str, str] = field(default_factory=lambda: {})
    """Responses: how each offered tool is called — ``function`` or ``custom`` — by name;
    ``NAMESPACE.TOOL`` names a tool inside a namespace."""
    include_usage: bool = False
    """Chat, streamed: send ``usage`` in a last chunk (``stream_options.include_usage``)."""


def call_id(api: Api, turn: int, index: int) -> str:
    """A scripted call's id: ``toolu_scripted_T_I`` (Anthropic) or ``call_scripted_T_I``, for
    call ``I`` of script turn ``T`` (both from 1)."""
    prefix = "toolu" if api == "anthropic" else "call"
    return f"{prefix}_scripted_{turn}_{index}"


def anthropic_reply(turn: Turn, ctx: ReplyContext) -> Reply:
    """A Messages reply: the JSON message, or its SSE stream (``message_start``, per block
    ``content_block_start``/``content_block_delta``/``content_block_stop``, ``message_delta``
    with ``stop_reason`` and ``usage``, ``message_stop``)."""
    stop = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}.get(
        turn.stop, turn.stop
    )
    message_id = f"msg_scripted_{ctx.n:04d}"
    blocks: list[JSON] = []
    if turn.content or not turn.tool_calls:
        blocks.append({"type": "text", "text": turn.content})
    for i, call in enumerate(turn.tool_calls, start=1):
        blocks.append(
            {
                "type": "tool_use",
                "id": call_id("anthropic", ctx.turn, i),
                "name": call.name,
                "input": call.arguments,
            }
        )
    usage = ctx.usage.anthropic()
    headers = (("request-id", f"req_scripted_{ctx.n:04d}"),)
    message: JSON = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not ctx.stream:
        return json_reply(200, message, headers)
    start: JSON = {**message, "content": [], "stop_reason": None}
    start["usage"] = {**usage, "output_tokens": 1}
    out = [_sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        empty: JSON
        deltas: list[JSON]
        if block["type"] == "text":
            empty = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(turn.content)]
        else:
            empty = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(dumps(block["input"]))
            ]
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
        )
        if index == 0:
            out.append(_sse("ping", {"type": "ping"}))
        out += [
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            for delta in deltas
        ]
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": stop, "stop_sequence": None}
    out.append(_sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return Reply(200, SSE, tuple(out), True, headers)


class ResponsesStream:
    """Builds a Responses SSE stream: numbered events and the response object."""

    def __init__(self, request_id: str, model: str) -> None:
        self.id = request_id.replace("req_", "resp_")
        self.model = model
        self.created = int(time.time())
        self.sequence = 0

    def event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return _sse(kind, data)

    def response(self, status: str, output: list[JSON], usage: JSON | None = None) -> JSON:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }


def responses_reply(turn: Turn, ctx: ReplyContext) -> Reply:
    """A Responses reply: the JSON response, or its SSE stream (``response.created``,
    ``response.in_progress``; per output item ``response.output_item.added``, then for a
    message ``response.content_part.added``, ``response.output_text.delta``…,
    ``response.output_text.done``, ``response.content_part.done``, for a function call
    ``response.function_call_arguments.delta``…, ``response.function_call_arguments.done``,
    for a custom tool call ``response.custom_tool_call_input.delta``/``.done``; then
    ``response.output_item.done``; finally ``response.completed`` — or
    ``response.incomplete`` for a ``length`` stop — with ``usage``).

    A call to a tool the request offers as ``custom`` (Codex's freeform ``apply_patch``) is a
    ``custom_tool_call`` whose ``input`` is the ``input`` argument (a string); a call named
    ``NAMESPACE.TOOL`` (or naming a tool only a namespace holds) carries ``namespace``."""
    request_id = f"req_scripted_{ctx.n:04d}"
    stream = ResponsesStream(request_id, ctx.model)
    events: list[bytes] = []
    done_items: list[JSON] = []
    incomplete = turn.stop == "length"
    status = "incomplete" if incomplete else "completed"
    events.append(stream.event("response.created", response=stream.response("in_progress", [])))
    events.append(stream.event("response.in_progress", response=stream.response("in_progress", [])))
    items: list[tuple[str, Any]] = []
    if turn.content or not turn.tool_calls:
        items.append(("message", turn.content))
    items += [("call", call) for call in turn.tool_calls]
    call_index = 0
    for output_index, (kind, value) in enumerate(items):
        if kind == "message":
            item, item_events = _responses_message(stream, output_index, str(value), ctx.n)
        else:
            call_index += 1
            item, item_events = _responses_call(
                stream, output_index, cast(ToolUse, value), ctx, call_index
            )
        events += item_events
        done_items.append(item)
    final = stream.response(status, done_items, ctx.usage.responses())
    if incomplete:
        final["incomplete_details"] = {"reason": "max_output_tokens"}
    headers = (("x-request-id", request_id),)
    if not ctx.stream:
        return json_reply(200, final, headers)
    events.append(
        stream.event("response.incomplete" if incomplete else "response.completed", response=final)
    )
    return Reply(200, SSE, tuple(events), True, headers)


def _responses_message(
    stream: ResponsesStream, output_index: int, text: str, n: int
) -> tuple[JSON, list[bytes]]:
    item_id = f"msg_scripted_{n:04d}_{output_index}"
    part: JSON = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    done_part: JSON = {**part, "text": text}
    item: JSON = {
        "id": item_id,
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    done: JSON = {**item, "status": "completed", "content": [done_part]}
    where = {"item_id": item_id, "output_index": output_index, "content_index": 0}
    events = [
        stream.event("response.output_item.added", output_index=output_index, item=item),
        stream.event("response.content_part.added", part=part, **where),
    ]
    events += [
        stream.event("response.output_text.delta", delta=p, logprobs=[], **where)
        for p in pieces(text)
    ]
    events += [
        stream.event("response.output_text.done", text=text, logprobs=[], **where),
        stream.event("response.content_part.done", part=done_part, **where),
        stream.event("response.output_item.done", output_index=output_index, item=done),
    ]
    return done, events


def _responses_call(
    stream: ResponsesStream, output_index: int, call: ToolUse, ctx: ReplyContext, index: int
) -> tuple[JSON, list[bytes]]:
    namespace, name = _namespaced(call.name, ctx.tool_kinds)
    kind = ctx.tool_kinds.get(call.name, "function")
    ids: JSON = {"call_id": call_id("responses", ctx.turn, index), "name": name}
    if namespace:
        ids["namespace"] = namespace
    where = {"output_index": output_index}
    if kind == "custom":
        raw_input = call.arguments.get("input", "")
        text = raw_input if isinstance(raw_input, str) else dumps(raw_input)
        item_id = f"ctc_scripted_{ctx.n:04d}_{output_index}"
        item: JSON = {"id": item_id, "type": "custom_tool_call", "status": "in_progress", **ids}
        added = {**item, "input": ""}
        done: JSON = {**item, "status": "completed", "input": text}
        events = [stream.event("response.output_item.added", item=added, **where)]
        events += [
            stream.event("response.custom_tool_call_input.delta", item_id=item_id, delta=p, **where)
            for p in pieces(text)
        ]
        events.append(
            stream.event(
                "response.custom_tool_call_input.done", item_id=item_id, input=text, **where
            )
        )
    else:
        arguments = dumps(call.arguments)
        item_id = f"fc_scripted_{ctx.n:04d}_{output_index}"
        item = {"id": item_id, "type": "function_call", "status": "in_progress", **ids}
        added = {**item, "arguments": ""}
        done = {**item, "status": "completed", "arguments": arguments}
        events = [stream.event("response.output_item.added", item=added, **where)]
        events += [
            stream.event(
                "response.function_call_arguments.delta", item_id=item_id, delta=p, **where
            )
            for p in pieces(arguments)
        ]
        events.append(
            stream.event(
                "response.function_call_arguments.done",
                item_id=item_id,
                name=name,
                arguments=arguments,
                **where,
            )
        )
    events.append(stream.event("response.output_item.done", item=done, **where))
    return done, events


def _namespaced(name: str, kinds: Mapping[str, str]) -> tuple[str | None, str]:
    """``(namespace, tool)`` for a scripted tool name: ``NS.TOOL`` splits; a bare name that only
    a namespace holds gets that namespace; anything else has none."""
    if name in kinds and "." not in name:
        return None, name
    if "." in name:
        namespace, _, tool = name.partition(".")
        return namespace, tool
    holders = [k.partition(".")[0] for k in kinds if k.partition(".")[2] == name]
    return (holders[0], name) if holders else (None, name)


def responses_tool_kinds(body: Mapping[str, Any]) -> dict[str, str]:
    """Responses: ``name → "function" | "custom"`` for every offered tool, and
    ``NAMESPACE.TOOL → kind`` for the tools a ``namespace`` tool holds."""
    kinds: dict[str, str] = {}
    for tool in map(as_dict, as_list(body.get("tools"))):
        name = str(tool.get("name", ""))
        kinds[name] = "custom" if tool.get("type") == "custom" else "function"
        for inner in map(as_dict, as_list(tool.get("tools"))):
            kind = "custom" if inner.get("type") == "custom" else "function"
            kinds[f"{name}.{inner.get('name')}"] = kind
    return kinds


def chat_reply(turn: Turn, ctx: ReplyContext) -> Reply:
    """A Chat Completions reply: the JSON completion, or its chunks (role, content deltas,
    tool-call deltas — the first of each call with ``id`` and ``name`` — then a chunk with
    ``finish_reason``; with ``include_usage`` a last chunk of no choices holding ``usage``;
    then ``data: [DONE]``)."""
    finish = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}.get(
        turn.stop, turn.stop
    )
    completion_id = f"chatcmpl-scripted-{ctx.n:04d}"
    created = int(time.time())
    calls: list[JSON] = [
        {
            "id": call_id("chat", ctx.turn, i),
            "type": "function",
            "function": {"name": c.name, "arguments": dumps(c.arguments)},
        }
        for i, c in enumerate(turn.tool_calls, start=1)
    ]
    headers = (("x-request-id", f"req_scripted_{ctx.n:04d}"),)
    if not ctx.stream:
        message: JSON = {"role": "assistant", "content": turn.content or None, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        body = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": ctx.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": ctx.usage.chat(),
        }
        return json_reply(200, body, headers)

    def chunk(delta: JSON, finish_reason: str | None = None) -> bytes:
        data = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        return f"data: {dumps(data)}\n\n".encode()

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in pieces(turn.content)]
    for index, call in enumerate(calls):
        function = cast(JSON, call["function"])
        first = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": function["name"], "arguments": ""},
        }
        out.append(chunk({"tool_calls": [first]}))
        out += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
            for p in pieces(function["arguments"])
        ]
    out.append(chunk({}, finish))
    if ctx.include_usage:
        last: JSON = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": ctx.model,
            "choices": [],
            "usage": ctx.usage.chat(),
        }
        out.append(f"data: {dumps(last)}\n\n".encode())
    out.append(b"data: [DONE]\n\n")
    return Reply(200, SSE, tuple(out), True, headers)


def gemini_reply(turn: Turn, ctx: ReplyContext) -> Reply:
    """A ``generateContent`` reply: one response ``{"candidates": [{"content": {"role":
    "model", "parts"}, "finishReason", "index"}], "usageMetadata", "modelVersion",
    "responseId"}`` — its parts the text, then a ``functionCall`` (``name``, ``args``; no
    ``id``, as the API gives none) per call — or, streamed (``?alt=sse``), the text in pieces
    then the calls, one response per ``data:`` event, ``finishReason`` on the last; every event
    carries ``usageMetadata``, as the API's do."""
    finish = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}.get(
        turn.stop, turn.stop
    )
    calls: list[JSON] = [{"functionCall": {"name": c.name, "args": c.arguments}}
                         for c in turn.tool_calls]  # fmt: skip
    usage = ctx.usage.block("gemini")
    headers = (("x-request-id", f"req_scripted_{ctx.n:04d}"),)

    def response(parts: list[JSON], last: bool) -> JSON:
        candidate: JSON = {"content": {"role": "model", "parts": parts}, "index": 0}
        if last:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": ctx.model,
                "responseId": f"scripted-{ctx.n:04d}"}  # fmt: skip

    texts: list[JSON] = [{"text": turn.content}] if turn.content or not calls else []
    if not ctx.stream:
        return json_reply(200, response(texts + calls, True), headers)
    chunks = [[{"text": p}] for p in pieces(turn.content)] + ([calls] if calls else [])
    chunks = chunks or [[{"text": ""}]]
    out = [f"data: {dumps(response(c, i == len(chunks) - 1))}\r\n\r\n".encode()
           for i, c in enumerate(chunks)]  # fmt: skip
    return Reply(200, SSE, tuple(out), True, headers)


def render(api: Api, turn: Turn, ctx: ReplyContext) -> Reply:
    """The reply to a model request of ``api``."""
    if api == "anthropic":
        return anthropic_reply(turn, ctx)
    if api == "responses":
        return responses_reply(turn, ctx)
    if api == "gemini":
        return gemini_reply(turn, ctx)
    return chat_reply(turn, ctx)


def sse_events(body: bytes) -> Iterator[JSON]:
    """The JSON ``data`` of each event of an SSE body (``[DONE]`` skipped): for tests and
    debugging."""
    for block in body.decode().split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                yield cast(JSON, json.loads(line[len("data: ") :]))
