"""A recording relay on 127.0.0.1 for the real-binary tests: forwards every request to its
target as it came (method, path, headers but the hop ones, body bytes) and the answer back,
keeping each request's raw body. Two of them around Veil's proxy show what the agent sent and
what the provider received, byte for byte, without trusting the proxy's own account.

The target is read from ``target_file`` at each request when given (a wrapper script writes
there the URL ``veil claude`` gave the agent), else ``target``.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}


class Relay:
    def __init__(self, target: str = "", *, target_file: Path | None = None) -> None:
        self.target = target
        self.target_file = target_file
        self.bodies: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with relay._lock:
                    relay.bodies.append((self.path, body))
                relay.forward(self, body)

            def do_GET(self) -> None:
                relay.forward(self, b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()

    def forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        target = self.target_file.read_text().strip() if self.target_file else self.target
        parts = urlsplit(target)
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=120)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP}
        path = parts.path.rstrip("/") + handler.path if parts.path else handler.path
        conn.request(handler.command, path, body, headers)
        response = conn.getresponse()
        data = response.read()
        handler.send_response(response.status)
        for k, v in response.getheaders():
            if k.lower() not in HOP:
                handler.send_header(k, v)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        conn.close()

    def posted(self) -> list[bytes]:
        """The bodies of the model requests (not token counts), in arrival order."""
        with self._lock:
            return [b for p, b in self.bodies if p.split("?")[0].endswith("/messages")]
