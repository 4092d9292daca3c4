"""ScriptedProvider: replies in order, deterministic ids, a clear end, requests recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veil.llm.messages import (
    AssistantMessage,
    Done,
    ProviderError,
    Request,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UserMessage,
)
from veil.llm.provider import Provider, complete
from veil.llm.scripted import ScriptedProvider, ScriptError, ScriptExhausted

SCRIPT = {
    "turns": [
        {
            "content": "Let me look at the file first.",
            "tool_calls": [
                {"name": "read", "arguments": {"path": "src/a.py"}},
                {"name": "bash", "arguments": {"command": "ls"}},
            ],
        },
        {"content": "Done."},
    ]
}


def ask(text: str) -> Request:
    return Request("system", (UserMessage(text),))


def test_replies_in_order_whatever_the_request() -> None:
    provider = ScriptedProvider(SCRIPT)
    assert isinstance(provider, Provider)
    first = complete(provider, ask("anything"))
    assert first.message == AssistantMessage(
        "Let me look at the file first.",
        (
            ToolCall("call_1_1", "read", {"path": "src/a.py"}),
            ToolCall("call_1_2", "bash", {"command": "ls"}),
        ),
    )
    assert first.stop_reason == "tool_calls"
    second = complete(provider, ask("something else entirely"))
    assert second.message == AssistantMessage("Done.") and second.stop_reason == "stop"


def test_streams_text_in_chunks_then_tool_calls_then_done() -> None:
    events = list(ScriptedProvider(SCRIPT).stream(ask("go")))
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert 1 < len(texts) <= 3 and "".join(texts) == "Let me look at the file first."
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert calls[0] == ToolCallDelta(0, "call_1_1", "read", '{"path": "src/a.py"}')
    assert isinstance(events[-1], Done)


def test_exhaustion_is_a_clear_provider_error() -> None:
    provider = ScriptedProvider(SCRIPT)
    complete(provider, ask("1"))
    complete(provider, ask("2"))
    with pytest.raises(ScriptExhausted, match="the script has 2 turns; the run asked for turn 3"):
        complete(provider, ask("3"))
    assert issubclass(ScriptExhausted, ProviderError)


def test_records_every_request() -> None:
    provider = ScriptedProvider(SCRIPT)
    requests = [ask("one"), ask("two")]
    for request in requests:
        complete(provider, request)
    assert provider.requests == requests and provider.turns_used == 2


def test_keeps_only_the_latest_requests() -> None:
    """Behind a long-running server the record is bounded (the soak found it growing)."""
    provider = ScriptedProvider({"turns": [{"content": str(i)} for i in range(5)]}, keep_requests=2)
    requests = [ask(str(i)) for i in range(5)]
    for request in requests:
        complete(provider, request)
    assert provider.requests == requests[-2:] and provider.turns_used == 5


def test_loads_a_file_and_usage_is_given_or_estimated(tmp_path: Path) -> None:
    path = tmp_path / "demo.json"
    script = {"turns": [{"content": "hi", "usage": {"input_tokens": 7, "output_tokens": 3}}, {}]}
    path.write_text(json.dumps(script))
    provider = ScriptedProvider(path)
    assert provider.model == "scripted:demo.json"
    given = complete(provider, ask("x"))
    assert (given.usage.input_tokens, given.usage.output_tokens) == (7, 3)
    estimated = complete(provider, ask("x" * 400))
    assert estimated.message == AssistantMessage("")
    assert estimated.usage.input_tokens >= 100 and estimated.usage.cost_usd == 0.0


def test_context_window_is_settable() -> None:
    provider = ScriptedProvider(SCRIPT)
    assert provider.context_window == 128_000
    provider.context_window = 4_000
    assert provider.context_window == 4_000
    assert ScriptedProvider(SCRIPT, context_window=2_000).context_window == 2_000


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([], "a script is a JSON object"),
        ({"turns": ["hello"]}, "turn 1: expected an object"),
        ({"turns": [{"content": 3}]}, "turn 1: content must be a string"),
        ({"turns": [{}, {"tool_calls": [{"arguments": {}}]}]}, "turn 2, tool call 1: needs"),
        ({"turns": [{"tool_calls": [{"name": "read", "arguments": "a.py"}]}]}, "must be an object"),
    ],
)
def test_malformed_scripts_are_rejected_with_the_position(script: object, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        ScriptedProvider(script)  # type: ignore[arg-type]


def test_missing_or_invalid_file(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="not found"):
        ScriptedProvider(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ScriptError, match="not valid JSON"):
        ScriptedProvider(bad)
