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
class Depth:
    """How deep a batch that pays for itself goes: the conversation down to ``fit`` tokens (the
    budget less room for the next requests), and at least ``factor`` times the tokens that
    follow its first change removed (what pays for rewriting them) unless that would take it
    below ``floor``."""

    fit: int
    floor: int = 0
    factor: float = 0.0
    rewrite: float = 1.15
    """What rewriting a cached token costs more than reading it (write − read prices)."""
    saving: float = 1.25
    """What evicting a token saves, once and over the requests to come (write + read × R)."""
    must_fit: bool = False
    """The provider refused the request as too long: when even evicting every candidate
    leaves the prompt over the budget, everything that can go goes anyway (the retry must be
    as small as it can). Otherwise such a batch does not run at all: it would rewrite the
    cache and take results the model is still reading without bringing the request under the
    budget — what is left over it is the agent's own text and the results it has not read,
    which the host's own compaction, not an eviction, can reduce."""

    def need(self, live: int, suffix: float) -> float:
        """Tokens to free when the batch's first change is followed by ``suffix`` tokens."""
        return max(live - self.fit, min(self.factor * suffix, live - self.floor))

    @classmethod
    def down_to(cls, tokens: int, *, must_fit: bool = False) -> Depth:
        """Only as far as ``tokens`` (no break-even): a correction after a rendering measured
        more than planned, or an overflow retry (``must_fit``)."""
        return cls(fit=tokens, floor=tokens, must_fit=must_fit)


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
    live_tokens = before
    pressure = before > budget
    exempt = threshold_exempt if threshold_exempt is not None else np.zeros_like(protected)
    # An item whose stub is not smaller than its content frees nothing: never a candidate.
    frees = (tokens > stubs) if stub_shorter is None else (stub_shorter & (tokens > stubs))
    if batch:
        goal = depth if depth is not None else Depth.down_to(int(budget * target_fill))
        gain = np.maximum(0.0, tokens - stubs)
        # What the prompt holds from each row on, as it is now: the tokens a change at that row
        # makes the provider write again (rows are in conversation order).
        current = np.where(live, tokens, stubs)
        suffix = np.cumsum(current[::-1])[::-1] if len(current) else current
        candidates = live & ~hard & frees
        saved = np.maximum(1.0, gain)
        key = scores / saved**token_exponent if token_exponent else scores.copy()
        repeated = superseded if superseded is not None else np.zeros_like(live)
        # Softly protected items go only when nothing else can fit: after every other — unless
        # a later call repeated them (then they hold nothing the newer result does not).
        key[soft & ~repeated] += SOFT
        rows = np.flatnonzero(repeated)  # repeated by a later call: first, oldest first
        key[rows] = -1e6 + rows.astype(np.float64)
        below = candidates & ~soft & ~exempt & (scores < threshold)
        chosen = choose_batch(candidates, key, gain, suffix, before, goal, below, budget)
        why = f"a batch ({before:,} tokens, budget {budget:,}, down to {goal.fit:,} or less); "
        for i in chosen:
            if below[i]:
                reason = f"score {scores[i]:.3f} < T {threshold:.3f}"
                moves.append(Move(ids[int(i)], "warm", 1, reason))
            else:
                label = (
                    "repeated by a later call; score"
                    if repeated[i]
                    else "soft protection lifted"
                    if soft[i]
                    else "lowest score"
                )
                moves.append(Move(ids[int(i)], "warm", 2, f"{why}{label} {scores[i]:.3f}"))
            live_tokens -= int(gain[i])
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


SOFT = 100.0
"""Added to a softly protected item's key: it goes after every other, and only to fit."""
MAX_CUTS = 48
"""Where a batch may start changing the prompt: at most this many positions are weighed."""


def choose_batch(
    candidates: Bools,
    key: Floats,
    gain: Floats,
    suffix: Floats,
    live_tokens: int,
    goal: Depth,
    riders: Bools,
    limit: int,
) -> list[int]:
    """The rows a batch evicts, in eviction order: the least valuable set that is deep enough.

    A batch changes the prompt from its first evicted row on: every token after it is written
    to the provider's cache again. So the batch is weighed at each possible *cut* (a row from
    which on it may evict): the candidates after the cut, lowest ``key`` first, until the batch
    frees what ``goal`` asks for that cut — the conversation under its fit, and either enough
    to pay for rewriting what follows the cut or down to the floor. Of the cuts that can get
    there, the one whose worst victim has the lowest key wins (nothing more valuable is evicted
    than must be); among equals, the latest (the least to rewrite). ``riders`` (scores under
    the threshold) after the cut go too: they cost no more rewriting. A softly protected item
    (its key is above :data:`SOFT`) goes only to get down to the fit, never to pay for the
    rewrite. When no cut gets there, every candidate goes — unless even that leaves the
    prompt over ``limit`` (the budget) and the goal is not :attr:`Depth.must_fit`: then
    nothing goes (see there)."""
    rows = np.flatnonzero(candidates)
    if not len(rows):
        return []
    if not goal.must_fit and live_tokens - float(gain[rows].sum()) > limit:
        return []
    order = rows[np.argsort(key[rows], kind="stable")]
    cuts = (
        rows
        if len(rows) <= MAX_CUTS
        else rows[np.linspace(0, len(rows) - 1, MAX_CUTS, dtype=np.intp)]
    )
    best: tuple[float, int] | None = None
    best_victims: list[int] = []
    for cut in cuts.tolist():
        pool = order[order >= cut]
        plain = pool[key[pool] < SOFT]
        found = _victims(plain, riders, gain, key, goal.need(live_tokens, float(suffix[cut])))
        if found is None:  # softly protected items may go to fit, never to pay
            found = _victims(pool, riders, gain, key, live_tokens - goal.fit)
        if found is not None and (best is None or (found[1], -cut) < best):
            best, best_victims = (found[1], -cut), found[0]
    if best is None:  # nothing gets the conversation down to its fit: everything goes
        return order.tolist()
    return sorted(best_victims, key=lambda r: (key[r], r))


def _victims(
    pool: NDArray[np.intp], riders: Bools, gain: Floats, key: Floats, need: float
) -> tuple[list[int], float] | None:
    """``pool``'s riders and then its rows in order until they free ``need`` tokens, with the
    highest key among them; None when the whole pool frees less."""
    ride = pool[riders[pool]]
    rest = pool[~riders[pool]]
    freed = float(gain[ride].sum())
    top = float(key[ride].max()) if len(ride) else -np.inf
    if freed >= need:
        return ride.tolist(), top
    total = freed + np.cumsum(gain[rest])
    k = int(np.searchsorted(total, need))
    if k >= len(rest):
        return None
    return [*ride.tolist(), *rest[: k + 1].tolist()], max(top, float(key[rest[k]]))
