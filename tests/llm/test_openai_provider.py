"""OpenAIProvider: the real ``openai`` SDK against a chat-completions server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm.conftest import Sleeps, WireServer, json_reply, openai_sse, recording
from veil.llm.configure import ModelNotConfigured
from veil.llm.failures import RetryPolicy
from veil.llm.messages import (
    AssistantMessage,
    ContextOverflow,
    Done,
    ProviderError,
    Request,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from veil.llm.openai_provider import OpenAIProvider
from veil.llm.provider import Provider, complete

HELLO = Request("You are terse.", (UserMessage("hi"),))
READ = ToolSpec(
    "read",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@pytest.fixture
def provider(wire: WireServer, sleeps: Sleeps) -> Iterator[OpenAIProvider]:
    policy = RetryPolicy(max_retries=3, base_delay_s=0.5, max_delay_s=4.0, sleep=sleeps)
    with OpenAIProvider(
        "gpt-4.1-mini", base_url=f"{wire.url}/v1", api_key="sk-test", retry=policy
    ) as p:
        yield p


def events_of(provider: OpenAIProvider, request: Request = HELLO) -> list[StreamEvent]:
    return list(provider.stream(request))


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "local-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_is_a_provider(provider: OpenAIProvider) -> None:
    assert isinstance(provider, Provider)
    assert provider.model == "gpt-4.1-mini" and provider.context_window == 1_047_576


def test_text_reply_streams_deltas_then_done_with_usage_and_cost(
    wire: WireServer, provider: OpenAIProvider
) -> None:
    wire.queue(recording("openai_text.sse"))
    events = events_of(provider)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["Hello", "! How", " can I", " help?"]
    done = events[-1]
    assert isinstance(done, Done)
    response = done.response
    assert response.message == AssistantMessage("Hello! How can I help?")
    assert response.stop_reason == "stop"
    assert response.model == "gpt-4.1-mini-2025-04-14"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 9)
    assert response.usage.cost_usd == pytest.approx(21 * 0.40e-6 + 9 * 1.60e-6)


def test_tool_calls_assembled_from_fragments(wire: WireServer, provider: OpenAIProvider) -> None:
    wire.queue(recording("openai_tool_calls.sse"))
    events = events_of(provider, Request("sys", (UserMessage("look"),), (READ,)))
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [f.index for f in fragments] == [0] * 7 + [1] * 4
    assert fragments[0].id == "call_Qm3fX8aLz1" and fragments[0].name == "read"
    assert "".join(f.arguments_fragment for f in fragments if f.index == 0) == (
        '{"path":"src/a.py"}'
    )
    done = events[-1]
    assert isinstance(done, Done)
    response = done.response
    assert response.message.tool_calls == (
        ToolCall("call_Qm3fX8aLz1", "read", {"path": "src/a.py"}),
        ToolCall("call_Rb7kP2cWn4", "bash", {"command": "ls -la"}),
    )
    assert response.stop_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1200, 45)


def test_invalid_tool_call_json_is_kept_raw(wire: WireServer, provider: OpenAIProvider) -> None:
    call = {"index": 0, "id": "call_1", "type": "function"}
    wire.queue(
        openai_sse(
            [
                chunk({"tool_calls": [{**call, "function": {"name": "edit", "arguments": ""}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "a.py'}}]}),
                chunk({}, "tool_calls"),
            ]
        )
    )
    response = complete(provider, HELLO)
    (tool_call,) = response.message.tool_calls
    assert tool_call.arguments == {"_raw": '{"path": "a.py'}
    assert response.usage.input_tokens == 0  # this server sent no usage chunk
    assert response.usage.cost_usd == 0.0


def test_missing_ids_and_empty_arguments_get_defaults(
    wire: WireServer, provider: OpenAIProvider
) -> None:
    wire.queue(
        openai_sse(
            [
                chunk({"tool_calls": [{"index": 0, "function": {"name": "ls", "arguments": ""}}]}),
                chunk({}, "tool_calls"),
            ]
        )
    )
    (tool_call,) = complete(provider, HELLO).message.tool_calls
    assert tool_call == ToolCall("call_0", "ls", {})


def test_request_wire_format(wire: WireServer, provider: OpenAIProvider) -> None:
    wire.queue(recording("openai_text.sse"))
    request = Request(
        system="You are Veil.",
        messages=(
            UserMessage("read a.py"),
            AssistantMessage("Reading.", (ToolCall("call_1", "read", {"path": "a.py"}),)),
            ToolResultMessage("call_1", "read", "print('hi')"),
            AssistantMessage("", (ToolCall("call_2", "read", {"path": "b.py"}),)),
            ToolResultMessage("call_2", "read", "no such file", is_error=True),
        ),
        tools=(READ,),
        max_tokens=256,
    )
    complete(provider, request)
    (seen,) = wire.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test"
    body = seen.body
    assert body["model"] == "gpt-4.1-mini"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 256  # not OpenAI itself: the long-standing name
    assert body["messages"] == [
        {"role": "system", "content": "You are Veil."},
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "b.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "ERROR: no such file"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": READ.parameters,
            },
        }
    ]
    assert "response_format" not in body


def test_no_tools_and_no_system_send_neither(wire: WireServer, provider: OpenAIProvider) -> None:
    wire.queue(recording("openai_text.sse"))
    complete(provider, Request("", (UserMessage("hi"),)))
    body = wire.seen[0].body
    assert "tools" not in body and "max_tokens" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_json_schema_goes_as_response_format(wire: WireServer, provider: OpenAIProvider) -> None:
    wire.queue(recording("openai_text.sse"))
    list(provider.stream(HELLO, json_schema={"type": "object"}))
    assert wire.seen[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "extraction", "schema": {"type": "object"}},
    }


def test_500_then_success_is_retried(
    wire: WireServer, provider: OpenAIProvider, sleeps: Sleeps
) -> None:
    wire.queue(
        json_reply(500, {"error": {"message": "boom", "type": "server_error"}}),
        json_reply(503, {"error": {"message": "busy"}}),
        recording("openai_text.sse"),
    )
    assert complete(provider, HELLO).message.content == "Hello! How can I help?"
    assert len(wire.seen) == 3
    assert sleeps.waits == [0.5, 1.0]


def test_429_retries_are_bounded(
    wire: WireServer, provider: OpenAIProvider, sleeps: Sleeps
) -> None:
    wire.queue(json_reply(429, {"error": {"message": "Rate limit reached", "type": "requests"}}))
    with pytest.raises(ProviderError, match=r"HTTP 429.*Rate limit.*after 4 attempts") as info:
        complete(provider, HELLO)
    assert info.value.retryable
    assert len(wire.seen) == 4  # 1 + max_retries
    assert sleeps.waits == [0.5, 1.0, 2.0]


def test_retry_after_header_is_honoured_up_to_the_cap(
    wire: WireServer, provider: OpenAIProvider, sleeps: Sleeps
) -> None:
    limited = {"error": {"message": "slow down"}}
    wire.queue(
        json_reply(429, limited, (("retry-after", "2"),)),
        json_reply(429, limited, (("retry-after", "60"),)),
        recording("openai_text.sse"),
    )
    complete(provider, HELLO)
    assert sleeps.waits == [2.0, 4.0]  # the second hint is capped at max_delay_s


def test_client_errors_are_not_retried(
    wire: WireServer, provider: OpenAIProvider, sleeps: Sleeps
) -> None:
    wire.queue(json_reply(401, {"error": {"message": "Incorrect API key provided"}}))
    with pytest.raises(ProviderError, match=r"HTTP 401.*Incorrect API key") as info:
        complete(provider, HELLO)
    assert not info.value.retryable and not isinstance(info.value, ContextOverflow)
    assert len(wire.seen) == 1 and sleeps.waits == []


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, "
                    "your messages resulted in 130512 tokens. Please reduce the length.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            id="openai",
        ),
        pytest.param(
            {
                "object": "error",
                "message": "This model's maximum context length is 32768 tokens. However, you "
                "requested 40000 tokens (39000 in the messages, 1000 in the completion).",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            id="vllm",
        ),
        pytest.param(
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5000,
                    "n_ctx": 4096,
                }
            },
            id="llama.cpp",
        ),
    ],
)
def test_context_overflow_is_recognised(
    wire: WireServer, provider: OpenAIProvider, sleeps: Sleeps, body: dict[str, Any]
) -> None:
    wire.queue(json_reply(400, body))
    with pytest.raises(ContextOverflow):
        complete(provider, HELLO)
    assert len(wire.seen) == 1 and sleeps.waits == []


def test_error_event_inside_the_stream(wire: WireServer, provider: OpenAIProvider) -> None:
    wire.queue(openai_sse([{"error": {"message": "maximum context length is 4096 tokens"}}]))
    with pytest.raises(ContextOverflow):
        complete(provider, HELLO)


def test_unreachable_server_is_retried_then_reported(sleeps: Sleeps) -> None:
    policy = RetryPolicy(max_retries=2, sleep=sleeps)
    with (
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", retry=policy, timeout=5) as p,
        pytest.raises(ProviderError, match="cannot reach") as info,
    ):
        complete(p, HELLO)
    assert info.value.retryable and sleeps.waits == [0.5, 1.0]


def test_local_servers_never_get_the_openai_key(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    wire.queue(recording("openai_text.sse"))
    with OpenAIProvider("qwen2.5:7b", base_url=f"{wire.url}/v1") as p:
        complete(p, HELLO)
        assert p.context_window == 32_768
    assert "sk-secret" not in wire.seen[0].headers.get("authorization", "")


def test_openai_itself_gets_max_completion_tokens(
    wire: WireServer, provider: OpenAIProvider
) -> None:
    provider.is_openai = True  # as for api.openai.com: its reasoning models reject max_tokens
    wire.queue(recording("openai_text.sse"))
    complete(provider, Request("", (UserMessage("hi"),), max_tokens=64))
    body = wire.seen[0].body
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body


def test_openai_itself_is_the_default_base_url() -> None:
    with OpenAIProvider("o3", api_key="sk-test") as p:
        assert p.is_openai and p.base_url == "https://api.openai.com/v1"
        assert p.context_window == 200_000


def test_no_key_for_openai_itself_says_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelNotConfigured, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4.1-mini")
