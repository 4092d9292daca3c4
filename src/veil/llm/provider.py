"""The provider contract: stream a reply to a :class:`Request`.

A provider is small: ``stream(request)`` yields text and tool-call deltas and ends with
:class:`Done` carrying the full :class:`Response`; ``complete(request)`` is the non-streaming
convenience. ``context_window`` is the model's window in tokens (the harness's ``--window``
overrides it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from veil.llm.messages import Done, Request, Response, StreamEvent


@runtime_checkable
class Provider(Protocol):
    @property
    def model(self) -> str: ...

    @property
    def context_window(self) -> int: ...

    def stream(self, request: Request) -> Iterator[StreamEvent]: ...


def complete(provider: Provider, request: Request) -> Response:
    """Drain a stream into its final response."""
    for event in provider.stream(request):
        if isinstance(event, Done):
            return event.response
    raise RuntimeError(f"{provider.model}: the stream ended without a final response")
