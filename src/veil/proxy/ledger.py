"""What the proxy did and what it saved, from the tape: the figures of ``veil claude``'s exit
summary, ``veil stats`` and the proxy's rows in ``veil sessions``, computed one way for all.

Every request the proxy forwards is a ``proxy.request`` event (:mod:`veil.proxy.events`). Per
conversation and in total:

- **tokens**: as the agent sent them, and as forwarded — the provider's reported input (cache
  reads and writes included) where it reported one, else Veil's estimate; the side the provider
  did not measure is Veil's estimate scaled by the provider's count of the side it did. In
  shadow mode "forwarded" is what Veil *would* have sent (the provider measured the agent's);
- **cache** read and written, as the provider reported them; the replies' tokens;
- **what Veil did**: batches (and how many on a cold cache), requests over the budget that no batch
  could meet, results out of the prompt as stubs (the most at once), expands the model made, results
  it re-read or re-ran after they were evicted (where eviction's cost hides), the agent's own
  compactions, tool results recognised;
- **estimated cost**, with and without Veil, from the dated model table
  (:mod:`veil.llm.catalog`, overridable in ``.veil/config.toml``). The side that was sent is
  priced from the provider's usage by billing class (uncached input, cache write, cache read,
  output). Both sides are also priced by one cache simulation (each request's tokens shared
  with the previous request of the same side are cache reads, the rest cache writes at the
  request's cache lifetime); the side not sent is its simulated cost times the ratio of the
  sent side's billed cost to its simulated cost — so the provider's caching is never counted
  as Veil's saving, and a conversation Veil never changed costs the same with and without it.
  A model the table does not name is priced by its family and said to be; a login that is not
  billed per token (``subscription``) makes the cost notional.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from veil.llm.catalog import CATALOG, Catalog, ModelInfo
from veil.proxy.events import REQUEST, RequestForwarded
from veil.tape import Store

KIND = REQUEST.name


@dataclass
class Figures:
    """Sums over ``proxy.request`` events (see the module docstring)."""

    requests: int = 0
    tokens_agent: int = 0
    tokens_sent: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    stubs: int = 0
    expands: int = 0
    rereads: int = 0
    batches: int = 0
    cold_batches: int = 0
    unmet: int = 0
    """Requests over the budget that no batch could meet (nothing changed for them)."""
    inputs: int = 0
    """Old tool inputs sent elided: per conversation the most in one request."""
    compactions: int = 0
    results: int = 0
    """Tool results recognised: per conversation the most in one request (its results so far)."""
    measured: int = 0
    """Requests whose usage the provider reported."""
    cost_estimated: float = 0.0
    cost_without_veil_estimated: float = 0.0

    def add(self, other: Figures) -> None:
        for f in fields(Figures):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


FIGURES = tuple(f.name for f in fields(Figures))


@dataclass
class Conversation(Figures):
    """One conversation's figures and what it was."""

    id: str = ""
    host: str | None = None
    model: str = ""
    shadow: bool = False
    agent_session: str | None = None
    billing: str | None = None
    first: datetime | None = None
    last: datetime | None = None
    priced_by: set[str] = field(default_factory=set[str])
    """The table entries its models were priced by (a family's says so)."""
    unpriced: set[str] = field(default_factory=set[str])
    billed: float = 0.0
    """The sent side's cost from the provider's usage (simulated where none came back)."""
    simulated_sent_cost: float = 0.0
    simulated_other_cost: float = 0.0
    """Both sides' cost by the one cache simulation (the sent side's and the other's)."""

    def figures(self) -> Figures:
        return Figures(**{k: getattr(self, k) for k in FIGURES})


def read(
    store: Store,
    scope: str,
    *,
    after: int = 0,
    since: datetime | None = None,
    catalog: Catalog = CATALOG,
) -> list[Conversation]:
    """The conversations of ``scope``'s ``proxy.request`` events with ``seq > after`` that
    happened at or after ``since``, in the order each first appeared."""
    events = store.read(scope, after=after, kinds=[KIND])
    return conversations(
        ((e.at, e.payload) for e in events if since is None or e.at >= since), catalog
    )


def conversations(
    events: Iterable[tuple[datetime, Mapping[str, Any]]], catalog: Catalog = CATALOG
) -> list[Conversation]:
    """Each conversation of ``events`` (``(time, proxy.request payload)``, oldest first), in the
    order each first appeared, its costs settled."""
    out: dict[str, Conversation] = {}
    for at, payload in events:
        event = REQUEST.decode(payload)
        found = out.get(event.conversation)
        if found is None:
            found = out[event.conversation] = Conversation(id=event.conversation, first=at)
        _take(found, at, event, catalog)
    for c in out.values():
        _settle(c)
    return list(out.values())


def total(found: Sequence[Conversation]) -> Figures:
    sums = Figures()
    for conversation in found:
        sums.add(conversation.figures())
    return sums


def saved_share(figures: Figures) -> float | None:
    """The share of the agent's tokens Veil kept out of the requests (negative: it added)."""
    if not figures.tokens_agent:
        return None
    return 1.0 - figures.tokens_sent / figures.tokens_agent


def _take(c: Conversation, at: datetime, e: RequestForwarded, catalog: Catalog) -> None:
    usage = e.usage or {}
    measured = usage.get("input_tokens", 0)
    # the side the provider measured: the agent's body in shadow mode, Veil's otherwise
    estimate = e.tokens_before if e.shadow else e.tokens_sent
    ratio = measured / estimate if measured and estimate else 1.0
    agent = measured if e.shadow and measured else round(e.tokens_before * ratio)
    forwarded = measured if not e.shadow and measured else round(e.tokens_sent * ratio)
    output = usage.get("output_tokens", 0)
    c.requests += 1
    c.measured += bool(measured)
    c.tokens_agent += agent
    c.tokens_sent += forwarded
    c.cache_read += usage.get("cache_read", 0)
    c.cache_write += usage.get("cache_write", 0)
    c.output_tokens += output
    c.stubs = max(c.stubs, e.stubbed)
    c.expands += e.expands
    c.rereads += e.rereads
    c.batches += e.batch
    c.cold_batches += e.batch and e.cold
    c.unmet += e.unmet
    c.inputs = max(c.inputs, e.inputs_elided)
    c.compactions += e.compaction
    c.results = max(c.results, e.results)
    c.last = at
    c.host = c.host or e.host
    c.model = e.model or c.model
    c.shadow = c.shadow or e.shadow
    c.agent_session = e.agent_session or c.agent_session
    c.billing = e.billing or c.billing
    info = catalog.lookup(c.model) if c.model else None
    if info is None or not info.priced:
        if c.model:
            c.unpriced.add(c.model)
        return
    c.priced_by.add(f"{info.name} (by family)" if info.by_family else info.name)
    ttl = "1h" if e.ttl == "1h" else "5m"
    simulated_agent = _simulated(info, agent, round(e.agent_cached * ratio), output, ttl)
    simulated_veil = _simulated(info, forwarded, round(e.sent_cached * ratio), output, ttl)
    simulated_sent, simulated_other = (
        (simulated_agent, simulated_veil) if e.shadow else (simulated_veil, simulated_agent)
    )
    c.simulated_sent_cost += simulated_sent
    c.simulated_other_cost += simulated_other
    c.billed += _billed(info, usage, output, ttl) if measured else simulated_sent


def _settle(c: Conversation) -> None:
    """The two costs from the sums (see the module docstring)."""
    scale = c.billed / c.simulated_sent_cost if c.simulated_sent_cost else 0.0
    sent, other = c.billed, c.simulated_other_cost * scale
    c.cost_estimated, c.cost_without_veil_estimated = (other, sent) if c.shadow else (sent, other)


def _simulated(info: ModelInfo, tokens: int, cached: int, output: int, ttl: str) -> float:
    """A request of ``tokens`` whose first ``cached`` are read from the cache and the rest
    written to it (the agents mark their last message for caching)."""
    _, per_out, write_5m, write_1h, read_rate = info.rates(tokens)
    write = write_1h if ttl == "1h" else write_5m
    cached = min(cached, tokens)
    return cached * read_rate + (tokens - cached) * write + output * per_out


def _billed(info: ModelInfo, usage: Mapping[str, int], output: int, ttl: str) -> float:
    """A request as the provider counted it (its ``input_tokens`` are the whole input)."""
    total_in = usage.get("input_tokens", 0)
    read_tokens = usage.get("cache_read", 0)
    write_tokens = usage.get("cache_write", 0)
    per_in, per_out, write_5m, write_1h, read_rate = info.rates(total_in)
    write = write_1h if ttl == "1h" else write_5m
    uncached = max(0, total_in - read_tokens - write_tokens)
    return uncached * per_in + write_tokens * write + read_tokens * read_rate + output * per_out


def as_json(found: Sequence[Conversation], prices_date: str) -> dict[str, Any]:
    """``veil stats --json``: ``total`` and ``conversations`` with the same keys (plus ``id``,
    ``host``, ``model``, ``shadow``…); costs in USD to four decimals."""

    def figures(f: Figures) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(f, k) for k in FIGURES}
        for k in ("cost_estimated", "cost_without_veil_estimated"):
            out[k] = round(out[k], 4)
        return out

    return {
        "prices_date": prices_date,
        "shadow": any(c.shadow for c in found),
        "total": figures(total(found)),
        "conversations": [
            {
                "id": c.id,
                "host": c.host,
                "model": c.model,
                "shadow": c.shadow,
                "agent_session": c.agent_session,
                "billing": c.billing,
                "first": c.first.isoformat() if c.first else None,
                "last": c.last.isoformat() if c.last else None,
                "priced_by": sorted(c.priced_by),
                "unpriced": sorted(c.unpriced),
                **figures(c),
            }
            for c in found
        ],
    }


__all__ = [
    "FIGURES",
    "Conversation",
    "Figures",
    "as_json",
    "conversations",
    "read",
    "saved_share",
    "total",
]
