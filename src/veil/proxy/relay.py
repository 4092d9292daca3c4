"""The upstream's answer, relayed to the client byte for byte as it comes, and what can go
wrong on the way.

An answer is relayed as the client would see it from the upstream itself: its status and
headers (less the hop-by-hop ones), then its body chunk by chunk, never buffered. When either
side fails after the status line went out, no other response may follow it: an answer the
upstream cuts short (a stream closed after a few events, a body short of its
``Content-Length``, a reset) reaches the client as far as it came and then the connection is
closed — a chunked answer without its last chunk, so the client knows it was cut — exactly what
the client would see talking to the upstream directly. A client that goes away
(:class:`ClientGone`) ends the relay, and the upstream's connection is closed by the caller.

The provider's usage is read on the side (:class:`UsageSniffer`), in the client's API's terms
(:attr:`veil.dialects.base.Dialect.usage`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
from io import BufferedIOBase
from typing import Any, cast

from veil.dialects import Dialect

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers of one connection, never relayed (RFC 9110 §7.6.1)."""
REQUEST_DROPPED = HOP_BY_HOP | {"host", "content-length", "content-encoding", "accept-encoding"}
"""Request headers the proxy sets itself: the body may be rewritten (and so decoded), and the
answer is asked for uncompressed so that its usage can be read."""
RESPONSE_DROPPED = HOP_BY_HOP | {"content-length"}
"""Response headers the proxy sets itself (the body's framing); ``Content-Encoding`` stays:
the bytes are relayed as they came."""

NO_BODY = frozenset({204, 304})
CHUNKED = ("Transfer-Encoding", "chunked")


class ClientGone(Exception):
    """The client's connection failed while the answer was written to it."""


def send(out: BufferedIOBase, data: bytes) -> None:
    """Write ``data`` to the client; :class:`ClientGone` when its connection is gone."""
    try:
        out.write(data)
        out.flush()
    except OSError as exc:
        raise ClientGone(why(exc)) from None


def why(exc: BaseException) -> str:
    """An exception, said in a log line."""
    name, text = type(exc).__name__, str(exc)
    return text if text.startswith(name) else f"{name}: {text}" if text else name


def framing(response: http.client.HTTPResponse) -> list[tuple[str, str]]:
    """The upstream's headers as relayed: the end-to-end ones, and the body's framing (its
    ``Content-Length``, or chunked)."""
    headers = [(k, v) for k, v in response.getheaders() if k.lower() not in RESPONSE_DROPPED]
    length = response.getheader("content-length")
    if response.status in NO_BODY:
        return headers
    if length is not None:
        return [*headers, ("Content-Length", length)]
    return [*headers, CHUNKED]


def body(
    response: http.client.HTTPResponse, out: BufferedIOBase, sniffer: UsageSniffer | None
) -> str | None:
    """Relay the answer's body (its head was sent); None when it came whole, else what cut it
    short — then the client's connection must be closed, and nothing more written to it.
    Raises :class:`ClientGone`."""
    if response.status in NO_BODY:
        return None
    declared = response.getheader("content-length")
    expected = int(declared) if declared is not None and declared.isdigit() else None
    relayed = 0
    cut: str | None = None
    while True:
        try:
            chunk = response.read1(65536)
        except (OSError, http.client.HTTPException) as exc:
            cut = why(exc)
            break
        if not chunk:
            break
        relayed += len(chunk)
        send(out, chunk if expected is not None else b"%x\r\n%s\r\n" % (len(chunk), chunk))
        if sniffer is not None:
            sniffer.feed(chunk)
    if expected is not None and relayed < expected and cut is None:
        cut = f"{relayed} of {expected} bytes"
    if cut is None and expected is None:
        send(out, b"0\r\n\r\n")  # the last chunk: the answer is whole
    return cut


class UsageSniffer:
    """Reads the provider's usage from a response as it streams by (SSE or JSON), as
    ``dialect`` states it (:attr:`~veil.dialects.base.Dialect.usage`; the figures of
    :data:`~veil.dialects.base.USAGE_FIGURES`, a later event's overriding an earlier one's)."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
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
        if isinstance(event, dict):
            self._found.update(self._dialect.usage(cast(dict[str, Any], event)))

    def usage(self) -> dict[str, int]:
        if not self._sse and self._json:
            with contextlib.suppress(ValueError):
                self._take(json.loads(self._json))
        return dict(self._found)
