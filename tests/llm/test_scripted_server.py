"""The scripted model server (``veil.llm.scripted_server``) driven by the real ``anthropic`` and
``openai`` SDKs over HTTP on 127.0.0.1: streamed and JSON replies, tool-call round trips, side
calls, usage and cache accounting, pairing and overflow refusals, compressed bodies, the CLI."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anthropic
import openai
import pytest

from veil.dialects.overflow import is_overflow_text
from veil.llm.scripted import ScriptError
from veil.llm.scripted_requests import chars_over_four
from veil.llm.scripted_server import ModelRequest, ScriptedServer, ToolUse, Turn
from veil.llm.scripted_wire import sse_events

READ_TOOL_ANTHROPIC: Any = {
    "name": "read",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
READ_TOOL_RESPONSES: Any = {
    "type": "function",
    "name": "read",
    "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
READ_TOOL_CHAT: Any = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
SCRIPT: dict[str, Any] = {
    "turns": [
        {
            "content": "Let me look.",
            "tool_calls": [{"name": "read", "arguments": {"path": "a.py"}}],
        },
        {"content": "It defines add."},
    ]
}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCRIPT) as running:
        yield running


_CLIENTS: list[anthropic.Anthropic | openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """SDK clients keep pooled connections open: close every one a test made."""
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def claude_client(url: str) -> anthropic.Anthropic:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)
    _CLIENTS.append(client)
    return client


def openai_client(url: str) -> openai.OpenAI:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
    _CLIENTS.append(client)
    return client


def post(
    url: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """POST raw bytes; ``(status, JSON body)`` whatever the status."""
    request = urllib.request.Request(url, data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


# ---- Anthropic Messages --------------------------------------------------------------------


def test_anthropic_stream_and_json_round_trip_a_tool_call(server: ScriptedServer) -> None:
    client = claude_client(server.url)
    history: list[Any] = [{"role": "user", "content": "What is in a.py?"}]
    with client.messages.stream(
        model="claude-test", max_tokens=100, messages=history, tools=[READ_TOOL_ANTHROPIC]
    ) as stream:
        kinds = [event.type for event in stream]
        first = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert {"content_block_start", "content_block_delta", "content_block_stop"} <= set(kinds)
    assert first.stop_reason == "tool_use" and first.model == "claude-test"
    text, call = first.content
    assert text.type == "text" and text.text == "Let me look."
    assert call.type == "tool_use" and call.name == "read" and call.input == {"path": "a.py"}
    assert call.id == "toolu_scripted_1_1"
    history += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "def add"}],
        },
    ]
    second = client.messages.create(
        model="claude-test", max_tokens=100, messages=history, tools=[READ_TOOL_ANTHROPIC]
    )
    assert [b.type for b in second.content] == ["text"]
    assert second.content[0].type == "text" and second.content[0].text == "It defines add."
    assert second.stop_reason == "end_turn"
    recorded = server.model_requests
    assert [r.turn for r in recorded] == [1, 2] and [r.kind for r in recorded] == ["script"] * 2
    results = recorded[1].tool_results
    assert [(r.call_id, r.text) for r in results] == [("toolu_scripted_1_1", "def add")]
    assert "sk-ant-test" in (
        recorded[0].headers.get("x-api-key") or recorded[0].headers["authorization"]
    )
    assert recorded[0].headers["anthropic-version"]  # lower-cased names
    assert recorded[0].body["messages"] == history[:1]
    usage = recorded[1].usage
    assert usage is not None and second.usage.input_tokens == usage.prompt_tokens > 0
    assert second.usage.output_tokens == usage.output_tokens == chars_over_four("It defines add.")


def test_anthropic_usage_is_reported_at_start_and_end_of_a_stream(server: ScriptedServer) -> None:
    with claude_client(server.url).messages.stream(
        model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "x" * 400}]
    ) as stream:
        events = list(stream)
    start = next(e for e in events if e.type == "message_start")
    delta = next(e for e in events if e.type == "message_delta")
    recorded = server.requests[0].usage
    assert recorded is not None
    assert start.message.usage.input_tokens == delta.usage.input_tokens == recorded.prompt_tokens
    assert delta.usage.output_tokens == recorded.output_tokens


def test_count_tokens_counts_without_consuming_the_script(server: ScriptedServer) -> None:
    client = claude_client(server.url)
    messages: Any = [{"role": "user", "content": "hello there"}]
    counted = client.messages.count_tokens(
        model="claude-test", messages=messages, tools=[READ_TOOL_ANTHROPIC]
    )
    text = json.dumps(READ_TOOL_ANTHROPIC, separators=(",", ":"))
    text += json.dumps(messages[0], separators=(",", ":"))
    assert counted.input_tokens == chars_over_four(text)
    assert server.turns_used == 0 and server.requests[0].kind == "count_tokens"


# ---- OpenAI Responses --------------------------------------------------------------------


def test_responses_stream_has_the_documented_events_and_round_trips(
    server: ScriptedServer,
) -> None:
    client = openai_client(server.url)
    with client.responses.stream(
        model="gpt-test", input="What is in a.py?", tools=[READ_TOOL_RESPONSES]
    ) as stream:
        events = list(stream)
        first = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    for expected in (
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ):
        assert expected in kinds, expected
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert first.output_text == "Let me look."
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments), call.call_id) == (
        "read",
        {"path": "a.py"},
        "call_scripted_1_1",
    )
    assert first.usage is not None and first.usage.input_tokens_details.cached_tokens == 0
    second = client.responses.create(
        model="gpt-test",
        input=[
            {"role": "user", "content": "What is in a.py?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": "read",
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "def add"},
        ],
        tools=[READ_TOOL_RESPONSES],
    )
    assert second.output_text == "It defines add." and second.status == "completed"
    (result,) = server.model_requests[1].tool_results
    assert (result.call_id, result.text) == ("call_scripted_1_1", "def add")


def test_responses_custom_and_namespaced_tools_are_called_as_the_request_offers_them() -> None:
    tools: Any = [
        {"type": "custom", "name": "apply_patch", "description": "Patch files."},
        {
            "type": "namespace",
            "name": "mcp__veil",
            "description": "Veil",
            "tools": [{"type": "function", "name": "recall", "parameters": {"type": "object"}}],
        },
    ]
    patch = "*** Begin Patch\n*** End Patch\n"
    script = [
        Turn("", (ToolUse("apply_patch", {"input": patch}), ToolUse("recall", {"query": "x"}))),
        Turn("", (ToolUse("mcp__veil.recall", {"query": "y"}),)),
    ]
    with ScriptedServer(script) as running:
        client = openai_client(running.url)
        with client.responses.stream(model="gpt-test", input="go", tools=tools) as stream:
            kinds = [e.type for e in stream]
            first = stream.get_final_response()
        second = client.responses.create(model="gpt-test", input="go", tools=tools)
        offered = running.model_requests[0].tool_names
    custom, recall = first.output
    assert custom.type == "custom_tool_call" and custom.input == patch
    assert "response.custom_tool_call_input.delta" in kinds
    assert recall.type == "function_call" and recall.namespace == "mcp__veil"
    (explicit,) = second.output
    assert explicit.type == "function_call"
    assert (explicit.namespace, explicit.name) == ("mcp__veil", "recall")
    assert offered == ["apply_patch", "mcp__veil", "mcp__veil.recall"]


# ---- OpenAI Chat Completions ---------------------------------------------------------------


def test_chat_stream_reports_usage_last_only_when_asked(server: ScriptedServer) -> None:
    client = openai_client(server.url)
    chunks = list(
        client.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": "What is in a.py?"}],
            tools=[READ_TOOL_CHAT],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == cast(Any, server.requests[0].usage).prompt_tokens
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Let me look."
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].id == "call_scripted_1_1" and calls[0].function is not None
    assert calls[0].function.name == "read"
    arguments = "".join(tc.function.arguments or "" for tc in calls if tc.function)
    assert json.loads(arguments) == {"path": "a.py"}
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "tool_calls"
    plain = list(
        client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "again"}], stream=True
        )
    )
    assert all(c.usage is None for c in plain)


def test_chat_json_reply_round_trips_a_tool_call(server: ScriptedServer) -> None:
    client = openai_client(server.url)
    first = client.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "user", "content": "What is in a.py?"}],
        tools=[READ_TOOL_CHAT],
    )
    message = first.choices[0].message
    assert message.content == "Let me look." and first.choices[0].finish_reason == "tool_calls"
    (call,) = message.tool_calls or []
    assert call.type == "function" and call.function.name == "read"
    second = client.chat.completions.create(
        model="gpt-test",
        messages=[
            {"role": "user", "content": "What is in a.py?"},
            cast(Any, message.model_dump(exclude_none=True)),
            {"role": "tool", "tool_call_id": call.id, "content": "def add"},
        ],
        tools=[READ_TOOL_CHAT],
    )
    assert second.choices[0].message.content == "It defines add."
    assert second.usage is not None and second.usage.completion_tokens == 4


# ---- the script ------------------------------------------------------------------------------


def test_side_calls_are_answered_without_consuming_the_script() -> None:
    with ScriptedServer(SCRIPT, side_reply="A short title") as running:
        client = claude_client(running.url)
        side = client.messages.create(
            model="claude-haiku", max_tokens=10, messages=[{"role": "user", "content": "title?"}]
        )
        main = client.messages.create(
            model="claude-test",
            max_tokens=10,
            messages=[{"role": "user", "content": "go"}],
            tools=[READ_TOOL_ANTHROPIC],
        )
        assert side.content[0].type == "text" and side.content[0].text == "A short title"
        assert main.stop_reason == "tool_use"
        assert [r.kind for r in running.requests] == ["side", "script"]
        assert running.side_calls[0].turn is None and running.turns_used == 1


def test_the_side_call_rule_is_configurable() -> None:
    def is_side(request: ModelRequest) -> bool:
        return request.body.get("max_tokens") == 1

    with ScriptedServer(SCRIPT, side_call=is_side) as running:
        client = claude_client(running.url)
        client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "q"}])
        no_tools = client.messages.create(
            model="m", max_tokens=9, messages=[{"role": "user", "content": "q"}]
        )
        assert no_tools.content[0].type == "text" and no_tools.content[0].text == "Let me look."
        assert [r.kind for r in running.requests] == ["side", "script"]
    with ScriptedServer(SCRIPT, side_call=None) as running:
        claude_client(running.url).messages.create(
            model="m", max_tokens=9, messages=[{"role": "user", "content": "q"}]
        )
        assert running.requests[0].kind == "script"


def test_an_exhausted_script_answers_done_forever(server: ScriptedServer) -> None:
    client = openai_client(server.url)
    replies = [
        client.responses.create(model="m", input="go", tools=[READ_TOOL_RESPONSES]).output_text
        for _ in range(4)
    ]
    assert replies == ["Let me look.", "It defines add.", "done", "done"]
    assert [r.kind for r in server.requests] == ["script", "script", "exhausted", "exhausted"]


def test_a_turn_callable_sees_the_request_and_reacts() -> None:
    def echo_result(request: ModelRequest) -> dict[str, Any]:
        (result,) = request.tool_results()
        return {"content": f"turn {request.turn} saw {result.text!r}"}

    script = [Turn("", (ToolUse("read", {"path": "a.py"}),)), echo_result]
    with ScriptedServer(script) as running:
        client = openai_client(running.url)
        first = client.responses.create(model="m", input="go", tools=[READ_TOOL_RESPONSES])
        (call,) = [item for item in first.output if item.type == "function_call"]
        second = client.responses.create(
            model="m",
            input=[
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": "read",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": call.call_id, "output": "def add"},
            ],
            tools=[READ_TOOL_RESPONSES],
        )
    assert second.output_text == "turn 2 saw 'def add'"


def test_a_failing_turn_callable_is_a_500_recorded_as_an_error() -> None:
    def broken(request: ModelRequest) -> Turn:
        raise RuntimeError("no such file")

    with ScriptedServer([broken]) as running:
        with pytest.raises(openai.InternalServerError, match="no such file"):
            openai_client(running.url).responses.create(
                model="m", input="go", tools=[READ_TOOL_RESPONSES]
            )
        (recorded,) = running.requests
        assert recorded.kind == "error" and recorded.status == 500 and recorded.turn == 1


def test_a_malformed_script_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="turn 2: unknown field 'tool_call'"):
        ScriptedServer({"turns": [{"content": "a"}, {"tool_call": []}]})
    with pytest.raises(ScriptError, match="not found"):
        ScriptedServer(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="overflow"):
        ScriptedServer(SCRIPT, overflow=cast(Any, "bogus"))


def test_requests_from_many_threads_each_get_their_own_turn() -> None:
    script = [Turn(f"reply {i}") for i in range(1, 9)]
    with ScriptedServer(script, side_call=None) as running:
        client = openai_client(running.url)
        replies: list[str] = []
        lock = threading.Lock()

        def ask() -> None:
            text = client.responses.create(model="m", input="go").output_text
            with lock:
                replies.append(text)

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(replies) == sorted(f"reply {i}" for i in range(1, 9))
        assert sorted(cast(int, r.turn) for r in running.requests) == list(range(1, 9))
        assert [r.index for r in running.requests] == list(range(8))


# ---- usage and cache -----------------------------------------------------------------------


def test_anthropic_cache_fields_come_from_the_prefix_shared_with_the_last_request() -> None:
    system: Any = [{"type": "text", "text": "S" * 4000, "cache_control": {"type": "ephemeral"}}]
    metadata: Any = {"user_id": json.dumps({"session_id": "one"})}
    with ScriptedServer([Turn("a"), Turn("b"), Turn("c")], cache=True, side_call=None) as running:
        client = claude_client(running.url)

        def ask(text: str, meta: Any) -> anthropic.types.Usage:
            turn: Any = {
                "role": "user",
                "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}],
            }
            reply = client.messages.create(
                model="m", max_tokens=9, system=system, messages=[turn], metadata=meta
            )
            return reply.usage

        cold = ask("first question", metadata)
        warm = ask("second question", metadata)
        other = ask("second question", {"user_id": json.dumps({"session_id": "two"})})
    assert cold.cache_read_input_tokens == 0 and (cold.cache_creation_input_tokens or 0) > 1000
    assert (warm.cache_read_input_tokens or 0) >= 1000  # the system prompt
    assert (warm.cache_creation_input_tokens or 0) < 20  # only the new message
    assert other.cache_read_input_tokens == 0  # another conversation
    recorded = running.requests[1].usage
    assert recorded is not None and warm.input_tokens == recorded.uncached_tokens
    assert recorded.prompt_tokens == (
        warm.input_tokens
        + (warm.cache_read_input_tokens or 0)
        + (warm.cache_creation_input_tokens or 0)
    )


def test_openai_cached_tokens_follow_the_prompt_cache_key() -> None:
    instructions = "You are terse. " * 200
    with ScriptedServer([Turn("a"), Turn("b"), Turn("c")], cache=True, side_call=None) as running:
        client = openai_client(running.url)
        usages = [
            client.responses.create(
                model="m", instructions=instructions, input=text, prompt_cache_key=key
            ).usage
            for text, key in (("one", "k1"), ("two", "k1"), ("two", "k2"))
        ]
    cached = [u.input_tokens_details.cached_tokens if u else None for u in usages]
    assert cached[0] == 0 and cached[2] == 0
    assert cached[1] is not None and cached[1] >= chars_over_four(instructions) - 2


def test_a_turn_may_state_its_usage() -> None:
    with ScriptedServer([{"content": "x", "usage": {"input_tokens": 7, "output_tokens": 3}}]) as s:
        usage = (
            openai_client(s.url)
            .chat.completions.create(
                model="m", messages=[{"role": "user", "content": "q"}], tools=[READ_TOOL_CHAT]
            )
            .usage
        )
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (7, 3)


# ---- validation: pairing -----------------------------------------------------------------


def test_anthropic_pairing_refusals_have_the_real_texts() -> None:
    with ScriptedServer(SCRIPT, pairing=True) as running:
        client = claude_client(running.url)
        use: Any = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
        missing: Any = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": "well?"},
        ]
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.create(model="m", max_tokens=9, messages=missing)
        assert cast(Any, refused.value.body)["error"] == {
            "type": "invalid_request_error",
            "message": "messages.1: `tool_use` ids were found without `tool_result` blocks "
            "immediately after: toolu_1. Each `tool_use` block must have a corresponding "
            "`tool_result` block in the next message.",
        }
        orphan: Any = [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9"}]}
        ]
        with pytest.raises(anthropic.BadRequestError) as bad:
            client.messages.create(model="m", max_tokens=9, messages=orphan)
        assert cast(Any, bad.value.body)["error"]["message"] == (
            "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in "
            "the previous message."
        )
        assert [r.kind for r in running.requests] == ["rejected", "rejected"]
        assert running.turns_used == 0


def test_openai_pairing_refusals_have_the_real_texts() -> None:
    with ScriptedServer(SCRIPT, pairing=True) as running:
        client = openai_client(running.url)
        call: Any = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read", "arguments": "{}"},
        }
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="m",
                messages=[
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "tool_calls": [call]},
                    {"role": "user", "content": "well?"},
                ],
            )
        error = cast(Any, refused.value.body)
        assert error["message"] == (
            "An assistant message with 'tool_calls' must be followed by tool messages responding "
            "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
            "call_1"
        )
        assert (error["type"], error["param"], error["code"]) == (
            "invalid_request_error",
            "messages.[1].role",
            None,
        )
        with pytest.raises(openai.BadRequestError, match="preceeding message with 'tool_calls'"):
            client.chat.completions.create(
                model="m", messages=[{"role": "tool", "tool_call_id": "call_2", "content": "x"}]
            )
        with pytest.raises(openai.BadRequestError) as no_output:
            client.responses.create(
                model="m",
                input=[
                    {"type": "function_call", "call_id": "call_3", "name": "r", "arguments": "{}"}
                ],
            )
        assert cast(Any, no_output.value.body)["message"] == (
            "No tool output found for function call call_3."
        )
        with pytest.raises(openai.BadRequestError) as no_call:
            client.responses.create(
                model="m",
                input=[{"type": "function_call_output", "call_id": "call_4", "output": "x"}],
            )
        assert cast(Any, no_call.value.body)["message"] == (
            "No tool call found for function call output with call_id call_4."
        )
        assert running.turns_used == 0


# ---- validation: context overflow ----------------------------------------------------------

LONG = "word " * 400  # 2,000 characters: 500 tokens and more with the framing


def test_overflow_refusals_have_each_apis_real_shape() -> None:
    with ScriptedServer(SCRIPT, context_limit=100) as running:
        with pytest.raises(anthropic.BadRequestError) as claude_refused:
            claude_client(running.url).messages.create(
                model="m", max_tokens=9, messages=[{"role": "user", "content": LONG}]
            )
        counted = cast(Any, running.requests[0].usage).prompt_tokens
        assert cast(Any, claude_refused.value.body)["error"] == {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {counted} tokens > 100 maximum",
        }
        client = openai_client(running.url)
        with pytest.raises(openai.BadRequestError) as chat_refused:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": LONG}])
        chat = cast(Any, chat_refused.value.body)
        assert chat["code"] == "context_length_exceeded" and chat["param"] == "messages"
        counted = cast(Any, running.requests[1].usage).prompt_tokens
        assert chat["message"] == (
            f"This model's maximum context length is 100 tokens. However, your messages "
            f"resulted in {counted} tokens. Please reduce the length of the messages."
        )
        with pytest.raises(openai.BadRequestError) as responses_refused:
            client.responses.create(model="m", input=LONG)
        responses = cast(Any, responses_refused.value.body)
        assert (responses["code"], responses["param"]) == ("context_length_exceeded", "input")
        assert responses["message"].startswith("Your input exceeds the context window")
        assert running.turns_used == 0
        assert all(r.kind == "rejected" and r.status == 400 for r in running.requests)
    for message in (
        cast(Any, claude_refused.value.body)["error"]["message"],
        chat["message"],
        responses["message"],
    ):
        assert is_overflow_text(message), message


def test_a_streamed_responses_overflow_can_arrive_as_response_failed() -> None:
    with (
        ScriptedServer(SCRIPT, context_limit=100, overflow="native-stream") as running,
        openai_client(running.url).responses.stream(model="m", input=LONG) as stream,
    ):
        events = list(stream)
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.failed",
    ]
    failed = events[-1]
    assert failed.type == "response.failed" and failed.response.error is not None
    assert failed.response.error.code == "context_length_exceeded"


def test_llama_cpp_and_ollama_overflow_variants() -> None:
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": LONG}]})
    with ScriptedServer(SCRIPT, context_limit=100, overflow="llama.cpp") as running:
        status, body = post(f"{running.url}/v1/chat/completions", request.encode())
        counted = cast(Any, running.requests[0].usage).prompt_tokens
    assert status == 400
    assert body == {
        "error": {
            "code": 400,
            "message": f"request ({counted} tokens) exceeds the available context size "
            "(100 tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": counted,
            "n_ctx": 100,
        }
    }
    with ScriptedServer(SCRIPT, context_limit=100, overflow="ollama") as running:
        status, body = post(f"{running.url}/v1/chat/completions", request.encode())
    assert status == 400
    assert (body["error"]["type"], body["error"]["code"]) == ("invalid_request_error", None)
    inner = json.loads(body["error"]["message"])
    assert inner["error"]["type"] == "exceed_context_size_error"
    assert is_overflow_text(body["error"]["message"])


# ---- bodies, routes and the command line -------------------------------------------------


def test_gzip_and_deflate_bodies_are_read(server: ScriptedServer) -> None:
    body = json.dumps({"model": "m", "input": "hi", "tools": [READ_TOOL_RESPONSES]}).encode()
    for encoding, data in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body))):
        status, reply = post(
            f"{server.url}/v1/responses",
            data,
            {"Content-Type": "application/json", "Content-Encoding": encoding},
        )
        assert status == 200 and reply["object"] == "response", reply
    assert [r.content_encoding for r in server.requests] == ["gzip", "deflate"]
    assert server.requests[0].body["input"] == "hi"


def test_zstd_bodies_are_read_or_refused_naming_the_package(server: ScriptedServer) -> None:
    body = json.dumps({"model": "m", "input": "hi", "tools": [READ_TOOL_RESPONSES]}).encode()
    headers = {"Content-Type": "application/json", "Content-Encoding": "zstd"}
    if importlib.util.find_spec("zstandard") is None:
        frame = b"\x28\xb5\x2f\xfd" + b"\x00" * 8  # the zstd magic number; never decoded
        status, reply = post(f"{server.url}/v1/responses", frame, headers)
        assert status == 415 and "zstandard" in reply["error"]["message"]
        return
    zstandard: Any = importlib.import_module("zstandard")
    for data in (
        zstandard.ZstdCompressor().compress(body),
        # a streamed frame, as an HTTP client writes it, does not state its content size
        zstandard.ZstdCompressor(write_content_size=False).compress(body),
    ):
        status, reply = post(f"{server.url}/v1/responses", data, headers)
        assert status == 200 and reply["output"][0]["type"] == "message", reply


def test_unknown_routes_and_bad_bodies_are_answered_and_recorded(server: ScriptedServer) -> None:
    status, reply = post(f"{server.url}/v1/embeddings", b"{}")
    assert status == 404 and "no route" in reply["error"]["message"]
    status, reply = post(f"{server.url}/v1/messages", b"{not json")
    assert status == 400 and reply["type"] == "error"
    assert [r.kind for r in server.requests] == ["not_found", "rejected"]
    assert server.turns_used == 0


def test_the_stream_is_sent_in_chunks_as_server_sent_events(server: ScriptedServer) -> None:
    body = json.dumps({"model": "m", "max_tokens": 9, "stream": True, "messages": []}).encode()
    request = urllib.request.Request(f"{server.url}/v1/messages", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        assert response.headers["Transfer-Encoding"] == "chunked"
        events = list(sse_events(response.read()))
    assert [e["type"] for e in events][:2] == ["message_start", "content_block_start"]


def test_the_command_line_serves_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"content": "from the file"}]}))
    command = [sys.executable, "-m", "veil.llm.scripted_server", "--script", str(script)]
    with subprocess.Popen(
        [*command, "--pairing", "--no-side-calls"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), url
            reply = openai_client(url).responses.create(model="m", input="hi")
            assert reply.output_text == "from the file"
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_the_command_line_refuses_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"contents": "typo"}]}))
    done = subprocess.run(
        [sys.executable, "-m", "veil.llm.scripted_server", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "unknown field 'contents'" in done.stderr
    assert done.stdout == ""
