"""What the eviction replay runs and how its rows are named: the sets, the budgets, the
samples, the baselines' settings, the host policies' names, the goals' budgets.

Only constants and :func:`family`, no ``veil`` import: the report
(:mod:`benchmarks.lib.report.eviction_replay`) renders from them and the JSON alone.
"""

from __future__ import annotations

SET_NAMES = {
    "A": "A: mini-swe-agent + Gemini 3 Pro (Verified), tuning set",
    "B": "B: SWE-agent + GPT-4 (Lite), held out",
}

BUDGETS: tuple[float, ...] = (0.25, 0.375, 0.5, 0.625, 0.75)
"""Budget = fixed + f × (keep-all peak − fixed)."""
SAMPLE = {"A": 4, "B": 3}
"""Full run: every n-th trajectory of each set (125 of 500 in A, 276 of 826 in B)."""
QUICK = 6
"""--quick: the first 6 trajectories of each set."""
SWEEP_EVERY = 10
"""--sweep: every 10th trajectory of set A (50), at the goal budgets only."""
SWEEP_SCHEMA = 3
"""Bumped when the shape of ``goals()`` changes: an older sweep file is not attached."""
SEED = 20240917
"""The seed of the hand-checked sample of needs (``eviction_needs_sample.md``)."""

MASK_N = (5, 10)
"""Observation masking: the newest N observations kept verbatim."""
OPENCODE = ((40_000, 20_000), (10_000, 5_000), (4_000, 2_000))
"""(protect, minimum): opencode's defaults, then the same 2:1 rule scaled down."""

HOSTS: tuple[str, ...] = (
    "Claude Code context editing",
    "Claude Code compaction",
    "Codex",
    "Codex (cap unscaled)",
    "opencode prune scaled",
    "pi",
)
"""The host agents' own policies (:mod:`benchmarks.replay.host_policies`), replayed at every
budget: their row names (:data:`benchmarks.replay.harness.HOST_POLICIES` gives each its
rule)."""

PROXY = "Veil proxy (veil claude)"
KEEP3_AT_LEAST = "API keep-3 + clear_at_least"
"""Anthropic's ``clear_tool_uses_20250919`` with keep 3 and ``clear_at_least`` (the cache-aware
setting users can switch on today: :func:`benchmarks.replay.host_policies.
context_editing_clear_at_least`)."""
RECENCY = "recency batch"
"""The cache-paying recency anchor (:func:`benchmarks.replay.policies.recency_batch`): its
rows are ``recency batch d=<depth>@<f>``; the report reads, per set and budget, the smallest
depth whose cost with caching is at most keep-all's."""
RECENCY_DEPTHS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
CURVES_AT_SHARE: tuple[str, ...] = (
    "truncate-oldest",
    "truncate-oldest obs",
    "compaction",
    "Claude Code compaction",
    "Claude Code context editing",
    KEEP3_AT_LEAST,
)
"""The baselines Veil's proxy is read against at its own token share (their curves over the
budgets, linear between points)."""
"""Veil as its proxy runs it inside Claude Code and Codex (:mod:`benchmarks.replay.proxy_policy`:
tool results only, evictions in batches when over budget), at every budget."""

CHOSEN = "defaults"
"""The candidate chosen on set A by ``benchmarks.eviction_replay.choose`` (re-run ``--sweep`` to
see why)."""

GOAL_BUDGETS: tuple[float, ...] = (0.375, 0.5, 0.625)
"""The budgets the goals are read at (and the ablations replayed at)."""
CURVE_BASELINES: tuple[str, ...] = ("truncate-oldest", "truncate-oldest obs", "compaction")
POINT_BASELINES: tuple[str, ...] = ("mask N=5", "mask N=10")
MARGIN_B = 0.03
"""Set B at f = 0.5: Veil's miss rate at least this far below the best baseline's."""


def family(key: str) -> tuple[str, float | None]:
    """'compaction@0.5' → ('compaction', 0.5); 'mask N=10' → ('mask N=10', None)."""
    if "@" in key:
        name, f = key.rsplit("@", 1)
        return name, float(f)
    return key, None
