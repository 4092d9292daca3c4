"""The recall-profile section: where a recall's time goes, store call by store call."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.report.common import body
from benchmarks.lib.results import Loaded


def render_section(data: dict[str, Any]) -> str:
    """The section for docs/benchmarks.md (no ``##`` heading)."""
    lines = [
        f"The recall-latency workload ({data['queries']} queries after "
        f"{data['warmup_queries']} warm-up ones) at {data['n_items']:,} items. Per backend and "
        "query type: the mean recall time, and in it each store call's mean time per query "
        "(the rest is Python: entities, fusion, rows, rendering). The timers add a little time "
        "of their own; the latency table above is the measurement.",
        "",
        "| backend | query type | recall mean ms | store calls ms | Python ms | the costliest "
        "calls (ms per query) |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for run in data["runs"]:
        for kind in ("entity", "user", "keyword", "briefing"):
            t = run["types"].get(kind)
            if t is None:
                continue
            top = "; ".join(f"`{p['call']}` {p['ms_per_query']:.2f}" for p in t["parts"][:4])
            lines.append(
                f"| {run['backend']} | {kind} | {t['recall_mean_ms']:.1f} | {t['store_ms']:.1f} "
                f"| {t['python_ms']:.1f} | {top} |"
            )
    return "\n".join(lines) + "\n"


def section(loaded: Loaded, other: Loaded | None) -> str:
    return body(render_section(loaded.data))
