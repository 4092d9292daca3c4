"""Per-endpoint summaries and the text report."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from logstats.parse import Hit
from logstats.stats import error_rate, histogram, mean, percentile

LATENCY_EDGES = (0, 50, 100, 250, 500, 1000, 2500)


@dataclass(frozen=True)
class Endpoint:
    method: str
    endpoint: str
    hits: int
    p50: float
    p90: float
    p99: float
    mean_ms: float
    errors: float
    bytes_out: int


def summarise(hits: Iterable[Hit]) -> list[Endpoint]:
    """One summary per (method, endpoint), busiest first (ties by name)."""
    groups: dict[tuple[str, str], list[Hit]] = defaultdict(list)
    for hit in hits:
        groups[(hit.method, hit.endpoint)].append(hit)
    out = []
    for (method, endpoint), group in groups.items():
        ms = [h.ms for h in group]
        out.append(
            Endpoint(
                method=method,
                endpoint=endpoint,
                hits=len(group),
                p50=percentile(ms, 50),
                p90=percentile(ms, 90),
                p99=percentile(ms, 99),
                mean_ms=round(mean(ms), 1),
                errors=round(error_rate(h.status for h in group), 4),
                bytes_out=sum(h.size for h in group),
            )
        )
    return sorted(out, key=lambda e: (-e.hits, e.method, e.endpoint))


def status_classes(hits: Iterable[Hit]) -> Counter[str]:
    return Counter(f"{h.status // 100}xx" for h in hits)


def busiest_clients(hits: Iterable[Hit], n: int = 5) -> list[tuple[str, int]]:
    return Counter(h.client for h in hits).most_common(n)


def render(hits: list[Hit]) -> str:
    lines = [f"{len(hits)} requests"]
    for cls, count in sorted(status_classes(hits).items()):
        lines.append(f"  {cls}: {count}")
    lines.append("latency histogram (ms):")
    counts = histogram((h.ms for h in hits), LATENCY_EDGES)
    for edge, count in zip(LATENCY_EDGES, counts, strict=True):
        lines.append(f"  >= {edge:>5}: {count}")
    lines.append("endpoints:")
    for e in summarise(hits):
        lines.append(
            f"  {e.method:<6} {e.endpoint:<28} {e.hits:>4}  p50 {e.p50:>5.0f}  p90 {e.p90:>5.0f}"
            f"  p99 {e.p99:>5.0f}  errors {e.errors:.1%}"
        )
    return "\n".join(lines)
