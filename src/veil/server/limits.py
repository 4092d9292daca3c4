"""Per-key rate limits (token buckets) and the request-size limit (an ASGI middleware).

Both run before any store work, so an abusive client costs a dictionary lookup, not a query.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """A token bucket per key: ``burst`` requests at once, refilled at ``rate`` per second.

    :meth:`take` returns None when the request may proceed, else the seconds until one token
    is available (the ``Retry-After`` the server sends with its 429). ``rate <= 0`` disables
    limiting. Thread-safe (requests of one key may arrive on many worker threads).
    """

    def __init__(
        self, rate: float, burst: int, *, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._now = now
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float | None:
        if self.rate <= 0:
            return None
        with self._lock:
            now = self._now()
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.stamp) * self.rate)
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return (1.0 - bucket.tokens) / self.rate


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` is whole seconds; round up so a client that obeys it succeeds."""
    return str(max(1, math.ceil(seconds)))


class BodyLimit:
    """Reject request bodies larger than ``max_bytes`` with 413 before the app reads them.

    A declared ``Content-Length`` over the limit is refused at once; a body without one
    (chunked) is counted as it arrives and refused once it passes the limit. Before refusing a
    chunked body the rest of it is read and discarded (up to ``drain_factor`` times the limit),
    so a client that writes its whole body before reading gets the 413 instead of a connection
    reset. The accepted body is buffered (at most ``max_bytes``) and replayed to the app.
    """

    drain_factor = 8

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        for name, value in headers:
            if name.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._refuse(send)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body: bytes = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                more = bool(message.get("more_body", False))
                while more and size <= self.max_bytes * self.drain_factor:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    size += len(message.get("body", b""))
                    more = bool(message.get("more_body", False))
                await self._refuse(send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "error": "payload_too_large",
                "message": f"request body exceeds the limit of {self.max_bytes} bytes",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
