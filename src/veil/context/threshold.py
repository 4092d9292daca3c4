"""The AIMD eviction threshold, borrowed from TCP congestion control. Pure.

Items scoring below T are eviction candidates. T rises additively each tick while the window
is above its target fill and no regret happened in the last ``calm_ticks`` ticks (the session is
going well, so evict more); it is cut multiplicatively on a regret — an evicted item had to come
back — or on a convergence warning (evict less). Bounds always hold.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from veil.context.config import ThresholdConfig

Signal = Literal["tick", "regret", "convergence"]


@dataclass(frozen=True)
class Threshold:
    value: float
    last_regret_tick: int | None = None

    @classmethod
    def start(cls, config: ThresholdConfig) -> Threshold:
        return cls(value=config.initial)


def on_tick(
    state: Threshold,
    *,
    tick: int,
    fill: float,
    target_fill: float,
    pressure: bool,
    config: ThresholdConfig,
) -> Threshold:
    """Additive increase when above target fill (or stage 2 had to act) and calm."""
    calm = state.last_regret_tick is None or tick - state.last_regret_tick >= config.calm_ticks
    if calm and (fill > target_fill or pressure):
        return replace(state, value=min(config.maximum, state.value + config.increase))
    return state


def on_regret(state: Threshold, *, tick: int, config: ThresholdConfig) -> Threshold:
    """Multiplicative decrease (regret or convergence warning)."""
    return Threshold(
        value=max(config.minimum, state.value * config.decrease_factor), last_regret_tick=tick
    )
