"""A turn boundary's eviction over a working set: the three stages' plan with what protects
what, then what follows it — turns leave with their results, read excerpts shrink to stubs, and
(only after the provider refused a request as too long) unread results too large to fit keep
their head and tail.

:func:`plan_step` gathers the plan's inputs from the working set (scores, protection, the
results the model has not read) and runs :func:`veil.context.eviction.plan`; it and
:func:`with_their_turns` are pure. The two excerpt
steps decide one move at a time against the working set as moved so far (a move changes what
the prompt costs, collapsed runs' notes included), so they apply each move through the engine's
``move`` — the one place that records a tier change — and return what they did. :func:`evict`
is the whole sequence, in the order a turn boundary runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from veil.context import fsrs
from veil.context.eviction import Bools, Depth, Move, Plan, plan
from veil.context.items import ContextItem, Tier
from veil.context.render import excerpt
from veil.context.workingset import WorkingSet

Mover = Callable[[ContextItem, Tier, str, int], object]
"""Apply one stage-2 move: ``(item, tier, reason, excerpt characters)``."""
Apply = Callable[[Move], object]
"""Apply one planned move (its stage and reason recorded with it)."""


@dataclass(frozen=True)
class StepPlan:
    plan: Plan
    hard: Bools
    """Never moved by the plan: pinned, intent, correction, and the results not read yet."""
    soft: Bools
    unread: Bools
    """Results the model has not read yet (after the conversation's last assistant message)."""


def plan_step(
    ws: WorkingSet,
    *,
    tick: int,
    now: datetime,
    threshold: float,
    budget: int,
    unread: Bools,
    batch: bool,
    depth: Depth | None,
) -> StepPlan:
    """The three stages' moves at a turn boundary: stage 3 always, stages 1 and 2 only in a
    batch, down to ``depth``. A result the model has not read yet (``unread``) is never moved:
    it asked for it."""
    config = ws.config
    c = ws.cols
    idle_ticks = tick - c.view("last_tick")
    # Durable retrievability matters only to stage 3 (warm items idle long enough): computed
    # for those rows alone (1 elsewhere, which no floor is above).
    durable_r = np.ones(c.size, dtype=np.float64)
    aging = np.flatnonzero(c.flag("warm") & (idle_ticks >= config.cold_after_ticks))
    if len(aging):
        wall_days = np.maximum(0.0, now.timestamp() - c.f["last_wall"][aging]) / 86400.0
        durable_r[aging] = fsrs.retrievability_many(wall_days, c.f["durable_stability"][aging])
    hard, soft, exempt = ws.protected(tick)
    hard = hard | unread
    result = plan(
        ws.ids,
        # outside a batch only stage 3 runs, which reads no score
        scores=ws.scores(tick) if batch else np.zeros(c.size, dtype=np.float64),
        tokens=c.view("tokens"),
        live=c.flag("live"),
        warm=c.flag("warm"),
        protected=hard,
        soft_protected=soft,
        durable_r=durable_r,
        idle_ticks=idle_ticks,
        threshold=threshold,
        budget=max(1, budget - ws.correction),
        depth=None if depth is None else _corrected(depth, ws.correction),
        cold_retrievability=config.cold_retrievability,
        cold_after_ticks=config.cold_after_ticks,
        stub_tokens=c.view("stub_tokens"),
        token_exponent=config.pressure_token_exponent,
        threshold_exempt=exempt,
        superseded=c.flag("superseded") if config.evict_superseded_first else None,
        stub_shorter=c.flag("stub_shorter"),
        batch=batch,
    )
    return StepPlan(result, hard, soft, unread)


def _corrected(depth: Depth, correction: int) -> Depth:
    """``depth`` in the working set's own count (the rendering measured ``correction`` more)."""
    return replace(
        depth, fit=max(1, depth.fit - correction), floor=max(0, depth.floor - correction)
    )


def with_their_turns(
    ws: WorkingSet, moves: Sequence[Move], protected: Bools, *, sweep: bool = False
) -> list[Move]:
    """A turn whose results all leave the prompt leaves with them (unless it is protected:
    intent, correction, the newest turns): like truncation, the prompt loses the pair, not
    just its tool result — but the pair stays addressable. With ``sweep`` (a batch: the prompt
    changes anyway), also a turn whose results left at an earlier batch while it was
    protected."""
    out: list[Move] = []
    leaving = {m.id for m in moves if m.to != "live"}
    why = {ws.items[m.id].parent: m for m in moves if m.to != "live"}
    if sweep:
        for row in np.flatnonzero(ws.cols.flag("result") & ~ws.cols.flag("live")).tolist():
            parent = ws.items[ws.ids[row]].parent
            if parent is not None and parent not in why:
                why[parent] = Move(ws.ids[row], "warm", 2, "its results left at an earlier batch")
    for parent, move in why.items():
        if parent is None or parent in leaving:
            continue
        turn = ws.items.get(parent)
        if turn is None or turn.tier != "live" or protected[ws.row(parent)]:
            continue
        if all(ws.items[s].tier != "live" or s in leaving for s in ws.children(parent)):
            out.append(Move(parent, "warm", move.stage, f"with its results: {move.reason}"))
            leaving.add(parent)
    return out


def shrink_excerpts(ws: WorkingSet, unread: Bools, move: Mover) -> list[Move]:
    """In a batch, a result clipped after an overflow, which the model has read by now, keeps a
    one-line stub instead of its head and tail (the batch rewrites the prompt anyway)."""
    done: list[Move] = []
    reason = "read: its excerpt becomes a stub"
    for row in np.flatnonzero(ws.cols.flag("clipped") & ~unread).tolist():
        item = ws.items[ws.ids[row]]
        move(item, item.tier, reason, 0)
        done.append(Move(item.id, item.tier, 2, reason))
    return done


def clip_unread(
    ws: WorkingSet,
    unread: Bools,
    limit: int,
    move: Mover,
    *,
    count_tokens: Callable[[str], int],
    min_tokens: int,
) -> list[Move]:
    """Only after the provider refused a request as too long: when the results the model has
    not read cannot fit ``limit`` even with everything else evicted, the largest keep their head
    and tail (at least ``min_tokens``; the whole text warm, its pointer in the excerpt, whose
    note says why) until the prompt fits."""
    over = ws.live_tokens() - limit
    if over <= 0:
        return []
    rows = [int(i) for i in np.flatnonzero(unread & ws.cols.flag("live"))]
    rows.sort(key=lambda r: -ws.cols.f["tokens"][r])
    done: list[Move] = []
    for row in rows:
        if over <= 0:
            break
        item = ws.items[ws.ids[row]]
        # The excerpt carries a line saying what is left out: charge it too.
        note = count_tokens(excerpt(replace(item, excerpt=1), ws.config.expand_tool))
        keep_tokens = max(min_tokens, item.tokens - over - note)
        chars = int(len(item.content) * keep_tokens / max(1, item.tokens))
        if chars >= len(item.content):
            continue
        reason = f"refused as too long: {keep_tokens:,} of {item.tokens:,} tokens shown"
        move(item, "warm", reason, chars)
        over = ws.live_tokens() - limit
        done.append(Move(item.id, "warm", 2, reason))
    return done


def evict(
    ws: WorkingSet,
    *,
    batch: bool,
    first_pass: bool,
    tick: int,
    now: datetime,
    threshold: float,
    budget: int,
    depth: Depth | None,
    unread: Bools,
    clip_to: int | None,
    apply: Apply,
    move: Mover,
    count_tokens: Callable[[str], int],
) -> tuple[list[Move], Plan]:
    """Plan against ``ws`` as it is now and apply the moves, in order: the plan's, the turns
    that leave with them and, in a batch, read excerpts shrunk to stubs (and their turns) and —
    only with ``clip_to``, after an overflow — unread results clipped to it. Not
    ``first_pass``: again after a rendering measured more than planned — only window pressure
    (stage 2, no threshold, no stage 3) down to ``depth`` (the caller's
    :meth:`~veil.context.eviction.Depth.down_to` the budget). Returns every move and the
    plan."""
    decided = plan_step(
        ws,
        tick=tick,
        now=now,
        threshold=threshold if first_pass else -1.0,
        budget=budget,
        unread=unread,
        batch=batch,
        depth=depth,
    )
    result = decided.plan
    hard, soft = decided.hard, decided.soft
    if not first_pass:  # only window pressure: no stage 3 again
        result = replace(result, moves=tuple(m for m in result.moves if m.stage == 2))
    moves = [*result.moves, *with_their_turns(ws, result.moves, hard | soft, sweep=batch)]
    for planned in moves:
        apply(planned)
    if not batch:
        return moves, result
    shrunk = shrink_excerpts(ws, unread, move)
    for planned in with_their_turns(ws, shrunk, hard | soft):
        apply(planned)
        shrunk.append(planned)
    moves.extend(shrunk)
    if clip_to is not None:
        moves.extend(
            clip_unread(
                ws,
                unread,
                clip_to,
                move,
                count_tokens=count_tokens,
                min_tokens=ws.config.excerpt_min_tokens,
            )
        )
    return moves, result
