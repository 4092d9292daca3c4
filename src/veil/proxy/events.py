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
    unmet: Annotated[bool, SPARSE] = False
    """Over its budget with no batch able to meet it (the agent's own text and the results
    the model has not read exceed it with every other result as its stub): nothing changed."""
    model: Annotated[str | None, SPARSE] = None
    host: Annotated[str | None, SPARSE] = None
    """The agent (``claude``, ``codex``…) when the proxy was started for one."""
    agent_session: Annotated[str | None, SPARSE] = None
    """The agent's own session id (``veil claude -- --resume ID`` resumes it)."""
    agent_cached: Annotated[int, SPARSE] = 0
    """Estimated tokens of the request as the agent sent it that repeat its previous one."""
    sent_cached: Annotated[int, SPARSE] = 0
    """The same for the request as forwarded (in shadow mode: as Veil would have sent it)."""
    results: Annotated[int, SPARSE] = 0
    """Tool results Veil recognised in the request."""
    expands: Annotated[int, SPARSE] = 0
    rereads: Annotated[int, SPARSE] = 0
    """Results out of the prompt the model re-read or re-ran since the previous request."""
    compaction: Annotated[bool, SPARSE] = False
    """The request is the agent's own compaction of its conversation."""
    shadow: Annotated[bool, SPARSE] = False
    ttl: Annotated[str | None, SPARSE] = None
    budget: Annotated[int, SPARSE] = 0
    billing: Annotated[str | None, SPARSE] = None
    """``api`` (a key, billed per token) or ``subscription`` (a login that is not)."""
    inputs_elided: Annotated[int, SPARSE] = 0
    """Old tool inputs sent elided (:mod:`veil.proxy.inputs`)."""
    inputs_new: Annotated[int, SPARSE] = 0
    """Of those, how many this request's batch elided."""
    ahead: Annotated[bool, SPARSE] = False
    """It went out ahead of Veil's bookkeeping (nothing Veil keeps changed what it was sent
    as); ``overhead_ms`` is then the time it waited, not the bookkeeping's."""
    diverged: Annotated[bool, SPARSE] = False
    """Its bookkeeping, run afterwards, came to other bytes than were sent (a defect)."""


REQUEST = EventKind("proxy.request", RequestForwarded)
KINDS = catalogue(ProxyKind, REQUEST)
