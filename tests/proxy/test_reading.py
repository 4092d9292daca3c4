"""The proxy's reading of requests: incremental reading gives exactly what a fresh read gives
(every API, a growing conversation with a moving ``cache_control``, interleaved
conversations, bodies not written compactly), and :func:`splice` changes the results' bytes
and nothing else."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from veil.proxy.reading import Reader, parse
from veil.proxy.wire import Api, Request, Splicer, WireError, common_prefix, splice


def anthropic_body(steps: int, *, session: str = "s1", task: str = "fix it") -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for k in range(steps):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"think {k}", "signature": "c2ln"},
                    {"type": "tool_use", "id": f"toolu_{k}", "name": "Read",
                     "input": {"file_path": f"/r/f{k}.py"}},
                ],
            }
        )  # fmt: skip
        blocks: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": f"toolu_{k}",
             "content": f"line one of {k}\n\"quoted\" ü \u2028 end {k}"},
        ]  # fmt: skip
        if k % 3 == 0:
            blocks.append({"type": "text", "text": f"note {k}"})
        messages.append({"role": "user", "content": blocks})
    if messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list):
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # moves every time
    return {
        "model": "claude-x",
        "messages": messages,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "metadata": {"user_id": json.dumps({"session_id": session})},
        "stream": True,
    }


def responses_body(steps: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
    ]
    for k in range(steps):
        items.append({"type": "reasoning", "summary": [], "encrypted_content": f"e{k}"})
        items.append({"type": "function_call", "name": "exec_command", "call_id": f"c{k}",
                      "arguments": json.dumps({"cmd": f"cat f{k}"})})  # fmt: skip
        if k % 2:
            items.append({"type": "function_call", "name": "exec_command", "call_id": f"d{k}",
                          "arguments": json.dumps({"cmd": f"ls {k}"})})  # fmt: skip
            items.append({"type": "function_call_output", "call_id": f"d{k}", "output": f"ls {k}"})
        items.append({"type": "function_call_output", "call_id": f"c{k}", "output": f"out {k}"})
    return {"model": "gpt", "input": items, "prompt_cache_key": "pk", "stream": True}


def chat_body(steps: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"},
                                      {"role": "user", "content": "go"}]  # fmt: skip
    for k in range(steps):
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function",
                 "function": {"name": "bash", "arguments": json.dumps({"command": f"ls {k}"})}}]}
        )  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"listing {k}"})
    return {"model": "m", "messages": messages}


BODIES = {"anthropic": anthropic_body, "responses": responses_body, "chat": chat_body}


def summary(request: Request) -> list[Any]:
    return [
        [(f.role, f.text, [(c.id, c.name, dict(c.arguments)) for c in f.calls], f.call_id)
         for f in request.found],
        [(r.index, r.call_id, r.value, r.field, r.entry) for r in request.results],
        request.body,
        request.key,
    ]  # fmt: skip


@pytest.mark.parametrize("api", ["anthropic", "responses", "chat"])
def test_incremental_reading_equals_a_fresh_read(api: Api) -> None:
    reader = Reader()
    for steps in range(0, 12):
        raw = orjson.dumps(BODIES[api](steps))
        incremental = parse(api, raw, {}, reader)
        fresh = parse(api, raw, {}, Reader())
        assert summary(incremental) == summary(fresh)
        for r in incremental.results:  # every result's entry is its message
            assert incremental.found[r.entry].call_id == r.call_id
            assert r.span is not None and raw[r.span[0] : r.span[1]] == orjson.dumps(r.value)


def test_unchanged_messages_are_the_same_objects() -> None:
    reader = Reader()
    first = parse("anthropic", orjson.dumps(anthropic_body(6)), {}, reader)
    second = parse("anthropic", orjson.dumps(anthropic_body(7)), {}, reader)
    # the messages before the one whose cache_control moved are not read again
    same = sum(1 for a, b in zip(first.found, second.found, strict=False) if a is b)
    assert same >= len(first.found) - 2
    assert summary(second) == summary(parse("anthropic", orjson.dumps(anthropic_body(7)), {}))


def test_interleaved_conversations_share_a_reader() -> None:
    reader = Reader()
    for steps in range(1, 6):
        for session, task in (("main", "fix it"), ("main", "subagent: search"), ("other", "x")):
            raw = orjson.dumps(anthropic_body(steps, session=session, task=task))
            assert summary(parse("anthropic", raw, {}, reader)) == summary(
                parse("anthropic", raw, {}, Reader())
            )


def test_a_body_not_written_compactly_is_read_the_same() -> None:
    reader = Reader()
    for steps in (3, 4, 5):
        body = anthropic_body(steps)
        raw = json.dumps(body, indent=1, ensure_ascii=True).encode()
        read = summary(parse("anthropic", raw, {}, reader))
        assert read == summary(parse("anthropic", raw, {}, Reader()))
        assert read[:3] == summary(parse("anthropic", orjson.dumps(body), {}, Reader()))[:3]


def test_a_conversation_that_changes_early_is_read_again() -> None:
    reader = Reader()
    body = anthropic_body(5)
    parse("anthropic", orjson.dumps(body), {}, reader)
    body["messages"][2]["content"][0]["content"] = "rewritten by the client"
    raw = orjson.dumps(body)
    assert summary(parse("anthropic", raw, {}, reader)) == summary(parse("anthropic", raw, {}))


def test_bad_bodies_get_one_clear_error() -> None:
    cases = ((b"{", "not JSON"), (b"[1]", "JSON list"), (b'{"model":"m"}', "no messages"))
    for raw, words in cases:
        with pytest.raises(WireError, match=words):
            parse("anthropic", raw, {}, Reader())
    with pytest.raises(WireError, match="no input"):
        parse("responses", b'{"model":"m"}', {}, Reader())


def test_common_prefix() -> None:
    a = bytes(range(256)) * 1000
    for cut in (0, 1, 65_535, 65_536, 65_537, 200_000, len(a)):
        b = a[:cut] + b"\xff" + a[cut + 1 :] if cut < len(a) else a
        expected = cut if cut < len(a) and a[cut] != 0xFF else len(a)
        assert common_prefix(a, b) == expected
    assert common_prefix(b"abc", b"ab") == 2


@pytest.mark.parametrize("api", ["anthropic", "responses", "chat"])
def test_splice_replaces_the_results_and_nothing_else(api: Api) -> None:
    raw = orjson.dumps(BODIES[api](8))
    request = parse(api, raw, {}, Reader())
    texts = {r.index: f"[veil: stub {r.index}]" for r in request.results if r.index % 2 == 0}
    spliced = splice(request, raw, texts)
    assert spliced.exact
    again = parse(api, spliced.body, {}, Reader())
    for r in again.results:
        assert r.value == texts.get(r.index, request.results[r.index].value)
    # put the original values back: the bytes are the client's, exactly
    assert splice(again, spliced.body, {
        i: request.results[i].value for i in texts
    }).body == raw  # fmt: skip


def test_a_splicer_reuses_its_last_output_and_gives_the_same_bytes() -> None:
    splicer = Splicer()
    reader = Reader()
    for steps in range(2, 14):
        raw = orjson.dumps(anthropic_body(steps))
        request = parse("anthropic", raw, {}, reader)
        # the older half stubbed; a new batch (more stubs, new texts) every fourth request
        batch = steps // 4
        texts = {r.index: f"[veil: stub {r.index} of batch {batch}]"
                 for r in request.results if r.index < batch * 4 - 2}  # fmt: skip
        assert splicer.splice(request, raw, texts) == splice(request, raw, texts)
