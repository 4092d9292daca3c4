"""The providers' wire formats on a real HTTP server on 127.0.0.1 (``veil.testing.WireServer``).

Each test queues the replies the server should give (status, headers, body — an SSE stream for
a streamed reply) and afterwards reads what the real SDK sent (:attr:`WireServer.seen`). Nothing
in the SDKs is patched: the providers talk HTTP to this server exactly as to the real APIs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from veil.testing import Reply, Sleeps, WireServer, json_reply, sse_reply

__all__ = ["Reply", "Sleeps", "WireServer", "anthropic_sse", "json_reply", "openai_sse"]

RECORDINGS = Path(__file__).parent / "recordings"


def recording(name: str) -> Reply:
    """A recorded SSE stream from tests/llm/recordings/."""
    return Reply(200, (RECORDINGS / name).read_bytes(), "text/event-stream")


def openai_sse(chunks: list[dict[str, Any]]) -> Reply:
    """chat.completions streaming: ``data: {chunk}`` lines, then ``data: [DONE]``."""
    return sse_reply("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n")


def anthropic_sse(events: list[dict[str, Any]]) -> Reply:
    """Messages streaming: ``event: TYPE`` / ``data: {event}`` pairs."""
    return sse_reply("".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events))


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()
