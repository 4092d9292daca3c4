"""The contract every wire dialect passes (:data:`veil.dialects.DIALECTS`, parametrized): a small
conversation in the dialect is read into the right roles and call ids; the proxy's splicer,
working from the dialect's result and call-id keys, changes only the bytes of the result it
stubs; usage is read from a JSON answer and from a stream; an overflow refusal is recognised;
the error body the proxy answers in the dialect is one its clients' SDKs read.

A new dialect brings its :class:`Sample` (:data:`SAMPLES`): real-shaped bodies, answers and
errors of its API, written out here (not built with the dialect itself).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import anthropic
import httpx
import openai
import pytest
from anthropic.types import ErrorResponse
from openai.types import ErrorObject

from veil.dialects import DIALECTS, Api, Dialect, Piece, dialect_for_path, route
from veil.dialects.base import USAGE_FIGURES, dumps
from veil.dialects.overflow import overflow_limits
from veil.llm.contract import WireServer, json_reply
from veil.proxy.reading import Reader, parse
from veil.proxy.relay import UsageSniffer
from veil.proxy.wire import common_prefix, splice

Json = dict[str, Any]
Seen = tuple[str, tuple[str, ...], str | None, bool]
"""A message as read: (role, its calls' ids, the call it answers, is it an error)."""


@dataclass(frozen=True)
class Sample:
    """What a dialect's API really sends and answers (each field says what is expected)."""

    path: str
    body: Json
    seen: list[Seen]
    tool_names: list[str]
    headers: Mapping[str, str]
    session: str
    ttl: float
    answer: Json
    stream: bytes
    usage: dict[str, int]
    """The figures both the answer and the stream state."""
    overflow: Json
    limits: tuple[int | None, int | None]
    other_error: Json
    """An error that is not an overflow (rate limit, overloaded)."""
    client: Callable[[str], object]
    """Calls the API's SDK at a base URL (it must raise the error answered there)."""
    validate: Callable[[Json], object]
    """The SDK's model of the API's error body (raises on a wrong shape)."""
    counts: list[str] = field(default_factory=lambda: [])
    """Paths that are token counts."""


def sse(*events: tuple[str, Json]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


# fmt: off
ANTHROPIC = Sample(
    path="/v1/messages?beta=true",
    body={
        "model": "claude-x",
        "max_tokens": 1000,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Read", "input_schema": {}}, {"name": "Bash", "input_schema": {}}],
        "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "sess-a"})},
        "messages": [
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "c2ln"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read",
                 "input": {"file_path": "/r/a.py"}},
                {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "ls"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)\n"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
                 "content": [{"type": "text", "text": "ls: denied"}],
                 "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    },
    seen=[
        ("user", (), None, False),
        ("assistant", ("toolu_1", "toolu_2"), None, False),
        ("tool", (), "toolu_1", False),
        ("tool", (), "toolu_2", True),
        ("assistant", (), None, False),
    ],
    tool_names=["Read", "Bash"],
    headers={"x-claude-code-session-id": "header-session"},
    session="sess-a",
    ttl=3600.0,
    answer={"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                      "cache_read_input_tokens": 2000, "output_tokens": 30}},
    stream=sse(
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                      "cache_read_input_tokens": 2000, "output_tokens": 1}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "hi"}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 30}}),
        ("message_stop", {"type": "message_stop"}),
    ),
    usage={"input_tokens": 12, "cache_write": 100, "cache_read": 2000, "output_tokens": 30},
    overflow={"type": "error", "request_id": "req_1", "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
    limits=(200_000, 210_000),
    other_error={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    client=lambda url: anthropic.Anthropic(api_key="k", base_url=url, max_retries=0)
    .messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]),
    validate=ErrorResponse.model_validate,
    counts=["/v1/messages/count_tokens", "/v1/messages/count_tokens?beta=true"],
)

RESPONSES = Sample(
    path="/backend-api/codex/responses",
    body={
        "model": "gpt-5",
        "instructions": "You are Codex.",
        "tools": [{"type": "function", "name": "exec_command", "parameters": {}},
                  {"type": "namespace", "name": "mcp__veil",
                   "tools": [{"type": "function", "name": "expand"}]}],
        "prompt_cache_key": "sess-r",
        "prompt_cache_retention": "24h",
        "input": [
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "rules"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "fix the bug"}]},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"},
            {"type": "function_call", "name": "exec_command", "call_id": "call_1",
             "arguments": json.dumps({"cmd": "cat a.py"})},
            {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_2",
             "input": "*** Begin Patch\n*** Update File: a.py\n*** End Patch\n"},
            {"type": "function_call_output", "call_id": "call_1", "output": "print(1)\n"},
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Success"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "done"}]},
        ],
    },
    seen=[
        ("system", (), None, False),
        ("user", (), None, False),
        ("assistant", ("call_1", "call_2"), None, False),
        ("tool", (), "call_1", False),
        ("tool", (), "call_2", False),
        ("assistant", (), None, False),
    ],
    tool_names=["exec_command", "mcp__veil", "mcp__veil.expand"],
    headers={"session-id": "header-session"},
    session="sess-r",
    ttl=86_400.0,
    answer={"id": "resp_1", "object": "response", "status": "completed", "output": [],
            "usage": {"input_tokens": 2112, "input_tokens_details": {"cached_tokens": 2000},
                      "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 2142}},
    stream=sse(
        ("response.created", {"type": "response.created",
                              "response": {"id": "resp_1", "status": "in_progress",
                                           "usage": None}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hi"}),
        ("response.completed", {"type": "response.completed", "response": {
            "id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 2112, "input_tokens_details": {"cached_tokens": 2000},
                      "output_tokens": 30, "total_tokens": 2142}}}),
    ),
    usage={"input_tokens": 2112, "cache_read": 2000, "output_tokens": 30},
    overflow={"error": {
        "message": "Your input exceeds the context window of this model. Please adjust your "
                   "input and try again.",
        "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}},
    limits=(None, None),
    other_error={"error": {"message": "Rate limit reached for gpt-5 in organization org-1.",
                           "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
    client=lambda url: openai.OpenAI(api_key="k", base_url=f"{url}/v1", max_retries=0)
    .responses.create(model="m", input="hi"),
    validate=lambda body: ErrorObject.model_validate(body["error"]),
)

CHAT = Sample(
    path="/openai/deployments/gpt/chat/completions?api-version=2025-01-01",
    body={
        "model": "m",
        "user": "sess-c",
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "bash", "arguments": json.dumps({"command": "cat a.py"})}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "print(1)\n"},
            {"role": "tool", "tool_call_id": "call_2",
             "content": [{"type": "text", "text": "a.py"}]},
            {"role": "assistant", "content": "done"},
        ],
    },
    seen=[
        ("system", (), None, False),
        ("user", (), None, False),
        ("assistant", ("call_1", "call_2"), None, False),
        ("tool", (), "call_1", False),
        ("tool", (), "call_2", False),
        ("assistant", (), None, False),
    ],
    tool_names=["bash"],
    headers={},
    session="sess-c",
    ttl=300.0,
    answer={"id": "chatcmpl-1", "object": "chat.completion", "choices": [],
            "usage": {"prompt_tokens": 2112, "completion_tokens": 30, "total_tokens": 2142,
                      "prompt_tokens_details": {"cached_tokens": 2000}}},
    stream=(
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
        b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":2112,"completion_tokens":30,'
        b'"total_tokens":2142,"prompt_tokens_details":{"cached_tokens":2000}}}\n\n'
        b"data: [DONE]\n\n"
    ),
    usage={"input_tokens": 2112, "cache_read": 2000, "output_tokens": 30},
    overflow={"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
                   "messages resulted in 130000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}},
    limits=(128_000, 130_000),
    other_error={"error": {"message": "Rate limit reached.", "type": "requests", "param": None,
                           "code": "rate_limit_exceeded"}},
    client=lambda url: openai.OpenAI(api_key="k", base_url=f"{url}/v1", max_retries=0)
    .chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}]),
    validate=lambda body: ErrorObject.model_validate(body["error"]),
)



class GeminiError(Exception):
    """What Gemini's SDKs raise on an error answer: its status and the error's message."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"{status_code} {message}")
        self.status_code = status_code


def gemini_client(url: str) -> object:
    """``models.generate_content`` as google-genai sends it (its error read as it reads it)."""
    response = httpx.post(
        f"{url}/v1beta/models/gemini-2.5-pro:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        headers={"x-goog-api-key": "k"},
    )
    if response.status_code >= 400:
        validate_gemini_error(response.json())
        raise GeminiError(response.status_code, response.json()["error"]["message"])
    return response.json()


def validate_gemini_error(body: Json) -> None:
    """``{"error": {"code": int, "message": str, "status": str}}``, as Google's APIs write it."""
    error = body["error"]
    assert isinstance(error["code"], int) and isinstance(error["message"], str)
    assert isinstance(error["status"], str) and error["status"].isupper()


GEMINI_USAGE = {"promptTokenCount": 2112, "cachedContentTokenCount": 2000,
                "candidatesTokenCount": 25, "thoughtsTokenCount": 5, "totalTokenCount": 2142}

GEMINI = Sample(
    path="/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
    counts=["/v1beta/models/gemini-2.5-pro:countTokens"],
    body={
        "contents": [
            {"role": "user", "parts": [{"text": "fix the bug"}]},
            {"role": "model", "parts": [
                {"text": "Reading the file first.", "thought": True, "thoughtSignature": "c2ln"},
                {"functionCall": {"id": "call-1", "name": "read_file",
                                  "args": {"absolute_path": "/r/a.py"}}},
                {"functionCall": {"id": "call-2", "name": "run_shell_command",
                                  "args": {"command": "ls"}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "call-1", "name": "read_file",
                                      "response": {"output": "print(1)\n"}}},
                {"functionResponse": {"id": "call-2", "name": "run_shell_command",
                                      "response": {"error": "ls: denied"}}},
            ]},
            {"role": "model", "parts": [{"text": "done"}]},
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [
            {"name": "read_file", "description": "Reads a file.", "parameters": {}},
            {"name": "run_shell_command", "description": "Runs a command.",
             "parameters": {}, "response": {"type": "OBJECT"}},
        ]}],
        "generationConfig": {"temperature": 0, "thinkingConfig": {"includeThoughts": True}},
    },
    seen=[
        ("user", (), None, False),
        ("assistant", ("call-1", "call-2"), None, False),
        ("tool", (), "call-1", False),
        ("tool", (), "call-2", True),
        ("assistant", (), None, False),
    ],
    tool_names=["read_file", "run_shell_command"],
    headers={"x-goog-api-key": "k"},
    session="",
    ttl=300.0,
    answer={"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": GEMINI_USAGE, "modelVersion": "gemini-2.5-pro"},
    stream=(
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"h"}]}}],'
        b'"usageMetadata":{"promptTokenCount":2112,"cachedContentTokenCount":2000,'
        b'"candidatesTokenCount":1,"totalTokenCount":2113}}\r\n\r\n'
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"i"}]},'
        b'"finishReason":"STOP"}],"usageMetadata":' + json.dumps(GEMINI_USAGE).encode()
        + b"}\r\n\r\n"
    ),
    usage={"input_tokens": 2112, "cache_read": 2000, "output_tokens": 30},
    overflow={"error": {
        "code": 400,
        "message": "The input token count (210000) exceeds the maximum number of tokens "
                   "allowed (200000).",
        "status": "INVALID_ARGUMENT"}},
    limits=(200_000, 210_000),
    other_error={"error": {"code": 429, "message": "Resource has been exhausted (e.g. check "
                           "quota).", "status": "RESOURCE_EXHAUSTED"}},
    client=gemini_client,
    validate=validate_gemini_error,
)

# fmt: on

SAMPLES: dict[Api, Sample] = {
    "anthropic": ANTHROPIC,
    "responses": RESPONSES,
    "chat": CHAT,
    "gemini": GEMINI,
}
NAMES: list[Api] = sorted(DIALECTS)


def test_every_dialect_brings_its_sample() -> None:
    assert set(SAMPLES) == set(DIALECTS)


def conversation(dialect: Dialect, body: Json) -> list[Seen]:
    """The messages a body gives, calls that stand alone joined to the next assistant message
    (as the proxy joins them)."""
    out: list[Seen] = []
    pending: list[str] = []
    for item in body[dialect.messages_key]:
        piece: Piece = dialect.piece(item)
        if piece.calls:
            pending += [c.id for c in piece.calls]
            continue
        if pending:
            out.append(("assistant", tuple(pending), None, False))
            pending = []
        for m in piece.messages:
            out.append((m.role, tuple(c.id for c in m.calls), m.call_id, m.is_error))
    return out


def objects(value: object) -> list[Json]:
    """Every JSON object in ``value``, itself first."""
    if isinstance(value, list):
        return [o for v in cast(list[Any], value) for o in objects(v)]
    if not isinstance(value, dict):
        return []
    d = cast(Json, value)
    return [d, *(o for v in d.values() for o in objects(v))]


@pytest.mark.parametrize("name", NAMES)
def test_a_body_is_read_into_roles_and_call_ids(name: Api) -> None:
    dialect, sample = DIALECTS[name], SAMPLES[name]
    assert conversation(dialect, sample.body) == sample.seen
    for item in sample.body[dialect.messages_key]:
        piece = dialect.piece(item)
        tools = [m for m in piece.messages if m.role == "tool"]
        assert [r.call_id for r in piece.results] == [m.call_id for m in tools]
        for result in piece.results:
            assert result.encoded == dumps(result.value)
            (holder,) = [o for o in objects(item) if o.get(result.key) is result.value]
            assert holder[dialect.call_key] == result.call_id and dialect.is_result(holder)
    results = [o for m in sample.body[dialect.messages_key] for o in objects(m)]
    assert sum(map(dialect.is_result, results)) == sum(1 for s in sample.seen if s[0] == "tool")
    assert dialect.tool_names(sample.body) == sample.tool_names
    assert dialect.fixed_keys and all(k in sample.body for k in dialect.fixed_keys)
    assert dialect.system_key is None or dialect.system_key in dialect.fixed_keys
    raw = dumps(sample.body)
    assert dialect.session_of(sample.body, sample.headers) == sample.session
    assert dialect.cache_ttl(sample.body, raw) == sample.ttl


@pytest.mark.parametrize("name", NAMES)
def test_its_paths_route_to_it(name: Api) -> None:
    dialect, sample = DIALECTS[name], SAMPLES[name]
    assert route(sample.path) == (dialect, False)
    for path in dialect.paths:
        assert route(f"/base{path}/?q=1") == (dialect, False)
    for path in sample.counts:
        assert route(path) == (dialect, True)
    assert dialect_for_path("/v1/models") is None


@pytest.mark.parametrize("name", NAMES)
def test_a_stub_spliced_into_one_result_changes_only_its_bytes(name: Api) -> None:
    """Through the proxy's reader and splicer, which find a result by the dialect's keys."""
    sample = SAMPLES[name]
    raw = dumps(sample.body)
    request = parse(DIALECTS[name].api, raw, sample.headers, Reader())
    assert [r.call_id for r in request.results] == [s[2] for s in sample.seen if s[0] == "tool"]
    for k, result in enumerate(request.results):
        spliced = splice(request, raw, {k: "[veil: stub]"})
        assert spliced.exact and result.span is not None
        start, end = result.span
        # the stub as the API's result holds it (Gemini's: an object, ``{"output": …}``)
        stub = DIALECTS[name].stub_value(result.value, "[veil: stub]")
        assert spliced.body == raw[:start] + dumps(stub) + raw[end:]
        again = parse(DIALECTS[name].api, spliced.body, sample.headers, Reader())
        values = [r.value for r in request.results]
        values[k] = stub
        assert [r.value for r in again.results] == values
        # written otherwise (indented, ASCII-escaped): spliced in place all the same — the
        # same values, and every byte but the stub's the client's
        loose = json.dumps(sample.body, indent=1).encode()
        redone = splice(parse(DIALECTS[name].api, loose, {}, Reader()), loose, {k: "[veil: stub]"})
        assert redone.exact and json.loads(redone.body) == json.loads(spliced.body)
        head = common_prefix(redone.body, loose)
        tail = common_prefix(redone.body[::-1], loose[::-1])
        assert len(redone.body) - head - tail <= len(dumps(stub))


@pytest.mark.parametrize("name", NAMES)
def test_usage_is_read_from_a_json_answer_and_from_a_stream(name: Api) -> None:
    dialect, sample = DIALECTS[name], SAMPLES[name]
    assert set(sample.usage) <= set(USAGE_FIGURES)
    assert dialect.usage(sample.answer) == sample.usage
    # (a stream is known by its first chunk, which starts with "event:" or "data:")
    for size in (7, 64, len(sample.stream)):
        sniffer = UsageSniffer(dialect)
        for at in range(0, len(sample.stream), size):
            sniffer.feed(sample.stream[at : at + size])
        assert sniffer.usage() == sample.usage
    sniffer = UsageSniffer(dialect)
    sniffer.feed(json.dumps(sample.answer).encode())
    assert sniffer.usage() == sample.usage
    assert dialect.prompt_tokens(sample.usage) == 2112
    # what the dialect writes it reads back
    written = dialect.usage(dict(usage=dialect.usage_block(2112, 30, 2000, 0)))
    assert dialect.prompt_tokens(written) == 2112
    assert (written["cache_read"], written["output_tokens"]) == (2000, 30)


@pytest.mark.parametrize("name", NAMES)
def test_an_overflow_refusal_is_recognised(name: Api) -> None:
    dialect, sample = DIALECTS[name], SAMPLES[name]
    assert dialect.is_overflow(json.dumps(sample.overflow).encode())
    assert not dialect.is_overflow(json.dumps(sample.other_error).encode())
    found = dialect.error_of(sample.overflow)
    assert found is not None
    assert overflow_limits(found[0]) == sample.limits
    own = dialect.overflow_body(200_000, 210_000)
    assert dialect.is_overflow(json.dumps(own).encode())
    sample.validate(sample.overflow)
    sample.validate(own)


@pytest.mark.parametrize("name", NAMES)
def test_the_error_it_answers_is_read_by_its_clients(name: Api) -> None:
    dialect, sample = DIALECTS[name], SAMPLES[name]
    message = "veil proxy: upstream unreachable (ConnectionRefusedError)"
    body = dialect.error_body(message)
    sample.validate(body)
    found = dialect.error_of(body)
    assert found is not None and found[0] == message
    with WireServer() as server:
        server.queue(json_reply(502, body))
        with pytest.raises(
            (anthropic.APIStatusError, openai.APIStatusError, GeminiError)
        ) as raised:
            sample.client(server.url)
    error: Any = raised.value
    assert error.status_code == 502 and message in str(error)
