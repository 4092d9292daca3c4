"""The proxy-overhead section: what ``veil proxy`` does to a request before forwarding it."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.results import Loaded

Json = dict[str, Any]


def _row(label: str, s: Json) -> str:
    return f"| {label} | {s['n']:,} | {s['p50']:.2f} | {s['p95']:.2f} | {s['max']:.2f} |"


def table(data: Json) -> str:
    tail = data["newest_tenth"]
    e2e = data["end_to_end"]
    m = data["machine"]
    return "\n".join(
        [
            f"{data['steps']:,} results, the newest request {data['tokens_last']:,} estimated "
            f"tokens as the agent sent it (the newest tenth from {data['tokens_tail_first']:,}); "
            f"window {data['window']:,}; {data['batches']} requests took a batch of evictions "
            f"({tail['batch_requests']} of them in the newest tenth)"
            + (
                f"; {data['ahead']:,} went out ahead of their bookkeeping "
                f"({tail['ahead']} in the newest tenth)."
                if "ahead" in data
                else "."
            ),
            "",
            "| per request, ms | n | p50 | p95 | max |",
            "| --- | ---: | ---: | ---: | ---: |",
            _row("proxy before forwarding (parse + prepare), newest tenth", tail["proxy_ms"]),
            _row("baseline: decode + encode the whole body, newest tenth", tail["baseline_ms"]),
            *(
                [
                    _row(
                        "store writes in the background (not on the path), newest tenth",
                        tail["background_writes_ms"],
                    )
                ]
                if "background_writes_ms" in tail
                else []
            ),
            *(
                [
                    _row(
                        "bookkeeping after the answer (requests that went ahead), newest tenth",
                        tail["bookkeeping_after_ms"],
                    )
                ]
                if "bookkeeping_after_ms" in tail
                else []
            ),
            _row("proxy, whole run", data["all"]["proxy_ms"]),
            _row("HTTP, direct to an instant upstream", e2e["direct_ms"]),
            _row("HTTP, through the proxy (paced)", e2e["proxy_ms"]),
            *(
                [_row("HTTP, through the proxy (back to back)", e2e["back_to_back_ms"])]
                if "back_to_back_ms" in e2e
                else []
            ),
            "",
            f"Over HTTP the proxy adds {e2e['added_p50_ms']:.2f} ms at the median"
            + (
                f" ({e2e['back_to_back_added_p50_ms']:.2f} ms back to back). "
                if "back_to_back_added_p50_ms" in e2e
                else ". "
            )
            + f"Machine: {m['cpus']} CPUs, Python {m['python']}, load average "
            f"{m['load_average'][0]:.2f} before and {data['load_after'][0]:.2f} after; "
            f"{data['seconds']:,.0f} s.",
        ]
    )


def section(loaded: Loaded, other: Loaded | None) -> str:
    return (
        "What Veil's model-API proxy (docs/proxy.md) does to each request before forwarding "
        "it — read the conversation, capture the new results, measure, evict in a batch when "
        "over budget, stub, splice — timed in process on a growing Claude Code-like "
        "conversation, and over HTTP against an upstream that answers at once. A request that "
        "Veil's bookkeeping would not change goes out ahead of it (parse and the stubs already "
        "sent, nothing more); the bookkeeping and the store's writes run once the answer is "
        "relayed, while the agent's tools and model take seconds; with no model time here they "
        "are waited for between requests and timed apart.\n\n" + table(loaded.data)
    )
