"""The proxy's event kind: one forwarded request and what Veil made of it.

``proxy.request`` (:data:`REQUEST`) records, per request the proxy forwards, the conversation
it belongs to, its estimated tokens before and after Veil's working memory, how many results
went as stubs, how many items the turn boundary evicted, whether the splice was exact, Veil's
overhead, and — once the provider reported it — the usage. A record, never a reason to fail a
request. Registered with the tape when this module is imported (by
:mod:`veil.proxy.session`, its one writer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from veil.tape.codec import SPARSE
from veil.tape.kinds import EventKind, catalogue

ProxyKind = Literal["proxy.request"]


@dataclass(frozen=True, kw_only=True)
class RequestForwarded:
    conversation: str
    tokens_before: int
    tokens_sent: int
    stubbed: int
    evicted: int
    exact: bool
    overhead_ms: float
    usage: Annotated[dict[str, int] | None, SPARSE] = None
    """The provider's figures (``input_tokens``, ``cache_read``, ``cache_write``), when it
    reported them."""
    batch: Annotated[bool, SPARSE] = False
    """A batch of evictions ran for this request (its conversation changed)."""
    cold: Annotated[bool, SPARSE] = False
    """The provider's cache of the conversation had expired before this request."""
    model: Annotated[str | None, SPARSE] = None


REQUEST = EventKind("proxy.request", RequestForwarded)
KINDS = catalogue(ProxyKind, REQUEST)
