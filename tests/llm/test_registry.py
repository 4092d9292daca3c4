"""provider_from_spec for every spec, the how-to messages, and the extraction ``complete``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm.conftest import WireServer, recording
from veil.llm.anthropic_provider import AnthropicProvider
from veil.llm.configure import HOW_TO_CONFIGURE, ModelNotConfigured
from veil.llm.messages import (
    AssistantMessage,
    Done,
    Request,
    Response,
    StreamEvent,
    TextDelta,
    UserMessage,
)
from veil.llm.openai_provider import OpenAIProvider
from veil.llm.provider import Provider
from veil.llm.registry import (
    chat_request,
    extraction_complete_from_provider,
    extraction_complete_from_spec,
    provider_from_spec,
)
from veil.llm.scripted import ScriptedProvider


def build(spec: str | None, env: dict[str, str]) -> Provider:
    provider = provider_from_spec(spec, env=env)
    if isinstance(provider, OpenAIProvider | AnthropicProvider):
        provider.close()
    return provider


def test_openai() -> None:
    provider = build("openai:gpt-4.1-mini", {"OPENAI_API_KEY": "sk"})
    assert isinstance(provider, OpenAIProvider)
    assert provider.base_url == "https://api.openai.com/v1" and provider.model == "gpt-4.1-mini"
    custom = build("openai:gpt-4o", {"OPENAI_API_KEY": "sk", "OPENAI_BASE_URL": "http://h/v1"})
    assert isinstance(custom, OpenAIProvider) and custom.base_url == "http://h/v1"


def test_anthropic() -> None:
    provider = build("anthropic:claude-sonnet-4-6", {"ANTHROPIC_API_KEY": "sk-ant"})
    assert isinstance(provider, AnthropicProvider) and provider.context_window == 1_000_000


def test_ollama_keeps_the_colon_in_the_model_name() -> None:
    default = build("ollama:qwen2.5:7b", {})
    assert isinstance(default, OpenAIProvider)
    assert default.model == "qwen2.5:7b" and default.base_url == "http://127.0.0.1:11434/v1"
    assert default.context_window == 32_768
    host = build("ollama:llama3.1:8b", {"OLLAMA_HOST": "10.0.0.5:11434"})
    assert isinstance(host, OpenAIProvider) and host.base_url == "http://10.0.0.5:11434/v1"
    assert host.context_window == 131_072


def test_openai_compatible_and_openrouter() -> None:
    vllm = build("openai-compatible:Qwen/Qwen2.5-7B", {"VEIL_BASE_URL": "http://127.0.0.1:8000/v1"})
    assert isinstance(vllm, OpenAIProvider) and vllm.base_url == "http://127.0.0.1:8000/v1"
    router = build("openrouter:openai/gpt-4o", {"OPENROUTER_API_KEY": "or"})
    assert isinstance(router, OpenAIProvider)
    assert router.base_url == "https://openrouter.ai/api/v1" and router.context_window == 128_000


def test_scripted_and_the_window_override(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"content": "ok"}]}))
    provider = provider_from_spec(f"scripted:{script}", env={}, context_window=3_000)
    assert isinstance(provider, ScriptedProvider) and provider.context_window == 3_000


def test_veil_model_is_the_default() -> None:
    provider = build(None, {"VEIL_MODEL": "ollama:qwen2.5:7b"})
    assert provider.model == "qwen2.5:7b"


@pytest.mark.parametrize(
    ("spec", "env", "needs"),
    [
        (None, {}, "no model configured"),
        ("gpt-4o", {}, "is not provider:model"),
        ("openai:", {}, "is not provider:model"),
        ("openai:gpt-4.1-mini", {}, "needs OPENAI_API_KEY"),
        ("anthropic:claude-sonnet-4-6", {}, "needs ANTHROPIC_API_KEY"),
        ("openai-compatible:m", {}, "needs VEIL_BASE_URL"),
        ("openrouter:openai/gpt-4o", {}, "needs OPENROUTER_API_KEY"),
        ("gemini:pro", {}, "unknown provider 'gemini'"),
    ],
)
def test_missing_configuration_says_how_to_configure(
    spec: str | None, env: dict[str, str], needs: str
) -> None:
    with pytest.raises(ModelNotConfigured, match=needs) as info:
        provider_from_spec(spec, env=env)
    assert HOW_TO_CONFIGURE in str(info.value)


def test_the_how_to_names_every_provider_and_variable() -> None:
    for word in ("VEIL_MODEL", "--model", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_HOST"):
        assert word in HOW_TO_CONFIGURE
    for word in ("OPENROUTER_API_KEY", "VEIL_BASE_URL", "openai-compatible:", "scripted:"):
        assert word in HOW_TO_CONFIGURE


# -- the memory layer's complete ------------------------------------------------------------


def test_chat_request_joins_system_messages_and_text_parts() -> None:
    request = chat_request(
        [
            {"role": "system", "content": "Extract facts."},
            {"role": "system", "content": "Be exact."},
            {"role": "user", "content": [{"type": "text", "text": "I use "}, {"text": "vim"}]},
            {"role": "assistant", "content": None},
        ]
    )
    assert request.system == "Extract facts.\n\nBe exact."
    assert [m.content for m in request.messages] == ["I use vim", ""]
    with pytest.raises(ValueError, match="role must be"):
        chat_request([{"role": "tool", "content": "x"}])


def test_extraction_over_openai_sends_the_schema_as_response_format(wire: WireServer) -> None:
    wire.queue(recording("openai_text.sse"))
    with OpenAIProvider("m", base_url=f"{wire.url}/v1") as provider:
        complete = extraction_complete_from_provider(provider)
        out = complete(
            [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
            json_schema={"type": "object"},
        )
    assert out == "Hello! How can I help?"
    body = wire.seen[0].body
    assert body["messages"] == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
    ]
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}


def test_extraction_over_anthropic_asks_in_the_system_prompt(wire: WireServer) -> None:
    wire.queue(recording("anthropic_text.sse"))
    with AnthropicProvider("claude-sonnet-4-6", base_url=wire.url, api_key="k") as provider:
        out = extraction_complete_from_provider(provider)(
            [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
            json_schema={"type": "object"},
        )
    assert out == "Hello! How can I help?"
    system = wire.seen[0].body["system"][0]["text"]
    assert system.startswith("S\n\nReply with a single JSON object")


class PlainProvider:
    """Some other Provider: only the protocol, no ``json_schema`` keyword."""

    model = "plain"
    context_window = 1000

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        self.requests.append(request)
        yield TextDelta("{}")
        yield Done(Response(message=AssistantMessage("{}")))


def test_extraction_over_any_provider_puts_the_schema_in_the_system_prompt() -> None:
    provider = PlainProvider()
    out = extraction_complete_from_provider(provider)(
        [{"role": "user", "content": "U"}], json_schema={"type": "object"}
    )
    assert out == "{}"
    (request,) = provider.requests
    assert request.messages == (UserMessage("U"),)
    assert "JSON schema" in request.system


def test_extraction_from_a_scripted_spec(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"content": '{"facts": []}'}]}))
    complete = extraction_complete_from_spec(f"scripted:{script}", env={})
    assert complete([{"role": "user", "content": "hi"}], json_schema={}) == '{"facts": []}'
