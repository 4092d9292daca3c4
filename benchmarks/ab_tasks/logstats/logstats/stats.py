"""Statistics over response times and counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile of ``values`` by nearest rank (see README); ``p`` in [0, 100]."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"p must be within [0, 100]: {p}")
    ordered = sorted(values)
    if p == 0:
        return ordered[0]
    rank = int(p / 100 * len(ordered))
    return ordered[min(rank, len(ordered) - 1)]


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def histogram(values: Iterable[float], edges: Sequence[float]) -> list[int]:
    """Counts per bucket: ``[edges[i], edges[i+1])``, the last bucket open-ended."""
    counts = [0] * len(edges)
    for v in values:
        for i in range(len(edges) - 1, -1, -1):
            if v >= edges[i]:
                counts[i] += 1
                break
    return counts


def share(counter: Counter[str], key: str) -> float:
    total = sum(counter.values())
    return counter[key] / total if total else 0.0


def error_rate(statuses: Iterable[int]) -> float:
    """The share of responses with a status of 500 or more."""
    items = list(statuses)
    if not items:
        return 0.0
    return sum(1 for s in items if s >= 500) / len(items)
