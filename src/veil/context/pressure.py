"""A step's eviction over a working set: the three stages' plan with what protects what, then
what follows it — turns leave with their results, results too large for the window keep their
head and tail, and read excerpts shrink to stubs.

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
from veil.context.eviction import Bools, Move, Plan, plan
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
    """Results captured since the last turn boundary: the model has not read them."""


def plan_step(
    ws: WorkingSet,
    *,
    tick: int,
    boundary_tick: int,
    now: datetime,
    threshold: float,
    budget: int,
    target_fill: float | None = None,
) -> StepPlan:
    """The three stages' moves at a turn boundary. A result the model has not read yet is
    never stubbed (it asked for it); if the unread results cannot fit even alone, the largest
    are clipped afterwards (:func:`clip_unread`)."""
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
    unread = c.flag("result") & (c.view("created_tick") > boundary_tick)
    hard = hard | unread
    stubs = c.view("stub_tokens")
    result = plan(
        ws.ids,
        scores=ws.scores(tick),
        tokens=c.view("tokens"),
        live=c.flag("live"),
        warm=c.flag("warm"),
        protected=hard,
        soft_protected=soft,
        durable_r=durable_r,
        idle_ticks=idle_ticks,
        threshold=threshold,
        budget=max(1, budget - ws.correction),
        target_fill=config.target_fill if target_fill is None else target_fill,
        cold_retrievability=config.cold_retrievability,
        cold_after_ticks=config.cold_after_ticks,
        stub_tokens=stubs,
        token_exponent=config.pressure_token_exponent,
        threshold_exempt=exempt,
        superseded=c.flag("superseded") if config.evict_superseded_first else None,
    )
    return StepPlan(result, hard, soft, unread)


def with_their_turns(ws: WorkingSet, moves: Sequence[Move], protected: Bools) -> list[Move]:
    """A turn whose results all leave the prompt leaves with them (unless it is protected:
    intent, correction, the newest turns): like truncation, the prompt loses the pair, not
    just its tool result — but the pair stays addressable."""
    out: list[Move] = []
    leaving = {m.id for m in moves if m.to != "live"}
    for move in moves:
        parent = ws.items[move.id].parent
        if move.to == "live" or parent is None or parent in leaving:
            continue
        turn = ws.items.get(parent)
        if turn is None or turn.tier != "live" or protected[ws.row(parent)]:
            continue
        if all(ws.items[s].tier != "live" or s in leaving for s in ws.children(parent)):
            out.append(Move(parent, move.to, move.stage, f"with its results: {move.reason}"))
            leaving.add(parent)
    return out


def shrink_excerpts(ws: WorkingSet, unread: Bools, budget: int, move: Mover) -> list[Move]:
    """Over budget, a clipped result the model has read by now keeps a one-line stub instead
    of its head and tail, oldest first."""
    done: list[Move] = []
    reason = "read: its excerpt becomes a stub"
    for row in np.flatnonzero(ws.cols.flag("clipped") & ~unread).tolist():
        if ws.live_tokens() <= budget:
            break
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
    """When the results the model has not read cannot fit ``limit`` even with everything else
    evicted, the largest keep their head and tail (at least ``min_tokens``; the whole text
    warm, its pointer in the excerpt) until the prompt fits."""
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
        note = count_tokens(excerpt(replace(item, excerpt=1)))
        keep_tokens = max(min_tokens, item.tokens - over - note)
        chars = int(len(item.content) * keep_tokens / max(1, item.tokens))
        if chars >= len(item.content):
            continue
        reason = f"too large for the window: {keep_tokens:,} of {item.tokens:,} tokens shown"
        move(item, "warm", reason, chars)
        over = ws.live_tokens() - limit
        done.append(Move(item.id, "warm", 2, reason))
    return done


def evict(
    ws: WorkingSet,
    *,
    stages: bool,
    tick: int,
    boundary_tick: int,
    now: datetime,
    threshold: float,
    budget: int,
    unread_limit: int,
    apply: Apply,
    move: Mover,
    count_tokens: Callable[[str], int],
) -> tuple[list[Move], Plan]:
    """Plan against ``ws`` as it is now and apply the moves, in order: the plan's, the turns
    that leave with them, read excerpts shrunk to stubs (and their turns), unread results
    clipped to ``unread_limit``. With ``stages`` the three stages against ``threshold`` down
    to the target fill; without, again after a rendering measured more than planned: only
    window pressure (stage 2, no threshold), only down to ``budget`` — the step already
    evicted to the target fill; this corrects what the rendering measured. Results captured
    after ``boundary_tick`` are unread. Returns every move and the plan."""
    decided = plan_step(
        ws,
        tick=tick,
        boundary_tick=boundary_tick,
        now=now,
        threshold=threshold if stages else -1.0,
        budget=budget,
        target_fill=None if stages else 1.0,
    )
    result, unread = decided.plan, decided.unread
    hard, soft = decided.hard, decided.soft
    if not stages:  # only window pressure: no stage 3 again
        result = replace(result, moves=tuple(m for m in result.moves if m.stage == 2))
    moves = [*result.moves, *with_their_turns(ws, result.moves, hard | soft)]
    for planned in moves:
        apply(planned)
    shrunk = shrink_excerpts(ws, unread, budget, move)
    for planned in with_their_turns(ws, shrunk, hard | soft):
        apply(planned)
        shrunk.append(planned)
    moves.extend(shrunk)
    moves.extend(
        clip_unread(
            ws,
            unread,
            unread_limit,
            move,
            count_tokens=count_tokens,
            min_tokens=ws.config.excerpt_min_tokens,
        )
    )
    return moves, result
