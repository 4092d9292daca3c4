"""AnthropicProvider: the real ``anthropic`` SDK against a Messages server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm.conftest import Sleeps, WireServer, anthropic_sse, json_reply, recording
from veil.llm.anthropic_provider import AnthropicProvider
from veil.llm.configure import ModelNotConfigured
from veil.llm.failures import RetryPolicy
from veil.llm.messages import (
    AssistantMessage,
    ContextOverflow,
    Done,
    ProviderError,
    Request,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from veil.llm.provider import Provider, complete

HELLO = Request("You are terse.", (UserMessage("hi"),))
READ = ToolSpec(
    "read",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
MODEL = "claude-sonnet-4-6"  # the SDK warns (an error here) for deprecated names


@pytest.fixture
def provider(wire: WireServer, sleeps: Sleeps) -> Iterator[AnthropicProvider]:
    policy = RetryPolicy(max_retries=3, base_delay_s=0.5, max_delay_s=4.0, sleep=sleeps)
    with AnthropicProvider(MODEL, base_url=wire.url, api_key="sk-ant-test", retry=policy) as p:
        yield p


def start(input_tokens: int = 10) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }


def tool_use_events(partial_json: list[str]) -> list[dict[str, Any]]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "edit", "input": {}}
    return [
        start(),
        {"type": "content_block_start", "index": 0, "content_block": block},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in partial_json
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"type": "message_delta", "stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]


def test_is_a_provider(provider: AnthropicProvider) -> None:
    assert isinstance(provider, Provider)
    assert provider.model == MODEL and provider.context_window == 200_000


def test_text_reply_with_usage_including_cache(
    wire: WireServer, provider: AnthropicProvider
) -> None:
    wire.queue(recording("anthropic_text.sse"))
    events = list(provider.stream(HELLO))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", "! How can I help?"]
    done = events[-1]
    assert isinstance(done, Done)
    response = done.response
    assert response.message == AssistantMessage("Hello! How can I help?")
    assert response.stop_reason == "stop"
    assert response.model == "claude-sonnet-4-5-20250929"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (125, 12)
    assert response.usage.cost_usd == pytest.approx((25 * 3 + 100 * 0.3 + 12 * 15) / 1e6)


def test_tool_use_assembled_from_input_json_deltas(
    wire: WireServer, provider: AnthropicProvider
) -> None:
    wire.queue(recording("anthropic_tool_use.sse"))
    events = list(provider.stream(Request("sys", (UserMessage("look"),), (READ,))))
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert texts == ["I'll read", " the file."]
    assert fragments[0] == ToolCallDelta(0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "read", "")
    assert {f.index for f in fragments} == {0}
    done = events[-1]
    assert isinstance(done, Done)
    response = done.response
    assert response.message == AssistantMessage(
        "I'll read the file.",
        (ToolCall("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "read", {"path": "src/a.py", "limit": 50}),),
    )
    assert response.stop_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (412, 71)


def test_invalid_tool_input_json_is_kept_raw(wire: WireServer, provider: AnthropicProvider) -> None:
    wire.queue(anthropic_sse(tool_use_events(['{"path": ', '"a.py", "old_text": '])))
    (call,) = complete(provider, HELLO).message.tool_calls
    assert call.arguments == {"_raw": '{"path": "a.py", "old_text": '}


def test_tool_without_input_deltas_uses_the_start_block_input(
    wire: WireServer, provider: AnthropicProvider
) -> None:
    wire.queue(anthropic_sse(tool_use_events([])))
    (call,) = complete(provider, HELLO).message.tool_calls
    assert call == ToolCall("toolu_1", "edit", {})


def test_request_wire_format(wire: WireServer, provider: AnthropicProvider) -> None:
    wire.queue(recording("anthropic_text.sse"))
    request = Request(
        system="You are Veil.",
        messages=(
            UserMessage("fix a.py"),
            AssistantMessage(
                "Reading both.",
                (
                    ToolCall("toolu_1", "read", {"path": "a.py"}),
                    ToolCall("toolu_2", "read", {"path": "b.py"}),
                ),
            ),
            ToolResultMessage("toolu_1", "read", "x = 1"),
            ToolResultMessage("toolu_2", "read", "no such file", is_error=True),
            SystemMessage("Budget: 40% used."),
            AssistantMessage(""),
            UserMessage("go on"),
        ),
        tools=(READ,),
    )
    complete(provider, request)
    (seen,) = wire.seen
    assert seen.path == "/v1/messages"
    # Older SDKs send x-api-key, newer ones a bearer token: either carries our key.
    auth = {seen.headers.get("x-api-key"), seen.headers.get("authorization")}
    assert auth & {"sk-ant-test", "Bearer sk-ant-test"}
    assert "anthropic-version" in seen.headers
    body = seen.body
    assert body["model"] == MODEL and body["stream"] is True
    # The system prompt and the conversation's stable prefix carry cache breakpoints.
    assert body["system"] == [
        {"type": "text", "text": "You are Veil.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["max_tokens"] == 8_192
    assert body["tools"] == [
        {"name": "read", "description": "Read a file.", "input_schema": READ.parameters}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "fix a.py"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "x = 1",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "no such file",
                    "is_error": True,
                },
                {"type": "text", "text": "System note: Budget: 40% used."},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "(no content)"}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}],
        },
    ]


def test_json_schema_is_asked_for_in_the_system_prompt(
    wire: WireServer, provider: AnthropicProvider
) -> None:
    wire.queue(recording("anthropic_text.sse"))
    list(
        provider.stream(
            Request("", (UserMessage("x"),), max_tokens=100), json_schema={"type": "object"}
        )
    )
    body = wire.seen[0].body
    system = body["system"][0]["text"]
    assert system.startswith("Reply with a single JSON object")
    assert '{"type": "object"}' in system and body["max_tokens"] == 100


def test_overloaded_then_success_is_retried(
    wire: WireServer, provider: AnthropicProvider, sleeps: Sleeps
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    wire.queue(
        json_reply(529, overloaded), json_reply(500, overloaded), recording("anthropic_text.sse")
    )
    assert complete(provider, HELLO).message.content == "Hello! How can I help?"
    assert len(wire.seen) == 3 and sleeps.waits == [0.5, 1.0]


def test_error_event_before_any_content_is_retried(
    wire: WireServer, provider: AnthropicProvider, sleeps: Sleeps
) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    wire.queue(anthropic_sse([start(), error]), recording("anthropic_text.sse"))
    assert complete(provider, HELLO).message.content == "Hello! How can I help?"
    assert sleeps.waits == [0.5]


def test_error_event_after_content_is_raised_not_replayed(
    wire: WireServer, provider: AnthropicProvider, sleeps: Sleeps
) -> None:
    text = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "Hi"},
    }
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    wire.queue(anthropic_sse([start(), text, delta, error]))
    with pytest.raises(ProviderError, match="Overloaded") as info:
        list(provider.stream(HELLO))
    assert info.value.retryable and len(wire.seen) == 1 and sleeps.waits == []


def test_429_retries_are_bounded(
    wire: WireServer, provider: AnthropicProvider, sleeps: Sleeps
) -> None:
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
    wire.queue(json_reply(429, limited))
    with pytest.raises(ProviderError, match=r"HTTP 429.*Rate limited") as info:
        complete(provider, HELLO)
    assert info.value.retryable and len(wire.seen) == 4
    assert sleeps.waits == [0.5, 1.0, 2.0]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (
            400,
            {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            },
        ),
        (
            400,
            {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: "
                "198000 + 8192 > 200000",
            },
        ),
        (
            413,
            {
                "type": "request_too_large",
                "message": "Request exceeds the maximum allowed number of bytes.",
            },
        ),
    ],
)
def test_context_overflow_is_recognised(
    wire: WireServer,
    provider: AnthropicProvider,
    sleeps: Sleeps,
    status: int,
    error: dict[str, str],
) -> None:
    wire.queue(json_reply(status, {"type": "error", "error": error}))
    with pytest.raises(ContextOverflow):
        complete(provider, HELLO)
    assert len(wire.seen) == 1 and sleeps.waits == []


def test_bad_request_is_not_retried(wire: WireServer, provider: AnthropicProvider) -> None:
    bad = {"type": "error", "error": {"type": "invalid_request_error", "message": "tools.0: bad"}}
    wire.queue(json_reply(400, bad))
    with pytest.raises(ProviderError, match=r"HTTP 400: tools\.0: bad") as info:
        complete(provider, HELLO)
    assert not info.value.retryable and not isinstance(info.value, ContextOverflow)


def test_no_key_at_all_says_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ModelNotConfigured, match="needs ANTHROPIC_API_KEY"):
        AnthropicProvider(MODEL)
