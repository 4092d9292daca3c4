"""Issue 33's bill goals on a small sample, for trying a change to the batch rule in minutes.

Run from the repository root::

    python -m benchmarks.replay.bill_sample                 # every 12th trajectory of each set
    python -m benchmarks.replay.bill_sample --every 6 --workers 2
    python -m benchmarks.replay.bill_sample --attribution   # where the proxy's batches cost, set B

The same rows and goals as ``python -m benchmarks.eviction_replay`` (its
:func:`~benchmarks.replay.harness.replay_set` and :func:`~benchmarks.replay.goals.bill_goals`)
on every ``--every``-th trajectory of both sets, printed, not written anywhere: through the
proxy and in the harness, at f = 0.5 and 0.625, the tokens, misses and cost with caching beside
each baseline's misses at the same token share. A sample for trying changes, not a result: the
figures of record are the full run's (docs/benchmarks.md).

``--attribution`` splits the proxy's extra cost on set B at f = 0.5 by batch: for each request
whose prompt does not start with the previous one, what it paid beyond a request whose prefix
held, and how many requests were left in the trajectory after it — the first batch of a
trajectory, later ones, and back-to-back ones apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict

from benchmarks.replay import policies as P
from benchmarks.replay.goals import bill_goals
from benchmarks.replay.harness import budget_for, replay_set, set_entry
from benchmarks.replay.load import load
from benchmarks.replay.proxy_policy import veil_proxy
from veil.embed import default_embedder
from veil.replay.policies import call_cost, run_cost


def goals(every: int, workers: int) -> None:
    for name in ("A", "B"):
        start = time.perf_counter()
        trajectories = load(name, every=every)
        totals, _ = replay_set(trajectories, ("defaults",), workers=workers)
        found = bill_goals(set_entry(trajectories, totals)["rows"], "veil[defaults]")
        seconds = time.perf_counter() - start
        print(f"set {name}: {len(trajectories)} trajectories (every {every}th), {seconds:.0f} s")
        for point in found["points"]:
            proxy, harness = point["proxy"], point["harness"]
            against = ", ".join(
                f"{row} {v['miss_at_share']}" for row, v in proxy["against"].items()
            )
            print(
                f"  f={point['budget']} proxy: tokens {proxy['tokens']:.3f} misses "
                f"{proxy['miss_rate']:.3f} cost {proxy['cost']:.3f}; at its share: {against}"
            )
            print(f"    shape {json.dumps(proxy['shape'])}")
            print(
                f"  f={point['budget']} harness: tokens {harness['tokens']:.3f} misses "
                f"{harness['miss_rate']:.3f} cost {harness['cost']:.3f}; truncation at its "
                f"share {harness['truncation_at_share']}"
            )


def attribution(every: int) -> None:
    embedder = default_embedder()
    sums: defaultdict[str, float] = defaultdict(float)
    for t in load("B", every=every):
        budget = budget_for(t, 0.5)
        keep, proxy = P.keep_all(t), veil_proxy(t, budget, embedder)
        sums["keep-all cost"] += run_cost(keep)
        sums["proxy cost"] += run_cost(proxy)
        earlier = previous = False
        for k in range(1, len(proxy.tokens)):
            batch = proxy.cached[k] < proxy.tokens[k - 1]
            if batch:
                held = min(proxy.tokens[k], proxy.tokens[k - 1])
                extra = call_cost(proxy.tokens[k], proxy.cached[k]) - call_cost(
                    proxy.tokens[k], held
                )
                kind = "back to back" if previous else "later" if earlier else "first"
                sums[f"{kind}: batches"] += 1
                sums[f"{kind}: extra"] += extra
                sums[f"{kind}: requests left"] += len(proxy.tokens) - k
                earlier = True
            previous = batch
    print(f"set B, f = 0.5, every {every}th trajectory, the proxy:")
    print(
        f"  cost {sums['proxy cost']:,.0f} vs keep-all's {sums['keep-all cost']:,.0f} "
        f"(ratio {sums['proxy cost'] / sums['keep-all cost']:.4f})"
    )
    for kind in ("first", "later", "back to back"):
        n = int(sums[f"{kind}: batches"])
        if n:
            print(
                f"  {kind}: {n} batches, extra {sums[f'{kind}: extra']:,.0f}, "
                f"{sums[f'{kind}: requests left'] / n:.1f} requests left on average"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Issue 33's bill goals on a sample.")
    parser.add_argument("--every", type=int, default=12, help="every Nth trajectory (12)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--attribution", action="store_true", help="set B's batch costs")
    args = parser.parse_args(argv)
    if args.every < 1:
        parser.error(f"--every must be at least 1, not {args.every}")
    if args.attribution:
        attribution(args.every)
    else:
        goals(args.every, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
