"""The eviction replay's goals, read from its rows: Veil's miss rate against each baseline's
curve at equal rendered tokens, and against the masking points (one point per budget, linear
between points); and the bill's goals (:func:`bill_goals`): cost with caching at most
keep-all's, misses below the baselines at Veil's own token share."""

from __future__ import annotations

import itertools
from typing import Any

from benchmarks.replay.grid import (
    BUDGETS,
    CURVE_BASELINES,
    CURVES_AT_SHARE,
    GOAL_BUDGETS,
    POINT_BASELINES,
    PROXY,
    RECENCY,
    RECENCY_DEPTHS,
    family,
)

BILL_BUDGETS: tuple[float, ...] = (0.5, 0.625)
"""The budgets issue 33's goals are read at."""


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


def paying_recency(rows: dict[str, dict[str, Any]], f: float) -> tuple[str, dict[str, Any]] | None:
    """The cache-paying recency anchor at budget ``f``: the smallest depth whose cost with
    caching is at most keep-all's (None when none is)."""
    for d in RECENCY_DEPTHS:
        key = f"{RECENCY} d={d:g}@{f}"
        row = rows.get(key)
        if row is not None and (row["cost_vs_keep_all"] or 9.0) <= 1.0:
            return key, row
    return None


def bill_goals(
    rows: dict[str, dict[str, Any]], harness: str, proxy_family: str = PROXY
) -> dict[str, Any]:
    """Issue 33's goals at each of :data:`BILL_BUDGETS`, from the rows of one set:

    - through the proxy: a cost with caching at most keep-all's, and a miss rate below each of
      :data:`CURVES_AT_SHARE` read on its curve at the proxy's own token share, and below the
      cache-paying recency anchor's (at its token share, which is close to the proxy's);
    - in the harness (``harness``, e.g. ``veil[defaults]``): a cost at most keep-all's, and a
      miss rate below truncation's at its own token share.
    """
    curves = {
        fam: [
            (r["tokens_vs_keep_all"], r["miss_rate"] or 0.0)
            for k, r in rows.items()
            if family(k)[0] == fam
        ]
        for fam in CURVES_AT_SHARE
    }
    out: list[dict[str, Any]] = []
    for f in BILL_BUDGETS:
        proxy, veil = rows.get(f"{proxy_family}@{f}"), rows.get(f"{harness}@{f}")
        entry: dict[str, Any] = {"budget": f}
        if proxy is not None:
            share, miss = proxy["tokens_vs_keep_all"], proxy["miss_rate"] or 0.0
            against: dict[str, Any] = {}
            for fam, pts in curves.items():
                at = interpolate(pts, share)
                against[fam] = {
                    "miss_at_share": None if at is None else round(at, 4),
                    "met": None if at is None else miss < at,
                }
            anchor = paying_recency(rows, f)
            if anchor is not None:
                key, row = anchor
                against[key.rsplit("@", 1)[0]] = {
                    "miss_at_share": row["miss_rate"],
                    "tokens": row["tokens_vs_keep_all"],
                    "met": miss < (row["miss_rate"] or 0.0),
                }
            cost = proxy["cost_vs_keep_all"]
            entry["proxy"] = {
                "tokens": share,
                "miss_rate": miss,
                "cost": cost,
                "cost_met": cost is not None and cost <= 1.0,
                "against": against,
                "shape": proxy.get("shape", {}),
            }
        if veil is not None:
            share, miss = veil["tokens_vs_keep_all"], veil["miss_rate"] or 0.0
            at = interpolate(curves["truncate-oldest"], share)
            cost = veil["cost_vs_keep_all"]
            entry["harness"] = {
                "tokens": share,
                "miss_rate": miss,
                "cost": cost,
                "cost_met": cost is not None and cost <= 1.0,
                "truncation_at_share": None if at is None else round(at, 4),
                "met": None if at is None else miss < at,
                "shape": veil.get("shape", {}),
            }
        out.append(entry)
    return {"points": out}
