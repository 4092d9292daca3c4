"""The three eviction stages, each with a real predicate. Pure; nothing is ever deleted.

1. **Threshold**: live, unprotected items scoring below T move to warm.
2. **Pressure**: the lowest-scoring unprotected items move to warm until the batch has gone
   deep enough (:class:`Depth`: under the budget with room to grow, and deep enough to pay for
   the prompt cache it breaks — :mod:`veil.context.batching` says how deep). Acting while over
   the budget is pressure: it lets T climb.
3. **Cold**: warm items whose durable-horizon retrievability fell below a floor and that were
   not touched for ``cold_after_ticks`` ticks move to cold, leaving a pointer.

Protected items (pinned, intent, correction, the last 12 turns, items loaded by hand in the
last few ticks) are never candidates in stage 1 or 2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
class Depth:
    """When a batch has gone deep enough: the conversation is at most ``fit`` tokens, and it
    either removed at least ``factor`` times the tokens that follow its first change (it pays
    for the cache it breaks) or reached ``floor``."""

    fit: int
    floor: int = 0
    factor: float = 0.0

    def enough(self, freed: int, suffix: int, live: int) -> bool:
        if live > self.fit:
            return False
        return live <= self.floor or freed >= self.factor * suffix

    @classmethod
    def down_to(cls, tokens: int) -> Depth:
        """Only as far as ``tokens`` (no break-even): a correction after a rendering measured
        more than planned, or an overflow retry."""
        return cls(fit=tokens, floor=tokens)


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
    depth: Depth | None = None,
    target_fill: float = 1.0,
    cold_retrievability: float,
    cold_after_ticks: int,
    stub_tokens: Floats | None = None,
    soft_protected: Bools | None = None,
    token_exponent: float = 0.0,
    threshold_exempt: Bools | None = None,
    superseded: Bools | None = None,
    stub_shorter: Bools | None = None,
    batch: bool = True,
) -> Plan:
    """The moves of the three stages over parallel arrays (one entry per item).

    Token counts are of the prompt as rendered: an evicted tool result still costs its stub
    (``stub_tokens``), so moving an item saves ``tokens − stub_tokens``.

    Stage 2 takes items in ascending ``score / saved^token_exponent`` (``saved`` = tokens the
    move frees, at least 1): with exponent 0 it is plain lowest-score-first; above 0 a large
    item with a middling score goes before several small ones whose scores are a little lower,
    because one move frees what would otherwise cost several evictions (each a possible miss).

    ``superseded`` items (a later call repeated them) go first in stage 2, oldest first.

    Without ``batch`` only stage 3 runs (a turn boundary that changes nothing the prompt
    shows). A batch runs stages 1 and 2 until ``depth`` says it has gone deep enough (default:
    down to ``target_fill`` of the budget); the tokens a move makes the provider write again are
    those after the first moved row (rows are in conversation order). ``stub_shorter``: items
    whose stub is shorter than their content in characters — no other is ever a candidate.

    ``threshold_exempt`` items (the recent turns) are never stage-1 candidates but compete in
    stage 2 like any unprotected item. Softly protected items yield only when the unprotected
    ones cannot bring the prompt down to the batch's fit, longest untouched first, and only
    that far.
    """
    stubs = stub_tokens if stub_tokens is not None else np.zeros_like(tokens)
    soft = soft_protected if soft_protected is not None else np.zeros_like(protected)
    hard = protected
    protected = hard | soft
    moves: list[Move] = []
    before = int(tokens[live].sum() + stubs[~live].sum())
    exempt = threshold_exempt if threshold_exempt is not None else np.zeros_like(protected)
    # An item whose stub is not smaller than its content frees nothing: never a candidate.
    frees = (tokens > stubs) if stub_shorter is None else (stub_shorter & (tokens > stubs))
    stage1 = live & ~protected & ~exempt & frees & (scores < threshold) if batch else live & False
    for i in np.flatnonzero(stage1):
        moves.append(Move(ids[int(i)], "warm", 1, f"score {scores[i]:.3f} < T {threshold:.3f}"))
    remaining = live & ~stage1
    live_tokens = int(tokens[remaining].sum() + stubs[~remaining].sum())
    pressure = live_tokens > budget
    goal = depth if depth is not None else Depth.down_to(int(budget * target_fill))
    # What the prompt holds after each row, as it is now: the tokens a change at that row makes
    # the provider write again (rows are in conversation order).
    current = np.where(live, tokens, stubs)
    suffix = np.cumsum(current[::-1])[::-1] if len(current) else current
    first = int(np.flatnonzero(stage1)[0]) if stage1.any() else len(ids)
    freed = before - live_tokens

    def enough() -> bool:
        shifted = int(suffix[first]) if first < len(ids) else 0
        return goal.enough(freed, shifted, live_tokens)

    if batch and not enough():
        before_pressure = live_tokens

        def evict(order: NDArray[np.intp], stop: Callable[[], bool], why: str) -> None:
            nonlocal live_tokens, first, freed
            for i in order:
                if stop():
                    return
                moves.append(
                    Move(
                        ids[int(i)],
                        "warm",
                        2,
                        f"a batch ({before_pressure:,} tokens, budget {budget:,}, down to "
                        f"{goal.fit:,} or less); {why} {scores[i]:.3f}",
                    )
                )
                live_tokens -= int(tokens[i] - stubs[i])
                freed += int(tokens[i] - stubs[i])
                first = min(first, int(i))

        # First the unprotected items, lowest score per token freed first (ties in row order,
        # so the plan is deterministic), until the batch is deep enough.
        pool = np.flatnonzero(remaining & ~protected & frees)
        saved = np.maximum(1.0, tokens[pool] - stubs[pool])
        key = scores[pool] / saved**token_exponent if token_exponent else scores[pool]
        if superseded is not None and superseded[pool].any():
            repeated = pool[superseded[pool]]
            evict(repeated, enough, "repeated by a later call; score")
            rest = ~superseded[pool]
            pool, key = pool[rest], key[rest]
        evict(pool[np.argsort(key, kind="stable")], enough, "lowest score")
        # Only if still over the batch's fit (the budget less room for the next requests:
        # a batch that stopped at the budget would be followed by another at once), the softly
        # protected ones (never pinned, intent, correction), longest untouched first — an item
        # the model just expanded or loaded is the freshest, however old its capture.
        fit = min(budget, goal.fit)
        if live_tokens > fit:
            pool = np.flatnonzero(remaining & soft & ~hard & frees)
            evict(
                pool[np.argsort(-idle_ticks[pool], kind="stable")],
                lambda: live_tokens <= fit,
                "soft protection lifted",
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
