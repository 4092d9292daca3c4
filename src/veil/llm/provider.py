"""The provider contract: stream a reply to a :class:`Request`.

A provider is small: ``stream(request)`` yields text and tool-call deltas and ends with
:class:`Done` carrying the full :class:`Response`; ``complete(request)`` is the non-streaming
convenience. ``context_window`` is the model's window in tokens (the harness's ``--window``
overrides it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, Self, runtime_checkable

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


class SdkProvider:
    """What the SDK-backed providers share: their model, window and client's lifetime.
    Subclasses set ``_model``, ``_context_window`` and ``_client`` (anything with ``close``)."""

    _model: str
    _context_window: int
    _client: Any

    @property
    def model(self) -> str:
        return self._model

    @property
    def context_window(self) -> int:
        return self._context_window

    def close(self) -> None:
        """Release the SDK's HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
