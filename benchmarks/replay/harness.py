"""The eviction replay's harness: every policy over one trajectory (:func:`replay_one`), then
over a set in worker processes (:func:`replay_set`), summed per row into :class:`Point` s.

A row is a policy at a setting: the baselines of :mod:`benchmarks.replay.policies`, the host
agents' own policies (:data:`HOST_POLICIES`), Veil as its proxy runs it
(:func:`benchmarks.replay.proxy_policy.veil_proxy`) and Veil in its own harness under each
candidate ``ContextConfig`` (:data:`VEIL_CONFIGS`), each at every budget of
:data:`benchmarks.replay.grid.BUDGETS` where it has one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from benchmarks.replay import host_policies as H
from benchmarks.replay import policies as P
from benchmarks.replay.grid import (
    BUDGETS,
    CHOSEN,
    GOAL_BUDGETS,
    HOSTS,
    KEEP3_AT_LEAST,
    MASK_N,
    OPENCODE,
    PROXY,
    RECENCY,
    RECENCY_DEPTHS,
)
from benchmarks.replay.load import Trajectory
from benchmarks.replay.needs import RULES, Need, copied_lines, detect_needs, misses
from benchmarks.replay.proxy_policy import veil_proxy
from veil.context import ContextConfig
from veil.context.batching import BatchRule


def _codex_unscaled(t: Trajectory, budget: int) -> P.Run:
    return H.codex(t, budget, scale_cap=False)


HOST_POLICIES: dict[str, Callable[[Trajectory, int], P.Run]] = dict(
    zip(
        HOSTS,
        (
            H.claude_context_editing,
            H.claude_compaction,
            H.codex,
            _codex_unscaled,
            H.opencode_scaled,
            H.pi,
        ),
        strict=True,
    )
)
"""The host agents' own policies (:mod:`benchmarks.replay.host_policies`), at every budget,
by their row names (:data:`benchmarks.replay.grid.HOSTS`)."""


def _cfg(**kw: Any) -> ContextConfig:
    return replace(ContextConfig(), **kw)


def _batch(**kw: Any) -> ContextConfig:
    return _cfg(batch=replace(BatchRule(), **kw))


VEIL_CONFIGS: dict[str, Callable[[], ContextConfig]] = {
    "defaults": ContextConfig,
    # One knob of the defaults moved at a time (the ablation behind the choice).
    "requests left x0.5": lambda: _batch(requests_left_ratio=0.5),
    "requests left x2": lambda: _batch(requests_left_ratio=2.0),
    "headroom 1 request": lambda: _batch(headroom_requests=1.0),
    "headroom 4 requests": lambda: _batch(headroom_requests=4.0),
    "floor 0.2": lambda: _batch(floor_fill=0.2),
    "floor 0.5": lambda: _batch(floor_fill=0.5),
    "score/sqrt(tokens)": lambda: _cfg(pressure_token_exponent=0.5),
    "no touch on reference": lambda: _cfg(touch_on_reference=False),
    "superseded not first": lambda: _cfg(evict_superseded_first=False),
    "results protected 10 ticks": lambda: _cfg(protected_results_ticks=10),
    "recency weight 0.5": lambda: _cfg(
        weights=replace(
            ContextConfig().weights,
            recency=0.5,
            frequency=0.125,
            relevance=0.125,
            structure=0.125,
            cognitive=0.125,
        )
    ),
}
"""ContextConfig candidates tried on set A (``--sweep``): the defaults and one-knob variations
of them (the batch rule's and the score's). Set B never enters the choice (the re-reference
touch alone is also reported on B by the full run: it is kept only if it helps on both
sets)."""


@dataclass
class Point:
    """Sums over trajectories for one policy at one setting."""

    tokens: int = 0
    cached: int = 0
    cost: float = 0.0
    """Input cost with prompt caching (:func:`benchmarks.replay.policies.run_cost`)."""
    keep_cost: float = 0.0
    steps: int = 0
    peak: int = 0
    keep_tokens: int = 0
    keep_peak: int = 0
    trajectories: int = 0
    needs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RULES, 0))
    misses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RULES, 0))
    info: dict[str, float] = field(default_factory=dict[str, float])
    copy_needs: int = 0
    """The second detector's needs (:func:`copied_lines`) and misses, apart from the rules."""
    copy_misses: int = 0
    shape: dict[str, int] = field(default_factory=dict[str, int])
    """:class:`benchmarks.replay.policies.Shape`'s counts, summed."""

    def add(
        self,
        run: P.Run,
        keep: P.Run,
        needs: list[Need],
        copies: list[Need],
        budget: int | None = None,
    ) -> None:
        self.tokens += sum(run.tokens)
        self.cached += sum(run.cached)
        self.cost += P.run_cost(run)
        self.keep_cost += P.run_cost(keep)
        self.steps += len(run.tokens)
        self.peak += max(run.tokens)
        self.keep_tokens += sum(keep.tokens)
        self.keep_peak += max(keep.tokens)
        self.trajectories += 1
        for need, missed in zip(needs, misses(needs, run.live), strict=True):
            self.needs[need.rule] += 1
            self.misses[need.rule] += int(missed)
        self.copy_needs += len(copies)
        self.copy_misses += sum(misses(copies, run.live))
        for k, v in run.info.items():
            self.info[k] = self.info.get(k, 0.0) + v
        if run.shown:
            for k, v in asdict(P.shape(run, budget)).items():
                self.shape[k] = self.shape.get(k, 0) + v

    def merge(self, other: Point) -> None:
        for name in (
            "tokens",
            "cached",
            "cost",
            "keep_cost",
            "steps",
            "peak",
            "keep_tokens",
            "keep_peak",
            "trajectories",
            "copy_needs",
            "copy_misses",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for rule in RULES:
            self.needs[rule] += other.needs[rule]
            self.misses[rule] += other.misses[rule]
        for k, v in other.info.items():
            self.info[k] = self.info.get(k, 0.0) + v
        for k, n in other.shape.items():
            self.shape[k] = self.shape.get(k, 0) + n

    def summary(self) -> dict[str, Any]:
        needs = sum(self.needs.values())
        missed = sum(self.misses.values())
        return {
            "mean_tokens": round(self.tokens / max(1, self.steps), 1),
            "peak_tokens": round(self.peak / max(1, self.trajectories), 1),
            "tokens_vs_keep_all": round(self.tokens / max(1, self.keep_tokens), 4),
            "cache_hit_share": round(self.cached / max(1, self.tokens), 4),
            "cost_per_step": round(self.cost / max(1, self.steps), 1),
            "cost_vs_keep_all": round(self.cost / self.keep_cost, 4) if self.keep_cost else None,
            "peak_vs_keep_all": round(self.peak / max(1, self.keep_peak), 4),
            "needs": needs,
            "misses": missed,
            "miss_rate": round(missed / needs, 4) if needs else None,
            "miss_rate_by_rule": {
                r: round(self.misses[r] / self.needs[r], 4) if self.needs[r] else None
                for r in RULES
            },
            "needs_by_rule": dict(self.needs),
            "copied_lines": {
                "needs": self.copy_needs,
                "miss_rate": round(self.copy_misses / self.copy_needs, 4)
                if self.copy_needs
                else None,
            },
            "info": {k: round(v / max(1, self.trajectories), 3) for k, v in self.info.items()},
            "shape": dict(self.shape),
        }


@dataclass(frozen=True)
class Job:
    traj: Trajectory
    veil_configs: tuple[str, ...]
    baselines: bool = True
    veil_budgets: tuple[float, ...] = BUDGETS


def proxy_row(config: str) -> str:
    """The row family of Veil's proxy under a candidate configuration (the chosen one's is
    :data:`PROXY`)."""
    return PROXY if config == CHOSEN else f"{PROXY} [{config}]"


def budget_for(t: Trajectory, f: float) -> int:
    return t.fixed_tokens + int(f * (t.keep_all_peak() - t.fixed_tokens))


def replay_one(job: Job) -> tuple[dict[str, Point], list[Need]]:
    """Every policy over one trajectory: {policy key: Point}, and its needs."""
    from veil.embed import default_embedder

    t = job.traj
    needs = detect_needs(t.steps, f"{t.system}\n{t.instance}")
    copies = copied_lines(t.steps, f"{t.system}\n{t.instance}")
    keep = P.keep_all(t)
    out: dict[str, Point] = {}

    def record(key: str, run: P.Run, budget: int | None = None) -> None:
        out.setdefault(key, Point()).add(run, keep, needs, copies, budget)

    if job.baselines:
        record("keep-all", keep)
        for n in MASK_N:
            record(f"mask N={n}", P.mask_last_n(t, n))
        for protect, minimum in OPENCODE:
            record(
                f"opencode {protect // 1000}k/{minimum // 1000}k",
                P.opencode_prune(t, protect, minimum),
            )
        for f in BUDGETS:
            b = budget_for(t, f)
            record(f"truncate-oldest@{f}", P.truncate_oldest(t, b), b)
            record(f"truncate-oldest obs@{f}", P.truncate_oldest_observations(t, b), b)
            record(f"compaction@{f}", P.compaction(t, b), b)
            record(f"LRU@{f}", P.lru(t, b, needs), b)
            for name, policy in HOST_POLICIES.items():
                record(f"{name}@{f}", policy(t, b), b)
            record(f"{KEEP3_AT_LEAST}@{f}", H.context_editing_clear_at_least(t, b), b)
            if f in GOAL_BUDGETS:
                for d in RECENCY_DEPTHS:
                    record(f"{RECENCY} d={d:g}@{f}", P.recency_batch(t, b, d), b)
    embedder = default_embedder()
    for f in job.veil_budgets:
        b = budget_for(t, f)
        record(f"{PROXY}@{f}", veil_proxy(t, b, embedder), b)
    for name in job.veil_configs:
        # The chosen config is drawn over every budget; the others (ablations) at the goals',
        # in the harness and through the proxy alike.
        budgets = [f for f in job.veil_budgets if name == CHOSEN or f in GOAL_BUDGETS]
        for f in budgets:
            b = budget_for(t, f)
            record(f"veil[{name}]@{f}", P.veil(t, b, embedder, VEIL_CONFIGS[name]()), b)
            if name != CHOSEN:
                run = veil_proxy(t, b, embedder, VEIL_CONFIGS[name]())
                record(f"{proxy_row(name)}@{f}", run, b)
    return out, needs


def replay_set(
    trajs: list[Trajectory],
    veil_configs: tuple[str, ...],
    *,
    baselines: bool = True,
    workers: int = 2,
    veil_budgets: tuple[float, ...] = BUDGETS,
) -> tuple[dict[str, Point], list[tuple[str, Need]]]:
    totals: dict[str, Point] = {}
    all_needs: list[tuple[str, Need]] = []
    jobs = [Job(t, veil_configs, baselines, veil_budgets) for t in trajs]
    results: Iterable[tuple[dict[str, Point], list[Need]]]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(replay_one, jobs, chunksize=4))
    else:
        results = [replay_one(j) for j in jobs]
    for t, (points, needs) in zip(trajs, results, strict=True):
        for key, point in points.items():
            totals.setdefault(key, Point()).merge(point)
        all_needs.extend((t.id, n) for n in needs)
    return totals, all_needs


def set_entry(trajs: list[Trajectory], totals: dict[str, Point]) -> dict[str, Any]:
    rows = {k: p.summary() for k, p in totals.items()}
    keep = rows.get("keep-all") or next(iter(rows.values()))
    return {
        "trajectories": len(trajs),
        "steps": sum(len(t.steps) for t in trajs),
        "needs": keep["needs"],
        "needs_by_rule": keep["needs_by_rule"],
        "copied_lines_needs": keep["copied_lines"]["needs"],
        "rows": rows,
    }
