"""``veil proxy`` as a server on 127.0.0.1, in front of a recording upstream: the stream comes
back byte for byte, the client's credentials go upstream and nowhere else, a context overflow
is evicted harder and retried once, a body Veil cannot read is forwarded as it is, a count is
of the request as it would be sent, and concurrent conversations stay apart."""

from __future__ import annotations

import http.client
import io
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from veil.agent.project import project_scope
from veil.clock import FakeClock
from veil.embed import default_embedder
from veil.proxy.server import Log, ProxyServer, Upstream
from veil.proxy.session import Conversations
from veil.tape import open_store

SSE = (
    b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
    b'{"input_tokens":%d,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"ok"}}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":3}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
KEY = "sk-ant-canary-0123456789abcdef"


@dataclass
class Upstream_:
    """What the recording upstream saw, and how it answers."""

    bodies: list[bytes] = field(default_factory=lambda: [])
    paths: list[str] = field(default_factory=lambda: [])
    keys: list[str] = field(default_factory=lambda: [])
    answers: list[bytes] = field(default_factory=lambda: [])
    overflow_once: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def recording(state: Upstream_) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with state.lock:
                state.bodies.append(body)
                state.paths.append(self.path)
                state.keys.append(self.headers.get("x-api-key", ""))
                overflow = state.overflow_once
                state.overflow_once = False
            if overflow:
                data = b'{"type":"error","error":{"type":"invalid_request_error",'
                data += b'"message":"prompt is too long: 250000 tokens > 200000 maximum"}}'
                self.send_response(400)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if self.path.endswith("/count_tokens"):
                data = json.dumps({"input_tokens": len(body) // 4}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            answer = SSE % (len(body) // 4)  # the request's size, as a provider reports it
            state.answers.append(answer)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for part in (answer[:70], answer[70:]):  # two chunks, split inside an event
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

    return Handler


@dataclass
class Rig:
    upstream: Upstream_
    proxy: ProxyServer
    conversations: Conversations
    log: io.StringIO
    root: Path

    def post(self, path: str, body: bytes | dict[str, Any]) -> tuple[int, bytes]:
        raw = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        conn.request("POST", path, raw, {"content-type": "application/json", "x-api-key": KEY})
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, data


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    yield from make_rig(tmp_path)


@pytest.fixture
def shadow_rig(tmp_path: Path) -> Iterator[Rig]:
    yield from make_rig(tmp_path, shadow=True, batches=True)


def make_rig(tmp_path: Path, *, shadow: bool = False, batches: bool = False) -> Iterator[Rig]:
    state = Upstream_()
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), recording(state))
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
        host="claude",
        shadow=shadow,
    )
    log = io.StringIO()
    proxy = ProxyServer(
        Upstream.parse(f"http://127.0.0.1:{upstream.server_address[1]}"),
        conversations,
        log=Log(log, batches=batches),
    )
    proxy.serve_in_background()
    yield Rig(state, proxy, conversations, log, tmp_path)
    proxy.shutdown()
    proxy.server_close()
    conversations.close()
    upstream.shutdown()
    upstream.server_close()
    store.close()


def conversation(
    steps: int, *, session: str = "s1", task: str = "read the files"
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for k in range(steps):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{session}_{k}", "name": "Read",
             "input": {"file_path": f"/repo/f{k}.py"}}]})  # fmt: skip
        text = "\n".join(f"line {j} of file {k}: value = {j * k}" for j in range(120))
        result = {"type": "tool_result", "tool_use_id": f"toolu_{session}_{k}", "content": text}
        messages.append({"role": "user", "content": [result]})
    return {
        "model": "claude-x",
        "max_tokens": 1000,
        "stream": True,
        "system": [{"type": "text", "text": "You are a coding agent."}],
        "messages": messages,
        "metadata": {"user_id": json.dumps({"session_id": session})},
    }


def stubs(body: bytes) -> list[str]:
    """The results sent with a ``veil://`` pointer: one-line stubs, and the head and tail of
    results the model has not read yet."""
    out: list[str] = []
    for message in json.loads(body)["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and "veil://" in block["content"]:
                out.append(block["content"])
    return out


def test_the_stream_comes_back_byte_for_byte_and_the_key_goes_only_upstream(rig: Rig) -> None:
    status, data = rig.post("/v1/messages", conversation(3))
    assert status == 200 and data == rig.upstream.answers[-1]
    assert rig.upstream.keys == [KEY]
    stored = b"".join(p.read_bytes() for p in (rig.root / ".veil").iterdir() if p.is_file())
    assert KEY.encode() not in stored and KEY not in rig.log.getvalue()


def test_a_long_conversation_is_sent_with_stubs_and_the_rest_unchanged(rig: Rig) -> None:
    for steps in range(1, 25):
        status, _ = rig.post("/v1/messages", conversation(steps))
        assert status == 200
    sent = rig.upstream.bodies[-1]
    original = json.dumps(conversation(24), separators=(",", ":")).encode()
    assert len(sent) < len(original) // 2
    shown = stubs(sent)
    assert sum(s.startswith("[veil: Read — ") for s in shown) >= 10  # the call names the file
    # everything but the stubbed results is as the client sent it
    a, b = json.loads(sent), json.loads(original)
    for m_sent, m_orig in zip(a["messages"], b["messages"], strict=True):
        if m_sent != m_orig:  # a stub, or the head and tail of an unread result: a pointer
            assert "veil://" in m_sent["content"][0]["content"]
            m_sent["content"][0]["content"] = m_orig["content"][0]["content"]
            assert m_sent == m_orig
    assert {k: v for k, v in a.items() if k != "messages"} == {
        k: v for k, v in b.items() if k != "messages"
    }


def test_an_overflow_is_evicted_harder_and_retried_once(rig: Rig) -> None:
    for steps in range(1, 9):  # within the budget: nothing evicted
        rig.post("/v1/messages", conversation(steps))
    assert not stubs(rig.upstream.bodies[-1])
    rig.upstream.overflow_once = True  # the provider counts more than Veil did
    status, data = rig.post("/v1/messages", conversation(9))
    assert status == 200 and data == rig.upstream.answers[-1]
    refused, retried = rig.upstream.bodies[-2:]
    assert len(stubs(retried)) > len(stubs(refused))


def test_a_body_veil_cannot_read_is_forwarded_as_it_is(rig: Rig) -> None:
    status, _ = rig.post("/v1/messages", b'{"model": "claude-x", "messages": "not a list"')
    assert status == 200
    assert rig.upstream.bodies[-1] == b'{"model": "claude-x", "messages": "not a list"'
    assert "forwarded as it is" in rig.log.getvalue()


def test_a_count_is_of_the_request_as_sent_and_never_starts_a_conversation(rig: Rig) -> None:
    count = conversation(24)
    del count["metadata"]  # Claude Code's count requests carry no session
    rig.post("/v1/messages/count_tokens", count)
    assert json.loads(rig.upstream.bodies[-1]) == count  # unknown: forwarded as it is
    for steps in range(1, 25):
        rig.post("/v1/messages", conversation(steps))
    rig.post("/v1/messages/count_tokens", count)
    counted, sent = rig.upstream.bodies[-1], rig.upstream.bodies[-2]
    assert stubs(counted) and stubs(counted) == stubs(sent)  # counted as it was sent
    assert len(rig.conversations._by_key) == 1  # pyright: ignore[reportPrivateUsage]


def test_a_secret_in_a_tool_result_goes_to_the_model_but_is_never_stored(rig: Rig) -> None:
    canary = "AKIA" + "Q3VEILCANARY7XQZ"  # an AWS access key id's shape, not a real key
    body = conversation(3)
    body["messages"][2]["content"][0]["content"] = f"aws_access_key_id = {canary}\n" + "x\n" * 500
    for steps in range(3, 25):
        grown = conversation(steps)
        grown["messages"][2] = body["messages"][2]
        status, _ = rig.post("/v1/messages", grown)
        assert status == 200
    # live, the result went out as the agent sent it; once stubbed, its pointer and never the key
    assert canary.encode() in rig.upstream.bodies[0]
    assert canary.encode() not in rig.upstream.bodies[-1]
    stored = b"".join(p.read_bytes() for p in (rig.root / ".veil").iterdir() if p.is_file())
    assert canary.encode() not in stored and canary not in rig.log.getvalue()
    assert b"[secret:aws-access-key" in stored  # the placeholder is what was kept


def test_concurrent_conversations_stay_apart(rig: Rig) -> None:
    def run(session: str) -> list[bytes]:
        for steps in range(1, 16):
            body = conversation(steps, session=session, task=f"task of {session}")
            status, _ = rig.post("/v1/messages", body)
            assert status == 200
        return []

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, ["a", "b", "c", "d"]))
    for body in rig.upstream.bodies:
        session = json.loads(json.loads(body)["metadata"]["user_id"])["session_id"]
        for message in json.loads(body)["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use":
                    assert block["id"].startswith(f"toolu_{session}_")
    assert "failed" not in rig.log.getvalue()


def test_a_log_line_never_carries_a_secret() -> None:
    stream = io.StringIO()
    canary = "ghp_" + "a8Kd93jfLq0Zx7Bn2Mv5Cc1Rt6Yp4Ws9Ue3H"  # a GitHub token's shape
    Log(stream).once("KeyError", f"rewrite failed (KeyError: {canary!r}); forwarded as it is")
    assert canary not in stream.getvalue() and "[secret:" in stream.getvalue()


def test_a_log_file_has_a_line_per_failure_a_terminal_one_per_kind() -> None:
    """``.veil/proxy.log`` keeps every failure, with its time and the upstream host; on the
    agent's terminal a kind of failure is said once."""
    file, terminal = io.StringIO(), io.StringIO()
    for log in (Log(file, batches=True), Log(terminal, batches=False)):
        log.host = "api.anthropic.com"
        for k in range(3):
            log.once("upstream", f"upstream unreachable ({k})")
    assert file.getvalue().count("veil proxy api.anthropic.com: upstream unreachable") == 3
    assert terminal.getvalue().count("upstream unreachable") == 1


def figures(rig: Rig) -> Any:
    from veil.proxy.ledger import read, total

    assert rig.proxy.wait_idle(10)  # every reply's usage recorded
    return total(read(rig.conversations.store, rig.conversations.scope))


def test_the_figures_are_what_the_upstream_received(rig: Rig) -> None:
    for steps in range(1, 25):
        rig.post("/v1/messages", conversation(steps))
    sums = figures(rig)
    assert sums.requests == 24 == len(rig.upstream.bodies)
    # the upstream reports len(body) // 4 as its input: the forwarded tokens are its count
    assert sums.tokens_sent == sum(len(b) // 4 for b in rig.upstream.bodies)
    assert sums.tokens_agent > 1.5 * sums.tokens_sent
    assert sums.batches >= 1 and sums.stubs >= 10 and sums.results == 24


def test_shadow_mode_forwards_every_byte_as_the_agent_sent_it_and_measures_veil(
    shadow_rig: Rig,
) -> None:
    sent: list[bytes] = []
    for steps in range(1, 25):
        # not Veil's own serialisation: spaces, key order, escapes, all as the agent wrote them
        raw = json.dumps(conversation(steps), indent=1, ensure_ascii=True).encode()
        sent.append(raw)
        status, data = shadow_rig.post("/v1/messages", raw)
        assert status == 200 and data == shadow_rig.upstream.answers[-1]
    assert shadow_rig.upstream.bodies == sent
    sums = figures(shadow_rig)
    # the agent's side is the provider's count; Veil's side is what it would have sent
    assert sums.tokens_agent == sum(len(b) // 4 for b in sent)
    assert sums.batches >= 1 and sums.tokens_sent < 0.7 * sums.tokens_agent
    # the batch is logged as one that would have been sent, with a time and the upstream
    line = next(x for x in shadow_rig.log.getvalue().splitlines() if " batch in " in x)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ veil proxy 127\.0\.0\.1: batch", line)
    assert "would send" in line


def test_shadow_mode_never_retries_a_refusal(shadow_rig: Rig) -> None:
    for steps in range(1, 5):
        shadow_rig.post("/v1/messages", conversation(steps))
    shadow_rig.upstream.overflow_once = True
    status, _ = shadow_rig.post("/v1/messages", conversation(5))
    assert status == 400  # the agent's own request, refused: the agent handles it as it would
    assert len(shadow_rig.upstream.bodies) == 5


def test_veil_stats_and_sessions_show_the_conversations_the_proxy_served(rig: Rig) -> None:
    import subprocess
    import sys

    for steps in range(1, 25):
        rig.post("/v1/messages", conversation(steps))
    for steps in range(1, 4):
        rig.post("/v1/messages", conversation(steps, session="other", task="another task"))
    sums = figures(rig)

    def veil(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "veil.cli.main", *args], cwd=rig.root,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip

    data = json.loads(veil("stats", "--json").stdout)
    assert data["total"]["requests"] == 27 and data["total"]["tokens_sent"] == sums.tokens_sent
    first, second = data["conversations"]
    assert first["host"] == "claude" and first["model"] == "claude-x" and not first["shadow"]
    assert first["requests"] == 24 and second["requests"] == 3
    one = json.loads(veil("stats", "--json", "--session", first["id"][:12]).stdout)
    assert [c["id"] for c in one["conversations"]] == [first["id"]]
    table = veil("stats").stdout
    assert first["id"] in table and "Claude Code sent" in table
    since = [json.loads(veil("stats", "--json", "--since", d).stdout)["total"]["requests"]
             for d in ("2000-01-01", "2999-01-01")]  # fmt: skip
    assert since == [27, 0]  # (the rig's clock is a fake one: a date, not a span)

    bad = veil("stats", "--since", "yesterday-ish")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--since" in bad.stderr
    missing = veil("stats", "--session", "nope")
    assert missing.returncode == 2 and "no proxy conversation nope" in missing.stderr

    listing = veil("sessions").stdout
    assert "THROUGH VEIL" in listing and first["id"] in listing and "claude-x" in listing
    shown = veil("sessions", "show", first["id"][:14])
    assert shown.returncode == 0 and "24 requests" not in shown.stderr
    assert f"conversation {first['id']}" in shown.stdout and "Veil" in shown.stdout
    rig.proxy.shutdown()  # the store is ours alone before erasing from it
    removed = veil("sessions", "rm", second["id"][:14])
    assert removed.returncode == 0, removed.stderr
    left = json.loads(veil("stats", "--json").stdout)
    assert [c["id"] for c in left["conversations"]] == [first["id"]]
