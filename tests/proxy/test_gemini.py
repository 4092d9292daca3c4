"""``veil proxy`` in front of a Gemini upstream (``…/models/M:streamGenerateContent?alt=sse``),
driven with a growing Gemini CLI conversation at a small window: every request is forwarded,
old ``functionResponse`` parts are stubbed with a valid ``response`` object, thought parts and
their signatures go out byte for byte, a stub once sent stays the same, the model is read from
the path, usage from the SSE answer, and an overflow refusal is evicted harder and retried."""

from __future__ import annotations

import http.client
import io
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from veil.agent.project import project_scope
from veil.clock import FakeClock
from veil.embed import default_embedder
from veil.proxy.reading import Reader, parse
from veil.proxy.server import Log, ProxyServer, Upstream
from veil.proxy.session import Conversations, Prepared
from veil.proxy.wire import splice
from veil.tape import open_store

Json = dict[str, Any]
PATH = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
OVERFLOW = (
    b'{"error":{"code":400,"message":"The input token count (250000) exceeds the maximum '
    b'number of tokens allowed (200000).","status":"INVALID_ARGUMENT"}}'
)


@dataclass
class Seen:
    bodies: list[bytes] = field(default_factory=lambda: [])
    paths: list[str] = field(default_factory=lambda: [])
    answers: list[bytes] = field(default_factory=lambda: [])
    overflow_once: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def answer(prompt: int) -> bytes:
    """A streamGenerateContent answer: two chunks, each with ``usageMetadata`` (the last holds
    the totals)."""
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "o"}]}}],
             "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 1}}  # fmt: skip
    last = {"candidates": [{"content": {"role": "model", "parts": [{"text": "k"}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": prompt, "cachedContentTokenCount": 100,
                              "candidatesTokenCount": 2, "thoughtsTokenCount": 5}}  # fmt: skip
    return b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in (first, last))


def handler(seen: Seen) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with seen.lock:
                seen.bodies.append(body)
                seen.paths.append(self.path)
                overflow, seen.overflow_once = seen.overflow_once, False
            if overflow:
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(OVERFLOW)))
                self.end_headers()
                self.wfile.write(OVERFLOW)
                return
            data = answer(len(body) // 4)
            seen.answers.append(data)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@dataclass
class Rig:
    seen: Seen
    proxy: ProxyServer
    conversations: Conversations
    prepared: list[Prepared]
    usages: list[dict[str, int]]

    def post(self, body: Json, path: str = PATH) -> tuple[int, bytes]:
        raw = json.dumps(body, separators=(",", ":")).encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        conn.request("POST", path, raw, {"content-type": "application/json",
                                         "x-goog-api-key": "AIza-canary"})  # fmt: skip
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, data


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    seen = Seen()
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), handler(seen))
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    (tmp_path / ".veil").mkdir()
    embedder = default_embedder()
    store = open_store(f"sqlite:///{tmp_path / '.veil' / 'context.db'}", embedder=embedder)
    conversations = Conversations(
        store,
        scope=project_scope(tmp_path),
        root=tmp_path,
        window=12_000,
        clock=FakeClock(),
        embedder=embedder,
        host="gemini",
    )
    usages: list[dict[str, int]] = []
    reported = conversations.reported

    def spy(prepared: Prepared, usage: Any, **kw: Any) -> None:
        usages.append(dict(usage))
        reported(prepared, usage, **kw)

    conversations.reported = spy  # type: ignore[method-assign]
    prepared: list[Prepared] = []
    proxy = ProxyServer(
        Upstream.parse(f"http://127.0.0.1:{upstream.server_address[1]}"),
        conversations,
        log=Log(io.StringIO()),
        on_prepared=prepared.append,
    )
    proxy.serve_in_background()
    yield Rig(seen, proxy, conversations, prepared, usages)
    proxy.shutdown()
    proxy.server_close()
    conversations.close()
    upstream.shutdown()
    upstream.server_close()
    store.close()


def conversation(steps: int, *, ids: bool = True) -> Json:
    """Gemini CLI's request after ``steps`` reads: the model's calls carry no id (the API gave
    none); each functionResponse carries the CLI's own call id, or none (``ids=False``)."""
    contents: list[Json] = [{"role": "user", "parts": [{"text": "read the files"}]}]
    for k in range(steps):
        contents.append({"role": "model", "parts": [
            {"text": f"thinking about f{k}", "thought": True, "thoughtSignature": f"sig{k}=="},
            {"functionCall": {"name": "read_file", "args": {"absolute_path": f"/repo/f{k}.py"}}},
        ]})  # fmt: skip
        text = "\n".join(f"line {j} of file {k}: value = {j * k}" for j in range(120))
        response: Json = {"name": "read_file", "response": {"output": text}}
        if ids:
            response = {"id": f"read_file-{k}-abc", **response}
        contents.append({"role": "user", "parts": [{"functionResponse": response}]})
    return {
        "contents": contents,
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [{"name": "read_file", "parameters": {}}]}],
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
    }


def responses(body: bytes) -> list[Json]:
    return [
        part["functionResponse"]
        for content in json.loads(body)["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]


def stubbed(body: bytes) -> list[Json]:
    return [r for r in responses(body) if "veil://" in json.dumps(r["response"])]


@pytest.mark.parametrize("ids", [True, False])
def test_a_growing_conversation_is_forwarded_with_valid_stubs(rig: Rig, ids: bool) -> None:
    for steps in range(1, 25):
        status, data = rig.post(conversation(steps, ids=ids))
        assert status == 200 and data == rig.seen.answers[-1]
    assert rig.seen.paths == [PATH] * 24
    sent, original = rig.seen.bodies[-1], conversation(24, ids=ids)
    assert len(sent) < len(json.dumps(original, separators=(",", ":"))) // 2
    stubs = stubbed(sent)
    assert len(stubs) >= 10
    for stub in stubs:  # a valid functionResponse: its name, its id, an object response
        assert set(stub["response"]) == {"output"} and isinstance(stub["response"]["output"], str)
        assert stub["name"] == "read_file" and ("id" in stub) == ids
    # everything but the stubbed responses is as the client sent it
    a = json.loads(sent)
    for c_sent, c_orig in zip(a["contents"], original["contents"], strict=True):
        if c_sent != c_orig:
            (part,) = c_sent["parts"]
            assert "veil://" in part["functionResponse"]["response"]["output"]
            part["functionResponse"]["response"] = c_orig["parts"][0]["functionResponse"][
                "response"
            ]
            assert c_sent == c_orig
    assert {k: v for k, v in a.items() if k != "contents"} == {
        k: v for k, v in original.items() if k != "contents"
    }
    # and every request spliced in place, with the CLI's ids or without any
    assert rig.prepared and all(p.exact for p in rig.prepared)


def test_without_ids_parallel_calls_of_one_name_are_each_found_in_their_place() -> None:
    """Two calls of one tool in one model turn, no ids (the Python SDK's bodies): each
    response is found after its name, in order, whichever is stubbed."""
    body = {"contents": [
        {"role": "user", "parts": [{"text": "read both"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "read_file", "args": {"path": "a"}}},
            {"functionCall": {"name": "read_file", "args": {"path": "b"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "read_file", "response": {"output": "A" * 300}}},
            {"functionResponse": {"name": "read_file", "response": {"output": "B" * 300}}}]},
        {"role": "model", "parts": [{"text": "both read"}]},
        {"role": "user", "parts": [{"text": "go on"}]}]}  # fmt: skip
    for layout in ({"separators": (",", ":")}, {}):  # compact, and Python's json.dumps
        raw = json.dumps(body, **layout).encode()  # type: ignore[arg-type]
        request = parse("gemini", raw, {}, Reader())
        assert [r.call_id for r in request.results] == ["read_file#1.0", "read_file#1.1"]
        for k, letter in ((0, b"A"), (1, b"B")):
            spliced = splice(request, raw, {k: "[veil: stub]"})
            assert spliced.exact
            old = json.dumps({"output": letter.decode() * 300}, **layout).encode()  # type: ignore[arg-type]
            assert spliced.body == raw.replace(old, b'{"output":"[veil: stub]"}')


def test_thoughts_and_their_signatures_go_out_byte_for_byte(rig: Rig) -> None:
    for steps in range(1, 25):
        rig.post(conversation(steps))
    sent = rig.seen.bodies[-1]
    assert stubbed(sent)
    for content in conversation(24)["contents"]:
        if content["role"] == "model":
            assert json.dumps(content, separators=(",", ":")).encode() in sent


def test_a_stub_once_sent_stays_the_same(rig: Rig) -> None:
    sent: dict[str, str] = {}
    for steps in range(1, 25):
        rig.post(conversation(steps))
        for stub in stubbed(rig.seen.bodies[-1]):
            text = json.dumps(stub, separators=(",", ":"))
            assert sent.setdefault(stub["id"], text) == text
    assert len(sent) >= 10


def test_the_model_comes_from_the_path_and_usage_from_the_stream(rig: Rig) -> None:
    for steps in range(1, 4):
        rig.post(conversation(steps))
    rig.post(conversation(4), path="/v1/models/gemini-2.5-flash:generateContent")
    assert [p.model for p in rig.prepared] == ["gemini-2.5-pro"] * 3 + ["gemini-2.5-flash"]
    assert rig.proxy.wait_idle(10)  # the last answer's usage is read as it is relayed
    assert len(rig.usages) == 4
    prompt = len(rig.seen.bodies[-1]) // 4
    assert rig.usages[-1] == {"input_tokens": prompt, "cache_read": 100, "output_tokens": 7}


def test_an_overflow_refusal_is_evicted_harder_and_retried(rig: Rig) -> None:
    for steps in range(1, 9):
        rig.post(conversation(steps))
    assert not stubbed(rig.seen.bodies[-1])
    rig.seen.overflow_once = True
    status, data = rig.post(conversation(9))
    assert status == 200 and data == rig.seen.answers[-1]
    refused, retried = rig.seen.bodies[-2:]
    assert len(stubbed(retried)) > len(stubbed(refused))


@pytest.mark.parametrize("ids", [True, False])
def test_a_splice_is_byte_exact_with_ids_and_without(ids: bool) -> None:
    """With the CLI's ids on the functionResponses, a stub replaces only its ``response``'s
    bytes; without any id (the call and its response are then paired by name and order: the
    same ``NAME#T.N`` id on both sides), too — the response is found after its name."""
    raw = json.dumps(conversation(3, ids=ids), separators=(",", ":")).encode()
    request = parse("gemini", raw, {}, Reader())
    calls = [c.id for f in request.found for c in f.calls]
    assert [r.call_id for r in request.results] == calls
    assert calls == (
        [f"read_file-{k}-abc" for k in range(3)]
        if ids
        else [f"read_file#{2 * k + 1}.0" for k in range(3)]
    )
    spliced = splice(request, raw, {1: "[veil: stub]"})
    assert spliced.exact
    expected = conversation(3, ids=ids)
    expected["contents"][4]["parts"][0]["functionResponse"]["response"] = {"output": "[veil: stub]"}
    assert spliced.body == json.dumps(expected, separators=(",", ":")).encode()


def test_a_token_count_is_forwarded_as_sent_and_starts_no_conversation(rig: Rig) -> None:
    """``…/models/M:countTokens`` (Gemini CLI counts a new message holding media) is a count:
    forwarded byte for byte, never a conversation of its own, never stubbed."""
    rig.post(conversation(20))
    known = len(rig.conversations._by_key)  # pyright: ignore[reportPrivateUsage]
    prepared = len(rig.prepared)
    count = {"contents": [{"role": "user", "parts": [{"text": "x" * 4000}]}]}
    path = "/v1beta/models/gemini-2.5-pro:countTokens"
    status, _ = rig.post(count, path)
    assert status == 200 and rig.seen.paths[-1] == path
    assert rig.seen.bodies[-1] == json.dumps(count, separators=(",", ":")).encode()
    assert len(rig.conversations._by_key) == known  # pyright: ignore[reportPrivateUsage]
    assert len(rig.prepared) == prepared  # not read as a request to rewrite
