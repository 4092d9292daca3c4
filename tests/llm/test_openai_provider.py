"""OpenAIProvider: the real ``openai`` SDK against a chat-completions server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from tests.llm.conftest import Reply, Sleeps, WireServer, json_reply, openai_sse, recording
from veil.llm.failures import RetryPolicy
from veil.llm.messages import (
    AssistantMessage,
    Done,
    ProviderError,
    Request,
    StreamEvent,
    ToolCall,
    ToolCallDelta,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from veil.llm.openai_provider import OpenAIProvider
from veil.llm.provider import complete
from veil.testing import CannedCall, ProviderContract

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


def usage_chunk(usage: Usage) -> dict[str, Any]:
    """The final chunk ``stream_options.include_usage`` asks for: no choices, the counts."""
    tokens = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    return {**chunk({}), "choices": [], "usage": tokens}


@dataclass(frozen=True)
class OpenAIWire:
    """Canned replies in the chat-completions wire format (for :class:`ProviderContract`)."""

    def text_stream(self, parts: Sequence[str], usage: Usage) -> Reply:
        deltas = [chunk({"content": part}) for part in parts]
        role = chunk({"role": "assistant", "content": ""})
        return openai_sse([role, *deltas, chunk({}, "stop"), usage_chunk(usage)])

    def tool_stream(self, text: str, calls: Sequence[CannedCall], usage: Usage) -> Reply:
        chunks = [chunk({"role": "assistant", "content": text})]
        for i, call in enumerate(calls):
            named = {"name": call.name, "arguments": ""}
            chunks.append(chunk({"tool_calls": [{"index": i, "id": call.id, "function": named}]}))
            chunks += [
                chunk({"tool_calls": [{"index": i, "function": {"arguments": fragment}}]})
                for fragment in call.fragments
            ]
        return openai_sse([*chunks, chunk({}, "tool_calls"), usage_chunk(usage)])

    def error(
        self, status: int, kind: str, message: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> Reply:
        return json_reply(status, {"error": {"message": message, "type": kind}}, headers)

    def overflows(self) -> Mapping[str, Reply]:
        return {
            "openai": json_reply(
                400,
                {
                    "error": {
                        "message": "This model's maximum context length is 128000 tokens. "
                        "However, your messages resulted in 130512 tokens. Please reduce it.",
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded",
                    }
                },
            ),
            "vllm": json_reply(
                400,
                {
                    "object": "error",
                    "message": "This model's maximum context length is 32768 tokens. However, "
                    "you requested 40000 tokens (39000 in the messages, 1000 in the completion).",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                },
            ),
            "llama.cpp": json_reply(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "the request exceeds the available context size, try "
                        "increasing it",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": 5000,
                        "n_ctx": 4096,
                    }
                },
            ),
            "error event in a 200 stream": openai_sse(
                [{"error": {"message": "maximum context length is 4096 tokens"}}]
            ),
        }


class TestOpenAIProvider(ProviderContract):
    wire_format = OpenAIWire()
    model = "gpt-4.1-mini"
    context_window = 1_047_576
    key_env = ("OPENAI_API_KEY",)

    def make_provider(self, url: str, retry: RetryPolicy) -> OpenAIProvider:
        return OpenAIProvider(self.model, base_url=f"{url}/v1", api_key="sk-test", retry=retry)

    def make_provider_without_key(self) -> OpenAIProvider:
        return OpenAIProvider(self.model)  # OpenAI itself: the one endpoint that needs a key


def test_recorded_streams_parse_with_the_served_model_and_cost(
    wire: WireServer, provider: OpenAIProvider
) -> None:
    wire.queue(recording("openai_text.sse"), recording("openai_tool_calls.sse"))
    text = complete(provider, HELLO)
    assert text.message == AssistantMessage("Hello! How can I help?")
    assert text.model == "gpt-4.1-mini-2025-04-14"
    assert text.usage.cost_usd == pytest.approx(21 * 0.40e-6 + 9 * 1.60e-6)
    events = events_of(provider, Request("sys", (UserMessage("look"),), (READ,)))
    assert [e.index for e in events if isinstance(e, ToolCallDelta)] == [0] * 7 + [1] * 4
    done = events[-1]
    assert isinstance(done, Done)
    assert done.response.message.tool_calls == (
        ToolCall("call_Qm3fX8aLz1", "read", {"path": "src/a.py"}),
        ToolCall("call_Rb7kP2cWn4", "bash", {"command": "ls -la"}),
    )


def test_missing_ids_and_usage_get_defaults(wire: WireServer, provider: OpenAIProvider) -> None:
    wire.queue(
        openai_sse(
            [
                chunk({"tool_calls": [{"index": 0, "function": {"name": "ls", "arguments": ""}}]}),
                chunk({}, "tool_calls"),
            ]
        )
    )
    response = complete(provider, HELLO)
    assert response.message.tool_calls == (ToolCall("call_0", "ls", {}),)
    assert response.usage.input_tokens == 0  # this server sent no usage chunk
    assert response.usage.cost_usd == 0.0


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
