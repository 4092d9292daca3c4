"""``veil proxy``: an HTTP server on 127.0.0.1 between a coding agent and its model provider,
applying Veil's working memory to every request (:mod:`veil.proxy.session`).

- **Routes.** A ``POST`` is rewritten by its path's last segments, the query string aside
  (:func:`~veil.proxy.wire.route`): ``…/v1/messages`` (and ``…/v1/messages/count_tokens``: the
  count of the request as it would be forwarded, for a conversation the proxy keeps — a count
  never starts one), ``…/responses`` (``/v1/responses``, ``/responses``, Codex's ChatGPT-login
  ``/backend-api/codex/responses``) and ``…/chat/completions``; anything else is forwarded as
  it is. The upstream gets the client's headers — its credentials included, never stored or
  logged — and the path as the client sent it, on the upstream's origin (the client's base URL
  carries the upstream's path: :func:`client_base`).
- **Streaming.** The upstream's answer goes back as received, chunk by chunk, without
  buffering (:mod:`veil.proxy.relay`); its usage is read on the side (SSE
  ``message_start``/``message_delta``, ``response.completed``, a final Chat chunk, or the JSON
  body) to calibrate the count and record the cache figures. Requests ask the upstream for an
  uncompressed answer so that the side reading works; a compressed request body (Codex sends
  zstd) is decoded to be read, and one that cannot be decoded is forwarded as it came.
- **Errors.** An upstream error passes through unchanged, except a context overflow ("prompt
  is too long", ``context_length_exceeded``): the conversation is evicted harder and the
  request retried once. An upstream that cannot be reached is one ``502`` in the client's
  API's error shape. Once an answer's status line is out no other response follows it: an
  answer the upstream cuts short reaches the client as far as it came and the connection is
  closed, as it would be from the upstream itself; a client that goes away closes the
  upstream's connection. Each is one log line; nothing is printed on stderr but the log
  (:meth:`ProxyServer.handle_error`).
- **Fail-open.** Anything that goes wrong inside Veil's rewrite forwards the original request
  unchanged, with one line on stderr per kind of failure. Requests are served concurrently
  (the main agent, its subagents, side calls); each conversation is rewritten under its own
  lock.
"""

from __future__ import annotations

import contextlib
import http
import http.client
import json
import socket
import sys
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO
from urllib.parse import urlsplit

from veil.dialects import DIALECTS, dialect_for_client, error_body
from veil.dialects.encoding import decode
from veil.proxy import relay
from veil.proxy.prepared import Prepared
from veil.proxy.reading import parse
from veil.proxy.relay import (
    CHUNKED,
    REQUEST_DROPPED,
    RESPONSE_DROPPED,
    ClientGone,
    UsageSniffer,
    why,
)
from veil.proxy.session import Conversations
from veil.proxy.wire import Api, WireError, route

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
    """Veil's proxy log, each line with a timestamp and the upstream host; redacted like
    everything Veil writes. To a log file (``.veil/proxy.log``): one line per failure and one
    per batch. On a terminal (``veil proxy``'s stderr, the agent's terminal): one line per kind
    of failure, and no batches — it stays quiet."""

    def __init__(self, stream: TextIO | None = None, *, batches: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.batches = (self.stream is not sys.stderr) if batches is None else batches
        self.host = ""
        """The upstream host, named on every line (set by :class:`ProxyServer`)."""
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def once(self, kind: str, message: str) -> None:
        """A failure: a line each time to a log file, the first of its ``kind`` on a
        terminal."""
        with self._lock:
            if kind in self._seen and not self.batches:
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
        where = f" {self.host}" if self.host else ""
        with self._lock:
            print(f"{stamp} veil proxy{where}: {redact(message).text}", file=self.stream,
                  flush=True)  # fmt: skip


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    """Connections waiting to be accepted (socketserver's default is 5): an agent's parallel
    sub-agents, or several sessions on one proxy, connect at once — past the backlog a client
    can see its connection reset."""

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
        self.log.host = upstream.host
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

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request's handler failed outside what it handles itself: one log line, never a
        traceback on stderr (under ``veil claude`` that is the user's terminal)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            self.log.once("client", f"client disconnected ({type(exc).__name__})")
            return
        name = type(exc).__name__
        self.log.once(f"handler:{name}", f"a request failed ({name}: {exc})")

    def serve_in_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="veil-proxy", daemon=True)
        thread.start()
        return thread


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ProxyServer  # pyright: ignore[reportIncompatibleVariableOverride]

    def log_message(self, format: str, *args: Any) -> None:
        return None  # no access log: paths and timings only matter when something fails

    def do_POST(self) -> None:
        raw = self._body()
        if raw is not None:
            self._forward(raw)

    do_GET = do_PUT = do_DELETE = do_POST

    # ---- the request ---------------------------------------------------------------------

    def _body(self) -> bytes | None:
        """The request's body; None when it could not be read whole — a malformed one is
        answered 400, and a client gone before its end is not forwarded: either way the
        client's connection is closed."""
        try:
            if self.headers.get("transfer-encoding", "").lower() == "chunked":
                data = self._chunked()
            else:
                length = int(self.headers.get("content-length") or 0)
                if length < 0:
                    raise ValueError(f"Content-Length {length}")
                data = self.rfile.read(length) if length else b""
                data = data if len(data) == length else None
        except ValueError as exc:
            self.close_connection = True
            message = f"veil proxy: the request's body cannot be read ({exc})"
            with contextlib.suppress(ClientGone):
                self._reply(400, self._error(None, message))
            return None
        if data is None:
            self._client_gone("before the end of its request")
        return data

    def _chunked(self) -> bytes | None:
        """A chunked body (None: the client went away inside it). Raises ValueError for a
        malformed one."""
        chunks: list[bytes] = []
        while True:
            line = self.rfile.readline(65_537)
            if not line.endswith(b"\n"):
                return None
            size = int(line.split(b";")[0].strip(), 16)
            if size < 0:
                raise ValueError(f"chunk size {size}")
            if size == 0:
                while (line := self.rfile.readline(65_537)) not in (b"\r\n", b"\n"):
                    if not line.endswith(b"\n"):
                        return None  # (a trailer, or the end of the connection)
                return b"".join(chunks)
            data = self.rfile.read(size)
            if len(data) < size or not self.rfile.readline(3).endswith(b"\n"):
                return None
            chunks.append(data)

    def _forward(self, raw: bytes) -> None:
        self._started = False  # once the answer's head is out, no other response may follow
        with self.server.serving():
            try:
                self._serve(raw)
            except ClientGone as exc:
                self._client_gone(str(exc))

    def _serve(self, raw: bytes) -> None:
        api, counting = route(self.path)
        body, encoded = _decoded(raw, self.headers.get("content-encoding", ""))
        source = body  # decoded: what a retry is prepared from again
        prepared: Prepared | None = None
        request = None
        if api is not None and self.command == "POST" and self.server.conversations is not None:
            try:
                request = parse(api, body, _lower(self.headers), path=self.path)
                conversations = self.server.conversations
                # a count is of the request as it would be sent: a conversation the proxy
                # keeps is rendered as it is; a count never starts one
                known = conversations.known(request) if counting else None
                if not counting or known is not None:
                    # a request Veil's bookkeeping would not change goes ahead of it: the
                    # bookkeeping runs once the answer is relayed (settled below)
                    prepared = conversations.prepare(
                        request, body, conversation=known, persist=False, ahead=not counting
                    )
                    body, encoded = prepared.body, False
                    if prepared.shadow:  # measured only: the agent's bytes, as they came
                        body, encoded = raw, True
                    if prepared.note:
                        self.server.log.once(f"note:{prepared.conversation}", prepared.note)
                    if prepared.batch and not counting:
                        self.server.log.line(_batch_line(prepared))
                    if self.server.on_prepared is not None:
                        self.server.on_prepared(prepared)
            except WireError as exc:
                self.server.log.once("wire", f"{exc}; forwarded as it is")
            except Exception as exc:
                self.server.log.once(
                    type(exc).__name__,
                    f"rewrite failed ({type(exc).__name__}: {exc}); forwarded as it is",
                )
                prepared = None
        if prepared is None or encoded:  # not rewritten: the client's bytes, as they came
            body, encoded = raw, True
        try:
            self._send_upstream(body, api, prepared, request, source=source, encoded=encoded)
        except (OSError, http.client.HTTPException) as exc:
            if self._started:  # the relay's own failures are handled; this one came after
                self._cut(why(exc))
                return
            self.server.log.once("upstream", f"upstream unreachable: {exc}")
            message = f"veil proxy: upstream unreachable ({why(exc)})"
            self._reply(502, self._error(api, message))
        finally:
            self._settle(prepared)

    def _settle(self, prepared: Prepared | None) -> None:
        """The bookkeeping of a request that went ahead of it, if it has not run yet (the
        usage's record runs it first); a failure or a difference from what was sent is logged
        once, never raised."""
        conversations = self.server.conversations
        if prepared is None or prepared.pending is None or conversations is None:
            return
        try:
            settled = conversations.settle(prepared)
        except Exception as exc:
            self.server.log.once(
                "bookkeeping", f"bookkeeping failed ({type(exc).__name__}: {exc}); the "
                "conversation's next request waits for its bookkeeping",
            )  # fmt: skip
            return
        if settled.diverged:
            self.server.log.once(
                f"diverged:{settled.conversation}",
                f"{settled.conversation}: a request went ahead of Veil's bookkeeping, which "
                "came to other bytes; the next request sends what it decided",
            )

    def _error(self, api: Api | None, message: str) -> dict[str, Any]:
        """An error the proxy answers itself, in the client's API's shape (the API of its path,
        else as its headers and path suggest: :func:`veil.dialects.dialect_for_client`)."""
        if api is not None:
            return error_body(DIALECTS[api], message)
        return error_body(dialect_for_client(self.path, _lower(self.headers)), message)

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
        headers = {k: v for k, v in self.headers.items() if k.lower() not in REQUEST_DROPPED}
        headers["Host"] = upstream.host_header
        headers["Accept-Encoding"] = "identity"
        if encoded and self.headers.get("content-encoding"):
            headers["Content-Encoding"] = self.headers["content-encoding"]
        connection = upstream.connect()
        try:
            try:
                connection.request(self.command, self.path, body=body or None, headers=headers)
            finally:
                self._persist(prepared)
            response = connection.getresponse()
            if (
                response.status in (400, 413)
                and prepared is not None
                and not prepared.shadow
                and request is not None
                and self.server.conversations is not None
            ):
                try:
                    error, cut = response.read(), None
                except http.client.IncompleteRead as exc:
                    error, cut = exc.partial, f"{len(exc.partial)} bytes of an error"
                if cut is None and api is not None and DIALECTS[api].is_overflow(error):
                    conversations = self.server.conversations
                    conversations.overflowed(prepared, error[:4096].decode("utf-8", "replace"))
                    retried = conversations.prepare(request, source, overflow=True, persist=False)
                    connection.close()
                    connection = upstream.connect()
                    try:
                        connection.request(
                            self.command, self.path, body=retried.body, headers=headers
                        )
                    finally:
                        self._persist(retried)
                    response = connection.getresponse()
                    prepared = retried
                else:
                    self._relay_buffered(response, error, cut)
                    return
            self._relay(response, api, prepared)
        finally:
            connection.close()

    def _persist(self, prepared: Prepared | None) -> None:
        """The conversation's new events go to the tape on its writer thread once the request
        is on its way: then they run while the provider answers, not while the request is
        sent (the writer and the relay take turns for the interpreter)."""
        conversations = self.server.conversations
        if prepared is None or conversations is None:
            return
        try:
            conversations.persist(prepared)
        except Exception as exc:
            self.server.log.once("persist", f"the tape write failed ({exc}); kept, retried")

    # ---- the response --------------------------------------------------------------------

    def _head(self, status: int, reason: str, headers: Sequence[tuple[str, str]]) -> None:
        """The answer's status line and headers (after them, no other response may follow)."""
        self.send_response_only(status, reason)
        for key, value in headers:
            self.send_header(key, value)
        self._started = True
        try:
            self.end_headers()
        except OSError as exc:
            raise ClientGone(why(exc)) from None

    def _relay_buffered(
        self, response: http.client.HTTPResponse, data: bytes, cut: str | None
    ) -> None:
        """An answer read whole first (``cut``: it came short, and is relayed so)."""
        headers = [(k, v) for k, v in response.getheaders() if k.lower() not in RESPONSE_DROPPED]
        declared = response.getheader("content-length")
        if cut is not None and declared is None:  # chunked: no last chunk
            self._head(response.status, response.reason, [*headers, CHUNKED])
            relay.send(self.wfile, b"%x\r\n%s\r\n" % (len(data), data) if data else b"")
        else:
            length = declared if cut is not None and declared is not None else str(len(data))
            self._head(response.status, response.reason, [*headers, ("Content-Length", length)])
            relay.send(self.wfile, data)
        if cut is not None:
            self._cut(cut)

    def _relay(
        self, response: http.client.HTTPResponse, api: Api | None, prepared: Prepared | None
    ) -> None:
        self._head(response.status, response.reason, relay.framing(response))
        sniffer = (
            UsageSniffer(DIALECTS[api])
            if prepared is not None and api is not None and response.status == 200
            else None
        )
        try:
            cut = relay.body(response, self.wfile, sniffer)
        finally:
            if sniffer is not None and prepared is not None:
                self._account(sniffer, api, prepared)
        if cut is not None:
            self._cut(cut)

    def _account(self, sniffer: UsageSniffer, api: Api | None, prepared: Prepared) -> None:
        """The provider's usage, as read from its answer, on the record."""
        conversations = self.server.conversations
        if conversations is None:
            return
        usage = sniffer.usage()
        billing = billing_of(self.path, _lower(self.headers))
        try:
            if usage:
                conversations.reported(prepared, usage, api=api or "", billing=billing)
            else:
                conversations.record(prepared, billing=billing)
        except Exception as exc:
            self.server.log.once("usage", f"usage not recorded: {exc}")

    def _cut(self, why: str) -> None:
        """The upstream's answer ended short after its head went out: the client gets it as
        far as it came, then its connection is closed (as from the upstream itself)."""
        self.close_connection = True
        self.server.log.once(
            "cut", f"the upstream cut its answer short ({why}); the client's connection closed"
        )

    def _client_gone(self, why: str) -> None:
        """The client went away: its connection is closed (and the upstream's, by the caller)."""
        self.close_connection = True
        self.server.log.once("client", f"client disconnected ({why})")

    def _reply(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        self._head(status, http.HTTPStatus(status).phrase, headers)
        relay.send(self.wfile, data)


def _batch_line(prepared: Prepared) -> str:
    cold = ", the provider's cache had expired" if prepared.cold else ""
    what = "would send" if prepared.shadow else "sent"
    inputs = f", {prepared.inputs_new} old tool inputs elided" if prepared.inputs_new else ""
    return (
        f"batch in {prepared.conversation} ({prepared.model or '?'}): "
        f"{prepared.evicted} results out{inputs}, {prepared.tokens_before:,} tokens as the agent "
        f"sent them, {prepared.tokens_sent:,} {what} (budget {prepared.budget:,}){cold}"
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
    """The body to read, and whether it is still encoded (its ``Content-Encoding`` could not be
    decoded: :func:`veil.dialects.encoding.decode`)."""
    if not raw or not encoding.strip():
        return raw, False
    try:
        return decode(raw, encoding), False
    except ValueError:
        return raw, True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
