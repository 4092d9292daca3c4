"""Live checks against the real APIs; they run only when the key is set.

``OPENAI_API_KEY`` (model: ``VEIL_TEST_OPENAI_MODEL``, default gpt-4.1-mini) and
``ANTHROPIC_API_KEY`` (model: ``VEIL_TEST_ANTHROPIC_MODEL``, default claude-haiku-4-5). Each asks
for one tool call, sends its result back and expects a text answer — the agent loop's round trip.
"""

from __future__ import annotations

import os

import pytest

from veil.llm.anthropic_provider import AnthropicProvider
from veil.llm.messages import Request, ToolResultMessage, ToolSpec, UserMessage
from veil.llm.openai_provider import OpenAIProvider
from veil.llm.provider import Provider, complete

pytestmark = pytest.mark.live

ADD = ToolSpec(
    "add",
    "Add two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def round_trip(provider: Provider) -> None:
    question = UserMessage("Use the add tool to add 2 and 3, then tell me the result.")
    first = complete(provider, Request("You are precise.", (question,), (ADD,), max_tokens=200))
    assert first.message.tool_calls, first
    call = first.message.tool_calls[0]
    assert call.name == "add" and call.arguments == {"a": 2, "b": 3}
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    result = ToolResultMessage(call.id, "add", "5")
    history = (question, first.message, result)
    second = complete(provider, Request("You are precise.", history, (ADD,), max_tokens=200))
    assert "5" in second.message.content


@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="set OPENAI_API_KEY to run")
def test_openai_live() -> None:
    model = os.environ.get("VEIL_TEST_OPENAI_MODEL", "gpt-4.1-mini")
    with OpenAIProvider(model) as provider:
        round_trip(provider)


@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="set ANTHROPIC_API_KEY to run")
def test_anthropic_live() -> None:
    model = os.environ.get("VEIL_TEST_ANTHROPIC_MODEL", "claude-haiku-4-5")
    with AnthropicProvider(model) as provider:
        round_trip(provider)
