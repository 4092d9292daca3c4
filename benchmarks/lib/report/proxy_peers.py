"""The proxy-peers section: Veil's proxy and CliffCompaction's, run as proxies on the same
bodies (:mod:`benchmarks.proxy_peers`)."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.results import Loaded

Json = dict[str, Any]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _ms(s: Json | None, key: str) -> str:
    return "—" if s is None or s.get(key) is None else f"{s[key]:.2f}"


def _load(xs: list[float] | None) -> str:
    return ", ".join(f"{x:.2f}" for x in xs or []) or "n/a"


def table(data: Json) -> str:
    rows = [
        "| set | f | arm | requests | tokens vs keep-all | miss rate | cost vs keep-all "
        "| over budget | p50 ms | p95 ms | added p50 ms | added p95 ms |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, by_f in data["results"].items():
        for f, arms in by_f.items():
            for arm, r in arms.items():
                lat, added = r["latency_ms"], r["added_ms"]
                rows.append(
                    f"| {name} | {f} | {arm} | {r['requests']:,} | "
                    f"{_pct(r['tokens_vs_keep_all'])} | {_pct(r['miss_rate'])} | "
                    f"{_pct(r['cost_vs_keep_all'])} | {r['over_budget']:,} | "
                    f"{_ms(lat, 'p50')} | {_ms(lat, 'p95')} | "
                    f"{_ms(added, 'p50')} | {_ms(added, 'p95')} |"
                )
    sets = ", ".join(
        f"set {k}: {v['trajectories']} trajectories (every {v['every']}th), {v['steps']:,} steps"
        for k, v in data["sets"].items()
    )
    m = data["machine"]
    errors = sum(r["errors"] for by_f in data["results"].values() for arms in by_f.values()
                 for r in arms.values())  # fmt: skip
    return "\n".join(
        [
            *rows,
            "",
            f"{sets}. Peer: {data['peer']['name']} {data['peer']['version']} "
            f"(its size estimate is {data['cliff_estimate_over_ours']:.2f}× ours on the same "
            f"bodies). Errors: {errors}. Machine: {m['cpus']} CPUs, Python {m['python']}, "
            f"load average {_load(m.get('load_average'))} before, "
            f"{_load(data.get('load_after'))} after; "
            f"{data['seconds']:,.0f} s{' (quick)' if data.get('quick') else ''}.",
        ]
    )


def section(loaded: Loaded, other: Loaded | None) -> str:
    return (
        "Veil's proxy and a published peer, CliffCompaction (an Anthropic/OpenAI API proxy "
        "that replaces older turns with a summary over a threshold), run as the proxies they "
        "are over HTTP on the same Claude Code-like request bodies at the same budget, beside "
        "a pass-through (keep-all): what reaches the provider, the need-based misses, the "
        "cost with prompt caching, and the latency each adds per request. Veil runs as "
        "`veil proxy --window W` and Cliff as `cliffcompaction serve`, each a process of its "
        "own per trajectory and budget; after every request each arm gets 25 ms untimed (an "
        "agent's tools and model take seconds), in which what a proxy does after an answer "
        "runs (Veil's bookkeeping of a request that went out ahead of it, its usage record "
        "and store writes).\n\n" + table(loaded.data)
    )
