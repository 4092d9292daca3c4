"""``veil proxy``: an HTTP server on 127.0.0.1 between a coding agent and its model provider,
applying Veil's working memory to every request (:mod:`veil.proxy.session`).

- **Routes.** ``POST /v1/messages`` (and ``/v1/messages/count_tokens``: the count of the
  request as it would be forwarded, for a conversation the proxy keeps — a count never starts
  one), ``/v1/responses`` and ``/v1/chat/completions`` are rewritten; anything
  else is forwarded as it is. The upstream gets the client's headers — its credentials
  included, never stored or logged — and the path as the client sent it, on the upstream's
  origin (the client's base URL carries the upstream's path: :func:`client_base`).
- **Streaming.** The upstream's answer goes back as received, chunk by chunk, without
  buffering; its usage is read on the side (SSE ``message_start``/``message_delta``,
  ``response.completed``, a final Chat chunk, or the JSON body) to calibrate the count and
  record the cache figures. Requests ask the upstream for an uncompressed answer so that the
  side reading works; a compressed request body (Codex sends zstd) is decoded to be read.
- **Errors.** An upstream error passes through unchanged, except a context overflow ("prompt
  is too long", ``context_length_exceeded``): the conversation is evicted harder and the
  request retried once.
- **Fail-open.** Anything that goes wrong inside Veil's rewrite forwards the original request
  unchanged, with one line on stderr per kind of failure. Requests are served concurrently
  (the main agent, its subagents, side calls); each conversation is rewritten under its own
  lock.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import socket
import sys
import threading
import zlib
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO, cast
from urllib.parse import urlsplit

from veil.dialects.overflow import is_overflow_text
from veil.proxy.reading import parse
from veil.proxy.session import Conversations, Prepared
from veil.proxy.wire import ROUTES, Api, WireError

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
    }
)
UPSTREAM_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Upstream:
    scheme: str
    host: str
    port: int
    path: str
    """The upstream base URL's path (``/v1`` for OpenAI-style bases, empty for Anthropic)."""

    @classmethod
    def parse(cls, url: str) -> Upstream:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream {url!r}: not an http(s) URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    def connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=UPSTREAM_TIMEOUT_S)
        return http.client.HTTPConnection(self.host, self.port, timeout=UPSTREAM_TIMEOUT_S)

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"


def client_base(proxy_port: int, upstream: Upstream) -> str:
    """The base URL a client uses to reach ``upstream`` through the proxy: the proxy's origin
    with the upstream's path (a client appends ``/responses`` to ``…/v1``)."""
    return f"http://127.0.0.1:{proxy_port}{upstream.path}"


class Log:
    """Veil's proxy log: one line per kind of failure, and (to a log file) one line per batch,
    each with a timestamp; redacted like everything Veil writes. On a terminal (``veil proxy``'s
    stderr) batches are not logged: the agent's terminal stays quiet."""

    def __init__(self, stream: TextIO | None = None, *, batches: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.batches = (self.stream is not sys.stderr) if batches is None else batches
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def once(self, kind: str, message: str) -> None:
        with self._lock:
            if kind in self._seen:
                return
            self._seen.add(kind)
        self._write(message)

    def line(self, message: str) -> None:
        """A line for the log file (a batch); nothing on a terminal."""
        if self.batches:
            self._write(message)

    def _write(self, message: str) -> None:
        from datetime import UTC, datetime

        from veil.redaction import redact  # a failure's text may quote what it failed on

        stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        with self._lock:
            print(f"{stamp} veil proxy: {redact(message).text}", file=self.stream, flush=True)


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        upstream: Upstream,
        conversations: Conversations | None,
        *,
        port: int = 0,
        log: Log | None = None,
        on_prepared: Callable[[Prepared], None] | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", port), ProxyHandler)
        self.upstream = upstream
        self.conversations = conversations
        self.log = log or Log()
        self.on_prepared = on_prepared
        self._active = 0
        self._idle = threading.Condition()

    @contextlib.contextmanager
    def serving(self) -> Generator[None]:
        """Counts a request being served (for :meth:`wait_idle`)."""
        with self._idle:
            self._active += 1
        try:
            yield
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is being served (its usage recorded), at most ``timeout``
        seconds; False when one still is. The agent may exit as soon as it has read the last
        reply, before the proxy recorded what the provider said of it."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def serve_in_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="veil-proxy", daemon=True)
        thread.start()
        return thread


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ProxyServer  # pyright: ignore[reportIncompatibleVariableOverride]

    def log_message(self, format: str, *args: Any) -> None:
        return None  # no access log: paths and timings only matter when something fails

    def do_GET(self) -> None:
        self._forward(b"")

    def do_POST(self) -> None:
        self._forward(self._body())

    do_PUT = do_POST
    do_DELETE = do_GET

    # ---- the request ---------------------------------------------------------------------

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self, raw: bytes) -> None:
        with self.server.serving():
            self._serve(raw)

    def _serve(self, raw: bytes) -> None:
        path = self.path
        route = path.split("?", 1)[0]
        counting = route.endswith("/count_tokens")
        if counting:
            route = route[: -len("/count_tokens")]
        api: Api | None = next((a for suffix, a in ROUTES.items() if route.endswith(suffix)), None)
        body, encoded = _decoded(raw, self.headers.get("content-encoding", ""))
        source = body  # decoded: what a retry is prepared from again
        prepared: Prepared | None = None
        request = None
        if api is not None and self.command == "POST" and self.server.conversations is not None:
            try:
                request = parse(api, body, _lower(self.headers))
                conversations = self.server.conversations
                # a count is of the request as it would be sent: a conversation the proxy
                # keeps is rendered as it is; a count never starts one
                known = conversations.known(request) if counting else None
                if not counting or known is not None:
                    prepared = conversations.prepare(request, body, conversation=known)
                    body, encoded = prepared.body, False
                    if prepared.shadow:  # measured only: the agent's bytes, as they came
                        body, encoded = raw, True
                    if prepared.note:
                        self.server.log.once(f"note:{prepared.conversation}", prepared.note)
                    if prepared.batch and not counting:
                        self.server.log.line(_batch_line(prepared, self.server.upstream))
                    if self.server.on_prepared is not None:
                        self.server.on_prepared(prepared)
            except WireError as exc:
                self.server.log.once("wire", f"{exc}; forwarded as it is")
            except Exception as exc:
                self.server.log.once(
                    type(exc).__name__,
                    f"rewrite failed ({type(exc).__name__}: {exc}); forwarded as it is",
                )
                body, encoded = raw, True
        if encoded:
            body = raw
        try:
            self._send_upstream(body, api, prepared, request, source=source, encoded=encoded)
        except (OSError, http.client.HTTPException) as exc:
            self.server.log.once("upstream", f"upstream unreachable: {exc}")
            self._reply(502, {"error": {"type": "proxy_error", "message": f"veil proxy: {exc}"}})

    def _send_upstream(
        self,
        body: bytes,
        api: Api | None,
        prepared: Prepared | None,
        request: Any,
        *,
        source: bytes,
        encoded: bool,
    ) -> None:
        upstream = self.server.upstream
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Host"] = upstream.host_header
        headers["Accept-Encoding"] = "identity"
        if encoded and self.headers.get("content-encoding"):
            headers["Content-Encoding"] = self.headers["content-encoding"]
        connection = upstream.connect()
        try:
            connection.request(self.command, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            if (
                response.status in (400, 413)
                and prepared is not None
                and not prepared.shadow
                and request is not None
                and self.server.conversations is not None
            ):
                error = response.read()
                if _overflow(error):
                    conversations = self.server.conversations
                    conversations.overflowed(prepared, error[:4096].decode("utf-8", "replace"))
                    retried = conversations.prepare(request, source, overflow=True)
                    connection.close()
                    connection = upstream.connect()
                    connection.request(self.command, self.path, body=retried.body, headers=headers)
                    response = connection.getresponse()
                    prepared = retried
                else:
                    self._relay_buffered(response, error)
                    return
            self._relay(response, api, prepared)
        finally:
            connection.close()

    # ---- the response --------------------------------------------------------------------

    def _relay_buffered(self, response: http.client.HTTPResponse, data: bytes) -> None:
        self.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _relay(
        self, response: http.client.HTTPResponse, api: Api | None, prepared: Prepared | None
    ) -> None:
        self.send_response_only(response.status, response.reason)
        length = response.getheader("content-length")
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if length is not None:
            self.send_header("Content-Length", length)
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sniffer = UsageSniffer() if prepared is not None and response.status == 200 else None
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            if length is not None:
                self.wfile.write(chunk)
            else:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            if sniffer is not None:
                sniffer.feed(chunk)
        if length is None:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        if sniffer is not None and prepared is not None and self.server.conversations:
            usage = sniffer.usage()
            billing = billing_of(self.path, _lower(self.headers))
            try:
                if usage:
                    self.server.conversations.reported(
                        prepared, usage, api=api or "", billing=billing
                    )
                else:
                    self.server.conversations.record(prepared, billing=billing)
            except Exception as exc:
                self.server.log.once("usage", f"usage not recorded: {exc}")

    def _reply(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _batch_line(prepared: Prepared, upstream: Upstream) -> str:
    cold = ", the provider's cache had expired" if prepared.cold else ""
    what = "would send" if prepared.shadow else "sent"
    return (
        f"{upstream.host}: batch in {prepared.conversation} ({prepared.model or '?'}): "
        f"{prepared.evicted} results out, {prepared.tokens_before:,} tokens as the agent sent "
        f"them, {prepared.tokens_sent:,} {what} (budget {prepared.budget:,}){cold}"
    )


def billing_of(path: str, headers: Mapping[str, str]) -> str:
    """How the agent pays for this request: ``subscription`` for a login that is not billed
    per token (Claude Code's OAuth token, Codex's ChatGPT login), else ``api``."""
    auth = headers.get("authorization", "")
    if "/backend-api/" in path or auth.removeprefix("Bearer ").startswith("sk-ant-oat"):
        return "subscription"
    return "api"


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()}


def _decoded(raw: bytes, encoding: str) -> tuple[bytes, bool]:
    """The body to read, and whether it is still encoded (could not be decoded)."""
    encoding = encoding.strip().lower()
    if not encoding or encoding == "identity" or not raw:
        return raw, False
    try:
        if encoding == "gzip":
            return gzip.decompress(raw), False
        if encoding == "deflate":
            return zlib.decompress(raw), False
        if encoding == "zstd":
            import zstandard  # pyright: ignore[reportMissingTypeStubs]

            reader: Any = zstandard.ZstdDecompressor()  # pyright: ignore[reportUnknownMemberType]
            return bytes(reader.decompressobj().decompress(raw)), False
    except Exception:
        return raw, True
    return raw, True


def _overflow(body: bytes) -> bool:
    return is_overflow_text(body[:4096].decode("utf-8", "replace"))


class UsageSniffer:
    """Reads the provider's usage from a response as it streams by (SSE or JSON)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._found: dict[str, int] = {}
        self._json = b""
        self._sse = False

    def feed(self, chunk: bytes) -> None:
        if (
            not self._sse
            and not self._buffer
            and not chunk.lstrip().startswith((b"event:", b"data:"))
        ):
            if len(self._json) < 4_000_000:
                self._json += chunk
            return
        self._sse = True
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                self._event(line[5:].strip())

    def _event(self, data: bytes) -> None:
        if b"usage" not in data:
            return
        try:
            event: Any = json.loads(data)
        except ValueError:
            return
        self._take(event)

    def _take(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        e = cast(dict[str, Any], event)
        for holder in (e.get("message"), e.get("response"), e):
            if isinstance(holder, dict) and isinstance(
                cast(dict[str, Any], holder).get("usage"), dict
            ):
                self._usage(cast(dict[str, Any], cast(dict[str, Any], holder)["usage"]))

    def _usage(self, usage: Mapping[str, Any]) -> None:
        def number(key: str) -> int | None:
            value = usage.get(key)
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

        for key, name in (
            ("input_tokens", "input_tokens"),
            ("prompt_tokens", "input_tokens"),
            ("cache_read_input_tokens", "cache_read"),
            ("cache_creation_input_tokens", "cache_write"),
            ("output_tokens", "output_tokens"),
            ("completion_tokens", "output_tokens"),
        ):
            value = number(key)
            if value is not None and value > 0:
                self._found[name] = value
        details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            cached = cast(dict[str, Any], details).get("cached_tokens")
            if isinstance(cached, int) and cached > 0:
                self._found["cache_read"] = cached

    def usage(self) -> dict[str, int]:
        if not self._sse and self._json:
            with contextlib.suppress(ValueError):
                self._take(json.loads(self._json))
        return dict(self._found)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
