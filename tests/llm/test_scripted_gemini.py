"""The scripted model server speaking Gemini's ``generateContent`` over HTTP on 127.0.0.1, as
Gemini CLI 0.61 calls it: the streamed loop with ``functionCall`` parts and their
``functionResponse`` answers, a JSON side call asking for a schema (its model router), a token
count, usage with the simulated cache, and the API's own refusals."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from veil.dialects import DIALECTS
from veil.llm.scripted_server import ScriptedServer, ToolUse, Turn
from veil.llm.scripted_wire import sse_events

Json = dict[str, Any]
MODEL = "gemini-3.1-pro-preview"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
TOOLS = [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {}}]}]
SYSTEM = {"parts": [{"text": "You are Gemini CLI."}]}
ROUTER_SCHEMA = {
    "type": "OBJECT",
    "properties": {
        "complexity_reasoning": {"type": "STRING"},
        "complexity_score": {"type": "INTEGER"},
        "confidence": {"type": "NUMBER"},
        "model_choice": {"type": "STRING", "enum": ["flash", "pro"]},
    },
    "required": ["complexity_reasoning", "complexity_score", "confidence", "model_choice"],
}


def post(url: str, path: str, body: Json) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url + path,
        json.dumps(body).encode(),
        {"content-type": "application/json", "x-goog-api-key": "k"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def user(text: str) -> Json:
    return {"role": "user", "parts": [{"text": text}]}


def loop_body(*contents: Json) -> Json:
    return {"contents": list(contents), "systemInstruction": SYSTEM, "tools": TOOLS}


def test_the_loop_streams_function_calls_and_reads_their_responses() -> None:
    script = [Turn("Reading.", (ToolUse("read_file", {"file_path": "a.py"}),)), Turn("Done.")]
    with ScriptedServer(script, cache=True, pairing=True) as server:
        status, raw = post(server.url, STREAM, loop_body(user("read a.py")))
        assert status == 200
        events = list(sse_events(raw))
        assert len(events) >= 2 and raw.count(b"\r\n\r\n") == len(events)
        parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
        assert "".join(p.get("text", "") for p in parts) == "Reading."
        (call,) = [p["functionCall"] for p in parts if "functionCall" in p]
        assert call == {"name": "read_file", "args": {"file_path": "a.py"}}  # no id, as the API
        assert events[-1]["candidates"][0]["finishReason"] == "STOP"
        assert all(e["modelVersion"] == MODEL and "usageMetadata" in e for e in events)
        usage = DIALECTS["gemini"].usage(events[-1])
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0

        # Gemini CLI sends the call back with its own id, and the response with the same id
        model = {"role": "model", "parts": [{"functionCall": {**call, "id": "read_file_1_0"}}]}
        response = {
            "id": "read_file_1_0",
            "name": "read_file",
            "response": {"output": "print(1)\n"},
        }
        answer = {"role": "user", "parts": [{"functionResponse": response}]}
        status, raw = post(server.url, STREAM, loop_body(user("read a.py"), model, answer))
        assert status == 200
    first, second = server.model_requests
    assert first.api == "gemini" and first.turn == 1 and second.turn == 2
    (result,) = second.tool_results
    assert (result.call_id, result.text) == ("read_file_1_0", "print(1)\n")
    assert [c.name for c in second.tool_calls] == ["read_file"]
    # the second request shares the first's prefix: the cache served it
    assert second.usage is not None and second.usage.cached_tokens > 0
    assert f'"cachedContentTokenCount":{second.usage.cached_tokens}' in raw.decode()


def test_a_side_call_asking_for_a_schema_gets_an_instance_of_it() -> None:
    body = {
        "contents": [user("route this")],
        "generationConfig": {"responseMimeType": "application/json",
                             "responseJsonSchema": ROUTER_SCHEMA},
    }  # fmt: skip
    with ScriptedServer([Turn("never")]) as server:
        status, raw = post(server.url, "/v1beta/models/gemini-3.5-flash-lite:generateContent", body)
        assert server.turns_used == 0
    assert status == 200
    answer = json.loads(raw)
    text = answer["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {
        "complexity_reasoning": "scripted",
        "complexity_score": 1,
        "confidence": 0,
        "model_choice": "flash",
    }
    assert server.side_calls[0].body == body


def test_count_tokens_answers_total_tokens_without_a_turn() -> None:
    body = {"contents": [user("x" * 400)]}
    with ScriptedServer([Turn("never")]) as server:
        status, raw = post(server.url, f"/v1beta/models/{MODEL}:countTokens", body)
        assert server.turns_used == 0
    assert status == 200 and json.loads(raw)["totalTokens"] >= 100
    assert server.requests[0].kind == "count_tokens" and server.requests[0].api == "gemini"


@pytest.mark.parametrize(
    ("contents", "text"),
    [
        (
            [user("go"), {"role": "model", "parts": [
                {"functionCall": {"name": "read_file", "args": {}}},
                {"functionCall": {"name": "read_file", "args": {}}}]},
             {"role": "user", "parts": [
                 {"functionResponse": {"name": "read_file", "response": {"output": "a"}}}]}],
            "the number of function response parts is equal to the number of function call",
        ),
        (
            [user("go"), {"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "a"}}}]}],
            "function response turn comes immediately after a function call turn",
        ),
    ],
)  # fmt: skip
def test_unpaired_calls_are_refused_as_the_api_refuses_them(
    contents: list[Json], text: str
) -> None:
    with ScriptedServer([Turn("never")], pairing=True) as server:
        status, raw = post(server.url, STREAM, loop_body(*contents))
        assert server.turns_used == 0
    assert status == 400
    error = json.loads(raw)["error"]
    assert error["status"] == "INVALID_ARGUMENT" and text in error["message"]


def test_an_overlong_prompt_is_refused_in_the_apis_words() -> None:
    with ScriptedServer([Turn("never")], context_limit=50) as server:
        status, raw = post(server.url, STREAM, loop_body(user("x" * 1000)))
    assert status == 400
    assert DIALECTS["gemini"].is_overflow(raw)
    assert (
        "exceeds the maximum number of tokens allowed (50)" in json.loads(raw)["error"]["message"]
    )
