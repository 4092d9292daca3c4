"""When a request's conversation may change, and how far: the one cache-aware eviction rule of
the harness and the proxy. Pure.

Providers cache the longest unchanged prefix of a request: a token read from the cache costs
``read`` (0.1× the input price at Anthropic), a token written to it ``write`` (1.25× for the
5-minute cache). A conversation that only grows is almost all cache reads. Replacing a result
with its stub changes the prefix from that result on, so everything after it is written again.
The rule that follows, for every surface alike:

- **While the conversation fits its budget, nothing changes**, byte for byte.
- **Over the budget, one batch**: the three stages run once (:mod:`veil.context.eviction`), by
  Veil's score, deep enough that the batch pays for the cache it breaks. A batch that removes
  ``E`` tokens from the ``S`` cached tokens that follow its first change costs, once,
  ``write·(S − E) − read·S`` more than sending the conversation unchanged (what follows the
  change is written instead of read), and saves ``read·E`` on every later request; it has paid
  back after ``R`` requests when ``E ≥ (write − read)·S / (read·R + write)``
  (:meth:`Depth.pays`). ``R``, the requests still to come, is unknown: it is estimated as the
  requests made so far (a conversation that has run for ``n`` requests is as likely as not to
  run ``n`` more), never below :attr:`BatchRule.min_requests_left`. A batch also leaves room
  for the next few requests' growth, so that batches never come back to back.
- **A cold cache** (no request within the cache's lifetime, ``cache_control``'s TTL): the whole
  request is written anyway, so a batch costs nothing extra; it then goes down to
  :attr:`BatchRule.cold_fill` of the budget, which postpones the next (paid) one.
- Break-even alone never takes the conversation below :attr:`BatchRule.floor_fill` of the
  budget: past that, a batch would evict what the model still uses to save a few reads.
- **A budget no batch can meet** (the agent's own text and the results it has not read exceed
  it even with every other result as its stub): no batch. It would rewrite the cache and take
  the results the model is reading without bringing the request under the budget; the host's
  own compaction is what can. Only after the provider refused a request as too long does such
  a batch run anyway (:attr:`Pressure.refused`), as deep as it can.

What a batch may and may not touch (the results the model has not read, stubs no shorter than
their result, the stubs already sent) is the eviction's (:mod:`veil.context.pressure`); this
module only says whether a batch runs and when it has gone deep enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from veil.context.eviction import Depth


@dataclass(frozen=True)
class CachePrices:
    """A provider's prompt-cache prices, relative to one uncached input token."""

    read: float = 0.1
    write: float = 1.25


@dataclass(frozen=True)
class BatchRule:
    """The batch rule's settings (see the module docstring); tested defaults."""

    prices: CachePrices = CachePrices()
    min_requests_left: float = 4.0
    """The fewest requests a batch is expected to pay back over."""
    requests_left_ratio: float = 1.0
    """Requests still to come, as a share of the requests made so far."""
    headroom_requests: float = 2.0
    """A batch leaves room under the budget for this many requests' mean growth."""
    min_depth: float = 0.45
    """A batch takes the conversation at least this share of the budget below it: a batch
    that stops just under the budget is followed by another a few requests later, and every
    batch rewrites most of the cache. Chosen on set A of the eviction replay (the smallest
    depth whose cost with caching stays under keep-all's at both goal budgets, with margin)."""
    cold_fill: float = 0.5
    """On a cold cache a batch goes down to this share of the budget (it costs nothing more)."""
    floor_fill: float = 0.3
    """Break-even never takes a batch below this share of the budget."""


@dataclass(frozen=True)
class Pressure:
    """What a turn boundary knows of the request it is about to send."""

    tokens: int
    """The conversation as it would be sent unchanged (the renderer's count)."""
    budget: int
    requests: int
    """Model requests made so far in this conversation (its assistant messages)."""
    cold: bool = False
    """The provider's cache of this conversation has expired."""
    refused: bool = False
    """The provider refused the last request as too long: this batch must get the request
    as small as it can (:attr:`veil.context.eviction.Depth.must_fit`)."""

    @property
    def over(self) -> bool:
        return self.tokens > self.budget


def model_requests(roles: Sequence[str]) -> int:
    """The model requests a conversation took so far, at least 1: its runs of assistant
    messages (a Responses answer is its message and its call items, each read as an assistant
    message of its own)."""
    runs = sum(
        1
        for i, role in enumerate(roles)
        if role == "assistant" and (i == 0 or roles[i - 1] != role)
    )
    return max(1, runs)


def requests_left(requests: int, rule: BatchRule) -> float:
    """The requests a batch now is expected to pay back over (see the module docstring)."""
    return max(rule.min_requests_left, rule.requests_left_ratio * requests)


def depth(pressure: Pressure, rule: BatchRule) -> Depth:
    """How deep a batch at ``pressure`` must go (it runs only when the conversation is over its
    budget, or when the caller forces one after the provider refused the request)."""
    budget = pressure.budget
    growth = pressure.tokens / max(1, pressure.requests)
    floor = int(rule.floor_fill * budget)
    room = min(rule.headroom_requests * growth, budget - 1)
    fit = max(floor, int(min(budget - room, (1.0 - rule.min_depth) * budget)))
    left = requests_left(pressure.requests, rule)
    prices = rule.prices
    saving = prices.read * left + prices.write
    if pressure.cold:  # everything is written anyway: the rewrite costs nothing more
        cold_fit = min(fit, max(floor, int(rule.cold_fill * budget)))
        return Depth(
            fit=cold_fit,
            floor=floor,
            factor=0.0,
            rewrite=0.0,
            saving=saving,
            must_fit=pressure.refused,
        )
    rewrite = prices.write - prices.read
    return Depth(
        fit=fit,
        floor=floor,
        factor=rewrite / saving,
        rewrite=rewrite,
        saving=saving,
        must_fit=pressure.refused,
    )


__all__ = [
    "BatchRule",
    "CachePrices",
    "Depth",
    "Pressure",
    "depth",
    "model_requests",
    "requests_left",
]
