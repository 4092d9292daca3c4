"""A small HTTP server on 127.0.0.1 that speaks the providers' wire formats.

Each test queues the replies the server should give (status, headers, body — an SSE stream for
a streamed reply) and afterwards reads what the real SDK sent (:attr:`WireServer.seen`). Nothing
in the SDKs is patched: the providers talk HTTP to this server exactly as to the real APIs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

RECORDINGS = Path(__file__).parent / "recordings"


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def recording(name: str) -> Reply:
    """A recorded SSE stream from tests/llm/recordings/."""
    return Reply(200, (RECORDINGS / name).read_bytes(), "text/event-stream")


def openai_sse(chunks: list[dict[str, Any]]) -> Reply:
    """chat.completions streaming: ``data: {chunk}`` lines, then ``data: [DONE]``."""
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Reply(200, text.encode(), "text/event-stream")


def anthropic_sse(events: list[dict[str, Any]]) -> Reply:
    """Messages streaming: ``event: TYPE`` / ``data: {event}`` pairs."""
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Reply(200, text.encode(), "text/event-stream")


def json_reply(status: int, body: object, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(status, json.dumps(body).encode(), "application/json", headers)


@dataclass
class WireServer:
    """Serves queued replies in order (the last one repeats) and records every request."""

    url: str = ""
    replies: list[Reply] = field(default_factory=lambda: [])
    seen: list[Seen] = field(default_factory=lambda: [])
    lock: threading.Lock = field(default_factory=threading.Lock)

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self) -> Reply:
        with self.lock:
            if not self.replies:
                return json_reply(500, {"error": {"message": "no reply queued"}})
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def _handler(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server.lock:
                server.seen.append(Seen(self.path, headers, json.loads(raw or b"{}")))
            reply = server.next_reply()
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@dataclass
class Sleeps:
    """An injected sleep that records the waits instead of sleeping."""

    waits: list[float] = field(default_factory=lambda: [])

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()
