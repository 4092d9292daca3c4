"""AnthropicProvider: the real ``anthropic`` SDK against a Messages server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from tests.llm.conftest import Reply, Sleeps, WireServer, anthropic_sse, json_reply, recording
from veil.llm.anthropic_provider import AnthropicProvider
from veil.llm.failures import RetryPolicy
from veil.llm.messages import (
    AssistantMessage,
    ProviderError,
    Request,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from veil.llm.provider import complete
from veil.testing import CannedCall, ProviderContract

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


def block(
    index: int, content_block: dict[str, Any], deltas: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One content block: its start, its deltas and its stop."""
    return [
        {"type": "content_block_start", "index": index, "content_block": content_block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def end(stop_reason: str, output_tokens: int) -> list[dict[str, Any]]:
    delta = {"type": "message_delta", "stop_reason": stop_reason, "stop_sequence": None}
    usage = {"output_tokens": output_tokens}
    return [{"type": "message_delta", "delta": delta, "usage": usage}, {"type": "message_stop"}]


TEXT_BLOCK = {"type": "text", "text": ""}


@dataclass(frozen=True)
class AnthropicWire:
    """Canned replies in the Messages wire format (for :class:`ProviderContract`)."""

    def text_stream(self, parts: Sequence[str], usage: Usage) -> Reply:
        text = block(0, TEXT_BLOCK, [{"type": "text_delta", "text": part} for part in parts])
        return anthropic_sse(
            [start(usage.input_tokens), *text, *end("end_turn", usage.output_tokens)]
        )

    def tool_stream(self, text: str, calls: Sequence[CannedCall], usage: Usage) -> Reply:
        events = [start(usage.input_tokens)]
        if text:
            events += block(0, TEXT_BLOCK, [{"type": "text_delta", "text": text}])
        for index, call in enumerate(calls, start=1 if text else 0):
            tool = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": f} for f in call.fragments]
            events += block(index, tool, deltas)
        return anthropic_sse([*events, *end("tool_use", usage.output_tokens)])

    def error(
        self, status: int, kind: str, message: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> Reply:
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return json_reply(status, body, headers)

    def overflows(self) -> Mapping[str, Reply]:
        return {
            "prompt is too long": self.error(
                400,
                "invalid_request_error",
                "prompt is too long: 210000 tokens > 200000 maximum",
            ),
            "input and max_tokens exceed the limit": self.error(
                400,
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000",
            ),
            "request too large": self.error(
                413, "request_too_large", "Request exceeds the maximum allowed number of bytes."
            ),
        }


class TestAnthropicProvider(ProviderContract):
    wire_format = AnthropicWire()
    model = MODEL
    context_window = 1_000_000
    key_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")

    def make_provider(self, url: str, retry: RetryPolicy) -> AnthropicProvider:
        return AnthropicProvider(self.model, base_url=url, api_key="sk-ant-test", retry=retry)

    def make_provider_without_key(self) -> AnthropicProvider:
        return AnthropicProvider(self.model)


def test_recorded_streams_parse_with_cache_aware_usage_and_cost(
    wire: WireServer, provider: AnthropicProvider
) -> None:
    wire.queue(recording("anthropic_text.sse"), recording("anthropic_tool_use.sse"))
    text = complete(provider, HELLO)
    assert text.message == AssistantMessage("Hello! How can I help?")
    assert text.model == "claude-sonnet-4-5-20250929"
    # 25 fresh input tokens and 100 read from the cache, priced apart, counted together.
    assert (text.usage.input_tokens, text.usage.cached_input_tokens) == (125, 100)
    assert text.usage.cost_usd == pytest.approx((25 * 3 + 100 * 0.3 + 12 * 15) / 1e6)
    tool = complete(provider, Request("sys", (UserMessage("look"),), (READ,)))
    assert tool.message == AssistantMessage(
        "I'll read the file.",
        (ToolCall("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "read", {"path": "src/a.py", "limit": 50}),),
    )
    assert (tool.usage.input_tokens, tool.usage.output_tokens) == (412, 71)


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
    assert body["max_tokens"] == 64_000  # the table's max output for the model
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
