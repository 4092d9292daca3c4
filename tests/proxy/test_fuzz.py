"""Never break a session (issue 35): a seeded fuzz through the real ``veil proxy``.

``veil proxy --window 12000`` runs as a subprocess (the command an agent's user runs) in front
of a recording upstream of our own on 127.0.0.1; random valid conversations in each wire
dialect grow request by request through it, and every body the upstream receives is checked
against the body the client sent (:mod:`benchmarks.lib.proxy_fuzz`: the generator, the checker
and the rig, shared with ``benchmarks/proxy_fuzz.py``, which runs the same fuzz longer). The
window is small so that the proxy evicts: each test asserts that stubs were seen, else it would
prove nothing. Sixteen conversations run at once and must never see each other's text.

The checker itself is tested on bodies broken on purpose (a result dropped, a thinking block
altered, a marker moved, a stub changed between requests, …): each must be caught — that is how
this suite is known to fail when a splice is broken.

Two failures the fuzz found are kept as regression tests with their exact reproduction (a marker
inside a stubbed result; a result the client cleared after its stub went); both cases are in
the main fuzz too (``AnthropicConversation.markers_inside_results``, ``Conversation.clears``).

Deterministic: fixed seeds, no sleeps, no timing assertions (a socket timeout only bounds a
failure)."""

from __future__ import annotations

import http.client
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from benchmarks.lib.proxy_fuzz import (
    CLEARED,
    CONVERSATIONS,
    DIALECTS,
    ID_HEADER,
    ZSTD,
    AnthropicConversation,
    Checker,
    Dialect,
    RecordingUpstream,
    VeilProxy,
    Violation,
    conversations,
    parse,
    run_concurrently,
    run_sequentially,
    stringify,
)

from veil.proxy.inputs import marker

Json = dict[str, Any]
WINDOW = 12_000
SEEDS = (8, 14)
"""Seeds whose conversations hold every case between them (test_the_fuzz_holds_what_it_claims)."""
REQUESTS = 40
TOGETHER = 16
TOGETHER_REQUESTS = 14


@dataclass(frozen=True)
class Rig:
    upstream: RecordingUpstream
    proxy: VeilProxy

    def post(self, request_id: str, path: str, body: Json) -> bytes:
        """``body`` through the proxy; what the upstream received."""
        host, port = self.proxy.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            headers = {"content-type": "application/json", ID_HEADER: request_id}
            connection.request("POST", path, body=stringify(body), headers=headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 200
        finally:
            connection.close()
        seen = self.upstream.take(request_id)
        assert seen is not None and seen.problem is None
        return seen.body


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with RecordingUpstream() as upstream, VeilProxy(upstream.url, window=WINDOW) as proxy:
        yield Rig(upstream, proxy)


def no_traceback(rig: Rig) -> None:
    assert "Traceback" not in rig.proxy.stderr, rig.proxy.stderr


# ---- the fuzz ------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_forwarded_body_is_the_clients_but_for_its_stubs(rig: Rig, dialect: Dialect) -> None:
    run = run_sequentially(rig.proxy.url, rig.upstream, dialect, SEEDS, REQUESTS)
    total = run.total()
    assert total.violations == []
    assert total.bodies_checked == total.requests >= len(SEEDS) * REQUESTS
    # it evicted (else this proves nothing), and some requests went untouched
    assert total.stubs > 0 and total.stubbed_calls > 0 and total.stubbed_bodies > 0
    assert total.unchanged > 0
    # a client writing Python's spaced JSON (seed 8's Chat conversation) is spliced in place too
    assert total.reserialised == 0
    if dialect == "chat":
        assert any(c.layout == "spaced-ascii" for s in SEEDS for c in conversations(dialect, s, 1))
    no_traceback(rig)


def test_sixteen_conversations_at_once_are_kept_apart(rig: Rig) -> None:
    run = run_concurrently(rig.proxy.url, rig.upstream, 7, TOGETHER, TOGETHER_REQUESTS)
    assert len(run.driven) == TOGETHER
    assert run.total().violations == []
    for dialect, tally in run.by_dialect().items():
        assert tally.stubs > 0, f"no {dialect} conversation was evicted"
    # no body of one conversation holds another's text, nor a stub pointing at another's result
    assert run.isolation() == []
    no_traceback(rig)


def test_the_fuzz_holds_what_it_claims() -> None:
    """The quick run's conversations (no proxy needed: the generator is seeded) carry every
    case the fuzz is for."""
    sent: dict[str, list[bytes]] = {d: [] for d in DIALECTS}
    kinds: set[str] = set()
    encodings: set[str] = set()
    layouts: set[str] = set()
    rewinds = 0
    conversations = [CONVERSATIONS[d](seed, f"{d}-{seed}-0") for d in DIALECTS for seed in SEEDS]
    for conversation in conversations:
        size = 0
        for _ in range(REQUESTS):
            for request in conversation.next_requests():
                sent[request.dialect].append(request.body)
                kinds.add(request.kind)
                encodings.add(request.encoding)
                layouts.add(request.layout)
            rewinds += len(conversation.items()) <= size  # it went back before growing
            size = len(conversation.items())
    assert rewinds > 0
    anthropic = b"\n".join(sent["anthropic"])
    for needle in (
        b'"is_error":true', b'"type":"image"', b'"type":"document"', b'"type":"thinking"',
        b'"signature":"', b'"type":"redacted_thinking"', b'"type":"server_tool_use"',
        b'"type":"web_search_tool_result"', b'"cache_control":{"type":"ephemeral"}',
        b'"ttl":"1h"', b"\\ud83d", b'"user_id":"{\\"device_id', b"\\u001b[31m",
        "😀".encode(), b'"system":"', b'"system":[',
    ):  # fmt: skip
        assert needle in anthropic, needle
    responses = b"\n".join(sent["responses"])
    for needle in (
        b'"type":"reasoning"', b'"encrypted_content":"gAAAAB', b'"store":false',
        b'"prompt_cache_key":"', b'"type":"function_call_output"', b'"type":"custom_tool_call"',
        b'"type":"input_image"',
    ):  # fmt: skip
        assert needle in responses, needle
    chat = b"\n".join(sent["chat"])
    for needle in (b'"tool_calls":[', b'"role":"tool"', b'"tool_call_id":"'):
        assert needle in chat, needle
    gemini = b"\n".join(sent["gemini"])
    for needle in (
        b'"functionCall":{"id":"', b'"functionResponse":{"name":"', b'"response":{"error":',
        b'"thought":true,"thoughtSignature":"', b'"systemInstruction":', b"\\ud83d",
    ):  # fmt: skip
        assert needle in gemini, needle
    # parallel calls (an assistant message with two tool_use blocks), long results
    assert _parallel(parse(sent["anthropic"][-1]))
    assert max(len(r) for d in DIALECTS for r in _results(d, parse(sent[d][-1]))) >= 10_000
    assert {"count", "retry", ""} <= kinds
    assert {"", "gzip"} | ({"zstd"} if ZSTD else set()) <= encodings
    assert layouts == {"compact"} or "spaced-ascii" in layouts


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_seed_gives_the_same_bytes(dialect: Dialect) -> None:
    def bodies() -> list[bytes]:
        conversation = CONVERSATIONS[dialect](SEEDS[0], "again")
        return [r.wire for _ in range(12) for r in conversation.next_requests()]

    assert bodies() == bodies()


def _parallel(body: Json) -> bool:
    return any(
        sum(1 for b in m["content"] if b.get("type") == "tool_use") > 1
        for m in body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
    )


def _results(dialect: Dialect, body: Json) -> list[str]:
    """The results given as one string."""
    if dialect == "responses":
        found = [i.get("output") for i in body["input"] if i.get("type", "").endswith("_output")]
    elif dialect == "chat":
        found = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    elif dialect == "gemini":
        found = [
            p["functionResponse"]["response"].get("output")
            for c in body["contents"]
            for p in c["parts"]
            if "functionResponse" in p
        ]
    else:
        found = [b.get("content") for b in _blocks(body, "tool_result")]
    return [r for r in found if isinstance(r, str)]


# ---- the checker catches a broken splice -----------------------------------------------------


def stubbed(dialect: Dialect, body: Json, stubs: dict[str, str]) -> Json:
    """``body`` with the results of the calls in ``stubs`` replaced as the proxy does."""
    out = json.loads(json.dumps(body))
    if dialect == "anthropic":
        for m in out["messages"]:
            for b in m["content"] if isinstance(m["content"], list) else []:
                if b.get("type") == "tool_result" and b["tool_use_id"] in stubs:
                    b["content"] = stubs[b["tool_use_id"]]
    elif dialect == "responses":
        for item in out["input"]:
            if item.get("call_id") in stubs and item.get("type", "").endswith("_output"):
                item["output"] = stubs[item["call_id"]]
    elif dialect == "gemini":
        for c in out["contents"]:
            for p in c["parts"]:
                if "functionResponse" in p and p["functionResponse"]["id"] in stubs:
                    p["functionResponse"]["response"] = {
                        "output": stubs[p["functionResponse"]["id"]]
                    }
    else:
        for m in out["messages"]:
            if m["role"] == "tool" and m["tool_call_id"] in stubs:
                m["content"] = stubs[m["tool_call_id"]]
    return cast(Json, out)


def calls(dialect: Dialect, body: Json) -> list[tuple[str, str]]:
    """(call id, tool name) of every call, in order."""
    if dialect == "anthropic":
        return [
            (b["id"], b["name"])
            for m in body["messages"]
            if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        ]
    if dialect == "responses":
        return [
            (i["call_id"], i["name"]) for i in body["input"] if i.get("type", "").endswith("_call")
        ]
    if dialect == "gemini":
        return [
            (p["functionCall"]["id"], p["functionCall"]["name"])
            for c in body["contents"]
            if c["role"] == "model"
            for p in c["parts"]
            if "functionCall" in p
        ]
    return [
        (c["id"], c["function"]["name"])
        for m in body["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]


@dataclass
class Case:
    """Two requests of a conversation, and what a proxy that splices right forwards."""

    dialect: Dialect
    first: bytes
    second: bytes
    stubs: dict[str, str]
    """Stubs for the older results (the last turn's are unread)."""

    def forwarded(self, raw: bytes) -> Json:
        return stubbed(self.dialect, parse(raw), self.stubs)


def case(dialect: Dialect, seed: int = 11, steps: int = 14) -> Case:
    """A conversation with thinking, markers and reasoning (as the generator makes them)."""
    conversation = CONVERSATIONS[dialect](seed, f"checker-{dialect}")
    if isinstance(conversation, AnthropicConversation):
        conversation.thinking = True
    conversation.rewind = conversation.retries = conversation.counts = 0.0
    for _ in range(steps):
        conversation.next_request()
    first = conversation.next_request().body
    second = conversation.next_request().body
    found = calls(dialect, parse(first))[:-4]
    assert len(found) >= 4
    stubs = {call_id: f"[veil: {name} — 12 tokens out of the prompt; veil://warm/ci_{n:04d}]"
             for n, (call_id, name) in enumerate(found[:6])}  # fmt: skip
    return Case(dialect, first, second, stubs)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_checker_passes_a_splice_done_right(dialect: Dialect) -> None:
    c = case(dialect)
    checker = Checker(dialect)
    assert checker.check(c.first, c.first).unchanged
    checked = checker.check(c.first, stringify(c.forwarded(c.first)))
    assert checked.stubs == len(c.stubs) and checked.exact
    assert checker.check(c.second, stringify(c.forwarded(c.second))).stubs == len(c.stubs)


def _anthropic_messages(body: Json) -> list[Json]:
    return cast(list[Json], body["messages"])


def _blocks(body: Json, kind: str) -> list[Json]:
    return [
        b
        for m in _anthropic_messages(body)
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == kind
    ]


def drop_a_result(body: Json) -> None:
    result = _blocks(body, "tool_result")[0]
    for m in _anthropic_messages(body):
        if isinstance(m["content"], list) and result in m["content"]:
            m["content"].remove(result)


def alter_thinking(body: Json) -> None:
    _blocks(body, "thinking")[0]["thinking"] += " "


def alter_signature(body: Json) -> None:
    block = _blocks(body, "thinking")[1]
    block["signature"] = block["signature"][::-1]


def move_a_marker(body: Json) -> None:
    marked = [b for m in _anthropic_messages(body) if isinstance(m["content"], list)
              for b in m["content"] if "cache_control" in b]  # fmt: skip
    plain = _blocks(body, "tool_use")
    target = next(b for b in plain if "cache_control" not in b)
    target["cache_control"] = marked[-1].pop("cache_control")


def change_a_text(body: Json) -> None:
    first = _anthropic_messages(body)[0]
    if isinstance(first["content"], str):
        first["content"] += "!"
    else:
        first["content"][-1]["text"] += "!"


def stub_an_unread_result(body: Json) -> None:
    last = _anthropic_messages(body)[-1]
    for b in last["content"] if isinstance(last["content"], list) else []:
        if b.get("type") == "tool_result":
            b["content"] = "[veil: Read — 1 tokens out of the prompt; veil://warm/ci_x]"
            return
    raise AssertionError("the last message holds no result")


def unname_a_stub(body: Json) -> None:
    for b in _blocks(body, "tool_result"):
        if isinstance(b["content"], str) and b["content"].startswith("[veil: "):
            b["content"] = "[veil: Something — 12 tokens out of the prompt; veil://warm/ci_0000]"
            return


def reorder_results(body: Json) -> None:
    for m in _anthropic_messages(body):
        content = m["content"]
        results = (
            [b for b in content if b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        if len(results) > 1:
            a, b = content.index(results[0]), content.index(results[1])
            content[a], content[b] = content[b], content[a]
            return
    raise AssertionError("no message with two results")


BREAKS: dict[str, tuple[Callable[[Json], None], str]] = {
    "a tool_result dropped": (drop_a_result, "1 blocks became 0"),
    "a thinking block altered": (alter_thinking, "thinking block"),
    "a signature altered": (alter_signature, "thinking block / signature"),
    "a cache_control moved": (move_a_marker, "cache_control marker changed or moved"),
    "a text that is no result changed": (change_a_text, "not a tool result's content changed"),
    "an unread result stubbed": (stub_an_unread_result, "has not read yet"),
    "a stub that names another call": (unname_a_stub, "does not name its call"),
    "two results swapped": (reorder_results, "the result of"),
}
"""A splice broken on purpose, and what the checker says of it."""


@pytest.mark.parametrize("name", BREAKS)
def test_the_checker_catches_a_broken_anthropic_splice(name: str) -> None:
    c = case("anthropic", seed=13, steps=24)
    body = c.forwarded(c.first)
    checker = Checker("anthropic")
    assert checker.check(c.first, stringify(body)).stubs == len(c.stubs)  # right before
    brake, says = BREAKS[name]
    brake(body)
    with pytest.raises(Violation, match=re.escape(says)):
        Checker("anthropic").check(c.first, stringify(body))


def _gemini_parts(body: Json, kind: str) -> list[Json]:
    return [p for c in body["contents"] for p in c["parts"] if kind in p]


def _gemini_unpair(body: Json) -> None:
    for c in body["contents"]:
        answers = [p for p in c["parts"] if "functionResponse" in p]
        if answers:
            c["parts"].remove(answers[0])
            return


def _gemini_signature(body: Json) -> None:
    part = next(p for c in body["contents"] for p in c["parts"] if p.get("thought"))
    part["thoughtSignature"] = part["thoughtSignature"][::-1]


def _gemini_stub_object(body: Json) -> None:
    stubbed = next(p for p in _gemini_parts(body, "functionResponse")
                   if "veil:" in json.dumps(p["functionResponse"]["response"]))  # fmt: skip
    stubbed["functionResponse"]["response"] = "[veil: a string, not an object]"


def _gemini_unread(body: Json) -> None:
    last = body["contents"][-1]
    for p in last["parts"]:
        if "functionResponse" in p:
            name = p["functionResponse"]["name"]
            p["functionResponse"]["response"] = {"output": f"[veil: {name} — 1 tokens; x]"}
            return
    raise AssertionError("the last content holds no result")


GEMINI_BREAKS: dict[str, tuple[Callable[[Json], None], str]] = {
    "a functionResponse dropped": (_gemini_unpair, "parts became"),
    "a thought signature altered": (_gemini_signature, "thinking block / signature"),
    "a stub that is no object": (_gemini_stub_object, "a stubbed response is"),
    "an unread result stubbed": (_gemini_unread, "has not read yet"),
}
"""A Gemini splice broken on purpose, and what the checker says of it."""


@pytest.mark.parametrize("name", GEMINI_BREAKS)
def test_the_checker_catches_a_broken_gemini_splice(name: str) -> None:
    c = case("gemini", seed=13, steps=24)
    body = c.forwarded(c.first)
    assert Checker("gemini").check(c.first, stringify(body)).stubs == len(c.stubs)
    brake, says = GEMINI_BREAKS[name]
    brake(body)
    with pytest.raises(Violation, match=re.escape(says)):
        Checker("gemini").check(c.first, stringify(body))


def test_the_checker_catches_a_stub_changed_between_requests() -> None:
    c = case("chat")
    checker = Checker("chat")
    checker.check(c.first, stringify(c.forwarded(c.first)))
    changed = {k: v.replace("12 tokens", "13 tokens") for k, v in c.stubs.items()}
    with pytest.raises(Violation, match="changed between requests"):
        checker.check(c.second, stringify(stubbed("chat", parse(c.second), changed)))


def test_the_checker_catches_a_stub_not_sent_again() -> None:
    c = case("responses")
    checker = Checker("responses")
    checker.check(c.first, stringify(c.forwarded(c.first)))
    fewer = dict(list(c.stubs.items())[1:])
    with pytest.raises(Violation, match="not sent again"):
        checker.check(c.second, stringify(stubbed("responses", parse(c.second), fewer)))


def test_the_checker_catches_encrypted_reasoning_changed() -> None:
    c = case("responses")
    body = c.forwarded(c.first)
    item = next(i for i in body["input"] if i.get("type") == "reasoning")
    item["encrypted_content"] = item["encrypted_content"][:-4] + "AAAA"
    with pytest.raises(Violation, match="encrypted reasoning"):
        Checker("responses").check(c.first, stringify(body))


def test_the_checker_catches_bytes_changed_outside_the_stubs() -> None:
    c = case("anthropic")
    with pytest.raises(Violation, match="byte for byte"):  # no stub, and yet a byte changed
        Checker("anthropic").check(c.first, stringify(parse(c.first), "spaced-ascii"))
    with pytest.raises(Violation, match="layout changed"):  # stubs, and the layout changed
        Checker("anthropic").check(c.first, stringify(c.forwarded(c.first), "spaced-ascii"))
    with pytest.raises(Violation, match="not JSON"):
        Checker("anthropic").check(c.first, c.first[:-1])


def test_the_checker_tells_a_spaced_body_spliced_in_place_from_one_serialised_again() -> None:
    """A client writing spaced ASCII JSON (Python's ``json.dumps``): a stub written compact
    where the result's value was is in place; the same body serialised again is not."""
    from veil.proxy.reading import Reader
    from veil.proxy.reading import parse as read
    from veil.proxy.wire import splice

    arguments = json.dumps({"path": "a — b.py"})
    call = {"id": "call_1", "type": "function",
            "function": {"name": "read", "arguments": arguments}}  # fmt: skip
    body = {"model": "gpt-x", "messages": [
        {"role": "user", "content": "task — é"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": [{"type": "text", "text": "line — é\n" * 50}]},
        {"role": "assistant", "content": "Read it."},
        {"role": "user", "content": "Go on."}]}  # fmt: skip
    sent = stringify(body, "spaced-ascii")
    request = read("chat", sent, {}, Reader())
    spliced = splice(request, sent, {0: "[veil: read a — b.py: 50 lines; veil://warm/ci_1]"})
    assert spliced.exact
    checker = Checker("chat", "spaced-ascii")
    assert checker.check(sent, spliced.body).exact
    again = Checker("chat", "spaced-ascii").check(sent, stringify(parse(spliced.body)))
    assert not again.exact and again.stubs == 1


def test_the_checker_catches_a_marker_lost_with_a_stubbed_result() -> None:
    c = case("anthropic")
    client = parse(c.first)
    call_id = next(iter(c.stubs))
    result = next(b for b in _blocks(client, "tool_result") if b["tool_use_id"] == call_id)
    result["content"] = [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]
    with pytest.raises(Violation, match="cache_control marker inside"):
        Checker("anthropic").check(
            stringify(client), stringify(stubbed("anthropic", client, c.stubs))
        )


# ---- and through the real proxy, broken on purpose ------------------------------------------

SABOTAGE = r"""
import http.client, os, re

_MODE = os.environ["VEIL_FUZZ_SABOTAGE"]
_request = http.client.HTTPConnection.request
_count = [0]


def _broken(body):
    _count[0] += 1
    if _MODE == "off-by-one":  # the stub written one byte early: over the content key's colon
        at = body.index(b'"[veil:')
        return body[: at - 1] + body[at:]
    if _MODE == "stub-drift":  # each request's stub a little different
        return body.replace(b"out of the prompt", b"out of the prompt %d" % _count[0], 1)
    if _MODE == "marker-dropped":
        return re.sub(rb',"cache_control":\{[^}]*\}', b"", body, count=1)
    if _MODE == "signature-altered":
        flip = lambda m: b'"signature":"' + (b"B" if m[1] == b"A" else b"A")
        return re.sub(rb'"signature":"(.)', flip, body, count=1)
    raise ValueError(_MODE)


def request(self, method, url, body=None, headers=None, **kw):
    if isinstance(body, bytes) and b'"[veil:' in body:
        body = _broken(body)
    return _request(self, method, url, body, headers or {}, **kw)


http.client.HTTPConnection.request = request
"""
"""Loaded into the proxy's process only (``PYTHONPATH``): every body it sends upstream with a
stub in it is broken on the way out, as a broken splice would break it."""

SABOTAGED: dict[str, str] = {
    "off-by-one": "is not JSON",
    "stub-drift": "changed between requests",
    "marker-dropped": "cache_control marker changed or moved",
    "signature-altered": "thinking block / signature",
}


@pytest.mark.parametrize("mode", SABOTAGED)
def test_a_splice_broken_on_purpose_fails_the_fuzz(tmp_path: Path, mode: str) -> None:
    """The same fuzz, through a ``veil proxy`` whose forwarded bodies are broken in its own
    process (no source file touched): it must report a violation, the right one."""
    (tmp_path / "sitecustomize.py").write_text(SABOTAGE)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "VEIL_FUZZ_SABOTAGE": mode}
    with (
        RecordingUpstream() as upstream,
        VeilProxy(upstream.url, window=WINDOW, env=env) as proxy,
    ):
        run = run_sequentially(proxy.url, upstream, "anthropic", (14,), REQUESTS)
    [violation] = run.total().violations  # the conversation stops at its first
    assert SABOTAGED[mode] in violation, violation


# ---- what the fuzz found (fixed; kept as regression tests) -----------------------------------


def _reads(session: str, steps: int, first: Callable[[str], Any], cleared: bool = False) -> Json:
    """A Claude Code-like request: a task, then ``steps`` Reads of ~1,000 tokens each; the
    first result's content as ``first`` makes it (``cleared``: as the client cleared it)."""
    messages: list[Json] = [{"role": "user", "content": "Read the files and fix the bug."}]
    for k in range(steps):
        call_id = f"toolu_{session}_{k:02d}"
        read = {
            "type": "tool_use",
            "id": call_id,
            "name": "Read",
            "input": {"file_path": f"f{k}.py"},
        }
        messages.append({"role": "assistant", "content": [read]})
        text = "\n".join(f"{k}:{j} value = {j * k} " + "x" * 30 for j in range(90))
        content = (CLEARED if cleared else first(text)) if k == 0 else text
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": content}
        ]})  # fmt: skip
    return {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": messages,
            "metadata": {"user_id": json.dumps({"session_id": session})}}  # fmt: skip


def test_a_marker_inside_a_stubbed_result_is_kept(rig: Rig) -> None:
    """``--window 12000``; the first Read's result is ``[{"type": "text", "text": …,
    "cache_control": {"type": "ephemeral"}}]`` (valid: a block inside a result may carry a
    marker); the 9th request stubs it: the stub is one text block carrying that marker."""
    checker = Checker("anthropic")

    def marked(text: str) -> list[Json]:
        return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]

    for steps in range(1, 17):
        body = _reads("marker", steps, marked)
        checker.check(stringify(body), rig.post(f"marker:{steps}", "/v1/messages", body))
    assert checker.stubs, "nothing was stubbed: the reproduction no longer holds"


def test_a_stub_outlives_the_client_clearing_its_result(rig: Rig) -> None:
    """``--window 12000``; once the first Read's result went as a stub (the 9th request), the
    client sends the next request with that result's content
    ``"[Old tool result content cleared]"``: the proxy sends its stub again (the text the
    provider cached), not the client's."""
    checker = Checker("anthropic")
    call_id = "toolu_clear_00"
    for steps in range(1, 17):
        cleared = call_id in checker.stubs
        body = _reads("clear", steps, lambda text: text, cleared=cleared)
        checker.check(stringify(body), rig.post(f"clear:{steps}", "/v1/messages", body))
        if cleared:
            return  # the stub was sent again
    raise AssertionError("the first result was never stubbed: the reproduction no longer holds")


# ---- the checker and elided tool inputs ----------------------------------------------------------

ELIDING = ("anthropic", "responses", "chat", "gemini")


def _input_holders(dialect: Dialect, body: Json) -> list[tuple[Json, str]]:
    """Every call's input holder in ``body``, in order: (the object, its input's key)."""
    if dialect == "anthropic":
        return [(b, "input") for b in _blocks(body, "tool_use")]
    if dialect == "responses":
        return [(i, "arguments") for i in body["input"] if i.get("type") == "function_call"]
    if dialect == "gemini":
        return [
            (p["functionCall"], "args")
            for c in body["contents"]
            for p in c["parts"]
            if "functionCall" in p
        ]
    return [
        (c["function"], "arguments")
        for m in body["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]


def _elide(value: Any, count: Callable[[int], int] = lambda n: n) -> Any:
    """``value`` with every string a marker (of ``count(its length)`` characters), its keys
    kept; a JSON text elided inside."""
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except ValueError:
            inner = None
        if isinstance(inner, dict):
            return json.dumps(_elide(inner, count), separators=(",", ":"))
        return marker(count(len(value)), "veil://warm/ci_0123", "mcp__veil__expand")
    if isinstance(value, dict):
        return {k: _elide(v, count) for k, v in cast(Json, value).items()}
    if isinstance(value, list):
        return [_elide(v, count) for v in cast(list[Any], value)]
    return value


def _elided(dialect: Dialect, raw: bytes, stubs: dict[str, str], n: int = 0, **how: Any) -> Json:
    """The request spliced right, with the ``n``-th call's input elided."""
    body = stubbed(dialect, parse(raw), stubs)
    holder, key = _input_holders(dialect, body)[n]
    holder[key] = _elide(holder[key], **how)
    return body


@pytest.mark.parametrize("dialect", ELIDING)
def test_the_checker_passes_an_elided_input_done_right(dialect: Dialect) -> None:
    c = case(dialect)
    checker = Checker(dialect)
    checked = checker.check(c.first, stringify(_elided(dialect, c.first, c.stubs)))
    assert checked.stubs == len(c.stubs) + 1 and checked.exact
    again = checker.check(c.second, stringify(_elided(dialect, c.second, c.stubs)))
    assert again.stubs == len(c.stubs) + 1


@pytest.mark.parametrize("dialect", ELIDING)
def test_the_checker_catches_an_elided_input_done_wrong(dialect: Dialect) -> None:
    c = case(dialect)
    last = len(_input_holders(dialect, parse(c.first))) - 1
    with pytest.raises(Violation, match="in the last turn was elided"):
        Checker(dialect).check(c.first, stringify(_elided(dialect, c.first, c.stubs, last)))
    wrong = _elided(dialect, c.first, c.stubs, count=lambda n: n + 1)
    with pytest.raises(Violation, match="changed"):  # the marker counts what it took out
        Checker(dialect).check(c.first, stringify(wrong))
    checker = Checker(dialect)
    checker.check(c.first, stringify(_elided(dialect, c.first, c.stubs)))
    with pytest.raises(Violation, match="came whole"):  # once elided, always
        checker.check(c.second, stringify(c.forwarded(c.second)))
