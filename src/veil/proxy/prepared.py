"""A request as the proxy forwards it (:class:`Prepared`: its body and its figures), the
bookkeeping still owed for one that went out ahead of it (:class:`Pending`), and the
``proxy.request`` event that records it (:func:`forwarded_event`, its one builder). Values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from veil.proxy.events import RequestForwarded
from veil.proxy.wire import Request

if TYPE_CHECKING:
    from veil.proxy.conversation import Conversation


@dataclass(frozen=True)
class Prepared:
    """A request as it is forwarded, and what it costs."""

    body: bytes
    conversation: str
    tokens_before: int
    """Estimated tokens of the request as the client sent it."""
    tokens_sent: int
    stubbed: int
    """Results sent as stubs (or excerpts)."""
    evicted: int
    """Items this request's batch moved out of the prompt (0: no batch)."""
    exact: bool
    seconds: float
    batch: bool = False
    """This request's conversation changed (a batch of evictions ran for it)."""
    cold: bool = False
    """The provider's cache of the conversation had expired (no request within its TTL)."""
    unmet: bool = False
    """Over its budget, and no batch could meet it: nothing more was evicted (see
    :attr:`veil.context.eviction.Depth.must_fit`)."""
    budget: int = 0
    """The request budget it was prepared for, in the provider's tokens."""
    model: str = ""
    note: str | None = None
    """Why the request went as the client sent it (said once per conversation), or that it
    went over its budget with no batch able to meet it (said when the conversation gets
    there)."""
    agent_cached: int = 0
    """Estimated tokens at the start of the request as the agent sent it that repeat the
    conversation's previous request as the agent sent it (what a provider's cache would serve
    without Veil)."""
    sent_cached: int = 0
    """The same for the request as forwarded (in shadow mode: as Veil would have sent it)."""
    results: int = 0
    """Tool results Veil recognised in the request."""
    expands: int = 0
    """Results the model brought back with Veil's expand since the conversation's previous
    request."""
    rereads: int = 0
    """Results out of the prompt the model re-read or re-ran since the previous request."""
    compaction: bool = False
    """The request is the agent's own compaction of its conversation."""
    shadow: bool = False
    """Shadow mode: forwarded as the agent sent it; ``body`` and the figures are what Veil
    would have sent."""
    ttl: str = "5m"
    """The provider's cache lifetime the request asks for (``1h`` or the default ``5m``)."""
    agent_session: str = ""
    """The agent's own session id (what resumes it)."""
    inputs_elided: int = 0
    """Old tool inputs sent elided (:mod:`veil.proxy.inputs`)."""
    inputs_new: int = 0
    """Of those, how many this request's batch elided."""
    ahead: bool = False
    """It went out ahead of its bookkeeping (:mod:`veil.proxy.conversation`)."""
    diverged: bool = False
    """Its bookkeeping came to other bytes than were sent ahead of it (a defect: logged)."""
    pending: Pending | None = field(default=None, compare=False, repr=False)
    """Its bookkeeping, while it has not run (:meth:`veil.proxy.session.Conversations.settle`)."""


@dataclass(eq=False)
class Pending:
    """A request forwarded ahead of its bookkeeping: what the bookkeeping needs, and, once it
    ran, what it came to (the session fills ``result`` or ``error``)."""

    conversation: Conversation
    request: Request
    raw: bytes
    now: float
    """When it arrived (the clock's seconds): the bookkeeping's time, not its own."""
    body: bytes
    """What was forwarded (as Veil would send it, in shadow mode)."""
    seconds: float = 0.0
    """What it waited before it was forwarded."""
    result: Prepared | None = None
    error: Exception | None = None


def forwarded_event(
    prepared: Prepared,
    *,
    usage: Mapping[str, int] | None,
    host: str | None,
    billing: str | None,
) -> RequestForwarded:
    """The ``proxy.request`` event of ``prepared``, with the provider's ``usage`` when it
    reported it."""
    return RequestForwarded(
        conversation=prepared.conversation,
        tokens_before=prepared.tokens_before,
        tokens_sent=prepared.tokens_sent,
        stubbed=prepared.stubbed,
        evicted=prepared.evicted,
        exact=prepared.exact,
        overhead_ms=round(prepared.seconds * 1000, 3),
        usage=None if usage is None else {k: int(v) for k, v in usage.items()},
        batch=prepared.batch,
        cold=prepared.cold,
        unmet=prepared.unmet,
        model=prepared.model or None,
        host=host,
        agent_session=prepared.agent_session or None,
        agent_cached=prepared.agent_cached,
        sent_cached=prepared.sent_cached,
        results=prepared.results,
        expands=prepared.expands,
        rereads=prepared.rereads,
        compaction=prepared.compaction,
        shadow=prepared.shadow,
        ttl=prepared.ttl,
        budget=prepared.budget,
        billing=billing,
        inputs_elided=prepared.inputs_elided,
        inputs_new=prepared.inputs_new,
        ahead=prepared.ahead,
        diverged=prepared.diverged,
    )


__all__ = ["Pending", "Prepared", "forwarded_event"]
