"""What a request holds, what it costs and whether it is refused, for
:mod:`veil.llm.scripted_server`: the tool calls and results in its history, the tools it offers,
its token count and cache prefix, and the real services' 400s for unpaired tool calls and for a
prompt over the context window. The error texts are the ones the services answer, as quoted
verbatim in public bug reports (each function's docstring says which were checked).

Each API's facts — where its conversation and system prompt are, how its messages hold tool
calls and results, its tools' names, its overflow refusal, its error shape — are read from its
dialect (:data:`veil.dialects.DIALECTS`); the pairing rules are the services' own validation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from veil.dialects import DIALECTS, Piece
from veil.dialects import gemini as google
from veil.dialects import openai_common as openai
from veil.dialects.encoding import Unsupported, decode
from veil.llm.scripted_wire import (
    JSON,
    SSE,
    Api,
    Reply,
    ResponsesStream,
    Turn,
    api_error,
    as_dict,
    as_list,
    dumps,
    error_reply,
    json_reply,
)

OverflowStyle = Literal["native", "native-stream", "llama.cpp", "ollama"]
"""How an over-long prompt is refused: ``native`` is the API's own HTTP 400 (Anthropic's
"prompt is too long", OpenAI's ``context_length_exceeded``); ``native-stream`` is the same,
but a streamed Responses request gets a 200 stream ending in ``response.failed`` (other APIs:
as ``native``); ``llama.cpp`` is llama.cpp's server (``exceed_context_size_error`` with
``n_prompt_tokens``/``n_ctx``); ``ollama`` is Ollama's OpenAI-compatible endpoint, which wraps
the llama.cpp server's body as the message of an OpenAI-style error."""

OVERFLOW_STYLES: tuple[OverflowStyle, ...] = ("native", "native-stream", "llama.cpp", "ollama")

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text (the default is :func:`chars_over_four`)."""


def chars_over_four(text: str) -> int:
    """``ceil(len(text) / 4)``: the default token count, deterministic and tokenizer-free."""
    return math.ceil(len(text) / 4)


# ---- what a request holds ----------------------------------------------------------------


@dataclass(frozen=True)
class ToolCallSeen:
    """A tool call found in a request's history: its id, its tool's name and the index of the
    message (Anthropic, Chat) or input item (Responses) holding it."""

    id: str
    name: str
    position: int


@dataclass(frozen=True)
class ToolResultSeen:
    """A tool result found in a request's history. ``text`` is its text as the model reads it
    (text blocks and parts joined by newlines, an image as ``[image]``:
    :func:`veil.dialects.base.text_of`); ``part`` the index of the block inside its message
    (Anthropic only, else ``None``)."""

    call_id: str
    text: str
    position: int
    part: int | None = None
    is_error: bool = False


def messages_of(api: Api, body: Mapping[str, Any]) -> list[Any]:
    """The conversation: ``messages`` (Anthropic, Chat) or ``input`` (Responses; a plain string
    input is one user message) — the dialect's
    :attr:`~veil.dialects.base.Dialect.messages_key`."""
    dialect = DIALECTS[api]
    raw = body.get(dialect.messages_key)
    if dialect.text_input and isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return as_list(raw)


def system_of(api: Api, body: Mapping[str, Any]) -> object:
    """The system prompt as sent: ``system`` (Anthropic), ``instructions`` (Responses); Chat
    carries it inside ``messages`` (``None`` here) — the dialect's
    :attr:`~veil.dialects.base.Dialect.system_key`."""
    key = DIALECTS[api].system_key
    return body.get(key) if key is not None else None


def tool_calls_in(api: Api, body: Mapping[str, Any]) -> list[ToolCallSeen]:
    """Every tool call in the history, in order, as the dialect reads it
    (:attr:`~veil.dialects.base.Dialect.piece`): a Responses call in a ``namespace`` is named
    ``NAMESPACE.NAME``."""
    out: list[ToolCallSeen] = []
    items = messages_of(api, body)
    for i in range(len(items)):
        piece = _piece(api, items, i)
        for call in (*piece.calls, *(c for m in piece.messages for c in m.calls)):
            out.append(ToolCallSeen(call.id, call.name, i))
    return out


def _piece(api: Api, items: list[Any], index: int) -> Piece:
    """Item ``index`` read as its dialect reads it: with its neighbours where calls and
    results pair by position (Gemini), else alone."""
    dialect = DIALECTS[api]
    if dialect.piece_in is not None:
        return dialect.piece_in(items, index)
    return dialect.piece(items[index])


_RESPONSES_CALLS = {"function_call": "function", "custom_tool_call": "custom tool"}
_RESPONSES_OUTPUTS = {"function_call_output": "function", "custom_tool_call_output": "custom tool"}


def tool_results_in(api: Api, body: Mapping[str, Any]) -> list[ToolResultSeen]:
    """Every tool result in the history, in order, as the dialect reads it
    (:attr:`~veil.dialects.base.Dialect.piece`; its text as the model reads it, an image as
    ``[image]``)."""
    out: list[ToolResultSeen] = []
    items = messages_of(api, body)
    for i in range(len(items)):
        piece = _piece(api, items, i)
        texts = [m for m in piece.messages if m.role == "tool"]
        for at, message in zip(piece.results, texts, strict=True):
            part = at.block if at.block >= 0 else None
            out.append(ToolResultSeen(at.call_id, message.text, i, part, message.is_error))
    return out


def tool_names(api: Api, body: Mapping[str, Any]) -> list[str]:
    """The names of the tools offered to the model, in order. A Responses ``namespace`` tool
    (Codex's MCP servers) contributes ``NAMESPACE.TOOL`` for each tool it holds, besides its
    own name (the dialect's :attr:`~veil.dialects.base.Dialect.tool_names`)."""
    return DIALECTS[api].tool_names(body)


# ---- counting and caching ----------------------------------------------------------------


def prompt_parts(api: Api, body: Mapping[str, Any]) -> list[str]:
    """The request's prompt as the cache sees it, in the API's cache order: each tool, then the
    system prompt (each Anthropic system block), then each message — compact JSON pieces whose
    concatenation is the text counted as the request's input tokens."""
    parts = [dumps(tool) for tool in as_list(body.get("tools"))]
    system = system_of(api, body)
    if isinstance(system, list):
        parts += [dumps(block) for block in cast(list[Any], system)]
    elif system is not None:
        parts.append(dumps(system))
    parts += [dumps(message) for message in messages_of(api, body)]
    return parts


def prompt_text(api: Api, body: Mapping[str, Any]) -> str:
    """The text whose count is a request's input tokens (see :func:`prompt_parts`)."""
    return "".join(prompt_parts(api, body))


def output_text(turn: Turn) -> str:
    """The text whose count is a reply's output tokens: its content, then each call's name and
    arguments JSON."""
    return turn.content + "".join(c.name + dumps(c.arguments) for c in turn.tool_calls)


def cache_breakpoint(parts: Sequence[str], marker: str) -> int:
    """For an API that caches up to explicit marks (Anthropic's ``"cache_control"``: the
    dialect's :attr:`~veil.dialects.base.Dialect.cache_marker`): the length of the prompt text
    up to the end of the last part carrying ``marker`` (0 when none does) — what a request may
    write to the cache."""
    end, offset = 0, 0
    for part in parts:
        offset += len(part)
        if marker in part:
            end = offset
    return end


def shared_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of two texts."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


# ---- refusals ------------------------------------------------------------------------------


def _openai_invalid(message: str, param: str | None, code: str | None, request_id: str) -> Reply:
    body = openai.error_body(message, "invalid_request_error", param=param, code=code)
    return json_reply(400, body, ((openai.REQUEST_ID_HEADER, request_id),))


def pairing_error(api: Api, body: Mapping[str, Any], *, request_id: str) -> Reply | None:
    """The API's 400 for a history where a tool call lacks its result or a result its call;
    ``None`` when every call and result pair up. The first problem in message order is reported.

    Texts (as quoted verbatim in public bug reports against each API):

    - Anthropic: ``messages.N: `tool_use` ids were found without `tool_result` blocks
      immediately after: ID, ID. Each `tool_use` block must have a corresponding `tool_result`
      block in the next message.`` and ``messages.N.content.K:
      unexpected `tool_use_id` found in `tool_result` blocks: ID. Each `tool_result` block must
      have a corresponding `tool_use` block in the previous message.``
    - Chat: ``An assistant message with 'tool_calls' must be followed by tool messages
      responding to each 'tool_call_id'. The following tool_call_ids did not have response
      messages: ID`` (``param: messages.[N].role``) and ``Invalid parameter: messages with role
      'tool' must be a response to a preceeding message with 'tool_calls'.`` (sic).
    - Responses: ``No tool output found for function call ID.`` and ``No tool call found for
      function call output with call_id ID.`` (``param: input``); a ``custom_tool_call`` says
      ``custom tool call`` instead (by analogy: not seen in a report).

    N is the index of the assistant message holding the unanswered calls, or of the message
    holding the orphan result: the reports quote the texts but do not show which index the
    services count.
    """
    messages = messages_of(api, body)
    if api == "anthropic":
        return _anthropic_pairing(messages, request_id)
    if api == "chat":
        return _chat_pairing(messages, request_id)
    if api == "gemini":
        return _gemini_pairing(messages, request_id)
    return _responses_pairing(messages, request_id)


def _gemini_pairing(contents: list[Any], request_id: str) -> Reply | None:
    """Gemini: a turn of ``functionResponse`` parts must come right after a model turn of
    ``functionCall`` parts, with as many parts (the texts as quoted in Gemini CLI's bug
    reports). A call turn followed by a plain user turn is let through: Gemini CLI's loop
    detector sends its recent history that way, ending in a call, then its own question."""

    def count(item: object, kind: str) -> int:
        return sum(1 for p in map(as_dict, as_list(as_dict(item).get("parts"))) if kind in p)

    for i, item in enumerate(contents):
        calls = count(item, "functionCall") if as_dict(item).get("role") == "model" else 0
        answers = count(contents[i + 1], "functionResponse") if i + 1 < len(contents) else 0
        before = count(contents[i - 1], "functionCall") if i > 0 else 0
        text = None
        if count(item, "functionResponse") and not before:
            text = (
                "Please ensure that function response turn comes immediately after a function "
                "call turn."
            )
        elif calls and answers and answers != calls:
            text = (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
        if text is not None:
            body = DIALECTS["gemini"].error_body(text, "INVALID_ARGUMENT")
            return error_reply("gemini", 400, body, request_id=request_id)
    return None


def schema_instance(schema: object) -> object:
    """A small JSON value that satisfies ``schema`` (a JSON schema; types in any case, as
    Gemini's ``OBJECT``/``STRING``): an object of its required properties (all when none is
    required), the first of an ``enum``, a number's ``minimum`` (else 1 for an integer, 0 for
    a number), ``"scripted"`` for a string, an array of one item. What a side call asking for
    structured output (Gemini CLI's model router, its loop detector) is answered, so that its
    client can read the answer: the router's ``complexity_score`` (an integer its client wants
    from 1) is 1, the loop detector's ``unproductive_state_confidence`` (a number) 0, which
    never ends a scripted session."""
    fields = as_dict(schema)
    if isinstance(fields.get("enum"), list) and fields["enum"]:
        return cast(list[Any], fields["enum"])[0]
    kind = str(fields.get("type") or ("object" if "properties" in fields else "string")).lower()
    if kind == "object":
        properties = as_dict(fields.get("properties"))
        required = [str(r) for r in as_list(fields.get("required"))] or list(properties)
        return {name: schema_instance(properties.get(name)) for name in required}
    if kind == "array":
        return [schema_instance(fields.get("items"))]
    if kind in ("integer", "number"):
        low = fields.get("minimum")
        if isinstance(low, int | float) and not isinstance(low, bool):
            return low
        return 1 if kind == "integer" else 0
    if kind == "boolean":
        return True
    return "scripted"


def side_answer(api: Api, body: Mapping[str, Any]) -> str | None:
    """The text a side call must be answered with when it asks for structured output: an
    instance of its schema as JSON (Gemini's ``responseJsonSchema``); None when it asks for
    free text."""
    if api != "gemini":
        return None
    schema = google.response_schema(body)
    return None if schema is None else dumps(schema_instance(schema))


def _anthropic_pairing(messages: list[Any], request_id: str) -> Reply | None:
    def uses(message: JSON) -> list[str]:
        if message.get("role") != "assistant":
            return []
        blocks = map(as_dict, as_list(message.get("content")))
        return [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]

    for i, raw in enumerate(messages):
        message = as_dict(raw)
        if message.get("role") == "user":
            previous = set(uses(as_dict(messages[i - 1]))) if i > 0 else set[str]()
            for k, block in enumerate(map(as_dict, as_list(message.get("content")))):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in previous:
                    text = (
                        f"messages.{i}.content.{k}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                        "block must have a corresponding `tool_use` block in the previous message."
                    )
                    return api_error(
                        "anthropic", 400, "invalid_request_error", text, request_id=request_id
                    )
        ids = uses(message)
        if ids:
            following = as_dict(messages[i + 1]) if i + 1 < len(messages) else {}
            answered = {
                str(b.get("tool_use_id"))
                for b in map(as_dict, as_list(following.get("content")))
                if following.get("role") == "user" and b.get("type") == "tool_result"
            }
            missing = [x for x in ids if x not in answered]
            if missing:
                text = (
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message."
                )
                return api_error(
                    "anthropic", 400, "invalid_request_error", text, request_id=request_id
                )
    return None


def _chat_pairing(messages: list[Any], request_id: str) -> Reply | None:
    open_calls: set[str] = set()
    for i, raw in enumerate(messages):
        message = as_dict(raw)
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in open_calls:
                text = (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
                return _openai_invalid(text, f"messages.[{i}].role", None, request_id)
            open_calls.discard(call_id)
            continue
        calls = [str(as_dict(c).get("id")) for c in as_list(message.get("tool_calls"))]
        if role == "assistant" and calls:
            missing = [c for c in calls if c in _unanswered(messages, i)]
            if missing:
                text = (
                    "An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not "
                    f"have response messages: {', '.join(missing)}"
                )
                return _openai_invalid(text, f"messages.[{i}].role", None, request_id)
            open_calls = set(calls)
        else:
            open_calls = set()
    return None


def _unanswered(messages: list[Any], assistant: int) -> set[str]:
    """Chat: the call ids of message ``assistant`` that the tool messages right after it leave
    unanswered."""
    calls = {
        str(as_dict(c).get("id")) for c in as_list(as_dict(messages[assistant]).get("tool_calls"))
    }
    for raw in messages[assistant + 1 :]:
        message = as_dict(raw)
        if message.get("role") != "tool":
            break
        calls.discard(str(message.get("tool_call_id")))
    return calls


def _responses_pairing(items: list[Any], request_id: str) -> Reply | None:
    seen_calls: set[str] = set()
    for i, raw in enumerate(items):
        item = as_dict(raw)
        kind = item.get("type")
        call_id = str(item.get("call_id"))
        if kind in _RESPONSES_OUTPUTS and call_id not in seen_calls:
            what = _RESPONSES_OUTPUTS[str(kind)]
            text = f"No tool call found for {what} call output with call_id {call_id}."
            return _openai_invalid(text, "input", None, request_id)
        if kind in _RESPONSES_CALLS:
            seen_calls.add(call_id)
            answered = any(
                as_dict(later).get("type") in _RESPONSES_OUTPUTS
                and str(as_dict(later).get("call_id")) == call_id
                for later in items[i + 1 :]
            )
            if not answered:
                what = _RESPONSES_CALLS[str(kind)]
                return _openai_invalid(
                    f"No tool output found for {what} call {call_id}.", "input", None, request_id
                )
    return None


def overflow_error(
    api: Api,
    style: OverflowStyle,
    *,
    limit: int,
    counted: int,
    stream: bool,
    request_id: str,
    model: str,
) -> Reply:
    """The reply refusing a prompt of ``counted`` tokens over a ``limit``-token window.

    The ``native`` bodies are each dialect's
    (:attr:`~veil.dialects.base.Dialect.overflow_body`):

    - Anthropic (``native``): 400 ``invalid_request_error``, ``prompt is too long: M tokens >
      N maximum``.
    - Chat (``native``): 400, ``code: context_length_exceeded``, ``param: messages``, ``This
      model's maximum context length is N tokens. However, your messages resulted in M tokens.
      Please reduce the length of the messages.``
    - Responses (``native``): 400, ``code: context_length_exceeded``, ``param: input``, ``Your
      input exceeds the context window of this model. Please adjust your input and try
      again.``; ``native-stream`` and ``stream: true``: a 200 stream ``response.created``,
      ``response.in_progress``, ``response.failed`` whose ``response.error`` has that code and
      message. Codex 0.171 reports both Responses forms as "ran out of room in the model's
      context window"; it shows the llama.cpp and Ollama bodies as raw errors.
    - ``llama.cpp``: 400 ``{"error": {"code": 400, "message": "request (M tokens) exceeds the
      available context size (N tokens), try increasing it", "type":
      "exceed_context_size_error", "n_prompt_tokens": M, "n_ctx": N}}``, whatever the API.
    - ``ollama``: 400, the llama.cpp body above (without the counts, as Ollama's runner
      forwards it) as the message of an OpenAI error ``{"error": {"message", "type":
      "invalid_request_error", "param": null, "code": null}}``, whatever the API.
    """
    llama = {
        "code": 400,
        "message": f"request ({counted} tokens) exceeds the available context size "
        f"({limit} tokens), try increasing it",
        "type": "exceed_context_size_error",
    }
    if style == "llama.cpp":
        return json_reply(400, {"error": {**llama, "n_prompt_tokens": counted, "n_ctx": limit}})
    if style == "ollama":
        return _openai_invalid(dumps({"error": llama}), None, None, request_id)
    body = DIALECTS[api].overflow_body(limit, counted, request_id=request_id)
    if api == "responses" and style == "native-stream" and stream:
        refused = as_dict(body.get("error"))
        error = {"code": refused.get("code"), "message": refused.get("message")}
        stream_ = ResponsesStream(request_id, model)
        failed = {**stream_.response("failed", []), "error": error}
        pieces = (
            stream_.event("response.created", response=stream_.response("in_progress", [])),
            stream_.event("response.in_progress", response=stream_.response("in_progress", [])),
            stream_.event("response.failed", response=failed),
        )
        return Reply(200, SSE, pieces, True, (("x-request-id", request_id),))
    return error_reply(api, 400, body, request_id=request_id)


# ---- bodies --------------------------------------------------------------------------------


class BodyError(ValueError):
    """A request body the server cannot read; ``status`` is 400 (malformed) or 415 (an
    encoding it cannot decode)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def decode_body(raw: bytes, encoding: str | None) -> bytes:
    """``raw`` decoded from its ``Content-Encoding`` (``gzip``, ``deflate``, ``zstd`` or
    ``identity``, possibly a comma-separated chain: :func:`veil.dialects.encoding.decode`).
    An encoding it cannot decode (``zstd`` without the ``zstandard`` package, which is named)
    is refused with 415, a body its encoding cannot decode with 400."""
    try:
        return decode(raw, encoding)
    except Unsupported as exc:
        raise BodyError(415, str(exc)) from None
    except ValueError as exc:
        raise BodyError(400, str(exc)) from None


def parse_json(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object (empty for an empty body); :class:`BodyError` else."""
    if not raw.strip():
        return {}
    try:
        data: object = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BodyError(400, f"the request body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BodyError(400, "the request body is not a JSON object")
    return cast(dict[str, Any], data)
