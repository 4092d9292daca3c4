"""The three eviction stages, each with a real predicate. Pure; nothing is ever deleted.

1. **Threshold**: live, unprotected items scoring below T move to warm.
2. **Pressure**: if live tokens still exceed the budget (window − reserve), the lowest-scoring
   unprotected items move to warm until live tokens are at or under ``target_fill × budget``
   (lowest score per token freed first, see :func:`plan`).
   Acting here is pressure: it lets T climb.
3. **Cold**: warm items whose durable-horizon retrievability fell below a floor and that were
   not touched for ``cold_after_ticks`` ticks move to cold, leaving a pointer.

Protected items (pinned, intent, correction, the last 12 turns, items loaded by hand in the
last few ticks) are never candidates in stage 1 or 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from veil.context.items import Tier

Floats = NDArray[np.float64]
Bools = NDArray[np.bool_]


@dataclass(frozen=True)
class Move:
    id: str
    to: Tier
    stage: Literal[1, 2, 3]
    reason: str


@dataclass(frozen=True)
class Plan:
    moves: tuple[Move, ...]
    pressure: bool
    live_tokens_before: int
    live_tokens_after: int


def plan(
    ids: Sequence[str],
    *,
    scores: Floats,
    tokens: Floats,
    live: Bools,
    warm: Bools,
    protected: Bools,
    durable_r: Floats,
    idle_ticks: Floats,
    threshold: float,
    budget: int,
    target_fill: float,
    cold_retrievability: float,
    cold_after_ticks: int,
    stub_tokens: Floats | None = None,
    soft_protected: Bools | None = None,
    token_exponent: float = 0.0,
    threshold_exempt: Bools | None = None,
    superseded: Bools | None = None,
) -> Plan:
    """The moves of the three stages over parallel arrays (one entry per item).

    Token counts are of the prompt as rendered: an evicted tool result still costs its stub
    (``stub_tokens``), so moving an item saves ``tokens − stub_tokens``.

    Stage 2 takes items in ascending ``score / saved^token_exponent`` (``saved`` = tokens the
    move frees, at least 1): with exponent 0 it is plain lowest-score-first; above 0 a large
    item with a middling score goes before several small ones whose scores are a little lower,
    because one move frees what would otherwise cost several evictions (each a possible miss).

    ``superseded`` items (a later call repeated them) go first in stage 2, oldest first.

    ``threshold_exempt`` items (the recent turns) are never stage-1 candidates but compete in
    stage 2 like any unprotected item. Softly protected items yield only when the unprotected
    ones cannot bring the prompt under the budget, longest untouched first, and only down to the
    budget.
    """
    stubs = stub_tokens if stub_tokens is not None else np.zeros_like(tokens)
    soft = soft_protected if soft_protected is not None else np.zeros_like(protected)
    hard = protected
    protected = hard | soft
    moves: list[Move] = []
    before = int(tokens[live].sum() + stubs[~live].sum())
    exempt = threshold_exempt if threshold_exempt is not None else np.zeros_like(protected)
    stage1 = live & ~protected & ~exempt & (scores < threshold)
    for i in np.flatnonzero(stage1):
        moves.append(Move(ids[int(i)], "warm", 1, f"score {scores[i]:.3f} < T {threshold:.3f}"))
    remaining = live & ~stage1
    live_tokens = int(tokens[remaining].sum() + stubs[~remaining].sum())
    pressure = live_tokens > budget
    if pressure:
        goal = int(budget * target_fill)
        before_pressure = live_tokens

        def evict(order: NDArray[np.intp], stop_at: int, why: str) -> None:
            nonlocal live_tokens
            for i in order:
                if live_tokens <= stop_at:
                    return
                moves.append(
                    Move(
                        ids[int(i)],
                        "warm",
                        2,
                        f"window over budget ({before_pressure:,} > {budget:,} tokens), "
                        f"evicting down to {goal:,}; {why} {scores[i]:.3f}",
                    )
                )
                live_tokens -= int(tokens[i] - stubs[i])

        # An item whose stub costs as much as its content frees nothing: never a candidate.
        frees = tokens > stubs
        # First the unprotected items, lowest score per token freed first (ties in row order,
        # so the plan is deterministic), down to the goal.
        pool = np.flatnonzero(remaining & ~protected & frees)
        saved = np.maximum(1.0, tokens[pool] - stubs[pool])
        key = scores[pool] / saved**token_exponent if token_exponent else scores[pool]
        if superseded is not None and superseded[pool].any():
            first = pool[superseded[pool]]
            evict(first, goal, "repeated by a later call; score")
            rest = ~superseded[pool]
            pool, key = pool[rest], key[rest]
        evict(pool[np.argsort(key, kind="stable")], goal, "lowest score")
        # Only if still over budget, the softly protected ones (never pinned, intent,
        # correction), longest untouched first — an item the model just expanded or loaded is
        # the freshest, however old its capture — and only as far as the budget needs.
        if live_tokens > budget:
            pool = np.flatnonzero(remaining & soft & ~hard & frees)
            evict(
                pool[np.argsort(-idle_ticks[pool], kind="stable")], budget, "soft protection lifted"
            )
    stage3 = warm & (durable_r < cold_retrievability) & (idle_ticks >= cold_after_ticks)
    for i in np.flatnonzero(stage3):
        moves.append(
            Move(
                ids[int(i)],
                "cold",
                3,
                f"durable R {durable_r[i]:.2f} < "
                f"{cold_retrievability:.2f}, idle "
                f"{int(idle_ticks[i])} ticks",
            )
        )
    return Plan(tuple(moves), pressure, before, live_tokens)
