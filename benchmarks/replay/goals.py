"""The eviction replay's goals, read from its rows: Veil's miss rate against each baseline's
curve at equal rendered tokens, and against the masking points (one point per budget, linear
between points)."""

from __future__ import annotations

import itertools
from typing import Any

from benchmarks.replay.grid import BUDGETS, CURVE_BASELINES, GOAL_BUDGETS, POINT_BASELINES, family


def interpolate(curve: list[tuple[float, float]], x: float) -> float | None:
    """Linear interpolation of miss rate at token ratio ``x`` on a (tokens, miss) curve."""
    pts = sorted(curve)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return None


def goals(rows: dict[str, dict[str, Any]], veil: str) -> dict[str, Any]:
    """The goals for ``veil[...]``, read on the curves at equal rendered tokens (one point per
    budget, linear between points):

    - at each of :data:`GOAL_BUDGETS`, Veil's miss rate is no higher than each budgeted
      baseline's curve (truncate-oldest pairs and observations, compaction) interpolated at
      Veil's token share (``None`` when Veil's share is outside that curve);
    - for each masking point, Veil's curve interpolated at masking's token share is no higher
      than masking's miss rate (``None`` outside Veil's measured range);
    - ``best_margin_at_0.5``: the best (lowest) baseline miss rate at Veil's f = 0.5 token share
      minus Veil's (the held-out goal on set B is ≥ :data:`MARGIN_B`).
    """
    curve: list[tuple[float, float]] = []
    for f in BUDGETS:
        r = rows.get(f"{veil}@{f}")
        if r is not None:
            curve.append((r["tokens_vs_keep_all"], r["miss_rate"] or 0.0))
    curves = {
        fam: [
            (r["tokens_vs_keep_all"], r["miss_rate"] or 0.0)
            for k, r in rows.items()
            if family(k)[0] == fam
        ]
        for fam in CURVE_BASELINES
    }
    points: list[dict[str, Any]] = []
    for f in GOAL_BUDGETS:
        r = rows.get(f"{veil}@{f}")
        if r is None:
            continue
        tokens, miss = r["tokens_vs_keep_all"], r["miss_rate"] or 0.0
        against: dict[str, Any] = {}
        for fam, pts in curves.items():
            at = interpolate(pts, tokens)
            against[fam] = {
                "miss_at_equal_tokens": None if at is None else round(at, 4),
                "met": None if at is None else miss <= at,
            }
        points.append(
            {
                "budget": f,
                "tokens": tokens,
                "miss_rate": miss,
                "cache": r.get("cache_hit_share"),
                "against": against,
            }
        )
    masks: dict[str, Any] = {}
    for name in POINT_BASELINES:
        m = rows.get(name)
        if m is None:
            continue
        at = interpolate(curve, m["tokens_vs_keep_all"])
        masks[name] = {
            "tokens": m["tokens_vs_keep_all"],
            "miss_rate": m["miss_rate"] or 0.0,
            "veil_miss_at_equal_tokens": None if at is None else round(at, 4),
            "met": None if at is None else at <= (m["miss_rate"] or 0.0),
        }
    half = next((p for p in points if p["budget"] == 0.5), None)
    margin = None
    if half is not None:
        known = [v["miss_at_equal_tokens"] for v in half["against"].values()]
        known = [x for x in known if x is not None]
        if known:
            margin = round(min(known) - half["miss_rate"], 4)
    return {"points": points, "masks": masks, "best_margin_at_0.5": margin}


def goals_met(g: dict[str, Any]) -> tuple[int, int]:
    """(goals met, goals that could be read) of one ``goals()`` result."""
    verdicts = [v["met"] for p in g["points"] for v in p["against"].values()]
    verdicts += [m["met"] for m in g["masks"].values()]
    known = [v for v in verdicts if v is not None]
    return sum(1 for v in known if v), len(known)
