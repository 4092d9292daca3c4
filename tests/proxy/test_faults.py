"""``veil proxy`` never breaks a session: a real :class:`ProxyServer` on 127.0.0.1 in front of
a misbehaving upstream of our own (a raw socket server that answers byte by byte as each test
tells it: a stream cut after a few events, a body short of its ``Content-Length``, a reset, a
status, a gate it waits at), with real client connections. What the client sees is what it
would see talking to the upstream directly: a cut answer ends in a cut connection (never a
second response, never a hang), an error is relayed as it came, nothing reaches stderr, and the
proxy serves the next request. The paths each host really uses are evicted, and so are bodies
the fast JSON parser refuses (a lone surrogate escape). The same holds for a request that went
out ahead of Veil's bookkeeping (:mod:`veil.proxy.conversation`).

Deterministic: no sleeps; the upstream is told when to go on with events, and a socket timeout
(10 s) only bounds a failure."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import re
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.test_server import conversation, stubs
from veil.agent.project import project_scope
from veil.clock import FakeClock
from veil.embed import default_embedder
from veil.proxy.prepared import Prepared
from veil.proxy.reading import parse
from veil.proxy.server import Log, ProxyServer, Upstream
from veil.proxy.session import Conversations
from veil.tape import open_store

TIMEOUT = 10.0
"""Every socket's timeout: a bound on a failure, never a wait the test relies on."""

EVENT = (
    b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"%d"}}\n\n'
)
START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
    b'{"input_tokens":%d,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}\n\n'
)
STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


# ---- the misbehaving upstream ----------------------------------------------------------------


@dataclass
class Seen:
    """A request as the upstream received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Plan = Callable[[socket.socket, Seen], None]
"""How the upstream answers one request, on its connection (closed after the plan)."""


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def stream(events: int, *, cut: bool = False, gate: threading.Event | None = None) -> Plan:
    """A 200 SSE answer, chunked: ``message_start`` and ``events`` deltas, then the stop and
    the last chunk — or, with ``cut``, the connection closed right after the deltas. ``gate``:
    wait for it after the first delta."""

    def plan(conn: socket.socket, seen: Seen) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + chunk(START % (len(seen.body) // 4))
        )
        for n in range(events):
            conn.sendall(chunk(EVENT % n))
            if n == 0 and gate is not None:
                assert gate.wait(TIMEOUT)
        if not cut:
            conn.sendall(chunk(STOP) + b"0\r\n\r\n")

    return plan


def reset(*, after: bytes = b"", gate: threading.Event | None = None) -> Plan:
    """Send ``after`` (maybe nothing) and wait for ``gate``, then reset the connection (RST,
    not FIN)."""

    def plan(conn: socket.socket, seen: Seen) -> None:
        if after:
            conn.sendall(after)
        if gate is not None:
            assert gate.wait(TIMEOUT)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    return plan


def answer(head: bytes, body: bytes) -> Plan:
    """Exactly these bytes: a status line and headers, then a body."""

    def plan(conn: socket.socket, seen: Seen) -> None:
        conn.sendall(head + b"\r\n\r\n" + body)

    return plan


@dataclass
class RawUpstream:
    """An upstream that answers each request by the next plan queued (default: a whole
    stream), one request per connection, and records what it received."""

    plans: list[Plan] = field(default_factory=lambda: [])
    seen: list[Seen] = field(default_factory=lambda: [])
    lock: threading.Lock = field(default_factory=threading.Lock)
    errors: list[BaseException] = field(default_factory=lambda: [])

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def then(self, *plans: Plan) -> None:
        with self.lock:
            self.plans.extend(plans)

    def _accept(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            if self._stopping:
                conn.close()
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(TIMEOUT)
        try:
            seen = read_request(conn)
            with self.lock:
                self.seen.append(seen)
                plan = self.plans.pop(0) if self.plans else stream(3)
            plan(conn, seen)
        except (ConnectionError, TimeoutError) as exc:
            with self.lock:
                self.errors.append(exc)
        finally:
            conn.close()

    def close(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT).close()
        self._acceptor.join(TIMEOUT)
        for thread in self._threads:
            thread.join(TIMEOUT)
        self.listener.close()


def read_request(conn: socket.socket) -> Seen:
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            raise ConnectionError("closed before a request")
        data += got
    head, body = data.split(b"\r\n\r\n", 1)
    line, *rest = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in rest)}
    length = int(headers.get("content-length") or 0)
    while len(body) < length:
        got = conn.recv(65536)
        if not got:
            raise ConnectionError("closed inside a request body")
        body += got
    method, path, _ = line.split(" ", 2)
    return Seen(method, path, headers, body)


# ---- the rig ---------------------------------------------------------------------------------


@dataclass
class Faults:
    upstream: RawUpstream
    proxy: ProxyServer
    log: io.StringIO
    closed: bool = False

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.proxy.port), timeout=TIMEOUT)

    def send(
        self,
        path: str,
        body: bytes | dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> socket.socket:
        raw = body if isinstance(body, bytes) else compact(body)
        sock = self.connect()
        head = {"host": "127.0.0.1", "content-type": "application/json",
                "content-length": str(len(raw)), **(headers or {})}  # fmt: skip
        lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
        sock.sendall(f"POST {path} HTTP/1.1\r\n{lines}\r\n".encode() + raw)
        return sock

    def post(
        self, path: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """A request over http.client, read to its end."""
        raw = body if isinstance(body, bytes) else compact(body)
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=TIMEOUT)
        conn.request("POST", path, raw, {"content-type": "application/json", **(headers or {})})
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, data

    def stop(self) -> None:
        """Stop the proxy and wait for every handler thread to end (then stderr is final)."""
        if not self.closed:
            self.closed = True
            self.proxy.shutdown()
            self.proxy.server_close()  # joins the handlers' threads

    def lines(self, text: str) -> list[str]:
        return [x for x in self.log.getvalue().splitlines() if text in x]


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[Faults]:
    upstream = RawUpstream()
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
    )
    log = io.StringIO()
    proxy = ProxyServer(
        Upstream.parse(f"http://127.0.0.1:{upstream.port}"), conversations, log=Log(log)
    )
    proxy.serve_in_background()
    rig = Faults(upstream, proxy, log)
    yield rig
    rig.stop()
    conversations.close()
    upstream.close()
    store.close()


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def until_closed(sock: socket.socket) -> bytes:
    """Everything the proxy sends until it closes the connection (a timeout fails the test:
    a connection left open is an agent left hanging)."""
    data = b""
    while True:
        got = sock.recv(65536)
        if not got:
            return data
        data += got


def until(sock: socket.socket, marker: bytes, data: bytes = b"") -> bytes:
    """What the proxy sends until ``marker`` (after ``data``, already received)."""
    while marker not in data:
        got = sock.recv(65536)
        assert got, f"closed before {marker!r}"
        data += got
    return data


def dechunked(body: bytes) -> tuple[bytes, bool]:
    """A chunked body's data, and whether it ended with the last (zero) chunk."""
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out, True
        out += rest[:size]
        body = rest[size + 2 :]
    return out, False


def split(response: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    status, *rest = head.decode("latin-1").split("\r\n")
    return status, {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in rest)}, body


# ---- 1, 2: a cut answer ends in a cut connection ---------------------------------------------


def test_a_stream_the_upstream_cuts_ends_in_a_cut_connection_not_a_second_response(
    faults: Faults, capfd: pytest.CaptureFixture[str]
) -> None:
    faults.upstream.then(stream(3, cut=True))
    with faults.send("/v1/messages", conversation(2)) as sock:
        raw = until_closed(sock)
    status, headers, body = split(raw)
    assert status == "HTTP/1.1 200 OK" and raw.count(b"HTTP/1.1") == 1
    assert headers["transfer-encoding"] == "chunked"
    data, ended = dechunked(body)
    assert not ended  # no last chunk: the client knows the stream was cut
    assert data.endswith(EVENT % 2) and STOP not in data
    # the proxy serves the next request
    assert faults.post("/v1/messages", conversation(3))[0] == 200
    faults.stop()
    assert "Traceback" not in capfd.readouterr().err
    assert len(faults.lines("cut")) == 1 and not faults.lines("unreachable")


def test_a_json_answer_short_of_its_length_ends_in_a_closed_connection(
    faults: Faults, capfd: pytest.CaptureFixture[str]
) -> None:
    whole = b'{"id":"msg_1","type":"message","content":[{"type":"text","text":"hello"}]}'
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d"
    faults.upstream.then(answer(head % len(whole), whole[:30]))
    body = conversation(2) | {"stream": False}
    with faults.send("/v1/messages", body) as sock:
        raw = until_closed(sock)  # not a hang: the connection is closed
    status, headers, data = split(raw)
    assert status == "HTTP/1.1 200 OK" and headers["content-length"] == str(len(whole))
    assert data == whole[:30]  # what came, as it came
    # a refusal is read whole first (is it an overflow?): cut short, it is relayed so too
    refusal = b'{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}'
    head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: %d"
    faults.upstream.then(answer(head % len(refusal), refusal[:20]))
    with faults.send("/v1/messages", body) as sock:
        raw = until_closed(sock)
    status, headers, data = split(raw)
    assert status == "HTTP/1.1 400 Bad Request" and raw.count(b"HTTP/1.1") == 1
    assert headers["content-length"] == str(len(refusal)) and data == refusal[:20]
    assert faults.post("/v1/messages", conversation(3))[0] == 200
    faults.stop()
    assert "Traceback" not in capfd.readouterr().err
    assert len(faults.lines("cut")) == 2  # the log file: one line per failure


def test_a_reset_mid_stream_is_a_cut_stream_and_before_the_answer_one_502(
    faults: Faults, capfd: pytest.CaptureFixture[str]
) -> None:
    head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
    gate = threading.Event()
    faults.upstream.then(reset(after=head + chunk(START % 1) + chunk(EVENT % 0), gate=gate))
    with faults.send("/v1/messages", conversation(2)) as sock:
        started = until(sock, EVENT % 0)  # relayed: now the upstream resets
        gate.set()
        raw = started + until_closed(sock)
    assert raw.count(b"HTTP/1.1") == 1
    data, ended = dechunked(split(raw)[2])
    assert not ended and data.endswith(EVENT % 0)
    # reset before any answer: one 502, in the dialect's error shape
    faults.upstream.then(reset())
    with faults.send("/v1/messages", conversation(2)) as sock:
        sock.shutdown(socket.SHUT_WR)
        raw = until_closed(sock)
    status, _, body = split(raw)
    assert status.startswith("HTTP/1.1 502") and raw.count(b"HTTP/1.1") == 1
    error = json.loads(body)
    assert error["type"] == "error" and error["error"]["type"] == "api_error"
    assert "veil proxy" in error["error"]["message"]
    faults.upstream.then(reset())
    with faults.send("/v1/responses", {"model": "gpt-x", "input": "hi"}) as sock:
        sock.shutdown(socket.SHUT_WR)
        error = json.loads(split(until_closed(sock))[2])
    assert set(error) == {"error"} and error["error"]["message"].startswith("veil proxy")
    faults.stop()
    assert "Traceback" not in capfd.readouterr().err


def test_an_unreachable_upstream_is_one_502_json_error(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    listener.close()  # nothing listens there now
    log = io.StringIO()
    proxy = ProxyServer(Upstream.parse(f"http://127.0.0.1:{port}"), None, log=Log(log))
    proxy.serve_in_background()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=TIMEOUT)
        conn.request("POST", "/v1/chat/completions", b'{"model":"m","messages":[]}')
        response = conn.getresponse()
        error = json.loads(response.read())
        assert response.status == 502 and set(error) == {"error"}
        assert error["error"]["type"] == "server_error"
        assert error["error"]["message"].startswith("veil proxy: upstream unreachable")
        conn.close()
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert log.getvalue().count("upstream unreachable") == 1


# ---- 4: a client that goes away --------------------------------------------------------------


def test_a_client_gone_mid_stream_is_one_log_line_no_traceback_and_closes_the_upstream(
    faults: Faults, capfd: pytest.CaptureFixture[str]
) -> None:
    gate = threading.Event()
    faults.upstream.then(stream(100_000, gate=gate))  # streams on until the proxy hangs up
    with faults.send("/v1/messages", conversation(2)) as sock:
        until(sock, EVENT % 0)
    gate.set()  # the client is gone: the upstream streams on
    faults.stop()
    faults.upstream.close()
    assert faults.upstream.errors  # the proxy closed the upstream's connection mid-stream
    assert "Traceback" not in capfd.readouterr().err
    assert len(faults.lines("client disconnected")) == 1
    assert not faults.lines("unreachable")


def test_a_client_gone_before_its_body_no_traceback(
    faults: Faults, capfd: pytest.CaptureFixture[str]
) -> None:
    with faults.connect() as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\ncontent-length: 1000\r\n\r\n{")
    with faults.connect() as sock:  # a chunked body that is not
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n")
        sock.shutdown(socket.SHUT_WR)
        raw = until_closed(sock)
    assert raw.startswith(b"HTTP/1.1 400") and raw.count(b"HTTP/1.1") == 1
    assert faults.post("/v1/messages", conversation(2))[0] == 200
    faults.stop()
    assert len(faults.upstream.seen) == 1  # a request cut short is never forwarded
    assert len(faults.lines("client disconnected")) == 1
    assert "Traceback" not in capfd.readouterr().err


# ---- errors, slowness, encodings -------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "body"),
    [
        (b"HTTP/1.1 529 Overloaded\r\ncontent-type: application/json\r\nx-request-id: r1",
         b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
        (b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
         b"retry-after: 7\r\nanthropic-ratelimit-requests-remaining: 0",
         b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}'),
        (b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain", b"boom"),
        (b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json",
         b'{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}'),
    ],
)  # fmt: skip
def test_an_upstream_error_is_relayed_byte_for_byte(
    faults: Faults, head: bytes, body: bytes
) -> None:
    faults.upstream.then(answer(head + b"\r\ncontent-length: %d" % len(body), body))
    conn = http.client.HTTPConnection("127.0.0.1", faults.proxy.port, timeout=TIMEOUT)
    conn.request("POST", "/v1/messages", compact(conversation(2)))
    response = conn.getresponse()
    status_line, *lines = head.decode().split("\r\n")
    assert f"{response.status} {response.reason}" == status_line.split(" ", 1)[1]
    assert response.read() == body
    for line in lines:
        key, value = line.split(": ", 1)
        assert response.getheader(key) == value
    conn.close()


def test_an_error_inside_a_stream_is_relayed_and_the_stream_ends(faults: Faults) -> None:
    error = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n'
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked"
    faults.upstream.then(answer(head, chunk(START % 1) + chunk(error) + b"0\r\n\r\n"))
    status, data = faults.post("/v1/messages", conversation(2))
    assert status == 200 and data == START % 1 + error


def test_a_slow_upstream_never_blocks_another_client(faults: Faults) -> None:
    gate = threading.Event()
    faults.upstream.then(stream(3, gate=gate))
    with faults.send("/v1/messages", conversation(2, session="slow")) as slow:
        started = until(slow, EVENT % 0)  # the slow answer has started; it waits at its gate
        status, data = faults.post("/v1/messages", conversation(2, session="quick"))
        assert status == 200 and data.endswith(STOP)  # served meanwhile
        gate.set()
        data, ended = dechunked(split(until(slow, b"0\r\n\r\n", started))[2])
    assert ended and data.endswith(STOP)


def test_a_gzip_answer_keeps_its_content_encoding(faults: Faults) -> None:
    body = gzip.compress(b'{"ok":true}')
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip"
    faults.upstream.then(answer(head + b"\r\ncontent-length: %d" % len(body), body))
    conn = http.client.HTTPConnection("127.0.0.1", faults.proxy.port, timeout=TIMEOUT)
    conn.request("POST", "/v1/messages", compact(conversation(2) | {"stream": False}))
    response = conn.getresponse()
    assert response.getheader("content-encoding") == "gzip"
    assert gzip.decompress(response.read()) == b'{"ok":true}'
    conn.close()


def test_a_compressed_request_body_is_read_or_forwarded_unchanged(faults: Faults) -> None:
    zstandard: Any = pytest.importorskip("zstandard")
    for steps in range(1, 25):  # gzip: read, evicted, forwarded decoded
        raw = gzip.compress(compact(conversation(steps)))
        assert faults.post("/v1/messages", raw, {"content-encoding": "gzip"})[0] == 200
    sent = faults.upstream.seen[-1]
    assert "content-encoding" not in sent.headers and stubs(sent.body)
    raw = zstandard.ZstdCompressor().compress(compact(conversation(24, session="z")))
    assert faults.post("/v1/messages", raw, {"content-encoding": "zstd"})[0] == 200
    assert stubs(faults.upstream.seen[-1].body)  # zstd: read too
    for encoding, garbage in (("zstd", b"\x28\xb5\x2f\xfd not zstd"), ("br", b"\x0b\x01\x80")):
        assert faults.post("/v1/messages", garbage, {"content-encoding": encoding})[0] == 200
        sent = faults.upstream.seen[-1]  # cannot be decoded: forwarded as it came
        assert sent.body == garbage and sent.headers["content-encoding"] == encoding
    # a chunked request body is read like any other
    conn = http.client.HTTPConnection("127.0.0.1", faults.proxy.port, timeout=TIMEOUT)
    data = compact(conversation(3, session="chunked"))
    conn.request("POST", "/v1/messages", iter([data[:100], data[100:]]), encode_chunked=True)
    assert conn.getresponse().read().endswith(STOP)
    assert faults.upstream.seen[-1].body == data
    conn.close()


# ---- 3: a body the fast parser refuses -------------------------------------------------------


def stringify(value: Any) -> bytes:
    """JSON as JavaScript's ``JSON.stringify`` writes it: compact, non-ASCII as UTF-8, a lone
    surrogate as its ``\\uXXXX`` escape."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text).encode()


def test_a_lone_surrogate_is_read_evicted_and_kept_byte_for_byte(faults: Faults) -> None:
    cut = "an emoji cut in half: \ud83d"  # what JSON.stringify writes of a string cut mid-emoji

    def body(steps: int) -> dict[str, Any]:
        b = conversation(steps, session="surrogate", task=f"read the files {cut} 😀")
        b["messages"][2]["content"][0]["content"] += cut  # an early result: evicted
        if steps > 3:  # a later result: kept as it is
            b["messages"][6]["content"][0]["content"] += cut
        return b

    for steps in range(1, 25):
        raw = stringify(body(steps))
        assert b"\\ud83d" in raw and faults.post("/v1/messages", raw)[0] == 200
    sent = faults.upstream.seen[-1].body
    shown = stubs(sent)
    assert len(shown) >= 10  # evicted like any other conversation
    value = json.loads(sent)
    assert stringify(value) == sent  # written as the client writes it, escapes included
    original = body(24)
    for m_sent, m_orig in zip(value["messages"], original["messages"], strict=True):
        if m_sent != m_orig:
            assert "veil://" in m_sent["content"][0]["content"]
            m_sent["content"][0]["content"] = m_orig["content"][0]["content"]
    assert stringify(value) == stringify(original)  # every other byte as the client sent it
    assert value["messages"][6]["content"][0]["content"].endswith(cut)
    assert "forwarded as it is" not in faults.log.getvalue()


def test_a_stub_and_a_whole_body_rewrite_keep_a_lone_surrogate_escaped() -> None:
    from veil.proxy.reading import Reader, parse
    from veil.proxy.wire import dumps, splice

    assert dumps("x\ud83dy") == b'"x\\ud83dy"' and dumps("😀") == '"😀"'.encode()
    body = {"model": "m", "messages": [
        {"role": "user", "content": "task \ud83d"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                           "input": {"file_path": "/a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "result \ud83d"}]}]}  # fmt: skip
    raw = stringify(body)
    request = parse("anthropic", raw, {}, Reader())
    assert request.results[0].value == "result \ud83d"
    spliced = splice(request, raw, {0: "stub \ud83d"})
    assert spliced.exact
    assert spliced.body == raw.replace(b'"result \\ud83d"', b'"stub \\ud83d"')
    # written spaced and ASCII-only (Python's json.dumps): still spliced in place
    spaced = json.dumps(body).encode()
    request = parse("anthropic", spaced, {}, Reader())
    again = splice(request, spaced, {0: "stub"})
    assert again.exact
    assert again.body == spaced.replace(b'"result \\ud83d"', b'"stub"')
    # a content too far from its id to be its own: the rewrite is whole, and still escapes it
    block = body["messages"][2]["content"][0]
    block["padding"] = "p" * 400
    block["content"] = block.pop("content")  # after the padding
    far = stringify(body)
    request = parse("anthropic", far, {}, Reader())
    whole = splice(request, far, {0: "stub"})
    assert not whole.exact and b'"task \\ud83d"' in whole.body
    assert json.loads(whole.body)["messages"][2]["content"][0]["content"] == "stub"


# ---- 5: every path a host uses ---------------------------------------------------------------


def lines_of(k: int) -> str:
    return "\n".join(f"line {j} of file {k}: value = {j * k}" for j in range(120))


def responses_body(steps: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    ]
    for k in range(steps):
        args = json.dumps({"command": ["cat", f"f{k}.py"]})
        items.append({"type": "function_call", "name": "shell", "arguments": args,
                      "call_id": f"call_{k}"})  # fmt: skip
        items.append({"type": "function_call_output", "call_id": f"call_{k}",
                      "output": lines_of(k)})  # fmt: skip
    return {"model": "gpt-5-codex", "instructions": "You are Codex.", "input": items,
            "stream": True, "prompt_cache_key": "codex-session"}  # fmt: skip


def chat_body(steps: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You code."},
                                      {"role": "user", "content": "go"}]  # fmt: skip
    for k in range(steps):
        function = {"name": "read_file", "arguments": json.dumps({"path": f"f{k}"})}
        call = {"id": f"call_{k}", "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": lines_of(k)})
    return {"model": "gpt-x", "messages": messages, "stream": True, "user": "chat-session"}


@pytest.mark.parametrize(
    ("path", "make"),
    [
        ("/v1/messages?beta=true", conversation),
        ("/v1/responses", responses_body),
        ("/responses", responses_body),
        ("/backend-api/codex/responses", responses_body),
        ("/v1/chat/completions", chat_body),
        ("/openai/deployments/gpt/chat/completions?api-version=2024-10-21", chat_body),
    ],
)
def test_every_path_a_host_uses_is_evicted(
    faults: Faults, path: str, make: Callable[[int], dict[str, Any]]
) -> None:
    for steps in range(1, 25):
        assert faults.post(path, make(steps))[0] == 200
    assert {s.path for s in faults.upstream.seen} == {path}  # as the client sent it
    sent = faults.upstream.seen[-1].body
    assert sent.count(b"veil://") >= 10 and len(sent) < len(compact(make(24))) // 2


def test_concurrent_cut_streams_each_end_in_their_own_cut_connection(faults: Faults) -> None:
    faults.upstream.then(*(stream(k, cut=True) for k in range(1, 9)))

    def one(k: int) -> bytes:
        with faults.send("/v1/messages", conversation(2, session=f"c{k}")) as sock:
            return until_closed(sock)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(8)))
    for raw in answers:
        assert raw.count(b"HTTP/1.1") == 1 and split(raw)[0] == "HTTP/1.1 200 OK"
        data, ended = dechunked(split(raw)[2])
        assert not ended and data.startswith(START[:20]) and data.endswith(b"}}\n\n")
    assert faults.post("/v1/messages", conversation(3))[0] == 200


# ---- a request that went out ahead of Veil's bookkeeping ------------------------------------


def test_an_error_or_a_cut_stream_for_a_request_that_went_ahead_reaches_the_client_as_it_came(
    faults: Faults,
) -> None:
    """A 529 and a stream the upstream cuts, each for a request that went out ahead of its
    bookkeeping: relayed as they came, the bookkeeping done all the same, the next request
    served."""
    assert faults.post("/v1/messages", conversation(1))[0] == 200
    assert faults.proxy.wait_idle(10)
    seen: list[Prepared] = []
    faults.proxy.on_prepared = seen.append
    error = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    head = b"HTTP/1.1 529 Overloaded\r\ncontent-type: application/json"
    faults.upstream.then(answer(head + b"\r\ncontent-length: %d" % len(error), error))
    assert faults.post("/v1/messages", conversation(2)) == (529, error)
    faults.upstream.then(stream(3, cut=True))
    with faults.send("/v1/messages", conversation(3)) as sock:
        got = until_closed(sock)
    assert split(got)[0] == "HTTP/1.1 200 OK" and not dechunked(split(got)[2])[1]
    assert faults.proxy.wait_idle(10)
    conversations = faults.proxy.conversations
    assert conversations is not None
    known = conversations.known(parse("anthropic", compact(conversation(3)), {}))
    assert known is not None and known.pending is None  # both bookkeepings done
    assert all(known.engine.items_for_call(f"toolu_s1_{k}") for k in range(3))
    assert faults.post("/v1/messages", conversation(4))[0] == 200
    assert faults.proxy.wait_idle(10)
    # the three forwarded after the first went out ahead: each the client's bytes
    forwarded = [s.body for s in faults.upstream.seen[1:]]
    assert forwarded == [compact(conversation(k)) for k in (2, 3, 4)]
    assert [p.ahead for p in seen] == [True, True, True]
    assert not faults.lines("bookkeeping") and not faults.lines("ahead")
