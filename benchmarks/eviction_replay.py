"""Eviction replay: real agent trajectories, every eviction policy, tokens kept vs needs missed.

Run from the repository root::

    python -m benchmarks.eviction_replay            # sampled sets (see SAMPLE), ~25 min
    python -m benchmarks.eviction_replay --quick    # 6 per set, the chosen Veil only, < 1 min
    python -m benchmarks.eviction_replay --sweep    # ContextConfig candidates on set A only

Data: ``../shared/data/trajectories`` (``$VEIL_SHARED_DIR/data/trajectories``). Set A:
mini-swe-agent 1.15.0 + Gemini 3 Pro on SWE-bench Verified (500 runs, MIT); Veil's settings are
chosen on it. Set B: SWE-agent 0.x + GPT-4 on SWE-bench Lite (826 runs, research use) is the
held-out check. The full run takes a systematic sample (every ``SAMPLE[set]``-th trajectory in
file order) to stay within the time budget on a 2-core machine.

What is measured, exactly. For each trajectory the prompt the agent had at step ``k`` is
rebuilt (:mod:`benchmarks.replay.load`): system message + instance message (the task) + every
earlier (assistant message, observation) pair; tokens are :func:`veil.tokens.estimate_tokens`
for every part and every policy. Each policy (:mod:`benchmarks.replay.policies`) decides at every
step which earlier observations are in the prompt verbatim. Metrics per policy and budget:

- **tokens**: prompt tokens per step, pooled mean over all steps of the set, and the mean of the
  per-trajectory peak; both also relative to keep-all (ratio of the sums).
- **miss rate**: needs (:mod:`benchmarks.replay.needs`: a later step re-reads a file region,
  re-runs a command, or names an identifier an earlier observation printed) whose every source
  observation is not verbatim in the prompt at that step, over all needs.
- **cost with prompt caching**: each step's prompt priced per input token — the prefix it
  shares with the previous step's prompt (what ``cache_hit_share`` counts) read at 0.1×, the
  rest written at 1.25× (:func:`benchmarks.replay.policies.call_cost`), plus compaction's
  summarising calls priced the same way; ``cost_vs_keep_all`` is the ratio to keep-all's cost
  over the same trajectories, so a policy that keeps fewer tokens but breaks the cache more
  often pays for it. The prefix is counted segment by segment, an upper bound on what a
  provider serves (real caches are read only at their breakpoints).

Budgets are per trajectory: ``fixed + f × (peak − fixed)`` for ``f`` in :data:`BUDGETS`, where
``fixed`` is system + instance message and ``peak`` the keep-all prompt at the last step. Every
budgeted policy (truncate-oldest, compaction, LRU, Veil, and the host agents' policies) gets the
same budget; masking and the opencode prune at its fixed constants have no budget and are one
point per parameter setting.

Host agents' policies (:mod:`benchmarks.replay.host_policies`, which states each rule and its
source): Claude Code with the API's context editing (``clear_tool_uses_20250919``, keep 3,
trigger at the budget), Claude Code's compaction at the budget, Codex (compaction at 90 % of
the budget, every tool output cut to 10,000 tokens scaled to the budget as 10,000 / 272,000
of it — and unscaled, as a check), opencode's prune with its 40,000 / 20,000 constants scaled
to the budget (as 40,000 / 200,000 and 20,000 / 200,000 of it), and pi's compaction at the
budget less 16,384 / 200,000 of it keeping 20,000 / 200,000 of it. They are reported beside
Veil at the same budgets (a table and a paragraph per set); they are not part of the goals.

Goals (SPEC §9 and the issue): on both sets Veil should use fewer tokens than masking N=10 at a
lower miss rate, and have a lower miss rate than compaction at equal tokens (compaction's curve
interpolated linearly at Veil's token ratio).

Results: a markdown section on stdout, ``benchmarks/results/eviction_replay.json``
(``eviction_replay-quick.json`` with ``--quick``; ``eviction_replay-sweep.json`` with
``--sweep``), ``docs/img/eviction_replay_{A,B}.png`` and, for the full run,
``benchmarks/results/eviction_needs_sample.md`` (20 seeded needs with a verdict read by hand).

Where the parts are: the replay (trajectories, needs, policies, the harness that runs them, the
goals, the hand check) in :mod:`benchmarks.replay`, what is replayed (budgets, samples, row
names) in :mod:`benchmarks.replay.grid`; the section, tables, plots and reading paragraph in
:mod:`benchmarks.lib.report.eviction_replay`. This script chooses (:func:`choose`), runs and
writes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.lib.machine import describe, git
from benchmarks.lib.paths import IMG, RESULTS, shown
from benchmarks.lib.report.eviction_replay import (
    goal_line,
    host_comparison,
    plot,
    reading,
    render_section,
    table,
)
from benchmarks.lib.results import save
from benchmarks.replay.goals import bill_goals, goals
from benchmarks.replay.grid import (
    BUDGETS,
    CHOSEN,
    GOAL_BUDGETS,
    PROXY,
    QUICK,
    SAMPLE,
    SWEEP_EVERY,
    SWEEP_SCHEMA,
)
from benchmarks.replay.hand_check import needs_sample
from benchmarks.replay.harness import (
    HOST_POLICIES,
    VEIL_CONFIGS,
    proxy_row,
    replay_set,
    set_entry,
)
from benchmarks.replay.load import DATA, Trajectory, load
from benchmarks.replay.needs import Need, detect_needs
from veil.context import ContextConfig

__all__ = ["BUDGETS", "HOST_POLICIES", "PROXY", "host_comparison", "main", "render_section"]
"""What the tests use from here besides :func:`main` (the rest is in ``benchmarks/replay`` and
:mod:`benchmarks.lib.report.eviction_replay`)."""


def choose(sweep: dict[str, dict[str, Any]]) -> str:
    """The rule used on set A: the most bill goals met (cost with caching at most keep-all's
    through the proxy and in the harness at f = 0.5 and 0.625), then the most miss goals met
    (every baseline at every goal budget, and the masking points), then the lowest mean miss
    rate over the goal budgets."""

    def key(name: str) -> tuple[int, int, float]:
        g = sweep[name]
        bill = sum(
            1
            for p in g["bill"]["points"]
            for side in ("proxy", "harness")
            if p.get(side, {}).get("cost_met")
        )
        met = sum(1 for p in g["points"] for v in p["against"].values() if v["met"])
        met += sum(1 for m in g["masks"].values() if m["met"])
        mean_miss = sum(p["miss_rate"] for p in g["points"]) / max(1, len(g["points"]))
        return (-bill, -met, mean_miss)

    return min(sweep, key=key)


def _nth(n: int) -> str:
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n if n < 20 else n % 10, 'th') }"


# ---- the run --------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """The machine, the commit measured and whether the context engine had uncommitted
    changes."""
    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain", "src/veil/context"))
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "", False
    return describe(commit=commit, engine_dirty=dirty)


def sweep(workers: int) -> int:
    t0 = time.perf_counter()
    trajs = load("A", every=SWEEP_EVERY)
    totals, _ = replay_set(trajs, tuple(VEIL_CONFIGS), workers=workers, veil_budgets=GOAL_BUDGETS)
    entry = set_entry(trajs, totals)
    results = {
        name: {
            **goals(entry["rows"], f"veil[{name}]"),
            "bill": bill_goals(entry["rows"], f"veil[{name}]", proxy_row(name)),
        }
        for name in VEIL_CONFIGS
    }
    best = choose(results)
    data = {
        "schema": SWEEP_SCHEMA,
        "set": "A",
        "every": SWEEP_EVERY,
        "trajectories": len(trajs),
        "configs": {
            name: repr(VEIL_CONFIGS[name]()) if name != "defaults" else "ContextConfig()"
            for name in VEIL_CONFIGS
        },
        "goals": results,
        "rows": entry["rows"],
        "chosen": best,
        "seconds": round(time.perf_counter() - t0, 1),
        "machine": machine(),
    }
    print(table(entry["rows"], best))
    for name, g in results.items():
        print(goal_line(name, g))
    print(f"chosen on set A: {best}")
    save(data, "eviction_replay-sweep")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay trajectories through eviction policies.")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK} trajectories per set")
    parser.add_argument("--sweep", action="store_true", help="try VEIL_CONFIGS on set A")
    parser.add_argument(
        "--needs-sample", action="store_true", help="only write the hand-check sample of needs"
    )
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--out", type=Path, help="JSON output path")
    args = parser.parse_args(argv)
    if not (DATA / "index.jsonl").exists():
        print(f"no trajectories at {DATA}", file=sys.stderr)
        return 2
    if args.sweep:
        return sweep(args.workers)
    if args.needs_sample:
        return write_needs_sample()
    quick: bool = args.quick
    t0 = time.perf_counter()
    # The re-reference signal is kept only if it helps on both sets (the one decision that
    # looks at set B), so the full run reports the defaults without it too. --quick replays
    # the chosen configuration alone (Veil is nearly all of the run time).
    configs: tuple[str, ...] = (CHOSEN,) if quick else ("defaults", "no touch on reference")
    if CHOSEN not in configs:
        configs += (CHOSEN,)
    sets: dict[str, list[Trajectory]] = {}
    entries: dict[str, Any] = {}
    needs: dict[str, list[tuple[str, Need]]] = {}
    for name in ("A", "B"):
        trajs = load(name, limit=QUICK) if quick else load(name, every=SAMPLE[name])
        totals, needs[name] = replay_set(trajs, configs, workers=args.workers)
        entry = set_entry(trajs, totals)
        entry["goals"] = {f"veil[{c}]": goals(entry["rows"], f"veil[{c}]") for c in configs}
        entries[name] = entry
        sets[name] = trajs
    sample_note = (
        f"the first {QUICK} trajectories of each set (--quick)"
        if quick
        else "every "
        + " and every ".join(f"{_nth(SAMPLE[s])} trajectory of set {s}" for s in SAMPLE)
        + f" in file order ({len(sets['A'])} of 500 and {len(sets['B'])} of 826)"
    )
    data: dict[str, Any] = {
        "quick": quick,
        "budgets": list(BUDGETS),
        "sample_note": sample_note,
        "embedder": "veil.embed.default_embedder() (static Model2Vec)",
        "chosen": CHOSEN,
        "chosen_config": repr(VEIL_CONFIGS[CHOSEN]()),
        "sets": entries,
        "seconds": round(time.perf_counter() - t0, 1),
        "machine": machine(),
    }
    attach_sweep(data)
    data["reading"] = reading(data)
    print(render_section(data))
    save(data, "eviction_replay", quick=quick, out=args.out)
    if not quick:
        for name in ("A", "B"):
            plot(name, entries[name]["rows"], CHOSEN, IMG / f"eviction_replay_{name}.png")
        sample = RESULTS / "eviction_needs_sample.md"
        sample.write_text(needs_sample(sets, needs))
        print(f"wrote {shown(sample)} and docs/img/eviction_replay_{{A,B}}.png")
    return 0


def attach_sweep(data: dict[str, Any]) -> None:
    """Copy what ``--sweep`` tried on set A (if it was run) into the report's data."""
    path = RESULTS / "eviction_replay-sweep.json"
    if not path.exists():
        return
    sweep_data = json.loads(path.read_text())
    if sweep_data.get("schema") != SWEEP_SCHEMA:
        print(f"{path.name} is from an older --sweep (re-run it); not attached", file=sys.stderr)
        return
    data["sweep"] = {
        "trajectories": sweep_data["trajectories"],
        "every": sweep_data["every"],
        "chosen": sweep_data["chosen"],
        "configs": sweep_data["configs"],
        "goals": sweep_data["goals"],
        "commit": sweep_data.get("machine", {}).get("commit"),
        # The sweep ran at a commit whose ``ContextConfig()`` may since have become its choice.
        "chosen_is_default_now": sweep_data["configs"].get(sweep_data["chosen"])
        in ("ContextConfig()", repr(ContextConfig())),
    }


def write_needs_sample() -> int:
    """The hand-check file alone (the same sample and seed as the full run; no replay)."""
    sets = {name: load(name, every=SAMPLE[name]) for name in ("A", "B")}
    needs = {
        name: [(t.id, n) for t in trajs for n in detect_needs(t.steps, f"{t.system}\n{t.instance}")]
        for name, trajs in sets.items()
    }
    path = RESULTS / "eviction_needs_sample.md"
    path.write_text(needs_sample(sets, needs))
    print(f"wrote {shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
