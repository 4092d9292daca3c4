"""The HTTP side of the scripted model server: reading a request, writing a reply.

:func:`handler_class` makes the :class:`~http.server.BaseHTTPRequestHandler` the server's
:class:`~http.server.ThreadingHTTPServer` runs: HTTP/1.1 with keep-alive, a body read whole
(``Content-Length`` or chunked, trailers skipped), every method handed to ``answer`` (the
server decides and records; this module only moves bytes), a reply written with its length or,
for a stream, chunked and flushed piece by piece. A client that hung up mid-reply ends the
connection quietly. Nothing is logged: requests and their headers are recorded by the server,
never printed. Each open connection is kept in :class:`OpenConnections`, so closing the server
can shut down the keep-alive connections a client left open.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from veil.llm.scripted_wire import Reply

Answer = Callable[[str, str, dict[str, str], bytes], Reply]
"""``(method, path, lower-cased headers, raw body) -> reply``."""


class OpenConnections:
    """The sockets of the connections being served (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()

    def opened(self, connection: socket.socket) -> None:
        with self._lock:
            self._sockets.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(connection)

    def shut_down(self) -> None:
        """Shut down every connection still open (a client's idle keep-alive ones included)."""
        with self._lock:
            connections = list(self._sockets)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def handler_class(answer: Answer, connections: OpenConnections) -> type[BaseHTTPRequestHandler]:
    """A handler class that serves every request with ``answer``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 120  # an idle keep-alive connection is closed after this many seconds

        def setup(self) -> None:
            super().setup()
            connections.opened(self.connection)

        def finish(self) -> None:
            connections.closed(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                data = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline().strip():
                            pass  # trailers
                        return bytes(data)
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))

        def _serve(self) -> None:
            raw = self._read_body() if self.command in {"POST", "PUT", "PATCH"} else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = answer(self.command, self.path, headers, raw)
            try:
                self._send(reply)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers:
                self.send_header(name, value)
            if not reply.streamed:
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)
                return
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in reply.pieces:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        do_POST = _serve
        do_GET = _serve
        do_HEAD = _serve
        do_PUT = _serve
        do_PATCH = _serve
        do_DELETE = _serve

        def log_message(self, format: str, *args: object) -> None:
            return  # requests (and their headers) are recorded, never logged

    return Handler


__all__ = ["Answer", "OpenConnections", "handler_class"]
