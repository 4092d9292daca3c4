"""An access of a context item — the model used, reloaded or re-referenced it — as FSRS sees
it: a recall on both horizons. Pure.

The live horizon runs on ticks (one per tool call), the durable one on wall-clock days; both
stabilities grow more when the recall came late (low retrievability), capped per horizon.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from veil.clock import format_time, parse_time
from veil.context import fsrs
from veil.context.config import ContextConfig
from veil.context.items import ContextItem


def recalled(item: ContextItem, *, tick: int, now: datetime, config: ContextConfig) -> ContextItem:
    """``item`` after an access at ``tick`` / ``now``."""
    elapsed = fsrs.ticks_to_days(tick - item.last_access_tick, config.ticks_per_day)
    r_live = fsrs.retrievability(elapsed, item.stability)
    wall_days = 0.0
    if item.last_access_at:
        wall_days = max(0.0, (now - parse_time(item.last_access_at)).total_seconds() / 86400)
    r_durable = fsrs.retrievability(wall_days, item.durable_stability)
    return replace(
        item,
        stability=fsrs.recall_stability(
            item.stability, item.difficulty, r_live, cap_days=config.live_max_stability_days
        ),
        durable_stability=fsrs.recall_stability(
            item.durable_stability,
            item.difficulty,
            r_durable,
            cap_days=config.durable_max_stability_days,
        ),
        difficulty=fsrs.next_difficulty(item.difficulty),
        access_count=item.access_count + 1,
        last_access_tick=tick,
        last_access_at=format_time(now),
    )
